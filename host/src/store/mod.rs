//! The shared cache of one informer: objects by key, each held once as
//! [`Arc<CachedObject>`] and shared with every notification that carries it.

mod object;

pub use object::{CachedObject, ObjectError, Transform, object_key};

use crate::plugin::ObjectReader;
use crate::selector::LabelSelector;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

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
        let mut inner = self.write();
        inner.heap_bytes += object.heap_bytes();
        let previous = inner.objects.insert(object.key().into_boxed_str(), object);
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
        }
        removed
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
