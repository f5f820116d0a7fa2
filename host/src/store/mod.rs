//! The shared cache of one informer: objects by key, each held once as
//! [`Arc<CachedObject>`] and shared with every notification that carries it,
//! and the secondary indexes its plugins declared ([`index`]).

pub mod index;
mod object;

pub use index::{IndexKey, IndexKeyError};
pub use object::{CachedObject, ObjectError, ObjectParts, Transform, object_key};

use index::Index;
use serde::Deserialize;

use crate::selector::LabelSelector;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

/// Read access to the cached objects of one subscription (one informer's store).
pub trait ObjectReader: Send + Sync + 'static {
    /// The JSON of `namespace/name` (or `name` for cluster-scoped kinds), if cached.
    fn get(&self, namespace: Option<&str>, name: &str) -> Option<Arc<CachedObject>>;
    /// The JSON of every cached object in `namespace` (all if `None`) matching `selector`.
    fn list(&self, namespace: Option<&str>, selector: &LabelSelector) -> Vec<Arc<CachedObject>>;
    /// Keeps an index by `index` from now on (shared with every other
    /// reader of the same cache).
    fn add_index(&self, index: &IndexKey);
    /// The cached objects in `namespace` (all if `None`) that the index by
    /// `index` files under `value`; `None` if no such index is kept.
    fn by_index(
        &self,
        index: &IndexKey,
        value: &str,
        namespace: Option<&str>,
    ) -> Option<Vec<Arc<CachedObject>>>;
}

/// `cache`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct CacheConfig {
    /// Drop `metadata.managedFields` before caching.
    pub strip_managed_fields: bool,
    /// Read built-in kinds over protobuf (transcoded to the server's JSON).
    pub protobuf: bool,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            strip_managed_fields: true,
            protobuf: true,
        }
    }
}

/// Objects by key (`namespace/name` or `name`). Written only by its informer
/// (or by replay); read by listers and plugins' cache look-ups.
#[derive(Debug, Default)]
pub struct Store {
    inner: RwLock<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    objects: HashMap<Box<str>, Arc<CachedObject>>,
    heap_bytes: usize,
    indexes: HashMap<IndexKey, Index>,
}

impl Store {
    /// An empty store.
    pub fn new() -> Self {
        Store::default()
    }

    /// The object stored under `key`.
    pub fn get_by_key(&self, key: &str) -> Option<Arc<CachedObject>> {
        self.read().objects.get(key).cloned()
    }

    /// Stores `object`, returning what it replaced.
    pub fn upsert(&self, object: Arc<CachedObject>) -> Option<Arc<CachedObject>> {
        let key = object.key().into_boxed_str();
        let mut inner = self.write();
        for (index_key, index) in &mut inner.indexes {
            index.file(&key, index_key.values(&object));
        }
        inner.heap_bytes += object.heap_bytes();
        let previous = inner.objects.insert(key, object);
        if let Some(previous) = &previous {
            inner.heap_bytes -= previous.heap_bytes();
        }
        previous
    }

    /// Removes the object under `key`, returning it.
    pub fn remove(&self, key: &str) -> Option<Arc<CachedObject>> {
        let mut inner = self.write();
        let removed = inner.objects.remove(key);
        if let Some(removed) = &removed {
            inner.heap_bytes -= removed.heap_bytes();
            for index in inner.indexes.values_mut() {
                index.unfile(key);
            }
        }
        removed
    }

    /// Keeps an index by `index` from now on (built over what is cached
    /// now); nothing if it already does. Indexes are never dropped: their
    /// number is bounded by the declarations of the plugins on this
    /// informer.
    pub fn add_index(&self, index: &IndexKey) {
        let mut inner = self.write();
        if inner.indexes.contains_key(index) {
            return;
        }
        let mut built = Index::default();
        for (key, object) in &inner.objects {
            built.file(key, index.values(object));
        }
        inner.indexes.insert(index.clone(), built);
    }

    /// How many indexes it keeps.
    pub fn index_count(&self) -> usize {
        self.read().indexes.len()
    }

    /// The objects filed under `value` in the index by `index`, in
    /// `namespace` (all if `None`), sorted by key; `None` if the store keeps
    /// no such index. Costs the objects found, not the objects cached.
    pub fn by_index(
        &self,
        index: &IndexKey,
        value: &str,
        namespace: Option<&str>,
    ) -> Option<Vec<Arc<CachedObject>>> {
        let inner = self.read();
        let found = inner.indexes.get(index)?.keys(value, namespace);
        Some(
            found
                .filter_map(|key| inner.objects.get(key))
                .cloned()
                .collect(),
        )
    }

    /// Every object, in no particular order.
    pub fn snapshot(&self) -> Vec<Arc<CachedObject>> {
        self.read().objects.values().cloned().collect()
    }

    /// Every key.
    pub fn keys(&self) -> Vec<String> {
        self.read().objects.keys().map(|k| k.to_string()).collect()
    }

    /// Number of objects.
    pub fn len(&self) -> usize {
        self.read().objects.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes held by the cached objects (JSON plus parsed metadata).
    pub fn heap_bytes(&self) -> usize {
        self.read().heap_bytes
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(|e| e.into_inner())
    }
}

impl ObjectReader for Store {
    fn get(&self, namespace: Option<&str>, name: &str) -> Option<Arc<CachedObject>> {
        self.get_by_key(&object_key(namespace, name))
    }

    fn list(&self, namespace: Option<&str>, selector: &LabelSelector) -> Vec<Arc<CachedObject>> {
        let inner = self.read();
        let mut found: Vec<Arc<CachedObject>> = inner
            .objects
            .values()
            .filter(|object| namespace.is_none() || object.namespace() == namespace)
            .filter(|object| selector.matches_with(|key| object.label(key)))
            .cloned()
            .collect();
        found.sort_by(|a, b| (a.namespace(), a.name()).cmp(&(b.namespace(), b.name())));
        found
    }

    fn add_index(&self, index: &IndexKey) {
        Store::add_index(self, index);
    }

    fn by_index(
        &self,
        index: &IndexKey,
        value: &str,
        namespace: Option<&str>,
    ) -> Option<Vec<Arc<CachedObject>>> {
        Store::by_index(self, index, value, namespace)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(namespace: &str, name: &str, rv: u32, app: &str) -> Arc<CachedObject> {
        let json = format!(
            r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}","namespace":"{namespace}","resourceVersion":"{rv}","labels":{{"app":"{app}"}}}}}}"#
        );
        Arc::new(CachedObject::from_json(&json, "v1", "Pod", Transform::default()).unwrap())
    }

    #[test]
    fn upsert_replace_and_remove_track_bytes() {
        let store = Store::new();
        assert!(store.upsert(object("a", "x", 1, "web")).is_none());
        let bytes_one = store.heap_bytes();
        let previous = store.upsert(object("a", "x", 2, "web")).unwrap();
        assert_eq!(previous.resource_version(), "1");
        assert_eq!(store.len(), 1);
        assert_eq!(store.heap_bytes(), bytes_one);
        assert_eq!(store.remove("a/x").unwrap().resource_version(), "2");
        assert_eq!((store.len(), store.heap_bytes()), (0, 0));
    }

    #[test]
    fn an_index_added_late_covers_what_was_cached_and_follows_every_write() {
        let store = Store::new();
        store.upsert(object("a", "x", 1, "web"));
        store.upsert(object("b", "y", 2, "web"));
        let by_app = IndexKey::label("app").unwrap();
        assert!(
            store.by_index(&by_app, "web", None).is_none(),
            "not kept yet"
        );
        store.add_index(&by_app);
        store.add_index(&by_app);
        let keys = |value: &str, namespace: Option<&str>| {
            let found = store.by_index(&by_app, value, namespace).unwrap();
            found.iter().map(|o| o.key()).collect::<Vec<_>>()
        };
        assert_eq!(keys("web", None), ["a/x", "b/y"]);
        assert_eq!(keys("web", Some("b")), ["b/y"]);
        store.upsert(object("a", "x", 3, "db"));
        store.upsert(object("a", "z", 4, "web"));
        assert_eq!(keys("web", None), ["a/z", "b/y"]);
        assert_eq!(keys("db", None), ["a/x"]);
        store.remove("b/y");
        assert_eq!(keys("web", None), ["a/z"]);
        assert!(keys("gone", None).is_empty());
    }

    #[test]
    fn list_filters_by_namespace_and_labels() {
        let store = Store::new();
        store.upsert(object("a", "x", 1, "web"));
        store.upsert(object("a", "y", 2, "db"));
        store.upsert(object("b", "z", 3, "web"));
        let web = LabelSelector::parse("app=web").unwrap();
        let names =
            |objects: Vec<Arc<CachedObject>>| objects.iter().map(|o| o.key()).collect::<Vec<_>>();
        assert_eq!(names(store.list(None, &web)), ["a/x", "b/z"]);
        assert_eq!(
            names(store.list(Some("a"), &LabelSelector::default())),
            ["a/x", "a/y"]
        );
        assert_eq!(store.get(Some("b"), "z").unwrap().label("app"), Some("web"));
    }
}
