//! Admission: deciding on writes before they reach the cluster (world
//! 0.5.0). A plugin declares its webhooks in the manifest
//! ([`Manifest::validating`](crate::Manifest::validating),
//! [`Manifest::mutating`](crate::Manifest::mutating)) and answers
//! [`Handler::validate`](crate::Handler::validate) and
//! [`Handler::mutate`](crate::Handler::mutate) for each
//! [`AdmissionReview`] the API server sends through the host.
//!
//! During an admission call the plugin may read the cache (within its read
//! grants) and nothing else: writes, Events and HTTP are refused, because
//! a review must have no side effects.
//!
//! ```
//! use herald_sdk::admission::{AdmissionReview, AdmissionRule, Verdict, Webhook};
//! use herald_sdk::k8s_openapi::api::core::v1::Pod;
//! use herald_sdk::{Error, Handler, Manifest};
//!
//! #[derive(Default)]
//! struct NoLatest;
//!
//! impl Handler for NoLatest {
//!     fn manifest() -> Manifest {
//!         Manifest::new("no-latest", "0.1.0")
//!             .validating(Webhook::new().rule(AdmissionRule::to::<Pod>().create().update()))
//!     }
//!
//!     fn validate(&mut self, review: &AdmissionReview) -> Result<Verdict, Error> {
//!         let pod: Pod = review.object()?;
//!         let latest = pod.spec.iter().flat_map(|s| &s.containers).any(|c| {
//!             c.image.as_deref().is_some_and(|image| image.ends_with(":latest"))
//!         });
//!         Ok(if latest { Verdict::deny("images must be pinned, not :latest") } else { Verdict::allow() })
//!     }
//! }
//! # fn main() {}
//! ```

use crate::bindings::exports::herald::plugin0_5_0::admission as wit;
use crate::{Error, GroupVersionKind};
use k8s_openapi::Resource;
use serde::de::DeserializeOwned;

/// The operation a review is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Operation {
    /// `CREATE`.
    Create,
    /// `UPDATE`.
    Update,
    /// `DELETE`.
    Delete,
    /// `CONNECT` (exec, attach, port-forward).
    Connect,
}

impl Operation {
    /// As AdmissionReview spells it: `CREATE`, `UPDATE`, `DELETE`, `CONNECT`.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }

    fn to_wit(self) -> wit::Operation {
        match self {
            Operation::Create => wit::Operation::Create,
            Operation::Update => wit::Operation::Update,
            Operation::Delete => wit::Operation::Delete,
            Operation::Connect => wit::Operation::Connect,
        }
    }

    fn from_wit(op: wit::Operation) -> Self {
        match op {
            wit::Operation::Create => Operation::Create,
            wit::Operation::Update => Operation::Update,
            wit::Operation::Delete => Operation::Delete,
            wit::Operation::Connect => Operation::Connect,
        }
    }
}

/// What the API server does when the plugin cannot decide (a fault, a
/// timeout, the plugin gone).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum FailurePolicy {
    /// Refuse the write (Kubernetes' default).
    #[default]
    Fail,
    /// Let the write through.
    Ignore,
}

/// One kind of write a webhook covers: a kind, its operations and
/// optionally a subresource.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdmissionRule {
    /// The kind.
    pub kind: GroupVersionKind,
    /// The operations; at least one.
    pub operations: Vec<Operation>,
    /// A subresource (`status`), or the object itself.
    pub subresource: Option<String>,
}

impl AdmissionRule {
    /// A rule for the `k8s-openapi` type `K`, with no operation yet.
    pub fn to<K: Resource>() -> Self {
        Self::new(GroupVersionKind::of::<K>())
    }

    /// A rule for any kind (CRDs), with no operation yet.
    pub fn new(kind: GroupVersionKind) -> Self {
        AdmissionRule {
            kind,
            operations: Vec::new(),
            subresource: None,
        }
    }

    /// Adds `operation`.
    pub fn operation(mut self, operation: Operation) -> Self {
        if !self.operations.contains(&operation) {
            self.operations.push(operation);
        }
        self
    }

    /// Adds `CREATE`.
    pub fn create(self) -> Self {
        self.operation(Operation::Create)
    }

    /// Adds `UPDATE`.
    pub fn update(self) -> Self {
        self.operation(Operation::Update)
    }

    /// Adds `DELETE`.
    pub fn delete(self) -> Self {
        self.operation(Operation::Delete)
    }

    /// Covers `subresource` (`status`) instead of the object itself.
    pub fn subresource(mut self, subresource: impl Into<String>) -> Self {
        self.subresource = Some(subresource.into());
        self
    }

    fn into_wit(self) -> wit::Rule {
        wit::Rule {
            kind: self.kind.to_wit(),
            operations: self.operations.into_iter().map(Operation::to_wit).collect(),
            subresource: self.subresource,
        }
    }
}

/// A webhook: the writes the API server sends the plugin for one decision.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Webhook {
    /// What it covers; at least one rule.
    pub rules: Vec<AdmissionRule>,
    /// Only namespaces whose labels match (label-selector syntax).
    pub namespace_selector: Option<String>,
    /// Only objects whose labels match.
    pub object_selector: Option<String>,
    /// What happens when the plugin cannot decide.
    pub failure_policy: FailurePolicy,
    /// How long the API server waits, 1 to 30 seconds; unset: 10.
    pub timeout_seconds: Option<u32>,
}

impl Webhook {
    /// A webhook with no rule yet, failing closed, with the default timeout.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a rule.
    pub fn rule(mut self, rule: AdmissionRule) -> Self {
        self.rules.push(rule);
        self
    }

    /// Only namespaces whose labels match `selector`.
    pub fn namespaces_labelled(mut self, selector: impl Into<String>) -> Self {
        self.namespace_selector = Some(selector.into());
        self
    }

    /// Only the namespaces named (by their `kubernetes.io/metadata.name`
    /// label, which the API server sets on every namespace).
    pub fn in_namespaces<S: AsRef<str>>(self, names: impl IntoIterator<Item = S>) -> Self {
        let names: Vec<String> = names.into_iter().map(|n| n.as_ref().to_owned()).collect();
        self.namespaces_labelled(format!(
            "kubernetes.io/metadata.name in ({})",
            names.join(",")
        ))
    }

    /// Only objects whose labels match `selector`.
    pub fn objects_labelled(mut self, selector: impl Into<String>) -> Self {
        self.object_selector = Some(selector.into());
        self
    }

    /// What happens when the plugin cannot decide.
    pub fn failure_policy(mut self, policy: FailurePolicy) -> Self {
        self.failure_policy = policy;
        self
    }

    /// How long the API server waits.
    pub fn timeout_seconds(mut self, seconds: u32) -> Self {
        self.timeout_seconds = Some(seconds);
        self
    }

    pub(crate) fn into_wit(self) -> wit::Webhook {
        wit::Webhook {
            rules: self
                .rules
                .into_iter()
                .map(AdmissionRule::into_wit)
                .collect(),
            namespace_selector: self.namespace_selector,
            object_selector: self.object_selector,
            failure_policy: match self.failure_policy {
                FailurePolicy::Fail => wit::FailurePolicy::Fail,
                FailurePolicy::Ignore => wit::FailurePolicy::Ignore,
            },
            timeout_seconds: self.timeout_seconds,
        }
    }
}

/// Who asked for a write.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserInfo {
    /// The user's name.
    pub username: String,
    /// The user's uid.
    pub uid: String,
    /// Their groups.
    pub groups: Vec<String>,
    /// Extra attributes from the authenticator.
    pub extra: Vec<(String, Vec<String>)>,
}

/// One write the API server asks about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdmissionReview {
    /// The review's identifier.
    pub uid: String,
    /// The kind of the object.
    pub kind: GroupVersionKind,
    /// The resource, plural (`pods`).
    pub resource: String,
    /// The subresource written; empty for the object itself.
    pub subresource: String,
    /// The object's name (empty on a create whose name the server makes).
    pub name: String,
    /// Its namespace; empty for cluster-scoped kinds.
    pub namespace: String,
    /// What is being done.
    pub operation: Operation,
    /// Who is doing it.
    pub user_info: UserInfo,
    /// The object as it would be stored, as JSON; `None` on a delete.
    pub object_json: Option<String>,
    /// The object as it is stored, as JSON; `None` on a create.
    pub old_object_json: Option<String>,
    /// True when the write will not persist.
    pub dry_run: bool,
    /// The operation's options as JSON (CreateOptions, ...).
    pub options_json: Option<String>,
}

impl AdmissionReview {
    /// The object as it would be stored, decoded; an error on a delete
    /// (use [`old_object`](Self::old_object)).
    pub fn object<T: DeserializeOwned>(&self) -> Result<T, Error> {
        decode(self.object_json.as_deref(), "object")
    }

    /// The object as it is stored, decoded; an error on a create.
    pub fn old_object<T: DeserializeOwned>(&self) -> Result<T, Error> {
        decode(self.old_object_json.as_deref(), "oldObject")
    }

    /// A review as the host hands it over; public for tests that build
    /// reviews ([`testing`](crate::testing)).
    #[doc(hidden)]
    pub fn from_wit(review: wit::Review) -> Self {
        AdmissionReview {
            uid: review.uid,
            kind: GroupVersionKind::from_wit(review.kind),
            resource: review.resource,
            subresource: review.subresource,
            name: review.name,
            namespace: review.namespace,
            operation: Operation::from_wit(review.operation),
            user_info: UserInfo {
                username: review.user_info.username,
                uid: review.user_info.uid,
                groups: review.user_info.groups,
                extra: review.user_info.extra,
            },
            object_json: review.object,
            old_object_json: review.old_object,
            dry_run: review.dry_run,
            options_json: review.options,
        }
    }
}

fn decode<T: DeserializeOwned>(json: Option<&str>, what: &str) -> Result<T, Error> {
    let json = json.ok_or_else(|| Error::msg(format!("the review carries no {what}")))?;
    serde_json::from_str(json).map_err(|e| Error::msg(format!("decoding the review's {what}: {e}")))
}

/// A decision: allow, or refuse with a message; warnings either way.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// Whether the write may go ahead.
    pub allowed: bool,
    /// The HTTP status of a refusal (400 to 599); unset: 403.
    pub code: Option<u16>,
    /// Why it was refused.
    pub message: String,
    /// Warnings the user's client prints.
    pub warnings: Vec<String>,
}

impl Verdict {
    /// Let the write through.
    pub fn allow() -> Self {
        Verdict {
            allowed: true,
            code: None,
            message: String::new(),
            warnings: Vec::new(),
        }
    }

    /// Refuse it, saying why (403 Forbidden).
    pub fn deny(message: impl Into<String>) -> Self {
        Verdict {
            allowed: false,
            message: message.into(),
            ..Self::allow()
        }
    }

    /// The HTTP status of the refusal.
    pub fn code(mut self, code: u16) -> Self {
        self.code = Some(code);
        self
    }

    /// Adds a warning.
    pub fn warn(mut self, warning: impl Into<String>) -> Self {
        self.warnings.push(warning.into());
        self
    }

    pub(crate) fn into_wit(self) -> wit::Verdict {
        wit::Verdict {
            allowed: self.allowed,
            code: self.code,
            message: self.message,
            warnings: self.warnings,
        }
    }
}

/// What a mutating plugin answers: its decision and its change.
#[derive(Clone, Debug, PartialEq)]
pub struct Mutation {
    /// The decision.
    pub verdict: Verdict,
    /// The change (ignored when the write is refused).
    pub change: Change,
}

/// A change to the reviewed object.
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    /// None.
    None,
    /// A JSON Patch (RFC 6902) against the review's object.
    JsonPatch(serde_json::Value),
    /// The whole changed object; the host computes the patch.
    Object(serde_json::Value),
}

impl Mutation {
    /// Allow, unchanged.
    pub fn none() -> Self {
        Mutation {
            verdict: Verdict::allow(),
            change: Change::None,
        }
    }

    /// Allow with a JSON Patch.
    pub fn patch(patch: serde_json::Value) -> Self {
        Mutation {
            verdict: Verdict::allow(),
            change: Change::JsonPatch(patch),
        }
    }

    /// Allow, changed into `object` (any `Serialize`, e.g. the typed object
    /// the review carried, modified).
    pub fn object<T: serde::Serialize>(object: &T) -> Result<Self, Error> {
        let value = serde_json::to_value(object)
            .map_err(|e| Error::msg(format!("encoding the changed object: {e}")))?;
        Ok(Mutation {
            verdict: Verdict::allow(),
            change: Change::Object(value),
        })
    }

    /// Refuse, as [`Verdict::deny`].
    pub fn deny(message: impl Into<String>) -> Self {
        Mutation {
            verdict: Verdict::deny(message),
            change: Change::None,
        }
    }

    pub(crate) fn into_wit(self) -> wit::Mutation {
        wit::Mutation {
            verdict: self.verdict.into_wit(),
            change: match self.change {
                Change::None => wit::Change::None,
                Change::JsonPatch(patch) => wit::Change::JsonPatch(patch.to_string()),
                Change::Object(object) => wit::Change::Object(object.to_string()),
            },
        }
    }
}

/// What the manifest declares, as `declare` answers it.
pub(crate) fn webhooks(validating: Option<Webhook>, mutating: Option<Webhook>) -> wit::Webhooks {
    wit::Webhooks {
        validating: validating.map(Webhook::into_wit),
        mutating: mutating.map(Webhook::into_wit),
    }
}
