"""One HTTP request over ``wasi:http/outgoing-handler``: the request built
from its parts, its body written in chunks the stream accepts, the answer
awaited on its pollable and its body read until the stream closes. Only
imported inside the component. Not a public API."""

from __future__ import annotations

from componentize_py_types import Err
from wit_world.imports import outgoing_handler
from wit_world.imports import streams
from wit_world.imports import wasi_http_types as wit

from herald_sdk.http import HttpError, Hop, Response

#: The most ``blocking-write-and-flush`` accepts in one call.
WRITE_CHUNK = 4096
#: How much one ``blocking-read`` asks for.
READ_CHUNK = 64 * 1024

_METHODS = {"GET": wit.Method_Get, "HEAD": wit.Method_Head, "POST": wit.Method_Post, "PUT": wit.Method_Put,
            "PATCH": wit.Method_Patch, "DELETE": wit.Method_Delete, "OPTIONS": wit.Method_Options}


def send(hop: Hop) -> Response:
    """Sends ``hop`` and reads the whole answer; raises :class:`HttpError` (without method and URL)."""
    request = _request(hop)
    options = wit.RequestOptions()
    for setter, hint in zip((options.set_connect_timeout, options.set_first_byte_timeout,
                             options.set_between_bytes_timeout), hop.timeouts_ms):
        if hint is not None:
            try:
                setter(hint * 1_000_000)
            except Err:
                pass  # a host that will not take a hint keeps its own
    # The body is taken before `handle` and written after it: written first,
    # a body larger than the host's pipe would wait for a reader that does
    # not exist yet.
    body = request.body() if hop.body else None
    try:
        future = outgoing_handler.handle(request, options)
    except Err as error:
        raise _from_error_code(error.value) from None
    write_error = None
    if body is not None:
        try:
            _write_body(body, hop.body)
        except HttpError as error:
            write_error = error
    # A refusal (a denial, say) explains a failed write better than the
    # write's own error, so the answer is awaited first.
    with future:
        with _wait(future) as response:
            if write_error is not None:
                raise write_error
            return _read(response, hop.max_response_bytes)


def _request(hop: Hop) -> wit.OutgoingRequest:
    entries = [(name, value.encode()) for name, value in hop.headers]
    sends_body = bool(hop.body) or hop.method in ("POST", "PUT", "PATCH")
    if sends_body and not any(name.lower() == "content-length" for name, _ in hop.headers):
        entries.append(("content-length", str(len(hop.body)).encode()))
    try:
        headers = wit.Fields.from_list(entries)
    except Err as error:
        reason = {
            wit.HeaderError_InvalidSyntax: "a header name or value is not valid",
            wit.HeaderError_Forbidden: "a header is one the host does not let plugins set",
        }.get(type(error.value), "the headers are immutable")
        raise HttpError("invalid-request", reason) from None
    request = wit.OutgoingRequest(headers)
    scheme, authority, path = hop.parts()
    method = _METHODS.get(hop.method)
    try:
        request.set_method(method() if method is not None else wit.Method_Other(hop.method))
        request.set_scheme(wit.Scheme_Https() if scheme == "https" else wit.Scheme_Http())
        request.set_authority(authority)
        request.set_path_with_query(path)
    except Err:
        raise HttpError("invalid-request", "the host refused the method, scheme, authority or path") from None
    return request


def _write_body(body: wit.OutgoingBody, data: bytes) -> None:
    stream = body.write()
    try:
        for start in range(0, len(data), WRITE_CHUNK):
            stream.blocking_write_and_flush(data[start:start + WRITE_CHUNK])
    except Err as error:
        stream.__exit__(None, None, None)
        raise _from_stream_error(error.value, "writing the request body") from None
    # The stream is the body's child: it goes first.
    stream.__exit__(None, None, None)
    try:
        wit.OutgoingBody.finish(body, None)
    except Err as error:
        raise _from_error_code(error.value) from None


def _wait(future: wit.FutureIncomingResponse) -> wit.IncomingResponse:
    with future.subscribe() as pollable:
        while True:
            answer = future.get()
            if answer is None:
                pollable.block()
                continue
            if isinstance(answer, Err):
                raise HttpError("protocol", "the response was already taken")
            inner = answer.value
            if isinstance(inner, Err):
                raise _from_error_code(inner.value)
            return inner.value


def _read(response: wit.IncomingResponse, limit: int) -> Response:
    status = response.status()
    with response.headers() as fields:
        headers = [(name.lower(), value.decode("utf-8", errors="replace")) for name, value in fields.entries()]
    declared = next((value for name, value in headers if name == "content-length"), None)
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise HttpError("too-large", f"a response body of {declared} bytes; at most {limit} are read")
    body = response.consume()
    stream = body.stream()
    chunks, size = [], 0
    try:
        while True:
            try:
                chunk = stream.blocking_read(READ_CHUNK)
            except Err as error:
                if isinstance(error.value, streams.StreamError_Closed):
                    break
                raise _from_stream_error(error.value, "reading the response body") from None
            size += len(chunk)
            if size > limit:
                raise HttpError("too-large", f"a response body of more than {limit} bytes; at most {limit} are read")
            chunks.append(chunk)
    finally:
        # The stream is the body's child: it goes first. Trailers are not read.
        stream.__exit__(None, None, None)
        wit.IncomingBody.finish(body).__exit__(None, None, None)
    return Response(status, b"".join(chunks), headers)


def _from_stream_error(error, doing: str) -> HttpError:
    if isinstance(error, streams.StreamError_LastOperationFailed):
        code = wit.http_error_code(error.value)
        if code is not None:
            return _from_error_code(code)
        return HttpError("connection", f"{doing}: {error.value.to_debug_string()}")
    return HttpError("connection", f"{doing}: the stream closed")


_CONNECTION = {
    wit.ErrorCode_DestinationNotFound: "destination not found",
    wit.ErrorCode_DestinationUnavailable: "destination unavailable",
    wit.ErrorCode_DestinationIpUnroutable: "destination IP unroutable",
    wit.ErrorCode_ConnectionRefused: "refused",
    wit.ErrorCode_ConnectionTerminated: "terminated",
    wit.ErrorCode_ConnectionLimitReached: "connection limit reached",
    wit.ErrorCode_TlsProtocolError: "TLS protocol error",
    wit.ErrorCode_TlsCertificateError: "TLS certificate error",
    wit.ErrorCode_TlsAlertReceived: "TLS alert",
    wit.ErrorCode_DnsError: "DNS error",
}
_TIMEOUT = {
    wit.ErrorCode_DnsTimeout: "DNS",
    wit.ErrorCode_ConnectionTimeout: "connecting",
    wit.ErrorCode_ConnectionReadTimeout: "reading",
    wit.ErrorCode_ConnectionWriteTimeout: "writing",
    wit.ErrorCode_HttpResponseTimeout: "waiting for the response",
}
_TOO_LARGE = {
    wit.ErrorCode_HttpRequestBodySize: "the host's request body limit",
    wit.ErrorCode_HttpResponseBodySize: "the host's response body limit",
    wit.ErrorCode_HttpRequestHeaderSectionSize: "the request headers",
    wit.ErrorCode_HttpRequestHeaderSize: "the request headers",
    wit.ErrorCode_HttpResponseHeaderSectionSize: "the response headers",
    wit.ErrorCode_HttpResponseHeaderSize: "the response headers",
}


def _from_error_code(code) -> HttpError:
    """The SDK's view of ``wasi:http``'s error codes."""
    kind = type(code)
    if kind in (wit.ErrorCode_HttpRequestDenied, wit.ErrorCode_DestinationIpProhibited):
        return HttpError("denied")
    if kind in _TIMEOUT:
        return HttpError("timeout", _TIMEOUT[kind])
    if kind in _CONNECTION:
        return HttpError("connection", _CONNECTION[kind])
    if kind in _TOO_LARGE:
        return HttpError("too-large", _TOO_LARGE[kind])
    if kind is wit.ErrorCode_HttpRequestUriInvalid:
        return HttpError("invalid-url", "the host refused it")
    if kind is wit.ErrorCode_HttpRequestUriTooLong:
        return HttpError("invalid-url", "too long")
    if kind is wit.ErrorCode_HttpRequestMethodInvalid:
        return HttpError("invalid-request", "the host refused the method")
    if kind is wit.ErrorCode_HttpRequestLengthRequired:
        return HttpError("invalid-request", "the server wants a content-length")
    if kind is wit.ErrorCode_InternalError:
        return HttpError("protocol", f"internal error: {code.value}" if code.value else "internal error")
    return HttpError("protocol", kind.__name__.replace("ErrorCode_", ""))
