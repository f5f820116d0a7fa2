//! Shares informers between subscriptions: one per [`InformerKey`], started
//! on first use and stopped when its last subscription leaves. A key names
//! its cluster; each cluster has its own client and discovery, so a cluster
//! that is slow, unreachable or forbidding holds back only its own
//! informers (each backs off on its own).

use super::SharedInformer;
use super::reflector::ReflectorConfig;
use super::resource::InformerKey;
use crate::cluster::{ClusterLabels, ClusterName, DEFAULT_CLUSTER};
use crate::discovery::{ResolveError, Resolver};
use crate::subscription::Subscription;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, RwLock};

struct Entry {
    informer: Arc<SharedInformer>,
    users: usize,
}

/// One cluster's client and its discovery.
struct Connected {
    client: kube::Client,
    resolver: Resolver,
}

impl Connected {
    fn new(client: kube::Client) -> Self {
        Connected {
            resolver: Resolver::new(client.clone()),
            client,
        }
    }
}

/// A subscription names a cluster the daemon does not watch.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no cluster named {0:?} is configured (clusters[].name)")]
pub struct UnknownCluster(pub ClusterName);

/// Every running informer of the process.
pub struct Informers {
    /// The default cluster.
    home: Connected,
    /// Its name, when not [`DEFAULT_CLUSTER`].
    home_name: Option<ClusterName>,
    /// The other clusters, by name.
    others: RwLock<BTreeMap<ClusterName, Arc<Connected>>>,
    /// Each cluster's labels (`None`: the default one's); none when absent.
    labels: RwLock<BTreeMap<Option<ClusterName>, ClusterLabels>>,
    config: ReflectorConfig,
    running: Mutex<HashMap<InformerKey, Entry>>,
}

impl std::fmt::Debug for Informers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Informers")
            .field("running", &self.all().len())
            .finish()
    }
}

impl Informers {
    /// A registry creating informers with `client` and `config`.
    /// A registry of the default cluster, creating informers with `client`
    /// and `config`.
    pub fn new(client: kube::Client, config: ReflectorConfig) -> Self {
        Informers {
            home: Connected::new(client),
            home_name: None,
            others: RwLock::default(),
            labels: RwLock::default(),
            config,
            running: Mutex::new(HashMap::new()),
        }
    }

    /// The same registry, its default cluster named `name`.
    pub fn with_default_name(self, name: ClusterName) -> Self {
        Informers {
            home_name: Some(name),
            ..self
        }
    }

    /// The default cluster's name, when given (`None`: [`DEFAULT_CLUSTER`]).
    pub fn default_cluster(&self) -> Option<&ClusterName> {
        self.home_name.as_ref()
    }

    /// The default cluster's name.
    pub fn default_cluster_name(&self) -> String {
        self.home_name
            .as_ref()
            .map_or(DEFAULT_CLUSTER, ClusterName::as_str)
            .to_owned()
    }

    /// Adds (or replaces the client of) the cluster `name`.
    pub fn add_cluster(&self, name: ClusterName, client: kube::Client) {
        self.others
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(name, Arc::new(Connected::new(client)));
    }

    /// Sets the labels of `cluster` (`None`: the default one); true when
    /// they changed.
    pub fn set_labels(&self, cluster: Option<ClusterName>, labels: ClusterLabels) -> bool {
        let mut all = self.labels.write().unwrap_or_else(|e| e.into_inner());
        if labels.is_empty() {
            return all.remove(&cluster).is_some();
        }
        all.insert(cluster, labels.clone()).as_ref() != Some(&labels)
    }

    /// The labels of `cluster` (`None`: the default one).
    pub fn labels(&self, cluster: Option<&ClusterName>) -> ClusterLabels {
        self.labels
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&cluster.cloned())
            .cloned()
            .unwrap_or_default()
    }

    /// Forgets the cluster `name`: no informer starts there from now on.
    /// Those running stop as their users release them (the daemon's
    /// `refresh_clusters`). True if it was there.
    pub fn remove_cluster(&self, name: &ClusterName) -> bool {
        self.labels
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&Some(name.clone()));
        self.others
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(name)
            .is_some()
    }

    /// The clusters beside the default one.
    pub fn cluster_names(&self) -> Vec<ClusterName> {
        self.others
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .keys()
            .cloned()
            .collect()
    }

    /// Whether the cluster `name` is configured (`None`: the default, always).
    pub fn has_cluster(&self, name: Option<&ClusterName>) -> bool {
        name.is_none_or(|name| {
            self.others
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .contains_key(name)
        })
    }

    /// Resolves a subscription's kind in `cluster` (`None`: the default)
    /// and returns its informer key.
    pub async fn key_for(
        &self,
        subscription: &Subscription,
        cluster: Option<&ClusterName>,
    ) -> Result<InformerKey, ResolveError> {
        let resource = match cluster {
            None => self.home.resolver.resolve(&subscription.kind).await?,
            Some(name) => {
                let connected =
                    self.connected(name)
                        .map_err(|unknown| ResolveError::Discovery {
                            gvk: subscription.kind.clone(),
                            reason: unknown.to_string(),
                        })?;
                connected.resolver.resolve(&subscription.kind).await?
            }
        };
        Ok(InformerKey::for_subscription(resource, subscription).in_cluster(cluster.cloned()))
    }

    fn connected(&self, name: &ClusterName) -> Result<Arc<Connected>, UnknownCluster> {
        self.others
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
            .cloned()
            .ok_or_else(|| UnknownCluster(name.clone()))
    }

    /// The informer for `key`, started if needed; counts one more user.
    /// Must be called within a tokio runtime. A key whose cluster is not
    /// configured is refused (the daemon resolves every key first, through
    /// [`key_for`](Self::key_for), which refuses it too).
    pub fn acquire(&self, key: &InformerKey) -> Result<Arc<SharedInformer>, UnknownCluster> {
        let client = match &key.cluster {
            None => self.home.client.clone(),
            Some(name) => self.connected(name)?.client.clone(),
        };
        let mut running = self.lock();
        let entry = running.entry(key.clone()).or_insert_with(|| Entry {
            informer: Arc::new(SharedInformer::start(client, key.clone(), self.config)),
            users: 0,
        });
        entry.users += 1;
        Ok(entry.informer.clone())
    }

    /// Counts one user less; the informer stops when none is left.
    pub fn release(&self, key: &InformerKey) {
        let mut running = self.lock();
        if let Some(entry) = running.get_mut(key) {
            entry.users -= 1;
            if entry.users == 0 {
                running.remove(key);
            }
        }
    }

    /// Every running informer.
    pub fn all(&self) -> Vec<Arc<SharedInformer>> {
        self.lock().values().map(|e| e.informer.clone()).collect()
    }

    /// True when every running informer has synced.
    pub fn all_synced(&self) -> bool {
        self.lock().values().all(|e| e.informer.has_synced())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<InformerKey, Entry>> {
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }
}
