// Package wasihttp makes outbound HTTP requests from a plugin through
// `wasi:http/outgoing-handler`, as an http.RoundTripper, so that net/http
// clients (and libraries taking an *http.Client) work:
//
//	resp, err := wasihttp.Client.Post("https://hooks.example.com/alerts", "application/json", body)
//
// Needs the `http` capability, and every request (every redirect hop: the
// http.Client follows redirects itself) is checked by the host against the
// origins the operator granted the plugin; a refusal is an *Error whose
// Kind is Denied. Natively, in tests, requests reach heraldtest's stand-in.
package wasihttp

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"herald.dev/sdk/go/internal/host"
)

// Transport is an http.RoundTripper over wasi:http. The zero value uses
// the host's timeouts and reads response bodies of up to 4 MiB whole.
type Transport struct {
	// ConnectTimeout, FirstByteTimeout and BetweenBytesTimeout are passed
	// to the host as request options when set.
	ConnectTimeout      time.Duration
	FirstByteTimeout    time.Duration
	BetweenBytesTimeout time.Duration
	// MaxResponseBytes caps the response body read (default 4 MiB).
	MaxResponseBytes int64
}

// DefaultTransport is the Transport of Client.
var DefaultTransport = &Transport{}

// Client is an *http.Client over DefaultTransport: redirects followed (at
// most 10, net/http's default), each hop a new request the host checks.
var Client = &http.Client{Transport: DefaultTransport}

const defaultMaxResponseBytes = 4 << 20

// ErrorKind says why a request failed.
type ErrorKind uint8

// The kinds of Error, as the Rust SDK's HttpErrorKind.
const (
	// Denied: the host refused the request (HTTP-request-denied): no grant
	// covers its origin.
	Denied ErrorKind = iota
	Timeout
	Connection
	TooLarge
	InvalidURL
	InvalidRequest
	Protocol
)

var kindNames = [...]string{"denied", "timeout", "connection", "too-large", "invalid-url", "invalid-request", "protocol"}

// String is the kebab-case name of the kind.
func (k ErrorKind) String() string { return kindNames[k] }

// Error is a failed request.
type Error struct {
	Kind   ErrorKind
	Method string
	URL    string
	Detail string
}

func (e *Error) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("%s %s: %s", e.Method, e.URL, e.Kind)
	}
	return fmt.Sprintf("%s %s: %s: %s", e.Method, e.URL, e.Kind, e.Detail)
}

// IsRetryable says whether a later retry may help (timeouts, connections).
func (e *Error) IsRetryable() bool { return e.Kind == Timeout || e.Kind == Connection }

// IsDenied says whether err is (or wraps) the host's refusal.
func IsDenied(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Kind == Denied
}

// RoundTrip sends one request.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if hook, ok := host.HTTP.(func(*http.Request) (*http.Response, error)); ok && hook != nil {
		return hook(req)
	}
	return t.roundTrip(req)
}
