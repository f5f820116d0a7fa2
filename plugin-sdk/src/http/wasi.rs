//! One request over `wasi:http/outgoing-handler`: the request built from
//! its parts, its body written in chunks the stream accepts, the answer
//! awaited on its pollable and its body read until the stream closes.

use crate::bindings::wasi::http::outgoing_handler;
use crate::bindings::wasi::http::types as wit;
use crate::bindings::wasi::io::streams::{InputStream, OutputStream, StreamError};

use super::{Hop, HttpErrorKind, Method, Response};

/// The most `blocking-write-and-flush` accepts in one call.
const WRITE_CHUNK: usize = 4096;

/// How much one `blocking-read` asks for.
const READ_CHUNK: u64 = 64 * 1024;

/// Sends `hop` and reads the whole answer.
pub(crate) fn send(hop: &Hop<'_>) -> Result<Response, HttpErrorKind> {
    let request = request(hop)?;
    let options = options(hop);
    // The body is taken before `handle` and written after it: written
    // first, a body larger than the host's pipe would wait for a reader
    // that does not exist yet.
    let body = if hop.body.is_empty() {
        None
    } else {
        Some(
            request
                .body()
                .map_err(|()| protocol("the request body was already taken"))?,
        )
    };
    let future = outgoing_handler::handle(request, Some(options)).map_err(from_error_code)?;
    let written = body.map_or(Ok(()), |body| write_body(body, hop.body));
    // A refusal (a denial, say) explains a failed write better than the
    // write's own error, so the answer is awaited first.
    let response = wait(&future)?;
    written?;
    read_response(&response, hop.max_response_bytes)
}

fn protocol(detail: &str) -> HttpErrorKind {
    HttpErrorKind::Protocol(detail.to_owned())
}

fn request(hop: &Hop<'_>) -> Result<wit::OutgoingRequest, HttpErrorKind> {
    let mut entries: Vec<(String, Vec<u8>)> = hop
        .headers
        .iter()
        .map(|(name, value)| (name.clone(), value.as_bytes().to_vec()))
        .collect();
    let has_length = hop
        .headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("content-length"));
    let sends_body =
        !hop.body.is_empty() || matches!(hop.method, Method::Post | Method::Put | Method::Patch);
    if sends_body && !has_length {
        entries.push((
            "content-length".to_owned(),
            hop.body.len().to_string().into_bytes(),
        ));
    }
    let headers = wit::Fields::from_list(&entries).map_err(|error| {
        let reason = match error {
            wit::HeaderError::InvalidSyntax => "a header name or value is not valid",
            wit::HeaderError::Forbidden => "a header is one the host does not let plugins set",
            wit::HeaderError::Immutable => "the headers are immutable",
        };
        HttpErrorKind::InvalidRequest(reason.to_owned())
    })?;
    let request = wit::OutgoingRequest::new(headers);
    let method = match hop.method {
        Method::Get => wit::Method::Get,
        Method::Head => wit::Method::Head,
        Method::Post => wit::Method::Post,
        Method::Put => wit::Method::Put,
        Method::Patch => wit::Method::Patch,
        Method::Delete => wit::Method::Delete,
        Method::Options => wit::Method::Options,
        Method::Other(other) => wit::Method::Other(other.clone()),
    };
    let invalid =
        |what: &str| HttpErrorKind::InvalidRequest(format!("the host refused the {what}"));
    request
        .set_method(&method)
        .map_err(|()| invalid("method"))?;
    let scheme = if hop.url.is_https() {
        wit::Scheme::Https
    } else {
        wit::Scheme::Http
    };
    request
        .set_scheme(Some(&scheme))
        .map_err(|()| invalid("scheme"))?;
    request
        .set_authority(Some(&hop.url.authority))
        .map_err(|()| invalid("authority"))?;
    request
        .set_path_with_query(Some(&hop.url.path_and_query))
        .map_err(|()| invalid("path"))?;
    Ok(request)
}

/// The timeout hints; a host that will not take one keeps its own.
fn options(hop: &Hop<'_>) -> wit::RequestOptions {
    let options = wit::RequestOptions::new();
    let nanos =
        |duration: std::time::Duration| u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
    if let Some(timeout) = hop.timeouts.connect {
        let _ = options.set_connect_timeout(Some(nanos(timeout)));
    }
    if let Some(timeout) = hop.timeouts.first_byte {
        let _ = options.set_first_byte_timeout(Some(nanos(timeout)));
    }
    if let Some(timeout) = hop.timeouts.between_bytes {
        let _ = options.set_between_bytes_timeout(Some(nanos(timeout)));
    }
    options
}

/// Writes `bytes` in chunks of at most 4 KiB and finishes the body; on a
/// failure the body is dropped unfinished, which aborts the request.
fn write_body(body: wit::OutgoingBody, bytes: &[u8]) -> Result<(), HttpErrorKind> {
    let stream: OutputStream = body
        .write()
        .map_err(|()| protocol("the request body stream was already taken"))?;
    for chunk in bytes.chunks(WRITE_CHUNK) {
        stream
            .blocking_write_and_flush(chunk)
            .map_err(|error| from_stream_error(error, "writing the request body"))?;
    }
    // The stream is the body's child: it goes first.
    drop(stream);
    wit::OutgoingBody::finish(body, None).map_err(from_error_code)
}

fn wait(future: &wit::FutureIncomingResponse) -> Result<wit::IncomingResponse, HttpErrorKind> {
    let pollable = future.subscribe();
    loop {
        match future.get() {
            Some(Ok(Ok(response))) => return Ok(response),
            Some(Ok(Err(code))) => return Err(from_error_code(code)),
            Some(Err(())) => return Err(protocol("the response was already taken")),
            None => pollable.block(),
        }
    }
}

fn read_response(
    response: &wit::IncomingResponse,
    limit: usize,
) -> Result<Response, HttpErrorKind> {
    let status = response.status();
    let fields = response.headers();
    let headers: Vec<(String, String)> = fields
        .entries()
        .into_iter()
        .map(|(name, value)| {
            (
                name.to_ascii_lowercase(),
                String::from_utf8_lossy(&value).into_owned(),
            )
        })
        .collect();
    drop(fields);
    let too_large = |size: &dyn std::fmt::Display| {
        HttpErrorKind::TooLarge(format!(
            "a response body of {size} bytes; at most {limit} are read"
        ))
    };
    let declared =
        super::header(&headers, "content-length").and_then(|length| length.parse::<u64>().ok());
    if let Some(length) = declared.filter(|&length| length > limit as u64) {
        return Err(too_large(&length));
    }
    let body = response
        .consume()
        .map_err(|()| protocol("the response body was already taken"))?;
    let stream: InputStream = body
        .stream()
        .map_err(|()| protocol("the response body stream was already taken"))?;
    let mut bytes = Vec::with_capacity(declared.map_or(0, |length| length as usize));
    loop {
        match stream.blocking_read(READ_CHUNK) {
            Ok(chunk) => {
                if bytes.len() + chunk.len() > limit {
                    return Err(too_large(&format_args!("more than {limit}")));
                }
                bytes.extend_from_slice(&chunk);
            }
            Err(StreamError::Closed) => break,
            Err(error) => return Err(from_stream_error(error, "reading the response body")),
        }
    }
    // The stream is the body's child: it goes first. Trailers are not read.
    drop(stream);
    drop(wit::IncomingBody::finish(body));
    Ok(Response {
        status,
        headers,
        body: bytes,
        url: String::new(),
        method: None,
    })
}

fn from_stream_error(error: StreamError, doing: &str) -> HttpErrorKind {
    match error {
        StreamError::Closed => HttpErrorKind::Connection(format!("{doing}: the stream closed")),
        StreamError::LastOperationFailed(error) => match wit::http_error_code(&error) {
            Some(code) => from_error_code(code),
            None => HttpErrorKind::Connection(format!("{doing}: {}", error.to_debug_string())),
        },
    }
}

/// The SDK's view of `wasi:http`'s error codes.
fn from_error_code(code: wit::ErrorCode) -> HttpErrorKind {
    use wit::ErrorCode as Code;
    let connection = |detail: &str| HttpErrorKind::Connection(detail.to_owned());
    let timeout = |detail: &str| HttpErrorKind::Timeout(detail.to_owned());
    let too_large = |detail: String| HttpErrorKind::TooLarge(detail);
    match code {
        Code::HttpRequestDenied => HttpErrorKind::Denied,
        Code::DestinationIpProhibited => HttpErrorKind::Denied,
        Code::DnsTimeout => timeout("DNS"),
        Code::ConnectionTimeout => timeout("connecting"),
        Code::ConnectionReadTimeout => timeout("reading"),
        Code::ConnectionWriteTimeout => timeout("writing"),
        Code::HttpResponseTimeout => timeout("waiting for the response"),
        Code::DnsError(payload) => HttpErrorKind::Connection(format!(
            "DNS error{}",
            payload
                .rcode
                .map(|rcode| format!(" {rcode}"))
                .unwrap_or_default()
        )),
        Code::DestinationNotFound => connection("destination not found"),
        Code::DestinationUnavailable => connection("destination unavailable"),
        Code::DestinationIpUnroutable => connection("destination IP unroutable"),
        Code::ConnectionRefused => connection("refused"),
        Code::ConnectionTerminated => connection("terminated"),
        Code::ConnectionLimitReached => connection("connection limit reached"),
        Code::TlsProtocolError => connection("TLS protocol error"),
        Code::TlsCertificateError => connection("TLS certificate error"),
        Code::TlsAlertReceived(payload) => HttpErrorKind::Connection(format!(
            "TLS alert{}",
            payload
                .alert_message
                .map(|message| format!(": {message}"))
                .unwrap_or_default()
        )),
        Code::HttpRequestBodySize(size) => too_large(format!(
            "the host's request body limit{}",
            size.map(|size| format!(", {size} bytes"))
                .unwrap_or_default()
        )),
        Code::HttpResponseBodySize(size) => too_large(format!(
            "the host's response body limit{}",
            size.map(|size| format!(", {size} bytes"))
                .unwrap_or_default()
        )),
        Code::HttpRequestHeaderSectionSize(_) | Code::HttpRequestHeaderSize(_) => {
            too_large("the request headers".to_owned())
        }
        Code::HttpResponseHeaderSectionSize(_) | Code::HttpResponseHeaderSize(_) => {
            too_large("the response headers".to_owned())
        }
        Code::HttpRequestTrailerSectionSize(_)
        | Code::HttpRequestTrailerSize(_)
        | Code::HttpResponseTrailerSectionSize(_)
        | Code::HttpResponseTrailerSize(_) => too_large("trailers".to_owned()),
        Code::HttpRequestUriInvalid => HttpErrorKind::InvalidUrl("the host refused it".to_owned()),
        Code::HttpRequestUriTooLong => HttpErrorKind::InvalidUrl("too long".to_owned()),
        Code::HttpRequestMethodInvalid => {
            HttpErrorKind::InvalidRequest("the host refused the method".to_owned())
        }
        Code::HttpRequestLengthRequired => {
            HttpErrorKind::InvalidRequest("the server wants a content-length".to_owned())
        }
        Code::InternalError(detail) => HttpErrorKind::Protocol(format!(
            "internal error{}",
            detail
                .map(|detail| format!(": {detail}"))
                .unwrap_or_default()
        )),
        other => HttpErrorKind::Protocol(format!("{other:?}")),
    }
}
