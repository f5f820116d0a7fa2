//! What the reloader knows of each plugin file: which plugin and version it
//! runs, since when, how it was compiled, and its last error; and a bounded
//! history of what it did (loads, swaps, refusals, unloads). Read by the
//! `/plugins` endpoint and the dashboard; every change of state is
//! announced, so a caller can wait for a state instead of polling.

use crate::plugin::CompileOutcome;
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;
use tokio::sync::watch;

/// Where a plugin file stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileState {
    /// Its current content runs.
    Loaded,
    /// Its current content was refused (see `lastError`); the version that
    /// ran before, if any, still runs.
    Failed,
    /// Disabled by the configuration or its sidecar; nothing runs.
    Disabled,
    /// Being written: read once the writer is done.
    Writing,
    /// Being compiled (or taken from the cache), validated and started.
    Loading,
    /// A plugin source (`pluginSources`) not pulled yet: nothing to load.
    Pending,
    /// The same build (same sha256) of a plugin that already runs from
    /// another file (`duplicateOf`): the plugin runs once, from that file;
    /// this one takes over, without a stop, if that file goes.
    Duplicate,
}

/// The status of one plugin file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileStatus {
    /// Where it stands.
    pub state: FileState,
    /// The plugin running from this file, if any.
    pub plugin: Option<String>,
    /// sha256 of the running version.
    pub sha256: Option<String>,
    /// When the running version was loaded.
    #[serde(with = "crate::units::time::option")]
    pub loaded_at: Option<SystemTime>,
    /// How the running version was compiled: `cache hit` or `compiled in N ms`.
    pub compile: Option<String>,
    /// The last load error (the running version, if any, was kept).
    pub last_error: Option<String>,
    /// When that error happened.
    #[serde(with = "crate::units::time::option")]
    pub error_at: Option<SystemTime>,
    /// For a plugin pulled from a registry (`pluginSources`): the
    /// reference, what was pulled and the last attempt's outcome.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<SourceStatus>,
    /// For a [`FileState::Duplicate`]: the file the same build runs from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duplicate_of: Option<PathBuf>,
}

/// Where a pulled plugin file comes from and how its registry answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SourceStatus {
    /// The reference followed, e.g. `registry.local:5000/team/p:1.2`.
    pub reference: String,
    /// The manifest digest of the version in the file, if any.
    pub manifest_digest: Option<String>,
    /// When that version was pulled.
    #[serde(with = "crate::units::time::option")]
    pub pulled_at: Option<SystemTime>,
    /// When the registry last answered (the tag checked, unchanged or not).
    #[serde(with = "crate::units::time::option")]
    pub checked_at: Option<SystemTime>,
    /// The last pull error (the version in the file, if any, stays).
    pub last_error: Option<String>,
    /// When that error happened.
    #[serde(with = "crate::units::time::option")]
    pub error_at: Option<SystemTime>,
}

impl SourceStatus {
    fn new(reference: &str) -> Self {
        SourceStatus {
            reference: reference.to_owned(),
            manifest_digest: None,
            pulled_at: None,
            checked_at: None,
            last_error: None,
            error_at: None,
        }
    }
}

impl FileStatus {
    fn new(state: FileState) -> Self {
        FileStatus {
            state,
            plugin: None,
            sha256: None,
            loaded_at: None,
            compile: None,
            last_error: None,
            error_at: None,
            source: None,
            duplicate_of: None,
        }
    }
}

/// What the reloader did with a plugin file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReloadAction {
    /// A plugin started from it.
    Loaded,
    /// A new version replaced the one running from it.
    Swapped,
    /// Its content was refused; what ran from it, if anything, still runs.
    Refused,
    /// It was disabled; what ran from it stopped.
    Disabled,
    /// It was removed; what ran from it stopped.
    Unloaded,
    /// It holds the same build as a plugin running from another file: it
    /// runs nothing, stops nothing, and is reported.
    Duplicate,
    /// The file the plugin ran from was removed, and this file, holding the
    /// same build, now runs it: the plugin did not stop.
    TookOver,
}

/// One entry of the reload history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReloadRecord {
    /// When.
    #[serde(with = "crate::units::time")]
    pub at: SystemTime,
    /// What.
    pub action: ReloadAction,
    /// The plugin file.
    pub file: PathBuf,
    /// The plugin concerned, when known.
    pub plugin: Option<String>,
    /// Its revision (the first 12 hex digits of the file's sha256): the
    /// version now running, or for a refusal or unload the one concerned.
    pub revision: Option<String>,
    /// For a swap, the revision replaced.
    pub from: Option<String>,
    /// How it was compiled, or why it was refused.
    pub detail: Option<String>,
}

impl ReloadRecord {
    /// A record of `action` on `file`, now, with nothing else known yet.
    pub fn new(action: ReloadAction, file: &Path) -> Self {
        ReloadRecord {
            at: SystemTime::now(),
            action,
            file: file.to_owned(),
            plugin: None,
            revision: None,
            from: None,
            detail: None,
        }
    }
}

/// Entries the reload history keeps, the oldest going first.
pub const RELOAD_HISTORY: usize = 100;

/// The status of every plugin file.
#[derive(Debug)]
pub struct FileStatuses {
    files: Mutex<BTreeMap<PathBuf, FileStatus>>,
    changes: watch::Sender<u64>,
    history: Mutex<VecDeque<ReloadRecord>>,
}

impl Default for FileStatuses {
    fn default() -> Self {
        FileStatuses {
            files: Mutex::new(BTreeMap::new()),
            changes: watch::Sender::new(0),
            history: Mutex::new(VecDeque::with_capacity(RELOAD_HISTORY)),
        }
    }
}

impl FileStatuses {
    /// `file` now runs `plugin` at `sha256`, compiled as `outcome` says.
    pub fn loaded(&self, file: &Path, plugin: &str, sha256: &str, outcome: &CompileOutcome) {
        let compile = match outcome {
            CompileOutcome::CacheHit => "cache hit".to_owned(),
            other => format!("compiled in {} ms", other.compile_time().as_millis()),
        };
        self.update(file, |status| {
            *status = FileStatus {
                source: status.source.take(),
                plugin: Some(plugin.into()),
                sha256: Some(sha256.into()),
                loaded_at: Some(SystemTime::now()),
                compile: Some(compile),
                ..FileStatus::new(FileState::Loaded)
            }
        });
    }

    /// `file` holds the build of `plugin` at `sha256` that already runs
    /// from `running_from`: nothing runs from it.
    pub fn duplicate(&self, file: &Path, plugin: &str, sha256: &str, running_from: &Path) {
        self.update(file, |status| {
            *status = FileStatus {
                source: status.source.take(),
                plugin: Some(plugin.into()),
                sha256: Some(sha256.into()),
                duplicate_of: Some(running_from.to_owned()),
                ..FileStatus::new(FileState::Duplicate)
            }
        });
    }

    /// The plugin that ran from `from` (now gone) runs from `file`, which
    /// holds the same build: `file` takes `from`'s status (when it was
    /// loaded, how it was compiled).
    pub fn took_over(&self, file: &Path, from: &Path) {
        {
            let mut files = self.lock();
            let Some(previous) = files.remove(from) else {
                return;
            };
            let status = files
                .entry(file.to_owned())
                .or_insert_with(|| FileStatus::new(FileState::Loaded));
            *status = FileStatus {
                state: FileState::Loaded,
                source: status.source.take(),
                last_error: None,
                error_at: None,
                duplicate_of: None,
                ..previous
            };
        }
        self.changes.send_modify(|n| *n += 1);
    }

    /// `file`'s current content was refused; what ran keeps running.
    pub fn failed(&self, file: &Path, error: String) {
        self.update(file, |status| {
            status.state = FileState::Failed;
            status.duplicate_of = None;
            status.last_error = Some(error);
            status.error_at = Some(SystemTime::now());
        });
    }

    /// `file` is disabled: nothing runs from it.
    pub fn disabled(&self, file: &Path) {
        self.update(file, |status| {
            *status = FileStatus {
                source: status.source.take(),
                ..FileStatus::new(FileState::Disabled)
            }
        });
    }

    /// `file` is being written; what ran keeps running until it is done.
    pub fn writing(&self, file: &Path) {
        self.update(file, |status| status.state = FileState::Writing);
    }

    /// `file` is being loaded; what ran keeps running until it is done.
    pub fn loading(&self, file: &Path) {
        self.update(file, |status| status.state = FileState::Loading);
    }

    /// `file` turned out unchanged after being written: back to `state`.
    pub fn settled(&self, file: &Path, state: FileState) {
        self.update(file, |status| status.state = state);
    }

    /// `file` is where the plugin of `reference` is pulled to; nothing is
    /// there yet.
    pub fn source_pending(&self, file: &Path, reference: &str) {
        self.update_source(file, reference, |_| {});
    }

    /// The version of `reference` at `manifest_digest`, pulled at
    /// `pulled_at`, is now in `file` (`checked`: the registry answered just
    /// now; else it was found in the cache of an earlier run).
    pub fn source_pulled(
        &self,
        file: &Path,
        reference: &str,
        manifest_digest: &str,
        pulled_at: Option<SystemTime>,
        checked: bool,
    ) {
        self.update_source(file, reference, |source| {
            source.manifest_digest = Some(manifest_digest.to_owned());
            source.pulled_at = pulled_at;
            if checked {
                source.checked_at = Some(SystemTime::now());
            }
            source.last_error = None;
            source.error_at = None;
        });
    }

    /// The registry says `reference` has not moved.
    pub fn source_checked(&self, file: &Path, reference: &str) {
        self.update_source(file, reference, |source| {
            source.checked_at = Some(SystemTime::now());
            source.last_error = None;
            source.error_at = None;
        });
    }

    /// Pulling `reference` failed; what is in `file`, if anything, stays.
    pub fn source_failed(&self, file: &Path, reference: &str, error: String) {
        self.update_source(file, reference, |source| {
            source.last_error = Some(error);
            source.error_at = Some(SystemTime::now());
        });
    }

    fn update_source(&self, file: &Path, reference: &str, change: impl FnOnce(&mut SourceStatus)) {
        {
            let mut files = self.lock();
            let status = files
                .entry(file.to_owned())
                .or_insert_with(|| FileStatus::new(FileState::Pending));
            change(
                status
                    .source
                    .get_or_insert_with(|| SourceStatus::new(reference)),
            );
        }
        self.changes.send_modify(|n| *n += 1);
    }

    /// `file` is gone.
    pub fn removed(&self, file: &Path) {
        if self.lock().remove(file).is_some() {
            self.changes.send_modify(|n| *n += 1);
        }
    }

    /// The status of `file`.
    pub fn get(&self, file: &Path) -> Option<FileStatus> {
        self.lock().get(file).cloned()
    }

    /// Every file's status, by path.
    pub fn snapshot(&self) -> BTreeMap<PathBuf, FileStatus> {
        self.lock().clone()
    }

    /// Adds to the reload history, forgetting its oldest entry when full.
    pub fn record(&self, record: ReloadRecord) {
        let mut history = self.history.lock().unwrap_or_else(|e| e.into_inner());
        if history.len() == RELOAD_HISTORY {
            history.pop_front();
        }
        history.push_back(record);
    }

    /// The reload history, oldest first.
    pub fn history(&self) -> Vec<ReloadRecord> {
        self.history
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect()
    }

    /// A receiver that sees a new value after every change.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Waits until `ready` holds of the statuses; returns what it returned.
    pub async fn wait_for<T>(
        &self,
        mut ready: impl FnMut(&BTreeMap<PathBuf, FileStatus>) -> Option<T>,
    ) -> T {
        let mut changes = self.subscribe();
        loop {
            changes.borrow_and_update();
            if let Some(value) = ready(&self.lock()) {
                return value;
            }
            if changes.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }

    fn update(&self, file: &Path, change: impl FnOnce(&mut FileStatus)) {
        {
            let mut files = self.lock();
            let status = files
                .entry(file.to_owned())
                .or_insert_with(|| FileStatus::new(FileState::Writing));
            change(status);
        }
        self.changes.send_modify(|n| *n += 1);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<PathBuf, FileStatus>> {
        self.files.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_failure_keeps_the_running_version_and_a_load_clears_the_error() {
        let statuses = FileStatuses::default();
        let file = Path::new("/d/p.wasm");
        statuses.loaded(
            file,
            "p",
            "aa",
            &CompileOutcome::Compiled(Duration::from_millis(7)),
        );
        statuses.failed(file, "bad magic".into());
        let status = statuses.get(file).unwrap();
        assert_eq!(status.state, FileState::Failed);
        assert_eq!(status.sha256.as_deref(), Some("aa"));
        assert_eq!(status.compile.as_deref(), Some("compiled in 7 ms"));
        statuses.loaded(file, "p", "bb", &CompileOutcome::CacheHit);
        let status = statuses.get(file).unwrap();
        assert_eq!(
            (status.state, status.last_error, status.compile.as_deref()),
            (FileState::Loaded, None, Some("cache hit"))
        );
    }

    #[test]
    fn a_duplicate_names_the_file_that_runs_and_takes_its_status_over_when_it_goes() {
        let statuses = FileStatuses::default();
        let (original, copy) = (Path::new("/d/p.wasm"), Path::new("/d/p-copy.wasm"));
        statuses.loaded(original, "p", "aa", &CompileOutcome::CacheHit);
        statuses.duplicate(copy, "p", "aa", original);
        let duplicate = statuses.get(copy).unwrap();
        assert_eq!(duplicate.state, FileState::Duplicate);
        assert_eq!(duplicate.duplicate_of.as_deref(), Some(original));
        assert_eq!(duplicate.sha256.as_deref(), Some("aa"));
        let shown = serde_json::to_value(&duplicate).unwrap();
        assert_eq!(shown["state"], "duplicate");
        assert_eq!(shown["duplicateOf"], "/d/p.wasm");
        let loaded_at = statuses.get(original).unwrap().loaded_at;
        statuses.took_over(copy, original);
        assert!(statuses.get(original).is_none());
        let now = statuses.get(copy).unwrap();
        assert_eq!(
            (now.state, now.duplicate_of, now.loaded_at),
            (FileState::Loaded, None, loaded_at),
            "the plugin kept running: same load time"
        );
    }

    #[test]
    fn the_history_keeps_the_last_entries_in_order() {
        let statuses = FileStatuses::default();
        for n in 0..RELOAD_HISTORY + 3 {
            statuses.record(ReloadRecord {
                detail: Some(n.to_string()),
                ..ReloadRecord::new(ReloadAction::Refused, Path::new("/d/p.wasm"))
            });
        }
        let history = statuses.history();
        assert_eq!(history.len(), RELOAD_HISTORY);
        assert_eq!(history[0].detail.as_deref(), Some("3"));
        assert_eq!(
            history[RELOAD_HISTORY - 1].detail,
            Some((RELOAD_HISTORY + 2).to_string())
        );
    }

    #[test]
    fn every_change_is_announced() {
        let statuses = FileStatuses::default();
        let mut changes = statuses.subscribe();
        statuses.writing(Path::new("/d/p.wasm"));
        assert!(changes.has_changed().unwrap());
        changes.borrow_and_update();
        statuses.removed(Path::new("/d/p.wasm"));
        assert!(changes.has_changed().unwrap());
        changes.borrow_and_update();
        statuses.removed(Path::new("/d/p.wasm"));
        assert!(!changes.has_changed().unwrap(), "nothing was removed");
    }
}
