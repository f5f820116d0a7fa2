//go:build wasip1

package wasihttp

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"herald.dev/sdk/go/internal/cabi"
	handler "herald.dev/sdk/go/internal/wit/wasi/http/v0.2.12/outgoing-handler"
	wit "herald.dev/sdk/go/internal/wit/wasi/http/v0.2.12/types"
	streams "herald.dev/sdk/go/internal/wit/wasi/io/v0.2.12/streams"
)

const (
	writeChunk = 4096
	readChunk  = 64 << 10
)

func (t *Transport) roundTrip(req *http.Request) (*http.Response, error) {
	fail := func(kind ErrorKind, format string, args ...any) (*http.Response, error) {
		return nil, &Error{Kind: kind, Method: req.Method, URL: req.URL.String(), Detail: fmt.Sprintf(format, args...)}
	}
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return fail(InvalidRequest, "reading the request body: %v", err)
		}
		body = b
	}
	var entries []cabi.Tuple2[wit.FieldKey, wit.FieldValue]
	hasLength := false
	for name, values := range req.Header {
		lower := strings.ToLower(name)
		hasLength = hasLength || lower == "content-length"
		for _, v := range values {
			entries = append(entries, cabi.Tuple2[wit.FieldKey, wit.FieldValue]{F0: lower, F1: []byte(v)})
		}
	}
	sendsBody := len(body) > 0 || req.Method == http.MethodPost || req.Method == http.MethodPut || req.Method == http.MethodPatch
	if sendsBody && !hasLength {
		entries = append(entries, cabi.Tuple2[wit.FieldKey, wit.FieldValue]{F0: "content-length", F1: []byte(strconv.Itoa(len(body)))})
	}
	fields := wit.FieldsFromList(entries)
	if fields.IsErr {
		reasons := map[wit.HeaderErrorTag]string{
			wit.HeaderErrorTagInvalidSyntax: "a header name or value is not valid",
			wit.HeaderErrorTagForbidden:     "a header is one the host does not let plugins set",
			wit.HeaderErrorTagImmutable:     "the headers are immutable",
		}
		return fail(InvalidRequest, "%s", reasons[fields.Err.Tag])
	}
	request := wit.NewOutgoingRequest(fields.Ok)
	if r := request.SetMethod(method(req.Method)); r.IsErr {
		request.Drop()
		return fail(InvalidRequest, "the host refused the method")
	}
	scheme := wit.Scheme{Tag: wit.SchemeTagHTTPS}
	switch req.URL.Scheme {
	case "http":
		scheme.Tag = wit.SchemeTagHTTP
	case "https":
	default:
		request.Drop()
		return fail(InvalidURL, "scheme %q is neither http nor https", req.URL.Scheme)
	}
	authority, path := req.URL.Host, req.URL.RequestURI()
	if request.SetScheme(&scheme).IsErr || request.SetAuthority(&authority).IsErr || request.SetPathWithQuery(&path).IsErr {
		request.Drop()
		return fail(InvalidURL, "the host refused the URL")
	}
	var outBody *wit.OutgoingBody
	if len(body) > 0 {
		b := request.Body()
		if b.IsErr {
			request.Drop()
			return fail(Protocol, "the request body was already taken")
		}
		outBody = &b.Ok
	}
	options := wit.NewRequestOptions()
	if d := t.ConnectTimeout; d > 0 {
		n := uint64(d)
		options.SetConnectTimeout(&n)
	}
	if d := t.FirstByteTimeout; d > 0 {
		n := uint64(d)
		options.SetFirstByteTimeout(&n)
	}
	if d := t.BetweenBytesTimeout; d > 0 {
		n := uint64(d)
		options.SetBetweenBytesTimeout(&n)
	}
	handled := handler.Handle(request, &options)
	if handled.IsErr {
		if outBody != nil {
			outBody.Drop()
		}
		kind, detail := fromErrorCode(handled.Err)
		return fail(kind, "%s", detail)
	}
	future := handled.Ok
	defer future.Drop()
	var written error
	if outBody != nil {
		written = writeBody(*outBody, body)
	}
	response, kind, detail := wait(future)
	if detail != "" {
		return fail(kind, "%s", detail)
	}
	defer response.Drop()
	if written != nil {
		return fail(Connection, "writing the request body: %v", written)
	}
	limit := t.MaxResponseBytes
	if limit <= 0 {
		limit = defaultMaxResponseBytes
	}
	return readResponse(req, response, limit)
}

func method(m string) wit.Method {
	tags := map[string]wit.MethodTag{
		"": wit.MethodTagGet, "GET": wit.MethodTagGet, "HEAD": wit.MethodTagHead, "POST": wit.MethodTagPost,
		"PUT": wit.MethodTagPut, "DELETE": wit.MethodTagDelete, "CONNECT": wit.MethodTagConnect,
		"OPTIONS": wit.MethodTagOptions, "TRACE": wit.MethodTagTrace, "PATCH": wit.MethodTagPatch,
	}
	if tag, ok := tags[m]; ok {
		return wit.Method{Tag: tag}
	}
	return wit.Method{Tag: wit.MethodTagOther, Other: m}
}

func writeBody(body wit.OutgoingBody, data []byte) error {
	s := body.Write()
	if s.IsErr {
		body.Drop()
		return fmt.Errorf("the request body stream was already taken")
	}
	stream := s.Ok
	for len(data) > 0 {
		n := min(len(data), writeChunk)
		if r := stream.BlockingWriteAndFlush(data[:n]); r.IsErr {
			stream.Drop()
			body.Drop()
			return streamError(r.Err)
		}
		data = data[n:]
	}
	stream.Drop()
	if r := wit.OutgoingBodyFinish(body, nil); r.IsErr {
		_, detail := fromErrorCode(r.Err)
		return fmt.Errorf("%s", detail)
	}
	return nil
}

func wait(future wit.FutureIncomingResponse) (wit.IncomingResponse, ErrorKind, string) {
	pollable := future.Subscribe()
	defer pollable.Drop()
	for {
		got := future.Get()
		if got == nil {
			pollable.Block()
			continue
		}
		switch {
		case got.IsErr:
			return wit.IncomingResponse{}, Protocol, "the response was already taken"
		case got.Ok.IsErr:
			kind, detail := fromErrorCode(got.Ok.Err)
			return wit.IncomingResponse{}, kind, detail
		}
		return got.Ok.Ok, 0, ""
	}
}

func readResponse(req *http.Request, response wit.IncomingResponse, limit int64) (*http.Response, error) {
	fail := func(kind ErrorKind, format string, args ...any) (*http.Response, error) {
		return nil, &Error{Kind: kind, Method: req.Method, URL: req.URL.String(), Detail: fmt.Sprintf(format, args...)}
	}
	status := int(response.Status())
	fields := response.Headers()
	header := http.Header{}
	for _, e := range fields.Entries() {
		header.Add(e.F0, string(e.F1))
	}
	fields.Drop()
	if n, err := strconv.ParseInt(header.Get("content-length"), 10, 64); err == nil && n > limit {
		return fail(TooLarge, "a response body of %d bytes; at most %d are read", n, limit)
	}
	consumed := response.Consume()
	if consumed.IsErr {
		return fail(Protocol, "the response body was already taken")
	}
	in := consumed.Ok
	s := in.Stream()
	if s.IsErr {
		in.Drop()
		return fail(Protocol, "the response body stream was already taken")
	}
	stream := s.Ok
	var buf bytes.Buffer
	for {
		chunk := stream.BlockingRead(readChunk)
		if chunk.IsErr {
			if chunk.Err.Tag == streams.StreamErrorTagClosed {
				break
			}
			stream.Drop()
			in.Drop()
			return fail(Connection, "reading the response body: %v", streamError(chunk.Err))
		}
		if int64(buf.Len()+len(chunk.Ok)) > limit {
			stream.Drop()
			in.Drop()
			return fail(TooLarge, "more than %d bytes", limit)
		}
		buf.Write(chunk.Ok)
	}
	stream.Drop()
	wit.IncomingBodyFinish(in).Drop()
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", status, http.StatusText(status)),
		StatusCode:    status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        header,
		Body:          io.NopCloser(bytes.NewReader(buf.Bytes())),
		ContentLength: int64(buf.Len()),
		Request:       req,
	}, nil
}

func streamError(e streams.StreamError) error {
	if e.Tag == streams.StreamErrorTagClosed {
		return fmt.Errorf("the stream closed")
	}
	defer e.LastOperationFailed.Drop()
	if code := wit.HttpErrorCode(e.LastOperationFailed); code != nil {
		_, detail := fromErrorCode(*code)
		return fmt.Errorf("%s", detail)
	}
	return fmt.Errorf("%s", e.LastOperationFailed.ToDebugString())
}

func fromErrorCode(code wit.ErrorCode) (ErrorKind, string) {
	switch code.Tag {
	case wit.ErrorCodeTagHTTPRequestDenied, wit.ErrorCodeTagDestinationIPProhibited:
		return Denied, "HTTP-request-denied"
	case wit.ErrorCodeTagDNSTimeout, wit.ErrorCodeTagConnectionTimeout, wit.ErrorCodeTagConnectionReadTimeout,
		wit.ErrorCodeTagConnectionWriteTimeout, wit.ErrorCodeTagHTTPResponseTimeout:
		return Timeout, code.Tag.String()
	case wit.ErrorCodeTagDNSError, wit.ErrorCodeTagDestinationNotFound, wit.ErrorCodeTagDestinationUnavailable,
		wit.ErrorCodeTagDestinationIPUnroutable, wit.ErrorCodeTagConnectionRefused, wit.ErrorCodeTagConnectionTerminated,
		wit.ErrorCodeTagConnectionLimitReached, wit.ErrorCodeTagTLSProtocolError, wit.ErrorCodeTagTLSCertificateError,
		wit.ErrorCodeTagTLSAlertReceived:
		return Connection, code.Tag.String()
	case wit.ErrorCodeTagHTTPRequestBodySize, wit.ErrorCodeTagHTTPResponseBodySize,
		wit.ErrorCodeTagHTTPRequestHeaderSectionSize, wit.ErrorCodeTagHTTPRequestHeaderSize,
		wit.ErrorCodeTagHTTPResponseHeaderSectionSize, wit.ErrorCodeTagHTTPResponseHeaderSize:
		return TooLarge, code.Tag.String()
	case wit.ErrorCodeTagHTTPRequestURIInvalid, wit.ErrorCodeTagHTTPRequestURITooLong:
		return InvalidURL, code.Tag.String()
	case wit.ErrorCodeTagHTTPRequestMethodInvalid, wit.ErrorCodeTagHTTPRequestLengthRequired:
		return InvalidRequest, code.Tag.String()
	case wit.ErrorCodeTagInternalError:
		if code.InternalError != nil {
			return Protocol, "internal-error: " + *code.InternalError
		}
	}
	return Protocol, code.Tag.String()
}
