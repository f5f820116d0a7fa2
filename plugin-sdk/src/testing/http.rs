//! The test host's side of [`crate::http`]: every request (each redirect
//! hop separately) is recorded as a [`RecordedRequest`] and answered by a
//! scripted [`Response`] or failure; an unscripted request gets a `404`
//! with an empty body (or, after [`deny_unscripted`], the host's denial).
//!
//! Scripts match URLs by pattern: a pattern without `*` matches every URL
//! that starts with it (`https://hooks.example.com/` covers every path
//! there; a full URL matches itself, with any query added); with `*`, the
//! whole URL must match, `*` standing for any run of characters. One-shot
//! answers ([`respond_once`], [`fail_once`]) are used first, in the order
//! added; then the persistent ones, the one added last winning.
//!
//! [`grant`] imitates the operator's origin grants: once an origin is
//! granted, requests to any other are denied before any script is looked
//! at, as the host denies them before they leave.
//!
//! ```
//! use herald_sdk::http::{self, HttpErrorKind, Response};
//! use herald_sdk::serde_json::json;
//! use herald_sdk::testing;
//!
//! testing::reset();
//! testing::http::grant("https://hooks.example.com");
//! testing::http::respond("https://hooks.example.com/", Response::new(204));
//! testing::http::fail_once("https://hooks.example.com/alerts", HttpErrorKind::Timeout("scripted".into()));
//!
//! let error = http::post_json("https://hooks.example.com/alerts", &json!({"pod": "web-0"})).unwrap_err();
//! assert!(error.is_timeout());
//! assert_eq!(http::post_json("https://hooks.example.com/alerts", &json!({"pod": "web-0"})).unwrap().status, 204);
//! assert!(http::get("https://elsewhere.example.com/").unwrap_err().is_denied());
//!
//! let requests = testing::http::take_requests();
//! assert_eq!(requests.len(), 3);
//! assert_eq!(requests[1].method, http::Method::Post);
//! assert_eq!(requests[1].json(), json!({"pod": "web-0"}));
//! assert_eq!(requests[1].header("content-type"), Some("application/json"));
//! ```

use std::time::Duration;

use serde_json::Value;

use super::{glob, with_host};
use crate::http::{Hop, HttpErrorKind, Method, Response};

/// One request a plugin made, as the test host recorded it (before any
/// origin check: a denied request is recorded too).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedRequest {
    /// The method.
    pub method: Method,
    /// The absolute URL, normalized: scheme and host lowercased, `.` and
    /// `..` segments resolved, no fragment.
    pub url: String,
    /// The headers as the plugin set them (the `content-length` the SDK
    /// adds on wasm is not included).
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
    /// The timeout hints set ([`Request::timeout`](crate::http::Request::timeout)
    /// and friends): connect, first byte, between bytes.
    pub timeouts: [Option<Duration>; 3],
}

impl RecordedRequest {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(candidate, _)| candidate.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// The body as JSON.
    ///
    /// # Panics
    ///
    /// When it is not JSON.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|error| {
            panic!(
                "the body of {} {} is not JSON: {error}",
                self.method, self.url
            )
        })
    }

    /// The body as text; bytes that are not UTF-8 become U+FFFD.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

type Answer = Result<Response, HttpErrorKind>;

/// The scripted side of HTTP: kept in the thread's test host.
#[derive(Default)]
pub(super) struct Script {
    requests: Vec<RecordedRequest>,
    /// Persistent answers; the last added that matches wins.
    answers: Vec<(String, Answer)>,
    /// One-shot answers, consumed in the order added; checked first.
    once: Vec<(String, Answer)>,
    /// Origins granted; empty: every origin.
    granted: Vec<String>,
    deny_unscripted: bool,
}

fn matches(pattern: &str, url: &str) -> bool {
    if pattern.contains('*') {
        glob(pattern, url)
    } else {
        url.starts_with(pattern)
    }
}

impl Script {
    pub(super) fn answer(&mut self, hop: &Hop<'_>) -> Answer {
        let url = hop.url.to_string();
        self.requests.push(RecordedRequest {
            method: hop.method.clone(),
            url: url.clone(),
            headers: hop.headers.to_vec(),
            body: hop.body.to_vec(),
            timeouts: [
                hop.timeouts.connect,
                hop.timeouts.first_byte,
                hop.timeouts.between_bytes,
            ],
        });
        let origin = hop.url.origin();
        if !self.granted.is_empty() && !self.granted.contains(&origin) {
            return Err(HttpErrorKind::Denied);
        }
        let answer = if let Some(at) = self
            .once
            .iter()
            .position(|(pattern, _)| matches(pattern, &url))
        {
            self.once.remove(at).1
        } else if let Some((_, answer)) = self
            .answers
            .iter()
            .rev()
            .find(|(pattern, _)| matches(pattern, &url))
        {
            answer.clone()
        } else if self.deny_unscripted {
            Err(HttpErrorKind::Denied)
        } else {
            Ok(Response::new(404))
        };
        let response = answer?;
        if response.body.len() > hop.max_response_bytes {
            return Err(HttpErrorKind::TooLarge(format!(
                "a response body of {} bytes; at most {} are read",
                response.body.len(),
                hop.max_response_bytes
            )));
        }
        Ok(response)
    }
}

/// Answers every later request whose URL matches `pattern` with `response`.
pub fn respond(pattern: &str, response: Response) {
    with_host(|host| host.http.answers.push((pattern.to_owned(), Ok(response))));
}

/// Answers the next request whose URL matches `pattern` with `response`,
/// once.
pub fn respond_once(pattern: &str, response: Response) {
    with_host(|host| host.http.once.push((pattern.to_owned(), Ok(response))));
}

/// Fails every later request whose URL matches `pattern` with `kind`, as
/// the host would report it (e.g. [`HttpErrorKind::Timeout`],
/// [`HttpErrorKind::Connection`], [`HttpErrorKind::Denied`]).
pub fn fail(pattern: &str, kind: HttpErrorKind) {
    with_host(|host| host.http.answers.push((pattern.to_owned(), Err(kind))));
}

/// Fails the next request whose URL matches `pattern` with `kind`, once.
pub fn fail_once(pattern: &str, kind: HttpErrorKind) {
    with_host(|host| host.http.once.push((pattern.to_owned(), Err(kind))));
}

/// Grants the plugin `origin` (`scheme://host[:port]`, the port only when it
/// is not the scheme's default), as the operator's `grants.http` does. Once
/// any origin is granted, a request to one that is not fails with
/// [`HttpErrorKind::Denied`] whatever the scripts say; a redirect too.
pub fn grant(origin: &str) {
    let origin = crate::http::Url::parse(origin)
        .map(|url| url.origin())
        .unwrap_or_else(|_| origin.trim_end_matches('/').to_ascii_lowercase());
    with_host(|host| host.http.granted.push(origin));
}

/// Makes an unscripted request fail with [`HttpErrorKind::Denied`] instead
/// of answering `404`.
pub fn deny_unscripted() {
    with_host(|host| host.http.deny_unscripted = true);
}

/// Every request made since the last [`take_requests`], in order, kept.
pub fn requests() -> Vec<RecordedRequest> {
    with_host(|host| host.http.requests.clone())
}

/// Every request made since the last take, removed.
pub fn take_requests() -> Vec<RecordedRequest> {
    with_host(|host| std::mem::take(&mut host.http.requests))
}
