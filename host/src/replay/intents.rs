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

use crate::capability::kube::{ApiBackend, ApiRequest, KubeError, Operation};
use crate::gvk::Gvk;
use crate::plugin::ObjectReader;
use crate::store::Store;
use futures::future::BoxFuture;
use serde::Deserialize;
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
        let mut line = format!("{} {}", request.operation.verb(), request.target);
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

/// One scripted answer.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedResponse {
    verb: Option<crate::capability::grant::Verb>,
    kind: Option<String>,
    namespace: Option<String>,
    name: Option<String>,
    times: Option<u32>,
    object: Option<serde_json::Value>,
    error: Option<ScriptedError>,
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
        self.times != Some(0)
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
}
