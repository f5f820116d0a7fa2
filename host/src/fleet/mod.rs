//! The clusters a daemon watches while it runs. Those `clusters` names are
//! there from the start, their kubeconfig files followed
//! ([`ConfiguredClusters`]); a provider adds and removes others at run
//! time: [`ClusterDirectory`], a directory of kubeconfig files followed as
//! the plugin directory is, and [`ClusterSecrets`].
//!
//! Adding a cluster hands its clients to the informers and to the plugins'
//! API access, then has the daemon subscribe every plugin that runs there
//! (`Daemon::refresh_clusters`): each gets that cluster's objects as a late
//! join, while its other clusters go on. Removing one does the reverse: the
//! plugins' listeners there leave, what they held is dropped, the
//! informers stop, and nothing more is delivered from it; a plugin learns
//! it from `cluster::names`, which no longer lists it. Replacing one (its
//! kubeconfig rotated) is a removal and an addition: its informers list
//! again with the new credentials.

mod configured;
mod directory;
mod following;
mod secrets;
mod tracker;

pub use configured::ConfiguredClusters;
pub use directory::{ClusterDirectory, DirectoryError};
pub use secrets::{ClusterSecrets, ClusterSecretsConfig};

use crate::capability::kube::ClusterApi;
use crate::cluster::{ClusterLabels, ClusterName};
use crate::daemon::Daemon;
use crate::informer::Informers;
use crate::source::Connection;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// The clusters added at run time, and what they are added to.
pub struct Fleet {
    informers: Arc<Informers>,
    api: ClusterApi,
    daemon: Arc<Daemon>,
    /// The connections added here (an embedded server stops when its
    /// connection is dropped), by name.
    held: Mutex<BTreeMap<ClusterName, Connection>>,
}

impl std::fmt::Debug for Fleet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fleet")
            .field("clusters", &self.informers.cluster_names())
            .finish()
    }
}

impl Fleet {
    /// Adds clusters to `informers` and `api`, and has `daemon` follow.
    pub fn new(informers: Arc<Informers>, api: ClusterApi, daemon: Arc<Daemon>) -> Self {
        Fleet {
            informers,
            api,
            daemon,
            held: Mutex::default(),
        }
    }

    /// Adds the cluster `name`, labelled `labels`, reached through
    /// `connection`, replacing one of that name (whose informers then list
    /// again); returns once the plugins that run there have joined it.
    pub async fn add(&self, name: ClusterName, connection: Connection, labels: ClusterLabels) {
        if self.informers.has_cluster(Some(&name)) {
            self.remove(&name).await;
        }
        self.informers.set_labels(Some(name.clone()), labels);
        tracing::info!(cluster = %name, "cluster added: {}", connection.description);
        self.api
            .add_cluster(name.clone(), connection.writer.clone());
        self.informers
            .add_cluster(name.clone(), connection.client.clone());
        self.held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(name, connection);
        self.daemon.refresh_clusters().await;
    }

    /// Gives the cluster `name` the labels `labels`; when they changed, the
    /// plugins whose `clusters` select by labels join or leave it.
    pub async fn relabel(&self, name: &ClusterName, labels: ClusterLabels) {
        if self.informers.set_labels(Some(name.clone()), labels) {
            tracing::info!(cluster = %name, "cluster labels changed");
            self.daemon.refresh_clusters().await;
        }
    }

    /// Removes the cluster `name`; returns once the plugins have left it.
    /// False if there was none.
    pub async fn remove(&self, name: &ClusterName) -> bool {
        if !self.informers.remove_cluster(name) {
            return false;
        }
        self.api.remove_cluster(name);
        self.daemon.refresh_clusters().await;
        let connection = self
            .held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(name);
        drop(connection);
        tracing::info!(cluster = %name, "cluster removed");
        true
    }

    /// The clusters beside the default one, whether configured or added.
    pub fn names(&self) -> Vec<ClusterName> {
        self.informers.cluster_names()
    }
}
