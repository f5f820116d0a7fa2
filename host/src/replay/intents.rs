//! What a replayed plugin would do to the cluster: its API calls (writes,
//! reads, Events) are recorded, never sent, and answered offline: from a
//! script of responses (`herald plugin replay --responses FILE`) when one
//! matches, else from the replay's in-memory cache (reads) or by echoing
//! the object sent (writes).
//!
//! A responses file is a YAML (or JSON) list; each entry answers the calls
//! it matches (every key optional), in file order, `times` times (default:
//! every matching call):
//!
//! ```yaml
//! - verb: apply                  # get, create, update, patch, apply, delete
//!   kind: NetworkPolicy
//!   namespace: team-a
//!   name: herald-default-deny
//!   times: 1
//!   error: {type: conflict, message: "someone else owns spec.podSelector"}
//! - verb: get
//!   kind: Namespace
//!   object: {apiVersion: v1, kind: Namespace, metadata: {name: team-a}}
//! ```
//!
//! `error.type` is a `kube-error` case (`not-found`, `conflict`, `invalid`,
//! `too-many-requests`, …).
//!
//! Outbound HTTP (`wasi:http`) is recorded and answered offline too, never
//! sent: an entry with an `http` key (and no other) answers the requests it
//! matches, by the same rules (file order, `times`). `method` matches in
//! any case; `url` matches the request's URL without its query, exactly or,
//! ending in `*`, as a prefix. The answer is a response (`status`, default
//! 200; `body`; `headers`) or an `error`: `denied`
//! (`HTTP-request-denied`), `timeout` (`HTTP-response-timeout`) or
//! `connection-refused`. A request no entry matches gets `200` with an
//! empty body.
//!
//! ```yaml
//! - http:
//!     method: POST
//!     url: "https://hooks.example.com/alerts"
//!     times: 1
//!     status: 503
//!     body: "try later"
//!     headers: {retry-after: "5"}
//! - http: {url: "https://api.example.com/*", error: timeout}
//! ```

use crate::capability::http::{OfflineHttp, OfflineRequest, OfflineResponse};
use crate::capability::kube::{ApiBackend, ApiRequest, KubeError, Operation};
use crate::gvk::Gvk;
use crate::store::ObjectReader;
use crate::store::Store;
use futures::future::BoxFuture;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// One call a replayed plugin made, and the answer it got.
#[derive(Debug, Clone)]
pub struct Intent {
    /// The call.
    pub request: ApiRequest,
    /// Its offline answer.
    pub answer: Result<String, KubeError>,
}

impl Intent {
    /// One line: `apply networking.k8s.io/v1/NetworkPolicy team-a/x (force) → ok`.
    pub fn summary(&self) -> String {
        let request = &self.request;
        let answer = self.answer.as_ref().ok().map(String::as_str);
        let target = crate::capability::kube::Target {
            name: request.shown_name(answer),
            ..request.target.clone()
        };
        let mut line = format!("{} {target}", request.operation.verb());
        if let Some(about) = event_about(request) {
            line.push_str(&format!(" about {about}"));
        }
        match &request.operation {
            Operation::Apply { force: true, .. } => line.push_str(" (force)"),
            Operation::Patch { patch_type, .. } => line.push_str(&format!(
                " ({} patch)",
                serde_json::json!(patch_type).as_str().unwrap_or("")
            )),
            _ => {}
        }
        if request.dry_run {
            line.push_str(" [dry-run]");
        }
        match &self.answer {
            Ok(_) => line.push_str(" → ok"),
            Err(error) => line.push_str(&format!(" → {error}")),
        }
        line
    }
}

/// What an Event a plugin creates is about: `Kind namespace/name` of its
/// `regarding` object; `None` for any other call.
fn event_about(request: &ApiRequest) -> Option<String> {
    if request.target.gvk.kind != "Event" {
        return None;
    }
    let body: serde_json::Value = serde_json::from_str(request.operation.body()?).ok()?;
    let regarding = body.get("regarding")?;
    let field = |name: &str| regarding.get(name).and_then(|v| v.as_str()).unwrap_or("");
    let kind = crate::text::escape_controls(field("kind"));
    let name = crate::text::escape_controls(field("name"));
    Some(match field("namespace") {
        "" => format!("{kind} {name}"),
        namespace => format!("{kind} {}/{name}", crate::text::escape_controls(namespace)),
    })
}

/// One scripted answer.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedResponse {
    verb: Option<crate::capability::kube::Verb>,
    kind: Option<String>,
    namespace: Option<String>,
    name: Option<String>,
    times: Option<u32>,
    object: Option<serde_json::Value>,
    error: Option<ScriptedError>,
    http: Option<HttpScript>,
}

/// A scripted answer to outbound HTTP requests.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct HttpScript {
    method: Option<String>,
    url: Option<String>,
    times: Option<u32>,
    status: Option<u16>,
    body: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    error: Option<HttpFailure>,
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
    fn matches(&self, request: &OfflineRequest) -> bool {
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

    /// The answer it scripts.
    fn answer(&self) -> Result<OfflineResponse, HttpFailure> {
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
    fn check(&self) -> Result<(), String> {
        if self.error.is_some()
            && (self.status.is_some() || self.body.is_some() || !self.headers.is_empty())
        {
            return Err(
                "http: give either `error` or a response (`status`, `body`, `headers`)".into(),
            );
        }
        if let Some(status) = self.status {
            http::StatusCode::from_u16(status)
                .map_err(|_| format!("http: status {status} is not an HTTP status code"))?;
        }
        for (name, value) in &self.headers {
            http::HeaderName::try_from(name.as_str())
                .map_err(|_| format!("http: {name:?} is not a header name"))?;
            http::HeaderValue::try_from(value.as_str())
                .map_err(|_| format!("http: header {name}: {value:?} is not a header value"))?;
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

/// A scripted error: a `kube-error` case and its message.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptedError {
    #[serde(rename = "type")]
    case: String,
    #[serde(default)]
    message: String,
}

impl ScriptedError {
    fn to_error(&self) -> Result<KubeError, String> {
        let m = self.message.clone();
        Ok(match self.case.as_str() {
            "not-granted" => KubeError::NotGranted(m),
            "not-found" => KubeError::NotFound(m),
            "already-exists" => KubeError::AlreadyExists(m),
            "conflict" => KubeError::Conflict(m),
            "invalid" => KubeError::Invalid {
                message: m,
                causes: Vec::new(),
            },
            "forbidden" => KubeError::Forbidden(m),
            "too-many-requests" => KubeError::TooManyRequests {
                message: m,
                retry_after: None,
            },
            "timeout" => KubeError::Timeout(m),
            "unavailable" => KubeError::Unavailable(m),
            "failed" => KubeError::Failed {
                code: 400,
                reason: "BadRequest".into(),
                message: m,
            },
            other => return Err(format!("unknown error type {other:?}")),
        })
    }
}

impl ScriptedResponse {
    fn matches(&self, request: &ApiRequest) -> bool {
        let target = &request.target;
        self.http.is_none()
            && self.times != Some(0)
            && self.verb.is_none_or(|v| v == request.operation.verb())
            && self.kind.as_deref().is_none_or(|k| k == target.gvk.kind)
            && self
                .namespace
                .as_deref()
                .is_none_or(|ns| Some(ns) == target.namespace.as_deref())
            && self.name.as_deref().is_none_or(|n| n == target.name)
    }
}

/// Parses a responses file.
pub fn parse_responses(text: &str) -> Result<Vec<ScriptedResponse>, String> {
    let responses: Vec<ScriptedResponse> = serde_yaml::from_str(text).map_err(|e| e.to_string())?;
    for (index, response) in responses.iter().enumerate() {
        if let Some(http) = &response.http {
            let kube_keys = response.verb.is_some()
                || response.kind.is_some()
                || response.namespace.is_some()
                || response.name.is_some()
                || response.times.is_some()
                || response.object.is_some()
                || response.error.is_some();
            if kube_keys {
                return Err(format!(
                    "response #{}: an `http` entry has no other keys (put `times` inside it)",
                    index + 1
                ));
            }
            http.check()
                .map_err(|e| format!("response #{}: {e}", index + 1))?;
            continue;
        }
        match (&response.object, &response.error) {
            (Some(_), Some(_)) | (None, None) => {
                return Err(format!(
                    "response #{}: give exactly one of `object` and `error`",
                    index + 1
                ));
            }
            (_, Some(error)) => {
                error
                    .to_error()
                    .map_err(|e| format!("response #{}: {e}", index + 1))?;
            }
            _ => {}
        }
    }
    Ok(responses)
}

/// The offline backend of a replay.
#[derive(Debug, Default)]
pub struct ReplayApi {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    script: Vec<ScriptedResponse>,
    stores: Vec<(Gvk, Arc<Store>)>,
    intents: Vec<Intent>,
    http: Vec<HttpIntent>,
}

impl ReplayApi {
    /// A backend answering from `script` first.
    pub fn new(script: Vec<ScriptedResponse>) -> Self {
        ReplayApi {
            state: Mutex::new(State {
                script,
                ..State::default()
            }),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Reads are answered from these caches.
    pub(super) fn bind(&self, stores: Vec<(Gvk, Arc<Store>)>) {
        self.state().stores = stores;
    }

    /// The calls made since the last time.
    pub fn take(&self) -> Vec<Intent> {
        std::mem::take(&mut self.state().intents)
    }

    /// The outbound HTTP requests made since the last time.
    pub fn take_http(&self) -> Vec<HttpIntent> {
        std::mem::take(&mut self.state().http)
    }

    /// Records `request` and gives its answer: the first scripted entry
    /// matching it, else `200` with an empty body.
    fn answer_http(&self, request: OfflineRequest) -> Result<OfflineResponse, HttpFailure> {
        let mut state = self.state();
        let scripted = state
            .script
            .iter_mut()
            .filter_map(|r| r.http.as_mut())
            .find(|http| http.matches(&request))
            .map(|http| {
                if let Some(times) = &mut http.times {
                    *times -= 1;
                }
                http.answer()
            });
        let intent = HttpIntent {
            request,
            scripted: scripted.is_some(),
            answer: scripted.unwrap_or_else(|| {
                Ok(OfflineResponse {
                    status: 200,
                    headers: Vec::new(),
                    body: Default::default(),
                })
            }),
        };
        let answer = intent.answer.clone();
        state.http.push(intent);
        answer
    }

    fn answer(&self, request: &ApiRequest) -> Result<String, KubeError> {
        let mut state = self.state();
        if let Some(response) = state.script.iter_mut().find(|r| r.matches(request)) {
            if let Some(times) = &mut response.times {
                *times -= 1;
            }
            return match (&response.object, &response.error) {
                (Some(object), _) => Ok(object.to_string()),
                (_, Some(error)) => Err(error.to_error().unwrap_or_else(KubeError::Unavailable)),
                (None, None) => unreachable!("checked when parsed"),
            };
        }
        let target = &request.target;
        match &request.operation {
            Operation::Get => state
                .stores
                .iter()
                .filter(|(gvk, _)| *gvk == target.gvk)
                .find_map(|(_, store)| store.get(target.namespace.as_deref(), &target.name))
                .map(|object| object.json().to_owned())
                .ok_or_else(|| {
                    KubeError::NotFound(format!(
                        "{target} is not in the replay's cache (script an answer with --responses)"
                    ))
                }),
            Operation::Delete(_) => Ok("{}".into()),
            operation => Ok(operation.body().unwrap_or("{}").to_owned()),
        }
    }
}

impl ApiBackend for ReplayApi {
    fn send(&self, request: ApiRequest) -> BoxFuture<'static, Result<String, KubeError>> {
        let answer = self.answer(&request);
        self.state().intents.push(Intent {
            request,
            answer: answer.clone(),
        });
        Box::pin(std::future::ready(answer))
    }
}

impl OfflineHttp for ReplayApi {
    fn answer(
        &self,
        request: OfflineRequest,
    ) -> Result<OfflineResponse, wasmtime_wasi_http::Error> {
        self.answer_http(request).map_err(HttpFailure::to_error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_are_checked_when_read() {
        assert!(parse_responses("- verb: get\n  object: {}\n").is_ok());
        let both = parse_responses("- object: {}\n  error: {type: conflict}\n").unwrap_err();
        assert!(both.contains("exactly one"), "{both}");
        let unknown = parse_responses("- error: {type: exploded}\n").unwrap_err();
        assert!(unknown.contains("exploded"), "{unknown}");
        assert!(parse_responses("- verb: fly\n  object: {}\n").is_err());
    }

    fn request(method: &str, url: &str, body: &str) -> OfflineRequest {
        OfflineRequest {
            method: method.into(),
            url: url.into(),
            body_size: body.len() as u64,
            body: body.to_owned().into(),
        }
    }

    #[test]
    fn http_entries_are_checked_when_read() {
        let ok = "- http: {method: POST, url: \"https://a.example/x\", times: 1, status: 503, \
                  body: later, headers: {retry-after: \"5\"}}\n\
                  - http: {url: \"https://b.example/*\", error: connection-refused}\n\
                  - verb: get\n  object: {}\n";
        assert_eq!(parse_responses(ok).unwrap().len(), 3);
        let both = parse_responses("- http: {error: denied, status: 500}\n").unwrap_err();
        assert!(both.contains("either `error`"), "{both}");
        let mixed = parse_responses("- verb: get\n  http: {status: 500}\n").unwrap_err();
        assert!(mixed.contains("no other keys"), "{mixed}");
        assert!(parse_responses("- http: {error: exploded}\n").is_err());
        assert!(parse_responses("- http: {status: 99}\n").is_err());
        assert!(parse_responses("- http: {headers: {\"bad name\": x}}\n").is_err());
        assert!(parse_responses("- http: {colour: red}\n").is_err());
    }

    #[test]
    fn http_requests_take_the_first_matching_entry_in_file_order_times_times() {
        let script = parse_responses(
            "- http: {method: post, url: \"https://hooks.example.com/alerts\", times: 1, status: 503}\n\
             - http: {url: \"https://hooks.example.com/*\", status: 202, body: queued}\n\
             - http: {url: \"https://down.example.com/\", error: timeout}\n",
        )
        .unwrap();
        let api = ReplayApi::new(script);
        let alerts = || request("POST", "https://hooks.example.com/alerts", "{}");
        assert_eq!(api.answer_http(alerts()).unwrap().status, 503);
        let second = api.answer_http(alerts()).unwrap();
        assert_eq!((second.status, &second.body[..]), (202, &b"queued"[..]));
        assert_eq!(
            api.answer_http(request("GET", "https://down.example.com/", "")),
            Err(HttpFailure::Timeout)
        );
        // Exact URLs match exactly: no prefix, no other origin.
        let unmatched = api
            .answer_http(request("GET", "https://down.example.com/more", ""))
            .unwrap();
        assert_eq!((unmatched.status, unmatched.body.len()), (200, 0));
        let taken = api.take_http();
        let scripted: Vec<bool> = taken.iter().map(|i| i.scripted).collect();
        assert_eq!(scripted, [true, true, true, false]);
        assert!(api.take_http().is_empty());
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
