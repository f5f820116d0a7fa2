//! Hot reload against the embedded API server: plugin files added, swapped,
//! removed, broken, written slowly, renamed in, rewritten in bursts and
//! duplicated, with ConfigMaps changing all the while; and the compiled
//! artifact cache across restarts.

use super::cluster::TestCluster;
use super::recording::informers;
use herald::capability::log::{MemorySink, OwnedLogLine};
use herald::config::Config;
use herald::daemon::Daemon;
use herald::plugin::{ArtifactCache, digest, revision};
use herald::reload::LoaderStats;
use herald::reload::PluginConfig;
use herald::reload::{
    DEFAULT_RESCAN_INTERVAL, FileState, FileStatus, FileStatuses, PluginDirectory, ReloadSetup,
    SettleTiming,
};
use herald::scratch::ScratchDir;
use herald_tests::{PATIENCE, artifacts, eventually};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams};
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::task::JoinHandle;

/// A version of the recorder of its own (same behaviour, another digest).
pub(super) fn variant(tag: &str) -> Vec<u8> {
    artifacts::variant(&artifacts::bytes(artifacts::RECORDER), tag)
}

/// A fresh, empty directory under the system's temporary directory,
/// removed when the returned value is dropped.
pub(super) fn temp_dir(what: &str) -> ScratchDir {
    ScratchDir::new(&format!("reload-{what}")).unwrap()
}

/// One recorder log line: `event=... key=... rv=... initial=...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Event {
    pub(super) kind: String,
    pub(super) key: String,
    pub(super) rv: u64,
    pub(super) initial: bool,
}

fn parse(line: &OwnedLogLine) -> Option<Event> {
    let fields: BTreeMap<&str, &str> = line
        .message
        .split(' ')
        .filter_map(|field| field.split_once('='))
        .collect();
    Some(Event {
        kind: fields.get("event")?.to_string(),
        key: fields.get("key")?.to_string(),
        rv: fields.get("rv")?.parse().ok()?,
        initial: *fields.get("initial")? == "true",
    })
}

/// The ConfigMaps a sequence of events leaves: key → resourceVersion.
/// Panics on an event that breaks the informer's order: an update or delete
/// of a key not added, or an add of a key already there.
fn fold(events: &[Event]) -> BTreeMap<String, u64> {
    let mut view = BTreeMap::new();
    for event in events {
        let known = view.contains_key(&event.key);
        match event.kind.as_str() {
            "add" => assert!(!known, "add of {} while present", event.key),
            _ => assert!(known, "{} of {} before its add", event.kind, event.key),
        }
        match event.kind.as_str() {
            "delete" => view.remove(&event.key),
            _ => view.insert(event.key.clone(), event.rv),
        };
    }
    view
}

/// A daemon following a plugin directory, over a test cluster.
pub(super) struct Rig {
    pub(super) cluster: TestCluster,
    pub(super) dir: ScratchDir,
    sink: MemorySink,
    lines: Mutex<Vec<OwnedLogLine>>,
    pub(super) daemon: Arc<Daemon>,
    files: Arc<FileStatuses>,
    stats: Arc<LoaderStats>,
    cache_dir: ScratchDir,
    directory: Option<PluginDirectory>,
    rescan_interval: std::time::Duration,
    /// Settings of other plugins by name, and of the recorder beyond its
    /// configuration (which it keeps unless one is given).
    others: BTreeMap<String, PluginConfig>,
    /// `pluginFiles.publicKeys`.
    public_keys: Vec<PathBuf>,
    /// `reads`: the host-wide read policy.
    reads: herald::capability::reads::ReadPolicy,
}

impl Rig {
    /// A rig whose `recorder.wasm` records ConfigMaps of the test namespace.
    async fn start() -> Rig {
        Rig::start_with_namespaced(|_| BTreeMap::new(), Default::default()).await
    }

    /// A rig whose `recorder.wasm` records ConfigMaps of the test namespace,
    /// with `others(namespace)` as the settings of other plugins and `retry`
    /// as the daemon's retry policy.
    pub(super) async fn start_with_namespaced(
        others: impl FnOnce(&str) -> BTreeMap<String, PluginConfig>,
        retry: herald::dispatch::RetryPolicy,
    ) -> Rig {
        Rig::start_with_keys(others, retry, Vec::new()).await
    }

    /// As [`Rig::start_with_namespaced`], under the host-wide read policy
    /// `reads` (`reads` in the configuration).
    pub(super) async fn start_with_reads(
        others: impl FnOnce(&str) -> BTreeMap<String, PluginConfig>,
        reads: herald::capability::reads::ReadPolicy,
    ) -> Rig {
        Rig::start_with(others, Default::default(), Vec::new(), reads).await
    }

    /// As [`Rig::start_with_namespaced`], trusting signatures by the
    /// `public_keys` (`pluginFiles.publicKeys`).
    pub(super) async fn start_with_keys(
        others: impl FnOnce(&str) -> BTreeMap<String, PluginConfig>,
        retry: herald::dispatch::RetryPolicy,
        public_keys: Vec<PathBuf>,
    ) -> Rig {
        Rig::start_with(others, retry, public_keys, Default::default()).await
    }

    async fn start_with(
        others: impl FnOnce(&str) -> BTreeMap<String, PluginConfig>,
        retry: herald::dispatch::RetryPolicy,
        public_keys: Vec<PathBuf>,
        reads: herald::capability::reads::ReadPolicy,
    ) -> Rig {
        let cluster = TestCluster::start().await;
        let others = others(&cluster.namespace);
        let dir = temp_dir("plugins");
        let cache_dir = temp_dir("cache");
        let daemon = Arc::new(Daemon::new(
            Arc::new(informers(cluster.client.clone())),
            retry,
        ));
        let mut rig = Rig {
            cluster,
            dir,
            sink: MemorySink::default(),
            lines: Mutex::new(Vec::new()),
            daemon,
            files: Arc::new(FileStatuses::default()),
            stats: Arc::new(LoaderStats::default()),
            cache_dir,
            directory: None,
            rescan_interval: DEFAULT_RESCAN_INTERVAL,
            others,
            public_keys,
            reads,
        };
        rig.follow().await;
        rig
    }

    fn config(&self) -> Config {
        let mut config = Config {
            plugin_dir: self.dir.to_path_buf(),
            ..Config::default()
        };
        // One line per event, and the test reads every one.
        config.log.plugin_lines_per_second = 1_000_000;
        config.log.plugin_burst = 1_000_000;
        config.plugin_files.public_keys = self.public_keys.clone();
        config.reads = self.reads.clone();
        config.plugins.insert(
            "recorder".into(),
            PluginConfig {
                config: Some(serde_json::json!({
                    "kind": {"version": "v1", "kind": "ConfigMap"},
                    "namespace": self.cluster.namespace,
                })),
                ..PluginConfig::default()
            },
        );
        for (name, entry) in self.others.clone() {
            let entry = match config.plugins.remove(&name) {
                Some(default) => PluginConfig {
                    config: entry.config.or(default.config),
                    ..entry
                },
                None => entry,
            };
            config.plugins.insert(name, entry);
        }
        config
    }

    /// Starts following the directory (again, after [`Rig::unfollow`]).
    async fn follow(&mut self) {
        let engine = herald_tests::engine().clone();
        let cache = ArtifactCache::open(&self.cache_dir, &engine).unwrap();
        let directory = PluginDirectory::start(ReloadSetup {
            dir: self.dir.to_path_buf(),
            pulled_dir: None,
            settings: Arc::new(self.config().plugin_settings()),
            engine,
            cache: Some(cache),
            sink: Arc::new(self.sink.clone()),
            daemon: self.daemon.clone(),
            files: self.files.clone(),
            stats: self.stats.clone(),
            timing: SettleTiming::default(),
            rescan_interval: self.rescan_interval,
            access: None,
        })
        .await
        .expect("following the plugin directory");
        self.directory = Some(directory);
    }

    /// Stops following the directory and every plugin.
    async fn unfollow(&mut self) {
        if let Some(directory) = self.directory.take() {
            directory.stop().await;
        }
        for name in self.daemon.names() {
            self.daemon.stop(&name).await;
        }
    }

    /// A file of the plugin directory, as the reloader names it (canonical).
    pub(super) fn path(&self, name: &str) -> PathBuf {
        self.dir.canonicalize().unwrap().join(name)
    }

    /// Waits until `file`'s status satisfies `ready`; returns it.
    pub(super) async fn file_status(
        &self,
        file: &str,
        ready: impl Fn(&FileStatus) -> bool,
    ) -> FileStatus {
        let path = self.path(file);
        let wait = self
            .files
            .wait_for(|files| files.get(&path).filter(|status| ready(status)).cloned());
        match tokio::time::timeout(PATIENCE, wait).await {
            Ok(status) => status,
            Err(_) => panic!(
                "{file} never reached the expected status; statuses: {:#?}",
                self.files.snapshot()
            ),
        }
    }

    /// Waits until `file` runs exactly `bytes`.
    pub(super) async fn running(&self, file: &str, bytes: &[u8]) -> FileStatus {
        let digest = digest(bytes);
        self.file_status(file, |s| {
            s.state == FileState::Loaded && s.sha256.as_deref() == Some(digest.as_str())
        })
        .await
    }

    /// Every line logged so far, in order.
    pub(super) fn lines(&self) -> Vec<OwnedLogLine> {
        let mut lines = self.lines.lock().unwrap();
        lines.extend(self.sink.take());
        lines.clone()
    }

    /// The recorder events logged by revision `rev`.
    pub(super) fn events_of(&self, rev: &str) -> Vec<Event> {
        self.lines()
            .iter()
            .filter(|l| l.revision == rev)
            .filter_map(parse)
            .collect()
    }

    pub(super) fn config_maps(&self) -> Api<ConfigMap> {
        self.cluster.config_maps()
    }

    /// The server's ConfigMaps of the namespace: key → resourceVersion.
    async fn server_state(&self) -> BTreeMap<String, u64> {
        self.config_maps()
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .map(|cm| {
                (
                    format!("{}/{}", self.cluster.namespace, cm.metadata.name.unwrap()),
                    cm.metadata.resource_version.unwrap().parse().unwrap(),
                )
            })
            .collect()
    }

    /// Waits until what revision `rev` recorded equals the server's state.
    pub(super) async fn converges(&self, rev: &str) {
        eventually(
            &format!("revision {rev}'s view matches the server"),
            PATIENCE,
            async || {
                let server = self.server_state().await;
                let view = fold(&self.events_of(rev));
                if view == server {
                    Ok(())
                } else {
                    Err(format!("\n view   {view:?}\n server {server:?}"))
                }
            },
        )
        .await;
    }

    pub(super) async fn finish(mut self) {
        self.unfollow().await;
        self.cluster.cleanup().await;
    }
}

/// Creates, updates and deletes ConfigMaps of a namespace until stopped.
pub(super) struct Churn {
    stop: Arc<AtomicBool>,
    operations: Arc<AtomicU64>,
    task: JoinHandle<()>,
}

impl Churn {
    pub(super) fn start(api: Api<ConfigMap>) -> Churn {
        let stop = Arc::new(AtomicBool::new(false));
        let operations = Arc::new(AtomicU64::new(0));
        let (halt, count) = (stop.clone(), operations.clone());
        let task = tokio::spawn(async move {
            let mut state = 0x9e37_79b9_u64;
            let mut present = [false; 8];
            while !halt.load(Ordering::Relaxed) {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let slot = (state >> 33) as usize % present.len();
                let name = format!("churn-{slot}");
                if !present[slot] {
                    let cm: ConfigMap = serde_json::from_value(serde_json::json!({
                        "metadata": {"name": name}, "data": {"n": "0"}
                    }))
                    .unwrap();
                    api.create(&Default::default(), &cm).await.expect("create");
                    present[slot] = true;
                } else if (state >> 20).is_multiple_of(4) {
                    api.delete(&name, &DeleteParams::default())
                        .await
                        .expect("delete");
                    present[slot] = false;
                } else {
                    let patch = serde_json::json!({"data": {"n": state.to_string()}});
                    api.patch(&name, &Default::default(), &kube::api::Patch::Merge(patch))
                        .await
                        .expect("update");
                }
                count.fetch_add(1, Ordering::Relaxed);
            }
        });
        Churn {
            stop,
            operations,
            task,
        }
    }

    /// Waits until `n` more operations have been made.
    pub(super) async fn advance(&self, n: u64) {
        let target = self.operations.load(Ordering::Relaxed) + n;
        eventually("the churn makes progress", PATIENCE, async || {
            self.operations.load(Ordering::Relaxed) >= target
        })
        .await;
    }

    pub(super) async fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        self.task.await.expect("the churn task");
    }
}

/// Writes `bytes` to `path` the way `cp` does: truncate, write, close.
pub(super) fn write(path: &Path, bytes: &[u8]) {
    std::fs::write(path, bytes).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_file_goes_live_with_a_snapshot_then_live_events() {
    let rig = Rig::start().await;
    rig.cluster.create_config_map("before", "a", "1").await;
    let churn = Churn::start(rig.config_maps());
    churn.advance(10).await;
    let v1 = variant("1");
    write(&rig.dir.join("recorder.wasm"), &v1);
    let status = rig.running("recorder.wasm", &v1).await;
    assert_eq!(status.plugin.as_deref(), Some("recorder"));
    churn.advance(20).await;
    churn.stop().await;
    let rev = revision(&digest(&v1)).to_owned();
    rig.converges(&rev).await;
    let events = rig.events_of(&rev);
    let snapshot = events.iter().take_while(|e| e.initial).count();
    assert!(snapshot >= 1, "the snapshot holds at least `before`");
    assert!(
        events[..snapshot]
            .iter()
            .any(|e| e.key.ends_with("/before")),
        "{events:?}"
    );
    assert!(
        events[snapshot..].iter().all(|e| !e.initial),
        "snapshot first"
    );
    assert!(events.len() > snapshot, "live events follow the snapshot");
    rig.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_file_is_swapped_with_nothing_lost_or_seen_twice() {
    let rig = Rig::start().await;
    let (v1, v2) = (variant("1"), variant("2"));
    let (rev1, rev2) = (
        revision(&digest(&v1)).to_owned(),
        revision(&digest(&v2)).to_owned(),
    );
    write(&rig.dir.join("recorder.wasm"), &v1);
    rig.running("recorder.wasm", &v1).await;
    // Never changed again: only the new version's snapshot can tell it of it.
    rig.cluster.create_config_map("steady", "a", "1").await;
    let churn = Churn::start(rig.config_maps());
    eventually(
        "the old version records live events",
        PATIENCE,
        async || rig.events_of(&rev1).iter().filter(|e| !e.initial).count() >= 20,
    )
    .await;
    write(&rig.dir.join("recorder.wasm"), &v2);
    rig.running("recorder.wasm", &v2).await;
    eventually(
        "the new version records live events",
        PATIENCE,
        async || rig.events_of(&rev2).iter().filter(|e| !e.initial).count() >= 20,
    )
    .await;
    churn.stop().await;
    rig.converges(&rev2).await;

    let lines = rig.lines();
    let last_old = lines.iter().rposition(|l| l.revision == rev1).unwrap();
    let first_new = lines.iter().position(|l| l.revision == rev2).unwrap();
    assert!(
        last_old < first_new,
        "the old version's last call comes before the new version's first"
    );
    let (old, new) = (rig.events_of(&rev1), rig.events_of(&rev2));
    let snapshot = new.iter().take_while(|e| e.initial).count();
    assert!(
        new[snapshot..].iter().all(|e| !e.initial),
        "snapshot first, then live"
    );
    let old_max = old.iter().map(|e| e.rv).max().unwrap();
    let new_live_min = new[snapshot..].iter().map(|e| e.rv).min().unwrap();
    assert!(
        old_max < new_live_min,
        "every live event after the swap point goes to the new version only ({old_max} >= {new_live_min})"
    );
    let mut last_rv: BTreeMap<&str, u64> = BTreeMap::new();
    for event in &new {
        if let Some(previous) = last_rv.insert(&event.key, event.rv) {
            assert!(
                event.rv > previous,
                "the new version saw {} twice or out of order: {previous} then {}",
                event.key,
                event.rv
            );
        }
    }
    rig.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removed_file_is_unloaded_and_its_informer_stopped() {
    let rig = Rig::start().await;
    let v1 = variant("1");
    write(&rig.dir.join("recorder.wasm"), &v1);
    rig.running("recorder.wasm", &v1).await;
    assert_eq!(rig.daemon.informers().all().len(), 1);
    std::fs::remove_file(rig.dir.join("recorder.wasm")).unwrap();
    let path = rig.path("recorder.wasm");
    tokio::time::timeout(
        PATIENCE,
        rig.files
            .wait_for(|files| (!files.contains_key(&path)).then_some(())),
    )
    .await
    .expect("the file's status is dropped");
    assert!(rig.daemon.names().is_empty());
    assert!(
        rig.daemon.informers().all().is_empty(),
        "an informer no plugin needs is stopped"
    );
    assert_eq!(rig.stats.unloads.load(Ordering::Relaxed), 1);
    rig.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_new_version_leaves_the_running_one_untouched() {
    let rig = Rig::start().await;
    let v1 = variant("1");
    let rev1 = revision(&digest(&v1)).to_owned();
    write(&rig.dir.join("recorder.wasm"), &v1);
    rig.running("recorder.wasm", &v1).await;
    let churn = Churn::start(rig.config_maps());
    let mut broken = v1.clone();
    broken.truncate(v1.len() / 2);
    write(&rig.dir.join("recorder.wasm"), &broken);
    let status = rig
        .file_status("recorder.wasm", |s| s.state == FileState::Failed)
        .await;
    assert!(
        status
            .last_error
            .as_deref()
            .unwrap()
            .contains("invalid or corrupt component"),
        "{status:?}"
    );
    assert_eq!(
        status.sha256,
        Some(digest(&v1)),
        "the old version still runs"
    );
    let before = rig.events_of(&rev1).len();
    churn.advance(20).await;
    churn.stop().await;
    rig.converges(&rev1).await;
    assert!(
        rig.events_of(&rev1).len() > before,
        "and keeps receiving events"
    );
    assert_eq!(rig.stats.load_errors.load(Ordering::Relaxed), 1);
    rig.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_written_slowly_is_loaded_only_when_complete() {
    let rig = Rig::start().await;
    let v1 = variant("1");
    let mut file = std::fs::File::create(rig.dir.join("recorder.wasm")).unwrap();
    file.write_all(&v1[..v1.len() / 3]).unwrap();
    file.flush().unwrap();
    rig.file_status("recorder.wasm", |s| s.state == FileState::Writing)
        .await;
    file.write_all(&v1[v1.len() / 3..2 * v1.len() / 3]).unwrap();
    file.flush().unwrap();
    file.write_all(&v1[2 * v1.len() / 3..]).unwrap();
    drop(file);
    rig.running("recorder.wasm", &v1).await;
    assert_eq!(
        rig.stats.load_errors.load(Ordering::Relaxed),
        0,
        "no half-written version was ever tried"
    );
    rig.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn temporary_files_of_editors_and_copy_tools_are_ignored() {
    let rig = Rig::start().await;
    let junk = b"\0asm\x0d\0\x01\0 not really".to_vec();
    for name in [
        ".recorder.wasm.swp",
        "recorder.wasm~",
        ".#recorder.wasm",
        "recorder.wasm.part",
        ".recorder.wasm.Xy12Ab",
        "4913",
    ] {
        let path = rig.dir.join(name);
        write(&path, &junk);
        write(&path, &junk[..8]);
        std::fs::remove_file(&path).unwrap();
    }
    write(&rig.dir.join(".recorder.wasm.swp"), &junk);
    // A real plugin dropped after the noise: once it runs, the noise's
    // events have all been handled.
    let noop = artifacts::bytes(artifacts::NOOP);
    write(&rig.dir.join("noop.wasm"), &noop);
    rig.running("noop.wasm", &noop).await;
    assert_eq!(rig.stats.load_errors.load(Ordering::Relaxed), 0);
    assert_eq!(rig.stats.reloads.load(Ordering::Relaxed), 1);
    assert_eq!(
        rig.files.snapshot().keys().cloned().collect::<Vec<_>>(),
        [rig.path("noop.wasm")]
    );
    rig.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_renamed_into_the_directory_are_loaded() {
    let rig = Rig::start().await;
    let v1 = variant("1");
    let staged = rig.dir.join(".recorder.wasm.tmp");
    write(&staged, &v1);
    std::fs::rename(&staged, rig.dir.join("recorder.wasm")).unwrap();
    rig.running("recorder.wasm", &v1).await;
    let staging = temp_dir("staging");
    let outside = staging.join("recorder.wasm");
    let v2 = variant("2");
    write(&outside, &v2);
    std::fs::rename(&outside, rig.dir.join("recorder.wasm")).unwrap();
    rig.running("recorder.wasm", &v2).await;
    assert_eq!(rig.stats.load_errors.load(Ordering::Relaxed), 0);
    rig.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_writes_ends_with_the_last_version_running() {
    let rig = Rig::start().await;
    let churn = Churn::start(rig.config_maps());
    let versions: Vec<Vec<u8>> = (0..10).map(|i| variant(&format!("burst-{i}"))).collect();
    for version in &versions {
        write(&rig.dir.join("recorder.wasm"), version);
    }
    let last = versions.last().unwrap();
    rig.running("recorder.wasm", last).await;
    churn.advance(20).await;
    churn.stop().await;
    rig.converges(revision(&digest(last))).await;
    assert_eq!(
        rig.stats.load_errors.load(Ordering::Relaxed),
        0,
        "no half-written version was tried"
    );
    let loads = rig.stats.reloads.load(Ordering::Relaxed);
    assert!((1..=10).contains(&loads), "{loads} loads");
    rig.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_claimed_by_two_files_is_refused_for_both_until_one_goes() {
    let rig = Rig::start().await;
    let v1 = variant("1");
    write(&rig.dir.join("recorder.wasm"), &v1);
    rig.running("recorder.wasm", &v1).await;
    // Same configuration (a sidecar), same manifest name: a second claim.
    let sidecar = format!(
        "config:\n  kind: {{version: v1, kind: ConfigMap}}\n  namespace: {}\n",
        rig.cluster.namespace
    );
    std::fs::write(rig.dir.join("recorder-copy.yaml"), sidecar).unwrap();
    let v2 = variant("2");
    write(&rig.dir.join("recorder-copy.wasm"), &v2);
    let refused = rig
        .file_status("recorder-copy.wasm", |s| s.state == FileState::Failed)
        .await;
    let error = refused.last_error.unwrap();
    assert!(error.contains("\"recorder\""), "{error}");
    assert!(
        error.contains(&rig.path("recorder.wasm").display().to_string()),
        "the error names the other file: {error}"
    );
    // The first file's plugin stops too: the name is decided by neither
    // directory order nor arrival order.
    let first = rig
        .file_status("recorder.wasm", |s| s.state == FileState::Failed)
        .await;
    assert!(
        first
            .last_error
            .unwrap()
            .contains("claimed by more than one file")
    );
    assert!(rig.daemon.names().is_empty(), "{:?}", rig.daemon.names());
    std::fs::remove_file(rig.dir.join("recorder.wasm")).unwrap();
    rig.running("recorder-copy.wasm", &v2).await;
    assert_eq!(rig.daemon.names(), ["recorder"]);
    rig.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sidecar_disables_a_plugin_or_tunes_it_within_the_operators_limits() {
    let rig = Rig::start().await;
    let v1 = variant("1");
    write(&rig.dir.join("recorder.wasm"), &v1);
    rig.running("recorder.wasm", &v1).await;
    let sidecar = rig.dir.join("recorder.yaml");
    std::fs::write(&sidecar, "disabled: true\n").unwrap();
    rig.file_status("recorder.wasm", |s| s.state == FileState::Disabled)
        .await;
    assert!(rig.daemon.names().is_empty());
    std::fs::write(&sidecar, "limits:\n  memory: 4Gi\n").unwrap();
    let refused = rig
        .file_status("recorder.wasm", |s| s.state == FileState::Failed)
        .await;
    let error = refused.last_error.unwrap();
    assert!(
        error.contains("recorder.yaml: limits.memory: 4Gi is above limits.max.memory"),
        "{error}"
    );
    std::fs::write(&sidecar, "limits:\n  callDeadline: 250ms\n").unwrap();
    rig.running("recorder.wasm", &v1).await;
    let plugin = rig.daemon.plugins().pop().unwrap();
    assert_eq!(
        plugin.limits().call_deadline,
        std::time::Duration::from_millis(250)
    );
    rig.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_takes_known_files_from_the_artifact_cache_and_recompiles_a_corrupt_entry() {
    let mut rig = Rig::start().await;
    let v1 = variant("1");
    write(&rig.dir.join("recorder.wasm"), &v1);
    let first = rig.running("recorder.wasm", &v1).await;
    assert!(first.compile.unwrap().starts_with("compiled in"));

    rig.unfollow().await;
    rig.follow().await;
    let again = rig.running("recorder.wasm", &v1).await;
    assert_eq!(again.compile.as_deref(), Some("cache hit"));
    assert_eq!(rig.stats.cache_hits.load(Ordering::Relaxed), 1);

    rig.unfollow().await;
    let cache = ArtifactCache::open(&rig.cache_dir, herald_tests::engine()).unwrap();
    let entry = cache.entry_path(&digest(&v1));
    let mut bytes = std::fs::read(&entry).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&entry, bytes).unwrap();
    rig.follow().await;
    let recompiled = rig.running("recorder.wasm", &v1).await;
    assert!(recompiled.compile.unwrap().starts_with("compiled in"));
    assert_eq!(rig.stats.compiles.load(Ordering::Relaxed), 2);
    let churn = Churn::start(rig.config_maps());
    churn.advance(5).await;
    churn.stop().await;
    rig.converges(revision(&digest(&v1))).await;
    rig.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_for_a_crd_not_yet_installed_starts_once_it_is() {
    let group = |namespace: &str| format!("{namespace}.example.com");
    let mut rig = Rig::start_with_namespaced(
        |namespace| {
            BTreeMap::from([(
                "recorder".to_owned(),
                PluginConfig {
                    config: Some(serde_json::json!({
                        "kind": {"group": group(namespace), "version": "v1", "kind": "Widget"},
                        "namespace": namespace,
                    })),
                    ..PluginConfig::default()
                },
            )])
        },
        Default::default(),
    )
    .await;
    rig.unfollow().await;
    rig.rescan_interval = std::time::Duration::from_millis(200);
    rig.follow().await;
    let group = group(&rig.cluster.namespace);
    let v1 = variant("1");
    write(&rig.dir.join("widgets.wasm"), &v1);
    let refused = rig
        .file_status("widgets.wasm", |s| s.state == FileState::Failed)
        .await;
    let error = refused.last_error.unwrap();
    assert!(
        error.contains("\"recorder\"") && error.contains("Widget"),
        "names the plugin and the kind: {error}"
    );

    let crd: k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition =
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": format!("widgets.{group}")},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                     "versions": [{"name": "v1", "served": true, "storage": true,
                         "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
        }))
        .unwrap();
    let crds: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        Api::all(rig.cluster.client.clone());
    crds.create(&Default::default(), &crd).await.unwrap();
    let started = rig.running("widgets.wasm", &v1).await;
    assert_eq!(started.plugin.as_deref(), Some("recorder"));
    let _ = crds
        .delete(&format!("widgets.{group}"), &DeleteParams::default())
        .await;
    rig.finish().await;
}
