//! One Kubernetes API call of a plugin, as the host carries it from the
//! `kube` import to a backend (the cluster, or offline replay's script),
//! and the errors it can end in.

use super::rules::{Access, Verb};
use crate::gvk::Gvk;
use futures::future::BoxFuture;
use serde::Serialize;
use std::fmt;
use std::time::Duration;

/// The object (or subresource) a call is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Target {
    /// Its kind.
    pub gvk: Gvk,
    /// Its namespace; `None` when cluster-scoped.
    pub namespace: Option<String>,
    /// Its name; empty for a create, whose object names itself.
    pub name: String,
    /// `None` for the object, `Some("status")` for its status.
    pub subresource: Option<String>,
}

impl Target {
    /// Checks every identifier against the rule of its field, before the
    /// call goes any further: the kind's group, version and kind, the
    /// namespace (an RFC 1123 label), the subresource (`status` only) and,
    /// unless `creating` (whose object names itself in its body), the name
    /// by its kind's rule (checked again by its resource's once discovery
    /// has named it).
    pub fn check(&self, creating: bool) -> Result<(), KubeError> {
        use herald_grammar::name::{Rule, check};
        check("target.kind.group", &self.gvk.group, Rule::Group).map_err(invalid)?;
        check("target.kind.version", &self.gvk.version, Rule::Dns1035Label).map_err(invalid)?;
        check("target.kind.kind", &self.gvk.kind, Rule::Kind).map_err(invalid)?;
        if let Some(namespace) = &self.namespace {
            check("target.namespace", namespace, Rule::Dns1123Label).map_err(invalid)?;
        }
        if !creating {
            let rule =
                herald_grammar::name::object_name_rule_of_kind(&self.gvk.group, &self.gvk.kind);
            check("target.name", &self.name, rule).map_err(invalid)?;
        }
        match self.subresource.as_deref() {
            None | Some(super::rules::STATUS) => Ok(()),
            Some(other) => Err(KubeError::Invalid {
                message: format!(
                    "target.subresource {other:?} is not a subresource plugins may use (only \"status\")"
                ),
                causes: vec![Cause {
                    reason: "FieldValueNotSupported".into(),
                    message: "supported values: \"status\"".into(),
                    field: "target.subresource".into(),
                }],
            }),
        }
    }
}

/// A refused identifier as the error a handler gets: `invalid`, naming the
/// field and the rule, as the API server's own refusal would. Nothing was
/// sent.
pub(crate) fn invalid(refused: herald_grammar::name::Invalid) -> KubeError {
    KubeError::Invalid {
        message: format!("{refused}; nothing was sent"),
        causes: vec![Cause {
            reason: "FieldValueInvalid".into(),
            message: refused.rule.describe().into(),
            field: refused.field,
        }],
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.gvk)?;
        match &self.namespace {
            Some(ns) => write!(f, " {ns}/{}", self.name)?,
            None => write!(f, " {}", self.name)?,
        }
        if let Some(sub) = &self.subresource {
            write!(f, " ({sub})")?;
        }
        Ok(())
    }
}

/// How a patch document is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PatchType {
    /// JSON merge patch (RFC 7386).
    Merge,
    /// JSON patch (RFC 6902).
    Json,
    /// Strategic merge patch.
    Strategic,
}

impl PatchType {
    /// The request's `Content-Type`.
    pub fn content_type(self) -> &'static str {
        match self {
            PatchType::Merge => "application/merge-patch+json",
            PatchType::Json => "application/json-patch+json",
            PatchType::Strategic => "application/strategic-merge-patch+json",
        }
    }
}

/// Dependents' fate on delete.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Propagation {
    /// Left in place.
    Orphan,
    /// Deleted after the object.
    Background,
    /// Deleted before the object.
    Foreground,
}

/// A delete's preconditions and propagation.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeleteOptions {
    /// Only if the object has this UID.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// Only if the object is at this resourceVersion.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    /// Dependents' fate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub propagation: Option<Propagation>,
}

/// What a call does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "verb", rename_all = "lowercase")]
pub enum Operation {
    /// Read the object.
    Get,
    /// Create `body`.
    Create {
        /// The object, JSON text.
        body: String,
    },
    /// Replace the object with `body`.
    Replace {
        /// The object, JSON text.
        body: String,
    },
    /// Patch the object.
    Patch {
        /// How `body` is read.
        patch_type: PatchType,
        /// The patch, JSON text.
        body: String,
    },
    /// Server-side apply `body`.
    Apply {
        /// The applied configuration, JSON text.
        body: String,
        /// Take over fields other managers own.
        force: bool,
    },
    /// Delete the object.
    Delete(DeleteOptions),
}

impl Operation {
    /// The verb the grant check and metrics know it by.
    pub fn verb(&self) -> Verb {
        match self {
            Operation::Get => Verb::Get,
            Operation::Create { .. } => Verb::Create,
            Operation::Replace { .. } => Verb::Update,
            Operation::Patch { .. } => Verb::Patch,
            Operation::Apply { .. } => Verb::Apply,
            Operation::Delete(_) => Verb::Delete,
        }
    }

    /// True for the verbs that change the cluster (all but `get`).
    pub fn writes(&self) -> bool {
        !matches!(self, Operation::Get)
    }

    /// The document sent, if any.
    pub fn body(&self) -> Option<&str> {
        match self {
            Operation::Create { body }
            | Operation::Replace { body }
            | Operation::Patch { body, .. }
            | Operation::Apply { body, .. } => Some(body),
            Operation::Get | Operation::Delete(_) => None,
        }
    }
}

/// One call, ready for a backend.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiRequest {
    /// What it is about.
    pub target: Target,
    /// What it does.
    #[serde(flatten)]
    pub operation: Operation,
    /// Sent with `dryRun=All`: validated and admitted, never persisted.
    pub dry_run: bool,
    /// The field manager of writes: `herald.<plugin-name>`.
    pub field_manager: String,
    /// The cluster it goes to; `None` for the default one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<crate::cluster::ClusterName>,
}

impl ApiRequest {
    /// The name to show for the object the call is about: the target's; for
    /// a create, which names no target, the name the server gave it in
    /// `answer`, else the one its body gives (an Event's), else its
    /// `generateName` followed by `*`; empty when none is known.
    pub fn shown_name(&self, answer: Option<&str>) -> String {
        if !self.target.name.is_empty() {
            return self.target.name.clone();
        }
        let metadata = |json: &str, field: &str| {
            serde_json::from_str::<serde_json::Value>(json)
                .ok()?
                .pointer(&format!("/metadata/{field}"))?
                .as_str()
                .filter(|value| !value.is_empty())
                .map(str::to_owned)
        };
        let body = self.operation.body();
        answer
            .and_then(|answer| metadata(answer, "name"))
            .or_else(|| body.and_then(|body| metadata(body, "name")))
            .or_else(|| {
                body.and_then(|body| metadata(body, "generateName"))
                    .map(|prefix| format!("{prefix}*"))
            })
            .unwrap_or_default()
    }

    /// The call as the grant check sees it.
    pub fn access(&self) -> Access<'_> {
        Access {
            verb: self.operation.verb(),
            group: &self.target.gvk.group,
            kind: &self.target.gvk.kind,
            subresource: self.target.subresource.as_deref(),
            namespace: self.target.namespace.as_deref(),
        }
    }
}

/// One reason the server gave for an invalid object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Cause {
    /// Machine-readable reason.
    pub reason: String,
    /// Human-readable message.
    pub message: String,
    /// The field at fault.
    pub field: String,
}

/// Why a call failed; the WIT `kube-error` variant, host-side.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KubeError {
    /// Outside the plugin's rules or grants; nothing was sent.
    #[error("not granted: {0}")]
    NotGranted(String),
    /// 404.
    #[error("not found: {0}")]
    NotFound(String),
    /// 409 AlreadyExists.
    #[error("already exists: {0}")]
    AlreadyExists(String),
    /// 409 Conflict.
    #[error("conflict: {0}")]
    Conflict(String),
    /// 422 Invalid.
    #[error("invalid: {message}")]
    Invalid {
        /// The server's message.
        message: String,
        /// The fields at fault.
        causes: Vec<Cause>,
    },
    /// 403.
    #[error("forbidden: {0}")]
    Forbidden(String),
    /// 429, or the plugin's rate limit.
    #[error("too many requests: {message}")]
    TooManyRequests {
        /// Who refused, and why.
        message: String,
        /// When to retry, if known.
        retry_after: Option<Duration>,
    },
    /// Out of time.
    #[error("timeout: {0}")]
    Timeout(String),
    /// Unreachable, or 5xx.
    #[error("unavailable: {0}")]
    Unavailable(String),
    /// Any other refusal.
    #[error("failed ({code} {reason}): {message}")]
    Failed {
        /// HTTP status.
        code: u16,
        /// Status reason.
        reason: String,
        /// Status message.
        message: String,
    },
}

impl KubeError {
    /// The outcome label of a dry-run call the server answered with this
    /// error: what the write *would* have met (`would-conflict`, …).
    pub fn would_outcome(&self) -> &'static str {
        match self {
            KubeError::NotGranted(_) => "would-be-not-granted",
            KubeError::NotFound(_) => "would-not-find",
            KubeError::AlreadyExists(_) => "would-already-exist",
            KubeError::Conflict(_) => "would-conflict",
            KubeError::Invalid { .. } => "would-be-invalid",
            KubeError::Forbidden(_) => "would-be-forbidden",
            KubeError::TooManyRequests { .. } => "would-be-throttled",
            KubeError::Timeout(_) => "would-time-out",
            KubeError::Unavailable(_) => "would-be-unavailable",
            KubeError::Failed { .. } => "would-fail",
        }
    }

    /// The outcome label of metrics and audit lines: the variant's WIT name.
    pub fn outcome(&self) -> &'static str {
        match self {
            KubeError::NotGranted(_) => "not-granted",
            KubeError::NotFound(_) => "not-found",
            KubeError::AlreadyExists(_) => "already-exists",
            KubeError::Conflict(_) => "conflict",
            KubeError::Invalid { .. } => "invalid",
            KubeError::Forbidden(_) => "forbidden",
            KubeError::TooManyRequests { .. } => "too-many-requests",
            KubeError::Timeout(_) => "timeout",
            KubeError::Unavailable(_) => "unavailable",
            KubeError::Failed { .. } => "failed",
        }
    }
}

/// Where a plugin's calls go: the cluster, or a script.
pub trait ApiBackend: Send + Sync + fmt::Debug + 'static {
    /// Sends `request`; the answer is the object as JSON text (for a delete,
    /// whatever the server returned).
    fn send(&self, request: ApiRequest) -> BoxFuture<'static, Result<String, KubeError>>;
}
