//! A plugin's read-only window on the shared cache: only the kinds (and the
//! namespaces and selectors) it subscribed to, in the clusters it runs on,
//! and the indexes it declared. Every look-up names its cluster (the call's,
//! see [`crate::capability::CallCluster`]); `None` is the default one.

use super::index::IndexDefinition;
use crate::cluster::{ClusterName, DEFAULT_CLUSTER};
use crate::gvk::Gvk;
use crate::selector::LabelSelector;
use crate::store::{CachedObject, ObjectReader};
use std::sync::{Arc, RwLock};

/// Why a look-up was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LookupError {
    /// The plugin has no subscription to this kind in the cluster looked
    /// in.
    #[error("not subscribed to {0}")]
    NotSubscribed(Gvk),
    /// The label selector does not parse.
    #[error("invalid label selector: {0}")]
    InvalidSelector(String),
    /// The manifest declares no index of this name.
    #[error("the manifest declares no index named {0:?}")]
    UnknownIndex(String),
}

/// The readers a plugin may use, one per subscription. Set when the plugin's
/// subscriptions are bound to informers; empty (every look-up refused) before.
#[derive(Default)]
pub struct CacheScope {
    readers: RwLock<Bound>,
    indexes: Vec<IndexDefinition>,
}

/// The readers bound, and the default cluster's name.
#[derive(Default)]
struct Bound {
    readers: Vec<Reader>,
    default_cluster: Option<ClusterName>,
}

/// One subscription's reader: its cluster (`None`: the default), its kind.
type Reader = (Option<ClusterName>, Gvk, Arc<dyn ObjectReader>);

impl std::fmt::Debug for CacheScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kinds: Vec<Gvk> = self
            .readers
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .readers
            .iter()
            .map(|(_, k, _)| k.clone())
            .collect();
        f.debug_struct("CacheScope").field("kinds", &kinds).finish()
    }
}

impl CacheScope {
    /// A scope with no readers yet, looking up by `indexes`.
    pub fn new(indexes: Vec<IndexDefinition>) -> Self {
        CacheScope {
            readers: RwLock::default(),
            indexes,
        }
    }

    /// Replaces the readers (one per subscription) with readers of the
    /// default cluster, and has each keep the indexes declared on its kind.
    pub fn bind(&self, readers: Vec<(Gvk, Arc<dyn ObjectReader>)>) {
        self.bind_clusters(
            None,
            readers
                .into_iter()
                .map(|(kind, reader)| (None, kind, reader))
                .collect(),
        );
    }

    /// Replaces the readers (one per subscription and cluster), the default
    /// cluster named `default_cluster` (`None`: [`DEFAULT_CLUSTER`]), and
    /// has each keep the indexes declared on its kind.
    pub fn bind_clusters(&self, default_cluster: Option<ClusterName>, readers: Vec<Reader>) {
        for (_, kind, reader) in &readers {
            for index in self.indexes.iter().filter(|i| &i.kind == kind) {
                reader.add_index(&index.by);
            }
        }
        *self.readers.write().unwrap_or_else(|e| e.into_inner()) = Bound {
            readers,
            default_cluster,
        };
    }

    /// The default cluster's name.
    pub fn default_cluster(&self) -> String {
        let bound = self.readers.read().unwrap_or_else(|e| e.into_inner());
        bound
            .default_cluster
            .as_ref()
            .map_or(DEFAULT_CLUSTER, ClusterName::as_str)
            .to_owned()
    }

    /// Whether the plugin's subscriptions are bound in more than one
    /// cluster.
    pub fn spans_clusters(&self) -> bool {
        let bound = self.readers.read().unwrap_or_else(|e| e.into_inner());
        let mut clusters = bound.readers.iter().map(|(c, _, _)| c);
        clusters
            .next()
            .is_some_and(|first| clusters.any(|other| other != first))
    }

    /// The name of `cluster` (`None`: the default one's).
    pub fn cluster_name(&self, cluster: Option<&ClusterName>) -> String {
        match cluster {
            Some(name) => name.as_str().to_owned(),
            None => self.default_cluster(),
        }
    }

    /// The clusters the plugin's subscriptions are bound in (`None`: the
    /// default one), sorted, each once.
    pub fn clusters(&self) -> Vec<Option<ClusterName>> {
        let bound = self.readers.read().unwrap_or_else(|e| e.into_inner());
        let mut clusters: Vec<_> = bound.readers.iter().map(|(c, _, _)| c.clone()).collect();
        clusters.sort();
        clusters.dedup();
        clusters
    }

    fn readers_for(
        &self,
        cluster: Option<&ClusterName>,
        kind: &Gvk,
    ) -> Result<Vec<Arc<dyn ObjectReader>>, LookupError> {
        let bound = self.readers.read().unwrap_or_else(|e| e.into_inner());
        let matching: Vec<_> = bound
            .readers
            .iter()
            .filter(|(c, k, _)| k == kind && c.as_ref() == cluster)
            .map(|(_, _, r)| r.clone())
            .collect();
        if matching.is_empty() {
            return Err(LookupError::NotSubscribed(kind.clone()));
        }
        Ok(matching)
    }

    /// Looks up one object by namespace and name, in `cluster`.
    pub fn get(
        &self,
        cluster: Option<&ClusterName>,
        kind: &Gvk,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<Arc<CachedObject>>, LookupError> {
        Ok(self
            .readers_for(cluster, kind)?
            .iter()
            .find_map(|reader| reader.get(namespace, name)))
    }

    /// Lists objects of a kind in `cluster`, optionally in one namespace and
    /// matching a label selector. An object visible through two
    /// subscriptions is returned once.
    pub fn list(
        &self,
        cluster: Option<&ClusterName>,
        kind: &Gvk,
        namespace: Option<&str>,
        selector: Option<&str>,
    ) -> Result<Vec<Arc<CachedObject>>, LookupError> {
        let selector = match selector.filter(|s| !s.trim().is_empty()) {
            Some(text) => LabelSelector::parse(text)
                .map_err(|e| LookupError::InvalidSelector(e.to_string()))?,
            None => LabelSelector::default(),
        };
        let readers = self.readers_for(cluster, kind)?;
        let mut objects = Vec::new();
        for reader in &readers {
            objects.extend(reader.list(namespace, &selector));
        }
        if readers.len() > 1 {
            objects.sort_by_key(Arc::as_ptr);
            objects.dedup_by(|a, b| Arc::ptr_eq(a, b));
        }
        Ok(objects)
    }

    /// The objects the declared index `name` files under `value`, in
    /// `namespace` if given, sorted by key (`namespace/name`), as each
    /// store's index keeps them. An object visible through two
    /// subscriptions is returned once.
    pub fn by_index(
        &self,
        cluster: Option<&ClusterName>,
        name: &str,
        value: &str,
        namespace: Option<&str>,
    ) -> Result<Vec<Arc<CachedObject>>, LookupError> {
        let index = self
            .indexes
            .iter()
            .find(|i| i.name == name)
            .ok_or_else(|| LookupError::UnknownIndex(name.to_owned()))?;
        let readers = self.readers_for(cluster, &index.kind)?;
        let mut objects = Vec::new();
        for reader in &readers {
            objects.extend(
                reader
                    .by_index(&index.by, value, namespace)
                    .unwrap_or_default(),
            );
        }
        if readers.len() > 1 {
            objects.sort_by_cached_key(|object| object.key());
            objects.dedup_by(|a, b| Arc::ptr_eq(a, b));
        }
        Ok(objects)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{IndexKey, Store, Transform};

    fn declared(name: &str, by: IndexKey) -> IndexDefinition {
        IndexDefinition {
            name: name.into(),
            kind: Gvk::new("apps", "v1", "ReplicaSet"),
            by,
        }
    }

    #[test]
    fn plugins_declaring_the_same_index_share_the_one_their_informer_keeps() {
        let store = Arc::new(Store::new());
        store.upsert(Arc::new(
            CachedObject::from_json(
                r#"{"metadata":{"name":"web-1","namespace":"shop","ownerReferences":[{"uid":"u-1"}]}}"#,
                "apps/v1",
                "ReplicaSet",
                Transform::default(),
            )
            .unwrap(),
        ));
        let kind = Gvk::new("apps", "v1", "ReplicaSet");
        let first = CacheScope::new(vec![declared("owner", IndexKey::Owner)]);
        let second = CacheScope::new(vec![
            declared("by-owner", IndexKey::Owner),
            declared("by-app", IndexKey::label("app").unwrap()),
        ]);
        for scope in [&first, &second] {
            scope.bind(vec![(kind.clone(), store.clone() as Arc<dyn ObjectReader>)]);
        }
        assert_eq!(
            store.index_count(),
            2,
            "one owner index for both, one by label"
        );
        let keys = |scope: &CacheScope, name: &str| {
            let found = scope.by_index(None, name, "u-1", Some("shop")).unwrap();
            found.iter().map(|o| o.key()).collect::<Vec<_>>()
        };
        assert_eq!(keys(&first, "owner"), ["shop/web-1"]);
        assert_eq!(keys(&second, "by-owner"), ["shop/web-1"]);
        assert_eq!(
            first.by_index(None, "by-owner", "u-1", None).unwrap_err(),
            LookupError::UnknownIndex("by-owner".into()),
            "each plugin looks up only by the names it declared"
        );
    }
}
