//! A cached Kubernetes object: its JSON text, kept once and shared by the
//! store and every notification, plus the few metadata fields the host reads.

use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::fmt::{self, Write as _};

/// One object as cached: the JSON as the API server sent it (less
/// `metadata.managedFields` when stripping, plus `apiVersion`/`kind` when the
/// server left them out, as it does in list items), and its parsed metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedObject {
    json: Box<str>,
    name: Box<str>,
    namespace: Option<Box<str>>,
    uid: Box<str>,
    resource_version: Box<str>,
    labels: Box<[(Box<str>, Box<str>)]>,
}

/// An object the host cannot cache.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ObjectError {
    /// Not JSON, or not an object.
    #[error("object is not a JSON object: {0}")]
    Json(String),
    /// No `metadata.name`.
    #[error("object has no metadata.name")]
    NoName,
}

/// How objects are transformed before caching.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transform {
    /// Drop `metadata.managedFields` (large, and read by almost no handler).
    pub strip_managed_fields: bool,
}

impl Default for Transform {
    fn default() -> Self {
        Transform {
            strip_managed_fields: true,
        }
    }
}

impl CachedObject {
    /// Parses one object's JSON. `api_version` and `kind` fill in those fields
    /// when the JSON lacks them (list items).
    pub fn from_json(
        raw: &str,
        api_version: &str,
        kind: &str,
        transform: Transform,
    ) -> Result<Self, ObjectError> {
        let parts: ObjectParts<'_> =
            serde_json::from_str(raw).map_err(|e| ObjectError::Json(e.to_string()))?;
        Self::build(&parts, Some(raw), api_version, kind, transform)
    }

    /// The object split by [`ObjectParts`] (inside a watch event or a list,
    /// in the same pass that read them), written out again.
    pub fn from_parts(
        parts: &ObjectParts<'_>,
        api_version: &str,
        kind: &str,
        transform: Transform,
    ) -> Result<Self, ObjectError> {
        Self::build(parts, None, api_version, kind, transform)
    }

    /// `raw`, when given, is the text `parts` was split from, kept as it
    /// is when nothing is to be changed.
    fn build(
        parts: &ObjectParts<'_>,
        raw: Option<&str>,
        api_version: &str,
        kind: &str,
        transform: Transform,
    ) -> Result<Self, ObjectError> {
        let metadata = parts.metadata.as_ref().ok_or(ObjectError::NoName)?;
        let text = |key: &str| {
            metadata
                .get(key)
                .and_then(|v| serde_json::from_str::<Cow<'_, str>>(v.get()).ok())
        };
        let name = text("name")
            .filter(|n| !n.is_empty())
            .ok_or(ObjectError::NoName)?;
        let namespace = text("namespace")
            .filter(|ns| !ns.is_empty())
            .map(|ns| ns.into());
        let uid = text("uid").unwrap_or_default();
        let resource_version = text("resourceVersion").unwrap_or_default();
        let labels: Box<[(Box<str>, Box<str>)]> =
            match metadata.get("labels") {
                Some(raw) => serde_json::from_str::<
                    Option<std::collections::BTreeMap<String, String>>,
                >(raw.get())
                .map_err(|e| ObjectError::Json(format!("metadata.labels: {e}")))?
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| (k.into_boxed_str(), v.into_boxed_str()))
                .collect(),
                None => Box::default(),
            };

        let strip = transform.strip_managed_fields && metadata.get("managedFields").is_some();
        let add_type = parts.member("apiVersion").is_none() || parts.member("kind").is_none();
        let json: Box<str> = match raw {
            Some(raw) if !strip && !add_type => raw.into(),
            _ => parts
                .write(strip, add_type.then_some((api_version, kind)))
                .into_boxed_str(),
        };
        Ok(CachedObject {
            json,
            name: name.as_ref().into(),
            namespace,
            uid: uid.as_ref().into(),
            resource_version: resource_version.as_ref().into(),
            labels,
        })
    }

    /// The JSON text.
    pub fn json(&self) -> &str {
        &self.json
    }

    /// `metadata.name`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `metadata.namespace`, if namespaced.
    pub fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// `metadata.uid`.
    pub fn uid(&self) -> &str {
        &self.uid
    }

    /// `metadata.resourceVersion`.
    pub fn resource_version(&self) -> &str {
        &self.resource_version
    }

    /// `metadata.labels`, sorted by key.
    pub fn labels(&self) -> impl Iterator<Item = (&str, &str)> {
        self.labels.iter().map(|(k, v)| (&**k, &**v))
    }

    /// The label `key`, if set.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .binary_search_by(|(k, _)| (**k).cmp(key))
            .ok()
            .map(|i| &*self.labels[i].1)
    }

    /// The cache key: `namespace/name`, or `name` for cluster-scoped objects.
    pub fn key(&self) -> String {
        object_key(self.namespace(), self.name())
    }

    /// Writes the cache key into `out`, replacing what it held (reusing its
    /// buffer: no allocation once it is large enough).
    pub fn write_key(&self, out: &mut String) {
        out.clear();
        if let Some(namespace) = self.namespace() {
            out.push_str(namespace);
            out.push('/');
        }
        out.push_str(self.name());
    }

    /// Bytes of memory this object holds (JSON plus metadata copies), for metrics.
    pub fn heap_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.json.len()
            + self.name.len()
            + self.namespace.as_ref().map_or(0, |ns| ns.len())
            + self.uid.len()
            + self.resource_version.len()
            + self
                .labels
                .iter()
                .map(|(k, v)| k.len() + v.len() + 2 * std::mem::size_of::<Box<str>>())
                .sum::<usize>()
    }
}

/// The cache key of `namespace/name`.
///
/// Built by hand rather than with `format!`: it runs several times per
/// notification (store insert, event context), and the formatting machinery
/// cost about 1,000 instructions a call against about 100 for two copies
/// into a buffer of the exact size.
pub fn object_key(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(ns) => {
            let mut key = String::with_capacity(ns.len() + 1 + name.len());
            key.push_str(ns);
            key.push('/');
            key.push_str(name);
            key
        }
        None => name.to_owned(),
    }
}

/// One object's JSON split in a single pass: its top-level members in
/// order, values unparsed, except `metadata`, whose members are split too.
/// Reading an object this way (as a member of a watch event or a list
/// page) scans its bytes once; splitting the event first and the object
/// and its metadata after would scan them up to three times.
#[derive(Debug)]
pub struct ObjectParts<'a> {
    members: Vec<(Cow<'a, str>, Member<'a>)>,
    metadata: Option<Fields<'a>>,
}

#[derive(Debug)]
enum Member<'a> {
    Raw(&'a RawValue),
    /// Where `metadata` (held in [`ObjectParts::metadata`]) goes.
    Metadata,
}

impl<'a> ObjectParts<'a> {
    /// The top-level member `key` (not `metadata`), unparsed.
    pub fn member(&self, key: &str) -> Option<&'a RawValue> {
        self.members.iter().find_map(|(k, v)| match v {
            Member::Raw(value) if k == key => Some(*value),
            _ => None,
        })
    }

    /// The member `key` of `metadata`, unparsed.
    pub fn metadata_member(&self, key: &str) -> Option<&'a RawValue> {
        self.metadata.as_ref()?.get(key)
    }

    /// The object as JSON again: without `metadata.managedFields` when
    /// `strip`, with `apiVersion` and `kind` first when `add_type` gives
    /// them and the object lacks them; every other member's bytes exactly
    /// as received.
    pub fn write(&self, strip: bool, add_type: Option<(&str, &str)>) -> String {
        let capacity = self
            .members
            .iter()
            .map(|(key, value)| {
                key.len()
                    + 4
                    + match value {
                        Member::Raw(raw) => raw.get().len(),
                        Member::Metadata => self.metadata.as_ref().map_or(2, Fields::len),
                    }
            })
            .sum::<usize>()
            + 2;
        let mut out = String::with_capacity(capacity);
        out.push('{');
        let mut first = true;
        if let Some((api_version, kind)) = add_type {
            for (key, value) in [("apiVersion", api_version), ("kind", kind)] {
                if self.member(key).is_none() {
                    write_member_key(&mut out, &mut first, key);
                    out.push_str(&serde_json::to_string(value).expect("string serializes"));
                }
            }
        }
        for (key, value) in &self.members {
            write_member_key(&mut out, &mut first, key);
            match value {
                Member::Raw(raw) => out.push_str(raw.get()),
                Member::Metadata => match &self.metadata {
                    Some(metadata) => metadata.write(&mut out, strip),
                    None => out.push_str("null"),
                },
            }
        }
        out.push('}');
        out
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for ObjectParts<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct PartsVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for PartsVisitor<'a> {
            type Value = ObjectParts<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
                let mut members = Vec::with_capacity(8);
                let mut metadata = None;
                let mut metadata_seen = false;
                while let Some(key) = map.next_key::<Key<'de>>()? {
                    if key.0 == "metadata" && !std::mem::replace(&mut metadata_seen, true) {
                        metadata = map.next_value::<Option<Fields<'a>>>()?;
                        members.push((key.0, Member::Metadata));
                    } else {
                        members.push((key.0, Member::Raw(map.next_value()?)));
                    }
                }
                Ok(ObjectParts { members, metadata })
            }
        }
        deserializer.deserialize_map(PartsVisitor(std::marker::PhantomData))
    }
}

/// Writes an object member's key and colon, after a comma unless it is the
/// `first` member.
fn write_member_key(out: &mut String, first: &mut bool, key: &str) {
    if !std::mem::take(first) {
        out.push(',');
    }
    if key
        .bytes()
        .all(|b| b >= 0x20 && b != b'"' && b != b'\\' && b < 0x80)
    {
        let _ = write!(out, "\"{key}\":");
    } else {
        out.push_str(&serde_json::to_string(key).expect("string serializes"));
        out.push(':');
    }
}

/// The raw JSON value at `path` (object member names, from the top) in
/// `json`, if every step is an object holding the next name; `None` for an
/// empty path. Each level is read once, its members' values unparsed.
pub(crate) fn value_at<'a>(json: &'a str, path: &[Box<str>]) -> Option<&'a RawValue> {
    let mut object = json;
    let mut found = None;
    for name in path {
        let fields: Fields<'a> = serde_json::from_str(object).ok()?;
        let value = fields.get(name)?;
        object = value.get();
        found = Some(value);
    }
    found
}

/// The fields of a JSON object in their original order, values unparsed.
#[derive(Debug)]
struct Fields<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'a> Fields<'a> {
    fn get(&self, key: &str) -> Option<&'a RawValue> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
    }

    /// About the length of the object written out again.
    fn len(&self) -> usize {
        2 + self
            .0
            .iter()
            .map(|(k, v)| k.len() + 4 + v.get().len())
            .sum::<usize>()
    }

    /// Writes the object, without `managedFields` when `strip`.
    fn write(&self, out: &mut String, strip: bool) {
        out.push('{');
        let mut first = true;
        for (key, value) in self
            .0
            .iter()
            .filter(|(k, _)| !strip || k != "managedFields")
        {
            write_member_key(out, &mut first, key);
            out.push_str(value.get());
        }
        out.push('}');
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Fields<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct FieldsVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for FieldsVisitor<'a> {
            type Value = Fields<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
                let mut fields = Vec::with_capacity(map.size_hint().unwrap_or(8));
                while let Some(key) = map.next_key::<Key<'de>>()? {
                    let value: &'de RawValue = map.next_value()?;
                    fields.push((key.0, value));
                }
                Ok(Fields(fields))
            }
        }
        deserializer.deserialize_map(FieldsVisitor(std::marker::PhantomData))
    }
}

/// An object key, borrowed from the input unless it had escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn pod_with_managed_fields() -> String {
        r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web","namespace":"shop","uid":"u1","resourceVersion":"42","labels":{"app":"web","tier":"front"},"managedFields":[{"manager":"kubectl","operation":"Apply","fieldsV1":{"f:spec":{}}}]},"spec":{"containers":[{"name":"c","image":"nginx"}]},"status":{"phase":"Running"}}"#.to_owned()
    }

    /// A Nest custom resource whose spec is nested `depth` objects deep.
    fn nested(depth: usize) -> String {
        let spec = format!("{}\"bottom\"{}", "{\"a\":".repeat(depth), "}".repeat(depth));
        format!(
            r#"{{"apiVersion":"example.com/v1","kind":"Nest","metadata":{{"name":"deep","resourceVersion":"7"}},"spec":{spec}}}"#
        )
    }

    #[test]
    fn objects_nested_as_deep_as_kubernetes_allows_are_cached_without_recursion() {
        // Only the top level and metadata are parsed; the rest is scanned as
        // raw JSON without recursion, so depth costs no stack. 10 000 is the
        // depth limit of the API server's own decoder.
        let json = nested(10_000);
        let object = CachedObject::from_json(&json, "example.com/v1", "Nest", Transform::default())
            .expect("deep but valid");
        assert_eq!(object.json(), json);
        assert_eq!(object.resource_version(), "7");
    }

    #[test]
    fn an_object_split_inside_its_watch_event_is_cached_as_if_read_alone() {
        #[derive(serde::Deserialize)]
        struct Event<'a> {
            #[serde(borrow)]
            object: ObjectParts<'a>,
        }
        let raw = pod_with_managed_fields();
        let line = format!(r#"{{"type":"ADDED","object":{raw}}}"#);
        let event: Event<'_> = serde_json::from_str(&line).unwrap();
        for transform in [
            Transform::default(),
            Transform {
                strip_managed_fields: false,
            },
        ] {
            let alone = CachedObject::from_json(&raw, "v1", "Pod", transform).unwrap();
            let split = CachedObject::from_parts(&event.object, "v1", "Pod", transform).unwrap();
            assert_eq!(split, alone);
        }
        let item: ObjectParts<'_> =
            serde_json::from_str(r#"{"metadata":{"name":"a","uid":"u"},"spec":{}}"#).unwrap();
        let filled = CachedObject::from_parts(&item, "v1", "Pod", Transform::default()).unwrap();
        assert_eq!(
            filled.json(),
            r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","uid":"u"},"spec":{}}"#
        );
        let nameless: ObjectParts<'_> = serde_json::from_str(r#"{"metadata":null}"#).unwrap();
        assert_eq!(
            CachedObject::from_parts(&nameless, "v1", "Pod", Transform::default()),
            Err(ObjectError::NoName)
        );
        assert!(serde_json::from_str::<ObjectParts<'_>>(r#"{"metadata":[1]}"#).is_err());
    }

    #[test]
    fn managed_fields_are_stripped_and_everything_else_kept_in_order() {
        let raw = pod_with_managed_fields();
        let object = CachedObject::from_json(&raw, "v1", "Pod", Transform::default()).unwrap();
        assert!(!object.json().contains("managedFields"));
        assert!(
            object
                .json()
                .starts_with(r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web""#),
            "{}",
            object.json()
        );
        let mut expected: Value = serde_json::from_str(&raw).unwrap();
        expected["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("managedFields");
        assert_eq!(
            serde_json::from_str::<Value>(object.json()).unwrap(),
            expected
        );
        assert_eq!(
            (
                object.namespace(),
                object.name(),
                object.uid(),
                object.resource_version()
            ),
            (Some("shop"), "web", "u1", "42")
        );
        assert_eq!(object.label("tier"), Some("front"));
        assert_eq!(object.key(), "shop/web");
    }

    #[test]
    fn untouched_objects_keep_their_exact_bytes() {
        let raw = pod_with_managed_fields();
        let keep = Transform {
            strip_managed_fields: false,
        };
        assert_eq!(
            CachedObject::from_json(&raw, "v1", "Pod", keep)
                .unwrap()
                .json(),
            raw
        );
    }

    #[test]
    fn list_items_get_their_type_fields() {
        let item = r#"{"metadata":{"name":"n1","resourceVersion":"7"},"spec":{}}"#;
        let object = CachedObject::from_json(item, "v1", "Node", Transform::default()).unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(object.json()).unwrap(),
            json!({"apiVersion":"v1","kind":"Node","metadata":{"name":"n1","resourceVersion":"7"},"spec":{}})
        );
        assert_eq!(object.namespace(), None);
        assert_eq!(object.key(), "n1");
    }

    #[test]
    fn odd_but_valid_json_survives() {
        let raw = json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"ünïcødé-名前","namespace":"ns","annotations":{"big":"x".repeat(100_000)},"managedFields":[]},"data":{"deep":{"a":{"b":{"c":{"d":[1,2,{"e":"\u{1F600}\"quoted\\"}]}}}}}});
        let object =
            CachedObject::from_json(&raw.to_string(), "v1", "ConfigMap", Transform::default())
                .unwrap();
        let mut expected = raw.clone();
        expected["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("managedFields");
        assert_eq!(
            serde_json::from_str::<Value>(object.json()).unwrap(),
            expected
        );
        assert_eq!(object.name(), "ünïcødé-名前");
    }

    #[test]
    fn objects_without_a_name_are_refused() {
        assert_eq!(
            CachedObject::from_json(r#"{"metadata":{}}"#, "v1", "Pod", Transform::default()),
            Err(ObjectError::NoName)
        );
        assert!(matches!(
            CachedObject::from_json("[1]", "v1", "Pod", Transform::default()),
            Err(ObjectError::Json(_))
        ));
    }
}
