//! The directory provider: a directory of kubeconfig files, one cluster
//! each, followed while the daemon runs. A file's name up to its first dot
//! is the cluster's name (`west.kubeconfig`, `west.yaml`: cluster `west`),
//! and its current context is the one used. A file added adds its cluster,
//! a file removed removes it, a file whose content changes (credentials
//! rotated) replaces it. Every file that cannot be used (a name that is not
//! a DNS label, one the configuration already names, two files for one
//! cluster, a file that is not a kubeconfig or names no usable context) is
//! an error in the log naming the file, the cluster and the cause, logged
//! once per content; the other clusters keep running, and a cluster whose
//! file turns bad keeps its previous connection, so nothing cached is lost.

use super::Fleet;
use crate::cluster::ClusterName;
use notify::Watcher as _;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};

/// The largest kubeconfig file read.
const MAX_FILE_BYTES: u64 = 1 << 20;

/// How long changes settle before the directory is read again.
const SETTLE: Duration = Duration::from_millis(100);

/// The directory could not be followed.
#[derive(Debug, thiserror::Error)]
pub enum DirectoryError {
    /// It could not be created or read.
    #[error("clusterDirectory {}: {reason}", dir.display())]
    Read {
        /// The directory.
        dir: PathBuf,
        /// Why.
        #[source]
        reason: std::io::Error,
    },
    /// It could not be watched.
    #[error("clusterDirectory {}: {source}", dir.display())]
    Watch {
        /// The directory.
        dir: PathBuf,
        /// Why.
        source: notify::Error,
    },
}

/// A followed directory of kubeconfig files.
pub struct ClusterDirectory {
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
    _watcher: notify::RecommendedWatcher,
}

impl std::fmt::Debug for ClusterDirectory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterDirectory").finish_non_exhaustive()
    }
}

impl ClusterDirectory {
    /// Adds the cluster of every usable file of `dir` to `fleet` (creating
    /// the directory if it does not exist), then follows it on a task of its
    /// own, reading it again after every change and every `rescan`. Names
    /// in `reserved` (the configuration's clusters) are refused.
    pub async fn start(
        dir: PathBuf,
        fleet: Arc<Fleet>,
        reserved: BTreeSet<String>,
        rescan: Duration,
    ) -> Result<Self, DirectoryError> {
        std::fs::create_dir_all(&dir).map_err(|reason| DirectoryError::Read {
            dir: dir.clone(),
            reason,
        })?;
        let (changed, mut changes) = mpsc::unbounded_channel();
        let mut watcher = notify::recommended_watcher(move |_| {
            let _ = changed.send(());
        })
        .map_err(|source| DirectoryError::Watch {
            dir: dir.clone(),
            source,
        })?;
        watcher
            .watch(&dir, notify::RecursiveMode::NonRecursive)
            .map_err(|source| DirectoryError::Watch {
                dir: dir.clone(),
                source,
            })?;
        let mut follower = Follower {
            dir,
            fleet,
            reserved,
            known: BTreeMap::new(),
            reported: BTreeMap::new(),
        };
        follower.scan().await;
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
                follower.scan().await;
            }
        });
        Ok(ClusterDirectory {
            stop,
            task,
            _watcher: watcher,
        })
    }

    /// Stops following the directory; the clusters it added stay.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

/// The directory's state between two reads.
struct Follower {
    dir: PathBuf,
    fleet: Arc<Fleet>,
    reserved: BTreeSet<String>,
    /// The clusters added from files, with the sha256 of the content used.
    known: BTreeMap<ClusterName, String>,
    /// The last problem logged for each file, so it is logged once.
    reported: BTreeMap<PathBuf, String>,
}

impl Follower {
    /// Reads the directory and brings the fleet in line with it.
    async fn scan(&mut self) {
        let files = match files_of(&self.dir) {
            Ok(files) => files,
            Err(reason) => {
                let dir = self.dir.clone();
                self.report(
                    &dir,
                    format!("clusterDirectory {}: {reason}", dir.display()),
                );
                return;
            }
        };
        let mut seen: BTreeMap<ClusterName, PathBuf> = BTreeMap::new();
        let mut problems = BTreeSet::new();
        for path in files {
            match self.file(&path, &seen).await {
                Ok(Some(name)) => {
                    seen.insert(name, path.clone());
                    self.reported.remove(&path);
                }
                Ok(None) => {
                    self.reported.remove(&path);
                }
                Err((name, problem)) => {
                    if let Some(name) = name {
                        // A bad file keeps its cluster's previous connection.
                        seen.entry(name).or_insert_with(|| path.clone());
                    }
                    problems.insert(path.clone());
                    self.report(&path, problem);
                }
            }
        }
        self.reported
            .retain(|path, _| problems.contains(path) || path == &self.dir);
        let gone: Vec<ClusterName> = self
            .known
            .keys()
            .filter(|name| !seen.contains_key(*name))
            .cloned()
            .collect();
        for name in gone {
            self.known.remove(&name);
            self.fleet.remove(&name).await;
        }
    }

    /// One file: the cluster it names, once added (or already there);
    /// `None` for a file to pass over; or the cluster it names, if any, and
    /// what is wrong with it.
    async fn file(
        &mut self,
        path: &Path,
        seen: &BTreeMap<ClusterName, PathBuf>,
    ) -> Result<Option<ClusterName>, (Option<ClusterName>, String)> {
        let shown = path.display();
        let file_name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        let stem = file_name.split('.').next().unwrap_or_default();
        let name = ClusterName::parse("cluster name", stem).map_err(|reason| {
            (
                None,
                format!(
                    "clusterDirectory: {shown}: the file's name up to its first dot names the \
                     cluster: {reason}"
                ),
            )
        })?;
        if self.reserved.contains(stem) {
            return Err((
                None,
                format!(
                    "clusterDirectory: {shown}: cluster {stem} is named by the configuration \
                     already (source.name or clusters[].name): each cluster once"
                ),
            ));
        }
        if let Some(first) = seen.get(&name) {
            return Err((
                None,
                format!(
                    "clusterDirectory: {shown}: cluster {stem} has a file already ({}): each \
                     cluster once",
                    first.display()
                ),
            ));
        }
        let text = read_small(path).map_err(|reason| {
            (
                Some(name.clone()),
                format!(
                    "clusterDirectory: cluster {stem}: {shown}: {reason}{}",
                    self.keeps(&name)
                ),
            )
        })?;
        let digest = crate::plugin::digest(text.as_bytes());
        if self.known.get(&name) == Some(&digest) {
            return Ok(Some(name));
        }
        match crate::source::connect_kubeconfig(&text, &shown.to_string()).await {
            Ok(connection) => {
                self.fleet.add(name.clone(), connection).await;
                self.known.insert(name.clone(), digest);
                Ok(Some(name))
            }
            Err(error) => Err((
                Some(name.clone()),
                format!(
                    "clusterDirectory: cluster {stem}: {error}{}",
                    self.keeps(&name)
                ),
            )),
        }
    }

    /// What happens to `name` while its file is bad.
    fn keeps(&self, name: &ClusterName) -> &'static str {
        if self.known.contains_key(name) {
            "; its previous kubeconfig stays in use"
        } else {
            "; the cluster is left out"
        }
    }

    /// Logs `problem` about `path`, unless it was the last one logged.
    fn report(&mut self, path: &Path, problem: String) {
        if self.reported.get(path) != Some(&problem) {
            tracing::error!("{problem}");
            self.reported.insert(path.to_owned(), problem);
        }
    }
}

/// The regular files of `dir` whose names do not start with a dot, sorted.
fn files_of(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let hidden = entry.file_name().to_string_lossy().starts_with('.');
        if !hidden && entry.file_type()?.is_file() {
            files.push(entry.path());
        }
    }
    files.sort();
    Ok(files)
}

/// The text of `path`, refused past [`MAX_FILE_BYTES`].
fn read_small(path: &Path) -> Result<String, String> {
    let size = std::fs::metadata(path).map_err(|e| e.to_string())?.len();
    if size > MAX_FILE_BYTES {
        return Err(format!(
            "{size} bytes, over the {MAX_FILE_BYTES}-byte limit of a kubeconfig"
        ));
    }
    std::fs::read_to_string(path).map_err(|e| e.to_string())
}
