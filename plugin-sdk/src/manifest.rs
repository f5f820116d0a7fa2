//! The manifest builder: what a plugin watches and what it asks for.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use k8s_openapi::Resource;

use crate::GroupVersionKind;
use crate::admission::Webhook;
use crate::bindings::herald::plugin0_2_0::types as wit;
use crate::cache::Index;
use crate::metrics::Metric;

/// What a plugin is and what it needs; returned by
/// [`Handler::manifest`](crate::Handler::manifest), read once per load.
///
/// ```
/// use std::time::Duration;
/// use herald_sdk::k8s_openapi::api::{apps::v1::Deployment, core::v1::Pod};
/// use herald_sdk::{Limits, Manifest, Subscription};
///
/// let manifest = Manifest::new("web-watch", "1.2.0")
///     .subscribe(Subscription::to::<Pod>().namespace("web").labels("app=web"))
///     .subscribe(Subscription::to::<Deployment>().resync(Duration::from_secs(300)).coalesced())
///     .subscribe_kind("example.com", "v1", "Widget")
///     .limits(Limits::default().call_deadline(Duration::from_millis(500)))
///     .capability("example-capability");
/// assert_eq!(manifest.subscriptions.len(), 3);
/// ```
///
/// A plugin that acts declares its writes (and API reads) and the `events`
/// capability; the operator must grant at least as much:
///
/// ```
/// use herald_sdk::k8s_openapi::api::{apps::v1::Deployment, networking::v1::NetworkPolicy};
/// use herald_sdk::{Manifest, Subscription, Verb, WriteRule};
///
/// let manifest = Manifest::new("netpol-defaults", "0.1.0")
///     .subscribe(Subscription::to::<NetworkPolicy>())
///     .write(WriteRule::new::<NetworkPolicy>().verbs([Verb::Get, Verb::Apply]).all_namespaces())
///     .write(WriteRule::new::<Deployment>().verbs([Verb::Patch]).namespaces(["shop"]).status())
///     .write(WriteRule::for_kind("example.com", "Widget").verbs([Verb::Create]).all_namespaces())
///     .capability("events");
/// assert_eq!(manifest.writes.len(), 3);
/// assert_eq!(manifest.writes[1].subresource.as_deref(), Some("status"));
/// ```
///
/// A plugin with metrics of its own declares them (see
/// [`metrics`](crate::metrics)); one that makes HTTP requests asks for the
/// `http` capability:
///
/// ```
/// use herald_sdk::k8s_openapi::api::core::v1::Pod;
/// use herald_sdk::metrics::Metric;
/// use herald_sdk::{Manifest, Subscription};
///
/// let manifest = Manifest::new("crash-alert", "0.1.0")
///     .subscribe(Subscription::to::<Pod>().coalesced())
///     .capability("http")
///     .metric(Metric::counter("alerts_total", "Alerts sent").labels(["namespace"]))
///     .metric(Metric::histogram("webhook_seconds", "Webhook latency").buckets([0.1, 0.5, 2.0]));
/// assert_eq!(manifest.metrics.len(), 2);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Manifest {
    /// Unique plugin name: lowercase letters, digits and `-`.
    pub name: String,
    /// The plugin's own version (free-form, semver advised).
    pub version: String,
    /// The resources watched; the host requires at least one.
    pub subscriptions: Vec<Subscription>,
    /// Limits requested; unset ones take the operator's defaults.
    pub limits: Limits,
    /// Host capabilities beyond logging and cache reads; each must be
    /// granted by the operator or the plugin is not loaded. `events` lets it
    /// publish Kubernetes Events ([`events`](crate::events)), `http` make
    /// HTTP requests to the origins granted ([`http`](crate::http)).
    pub capabilities: Vec<String>,
    /// The Kubernetes writes (and API reads) the plugin will make through
    /// [`kube`](crate::kube); each must be covered by the operator's grant or
    /// the plugin is not loaded, and every call is checked against them.
    pub writes: Vec<WriteRule>,
    /// The metrics the plugin updates through [`metrics`](crate::metrics);
    /// the host checks the definitions when it loads the plugin.
    pub metrics: Vec<Metric>,
    /// The cache indexes the plugin looks objects up by
    /// ([`cache::by_index`](crate::cache::by_index)).
    pub indexes: Vec<Index>,
    /// The writes [`Handler::validate`](crate::Handler::validate) decides
    /// on ([`admission`](crate::admission)).
    pub validating: Option<Webhook>,
    /// The writes [`Handler::mutate`](crate::Handler::mutate) decides on
    /// and may change.
    pub mutating: Option<Webhook>,
}

impl Manifest {
    /// A manifest with no subscriptions, default limits, no capabilities and
    /// no writes.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            version: version.into(),
            subscriptions: Vec::new(),
            limits: Limits::default(),
            capabilities: Vec::new(),
            writes: Vec::new(),
            metrics: Vec::new(),
            indexes: Vec::new(),
            validating: None,
            mutating: None,
        }
    }

    /// Declares the plugin's validating webhook: the writes its
    /// [`Handler::validate`](crate::Handler::validate) decides on. A plugin
    /// that admits may subscribe to nothing.
    pub fn validating(mut self, webhook: Webhook) -> Self {
        self.validating = Some(webhook);
        self
    }

    /// Declares the plugin's mutating webhook: the writes its
    /// [`Handler::mutate`](crate::Handler::mutate) decides on and may
    /// change.
    pub fn mutating(mut self, webhook: Webhook) -> Self {
        self.mutating = Some(webhook);
        self
    }

    /// Adds a subscription.
    pub fn subscribe(mut self, subscription: Subscription) -> Self {
        self.subscriptions.push(subscription);
        self
    }

    /// Adds a subscription to every object of a kind named by strings (a
    /// CRD, say), in every namespace, without selectors.
    pub fn subscribe_kind(
        self,
        group: impl Into<String>,
        version: impl Into<String>,
        kind: impl Into<String>,
    ) -> Self {
        self.subscribe(Subscription::new(GroupVersionKind::new(
            group, version, kind,
        )))
    }

    /// Sets the limits requested.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Asks for a host capability: `events` to publish Kubernetes Events
    /// ([`events`](crate::events)), `http` to make HTTP requests
    /// ([`http`](crate::http)).
    pub fn capability(mut self, capability: impl Into<String>) -> Self {
        self.capabilities.push(capability.into());
        self
    }

    /// Declares writes (or API reads) the plugin will make through
    /// [`kube`](crate::kube).
    pub fn write(mut self, rule: WriteRule) -> Self {
        self.writes.push(rule);
        self
    }

    /// Declares a metric the plugin will update through
    /// [`metrics`](crate::metrics).
    pub fn metric(mut self, metric: Metric) -> Self {
        self.metrics.push(metric);
        self
    }

    /// Declares a cache index the plugin looks objects up by with
    /// [`cache::by_index`](crate::cache::by_index).
    pub fn index(mut self, index: Index) -> Self {
        self.indexes.push(index);
        self
    }

    /// Its webhooks, as `admission.declare` answers them.
    pub(crate) fn webhooks_into_wit(
        self,
    ) -> crate::bindings::exports::herald::plugin0_5_0::admission::Webhooks {
        crate::admission::webhooks(self.validating, self.mutating)
    }

    pub(crate) fn into_wit(self) -> crate::bindings::herald::plugin0_3_0::types::Manifest {
        crate::bindings::herald::plugin0_3_0::types::Manifest {
            name: self.name,
            version: self.version,
            subscriptions: self
                .subscriptions
                .into_iter()
                .map(Subscription::into_wit)
                .collect(),
            limits: self.limits.into_wit(),
            capabilities: self.capabilities,
            writes: self.writes.into_iter().map(WriteRule::into_wit).collect(),
            metrics: self.metrics.into_iter().map(Metric::into_wit).collect(),
            indexes: self.indexes.into_iter().map(Index::into_wit).collect(),
        }
    }
}

/// A Kubernetes API verb a plugin may use through [`kube`](crate::kube).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Verb {
    /// Read one object from the API server (not the cache).
    Get,
    /// Create an object.
    Create,
    /// Replace an object; Kubernetes calls it `update`.
    Update,
    /// Patch an object: merge, JSON or strategic merge patch.
    Patch,
    /// Server-side apply (on the wire a patch that may create).
    Apply,
    /// Delete an object.
    Delete,
}

impl Verb {
    /// Every verb, in declaration order.
    pub const ALL: [Verb; 6] = [
        Verb::Get,
        Verb::Create,
        Verb::Update,
        Verb::Patch,
        Verb::Apply,
        Verb::Delete,
    ];

    /// The lowercase name the WIT and the host's configuration use: `get`,
    /// `create`, `update`, `patch`, `apply`, `delete`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Get => "get",
            Self::Create => "create",
            Self::Update => "update",
            Self::Patch => "patch",
            Self::Apply => "apply",
            Self::Delete => "delete",
        }
    }

    pub(crate) fn to_wit(self) -> wit::Verb {
        match self {
            Self::Get => wit::Verb::Get,
            Self::Create => wit::Verb::Create,
            Self::Update => wit::Verb::Update,
            Self::Patch => wit::Verb::Patch,
            Self::Apply => wit::Verb::Apply,
            Self::Delete => wit::Verb::Delete,
        }
    }
}

/// Formats as [`Verb::as_str`].
impl fmt::Display for Verb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A verb name that is none of Herald's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownVerb(pub String);

impl fmt::Display for UnknownVerb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown verb {:?} (expected get, create, update, patch, apply or delete)",
            self.0
        )
    }
}

impl std::error::Error for UnknownVerb {}

/// Parses [`Verb::as_str`]'s names, case-insensitively; `replace` is taken
/// as `update`, the name of the same verb in the `kube` API.
impl FromStr for Verb {
    type Err = UnknownVerb;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name.to_ascii_lowercase().as_str() {
            "get" => Ok(Self::Get),
            "create" => Ok(Self::Create),
            "update" | "replace" => Ok(Self::Update),
            "patch" => Ok(Self::Patch),
            "apply" => Ok(Self::Apply),
            "delete" => Ok(Self::Delete),
            _ => Err(UnknownVerb(name.to_owned())),
        }
    }
}

/// Writes a plugin will make: verbs on one kind (or its status), in some
/// namespaces. Start from [`WriteRule::new`] (a `k8s-openapi` type) or
/// [`WriteRule::for_kind`] (any kind), then add verbs and namespaces (at
/// least one: the host refuses to load a plugin with a rule that names no
/// namespace, rather than guess).
///
/// ```
/// use herald_sdk::k8s_openapi::api::core::v1::Pod;
/// use herald_sdk::{Verb, WriteRule};
///
/// let rule = WriteRule::new::<Pod>().verbs([Verb::Patch]).namespaces(["shop", "blog"]);
/// assert_eq!((rule.group.as_str(), rule.kind.as_str()), ("", "Pod"));
/// assert_eq!(rule.namespaces, ["shop", "blog"]);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteRule {
    /// The verbs; duplicates are dropped.
    pub verbs: Vec<Verb>,
    /// The kind's API group; empty for the core group.
    pub group: String,
    /// The kind, e.g. `NetworkPolicy`.
    pub kind: String,
    /// `None` for the object itself, `Some("status")` for its status
    /// subresource (a separate grant, as in Kubernetes RBAC).
    pub subresource: Option<String>,
    /// The namespaces; `*` means every namespace and cluster-scoped objects.
    /// At least one: nothing is assumed.
    pub namespaces: Vec<String>,
}

impl WriteRule {
    /// A rule about the `k8s-openapi` type `K`, with no verbs yet.
    pub fn new<K: Resource>() -> Self {
        Self::for_kind(K::GROUP, K::KIND)
    }

    /// A rule about a kind named by strings (a CRD, say), with no verbs yet.
    pub fn for_kind(group: impl Into<String>, kind: impl Into<String>) -> Self {
        Self {
            verbs: Vec::new(),
            group: group.into(),
            kind: kind.into(),
            subresource: None,
            namespaces: Vec::new(),
        }
    }

    /// Adds verbs.
    pub fn verbs(mut self, verbs: impl IntoIterator<Item = Verb>) -> Self {
        for verb in verbs {
            if !self.verbs.contains(&verb) {
                self.verbs.push(verb);
            }
        }
        self
    }

    /// Adds one verb.
    pub fn verb(self, verb: Verb) -> Self {
        self.verbs([verb])
    }

    /// Adds namespaces the writes happen in.
    pub fn namespaces<S: Into<String>>(mut self, namespaces: impl IntoIterator<Item = S>) -> Self {
        self.namespaces
            .extend(namespaces.into_iter().map(Into::into));
        self
    }

    /// Every namespace, and cluster-scoped objects: `*`.
    pub fn all_namespaces(self) -> Self {
        self.namespaces(["*"])
    }

    /// The rule is about the status subresource, not the object itself.
    pub fn status(self) -> Self {
        self.subresource("status")
    }

    /// The rule is about this subresource (Herald's `kube` interface knows
    /// `status`).
    pub fn subresource(mut self, subresource: impl Into<String>) -> Self {
        self.subresource = Some(subresource.into());
        self
    }

    fn into_wit(self) -> wit::WriteRule {
        wit::WriteRule {
            verbs: self.verbs.into_iter().map(Verb::to_wit).collect(),
            group: self.group,
            kind: self.kind,
            subresource: self.subresource,
            namespaces: self.namespaces,
        }
    }
}

/// One watched resource: a kind plus an optional namespace, selectors,
/// resync period and delivery mode. Start from [`Subscription::to`] (a
/// `k8s-openapi` type) or [`Subscription::new`] (any kind).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subscription {
    /// The kind watched; the host resolves it through discovery.
    pub kind: GroupVersionKind,
    /// Only this namespace; `None` means every namespace (or a
    /// cluster-scoped kind).
    pub namespace: Option<String>,
    /// A label selector, e.g. `app=web,tier!=cache`.
    pub label_selector: Option<String>,
    /// A field selector, e.g. `metadata.name=web`.
    pub field_selector: Option<String>,
    /// Re-deliver every cached object this often as a resync update; the
    /// host requires at least one second. `None` means no resync.
    pub resync: Option<Duration>,
    /// How notifications are queued for the plugin.
    pub delivery: Delivery,
}

impl Subscription {
    /// Every object of `kind`, in every namespace, each event delivered.
    pub fn new(kind: GroupVersionKind) -> Self {
        Self {
            kind,
            namespace: None,
            label_selector: None,
            field_selector: None,
            resync: None,
            delivery: Delivery::EveryEvent,
        }
    }

    /// Every object of the `k8s-openapi` type `K`, e.g.
    /// `Subscription::to::<Pod>()`.
    pub fn to<K: Resource>() -> Self {
        Self::new(GroupVersionKind::of::<K>())
    }

    /// Only objects in `namespace`.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// Only objects matching the label selector, e.g. `app=web,tier!=cache`.
    pub fn labels(mut self, selector: impl Into<String>) -> Self {
        self.label_selector = Some(selector.into());
        self
    }

    /// Only objects matching the field selector, e.g. `spec.nodeName=node-1`.
    pub fn fields(mut self, selector: impl Into<String>) -> Self {
        self.field_selector = Some(selector.into());
        self
    }

    /// Re-deliver every cached object each `period` as
    /// `on_update(cached, cached)` with [`is_resync`](crate::Update::is_resync)
    /// set. The host rejects periods under one second.
    pub fn resync(mut self, period: Duration) -> Self {
        self.resync = Some(period);
        self
    }

    /// Deliver at most one pending notification per object, merged while it
    /// waits: for level-triggered plugins that only need the latest state.
    /// A merge never erases a change: an add then a delete arrives as the
    /// delete (even though the add was never delivered), a delete then an
    /// add as an update whose old and new may have different uids.
    pub fn coalesced(self) -> Self {
        self.delivery(Delivery::Coalesced)
    }

    /// Sets the delivery mode.
    pub fn delivery(mut self, delivery: Delivery) -> Self {
        self.delivery = delivery;
        self
    }

    fn into_wit(self) -> wit::Subscription {
        wit::Subscription {
            kind: self.kind.to_wit(),
            namespace: self.namespace,
            label_selector: self.label_selector,
            field_selector: self.field_selector,
            resync_period_ms: self
                .resync
                .map(|period| u64::try_from(period.as_millis()).unwrap_or(u64::MAX)),
            delivery: match self.delivery {
                Delivery::EveryEvent => wit::DeliveryMode::EveryEvent,
                Delivery::Coalesced => wit::DeliveryMode::Coalesced,
            },
        }
    }
}

/// How notifications for a subscription are queued.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Delivery {
    /// Every notification, one at a time, in the order the informer
    /// distributed them (client-go's behaviour). The default.
    #[default]
    EveryEvent,
    /// At most one pending notification per object key, merged while it
    /// waits.
    Coalesced,
}

/// Limits a plugin asks for; the operator's configuration caps them, and
/// unset ones take the operator's defaults.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    /// Deadline for one handler call.
    pub call_deadline: Option<Duration>,
    /// Maximum linear memory of the instance, in bytes.
    pub memory_bytes: Option<u64>,
}

impl Limits {
    /// Asks for this deadline per handler call (millisecond precision).
    pub fn call_deadline(mut self, deadline: Duration) -> Self {
        self.call_deadline = Some(deadline);
        self
    }

    /// Asks for this much linear memory, in bytes.
    pub fn memory_bytes(mut self, bytes: u64) -> Self {
        self.memory_bytes = Some(bytes);
        self
    }

    fn into_wit(self) -> wit::Limits {
        wit::Limits {
            call_deadline_ms: self
                .call_deadline
                .map(|deadline| u32::try_from(deadline.as_millis()).unwrap_or(u32::MAX)),
            memory_bytes: self.memory_bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::ReplicaSet;
    use k8s_openapi::api::core::v1::Pod;

    use super::*;

    #[test]
    fn builder_fills_every_field() {
        let manifest = Manifest::new("watcher", "0.3.0")
            .subscribe(
                Subscription::to::<Pod>()
                    .namespace("web")
                    .labels("app=web")
                    .fields("spec.nodeName=node-1")
                    .resync(Duration::from_secs(30))
                    .coalesced(),
            )
            .subscribe_kind("example.com", "v1", "Widget")
            .limits(
                Limits::default()
                    .call_deadline(Duration::from_millis(250))
                    .memory_bytes(1 << 24),
            )
            .capability("net");

        assert_eq!(manifest.name, "watcher");
        assert_eq!(manifest.version, "0.3.0");
        assert_eq!(manifest.capabilities, ["net"]);
        let pods = &manifest.subscriptions[0];
        assert_eq!(pods.kind, GroupVersionKind::new("", "v1", "Pod"));
        assert_eq!(pods.namespace.as_deref(), Some("web"));
        assert_eq!(pods.label_selector.as_deref(), Some("app=web"));
        assert_eq!(pods.field_selector.as_deref(), Some("spec.nodeName=node-1"));
        assert_eq!(pods.resync, Some(Duration::from_secs(30)));
        assert_eq!(pods.delivery, Delivery::Coalesced);
        assert_eq!(
            manifest.subscriptions[1],
            Subscription::new(GroupVersionKind::new("example.com", "v1", "Widget"))
        );
    }

    #[test]
    fn defaults_are_unscoped_every_event() {
        let subscription = Subscription::to::<ReplicaSet>();
        assert_eq!(
            subscription.kind,
            GroupVersionKind::new("apps", "v1", "ReplicaSet")
        );
        assert_eq!(
            (
                subscription.namespace,
                subscription.label_selector,
                subscription.field_selector
            ),
            (None, None, None)
        );
        assert_eq!(subscription.resync, None);
        assert_eq!(subscription.delivery, Delivery::EveryEvent);
        assert_eq!(Manifest::new("a", "1").limits, Limits::default());
    }

    #[test]
    fn converts_to_the_abi_in_milliseconds() {
        let manifest = Manifest::new("watcher", "1")
            .subscribe(
                Subscription::to::<Pod>()
                    .resync(Duration::from_millis(1500))
                    .coalesced(),
            )
            .limits(
                Limits::default()
                    .call_deadline(Duration::from_secs(2))
                    .memory_bytes(4096),
            )
            .into_wit();
        let subscription = &manifest.subscriptions[0];
        assert_eq!(subscription.resync_period_ms, Some(1500));
        assert!(matches!(
            subscription.delivery,
            wit::DeliveryMode::Coalesced
        ));
        assert_eq!(subscription.kind.kind, "Pod");
        assert_eq!(manifest.limits.call_deadline_ms, Some(2000));
        assert_eq!(manifest.limits.memory_bytes, Some(4096));
    }

    #[test]
    fn write_rules_convert_to_the_abi() {
        use k8s_openapi::api::networking::v1::NetworkPolicy;

        let manifest = Manifest::new("acting", "1")
            .write(
                WriteRule::new::<NetworkPolicy>()
                    .verbs([Verb::Get, Verb::Apply, Verb::Get])
                    .all_namespaces(),
            )
            .write(
                WriteRule::for_kind("apps", "Deployment")
                    .verb(Verb::Patch)
                    .namespaces(["a", "b"])
                    .status(),
            )
            .write(WriteRule::new::<Pod>().verb(Verb::Delete))
            .capability("events")
            .into_wit();
        assert_eq!(manifest.capabilities, ["events"]);
        let [policies, deployments, pods] = &manifest.writes[..] else {
            panic!("three rules expected");
        };
        assert_eq!(
            (policies.group.as_str(), policies.kind.as_str()),
            ("networking.k8s.io", "NetworkPolicy")
        );
        assert!(matches!(
            policies.verbs[..],
            [wit::Verb::Get, wit::Verb::Apply]
        ));
        assert_eq!(
            (policies.subresource.as_deref(), &policies.namespaces[..]),
            (None, &["*".to_owned()][..])
        );
        assert_eq!(deployments.subresource.as_deref(), Some("status"));
        assert_eq!(deployments.namespaces, ["a", "b"]);
        assert!(pods.namespaces.is_empty(), "no namespace is assumed");
    }

    #[test]
    fn verbs_parse_and_print_their_wire_names() {
        for verb in Verb::ALL {
            assert_eq!(verb.as_str().parse::<Verb>(), Ok(verb));
            assert_eq!(verb.to_string(), verb.as_str());
        }
        assert_eq!("Replace".parse::<Verb>(), Ok(Verb::Update));
        assert!(
            "list"
                .parse::<Verb>()
                .is_err_and(|error| error.to_string().contains("\"list\""))
        );
    }

    #[test]
    fn oversized_durations_saturate() {
        let limits = Limits::default()
            .call_deadline(Duration::from_secs(u64::MAX))
            .into_wit();
        assert_eq!(limits.call_deadline_ms, Some(u32::MAX));
        let subscription = Subscription::to::<Pod>().resync(Duration::MAX).into_wit();
        assert_eq!(subscription.resync_period_ms, Some(u64::MAX));
    }
}
