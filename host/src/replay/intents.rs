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

use crate::capability::http::replay::{HttpFailure, HttpIntent, HttpScript, HttpScriptError};
use crate::capability::http::{OfflineHttp, OfflineRequest, OfflineResponse};
use crate::capability::kube;
use crate::capability::kube::replay::{KubeScript, KubeScriptError};
use crate::capability::kube::{ApiBackend, ApiRequest, KubeError, Operation};
use crate::gvk::Gvk;
use crate::store::ObjectReader;
use crate::store::Store;
use futures::future::BoxFuture;
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
    /// One line, as the capability the call belongs to renders it
    /// (`kube`'s summary, with what another capability adds):
    /// `apply networking.k8s.io/v1/NetworkPolicy team-a/x (force) → ok`, or
    /// `create events.k8s.io/v1/Event shop/… about Pod shop/web → ok`.
    pub fn summary(&self) -> String {
        let about = crate::capability::replay_about(
            &self.request.target.gvk.kind,
            self.request.operation.body(),
        );
        kube::replay::summary(&self.request, &self.answer, about.as_deref())
    }
}

/// One entry of a responses file: it answers Kubernetes calls, or (with its
/// one key `http`) outbound HTTP requests.
#[derive(Debug, Clone)]
pub enum ScriptedResponse {
    /// Answers the Kubernetes calls it matches.
    Kube(KubeScript),
    /// Answers the HTTP requests it matches.
    Http(HttpScript),
}

/// A responses file that cannot be read; the entry at fault is named by
/// its number, from 1.
#[derive(Debug, thiserror::Error)]
pub enum ResponsesError {
    /// The text is not a YAML list of mappings.
    #[error("{0}")]
    NotAList(#[source] serde_yaml::Error),
    /// An entry has `http` beside other keys.
    #[error("response #{number}: an `http` entry has no other keys (put `times` inside it)")]
    HttpWithOtherKeys {
        /// The entry, from 1.
        number: usize,
    },
    /// An `http` entry does not parse.
    #[error("response #{number}: http: {reason}")]
    HttpSyntax {
        /// The entry, from 1.
        number: usize,
        /// What the parser reported.
        #[source]
        reason: serde_yaml::Error,
    },
    /// An `http` entry parses but cannot answer.
    #[error("response #{number}: {reason}")]
    Http {
        /// The entry, from 1.
        number: usize,
        /// Why it cannot answer.
        #[source]
        reason: HttpScriptError,
    },
    /// A Kubernetes entry does not parse.
    #[error("response #{number}: {reason}")]
    KubeSyntax {
        /// The entry, from 1.
        number: usize,
        /// What the parser reported.
        #[source]
        reason: serde_yaml::Error,
    },
    /// A Kubernetes entry parses but cannot answer.
    #[error("response #{number}: {reason}")]
    Kube {
        /// The entry, from 1.
        number: usize,
        /// Why it cannot answer.
        #[source]
        reason: KubeScriptError,
    },
}

/// Parses a responses file, naming the entry at fault.
pub fn parse_responses(text: &str) -> Result<Vec<ScriptedResponse>, ResponsesError> {
    let entries: Vec<serde_yaml::Mapping> =
        serde_yaml::from_str(text).map_err(ResponsesError::NotAList)?;
    let mut responses = Vec::with_capacity(entries.len());
    for (index, entry) in entries.into_iter().enumerate() {
        let number = index + 1;
        let response = match entry.get("http") {
            Some(_) if entry.len() > 1 => {
                return Err(ResponsesError::HttpWithOtherKeys { number });
            }
            Some(http) => {
                let http: HttpScript = serde_yaml::from_value(http.clone())
                    .map_err(|reason| ResponsesError::HttpSyntax { number, reason })?;
                http.check()
                    .map_err(|reason| ResponsesError::Http { number, reason })?;
                ScriptedResponse::Http(http)
            }
            None => {
                let kube: KubeScript = serde_yaml::from_value(entry.into())
                    .map_err(|reason| ResponsesError::KubeSyntax { number, reason })?;
                kube.check()
                    .map_err(|reason| ResponsesError::Kube { number, reason })?;
                ScriptedResponse::Kube(kube)
            }
        };
        responses.push(response);
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
            .find_map(|entry| match entry {
                ScriptedResponse::Http(http) if http.matches(&request) => Some(http),
                _ => None,
            })
            .map(HttpScript::take);
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
        let scripted = state.script.iter_mut().find_map(|entry| match entry {
            ScriptedResponse::Kube(kube) if kube.matches(request) => Some(kube),
            _ => None,
        });
        if let Some(kube) = scripted {
            return kube.take();
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
        let both = parse_responses("- object: {}\n  error: {type: conflict}\n")
            .unwrap_err()
            .to_string();
        assert!(both.contains("exactly one"), "{both}");
        let unknown = parse_responses("- error: {type: exploded}\n")
            .unwrap_err()
            .to_string();
        assert!(unknown.contains("exploded"), "{unknown}");
        assert!(parse_responses("- verb: fly\n  object: {}\n").is_err());
    }

    fn request(method: &str, url: &str, body: &str) -> OfflineRequest {
        OfflineRequest::new(method, url, body.to_owned())
    }

    #[test]
    fn http_entries_are_checked_when_read() {
        let ok = "- http: {method: POST, url: \"https://a.example/x\", times: 1, status: 503, \
                  body: later, headers: {retry-after: \"5\"}}\n\
                  - http: {url: \"https://b.example/*\", error: connection-refused}\n\
                  - verb: get\n  object: {}\n";
        assert_eq!(parse_responses(ok).unwrap().len(), 3);
        let both = parse_responses("- http: {error: denied, status: 500}\n")
            .unwrap_err()
            .to_string();
        assert!(both.contains("either `error`"), "{both}");
        let mixed = parse_responses("- verb: get\n  http: {status: 500}\n")
            .unwrap_err()
            .to_string();
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
}
