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
use super::following::{Following, Pass};
use super::tracker::{Found, Tracker};
use crate::cluster::{ClusterLabels, ClusterName};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The largest kubeconfig file read.
const MAX_FILE_BYTES: u64 = 1 << 20;

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
#[derive(Debug)]
pub struct ClusterDirectory {
    following: Following,
}

/// One read of the directory, brought into the fleet.
struct DirectoryPass {
    dir: PathBuf,
    tracker: Tracker,
}

impl Pass for DirectoryPass {
    async fn pass(&mut self) {
        self.tracker.apply(read_dir(&self.dir)).await;
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
        let mut pass = DirectoryPass {
            tracker: Tracker::new(fleet, reserved, "clusterDirectory"),
            dir: dir.clone(),
        };
        pass.pass().await;
        let following = Following::start([dir.as_path()], rescan, pass)
            .map_err(|(_, source)| DirectoryError::Watch { dir, source })?;
        Ok(ClusterDirectory { following })
    }

    /// Stops following the directory; the clusters it added stay.
    pub async fn stop(self) {
        self.following.stop().await;
    }
}

/// What one read of `dir` finds: a cluster per usable file, a problem per
/// other file (or for the directory, when it cannot be read).
fn read_dir(dir: &Path) -> Vec<Found> {
    let files = match files_of(dir) {
        Ok(files) => files,
        Err(reason) => {
            return vec![Found::Problem {
                origin: dir.display().to_string(),
                name: None,
                problem: format!("{}: {reason}", dir.display()),
            }];
        }
    };
    files.iter().map(|path| read_file(path)).collect()
}

/// One file: the cluster its name names, with its text.
fn read_file(path: &Path) -> Found {
    let origin = path.display().to_string();
    let file_name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let stem = file_name.split('.').next().unwrap_or_default();
    let name = match ClusterName::parse("cluster name", stem) {
        Ok(name) => name,
        Err(reason) => {
            return Found::Problem {
                problem: format!(
                    "{origin}: the file's name up to its first dot names the cluster: {reason}"
                ),
                origin,
                name: None,
            };
        }
    };
    Found::named(name, origin, read_small(path), ClusterLabels::new())
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
pub(super) fn read_small(path: &Path) -> Result<String, String> {
    let size = std::fs::metadata(path).map_err(|e| e.to_string())?.len();
    if size > MAX_FILE_BYTES {
        return Err(format!(
            "{size} bytes, over the {MAX_FILE_BYTES}-byte limit of a kubeconfig"
        ));
    }
    std::fs::read_to_string(path).map_err(|e| e.to_string())
}
