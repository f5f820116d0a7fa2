package heraldtest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"

	"herald.dev/sdk/go/wasihttp"
)

// HTTP scripts and records the plugin's outbound requests (package
// wasihttp). Unscripted requests are answered 404, or refused as the host
// would with DenyUnscripted; with Grant, requests to other origins are
// refused as the host refuses an ungranted origin.
type HTTP struct {
	h        *Host
	mu       sync.Mutex
	scripts  []httpScript
	granted  []string
	deny     bool
	requests []Request
}

// Request is one request the plugin sent.
type Request struct {
	Method string
	URL    string
	Header http.Header
	Body   []byte
}

// Response is a scripted answer.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// NewResponse is a Response with a status and no body.
func NewResponse(status int) *Response { return &Response{Status: status, Header: http.Header{}} }

// WithBody sets the body (a string or bytes).
func (r *Response) WithBody(body any) *Response {
	switch b := body.(type) {
	case string:
		r.Body = []byte(b)
	case []byte:
		r.Body = b
	default:
		panic(fmt.Sprintf("heraldtest: a response body is a string or []byte, not %T", body))
	}
	return r
}

// WithHeader adds a header.
func (r *Response) WithHeader(name, value string) *Response {
	r.Header.Add(name, value)
	return r
}

type httpScript struct {
	pattern string
	once    bool
	resp    *Response
	fail    wasihttp.ErrorKind
	failing bool
}

func newHTTP(h *Host) *HTTP { return &HTTP{h: h} }

// Respond answers every later request whose URL starts with pattern (or
// matches it, if it has a `*`) with resp. The last matching script wins;
// one-shot scripts go first.
func (x *HTTP) Respond(pattern string, resp *Response) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.scripts = append(x.scripts, httpScript{pattern: pattern, resp: resp})
}

// RespondOnce is Respond for the next matching request only.
func (x *HTTP) RespondOnce(pattern string, resp *Response) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.scripts = append(x.scripts, httpScript{pattern: pattern, resp: resp, once: true})
}

// FailOnce fails the next matching request with an error of kind.
func (x *HTTP) FailOnce(pattern string, kind wasihttp.ErrorKind) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.scripts = append(x.scripts, httpScript{pattern: pattern, once: true, fail: kind, failing: true})
}

// Grant allows origins (`https://hooks.example.com`); once any is granted,
// requests to other origins are denied.
func (x *HTTP) Grant(origins ...string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.granted = append(x.granted, origins...)
}

// DenyUnscripted denies unscripted requests instead of answering 404.
func (x *HTTP) DenyUnscripted() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.deny = true
}

// Requests returns every request sent so far.
func (x *HTTP) Requests() []Request {
	x.mu.Lock()
	defer x.mu.Unlock()
	return append([]Request(nil), x.requests...)
}

// TakeRequests returns the requests so far and forgets them.
func (x *HTTP) TakeRequests() []Request {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := x.requests
	x.requests = nil
	return out
}

func (s *httpScript) matches(u string) bool {
	if strings.Contains(s.pattern, "*") {
		ok, _ := path.Match(s.pattern, u)
		return ok
	}
	return strings.HasPrefix(u, s.pattern)
}

func origin(u *url.URL) string { return u.Scheme + "://" + u.Host }

func (x *HTTP) roundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		req.Body.Close()
	}
	u := req.URL.String()
	denied := func() (*http.Response, error) {
		return nil, &wasihttp.Error{Kind: wasihttp.Denied, Method: req.Method, URL: u, Detail: "HTTP-request-denied"}
	}
	x.mu.Lock()
	x.requests = append(x.requests, Request{Method: req.Method, URL: u, Header: req.Header.Clone(), Body: body})
	if len(x.granted) > 0 {
		ok := false
		for _, g := range x.granted {
			ok = ok || origin(req.URL) == strings.TrimSuffix(g, "/")
		}
		if !ok {
			x.mu.Unlock()
			return denied()
		}
	}
	found := -1
	for pass := 0; pass < 2 && found < 0; pass++ {
		for i := len(x.scripts) - 1; i >= 0; i-- {
			s := &x.scripts[i]
			if (pass == 0) == s.once && s.matches(u) {
				found = i
				break
			}
		}
	}
	if found < 0 {
		deny := x.deny
		x.mu.Unlock()
		if deny {
			return denied()
		}
		return toResponse(req, NewResponse(http.StatusNotFound)), nil
	}
	s := x.scripts[found]
	if s.once {
		x.scripts = append(x.scripts[:found], x.scripts[found+1:]...)
	}
	x.mu.Unlock()
	if s.failing {
		return nil, &wasihttp.Error{Kind: s.fail, Method: req.Method, URL: u, Detail: "scripted"}
	}
	return toResponse(req, s.resp), nil
}

func toResponse(req *http.Request, r *Response) *http.Response {
	header := r.Header.Clone()
	if header == nil {
		header = http.Header{}
	}
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", r.Status, http.StatusText(r.Status)),
		StatusCode:    r.Status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        header,
		Body:          io.NopCloser(bytes.NewReader(r.Body)),
		ContentLength: int64(len(r.Body)),
		Request:       req,
	}
}
