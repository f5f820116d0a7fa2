//! Reads and writes through the Kubernetes API server, in the spirit of
//! kube-rs: [`Api`] for `k8s-openapi` types, [`DynamicApi`] for any kind
//! (CRDs) as JSON values.
//!
//! Every call goes through the host's client with the deadline of the
//! handler call, and is checked against the plugin's declared
//! [`WriteRule`](crate::WriteRule)s and the operator's grant before a request
//! leaves the host: declare each verb in the manifest, or the call fails with
//! [`KubeError::NotGranted`]. A plugin the operator runs in dry-run mode gets
//! the server's answers, but nothing persists. Server-side applies use the
//! field manager `herald.<plugin-name>`.
//!
//! ```no_run
//! use herald_sdk::k8s_openapi::api::apps::v1::Deployment;
//! use herald_sdk::kube::{Api, Patch};
//! use herald_sdk::serde_json::json;
//!
//! # fn main() -> Result<(), herald_sdk::Error> {
//! let deployments = Api::<Deployment>::namespaced("shop");
//! let patch = Patch::Merge(json!({"metadata": {"labels": {"audited": "true"}}}));
//! match deployments.patch("web", &patch) {
//!     Ok(patched) => herald_sdk::info!("labelled rv={:?}", patched.metadata.resource_version),
//!     Err(error) if error.is_not_found() => herald_sdk::info!("web is gone"),
//!     Err(error) => return Err(error.into()),
//! }
//! # Ok(())
//! # }
//! ```
//!
//! Errors are [`KubeError`], one variant per way the call can fail; it
//! converts into [`Error`](crate::Error), so `?` works in handlers (an
//! `Err` from a handler makes the host retry the notification with backoff,
//! which suits the retryable errors: see [`KubeError::is_retryable`]).

use std::fmt;
use std::marker::PhantomData;
use std::time::Duration;

use k8s_openapi::{ClusterResourceScope, NamespaceResourceScope, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::GroupVersionKind;
pub use crate::manifest::Verb;

/// The result of a `kube` call.
pub type Result<T, E = KubeError> = std::result::Result<T, E>;

/// Why a `kube` call (or an [`events`](crate::events) publish) failed. A
/// handler can act on each: retry a conflict with a fresh read, create what
/// was not found, back off when throttled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KubeError {
    /// The call is outside the plugin's write rules or the operator's grant;
    /// no request was sent. The text names the rule that is missing.
    NotGranted(String),
    /// 404: the object (or its namespace, or its kind) does not exist.
    NotFound(String),
    /// 409 AlreadyExists: a create of an object that exists.
    AlreadyExists(String),
    /// 409 Conflict: a stale resourceVersion, a failed precondition, or a
    /// server-side apply conflict with another field manager.
    Conflict(String),
    /// 422 Invalid: the server refused the object.
    Invalid {
        /// The server's message.
        message: String,
        /// The fields at fault.
        causes: Vec<Cause>,
    },
    /// 403: the host's service account may not do this.
    Forbidden(String),
    /// 429 from the server, or the plugin's own rate limit could not admit
    /// the call before its deadline.
    TooManyRequests {
        /// What refused the call: the host's rate limit or the server.
        message: String,
        /// How long to wait before retrying, when known.
        retry_after: Option<Duration>,
    },
    /// The call did not finish within the handler call's deadline, or the
    /// server answered 504.
    Timeout(String),
    /// The server could not be reached, or answered 5xx.
    Unavailable(String),
    /// Any other refusal (400, 405, 415, …), with the server's status.
    Failed {
        /// HTTP status code.
        code: u16,
        /// The Status `reason` (e.g. `BadRequest`), possibly empty.
        reason: String,
        /// The Status `message`.
        message: String,
    },
    /// Made by the SDK, never by the host: the request could not be encoded
    /// as JSON (or lacked the identity the call needs, such as an Event's
    /// `metadata.name`), so nothing was sent; or the answer did not decode
    /// into the requested type, so the call happened but its result is lost.
    Encoding(String),
}

/// One reason the API server gave for refusing an object as invalid.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cause {
    /// Machine-readable reason, e.g. `FieldValueRequired`.
    pub reason: String,
    /// Human-readable message.
    pub message: String,
    /// The field at fault, e.g. `spec.containers[0].image`.
    pub field: String,
}

impl KubeError {
    /// 404: the object does not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::NotFound(_))
    }

    /// 409 Conflict (not AlreadyExists): read again and retry.
    pub fn is_conflict(&self) -> bool {
        matches!(self, Self::Conflict(_))
    }

    /// 409 AlreadyExists: a create of an object that exists.
    pub fn is_already_exists(&self) -> bool {
        matches!(self, Self::AlreadyExists(_))
    }

    /// The call was refused by the plugin's write rules or grant.
    pub fn is_not_granted(&self) -> bool {
        matches!(self, Self::NotGranted(_))
    }

    /// Whether the same call may succeed later: conflicts, throttling,
    /// timeouts and unavailability. Returning such an error from a handler
    /// makes the host retry the notification with backoff; the others
    /// (not granted, forbidden, invalid, …) will fail the same way again.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Self::Conflict(_)
                | Self::TooManyRequests { .. }
                | Self::Timeout(_)
                | Self::Unavailable(_)
        )
    }

    /// The variant's name in kebab case, as the WIT spells it: `not-granted`,
    /// `not-found`, `already-exists`, `conflict`, `invalid`, `forbidden`,
    /// `too-many-requests`, `timeout`, `unavailable`, `failed`; `encoding`
    /// for the SDK's own [`KubeError::Encoding`]. Handy in log lines.
    pub fn outcome(&self) -> &'static str {
        match self {
            Self::NotGranted(_) => "not-granted",
            Self::NotFound(_) => "not-found",
            Self::AlreadyExists(_) => "already-exists",
            Self::Conflict(_) => "conflict",
            Self::Invalid { .. } => "invalid",
            Self::Forbidden(_) => "forbidden",
            Self::TooManyRequests { .. } => "too-many-requests",
            Self::Timeout(_) => "timeout",
            Self::Unavailable(_) => "unavailable",
            Self::Failed { .. } => "failed",
            Self::Encoding(_) => "encoding",
        }
    }

    /// The message the host or server gave.
    pub fn message(&self) -> &str {
        match self {
            Self::NotGranted(message)
            | Self::NotFound(message)
            | Self::AlreadyExists(message)
            | Self::Conflict(message)
            | Self::Forbidden(message)
            | Self::Timeout(message)
            | Self::Unavailable(message)
            | Self::Encoding(message)
            | Self::Invalid { message, .. }
            | Self::TooManyRequests { message, .. }
            | Self::Failed { message, .. } => message,
        }
    }

    #[cfg(target_arch = "wasm32")]
    pub(crate) fn from_wit(error: crate::bindings::herald::plugin0_2_0::kube::KubeError) -> Self {
        use crate::bindings::herald::plugin0_2_0::kube::KubeError as Wit;
        match error {
            Wit::NotGranted(message) => Self::NotGranted(message),
            Wit::NotFound(message) => Self::NotFound(message),
            Wit::AlreadyExists(message) => Self::AlreadyExists(message),
            Wit::Conflict(message) => Self::Conflict(message),
            Wit::Invalid(invalid) => Self::Invalid {
                message: invalid.message,
                causes: invalid
                    .causes
                    .into_iter()
                    .map(|cause| Cause {
                        reason: cause.reason,
                        message: cause.message,
                        field: cause.field,
                    })
                    .collect(),
            },
            Wit::Forbidden(message) => Self::Forbidden(message),
            Wit::TooManyRequests(throttled) => Self::TooManyRequests {
                message: throttled.message,
                retry_after: throttled.retry_after_ms.map(Duration::from_millis),
            },
            Wit::Timeout(message) => Self::Timeout(message),
            Wit::Unavailable(message) => Self::Unavailable(message),
            Wit::Failed(status) => Self::Failed {
                code: status.code,
                reason: status.reason,
                message: status.message,
            },
        }
    }
}

/// Formats as `<outcome>: <message>`, plus the invalid fields, the HTTP code
/// or the retry delay when there are.
impl fmt::Display for KubeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.outcome(), self.message())?;
        match self {
            Self::Invalid { causes, .. } if !causes.is_empty() => {
                let fields: Vec<&str> = causes.iter().map(|cause| cause.field.as_str()).collect();
                write!(f, " (fields: {})", fields.join(", "))
            }
            Self::TooManyRequests {
                retry_after: Some(after),
                ..
            } => write!(f, " (retry after {}ms)", after.as_millis()),
            Self::Failed { code, reason, .. } => write!(f, " (HTTP {code} {reason})"),
            _ => Ok(()),
        }
    }
}

impl std::error::Error for KubeError {}

/// The object (or subresource) a call is about.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Target {
    /// Its kind.
    pub kind: GroupVersionKind,
    /// Its namespace; `None` for cluster-scoped kinds.
    pub namespace: Option<String>,
    /// Its name.
    pub name: String,
    /// `None` for the object itself, `Some("status")` for its status.
    pub subresource: Option<String>,
}

impl Target {
    /// `namespace/name`, or `name` when cluster-scoped: the key the host's
    /// notifications use.
    pub fn key(&self) -> String {
        match &self.namespace {
            Some(namespace) => format!("{namespace}/{}", self.name),
            None => self.name.clone(),
        }
    }

    #[cfg(target_arch = "wasm32")]
    pub(crate) fn to_wit(&self) -> crate::bindings::herald::plugin0_2_0::kube::Target {
        crate::bindings::herald::plugin0_2_0::kube::Target {
            kind: self.kind.to_wit(),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            subresource: self.subresource.clone(),
        }
    }
}

/// Formats as `apiVersion/Kind key[/subresource]`, e.g.
/// `apps/v1/Deployment shop/web/status`.
impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.kind, self.key())?;
        if let Some(subresource) = &self.subresource {
            write!(f, "/{subresource}")?;
        }
        Ok(())
    }
}

/// How a patch document is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PatchType {
    /// JSON merge patch (RFC 7386).
    Merge,
    /// JSON patch (RFC 6902): a list of operations.
    Json,
    /// Kubernetes' strategic merge patch (built-in kinds only).
    Strategic,
}

impl PatchType {
    /// `merge`, `json` or `strategic`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Merge => "merge",
            Self::Json => "json",
            Self::Strategic => "strategic",
        }
    }

    #[cfg(target_arch = "wasm32")]
    pub(crate) fn to_wit(self) -> crate::bindings::herald::plugin0_2_0::kube::PatchType {
        use crate::bindings::herald::plugin0_2_0::kube::PatchType as Wit;
        match self {
            Self::Merge => Wit::Merge,
            Self::Json => Wit::Json,
            Self::Strategic => Wit::Strategic,
        }
    }
}

/// A patch: its type and its document. For server-side apply use
/// [`Api::apply`] instead.
#[derive(Clone, Debug, PartialEq)]
pub enum Patch {
    /// A JSON merge patch (RFC 7386): `{"metadata":{"labels":{"a":"b"}}}`;
    /// `null` removes a field.
    Merge(Value),
    /// A JSON patch (RFC 6902): `[{"op":"add","path":"/x","value":1}]`.
    Json(Value),
    /// A strategic merge patch (built-in kinds only): like a merge patch, but
    /// lists merge by their keys (containers by name, …).
    Strategic(Value),
}

impl Patch {
    /// How the document is read.
    pub fn patch_type(&self) -> PatchType {
        match self {
            Self::Merge(_) => PatchType::Merge,
            Self::Json(_) => PatchType::Json,
            Self::Strategic(_) => PatchType::Strategic,
        }
    }

    /// The document.
    pub fn document(&self) -> &Value {
        match self {
            Self::Merge(document) | Self::Json(document) | Self::Strategic(document) => document,
        }
    }
}

/// How a delete treats the object's dependents.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Propagation {
    /// Leave dependents in place.
    Orphan,
    /// Delete the object now, its dependents in the background.
    Background,
    /// Delete dependents first, then the object.
    Foreground,
}

impl Propagation {
    #[cfg(target_arch = "wasm32")]
    pub(crate) fn to_wit(self) -> crate::bindings::herald::plugin0_2_0::kube::Propagation {
        use crate::bindings::herald::plugin0_2_0::kube::Propagation as Wit;
        match self {
            Self::Orphan => Wit::Orphan,
            Self::Background => Wit::Background,
            Self::Foreground => Wit::Foreground,
        }
    }
}

/// Options of a delete: preconditions and propagation. The default deletes
/// unconditionally with the kind's default propagation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeleteParams {
    /// Delete only if the object still has this UID.
    pub uid: Option<String>,
    /// Delete only if the object is still at this resourceVersion.
    pub resource_version: Option<String>,
    /// The dependents' fate; `None` takes the kind's default.
    pub propagation: Option<Propagation>,
}

impl DeleteParams {
    /// Only if the object still has this UID (a `Conflict` otherwise).
    pub fn uid(mut self, uid: impl Into<String>) -> Self {
        self.uid = Some(uid.into());
        self
    }

    /// Only if the object is still at this resourceVersion (a `Conflict`
    /// otherwise).
    pub fn resource_version(mut self, resource_version: impl Into<String>) -> Self {
        self.resource_version = Some(resource_version.into());
        self
    }

    /// Sets the propagation policy.
    pub fn propagation(mut self, propagation: Propagation) -> Self {
        self.propagation = Some(propagation);
        self
    }
}

/// Typed calls on one `k8s-openapi` kind, in one namespace (or on a
/// cluster-scoped kind): `Api::<Deployment>::namespaced("shop")`,
/// `Api::<Namespace>::all()`. Objects are decoded into `K`.
#[derive(Debug)]
pub struct Api<K> {
    dynamic: DynamicApi,
    kind: PhantomData<fn() -> K>,
}

impl<K> Clone for Api<K> {
    fn clone(&self) -> Self {
        Self {
            dynamic: self.dynamic.clone(),
            kind: PhantomData,
        }
    }
}

impl<K: Resource<Scope = NamespaceResourceScope>> Api<K> {
    /// Calls on objects of kind `K` in `namespace`.
    pub fn namespaced(namespace: impl Into<String>) -> Self {
        Self {
            dynamic: DynamicApi::namespaced(GroupVersionKind::of::<K>(), namespace),
            kind: PhantomData,
        }
    }
}

impl<K: Resource<Scope = ClusterResourceScope>> Api<K> {
    /// Calls on objects of the cluster-scoped kind `K` (Namespaces, Nodes,
    /// ClusterRoles, …).
    pub fn all() -> Self {
        Self {
            dynamic: DynamicApi::cluster(GroupVersionKind::of::<K>()),
            kind: PhantomData,
        }
    }
}

impl<K: Resource + Serialize + DeserializeOwned> Api<K> {
    /// The untyped calls underneath, on the same kind and namespace.
    pub fn dynamic(&self) -> &DynamicApi {
        &self.dynamic
    }

    /// Reads `name` from the API server (not the cache). Verb `get`.
    pub fn get(&self, name: &str) -> Result<K> {
        decode(self.dynamic.get(name)?)
    }

    /// Reads the status subresource of `name`. Verb `get` on `status`.
    pub fn get_status(&self, name: &str) -> Result<K> {
        decode(self.dynamic.get_status(name)?)
    }

    /// Creates `object` (its `metadata.name` or `generateName` names it):
    /// the object as stored. Verb `create`.
    pub fn create(&self, object: &K) -> Result<K> {
        decode(self.dynamic.create(&encode(object)?)?)
    }

    /// Replaces `name` with `object`; a `metadata.resourceVersion` in it
    /// makes the replace conditional (a `Conflict` when stale). Verb
    /// `update`.
    pub fn replace(&self, name: &str, object: &K) -> Result<K> {
        decode(self.dynamic.replace(name, &encode(object)?)?)
    }

    /// Replaces the status of `name` with the status of `object`. Verb
    /// `update` on `status`.
    pub fn replace_status(&self, name: &str, object: &K) -> Result<K> {
        decode(self.dynamic.replace_status(name, &encode(object)?)?)
    }

    /// Patches `name`: the object as patched. Verb `patch`.
    pub fn patch(&self, name: &str, patch: &Patch) -> Result<K> {
        decode(self.dynamic.patch(name, patch)?)
    }

    /// Patches the status of `name`. Verb `patch` on `status`.
    pub fn patch_status(&self, name: &str, patch: &Patch) -> Result<K> {
        decode(self.dynamic.patch_status(name, patch)?)
    }

    /// Server-side applies `object` as `name` with the field manager
    /// `herald.<plugin-name>`: the fields it sets become the plugin's. It
    /// may be a `K` or any serializable partial object (a `serde_json`
    /// value, say); `apiVersion`, `kind`, `metadata.name` and
    /// `metadata.namespace` are filled in when missing. `force` takes over
    /// fields other managers own instead of failing with a `Conflict`. Verb
    /// `apply`.
    pub fn apply<T: Serialize + ?Sized>(&self, name: &str, object: &T, force: bool) -> Result<K> {
        decode(self.dynamic.apply(name, &encode(object)?, force)?)
    }

    /// Server-side applies the status in `object` (see [`Api::apply`]). Verb
    /// `apply` on `status`.
    pub fn apply_status<T: Serialize + ?Sized>(
        &self,
        name: &str,
        object: &T,
        force: bool,
    ) -> Result<K> {
        decode(self.dynamic.apply_status(name, &encode(object)?, force)?)
    }

    /// Deletes `name`, with preconditions and propagation from `params`.
    /// Verb `delete`.
    pub fn delete(&self, name: &str, params: &DeleteParams) -> Result<()> {
        self.dynamic.delete(name, params)
    }
}

/// Untyped calls on any kind (CRDs included), in one namespace or
/// cluster-scoped, with objects as [`serde_json::Value`]s.
///
/// ```no_run
/// use herald_sdk::GroupVersionKind;
/// use herald_sdk::kube::DynamicApi;
/// use herald_sdk::serde_json::json;
///
/// # fn main() -> Result<(), herald_sdk::kube::KubeError> {
/// let widgets = DynamicApi::namespaced(GroupVersionKind::new("example.com", "v1", "Widget"), "shop");
/// let applied = widgets.apply("w1", &json!({"spec": {"size": 3}}), true)?;
/// let status = widgets.patch_status("w1", &herald_sdk::kube::Patch::Merge(json!({"status": {"ready": true}})))?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DynamicApi {
    kind: GroupVersionKind,
    namespace: Option<String>,
    subresource: Option<String>,
}

impl DynamicApi {
    /// Calls on objects of `kind` in `namespace` (`None`: cluster-scoped).
    pub fn new(kind: GroupVersionKind, namespace: Option<&str>) -> Self {
        Self {
            kind,
            namespace: namespace.map(str::to_owned),
            subresource: None,
        }
    }

    /// Calls on objects of the namespaced `kind` in `namespace`.
    pub fn namespaced(kind: GroupVersionKind, namespace: impl Into<String>) -> Self {
        Self {
            kind,
            namespace: Some(namespace.into()),
            subresource: None,
        }
    }

    /// Calls on objects of the cluster-scoped `kind`.
    pub fn cluster(kind: GroupVersionKind) -> Self {
        Self {
            kind,
            namespace: None,
            subresource: None,
        }
    }

    /// The same calls aimed at a subresource of the objects (`status`): get,
    /// replace, patch, apply and delete then address `name/<subresource>`.
    /// Create ignores it. The `*_status` methods are shorthands.
    pub fn subresource(mut self, subresource: impl Into<String>) -> Self {
        self.subresource = Some(subresource.into());
        self
    }

    /// The kind the calls are about.
    pub fn kind(&self) -> &GroupVersionKind {
        &self.kind
    }

    /// The namespace the calls are in; `None` when cluster-scoped.
    pub fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// The object `name` (or its subresource) as a call addresses it.
    pub fn target(&self, name: &str) -> Target {
        Target {
            kind: self.kind.clone(),
            namespace: self.namespace.clone(),
            name: name.to_owned(),
            subresource: self.subresource.clone(),
        }
    }

    fn status(&self) -> Self {
        self.clone().subresource("status")
    }

    /// Reads `name` from the API server (not the cache). Verb `get`.
    pub fn get(&self, name: &str) -> Result<Value> {
        parse(crate::host::kube_get(&self.target(name))?)
    }

    /// Reads the status subresource of `name`.
    pub fn get_status(&self, name: &str) -> Result<Value> {
        self.status().get(name)
    }

    /// Creates `object`; `apiVersion`, `kind` and `metadata.namespace` are
    /// filled in when missing. Verb `create`.
    pub fn create(&self, object: &Value) -> Result<Value> {
        let object = self.complete(object.clone(), None)?;
        parse(crate::host::kube_create(
            &self.kind,
            self.namespace.as_deref(),
            &object.to_string(),
        )?)
    }

    /// Replaces `name` with `object` (`apiVersion`, `kind` and metadata
    /// filled in when missing). Verb `update`.
    pub fn replace(&self, name: &str, object: &Value) -> Result<Value> {
        let object = self.complete(object.clone(), Some(name))?;
        parse(crate::host::kube_replace(
            &self.target(name),
            &object.to_string(),
        )?)
    }

    /// Replaces the status of `name`.
    pub fn replace_status(&self, name: &str, object: &Value) -> Result<Value> {
        self.status().replace(name, object)
    }

    /// Patches `name`. Verb `patch`.
    pub fn patch(&self, name: &str, patch: &Patch) -> Result<Value> {
        parse(crate::host::kube_patch(
            &self.target(name),
            patch.patch_type(),
            &patch.document().to_string(),
        )?)
    }

    /// Patches the status of `name`.
    pub fn patch_status(&self, name: &str, patch: &Patch) -> Result<Value> {
        self.status().patch(name, patch)
    }

    /// Server-side applies `object` as `name` (see [`Api::apply`]); `apiVersion`,
    /// `kind`, `metadata.name` and `metadata.namespace` are filled in when
    /// missing. Verb `apply`.
    pub fn apply(&self, name: &str, object: &Value, force: bool) -> Result<Value> {
        let object = self.complete(object.clone(), Some(name))?;
        parse(crate::host::kube_apply(
            &self.target(name),
            &object.to_string(),
            force,
        )?)
    }

    /// Server-side applies the status in `object`.
    pub fn apply_status(&self, name: &str, object: &Value, force: bool) -> Result<Value> {
        self.status().apply(name, object, force)
    }

    /// Deletes `name`. Verb `delete`.
    pub fn delete(&self, name: &str, params: &DeleteParams) -> Result<()> {
        crate::host::kube_delete(&self.target(name), params)
    }

    /// Fills in the identity the API server requires of a body and the
    /// caller already said: `apiVersion`, `kind`, and `metadata.name` and
    /// `metadata.namespace`. Fields already present are left alone (the
    /// server then judges a mismatch).
    fn complete(&self, mut object: Value, name: Option<&str>) -> Result<Value> {
        let Some(fields) = object.as_object_mut() else {
            return Err(KubeError::Encoding(format!(
                "a {} must be a JSON object, not {object}",
                self.kind.kind
            )));
        };
        fields
            .entry("apiVersion")
            .or_insert_with(|| Value::String(self.kind.api_version()));
        fields
            .entry("kind")
            .or_insert_with(|| Value::String(self.kind.kind.clone()));
        let metadata = fields
            .entry("metadata")
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
        if let Some(metadata) = metadata.as_object_mut() {
            if let Some(name) = name {
                metadata
                    .entry("name")
                    .or_insert_with(|| Value::String(name.to_owned()));
            }
            if let Some(namespace) = &self.namespace {
                metadata
                    .entry("namespace")
                    .or_insert_with(|| Value::String(namespace.clone()));
            }
        }
        Ok(object)
    }
}

fn encode<T: Serialize + ?Sized>(object: &T) -> Result<Value> {
    serde_json::to_value(object)
        .map_err(|error| KubeError::Encoding(format!("encoding the request: {error}")))
}

fn parse(json: String) -> Result<Value> {
    serde_json::from_str(&json)
        .map_err(|error| KubeError::Encoding(format!("decoding the answer as JSON: {error}")))
}

fn decode<K: DeserializeOwned>(value: Value) -> Result<K> {
    serde_json::from_value(value).map_err(|error| {
        KubeError::Encoding(format!(
            "decoding the answer as {}: {error}",
            std::any::type_name::<K>()
        ))
    })
}

// The tests run against the native stand-in host.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
    use k8s_openapi::api::networking::v1::NetworkPolicy;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use serde_json::json;

    use super::*;
    use crate::testing::{self, KubeCall, Matcher};

    fn config_map(name: &str, data: &[(&str, &str)]) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("shop".into()),
                ..ObjectMeta::default()
            },
            data: Some(
                data.iter()
                    .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
                    .collect(),
            ),
            ..ConfigMap::default()
        }
    }

    fn only_call() -> KubeCall {
        let mut calls = testing::take_writes();
        assert_eq!(calls.len(), 1, "{calls:#?}");
        calls.remove(0)
    }

    #[test]
    fn unscripted_get_is_not_found_and_recorded() {
        testing::reset();
        let error = Api::<ConfigMap>::namespaced("shop")
            .get("missing")
            .unwrap_err();
        assert!(error.is_not_found(), "{error}");
        let call = only_call();
        assert_eq!(call.verb, Verb::Get);
        assert_eq!(call.target.to_string(), "v1/ConfigMap shop/missing");
        assert_eq!(
            (call.body, call.patch_type, call.force),
            (None, None, false)
        );
    }

    #[test]
    fn typed_create_and_replace_send_the_whole_object_and_decode_the_answer() {
        testing::reset();
        let api = Api::<ConfigMap>::namespaced("shop");
        let created = api.create(&config_map("settings", &[("a", "1")])).unwrap();
        assert_eq!(
            created.data.unwrap()["a"],
            "1",
            "the default echoes the body"
        );
        let call = only_call();
        assert_eq!(
            (call.verb, call.target.key()),
            (Verb::Create, "shop/settings".into())
        );
        assert_eq!(
            call.body.unwrap(),
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "settings", "namespace": "shop"}, "data": {"a": "1"}})
        );

        testing::respond(
            Verb::Update,
            "shop/settings",
            Ok(json!({"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": {"name": "settings", "namespace": "shop", "resourceVersion": "8"}})),
        );
        let replaced = api
            .replace("settings", &config_map("settings", &[]))
            .unwrap();
        assert_eq!(replaced.metadata.resource_version.as_deref(), Some("8"));
        assert_eq!(only_call().verb, Verb::Update);
    }

    #[test]
    fn patches_carry_their_type_and_document() {
        testing::reset();
        let api = Api::<ConfigMap>::namespaced("shop");
        let document = json!({"metadata": {"labels": {"a": "b"}}});
        for patch in [
            Patch::Merge(document.clone()),
            Patch::Strategic(document.clone()),
            Patch::Json(json!([{"op": "remove", "path": "/data/a"}])),
        ] {
            api.patch("settings", &patch).unwrap();
            let call = only_call();
            assert_eq!(call.patch_type, Some(patch.patch_type()));
            assert_eq!(call.body.as_ref(), Some(patch.document()));
            assert_eq!(call.target.subresource, None);
        }
        api.patch_status("settings", &Patch::Merge(json!({"status": {}})))
            .unwrap();
        assert_eq!(only_call().target.subresource.as_deref(), Some("status"));
    }

    #[test]
    fn apply_fills_in_the_identity_of_a_partial_object() {
        testing::reset();
        let api = Api::<NetworkPolicy>::namespaced("team-a");
        api.apply("deny", &json!({"spec": {"podSelector": {}}}), true)
            .unwrap();
        let call = only_call();
        assert_eq!(call.verb, Verb::Apply);
        assert!(call.force);
        assert_eq!(
            call.body.unwrap(),
            json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                   "metadata": {"name": "deny", "namespace": "team-a"},
                   "spec": {"podSelector": {}}})
        );

        api.apply_status("deny", &json!({"status": {}}), false)
            .unwrap();
        let call = only_call();
        assert_eq!(
            (call.force, call.target.subresource.as_deref()),
            (false, Some("status"))
        );
    }

    #[test]
    fn cluster_scoped_calls_have_no_namespace() {
        testing::reset();
        Api::<Namespace>::all()
            .apply(
                "team-a",
                &json!({"metadata": {"labels": {"x": "y"}}}),
                false,
            )
            .unwrap();
        let call = only_call();
        assert_eq!(call.target.namespace, None);
        assert_eq!(call.target.key(), "team-a");
        assert_eq!(
            call.body.unwrap()["metadata"],
            json!({"name": "team-a", "labels": {"x": "y"}})
        );
    }

    #[test]
    fn delete_sends_preconditions_and_propagation() {
        testing::reset();
        let params = DeleteParams::default()
            .uid("u-1")
            .resource_version("9")
            .propagation(Propagation::Foreground);
        Api::<ConfigMap>::namespaced("shop")
            .delete("settings", &params)
            .unwrap();
        let call = only_call();
        assert_eq!((call.verb, call.delete), (Verb::Delete, Some(params)));
    }

    #[test]
    fn scripted_errors_reach_the_caller_typed() {
        testing::reset();
        let invalid = KubeError::Invalid {
            message: "ConfigMap \"x\" is invalid".into(),
            causes: vec![Cause {
                reason: "FieldValueInvalid".into(),
                message: "bad key".into(),
                field: "data[a b]".into(),
            }],
        };
        testing::respond(
            Verb::Create,
            Matcher::any().of::<ConfigMap>(),
            Err(invalid.clone()),
        );
        testing::respond_once(
            Verb::Patch,
            "*",
            Err(KubeError::TooManyRequests {
                message: "slow down".into(),
                retry_after: Some(Duration::from_millis(1500)),
            }),
        );
        let api = Api::<ConfigMap>::namespaced("shop");
        assert_eq!(api.create(&config_map("x", &[])).unwrap_err(), invalid);
        let throttled = api.patch("x", &Patch::Merge(json!({}))).unwrap_err();
        assert!(throttled.is_retryable());
        assert_eq!(
            throttled.to_string(),
            "too-many-requests: slow down (retry after 1500ms)"
        );
        assert!(api.patch("x", &Patch::Merge(json!({}))).is_ok());
    }

    #[test]
    fn answers_that_do_not_decode_are_encoding_errors() {
        testing::reset();
        testing::respond(Verb::Get, "*", Ok(json!({"data": 7})));
        let error = Api::<ConfigMap>::namespaced("shop").get("x").unwrap_err();
        assert_eq!(error.outcome(), "encoding");
        assert!(
            error
                .message()
                .starts_with("decoding the answer as k8s_openapi::"),
            "{error}"
        );
    }

    #[test]
    fn dynamic_api_creates_with_the_kind_filled_in() {
        testing::reset();
        let widgets =
            DynamicApi::namespaced(GroupVersionKind::new("example.com", "v1", "Widget"), "shop");
        let created = widgets
            .create(&json!({"metadata": {"generateName": "w-"}}))
            .unwrap();
        assert_eq!(created["apiVersion"], "example.com/v1");
        assert_eq!(created["kind"], "Widget");
        assert_eq!(created["metadata"]["namespace"], "shop");
        assert_eq!(
            only_call().target.name,
            "",
            "generateName leaves the name empty"
        );
        assert_eq!(
            widgets.create(&json!([1])).unwrap_err().outcome(),
            "encoding",
            "a body must be an object"
        );
        assert!(testing::take_writes().is_empty(), "nothing was sent");
    }

    #[test]
    fn errors_convert_into_handler_errors() {
        fn handler() -> std::result::Result<(), crate::Error> {
            Api::<ConfigMap>::namespaced("shop").get("gone")?;
            Ok(())
        }
        testing::reset();
        let error = handler().unwrap_err();
        assert!(
            error
                .message()
                .starts_with("not-found: v1/ConfigMap shop/gone"),
            "{error}"
        );
    }

    #[test]
    fn errors_display_their_details() {
        let invalid = KubeError::Invalid {
            message: "bad".into(),
            causes: vec![
                Cause {
                    field: "spec.a".into(),
                    ..Cause::default()
                },
                Cause {
                    field: "spec.b".into(),
                    ..Cause::default()
                },
            ],
        };
        assert_eq!(invalid.to_string(), "invalid: bad (fields: spec.a, spec.b)");
        let failed = KubeError::Failed {
            code: 415,
            reason: "UnsupportedMediaType".into(),
            message: "no".into(),
        };
        assert_eq!(
            failed.to_string(),
            "failed: no (HTTP 415 UnsupportedMediaType)"
        );
        assert!(!failed.is_retryable());
        assert!(KubeError::Conflict(String::new()).is_conflict());
        assert!(KubeError::AlreadyExists(String::new()).is_already_exists());
        assert!(KubeError::NotGranted(String::new()).is_not_granted());
    }
}
