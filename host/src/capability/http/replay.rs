//! What `herald plugin replay` does with a plugin's outbound HTTP: no
//! request is sent; each is answered by the first matching entry of the
//! `--responses` script ([`HttpScript`]), else with `200` and an empty
//! body, and shown as one line ([`HttpIntent::summary`]).

use super::offline::{OfflineRequest, OfflineResponse};
use serde::Deserialize;
use std::collections::BTreeMap;

/// A scripted answer to outbound HTTP requests.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpScript {
    method: Option<String>,
    url: Option<String>,
    times: Option<u32>,
    status: Option<u16>,
    body: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    error: Option<HttpFailure>,
}

/// Why an `http` entry of a responses file cannot answer; each variant
/// holds the value at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HttpScriptError {
    /// Both `error` and a response were given.
    #[error("http: give either `error` or a response (`status`, `body`, `headers`)")]
    ErrorAndResponse,
    /// `status` is not an HTTP status code.
    #[error("http: status {0} is not an HTTP status code")]
    Status(u16),
    /// A key of `headers` is not a header name.
    #[error("http: {0:?} is not a header name")]
    HeaderName(String),
    /// A value of `headers` is not a header value.
    #[error("http: header {name}: {value:?} is not a header value")]
    HeaderValue {
        /// The header.
        name: String,
        /// Its value at fault.
        value: String,
    },
}

/// A scripted `wasi:http` error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HttpFailure {
    /// `HTTP-request-denied`.
    Denied,
    /// `HTTP-response-timeout`.
    Timeout,
    /// `connection-refused`.
    ConnectionRefused,
}

impl HttpFailure {
    /// The error the plugin gets.
    pub fn to_error(self) -> wasmtime_wasi_http::Error {
        use wasmtime_wasi_http::Error;
        match self {
            HttpFailure::Denied => Error::HttpRequestDenied,
            HttpFailure::Timeout => Error::HttpResponseTimeout,
            HttpFailure::ConnectionRefused => Error::ConnectionRefused,
        }
    }

    /// As the responses file names it.
    pub fn as_str(self) -> &'static str {
        match self {
            HttpFailure::Denied => "denied",
            HttpFailure::Timeout => "timeout",
            HttpFailure::ConnectionRefused => "connection-refused",
        }
    }
}

impl HttpScript {
    /// Whether it answers `request` (and has answers left).
    pub fn matches(&self, request: &OfflineRequest) -> bool {
        self.times != Some(0)
            && self
                .method
                .as_deref()
                .is_none_or(|m| m.eq_ignore_ascii_case(&request.method))
            && self
                .url
                .as_deref()
                .is_none_or(|url| match url.strip_suffix('*') {
                    Some(prefix) => request.url.starts_with(prefix),
                    None => url == request.url,
                })
    }

    /// Its answer, counted against `times`.
    pub fn take(&mut self) -> Result<OfflineResponse, HttpFailure> {
        if let Some(times) = &mut self.times {
            *times = times.saturating_sub(1);
        }
        if let Some(failure) = self.error {
            return Err(failure);
        }
        Ok(OfflineResponse {
            status: self.status.unwrap_or(200),
            headers: self
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            body: self.body.clone().unwrap_or_default().into(),
        })
    }

    /// Why it cannot answer, if it cannot.
    pub fn check(&self) -> Result<(), HttpScriptError> {
        if self.error.is_some()
            && (self.status.is_some() || self.body.is_some() || !self.headers.is_empty())
        {
            return Err(HttpScriptError::ErrorAndResponse);
        }
        if let Some(status) = self.status {
            http::StatusCode::from_u16(status).map_err(|_| HttpScriptError::Status(status))?;
        }
        for (name, value) in &self.headers {
            http::HeaderName::try_from(name.as_str())
                .map_err(|_| HttpScriptError::HeaderName(name.clone()))?;
            http::HeaderValue::try_from(value.as_str()).map_err(|_| {
                HttpScriptError::HeaderValue {
                    name: name.clone(),
                    value: value.clone(),
                }
            })?;
        }
        Ok(())
    }
}

/// One outbound HTTP request a replayed plugin made, and its offline answer.
#[derive(Debug, Clone)]
pub struct HttpIntent {
    /// The request (its URL without the query).
    pub request: OfflineRequest,
    /// The response, or the scripted error.
    pub answer: Result<OfflineResponse, HttpFailure>,
    /// True when a `--responses` entry gave the answer.
    pub scripted: bool,
}

/// How much of a request body a summary shows.
const BODY_PREVIEW_CHARS: usize = 200;

impl HttpIntent {
    /// One line: `http POST https://hooks.example.com/alerts (12 bytes: {"pod":"a"}) → 503 (scripted)`.
    pub fn summary(&self) -> String {
        let request = &self.request;
        let mut line = format!(
            "http {} {} ({} bytes",
            request.method, request.url, request.body_size
        );
        if request.body_size > 0 {
            let text = String::from_utf8_lossy(&request.body);
            let first = text.lines().next().unwrap_or_default();
            let mut preview: String = first.chars().take(BODY_PREVIEW_CHARS).collect();
            if preview.len() as u64 != request.body_size {
                preview.push('…');
            }
            line.push_str(": ");
            line.push_str(&crate::text::escape_controls(&preview));
        }
        line.push(')');
        match &self.answer {
            Ok(response) => line.push_str(&format!(" → {}", response.status)),
            Err(failure) => line.push_str(&format!(" → error {}", failure.as_str())),
        }
        line.push_str(if self.scripted {
            " (scripted)"
        } else {
            " (unscripted: empty body)"
        });
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(method: &str, url: &str, body: &str) -> OfflineRequest {
        OfflineRequest::new(method, url, body.to_owned())
    }

    #[test]
    fn http_summaries_show_the_body_s_first_line_cut_at_200_chars() {
        let intent = |body: &str, answer, scripted| {
            HttpIntent {
                request: request("POST", "https://hooks.example.com/alerts", body),
                answer,
                scripted,
            }
            .summary()
        };
        let ok = |status| {
            Ok(OfflineResponse {
                status,
                headers: Vec::new(),
                body: Default::default(),
            })
        };
        assert_eq!(
            intent("{\"pod\":\"a\"}", ok(503), true),
            "http POST https://hooks.example.com/alerts (11 bytes: {\"pod\":\"a\"}) → 503 (scripted)"
        );
        assert_eq!(
            intent("", ok(200), false),
            "http POST https://hooks.example.com/alerts (0 bytes) → 200 (unscripted: empty body)"
        );
        assert_eq!(
            intent("first\nsecond", Err(HttpFailure::ConnectionRefused), true),
            "http POST https://hooks.example.com/alerts (12 bytes: first…) → error connection-refused (scripted)"
        );
        let long = "x".repeat(300);
        let line = intent(&long, ok(200), true);
        assert!(
            line.contains(&format!("(300 bytes: {}…)", "x".repeat(200))),
            "{line}"
        );
    }
}
