//! The configuration's own clusters, followed: each `clusters[]` entry of
//! kind `kubeconfig` is read again when its file changes (credentials
//! rotated, a Secret's mounted copy swapped, the server moved), and its
//! cluster replaced through the fleet, so its informers list again with
//! the new credentials. A file that turns bad (unreadable, not a
//! kubeconfig, its context gone) is an error naming the cluster, the file
//! and the cause, logged once per content, and the cluster keeps its
//! previous connection. A cluster left out at start because its file did
//! not work is added once the file is rewritten to one that does.

use super::Fleet;
use super::directory::read_small;
use super::following::{Following, Pass};
use crate::cluster::{ClusterLabels, ClusterName};
use crate::source::{SourceConfig, SourceKind, connect_kubeconfig};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// One configured cluster's kubeconfig file, as last read.
#[derive(Clone)]
struct Followed {
    name: ClusterName,
    path: PathBuf,
    context: Option<String>,
    /// Its labels, as configured.
    labels: ClusterLabels,
    /// The sha256 of the content last tried (in use if it worked): a file
    /// is acted on only when its content changes.
    tried: Option<String>,
    /// The last problem logged about it.
    reported: Option<String>,
}

/// Every configured cluster's file, read again.
#[derive(Clone)]
struct FilesPass {
    files: Vec<Followed>,
    fleet: Arc<Fleet>,
}

impl Pass for FilesPass {
    async fn pass(&mut self) {
        for file in &mut self.files {
            file.read_again(&self.fleet).await;
        }
    }
}

/// The configured clusters' kubeconfig files, followed.
#[derive(Debug)]
pub struct ConfiguredClusters {
    following: Following,
}

impl ConfiguredClusters {
    /// Follows the kubeconfig files of `clusters` (the configuration's
    /// `clusters[]`; entries of other kinds are passed over), taking what
    /// each holds now as what is in use, on a task of its own that reads
    /// them again after every change in their directories and every
    /// `rescan`. `None` when no entry has a kubeconfig file. When their
    /// directories cannot be watched, that is logged and the files are
    /// read at every `rescan` only.
    pub fn start(
        clusters: &[SourceConfig],
        fleet: Arc<Fleet>,
        rescan: Duration,
    ) -> Option<ConfiguredClusters> {
        let files: Vec<Followed> = clusters
            .iter()
            .filter(|cluster| cluster.kind == SourceKind::Kubeconfig)
            .filter_map(|cluster| {
                let path = cluster.kubeconfig.clone()?;
                Some(Followed {
                    name: cluster.name.clone()?,
                    tried: read_small(&path)
                        .ok()
                        .map(|text| crate::plugin::digest(text.as_bytes())),
                    path,
                    context: cluster.context.clone(),
                    labels: cluster.labels.clone(),
                    reported: None,
                })
            })
            .collect();
        if files.is_empty() {
            return None;
        }
        let dirs: BTreeSet<&Path> = files.iter().filter_map(|f| f.path.parent()).collect();
        let dirs: Vec<PathBuf> = dirs.into_iter().map(Path::to_owned).collect();
        let pass = FilesPass { files, fleet };
        let following = Following::start(dirs.iter().map(PathBuf::as_path), rescan, pass.clone())
            .or_else(|(dir, error)| {
                tracing::error!(
                    "clusters[]: cannot watch {} for rotated kubeconfigs ({error}); the files \
                     are read again every {}s",
                    dir.display(),
                    rescan.as_secs()
                );
                Following::start(std::iter::empty(), rescan, pass)
            });
        let following = match following {
            Ok(following) => following,
            Err((_, error)) => {
                tracing::error!("clusters[]: kubeconfig files not followed: {error}");
                return None;
            }
        };
        Some(ConfiguredClusters { following })
    }

    /// Stops following the files; the clusters stay.
    pub async fn stop(self) {
        self.following.stop().await;
    }
}

impl Followed {
    /// Reads the file; new content replaces the cluster's connection, or,
    /// when it does not work, is reported and leaves the cluster as it is.
    async fn read_again(&mut self, fleet: &Fleet) {
        let origin = self.path.display().to_string();
        let text = match read_small(&self.path) {
            Ok(text) => text,
            Err(reason) => return self.report(format!("{origin}: {reason}")),
        };
        let digest = crate::plugin::digest(text.as_bytes());
        if self.tried.as_ref() == Some(&digest) {
            return;
        }
        self.tried = Some(digest);
        match connect_kubeconfig(&text, self.context.as_deref(), &origin).await {
            Ok(connection) => {
                self.reported = None;
                fleet
                    .add(self.name.clone(), connection, self.labels.clone())
                    .await;
            }
            Err(error) => self.report(error.to_string()),
        }
    }

    /// Logs `problem` unless it was the last one logged.
    fn report(&mut self, problem: String) {
        let message = format!(
            "clusters[] {}: {problem}; its previous connection, if any, stays in use",
            self.name
        );
        if self.reported.as_ref() != Some(&message) {
            tracing::error!(cluster = %self.name, "{message}");
            self.reported = Some(message);
        }
    }
}
