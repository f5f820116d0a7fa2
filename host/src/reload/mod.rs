//! Hot reload: the plugin directory, followed. A new `.wasm` file goes live,
//! a changed one is swapped for the running version, a removed one is
//! unloaded, and a file that does not load leaves what runs untouched.
//!
//! The parts: [`scan`] says what the directory holds; [`settle`] debounces
//! the filesystem events (`notify`, non-recursive) until a file is complete;
//! `reconcile` makes the running plugins match the directory, one pass at a
//! time; [`status`] keeps each file's state for the status endpoint;
//! [`sources`] pulls plugins from OCI registries into a second directory,
//! followed the same way, so a pulled plugin is just another file.
//!
//! # Guarantees
//!
//! - A file is read only once its writer is done (closed it, or renamed it
//!   into place), so a half-written file is never loaded; a burst of writes is
//!   read once, after the last.
//! - A swap is atomic with respect to every informer the plugin listens to
//!   (see [`Daemon::swap`](crate::daemon::Daemon::swap)): each live event goes
//!   to exactly one version, once, and the new version starts from a snapshot
//!   that reflects every event before the swap.
//! - Compilation happens off the async runtime and off every dispatch path;
//!   other plugins keep receiving their events meanwhile.
//! - Besides events, the directory is rescanned periodically, so a lost event
//!   (an overflowed queue) delays a change but never loses it.

pub mod files;
pub mod metrics;
pub mod scan;
pub mod settle;
pub mod sources;
pub mod status;

mod reconcile;
pub mod settings;
mod stats;
pub mod trust;

pub use crate::capability::GrantConfig;
pub use files::{ArtifactCacheConfig, PluginFilesConfig};
pub use settings::{PluginConfig, PluginSettings, Sidecar};
pub use settle::SettleTiming;
pub use sources::{PluginSources, SourcesError, SourcesSetup};
pub use stats::LoaderStats;
pub use status::{
    FileState, FileStatus, FileStatuses, RELOAD_HISTORY, ReloadAction, ReloadRecord, SourceStatus,
};

use crate::capability::ClusterAccess;
use crate::capability::log::LogSink;
use crate::daemon::Daemon;
use crate::plugin::{ArtifactCache, PluginEngine};
use notify::Watcher as _;
use reconcile::{PassScope, Reconciler};
use settle::Settle;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

/// How often the whole directory is rescanned even without events.
pub const DEFAULT_RESCAN_INTERVAL: Duration = Duration::from_secs(30);

/// Everything the reloader needs.
#[derive(Clone)]
pub struct ReloadSetup {
    /// The plugin directory.
    pub dir: PathBuf,
    /// The directory plugin sources are pulled into ([`PluginSources`]),
    /// followed like the plugin directory; `None` without sources.
    pub pulled_dir: Option<PathBuf>,
    /// The operator's settings of each plugin identity, and the host-wide
    /// policies they apply within (limits, allow-list, log rate, reads).
    pub settings: Arc<PluginSettings>,
    /// The engine plugins are compiled with.
    pub engine: PluginEngine,
    /// The compiled-artifact cache, if enabled.
    pub cache: Option<ArtifactCache>,
    /// Where plugins' log lines go.
    pub sink: Arc<dyn LogSink>,
    /// The running plugins.
    pub daemon: Arc<Daemon>,
    /// Each file's status.
    pub files: Arc<FileStatuses>,
    /// Load counters, for metrics.
    pub stats: Arc<LoaderStats>,
    /// Debounce timing.
    pub timing: SettleTiming,
    /// Period of the safety-net rescan.
    pub rescan_interval: Duration,
    /// How plugins' API calls reach the cluster; `None` leaves them
    /// answering `unavailable`.
    pub access: Option<ClusterAccess>,
}

impl ReloadSetup {
    /// The directories followed: the plugin directory, and the pulled one.
    pub fn dirs(&self) -> impl Iterator<Item = &Path> {
        std::iter::once(self.dir.as_path()).chain(self.pulled_dir.as_deref())
    }
}

impl std::fmt::Debug for ReloadSetup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReloadSetup")
            .field("dir", &self.dir)
            .field("pulled_dir", &self.pulled_dir)
            .field("cache", &self.cache)
            .field("timing", &self.timing)
            .finish()
    }
}

/// The plugin directory could not be followed.
#[derive(Debug, thiserror::Error)]
pub enum ReloadError {
    /// The directory is missing or unreadable.
    #[error("plugin directory {dir} (pluginDir): {source}")]
    Directory {
        /// The directory.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The filesystem watch could not be set up.
    #[error("cannot watch the plugin directory {dir} (pluginDir): {source}")]
    Watch {
        /// The directory.
        dir: PathBuf,
        /// Why.
        source: notify::Error,
    },
}

/// A followed plugin directory. Dropping it stops following (the plugins
/// keep running; stopping them is the daemon's business).
pub struct PluginDirectory {
    dir: PathBuf,
    files: Arc<FileStatuses>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for PluginDirectory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginDirectory")
            .field("dir", &self.dir)
            .finish()
    }
}

impl PluginDirectory {
    /// Loads every plugin file of `setup.dir` (creating the directory if it
    /// does not exist), then follows it on a task of its own. Returns once
    /// the initial load is done.
    pub async fn start(setup: ReloadSetup) -> Result<Self, ReloadError> {
        let dir = prepare_dir(&setup.dir)?;
        let pulled_dir = setup.pulled_dir.as_deref().map(prepare_dir).transpose()?;
        let (events_in, events) = mpsc::unbounded_channel();
        let mut watcher = notify::recommended_watcher(move |event| {
            let _ = events_in.send(event);
        })
        .map_err(|source| ReloadError::Watch {
            dir: dir.clone(),
            source,
        })?;
        for followed in std::iter::once(&dir).chain(&pulled_dir) {
            watcher
                .watch(followed, notify::RecursiveMode::NonRecursive)
                .map_err(|source| ReloadError::Watch {
                    dir: followed.clone(),
                    source,
                })?;
        }
        let files = setup.files.clone();
        let (timing, rescan_interval) = (setup.timing, setup.rescan_interval);
        let mut reconciler = Reconciler::new(ReloadSetup {
            dir: dir.clone(),
            pulled_dir,
            ..setup
        });
        // Files modified a moment ago are left for a moment; the initial
        // load is not done until they are in too.
        let patience = Instant::now() + timing.open_writer_quiet;
        loop {
            let deferred = reconciler
                .pass(
                    PassScope {
                        forced: &[],
                        rescan: true,
                    },
                    |_| false,
                )
                .await;
            if !deferred || Instant::now() >= patience {
                break;
            }
            tokio::time::sleep(timing.quiet).await;
        }
        if reconciler.setup().daemon.names().is_empty() {
            tracing::warn!(dir = %dir.display(), "no plugin is running; drop .wasm files into the plugin directory");
        }
        let (stop, stopped) = oneshot::channel();
        let mut settle = Settle::new(timing);
        // Whatever changed during the initial load is looked at again.
        settle.rescan(Instant::now());
        let follower = Follower {
            reconciler,
            events,
            settle,
            rescan_interval,
            _watcher: watcher,
        };
        let task = tokio::spawn(follower.run(stopped));
        tracing::info!(dir = %dir.display(), "following the plugin directory");
        Ok(PluginDirectory {
            dir,
            files,
            stop: Some(stop),
            task: Some(task),
        })
    }

    /// The directory followed (canonical path).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Each file's status.
    pub fn files(&self) -> &Arc<FileStatuses> {
        &self.files
    }

    /// Stops following after the pass under way, if any.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for PluginDirectory {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

/// The directory as a canonical path, created if missing.
fn prepare_dir(dir: &Path) -> Result<PathBuf, ReloadError> {
    let failed = |source| ReloadError::Directory {
        dir: dir.to_owned(),
        source,
    };
    if !dir.exists() {
        std::fs::create_dir_all(dir).map_err(failed)?;
        tracing::warn!(dir = %dir.display(), "the plugin directory did not exist: created it, empty");
    }
    let canonical = dir.canonicalize().map_err(failed)?;
    if !canonical.is_dir() {
        return Err(failed(std::io::Error::other("not a directory")));
    }
    Ok(canonical)
}

/// The task that follows the directory.
struct Follower {
    reconciler: Reconciler,
    events: mpsc::UnboundedReceiver<notify::Result<notify::Event>>,
    settle: Settle,
    rescan_interval: Duration,
    _watcher: notify::RecommendedWatcher,
}

impl Follower {
    async fn run(mut self, mut stop: oneshot::Receiver<()>) {
        let mut next_rescan = Instant::now() + self.rescan_interval;
        loop {
            let wake = self
                .settle
                .next_due()
                .map_or(next_rescan, |due| due.min(next_rescan));
            tokio::select! {
                _ = &mut stop => return,
                event = self.events.recv() => match event {
                    Some(event) => self.receive(event),
                    None => return,
                },
                _ = tokio::time::sleep_until(wake.into()) => {
                    // Events may have queued up while this task waited to
                    // run: take them all in before deciding what is due.
                    while let Ok(event) = self.events.try_recv() {
                        self.receive(event);
                    }
                    let now = Instant::now();
                    let mut due = self.settle.take_due(now);
                    if now >= next_rescan {
                        due.rescan = true;
                        next_rescan = now + self.rescan_interval;
                    }
                    if due.is_empty() {
                        continue;
                    }
                    let settle = &self.settle;
                    let deferred = self
                        .reconciler
                        .pass(
                            PassScope { forced: &due.paths, rescan: due.rescan },
                            |path| settle.is_unsettled(path),
                        )
                        .await;
                    if deferred {
                        self.settle.rescan(Instant::now());
                    }
                }
            }
        }
    }

    fn receive(&mut self, event: notify::Result<notify::Event>) {
        match event {
            Ok(event) => self.observe(&event),
            Err(err) => {
                tracing::warn!("plugin directory watch error, rescanning: {err}");
                self.settle.rescan(Instant::now());
            }
        }
    }

    fn observe(&mut self, event: &notify::Event) {
        let setup = self.reconciler.setup();
        let dirs: Vec<PathBuf> = setup.dirs().map(Path::to_path_buf).collect();
        let tracked = |path: &Path| dirs.iter().any(|dir| is_tracked(dir, path));
        self.settle.observe(event, Instant::now(), tracked);
        for path in &event.paths {
            if self.settle.is_being_written(path)
                && path
                    .parent()
                    .is_some_and(|parent| dirs.iter().any(|d| d == parent))
                && path.file_name().is_some_and(scan::is_plugin_file)
            {
                let files = &self.reconciler.setup().files;
                if files
                    .get(path)
                    .is_none_or(|s| s.state != FileState::Writing)
                {
                    files.writing(path);
                }
            }
        }
    }
}

/// True for the paths whose events are followed one by one: plugin files
/// and their sidecars. Anything else asks for a rescan.
fn is_tracked(dir: &Path, path: &Path) -> bool {
    if path.parent() != Some(dir) {
        return false;
    }
    let Some(name) = path.file_name() else {
        return false;
    };
    scan::is_plugin_file(name)
        || name.to_str().is_some_and(|n| {
            !n.starts_with('.') && (n.ends_with(".yaml") || n.ends_with(".wasm.sig"))
        })
}
