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
use crate::cluster::ClusterName;
use crate::source::{SourceConfig, SourceKind, connect_kubeconfig};
use notify::Watcher as _;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};

/// How long changes settle before the files are read again.
const SETTLE: Duration = Duration::from_millis(100);

/// One configured cluster's kubeconfig file, as last read.
struct Followed {
    name: ClusterName,
    path: PathBuf,
    context: Option<String>,
    /// The sha256 of the content last tried (in use if it worked): a file
    /// is acted on only when its content changes.
    tried: Option<String>,
    /// The last problem logged about it.
    reported: Option<String>,
}

/// The configured clusters' kubeconfig files, followed.
pub struct ConfiguredClusters {
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
    _watcher: notify::RecommendedWatcher,
}

impl std::fmt::Debug for ConfiguredClusters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfiguredClusters").finish_non_exhaustive()
    }
}

impl ConfiguredClusters {
    /// Follows the kubeconfig files of `clusters` (the configuration's
    /// `clusters[]`; entries of other kinds are passed over), taking what
    /// each holds now as what is in use, on a task of its own that reads
    /// them again after every change in their directories and every
    /// `rescan`. `None` when no entry has a kubeconfig file. A directory
    /// that cannot be watched is logged, and its files are read at every
    /// `rescan` only.
    pub fn start(
        clusters: &[SourceConfig],
        fleet: Arc<Fleet>,
        rescan: Duration,
    ) -> Option<ConfiguredClusters> {
        let mut followed: Vec<Followed> = clusters
            .iter()
            .filter(|cluster| cluster.kind == SourceKind::Kubeconfig)
            .filter_map(|cluster| {
                Some(Followed {
                    name: cluster.name.clone()?,
                    path: cluster.kubeconfig.clone()?,
                    context: cluster.context.clone(),
                    tried: None,
                    reported: None,
                })
            })
            .collect();
        if followed.is_empty() {
            return None;
        }
        for file in &mut followed {
            file.tried = read_small(&file.path)
                .ok()
                .map(|text| crate::plugin::digest(text.as_bytes()));
        }
        let (changed, mut changes) = mpsc::unbounded_channel();
        let mut watcher = notify::recommended_watcher(move |_| {
            let _ = changed.send(());
        })
        .ok()?;
        let dirs: BTreeSet<&Path> = followed.iter().filter_map(|f| f.path.parent()).collect();
        for dir in dirs {
            if let Err(error) = watcher.watch(dir, notify::RecursiveMode::NonRecursive) {
                tracing::error!(
                    "clusters[]: cannot watch {} for rotated kubeconfigs ({error}); its files \
                     are read again every {}s",
                    dir.display(),
                    rescan.as_secs()
                );
            }
        }
        let (stop, mut stopped) = watch::channel(false);
        let task = tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = stopped.changed() => return,
                    change = changes.recv() => {
                        if change.is_none() {
                            return;
                        }
                        tokio::time::sleep(SETTLE).await;
                        while changes.try_recv().is_ok() {}
                    }
                    () = tokio::time::sleep(rescan) => {}
                }
                for file in &mut followed {
                    file.read_again(&fleet).await;
                }
            }
        });
        Some(ConfiguredClusters {
            stop,
            task,
            _watcher: watcher,
        })
    }

    /// Stops following the files; the clusters stay.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
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
                fleet.add(self.name.clone(), connection).await;
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
