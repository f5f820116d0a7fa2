//! The manifest builder: what a plugin watches and what it asks for.

use std::time::Duration;

use k8s_openapi::Resource;

use crate::GroupVersionKind;
use crate::bindings::herald::plugin::types as wit;

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
#[derive(Clone, Debug, PartialEq, Eq)]
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
    /// granted by the operator or the plugin is not loaded.
    pub capabilities: Vec<String>,
}

impl Manifest {
    /// A manifest with no subscriptions, default limits and no capabilities.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            version: version.into(),
            subscriptions: Vec::new(),
            limits: Limits::default(),
            capabilities: Vec::new(),
        }
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

    /// Asks for a host capability.
    pub fn capability(mut self, capability: impl Into<String>) -> Self {
        self.capabilities.push(capability.into());
        self
    }

    pub(crate) fn into_wit(self) -> wit::Manifest {
        wit::Manifest {
            name: self.name,
            version: self.version,
            subscriptions: self
                .subscriptions
                .into_iter()
                .map(Subscription::into_wit)
                .collect(),
            limits: self.limits.into_wit(),
            capabilities: self.capabilities,
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
    fn oversized_durations_saturate() {
        let limits = Limits::default()
            .call_deadline(Duration::from_secs(u64::MAX))
            .into_wit();
        assert_eq!(limits.call_deadline_ms, Some(u32::MAX));
        let subscription = Subscription::to::<Pod>().resync(Duration::MAX).into_wit();
        assert_eq!(subscription.resync_period_ms, Some(u64::MAX));
    }
}
