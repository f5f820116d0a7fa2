//! Kubernetes Events (`events.k8s.io/v1`) about objects, reported by the
//! plugin: the host writes them with the reporting controller
//! `herald.dev/<plugin-name>`, merges repeats into a series and rate-limits
//! floods, as client-go's event recorder does. Needs the `events`
//! capability in the manifest ([`Manifest::capability`](crate::Manifest::capability)),
//! granted by the operator.
//!
//! ```no_run
//! use herald_sdk::events::{self, Event};
//! use herald_sdk::k8s_openapi::api::core::v1::{Pod, Service};
//!
//! # fn main() -> Result<(), herald_sdk::kube::KubeError> {
//! # let (pod, service) = (Pod::default(), Service::default());
//! // The action defaults to the reason.
//! events::warning(&pod, "DisallowedImage", "container app uses nginx:latest")?;
//! Event::normal(&pod, "Exposed", "selected by service web")
//!     .action("Selected")
//!     .related(&service)
//!     .publish()?;
//! # Ok(())
//! # }
//! ```
//!
//! The object an Event is about is anything that serializes to a Kubernetes
//! object with `apiVersion`, `kind` and `metadata.name` (every `k8s-openapi`
//! type, a `serde_json::Value` read from the cache or from [`crate::kube`]),
//! or an explicit [`ObjectReference`], which an object read through the
//! lazy view gives without decoding it: `ObjectReference::from_view(&pod)`.

use serde::Serialize;
use serde_json::Value;

use crate::GroupVersionKind;
use crate::kube::KubeError;
use crate::view::ObjectView;

/// The fields of an object that identify it, wherever they were read from.
struct Identity<'a> {
    api_version: Option<&'a str>,
    kind: Option<&'a str>,
    namespace: Option<&'a str>,
    name: Option<&'a str>,
    uid: Option<&'a str>,
    resource_version: Option<&'a str>,
}

/// Normal or Warning, as Kubernetes defines them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventType {
    /// Something expected happened.
    Normal,
    /// Something may need attention.
    Warning,
}

impl EventType {
    /// `Normal` or `Warning`, as an Event's `type` field spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Normal => "Normal",
            Self::Warning => "Warning",
        }
    }
}

/// The object an Event is about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectReference {
    /// Its kind.
    pub kind: GroupVersionKind,
    /// Its namespace; `None` for cluster-scoped objects.
    pub namespace: Option<String>,
    /// Its name.
    pub name: String,
    /// Its UID, when known.
    pub uid: Option<String>,
    /// Its resourceVersion, when known.
    pub resource_version: Option<String>,
}

impl ObjectReference {
    /// A reference by kind, namespace and name, without UID or version.
    pub fn new(kind: GroupVersionKind, namespace: Option<&str>, name: impl Into<String>) -> Self {
        Self {
            kind,
            namespace: namespace.map(str::to_owned),
            name: name.into(),
            uid: None,
            resource_version: None,
        }
    }

    /// `namespace/name`, or `name` when cluster-scoped.
    pub fn key(&self) -> String {
        match &self.namespace {
            Some(namespace) => format!("{namespace}/{}", self.name),
            None => self.name.clone(),
        }
    }

    /// Sets the UID.
    pub fn uid(mut self, uid: impl Into<String>) -> Self {
        self.uid = Some(uid.into());
        self
    }

    /// Sets the resourceVersion.
    pub fn resource_version(mut self, resource_version: impl Into<String>) -> Self {
        self.resource_version = Some(resource_version.into());
        self
    }

    /// The reference to `object`: its `apiVersion` and `kind`, and its
    /// `metadata` `namespace`, `name`, `uid` and `resourceVersion`. Fails
    /// with [`KubeError::Encoding`] when it has no `apiVersion`, `kind` or
    /// `metadata.name`.
    pub fn of<T: Serialize + ?Sized>(object: &T) -> Result<Self, KubeError> {
        let value = serde_json::to_value(object)
            .map_err(|error| KubeError::Encoding(format!("encoding the object: {error}")))?;
        Self::from_json(&value)
    }

    /// Like [`ObjectReference::of`], for an object already in JSON.
    pub fn from_json(object: &Value) -> Result<Self, KubeError> {
        let field = |pointer: &str| object.pointer(pointer).and_then(Value::as_str);
        Self::from_identity(Identity {
            api_version: field("/apiVersion"),
            kind: field("/kind"),
            namespace: field("/metadata/namespace"),
            name: field("/metadata/name"),
            uid: field("/metadata/uid"),
            resource_version: field("/metadata/resourceVersion"),
        })
    }

    /// Like [`ObjectReference::of`], for an object read through
    /// [`Event::view`](crate::Event::view): no encoding, no decoding.
    pub fn from_view(object: &ObjectView) -> Result<Self, KubeError> {
        let meta = object.metadata();
        // The view reads an absent identity field as empty, which
        // `from_identity` refuses as it refuses an absent one.
        Self::from_identity(Identity {
            api_version: Some(object.api_version()),
            kind: Some(object.kind()),
            namespace: meta.namespace(),
            name: Some(meta.name()),
            uid: meta.uid(),
            resource_version: meta.resource_version(),
        })
    }

    fn from_identity(identity: Identity) -> Result<Self, KubeError> {
        fn required<'a>(value: Option<&'a str>, path: &str) -> Result<&'a str, KubeError> {
            value.filter(|value| !value.is_empty()).ok_or_else(|| {
                KubeError::Encoding(format!("an Event's object needs {path}, which it lacks"))
            })
        }
        let api_version = required(identity.api_version, "apiVersion")?;
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        Ok(Self {
            kind: GroupVersionKind::new(group, version, required(identity.kind, "kind")?),
            namespace: identity
                .namespace
                .filter(|namespace| !namespace.is_empty())
                .map(str::to_owned),
            name: required(identity.name, "metadata.name")?.to_owned(),
            uid: identity.uid.map(str::to_owned),
            resource_version: identity.resource_version.map(str::to_owned),
        })
    }

    #[cfg(target_arch = "wasm32")]
    fn to_wit(&self) -> crate::bindings::herald::plugin0_2_0::events::ObjectReference {
        crate::bindings::herald::plugin0_2_0::events::ObjectReference {
            kind: self.kind.to_wit(),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            uid: self.uid.clone(),
            resource_version: self.resource_version.clone(),
        }
    }
}

/// An Event as it is handed to the host: what [`Event::publish`] sends and
/// what [`testing::events`](crate::testing) records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventRecord {
    /// What the event is about.
    pub regarding: ObjectReference,
    /// A second object involved, if any.
    pub related: Option<ObjectReference>,
    /// Normal or Warning.
    pub event_type: EventType,
    /// Why, in UpperCamelCase, e.g. `DisallowedImage`.
    pub reason: String,
    /// What the plugin did or failed to do, in UpperCamelCase.
    pub action: String,
    /// A human-readable description (at most 1 KiB).
    pub note: String,
}

impl EventRecord {
    #[cfg(target_arch = "wasm32")]
    pub(crate) fn to_wit(&self) -> crate::bindings::herald::plugin0_2_0::events::Event {
        use crate::bindings::herald::plugin0_2_0::events as wit;
        wit::Event {
            regarding: self.regarding.to_wit(),
            related: self.related.as_ref().map(ObjectReference::to_wit),
            event_type: match self.event_type {
                EventType::Normal => wit::EventType::Normal,
                EventType::Warning => wit::EventType::Warning,
            },
            reason: self.reason.clone(),
            action: self.action.clone(),
            note: self.note.clone(),
        }
    }
}

/// An Event being built: [`Event::warning`] or [`Event::normal`], then
/// optionally [`action`](Event::action) and [`related`](Event::related),
/// then [`publish`](Event::publish). A problem with an object (no
/// `metadata.name`, say) surfaces when publishing.
#[derive(Clone, Debug)]
#[must_use = "an Event does nothing until published"]
pub struct Event {
    regarding: Result<ObjectReference, KubeError>,
    related: Option<Result<ObjectReference, KubeError>>,
    event_type: EventType,
    reason: String,
    action: Option<String>,
    note: String,
}

impl Event {
    /// An event of `event_type` about `regarding`.
    pub fn about(
        regarding: ObjectReference,
        event_type: EventType,
        reason: impl Into<String>,
        note: impl Into<String>,
    ) -> Self {
        Self {
            regarding: Ok(regarding),
            related: None,
            event_type,
            reason: reason.into(),
            action: None,
            note: note.into(),
        }
    }

    /// A Warning about `object` (see [`ObjectReference::of`]).
    pub fn warning<T: Serialize + ?Sized>(
        object: &T,
        reason: impl Into<String>,
        note: impl Into<String>,
    ) -> Self {
        Self::of(object, EventType::Warning, reason, note)
    }

    /// A Normal event about `object` (see [`ObjectReference::of`]).
    pub fn normal<T: Serialize + ?Sized>(
        object: &T,
        reason: impl Into<String>,
        note: impl Into<String>,
    ) -> Self {
        Self::of(object, EventType::Normal, reason, note)
    }

    fn of<T: Serialize + ?Sized>(
        object: &T,
        event_type: EventType,
        reason: impl Into<String>,
        note: impl Into<String>,
    ) -> Self {
        Self {
            regarding: ObjectReference::of(object),
            related: None,
            event_type,
            reason: reason.into(),
            action: None,
            note: note.into(),
        }
    }

    /// What the plugin did or failed to do, in UpperCamelCase, e.g.
    /// `Labelled`; defaults to the reason.
    pub fn action(mut self, action: impl Into<String>) -> Self {
        self.action = Some(action.into());
        self
    }

    /// A second object involved (see [`ObjectReference::of`]).
    pub fn related<T: Serialize + ?Sized>(mut self, object: &T) -> Self {
        self.related = Some(ObjectReference::of(object));
        self
    }

    /// A second object involved, by reference.
    pub fn related_to(mut self, reference: ObjectReference) -> Self {
        self.related = Some(Ok(reference));
        self
    }

    /// The Event as it will be sent, or why it cannot be.
    pub fn record(self) -> Result<EventRecord, KubeError> {
        Ok(EventRecord {
            regarding: self.regarding?,
            related: self.related.transpose()?,
            event_type: self.event_type,
            action: self.action.unwrap_or_else(|| self.reason.clone()),
            reason: self.reason,
            note: self.note,
        })
    }

    /// Records the Event. `Ok` once it is written, merged into the series of
    /// an identical recent one, or dropped by the host's flood limit (which
    /// is not an error). [`KubeError::NotGranted`] without the `events`
    /// capability.
    pub fn publish(self) -> Result<(), KubeError> {
        crate::host::events_publish(&self.record()?)
    }
}

/// Publishes a Warning about `object` (see [`ObjectReference::of`]); the
/// action is the reason.
pub fn warning<T: Serialize + ?Sized>(
    object: &T,
    reason: impl Into<String>,
    note: impl Into<String>,
) -> Result<(), KubeError> {
    Event::warning(object, reason, note).publish()
}

/// Publishes a Normal event about `object` (see [`ObjectReference::of`]);
/// the action is the reason.
pub fn normal<T: Serialize + ?Sized>(
    object: &T,
    reason: impl Into<String>,
    note: impl Into<String>,
) -> Result<(), KubeError> {
    Event::normal(object, reason, note).publish()
}

// The tests run against the native stand-in host.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{Node, Pod};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use serde_json::json;

    use super::*;
    use crate::testing;

    fn pod() -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some("web-0".into()),
                namespace: Some("shop".into()),
                uid: Some("u-1".into()),
                resource_version: Some("12".into()),
                ..ObjectMeta::default()
            },
            ..Pod::default()
        }
    }

    #[test]
    fn references_come_from_the_object() {
        let reference = ObjectReference::of(&pod()).unwrap();
        assert_eq!(
            reference,
            ObjectReference::new(GroupVersionKind::of::<Pod>(), Some("shop"), "web-0")
                .uid("u-1")
                .resource_version("12")
        );
        let mut node = Node::default();
        node.metadata.name = Some("node-1".into());
        let reference = ObjectReference::of(&node).unwrap();
        assert_eq!(reference.key(), "node-1");
        assert_eq!((reference.namespace, reference.uid), (None, None));
        let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
                                "metadata": {"name": "web", "namespace": "shop"}});
        assert_eq!(
            ObjectReference::from_json(&deployment).unwrap().kind,
            GroupVersionKind::of::<Deployment>()
        );
    }

    #[test]
    fn references_come_from_views_as_from_the_decoded_object() {
        let json = serde_json::to_string(&pod()).unwrap();
        let view = ObjectView::parse(&json).unwrap();
        assert_eq!(
            ObjectReference::from_view(&view).unwrap(),
            ObjectReference::of(&pod()).unwrap()
        );
        let nameless = ObjectView::parse(r#"{"apiVersion":"v1","kind":"Pod","metadata":{}}"#);
        assert_eq!(
            ObjectReference::from_view(&nameless.unwrap()).unwrap_err(),
            KubeError::Encoding("an Event's object needs metadata.name, which it lacks".into())
        );
        let kindless = ObjectView::parse(r#"{"apiVersion":"v1","metadata":{"name":"a"}}"#);
        let error = ObjectReference::from_view(&kindless.unwrap()).unwrap_err();
        assert!(error.message().contains("needs kind"), "{error}");
    }

    #[test]
    fn objects_without_identity_are_refused_before_sending() {
        testing::reset();
        let error = warning(&Pod::default(), "Bad", "no name").unwrap_err();
        assert_eq!(
            error,
            KubeError::Encoding("an Event's object needs metadata.name, which it lacks".into())
        );
        let error = normal(&json!({"metadata": {"name": "x"}}), "R", "n").unwrap_err();
        assert!(error.message().contains("apiVersion"), "{error}");
        assert!(testing::take_events().is_empty());
    }

    #[test]
    fn shorthands_default_the_action_to_the_reason() {
        testing::reset();
        warning(&pod(), "DisallowedImage", "container app uses nginx:latest").unwrap();
        normal(&pod(), "Checked", "fine").unwrap();
        let events = testing::take_events();
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].event_type, EventType::Warning);
        assert_eq!(
            (events[0].reason.as_str(), events[0].action.as_str()),
            ("DisallowedImage", "DisallowedImage")
        );
        assert_eq!(events[0].note, "container app uses nginx:latest");
        assert_eq!(events[0].regarding.name, "web-0");
        assert_eq!(events[1].event_type.as_str(), "Normal");
        assert_eq!(events[1].related, None);
    }

    #[test]
    fn the_builder_sets_action_and_related() {
        testing::reset();
        let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
                                "metadata": {"name": "web", "namespace": "shop"}});
        Event::warning(&pod(), "Violation", "labelled")
            .action("Labelled")
            .related(&deployment)
            .publish()
            .unwrap();
        let [event] = &testing::take_events()[..] else {
            panic!("one event expected");
        };
        assert_eq!(event.action, "Labelled");
        assert_eq!(event.related.as_ref().unwrap().kind.kind, "Deployment");
    }

    #[test]
    fn scripted_publish_failures_are_returned() {
        testing::reset();
        testing::respond_events(Err(KubeError::NotGranted("capability events".into())));
        assert!(warning(&pod(), "R", "n").unwrap_err().is_not_granted());
        assert_eq!(testing::take_events().len(), 1, "the attempt is recorded");
    }
}
