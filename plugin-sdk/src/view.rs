//! Objects decoded lazily: [`ObjectView`] reads an object's identity and
//! metadata out of the event's JSON, borrowing its strings, and keeps every
//! other top-level field (`spec`, `status`, `data`, ...) as unparsed JSON
//! until the handler asks for it, in the type it chooses.
//!
//! Decoding a whole `k8s-openapi` object builds every field of it: a 4 KB
//! Pod is hundreds of strings, maps and vectors, most of which a handler
//! never reads. With a view a handler pays for what it reads:
//!
//! ```
//! use herald_sdk::k8s_openapi::api::core::v1::PodStatus;
//! use herald_sdk::{Error, Event};
//! use serde::Deserialize;
//!
//! /// The one field of the Pod's spec this handler reads, borrowed.
//! #[derive(Deserialize)]
//! #[serde(rename_all = "camelCase")]
//! struct Placement<'a> {
//!     node_name: Option<&'a str>,
//! }
//!
//! fn on_add(event: &Event) -> Result<(), Error> {
//!     let pod = event.view()?;
//!     let app = pod.metadata().labels().get("app").unwrap_or("none");
//!     let owner = pod.metadata().controller().map(|owner| owner.name());
//!     // Typed, decoded only now: the whole status, one field of the spec.
//!     let phase = pod.status::<PodStatus>()?.and_then(|status| status.phase);
//!     let node = pod.spec::<Placement>()?.and_then(|spec| spec.node_name);
//!     herald_sdk::info!("pod={} app={app} owner={owner:?} phase={phase:?} node={node:?}", event.key());
//!     Ok(())
//! }
//! # let pod = r#"{"metadata":{"name":"web-0","namespace":"shop","labels":{"app":"web"}},"spec":{"nodeName":"n1"}}"#;
//! # let pod: herald_sdk::k8s_openapi::api::core::v1::Pod = serde_json::from_str(pod).unwrap();
//! # on_add(&herald_sdk::testing::added(&pod)).unwrap();
//! ```
//!
//! (A borrowed `&str` field fails on a JSON string with escapes in it; use
//! `Cow<'a, str>` with `#[serde(borrow)]`, or `String`, where one can
//! occur.) What a view skips is still scanned, as JSON must be, but builds
//! nothing; see BENCHMARKS.md, "The per-call cost and typed decoding", for
//! what that saves.

use std::borrow::Cow;
use std::fmt;
use std::ops::Deref;

use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use crate::Error;

/// An object read lazily from its JSON text: see the [module](self) docs.
///
/// It also implements `Deserialize`, so a list of objects or a struct can
/// hold views, as long as the deserializer borrows from its input
/// (`serde_json::from_str`, `from_slice`): the unparsed fields are slices
/// of that input. (`from_reader`, which cannot lend its input, refuses it
/// at compile time.)
#[derive(Clone, Debug, Default)]
pub struct ObjectView<'a> {
    api_version: Option<Text<'a>>,
    kind: Option<Text<'a>>,
    metadata: MetaView<'a>,
    /// Every other top-level field, unparsed, in the order of the text.
    fields: Vec<(Text<'a>, &'a RawValue)>,
}

impl<'a> ObjectView<'a> {
    /// Reads `json`, an object's JSON text: its `apiVersion`, `kind` and
    /// `metadata` now, the rest when asked for. Fails if the text is not
    /// JSON, not an object, or its metadata is malformed.
    pub fn parse(json: &'a str) -> Result<Self, Error> {
        Self::read(json, "object")
    }

    /// [`ObjectView::parse`], naming the object `what` in the error.
    pub(crate) fn read(json: &'a str, what: &str) -> Result<Self, Error> {
        serde_json::from_str(json)
            .map_err(|error| Error::from(error).context(format_args!("reading the {what}")))
    }

    /// `apiVersion`, e.g. `apps/v1`; empty if the object has none.
    pub fn api_version(&self) -> &str {
        self.api_version.as_deref().unwrap_or_default()
    }

    /// `kind`, e.g. `Pod`; empty if the object has none.
    pub fn kind(&self) -> &str {
        self.kind.as_deref().unwrap_or_default()
    }

    /// The object's metadata.
    pub fn metadata(&self) -> &MetaView<'a> {
        &self.metadata
    }

    /// `spec` decoded into `T` (a `k8s-openapi` spec type such as `PodSpec`,
    /// or a struct with only the fields the handler reads); `None` if the
    /// object has no spec or it is `null`.
    pub fn spec<T: Deserialize<'a>>(&self) -> Result<Option<T>, Error> {
        self.field("spec")
    }

    /// `status` decoded into `T` (see [`ObjectView::spec`]).
    pub fn status<T: Deserialize<'a>>(&self) -> Result<Option<T>, Error> {
        self.field("status")
    }

    /// Any other top-level field decoded into `T`, e.g. a ConfigMap's
    /// `data` as a `BTreeMap<String, String>`; `None` if absent or `null`.
    /// (`apiVersion`, `kind` and `metadata` have their own accessors.)
    pub fn field<T: Deserialize<'a>>(&self, name: &str) -> Result<Option<T>, Error> {
        let Some(raw) = self.raw(name).filter(|raw| *raw != "null") else {
            return Ok(None);
        };
        decode(raw, format_args!("`{name}`")).map(Some)
    }

    /// A top-level field's JSON text as the host sent it, undecoded: cheap
    /// to compare, as in `old.raw("spec") != new.raw("spec")`.
    pub fn raw(&self, name: &str) -> Option<&'a str> {
        self.fields
            .iter()
            .find(|(field, _)| &**field == name)
            .map(|(_, raw)| raw.get())
    }

    /// The names of the top-level fields other than `apiVersion`, `kind`
    /// and `metadata`, in the order of the text.
    pub fn field_names(&self) -> impl Iterator<Item = &str> {
        self.fields.iter().map(|(name, _)| &**name)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for ObjectView<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ObjectVisitor(std::marker::PhantomData))
    }
}

struct ObjectVisitor<'a>(std::marker::PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for ObjectVisitor<'a> {
    type Value = ObjectView<'a>;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("a Kubernetes object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut view = ObjectView::default();
        let mut seen_metadata = false;
        while let Some(key) = map.next_key::<Text<'de>>()? {
            match &*key {
                "apiVersion" => set_once(&mut view.api_version, "apiVersion", map.next_value()?)?,
                "kind" => set_once(&mut view.kind, "kind", map.next_value()?)?,
                "metadata" if seen_metadata => return Err(de::Error::duplicate_field("metadata")),
                "metadata" => {
                    seen_metadata = true;
                    view.metadata = map.next_value::<Option<MetaView>>()?.unwrap_or_default();
                }
                name if view.fields.iter().any(|(field, _)| &**field == name) => {
                    return Err(de::Error::custom(format_args!("duplicate field `{name}`")));
                }
                _ => {
                    let raw = map.next_value()?;
                    view.fields.push((key, raw));
                }
            }
        }
        Ok(view)
    }
}

fn set_once<'a, E: de::Error>(
    slot: &mut Option<Text<'a>>,
    name: &'static str,
    value: Text<'a>,
) -> Result<(), E> {
    match slot.replace(value) {
        Some(_) => Err(E::duplicate_field(name)),
        None => Ok(()),
    }
}

/// An object's `metadata`, its strings borrowed from the JSON text.
/// `managedFields` and the fields without an accessor are skipped.
#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MetaView<'a> {
    #[serde(borrow, default)]
    name: Option<Text<'a>>,
    #[serde(borrow, default)]
    generate_name: Option<Text<'a>>,
    #[serde(borrow, default)]
    namespace: Option<Text<'a>>,
    #[serde(borrow, default)]
    uid: Option<Text<'a>>,
    #[serde(borrow, default)]
    resource_version: Option<Text<'a>>,
    #[serde(default)]
    generation: Option<i64>,
    #[serde(borrow, default)]
    creation_timestamp: Option<Text<'a>>,
    #[serde(borrow, default)]
    deletion_timestamp: Option<Text<'a>>,
    #[serde(borrow, default)]
    labels: StringMap<'a>,
    #[serde(borrow, default)]
    annotations: StringMap<'a>,
    #[serde(borrow, default, deserialize_with = "null_as_default")]
    owner_references: Vec<OwnerView<'a>>,
    #[serde(borrow, default, deserialize_with = "null_as_default")]
    finalizers: Vec<Text<'a>>,
}

/// Accessors returning `Option<&str>` for the optional string fields.
macro_rules! optional_strings {
    ($($(#[$doc:meta])* $name:ident),* $(,)?) => {
        $(
            $(#[$doc])*
            pub fn $name(&self) -> Option<&str> {
                self.$name.as_deref()
            }
        )*
    };
}

impl<'a> MetaView<'a> {
    /// `name`; empty if unset (an object being created with
    /// `generateName` only).
    pub fn name(&self) -> &str {
        self.name.as_deref().unwrap_or_default()
    }

    optional_strings! {
        /// `generateName`.
        generate_name,
        /// `namespace`; `None` for a cluster-scoped object.
        namespace,
        /// `uid`.
        uid,
        /// `resourceVersion`.
        resource_version,
        /// `creationTimestamp`, as RFC 3339 text.
        creation_timestamp,
        /// `deletionTimestamp`, as RFC 3339 text: set once deletion was
        /// requested while finalizers hold the object.
        deletion_timestamp,
    }

    /// `generation`: bumped by the API server on every change of the spec.
    pub fn generation(&self) -> Option<i64> {
        self.generation
    }

    /// Whether deletion was requested (`deletionTimestamp` is set).
    pub fn is_being_deleted(&self) -> bool {
        self.deletion_timestamp.is_some()
    }

    /// `labels` (empty if none).
    pub fn labels(&self) -> &StringMap<'a> {
        &self.labels
    }

    /// `annotations` (empty if none).
    pub fn annotations(&self) -> &StringMap<'a> {
        &self.annotations
    }

    /// `ownerReferences`, in order.
    pub fn owner_references(&self) -> &[OwnerView<'a>] {
        &self.owner_references
    }

    /// The owner reference marked `controller: true`, if any (Kubernetes
    /// allows at most one).
    pub fn controller(&self) -> Option<&OwnerView<'a>> {
        self.owner_references.iter().find(|owner| owner.controller)
    }

    /// `finalizers`, in order.
    pub fn finalizers(&self) -> impl Iterator<Item = &str> {
        self.finalizers.iter().map(|finalizer| &**finalizer)
    }
}

/// One entry of `metadata.ownerReferences`.
#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OwnerView<'a> {
    #[serde(borrow, default)]
    api_version: Text<'a>,
    #[serde(borrow, default)]
    kind: Text<'a>,
    #[serde(borrow, default)]
    name: Text<'a>,
    #[serde(borrow, default)]
    uid: Text<'a>,
    #[serde(default, deserialize_with = "null_as_default")]
    controller: bool,
}

impl OwnerView<'_> {
    /// The owner's `apiVersion`, e.g. `apps/v1`.
    pub fn api_version(&self) -> &str {
        &self.api_version
    }

    /// The owner's kind, e.g. `ReplicaSet`.
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// The owner's name (in the object's namespace).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The owner's `uid`.
    pub fn uid(&self) -> &str {
        &self.uid
    }

    /// Whether this owner is the object's managing controller.
    pub fn is_controller(&self) -> bool {
        self.controller
    }
}

/// A JSON object of strings (`labels`, `annotations`), kept in the order
/// of the text; a look-up is a scan, quick for the handful of entries
/// these maps hold.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StringMap<'a> {
    entries: Vec<(Text<'a>, Text<'a>)>,
}

impl StringMap<'_> {
    /// The value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(k, _)| &**k == key)
            .map(|(_, value)| &**value)
    }

    /// Whether `key` is present.
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// The entries, in the order of the text.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().map(|(key, value)| (&**key, &**value))
    }

    /// How many entries there are.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for StringMap<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Entries<'a>(std::marker::PhantomData<&'a ()>);

        impl<'de: 'a, 'a> Visitor<'de> for Entries<'a> {
            type Value = StringMap<'a>;

            fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
                formatter.write_str("a map of strings")
            }

            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(StringMap::default())
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(0));
                while let Some(entry) = map.next_entry()? {
                    entries.push(entry);
                }
                Ok(StringMap { entries })
            }
        }

        // `deserialize_any`, so that `null` reaches `visit_unit`.
        deserializer.deserialize_any(Entries(std::marker::PhantomData))
    }
}

/// A JSON string: borrowed from the text when it holds no escapes, owned
/// (unescaped) when it does.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Text<'a>(Cow<'a, str>);

impl Deref for Text<'_> {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Chars<'a>(std::marker::PhantomData<&'a ()>);

        impl<'de: 'a, 'a> Visitor<'de> for Chars<'a> {
            type Value = Text<'a>;

            fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
                formatter.write_str("a string")
            }

            fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed(text)))
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(text.to_owned())))
            }

            fn visit_string<E: de::Error>(self, text: String) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(text)))
            }
        }

        deserializer.deserialize_str(Chars(std::marker::PhantomData))
    }
}

/// `json` decoded into `T`, the error naming `what` was decoded and into
/// which type: what every typed accessor of [`Event`](crate::Event),
/// [`Update`](crate::Update) and [`ObjectView`] shares.
pub(crate) fn decode<'a, T: Deserialize<'a>>(
    json: &'a str,
    what: impl fmt::Display,
) -> Result<T, Error> {
    serde_json::from_str(json).map_err(|error| {
        Error::from(error).context(format_args!(
            "decoding {what} as {}",
            std::any::type_name::<T>()
        ))
    })
}

/// `null` read as the type's default, as Go's JSON decoding does for the
/// lists and flags of `metadata`.
fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Option::<T>::deserialize(deserializer).map(Option::unwrap_or_default)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::api::core::v1::{PodSpec, PodStatus};

    use super::*;

    /// A Pod as the API server writes one: an annotation holding escaped
    /// JSON, a controller owner, managed fields, a spec and a status.
    const POD: &str = r#"{
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {
            "name": "web-0",
            "generateName": "web-",
            "namespace": "shop",
            "uid": "u-1",
            "resourceVersion": "42",
            "generation": 3,
            "creationTimestamp": "2026-11-25T10:00:00Z",
            "labels": {"app": "web", "tier": "front"},
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{\"kind\":\"Pod\"}\n"},
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "settings", "uid": "u-2"},
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d9", "uid": "u-3", "controller": true, "blockOwnerDeletion": true}
            ],
            "finalizers": ["shop/drain"],
            "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}]
        },
        "spec": {"nodeName": "node-1", "containers": [{"name": "app", "image": "web:1"}]},
        "status": {"phase": "Running", "containerStatuses": [{"name": "app", "restartCount": 2, "image": "web:1", "imageID": "", "ready": true}]}
    }"#;

    #[test]
    fn metadata_is_read_with_every_accessor() {
        let pod = ObjectView::parse(POD).unwrap();
        assert_eq!((pod.api_version(), pod.kind()), ("v1", "Pod"));
        let meta = pod.metadata();
        assert_eq!(meta.name(), "web-0");
        assert_eq!(meta.generate_name(), Some("web-"));
        assert_eq!(meta.namespace(), Some("shop"));
        assert_eq!(meta.uid(), Some("u-1"));
        assert_eq!(meta.resource_version(), Some("42"));
        assert_eq!(meta.generation(), Some(3));
        assert_eq!(meta.creation_timestamp(), Some("2026-11-25T10:00:00Z"));
        assert!(!meta.is_being_deleted());
        assert_eq!(
            meta.labels().iter().collect::<Vec<_>>(),
            [("app", "web"), ("tier", "front")]
        );
        assert_eq!(meta.labels().get("tier"), Some("front"));
        assert!(!meta.labels().contains_key("missing"));
        assert_eq!(meta.annotations().len(), 1);
        assert_eq!(meta.owner_references().len(), 2);
        let controller = meta.controller().unwrap();
        assert_eq!(
            (
                controller.api_version(),
                controller.kind(),
                controller.name(),
                controller.uid()
            ),
            ("apps/v1", "ReplicaSet", "web-7d9", "u-3")
        );
        assert!(controller.is_controller());
        assert_eq!(meta.finalizers().collect::<Vec<_>>(), ["shop/drain"]);
        assert_eq!(pod.field_names().collect::<Vec<_>>(), ["spec", "status"]);
    }

    #[test]
    fn strings_are_borrowed_unless_they_hold_escapes() {
        let pod = ObjectView::parse(POD).unwrap();
        let labels = &pod.metadata().labels;
        assert!(labels.entries.iter().all(|(key, value)| {
            matches!(key.0, Cow::Borrowed(_)) && matches!(value.0, Cow::Borrowed(_))
        }));
        assert!(matches!(
            pod.metadata().name.as_ref().unwrap().0,
            Cow::Borrowed(_)
        ));
        // An escaped string cannot be borrowed: it is unescaped into its own.
        let (_, applied) = &pod.metadata().annotations.entries[0];
        assert!(matches!(applied.0, Cow::Owned(_)));
        assert_eq!(&**applied, "{\"kind\":\"Pod\"}\n");
    }

    #[test]
    fn spec_and_status_decode_on_demand_into_full_or_partial_types() {
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Placement<'a> {
            node_name: &'a str,
        }

        let pod = ObjectView::parse(POD).unwrap();
        let spec: PodSpec = pod.spec().unwrap().unwrap();
        assert_eq!(spec.containers[0].image.as_deref(), Some("web:1"));
        let status: PodStatus = pod.status().unwrap().unwrap();
        assert_eq!(status.phase.as_deref(), Some("Running"));
        assert_eq!(status.container_statuses.unwrap()[0].restart_count, 2);
        assert_eq!(
            pod.spec::<Placement>().unwrap().unwrap().node_name,
            "node-1"
        );
        assert_eq!(
            pod.raw("spec"),
            Some(r#"{"nodeName": "node-1", "containers": [{"name": "app", "image": "web:1"}]}"#)
        );
    }

    #[test]
    fn absent_or_null_fields_are_none_and_other_fields_decode_by_name() {
        let config_map = ObjectView::parse(
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":null,"finalizers":null},"data":{"k":"v"},"status":null}"#,
        )
        .unwrap();
        assert_eq!(config_map.spec::<PodSpec>().unwrap(), None);
        assert_eq!(config_map.status::<PodStatus>().unwrap(), None);
        let data: BTreeMap<String, String> = config_map.field("data").unwrap().unwrap();
        assert_eq!(data["k"], "v");
        assert!(config_map.metadata().labels().is_empty());
        assert_eq!(config_map.metadata().namespace(), None);
        // An object without metadata or identity reads as empty, not as an error.
        let bare = ObjectView::parse("{}").unwrap();
        assert_eq!((bare.kind(), bare.metadata().name()), ("", ""));
    }

    #[test]
    fn views_deserialize_inside_other_types_from_borrowed_text() {
        let list =
            r#"{"items":[{"metadata":{"name":"a"},"spec":{"x":1}},{"metadata":{"name":"b"}}]}"#;
        #[derive(serde::Deserialize)]
        struct List<'a> {
            #[serde(borrow)]
            items: Vec<ObjectView<'a>>,
        }
        let list: List = serde_json::from_str(list).unwrap();
        let names: Vec<_> = list
            .items
            .iter()
            .map(|item| item.metadata().name())
            .collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(list.items[0].raw("spec"), Some(r#"{"x":1}"#));
    }

    #[test]
    fn errors_name_the_field_and_the_type() {
        let pod =
            ObjectView::parse(r#"{"metadata":{"name":"a"},"spec":{"containers":7}}"#).unwrap();
        let error = pod.spec::<PodSpec>().unwrap_err();
        assert!(
            error
                .message()
                .starts_with("decoding `spec` as k8s_openapi::")
                && error
                    .message()
                    .contains("PodSpec: invalid type: integer `7`"),
            "{}",
            error.message()
        );
        for (json, fault) in [
            (
                "[1]",
                "invalid type: sequence, expected a Kubernetes object",
            ),
            (
                r#"{"metadata":{"labels":{"a":1}}}"#,
                "invalid type: integer `1`, expected a string",
            ),
            (
                r#"{"metadata":{},"metadata":{}}"#,
                "duplicate field `metadata`",
            ),
            (r#"{"spec":{},"spec":{}}"#, "duplicate field `spec`"),
            (r#"{"kind":"Pod","kind":"Pod"}"#, "duplicate field `kind`"),
            (r#"{"metadata":{"name":"a"}"#, "EOF while parsing an object"),
        ] {
            let error = ObjectView::parse(json).unwrap_err();
            assert!(
                error.message().starts_with("reading the object: ")
                    && error.message().contains(fault),
                "{json}: {}",
                error.message()
            );
        }
    }
}
