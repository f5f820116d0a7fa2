//! Outbound HTTP: a small blocking client over the standard
//! `wasi:http/outgoing-handler`, for webhooks and the like.
//!
//! ```no_run
//! use herald_sdk::http;
//! use herald_sdk::serde_json::json;
//!
//! # fn main() -> Result<(), herald_sdk::Error> {
//! let response = http::post_json("https://hooks.example.com/alerts", &json!({"text": "web-0 is crash looping"}))?;
//! if !response.is_success() {
//!     return Err(herald_sdk::Error::msg(format_args!("the webhook answered {}", response.status)));
//! }
//!
//! #[derive(serde::Deserialize)]
//! struct Status {
//!     paused: bool,
//! }
//! let status: Status = http::get_json("https://ops.example.com/api/status")?;
//!
//! let response = http::Request::put("https://ops.example.com/api/notes/web")
//!     .header("authorization", "Bearer s3cr3t")
//!     .body("restarted")
//!     .timeout(std::time::Duration::from_secs(2))
//!     .send()?
//!     .error_for_status()?;
//! herald_sdk::info!("noted status={} paused={}", response.status, status.paused);
//! # Ok(())
//! # }
//! ```
//!
//! # Grants
//!
//! A plugin that makes requests declares the `http` capability
//! ([`Manifest::capability`](crate::Manifest::capability)`("http")`), and the
//! operator grants it the origins it may reach (`grants.http` in the host
//! configuration, `grants.http.allowedOrigins`). **Every request is checked
//! by the host against those origins**; a request to any other fails with
//! [`HttpErrorKind::Denied`] (the host's `HTTP-request-denied`) and never
//! leaves the host.
//!
//! # Redirects
//!
//! Redirects are followed, at most 5 by default
//! ([`Request::max_redirects`]): after a 301, 302 or 303 the next request is
//! a `GET` without a body (a `HEAD` stays a `HEAD`); after a 307 or 308 it
//! repeats the method and the body. **Each hop is a new request, checked by
//! the host like the first**: a redirect to an origin the plugin was not
//! granted fails with [`HttpErrorKind::Denied`], naming that origin's URL.
//! On a hop to another origin the `authorization`, `cookie` and
//! `proxy-authorization` headers are dropped.
//!
//! # Blocking and limits
//!
//! Calls block until the whole response body has been read. They are
//! bounded by the handler call's deadline (the host ends a call that
//! overruns it, wherever it is waiting), by the host's own limits (Herald
//! gives each request at most `grants.http.timeout`, 30 s by default, and
//! never more than 80 % of what is left of the call's deadline), and
//! optionally by the timeout hints of [`Request::timeout`] and friends.
//! Response bodies are read into memory, at most 4 MiB by default
//! ([`Request::max_response_bytes`]) and at most what the host allows
//! (`grants.http.maxResponseSize`, 1 MiB by default); more is
//! [`HttpErrorKind::TooLarge`].
//!
//! # Errors
//!
//! [`HttpError`] names the method and URL of the request that failed and
//! says how ([`HttpErrorKind`]); it converts into [`Error`](crate::Error), so
//! `?` in a handler makes the host retry the notification with backoff.
//! [`HttpError::is_retryable`] tells timeouts, connection failures and 5xx
//! answers from what a retry would not fix (a denial, a bad URL).
//!
//! # Testing
//!
//! On the native target requests reach [`testing::http`](crate::testing::http),
//! which records them and answers from scripted responses (404 when none
//! matches).

mod url;
#[cfg(target_arch = "wasm32")]
pub(crate) mod wasi;

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;

pub(crate) use self::url::Url;

/// The most redirects a request follows unless told otherwise.
pub const DEFAULT_MAX_REDIRECTS: u8 = 5;

/// The largest response body read unless told otherwise: 4 MiB.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 4 << 20;

/// `GET url`, following redirects; any status is a response (see
/// [`Response::error_for_status`]).
pub fn get(url: &str) -> Result<Response, HttpError> {
    Request::get(url).send()
}

/// `GET url` with `accept: application/json`, decoding a 2xx answer's body
/// into `T`. Any other status is [`HttpErrorKind::Status`]; a body that is
/// not a `T` is [`HttpErrorKind::Decode`].
pub fn get_json<T: DeserializeOwned>(url: &str) -> Result<T, HttpError> {
    Request::get(url)
        .header("accept", "application/json")
        .send()?
        .error_for_status()?
        .json()
}

/// `POST url` with `body` as JSON (`content-type: application/json`); any
/// status is a response (see [`Response::is_success`] and
/// [`Response::error_for_status`]).
pub fn post_json<T: Serialize + ?Sized>(url: &str, body: &T) -> Result<Response, HttpError> {
    Request::post(url).json(body).send()
}

/// An HTTP method.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    /// `GET`.
    Get,
    /// `HEAD`.
    Head,
    /// `POST`.
    Post,
    /// `PUT`.
    Put,
    /// `PATCH`.
    Patch,
    /// `DELETE`.
    Delete,
    /// `OPTIONS`.
    Options,
    /// Any other method, as sent (e.g. `PROPFIND`).
    Other(String),
}

impl Method {
    /// The method as it goes on the wire, e.g. `GET`.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Get => "GET",
            Self::Head => "HEAD",
            Self::Post => "POST",
            Self::Put => "PUT",
            Self::Patch => "PATCH",
            Self::Delete => "DELETE",
            Self::Options => "OPTIONS",
            Self::Other(method) => method,
        }
    }
}

/// Formats as [`Method::as_str`].
impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Timeout hints handed to the host with each request; `None` leaves the
/// host's default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Timeouts {
    pub(crate) connect: Option<Duration>,
    pub(crate) first_byte: Option<Duration>,
    pub(crate) between_bytes: Option<Duration>,
}

/// A request being built: [`Request::new`] or a method's shorthand, then
/// headers, a body and options, then [`send`](Request::send).
///
/// ```no_run
/// use std::time::Duration;
/// use herald_sdk::http::{Method, Request};
///
/// # fn main() -> Result<(), herald_sdk::http::HttpError> {
/// let response = Request::new(Method::Post, "https://hooks.example.com/x")
///     .header("x-token", "s3cr3t")
///     .json(&["a", "b"])
///     .connect_timeout(Duration::from_secs(1))
///     .max_redirects(0)
///     .send()?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
#[must_use = "a request does nothing until sent"]
pub struct Request {
    method: Method,
    url: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    /// A body that could not be encoded: reported by `send`.
    body_error: Option<String>,
    timeouts: Timeouts,
    max_redirects: u8,
    max_response_bytes: usize,
}

impl Request {
    /// A `method` request to `url` (an absolute `http://` or `https://`
    /// URL), without headers or body.
    pub fn new(method: Method, url: impl Into<String>) -> Self {
        Self {
            method,
            url: url.into(),
            headers: Vec::new(),
            body: Vec::new(),
            body_error: None,
            timeouts: Timeouts::default(),
            max_redirects: DEFAULT_MAX_REDIRECTS,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
        }
    }

    /// A `GET` request.
    pub fn get(url: impl Into<String>) -> Self {
        Self::new(Method::Get, url)
    }

    /// A `POST` request.
    pub fn post(url: impl Into<String>) -> Self {
        Self::new(Method::Post, url)
    }

    /// A `PUT` request.
    pub fn put(url: impl Into<String>) -> Self {
        Self::new(Method::Put, url)
    }

    /// A `PATCH` request.
    pub fn patch(url: impl Into<String>) -> Self {
        Self::new(Method::Patch, url)
    }

    /// A `DELETE` request.
    pub fn delete(url: impl Into<String>) -> Self {
        Self::new(Method::Delete, url)
    }

    /// Adds a header (names are case-insensitive; a name given twice is sent
    /// twice). The host refuses hop-by-hop headers such as `host`,
    /// `connection` or `transfer-encoding` ([`HttpErrorKind::InvalidRequest`]).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sets the body, sent with a `content-length`.
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self.body_error = None;
        self
    }

    /// Sets the body to `value` as JSON, and `content-type:
    /// application/json` unless a content type was set. A value that does
    /// not serialize fails the [`send`](Request::send) with
    /// [`HttpErrorKind::InvalidRequest`].
    pub fn json<T: Serialize + ?Sized>(mut self, value: &T) -> Self {
        match serde_json::to_vec(value) {
            Ok(body) => {
                self.body = body;
                self.body_error = None;
            }
            Err(error) => self.body_error = Some(format!("encoding the JSON body: {error}")),
        }
        if self.header_value("content-type").is_none() {
            self = self.header("content-type", "application/json");
        }
        self
    }

    /// Sets every timeout hint below to `timeout`.
    pub fn timeout(self, timeout: Duration) -> Self {
        self.connect_timeout(timeout)
            .first_byte_timeout(timeout)
            .between_bytes_timeout(timeout)
    }

    /// A hint: how long connecting may take. Hints are handed to the host,
    /// which may cap or ignore them; the handler call's deadline bounds
    /// every request whatever they say.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.timeouts.connect = Some(timeout);
        self
    }

    /// A hint: how long the first byte of the response may take once the
    /// request is sent.
    pub fn first_byte_timeout(mut self, timeout: Duration) -> Self {
        self.timeouts.first_byte = Some(timeout);
        self
    }

    /// A hint: how long the response may pause between two bytes.
    pub fn between_bytes_timeout(mut self, timeout: Duration) -> Self {
        self.timeouts.between_bytes = Some(timeout);
        self
    }

    /// Follows at most `redirects` redirects (default
    /// [`DEFAULT_MAX_REDIRECTS`]); `0` returns a redirect as the response.
    pub fn max_redirects(mut self, redirects: u8) -> Self {
        self.max_redirects = redirects;
        self
    }

    /// Reads at most `bytes` of response body (default
    /// [`DEFAULT_MAX_RESPONSE_BYTES`]); a longer body fails with
    /// [`HttpErrorKind::TooLarge`].
    pub fn max_response_bytes(mut self, bytes: usize) -> Self {
        self.max_response_bytes = bytes;
        self
    }

    fn header_value(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }

    /// Sends the request and reads the whole response, following redirects
    /// (see the [module docs](self)). Any status is a response; see
    /// [`Response::error_for_status`].
    pub fn send(self) -> Result<Response, HttpError> {
        let Request {
            mut method,
            url,
            mut headers,
            mut body,
            body_error,
            timeouts,
            max_redirects,
            max_response_bytes,
        } = self;
        let error = |method: &Method, url: &str, kind| HttpError::new(method.clone(), url, kind);
        let mut current = Url::parse(&url)
            .map_err(|reason| error(&method, &url, HttpErrorKind::InvalidUrl(reason)))?;
        if let Some(reason) = body_error {
            return Err(error(&method, &url, HttpErrorKind::InvalidRequest(reason)));
        }
        let mut redirects = 0;
        loop {
            let hop = Hop {
                method: &method,
                url: &current,
                headers: &headers,
                body: &body,
                timeouts,
                max_response_bytes,
            };
            let mut response = crate::host::http_send(&hop)
                .map_err(|kind| error(&method, &current.to_string(), kind))?;
            response.url = current.to_string();
            response.method = Some(method.clone());
            if !matches!(response.status, 301 | 302 | 303 | 307 | 308) || max_redirects == 0 {
                return Ok(response);
            }
            let Some(location) = response.header("location") else {
                return Ok(response);
            };
            if redirects == max_redirects {
                return Err(error(
                    &method,
                    &response.url,
                    HttpErrorKind::TooManyRedirects(max_redirects),
                ));
            }
            redirects += 1;
            let next = current.join(location).map_err(|reason| {
                let reason = format!("redirected to {location:?}: {reason}");
                error(&method, &response.url, HttpErrorKind::InvalidUrl(reason))
            })?;
            if matches!(response.status, 301..=303) && method != Method::Head {
                method = Method::Get;
                body = Vec::new();
                headers.retain(|(name, _)| {
                    !["content-type", "content-length", "content-encoding"]
                        .iter()
                        .any(|body_header| name.eq_ignore_ascii_case(body_header))
                });
            }
            if next.origin() != current.origin() {
                headers.retain(|(name, _)| {
                    !["authorization", "cookie", "proxy-authorization"]
                        .iter()
                        .any(|secret| name.eq_ignore_ascii_case(secret))
                });
            }
            current = next;
        }
    }
}

/// One request as it is handed to the host (a redirect makes another).
pub(crate) struct Hop<'a> {
    pub(crate) method: &'a Method,
    pub(crate) url: &'a Url,
    pub(crate) headers: &'a [(String, String)],
    pub(crate) body: &'a [u8],
    pub(crate) timeouts: Timeouts,
    pub(crate) max_response_bytes: usize,
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(candidate, _)| candidate.eq_ignore_ascii_case(name))
        .map(|(_, value)| value.as_str())
}

/// A response, read to the end: status, headers and body.
///
/// In tests, build one with [`Response::new`] and the `with_` methods to
/// script the [test host](crate::testing::http):
///
/// ```
/// use herald_sdk::http::Response;
///
/// let response = Response::new(201)
///     .with_header("location", "/alerts/7")
///     .with_json(&herald_sdk::serde_json::json!({"id": 7}));
/// assert!(response.is_success());
/// assert_eq!(response.header("Location"), Some("/alerts/7"));
/// assert_eq!(response.json::<herald_sdk::serde_json::Value>().unwrap()["id"], 7);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    /// The status code, e.g. `200`.
    pub status: u16,
    /// The headers in the order received, names in lowercase (as HTTP/2
    /// and the host give them); a repeated header appears once per value.
    pub headers: Vec<(String, String)>,
    /// The body, whole.
    pub body: Vec<u8>,
    /// The URL that answered (after redirects); empty until sent.
    url: String,
    /// The method of the request that got this answer.
    method: Option<Method>,
}

impl Response {
    /// A response with this status, no headers and an empty body.
    pub fn new(status: u16) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body: Vec::new(),
            url: String::new(),
            method: None,
        }
    }

    /// Adds a header (its name lowercased).
    pub fn with_header(mut self, name: &str, value: impl Into<String>) -> Self {
        self.headers.push((name.to_ascii_lowercase(), value.into()));
        self
    }

    /// Sets the body.
    pub fn with_body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }

    /// Sets the body to `value` as JSON, with `content-type:
    /// application/json`.
    ///
    /// # Panics
    ///
    /// When `value` does not serialize (a map with non-string keys, say):
    /// this is for scripting tests.
    pub fn with_json<T: Serialize + ?Sized>(self, value: &T) -> Self {
        let body = serde_json::to_vec(value).expect("a scripted JSON body serializes");
        self.with_header("content-type", "application/json")
            .with_body(body)
    }

    /// Whether the status is 2xx.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }

    /// The URL that answered: the request's, or the last redirect's.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The body as text; bytes that are not UTF-8 become U+FFFD.
    pub fn text(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.body)
    }

    /// The body decoded from JSON into `T`; [`HttpErrorKind::Decode`] when
    /// it is not a `T`.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, HttpError> {
        serde_json::from_slice(&self.body)
            .map_err(|error| self.error(HttpErrorKind::Decode(error.to_string())))
    }

    fn error(&self, kind: HttpErrorKind) -> HttpError {
        HttpError {
            method: self.method.clone(),
            url: self.url.clone(),
            kind,
        }
    }

    /// `Ok(self)` for a 2xx status, else [`HttpErrorKind::Status`] with the
    /// start of the body.
    pub fn error_for_status(self) -> Result<Self, HttpError> {
        if self.is_success() {
            return Ok(self);
        }
        let mut excerpt: String = self.text().chars().take(200).collect();
        if excerpt.len() < self.body.len() {
            excerpt.push('…');
        }
        Err(self.error(HttpErrorKind::Status {
            status: self.status,
            excerpt,
        }))
    }
}

/// How a request failed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum HttpErrorKind {
    /// The host refused the request (`HTTP-request-denied`): its origin is
    /// not among those the operator granted the plugin, or the plugin lacks
    /// the `http` capability; or (`destination-IP-prohibited`) the name
    /// resolved to an address plugins may not reach. Nothing was sent;
    /// retrying will not help.
    Denied,
    /// Connecting, or waiting for the answer, took too long (a timeout hint,
    /// the host's own limit, or DNS).
    Timeout(String),
    /// The server could not be reached or the connection broke: DNS, refused,
    /// reset, TLS.
    Connection(String),
    /// A body or header section was larger than allowed: the response body
    /// over [`Request::max_response_bytes`], or a limit of the host.
    TooLarge(String),
    /// An unexpected status: from [`Response::error_for_status`] and
    /// [`get_json`]. `excerpt` is the start of the body.
    Status {
        /// The status code.
        status: u16,
        /// The first 200 characters of the body.
        excerpt: String,
    },
    /// The URL (the request's or a redirect's `Location`) is not an absolute
    /// `http`/`https` URL; the text says why.
    InvalidUrl(String),
    /// The request could not be made: a header the host refuses or that is
    /// not valid, a method it refuses, a body that would not encode.
    InvalidRequest(String),
    /// More redirects than [`Request::max_redirects`] allows.
    TooManyRedirects(u8),
    /// The body is not what [`Response::json`] was asked to decode.
    Decode(String),
    /// Anything else the host reported: a protocol error, an internal error.
    Protocol(String),
}

impl fmt::Display for HttpErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Denied => f.write_str(
                "denied by the host (HTTP-request-denied): the origin is not granted to the plugin (grants.http.allowedOrigins), its address is one plugins may not reach, or the plugin lacks the http capability",
            ),
            Self::Timeout(detail) => write!(f, "timed out ({detail})"),
            Self::Connection(detail) => write!(f, "connection failed ({detail})"),
            Self::TooLarge(detail) => write!(f, "too large ({detail})"),
            Self::Status { status, excerpt } if excerpt.is_empty() => {
                write!(f, "unexpected status {status}")
            }
            Self::Status { status, excerpt } => {
                write!(f, "unexpected status {status}: {excerpt}")
            }
            Self::InvalidUrl(reason) => write!(f, "invalid URL ({reason})"),
            Self::InvalidRequest(reason) => write!(f, "invalid request ({reason})"),
            Self::TooManyRedirects(limit) => write!(f, "more than {limit} redirects"),
            Self::Decode(reason) => write!(f, "the body would not decode ({reason})"),
            Self::Protocol(detail) => write!(f, "failed ({detail})"),
        }
    }
}

/// A failed request: which one and how. Displays as `POST
/// https://hooks.example.com/x: timed out (…)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpError {
    method: Option<Method>,
    url: String,
    kind: HttpErrorKind,
}

impl HttpError {
    /// An error about a request to `url`; for tests and wrappers.
    pub fn new(method: Method, url: impl Into<String>, kind: HttpErrorKind) -> Self {
        Self {
            method: Some(method),
            url: url.into(),
            kind,
        }
    }

    /// The method of the request that failed (`None` for a [`Response`]
    /// built by hand that was never sent).
    pub fn method(&self) -> Option<&Method> {
        self.method.as_ref()
    }

    /// How the request failed.
    pub fn kind(&self) -> &HttpErrorKind {
        &self.kind
    }

    /// The URL of the request that failed: a redirect's when a later hop
    /// failed.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Whether the host refused the request (the origin is not granted).
    pub fn is_denied(&self) -> bool {
        self.kind == HttpErrorKind::Denied
    }

    /// Whether it timed out.
    pub fn is_timeout(&self) -> bool {
        matches!(self.kind, HttpErrorKind::Timeout(_))
    }

    /// The unexpected status, for [`HttpErrorKind::Status`].
    pub fn status(&self) -> Option<u16> {
        match self.kind {
            HttpErrorKind::Status { status, .. } => Some(status),
            _ => None,
        }
    }

    /// Whether trying again later may succeed: timeouts, connection
    /// failures, protocol errors and the statuses 408, 429 and 5xx. A denial,
    /// a bad URL or request, a body too large or that would not decode, and
    /// other statuses would fail again.
    pub fn is_retryable(&self) -> bool {
        match &self.kind {
            HttpErrorKind::Timeout(_)
            | HttpErrorKind::Connection(_)
            | HttpErrorKind::Protocol(_) => true,
            HttpErrorKind::Status { status, .. } => {
                matches!(status, 408 | 429) || (500..600).contains(status)
            }
            _ => false,
        }
    }
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.method {
            Some(method) => write!(f, "{method} {}: {}", self.url, self.kind),
            None => write!(f, "{}: {}", self.url, self.kind),
        }
    }
}

impl std::error::Error for HttpError {}

// The tests run against the native stand-in host.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests;
