//! What `herald plugin replay` does with a plugin's Kubernetes calls: they
//! are never sent, they are answered by the first matching entry of the
//! `--responses` script ([`KubeScript`]) or by the replay itself, and each
//! is shown as one line ([`summary`]).

use super::{ApiRequest, KubeError, Operation, Target, Verb};
use serde::Deserialize;

/// Why a Kubernetes entry of a responses file cannot answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KubeScriptError {
    /// Both or neither of `object` and `error` were given.
    #[error("give exactly one of `object` and `error`")]
    NotExactlyOne,
    /// `error.type` (held here) is not a `kube-error` case.
    #[error("unknown error type {0:?}")]
    UnknownErrorType(String),
}

/// A scripted answer to the Kubernetes calls it matches (every key
/// optional), `times` times (default: every matching call).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KubeScript {
    verb: Option<Verb>,
    kind: Option<String>,
    namespace: Option<String>,
    name: Option<String>,
    times: Option<u32>,
    object: Option<serde_json::Value>,
    error: Option<ScriptedError>,
}

impl KubeScript {
    /// Why it cannot answer, if it cannot.
    pub fn check(&self) -> Result<(), KubeScriptError> {
        match (&self.object, &self.error) {
            (Some(_), Some(_)) | (None, None) => Err(KubeScriptError::NotExactlyOne),
            (_, Some(error)) => error.to_error().map(drop),
            _ => Ok(()),
        }
    }

    /// Whether it answers `request` (and has answers left).
    pub fn matches(&self, request: &ApiRequest) -> bool {
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

    /// Its answer, counted against `times`.
    pub fn take(&mut self) -> Result<String, KubeError> {
        if let Some(times) = &mut self.times {
            *times = times.saturating_sub(1);
        }
        match (&self.object, &self.error) {
            (Some(object), _) => Ok(object.to_string()),
            (_, Some(error)) => Err(error
                .to_error()
                .unwrap_or_else(|e| KubeError::Unavailable(e.to_string()))),
            (None, None) => Err(KubeError::Unavailable(
                "a scripted answer with neither object nor error".into(),
            )),
        }
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
    fn to_error(&self) -> Result<KubeError, KubeScriptError> {
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
            other => return Err(KubeScriptError::UnknownErrorType(other.to_owned())),
        })
    }
}

/// One line for a call and its answer:
/// `apply networking.k8s.io/v1/NetworkPolicy team-a/x (force) → ok`, with
/// `about` (what another capability says the call concerns, e.g. an
/// Event's object) after the target.
pub fn summary(
    request: &ApiRequest,
    answer: &Result<String, KubeError>,
    about: Option<&str>,
) -> String {
    let shown = answer.as_ref().ok().map(String::as_str);
    let target = Target {
        name: request.shown_name(shown),
        ..request.target.clone()
    };
    let mut line = format!("{} {target}", request.operation.verb());
    if let Some(about) = about {
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
    match answer {
        Ok(_) => line.push_str(" → ok"),
        Err(error) => line.push_str(&format!(" → {error}")),
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(yaml: &str) -> KubeScript {
        serde_yaml::from_str(yaml).unwrap()
    }

    #[test]
    fn a_script_gives_exactly_one_known_answer() {
        assert!(script("{verb: get, object: {}}").check().is_ok());
        let both = script("{object: {}, error: {type: conflict}}")
            .check()
            .unwrap_err();
        assert_eq!(both, KubeScriptError::NotExactlyOne);
        let unknown = script("{error: {type: exploded}}").check().unwrap_err();
        assert_eq!(unknown.to_string(), r#"unknown error type "exploded""#);
        assert!(serde_yaml::from_str::<KubeScript>("{verb: fly, object: {}}").is_err());
    }

    #[test]
    fn a_script_answers_times_times() {
        let mut conflict = script("{times: 1, error: {type: conflict, message: taken}}");
        assert!(conflict.times != Some(0));
        assert!(matches!(conflict.take(), Err(KubeError::Conflict(m)) if m == "taken"));
        assert_eq!(conflict.times, Some(0));
    }
}
