//! Plugin sources: plugins pulled from OCI registries (`pluginSources`),
//! turned into files of a directory the reloader follows beside the plugin
//! directory, so a pulled plugin is loaded, swapped, refused and reported
//! exactly as a file dropped into `pluginDir` is.
//!
//! Each source has a file of its own in the pulled directory,
//! `<repository>-<hash of the reference>.wasm`, and a record beside it
//! (`.<same stem>.json`: the reference, the manifest digest and the layer
//! digest of the version in the file).
//!
//! # Guarantees
//!
//! - Only verified content reaches the file: the manifest hashes to the
//!   digest the registry announced (and to the pinned one), the layer to the
//!   digest in the manifest ([`crate::oci::Registry::pull`]). It is written
//!   beside the file and renamed over it, so the reloader never reads half a
//!   plugin, and a swap follows the reloader's guarantees.
//! - A tag is checked every `pollInterval` with a `HEAD` request; when its
//!   manifest digest changed, the new version is pulled and swapped in. A
//!   reference pinned `@sha256:…` is pulled once and never checked again.
//! - A failing registry (down, 5xx, bad credentials, wrong digest) changes
//!   nothing that runs: the error is logged and shown in `/plugins`
//!   (`files.<path>.source.lastError`), and the attempt is repeated, with
//!   exponential backoff (1 s doubling up to `pollInterval`) while the
//!   registry is unreachable.
//! - The file and its record survive restarts: a restart during an outage
//!   starts the version last pulled, after checking it still hashes to its
//!   record; a pinned reference already pulled needs no registry at all.

use super::status::FileStatuses;

use crate::informer::Backoff;
use crate::oci::{OciError, Registry, parse_reference, sha256_digest};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// `pluginSources[]`: one plugin pulled from an OCI registry.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PluginSourceConfig {
    /// The reference: `[oci://]registry/repository:tag` (followed: a moved
    /// tag is a new version) or `…@sha256:<digest>` (pinned, never changes).
    pub oci: String,
    /// How often a tag is checked for a new version.
    #[serde(default = "default_poll_interval", with = "crate::units::duration")]
    pub poll_interval: Duration,
    /// Plain HTTP instead of HTTPS.
    #[serde(default)]
    pub plain_http: bool,
    /// A Docker `config.json` (or a mounted `kubernetes.io/dockerconfigjson`
    /// pull secret) holding credentials for the registry; unset:
    /// `$DOCKER_CONFIG/config.json` or `~/.docker/config.json` if present,
    /// else anonymous.
    #[serde(default)]
    pub docker_config: Option<PathBuf>,
}

/// The default `pluginSources[].pollInterval`.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(60);

fn default_poll_interval() -> Duration {
    DEFAULT_POLL_INTERVAL
}

impl PluginSourceConfig {
    /// How to reach its registry (credentials: `dockerConfig`, else the
    /// default Docker config if there is one).
    pub fn registry_options(&self) -> crate::oci::RegistryOptions {
        crate::oci::RegistryOptions {
            plain_http: self.plain_http,
            docker_config: self
                .docker_config
                .clone()
                .or_else(crate::oci::default_docker_config),
            ..crate::oci::RegistryOptions::default()
        }
    }
}

/// The first retry after a transient failure; it doubles up to the
/// source's poll interval.
pub const INITIAL_RETRY: Duration = Duration::from_secs(1);

/// Everything the plugin sources need.
#[derive(Debug, Clone)]
pub struct SourcesSetup {
    /// The sources, as configured.
    pub sources: Vec<PluginSourceConfig>,
    /// The directory pulled plugins are written to (created if missing);
    /// the reloader follows it ([`ReloadSetup::pulled_dir`](super::ReloadSetup::pulled_dir)).
    pub dir: PathBuf,
    /// The largest plugin accepted (`pluginFiles.maxSize`).
    pub max_size: u64,
    /// Each file's status.
    pub files: Arc<FileStatuses>,
    /// Where attempts are counted.
    pub stats: Arc<crate::reload::LoaderStats>,
}

/// The pulled directory could not be prepared.
#[derive(Debug, thiserror::Error)]
#[error("pulled plugins directory {dir} (pluginSourceCache): {source}")]
pub struct SourcesError {
    /// The directory.
    pub dir: PathBuf,
    /// Why.
    pub source: std::io::Error,
}

/// Followed plugin sources. Dropping it stops following them.
#[derive(Debug)]
pub struct PluginSources {
    dir: PathBuf,
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

/// What a record says of the version in a source's file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Record {
    reference: String,
    manifest_digest: String,
    layer_digest: String,
    /// When it was pulled, in milliseconds since the Unix epoch; records
    /// of earlier versions lack it and the file's modification time stands
    /// in for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pulled_at_ms: Option<u64>,
}

impl Record {
    /// When the version in `file` was pulled, as far as is known.
    fn pulled_at(&self, file: &Path) -> Option<SystemTime> {
        match self.pulled_at_ms {
            Some(ms) => Some(UNIX_EPOCH + Duration::from_millis(ms)),
            None => std::fs::metadata(file).and_then(|m| m.modified()).ok(),
        }
    }
}

impl PluginSources {
    /// Prepares the pulled directory (removing the files of sources no
    /// longer configured), makes one attempt at each source, concurrently,
    /// and then follows them on tasks of their own. Returns once the first
    /// attempts are done, so the reloader's initial load sees what they
    /// pulled (or what an earlier run left).
    pub async fn start(setup: SourcesSetup) -> Result<Self, SourcesError> {
        let failed = |source| SourcesError {
            dir: setup.dir.clone(),
            source,
        };
        std::fs::create_dir_all(&setup.dir).map_err(failed)?;
        let dir = setup.dir.canonicalize().map_err(failed)?;
        let mut followers: Vec<Follower> = setup
            .sources
            .iter()
            .map(|config| Follower::new(config.clone(), &dir, &setup))
            .collect();
        remove_stale(&dir, &followers);
        futures::future::join_all(followers.iter_mut().map(|f| f.attempt_and_report())).await;
        let (stop, stopped) = watch::channel(false);
        let tasks = followers
            .into_iter()
            .map(|follower| tokio::spawn(follower.run(stopped.clone())))
            .collect();
        Ok(PluginSources { dir, stop, tasks })
    }

    /// The directory pulled plugins are in (canonical path).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file a source's plugin is pulled to, in `dir`.
    pub fn file_of(dir: &Path, reference: &str) -> PathBuf {
        dir.join(format!("{}.wasm", stem_of(reference)))
    }

    /// Stops following (an attempt under way is abandoned; the files stay).
    pub async fn stop(mut self) {
        let _ = self.stop.send(true);
        for task in self.tasks.drain(..) {
            let _ = task.await;
        }
    }
}

impl Drop for PluginSources {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// `<last repository segment>-<12 hex of the reference's sha256>`: readable,
/// distinct per reference, and a plugin file name (not hidden).
fn stem_of(reference: &str) -> String {
    let parsed = parse_reference(reference).ok();
    let whole = parsed
        .as_ref()
        .map_or_else(|| reference.to_owned(), |r| r.whole());
    let repository = parsed
        .as_ref()
        .and_then(|r| r.repository().rsplit('/').next().map(str::to_owned))
        .unwrap_or_else(|| "plugin".to_owned());
    let readable: String = repository
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let hash = &sha256_digest(whole.as_bytes())["sha256:".len()..][..12];
    format!("{}-{hash}", readable.trim_start_matches(['-', '.']))
}

/// Removes the files and records of `dir` that belong to no configured
/// source, so a source taken out of the configuration is unloaded.
fn remove_stale(dir: &Path, followers: &[Follower]) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let kept = followers
            .iter()
            .any(|f| path == f.file || path == f.record_path());
        let ours = name.ends_with(".wasm") || (name.starts_with('.') && name.ends_with(".json"));
        if ours && !kept {
            tracing::info!(file = %path.display(), "removing a pulled plugin no source names any more");
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// What one attempt gave.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    /// A new version was written to the file.
    Pulled,
    /// The file already holds what the reference names.
    Unchanged,
}

/// One source, followed.
struct Follower {
    config: PluginSourceConfig,
    reference: String,
    pinned: bool,
    file: PathBuf,
    max_size: u64,
    files: Arc<FileStatuses>,
    stats: Arc<crate::reload::LoaderStats>,
    registry: Option<Registry>,
    /// The version in the file, verified against its record.
    current: Option<Record>,
}

impl Follower {
    fn new(config: PluginSourceConfig, dir: &Path, setup: &SourcesSetup) -> Self {
        let reference = config
            .oci
            .strip_prefix(crate::oci::SCHEME)
            .unwrap_or(&config.oci)
            .to_owned();
        let pinned = reference.contains("@sha256:");
        let file = PluginSources::file_of(dir, &reference);
        let mut follower = Follower {
            config,
            reference,
            pinned,
            file,
            max_size: setup.max_size,
            files: setup.files.clone(),
            stats: setup.stats.clone(),
            registry: None,
            current: None,
        };
        follower.current = follower.cached();
        match &follower.current {
            Some(record) => {
                follower.files.source_pulled(
                    &follower.file,
                    &follower.reference,
                    &record.manifest_digest,
                    record.pulled_at(&follower.file),
                    false,
                );
            }
            None => follower
                .files
                .source_pending(&follower.file, &follower.reference),
        }
        follower
    }

    fn record_path(&self) -> PathBuf {
        let stem = self.file.file_stem().unwrap_or_default().to_string_lossy();
        self.file.with_file_name(format!(".{stem}.json"))
    }

    /// The version an earlier run left, if the file still hashes to its
    /// record; anything else left there is removed.
    fn cached(&self) -> Option<Record> {
        let text = std::fs::read_to_string(self.record_path()).ok();
        let bytes = std::fs::read(&self.file).ok();
        let record: Option<Record> = text.and_then(|t| serde_json::from_str(&t).ok());
        match (record, bytes) {
            (Some(record), Some(bytes))
                if record.reference == self.reference
                    && sha256_digest(&bytes) == record.layer_digest =>
            {
                Some(record)
            }
            (None, None) => None,
            _ => {
                tracing::warn!(source = %self.reference, file = %self.file.display(),
                    "the cached pull does not match its record: removed, pulling again");
                let _ = std::fs::remove_file(&self.file);
                let _ = std::fs::remove_file(self.record_path());
                None
            }
        }
    }

    /// Polls until stopped; a pinned reference stops once pulled.
    async fn run(mut self, mut stop: watch::Receiver<bool>) {
        let poll = self.config.poll_interval;
        let mut backoff = Backoff::new(INITIAL_RETRY, poll.max(INITIAL_RETRY));
        let mut transient = self
            .files
            .get(&self.file)
            .is_some_and(|s| s.source.is_some_and(|s| s.last_error.is_some()));
        loop {
            if self.pinned && self.current.is_some() {
                return;
            }
            let wait = if transient {
                backoff.next_delay()
            } else {
                poll
            };
            tokio::select! {
                _ = stop.changed() => return,
                _ = tokio::time::sleep(wait) => {}
            }
            transient = match self.attempt_and_report().await {
                Ok(_) => {
                    backoff.reset();
                    false
                }
                Err(transient) => transient,
            };
        }
    }

    /// One attempt, logged and reported in the status. `Err(true)` when
    /// the failure may pass by itself (retried with backoff).
    async fn attempt_and_report(&mut self) -> Result<Outcome, bool> {
        let previous = self.current.as_ref().map(|r| r.manifest_digest.clone());
        let attempt = self.attempt().await;
        let counter = match &attempt {
            Ok(Outcome::Pulled) => &self.stats.source_pulls,
            Ok(Outcome::Unchanged) => &self.stats.source_unchanged,
            Err(_) => &self.stats.source_errors,
        };
        counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        match attempt {
            Ok(Outcome::Pulled) => {
                let record = self.current.as_ref().expect("a pull sets the record");
                match &previous {
                    Some(from) => {
                        tracing::info!(source = %self.reference, from = %from, to = %record.manifest_digest,
                        "the reference moved: pulled the new version")
                    }
                    None => {
                        tracing::info!(source = %self.reference, digest = %record.manifest_digest, "pulled")
                    }
                }
                self.files.source_pulled(
                    &self.file,
                    &self.reference,
                    &record.manifest_digest,
                    record.pulled_at(&self.file),
                    true,
                );
                Ok(Outcome::Pulled)
            }
            Ok(Outcome::Unchanged) => {
                tracing::debug!(source = %self.reference, "unchanged");
                self.files.source_checked(&self.file, &self.reference);
                Ok(Outcome::Unchanged)
            }
            Err(error) => {
                let transient = error.is_transient();
                // The next attempt builds its client again, reading the
                // credentials again: a rotated pull secret takes effect.
                self.registry = None;
                match &self.current {
                    Some(record) => {
                        tracing::error!(source = %self.reference, running = %record.manifest_digest,
                        "plugin source not pulled, the version already pulled stays: {error}")
                    }
                    None => {
                        tracing::error!(source = %self.reference, "plugin source not pulled: {error}")
                    }
                }
                self.files
                    .source_failed(&self.file, &self.reference, error.to_string());
                Err(transient)
            }
        }
    }

    async fn attempt(&mut self) -> Result<Outcome, OciError> {
        if self.pinned && self.current.is_some() {
            return Ok(Outcome::Unchanged);
        }
        if self.registry.is_none() {
            // Built on first use and again after a failed attempt (a pull
            // secret mounted late, or rotated).
            self.registry = Some(Registry::new(
                &self.reference,
                &self.config.registry_options(),
            )?);
        }
        let registry = self.registry.as_ref().expect("just built");
        if let Some(current) = &self.current {
            let digest = registry.manifest_digest().await?;
            if digest == current.manifest_digest {
                return Ok(Outcome::Unchanged);
            }
        }
        let pulled = registry.pull(self.max_size).await?;
        if self
            .current
            .as_ref()
            .is_some_and(|c| c.manifest_digest == pulled.manifest_digest)
        {
            return Ok(Outcome::Unchanged);
        }
        let record = Record {
            reference: self.reference.clone(),
            manifest_digest: pulled.manifest_digest,
            layer_digest: pulled.layer_digest,
            pulled_at_ms: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .ok()
                .and_then(|since| u64::try_from(since.as_millis()).ok()),
        };
        self.write(&pulled.bytes, &record)
            .map_err(|e| OciError::Layout(format!("cannot write {}: {e}", self.file.display())))?;
        self.current = Some(record);
        Ok(Outcome::Pulled)
    }

    /// Writes the record, then the plugin, each beside its place and
    /// renamed over it.
    fn write(&self, bytes: &[u8], record: &Record) -> std::io::Result<()> {
        use std::io::Write as _;
        let stem = self.file.file_stem().unwrap_or_default().to_string_lossy();
        let staged = |what: &str| self.file.with_file_name(format!(".{stem}.{what}.tmp"));
        let record_tmp = staged("json");
        std::fs::write(
            &record_tmp,
            serde_json::to_vec(record).expect("a record serializes"),
        )?;
        std::fs::rename(&record_tmp, self.record_path())?;
        let wasm_tmp = staged("wasm");
        let mut out = std::fs::File::create(&wasm_tmp)?;
        out.write_all(bytes)?;
        out.sync_all()?;
        drop(out);
        std::fs::rename(&wasm_tmp, &self.file)
    }
}

/// True when the plugin file at `path` was pulled from a source reference
/// pinned by digest (`…@sha256:…`) and its bytes are the layer that pin
/// verified (`digest`, the file's sha256 as lowercase hex): the record the
/// puller writes beside each file (`.<stem>.json`, in a directory only
/// Herald writes) says so.
pub fn pinned_by_source(path: &Path, digest: &str) -> bool {
    let stem = path.file_stem().unwrap_or_default().to_string_lossy();
    let record = path.with_file_name(format!(".{stem}.json"));
    std::fs::read_to_string(record)
        .ok()
        .and_then(|text| serde_json::from_str::<Record>(&text).ok())
        .is_some_and(|record| {
            record.reference.contains("@sha256:")
                && record.layer_digest.strip_prefix("sha256:") == Some(digest)
        })
}

/// Checks `pluginSources`: each reference parses, none is listed twice,
/// polls are at least a second apart; the key at fault is absolute.
pub fn validate_sources(sources: &[PluginSourceConfig]) -> Result<(), crate::yaml::Invalid> {
    let mut references = std::collections::HashSet::new();
    for (i, source) in sources.iter().enumerate() {
        let reference = crate::oci::parse_reference(&source.oci).map_err(|e| {
            crate::yaml::Invalid::new(format!("pluginSources[{i}].oci"), e.to_string())
        })?;
        if !references.insert(reference.whole()) {
            return Err(crate::yaml::Invalid::new(
                format!("pluginSources[{i}].oci"),
                format!("{:?} is listed twice", source.oci),
            ));
        }
        if source.poll_interval < Duration::from_secs(1) {
            return Err(crate::yaml::Invalid::new(
                format!("pluginSources[{i}].pollInterval"),
                "must be at least 1s",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_reference_has_a_plugin_file_of_its_own() {
        let dir = Path::new("/cache/plugins");
        let tag = PluginSources::file_of(dir, "registry.local:5000/team/pod-watch:1.2");
        let other = PluginSources::file_of(dir, "registry.local:5000/team/pod-watch:1.3");
        assert_ne!(tag, other);
        let name = tag.file_name().unwrap();
        assert!(name.to_string_lossy().starts_with("pod-watch-"), "{name:?}");
        assert!(super::super::scan::is_plugin_file(name));
        assert_eq!(
            PluginSources::file_of(dir, "oci://registry.local:5000/team/pod-watch:1.2"),
            tag,
            "the scheme is optional"
        );
    }
}
