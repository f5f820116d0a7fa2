//! Secondary indexes of a store (client-go's `Indexer`): each files the
//! cached objects under values computed from them (a label's value, a
//! field's value, the UIDs of their owners), so a look-up by value costs
//! the objects it finds, not a scan of the cache.
//!
//! Indexes are declared by plugins ([`IndexKey`] is what a declaration
//! means, whatever the plugin calls it) and kept by the store of the
//! informer they index: two plugins declaring the same index on the same
//! informer share it. An index is built over the objects already cached
//! when it is first added, then kept up to date by every write to the
//! store, under the store's lock.

use super::object::{CachedObject, value_at};
use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::ops::Bound;

/// What an index files objects under.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IndexKey {
    /// The value of this label; objects without it are not filed.
    Label(Box<str>),
    /// The value at this field path (`spec.nodeName`: member names from the
    /// top of the object); a string, number or boolean is filed as its
    /// text, anything else (or nothing) is not filed.
    Field(Box<[Box<str>]>),
    /// The UID of each owner reference (`metadata.ownerReferences[].uid`).
    Owner,
}

/// Why an index declaration is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IndexKeyError {
    /// The label key is empty.
    #[error("an index by label needs a label key")]
    EmptyLabel,
    /// The field path is empty or has an empty step.
    #[error("field path {0:?} is not member names joined by dots, such as spec.nodeName")]
    BadFieldPath(String),
}

impl IndexKey {
    /// An index by the value of label `key`.
    pub fn label(key: &str) -> Result<Self, IndexKeyError> {
        let key = key.trim();
        if key.is_empty() {
            return Err(IndexKeyError::EmptyLabel);
        }
        Ok(IndexKey::Label(key.into()))
    }

    /// An index by the value at `path`, member names joined by dots
    /// (`spec.nodeName`, `status.phase`).
    pub fn field(path: &str) -> Result<Self, IndexKeyError> {
        let steps: Vec<Box<str>> = path.split('.').map(Box::from).collect();
        if path.is_empty()
            || steps
                .iter()
                .any(|step| step.is_empty() || step.trim() != &**step)
        {
            return Err(IndexKeyError::BadFieldPath(path.to_owned()));
        }
        Ok(IndexKey::Field(steps.into()))
    }

    /// The values `object` is filed under (none: not filed).
    pub fn values(&self, object: &CachedObject) -> Vec<Box<str>> {
        match self {
            IndexKey::Label(key) => object.label(key).map(Box::from).into_iter().collect(),
            IndexKey::Field(path) => value_at(object.json(), path)
                .and_then(|raw| scalar_text(raw.get()))
                .into_iter()
                .collect(),
            IndexKey::Owner => owner_uids(object.json()),
        }
    }
}

impl fmt::Display for IndexKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IndexKey::Label(key) => write!(f, "label {key}"),
            IndexKey::Field(path) => write!(f, "field {}", path.join(".")),
            IndexKey::Owner => f.write_str("owner"),
        }
    }
}

impl serde::Serialize for IndexKey {
    /// As it reads: `label app`, `field spec.nodeName`, `owner`.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// A JSON string, number or boolean as text.
fn scalar_text(raw: &str) -> Option<Box<str>> {
    match serde_json::from_str::<serde_json::Value>(raw).ok()? {
        serde_json::Value::String(text) => Some(text.into()),
        serde_json::Value::Number(number) => Some(number.to_string().into()),
        serde_json::Value::Bool(flag) => Some(flag.to_string().into()),
        _ => None,
    }
}

/// The UIDs in `metadata.ownerReferences`.
fn owner_uids(json: &str) -> Vec<Box<str>> {
    #[derive(serde::Deserialize)]
    struct Owner {
        #[serde(default)]
        uid: String,
    }
    let path: [Box<str>; 2] = ["metadata".into(), "ownerReferences".into()];
    let Some(raw) = value_at(json, &path) else {
        return Vec::new();
    };
    serde_json::from_str::<Vec<Owner>>(raw.get())
        .unwrap_or_default()
        .into_iter()
        .filter(|owner| !owner.uid.is_empty())
        .map(|owner| owner.uid.into_boxed_str())
        .collect()
}

/// One index: object keys by value, and each filed object's values (to
/// unfile it when it changes or goes without computing them again).
#[derive(Debug, Default)]
pub(super) struct Index {
    keys_by_value: HashMap<Box<str>, BTreeSet<Box<str>>>,
    values_by_key: HashMap<Box<str>, Vec<Box<str>>>,
}

impl Index {
    /// Files `object` under `values`, replacing what it was filed under.
    pub(super) fn file(&mut self, key: &str, values: Vec<Box<str>>) {
        self.unfile(key);
        if values.is_empty() {
            return;
        }
        for value in &values {
            self.keys_by_value
                .entry(value.clone())
                .or_default()
                .insert(key.into());
        }
        self.values_by_key.insert(key.into(), values);
    }

    /// Removes `key` from every value it was filed under.
    pub(super) fn unfile(&mut self, key: &str) {
        let Some(values) = self.values_by_key.remove(key) else {
            return;
        };
        for value in values {
            if let Some(keys) = self.keys_by_value.get_mut(&value) {
                keys.remove(key);
                if keys.is_empty() {
                    self.keys_by_value.remove(&value);
                }
            }
        }
    }

    /// The keys filed under `value`, in order; with `namespace`, only the
    /// keys in it (a range of the ordered keys, not a filter).
    pub(super) fn keys<'a>(
        &'a self,
        value: &str,
        namespace: Option<&str>,
    ) -> impl Iterator<Item = &'a str> {
        let prefix = namespace.map(|ns| format!("{ns}/"));
        let keys = self.keys_by_value.get(value);
        let start = prefix.clone().unwrap_or_default();
        keys.into_iter()
            .flat_map(move |keys| {
                keys.range::<str, _>((Bound::Included(&*start), Bound::Unbounded))
            })
            .map(|key| &**key)
            .take_while(move |key| prefix.as_ref().is_none_or(|p| key.starts_with(p.as_str())))
    }

    /// True when nothing is filed.
    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.keys_by_value.is_empty() && self.values_by_key.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Transform;

    fn object(json: serde_json::Value) -> CachedObject {
        CachedObject::from_json(&json.to_string(), "v1", "Pod", Transform::default()).unwrap()
    }

    #[test]
    fn values_come_from_the_label_the_field_or_the_owners() {
        let pod = object(serde_json::json!({
            "metadata": {"name": "web-1", "namespace": "shop", "labels": {"app": "web"},
                         "ownerReferences": [{"kind": "ReplicaSet", "name": "web-5d", "uid": "u-1"},
                                             {"kind": "Thing", "name": "t", "uid": "u-2"}]},
            "spec": {"nodeName": "node-a", "priority": 7, "hostNetwork": true, "containers": []},
        }));
        let values = |key: IndexKey| {
            key.values(&pod)
                .into_iter()
                .map(String::from)
                .collect::<Vec<_>>()
        };
        assert_eq!(values(IndexKey::label("app").unwrap()), ["web"]);
        assert!(values(IndexKey::label("tier").unwrap()).is_empty());
        assert_eq!(
            values(IndexKey::field("spec.nodeName").unwrap()),
            ["node-a"]
        );
        assert_eq!(values(IndexKey::field("spec.priority").unwrap()), ["7"]);
        assert_eq!(
            values(IndexKey::field("spec.hostNetwork").unwrap()),
            ["true"]
        );
        assert!(
            values(IndexKey::field("spec.containers").unwrap()).is_empty(),
            "not a scalar"
        );
        assert!(values(IndexKey::field("spec.missing.deeper").unwrap()).is_empty());
        assert_eq!(values(IndexKey::Owner), ["u-1", "u-2"]);
    }

    #[test]
    fn bad_declarations_say_what_is_wrong() {
        assert_eq!(IndexKey::label(" "), Err(IndexKeyError::EmptyLabel));
        for path in ["", "spec.", ".spec", "spec..nodeName", "spec. nodeName"] {
            assert_eq!(
                IndexKey::field(path),
                Err(IndexKeyError::BadFieldPath(path.into())),
                "{path:?}"
            );
        }
    }

    #[test]
    fn refiling_moves_a_key_and_unfiling_forgets_it() {
        let mut index = Index::default();
        index.file("a/x", vec!["n1".into()]);
        index.file("a/y", vec!["n1".into(), "n2".into()]);
        index.file("b/z", vec!["n1".into()]);
        fn keys(index: &Index, value: &str, namespace: Option<&str>) -> Vec<String> {
            index.keys(value, namespace).map(str::to_owned).collect()
        }
        assert_eq!(keys(&index, "n1", None), ["a/x", "a/y", "b/z"]);
        assert_eq!(keys(&index, "n1", Some("a")), ["a/x", "a/y"]);
        assert_eq!(keys(&index, "n1", Some("b")), ["b/z"]);
        assert!(keys(&index, "n1", Some("c")).is_empty());
        index.file("a/x", vec!["n2".into()]);
        assert_eq!(keys(&index, "n1", None), ["a/y", "b/z"]);
        assert_eq!(keys(&index, "n2", None), ["a/x", "a/y"]);
        index.unfile("b/z");
        index.unfile("a/y");
        index.file("a/x", Vec::new());
        assert!(index.is_empty(), "nothing left behind: {index:?}");
    }
}
