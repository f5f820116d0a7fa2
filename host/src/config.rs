//! The daemon's configuration file (`herald.yaml`): every key, its default,
//! and validation that names the key at fault. Command-line flags override it.
//! `docs/config.md` documents each key; `examples/herald.yaml` shows them all.

use crate::capability::log::LogRate;
use crate::dispatch::{KeyBackoff, RetryPolicy};
use crate::plugin::{LimitPolicy, Limits, RequestedLimits};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The whole configuration.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct Config {
    /// Directory of plugin `.wasm` files (and their optional sidecar `.yaml` files).
    pub plugin_dir: PathBuf,
    /// The cluster to watch.
    pub source: SourceConfig,
    /// Address of the HTTP endpoints (`/metrics`, `/healthz`, `/readyz`, `/plugins`).
    pub listen: SocketAddr,
    /// Logging.
    pub log: LogConfig,
    /// The shared cache.
    pub cache: CacheConfig,
    /// Default and maximum limits of every plugin.
    pub limits: LimitsConfig,
    /// Retry of failed handler calls, and coalesced delivery's work queue.
    pub queue: QueueConfig,
    /// Shutdown.
    pub shutdown: ShutdownConfig,
    /// The worker pool that runs plugins' calls.
    pub dispatch: DispatchConfig,
    /// Plugin files: size cap and the optional sha256 allow-list.
    pub plugin_files: PluginFilesConfig,
    /// Per-plugin settings, by plugin file name without `.wasm` (which is
    /// normally the plugin's manifest name).
    pub plugins: BTreeMap<String, PluginConfig>,
    /// Leader election among replicas.
    pub leader_election: LeaderElectionConfig,
    /// Sharding of the plugins among replicas.
    pub sharding: ShardingConfig,
    /// Plugins pulled from OCI registries, each followed like a file of the
    /// plugin directory.
    pub plugin_sources: Vec<PluginSourceConfig>,
    /// Where pulled plugins are kept; unset: `$XDG_CACHE_HOME/herald/oci`,
    /// else `$HOME/.cache/herald/oci`.
    pub plugin_source_cache: Option<PathBuf>,
    /// The metrics plugins define.
    pub plugin_metrics: PluginMetricsConfig,
}

/// `pluginMetrics`: the metrics plugins define (see
/// [`crate::capability::metrics`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct PluginMetricsConfig {
    /// Series one plugin may have across its metrics; a new series beyond
    /// it is dropped and counted. `plugins.<name>.metrics.maxSeries`
    /// overrides it for one plugin.
    pub max_series: usize,
}

impl Default for PluginMetricsConfig {
    fn default() -> Self {
        PluginMetricsConfig {
            max_series: crate::capability::metrics::DEFAULT_MAX_SERIES,
        }
    }
}

/// The most `pluginMetrics.maxSeries` (or a plugin's override) may be: a
/// larger value is almost surely a typo, and would let one plugin hold
/// gigabytes of series.
pub const MAX_PLUGIN_SERIES: usize = 1_000_000;

/// `plugins.<name>.metrics`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct PluginMetricsLimits {
    /// Overrides `pluginMetrics.maxSeries` for this plugin.
    pub max_series: Option<usize>,
}

/// Checks a series cap at `key`.
fn check_max_series(key: &str, max_series: usize) -> Result<(), (String, String)> {
    if max_series > MAX_PLUGIN_SERIES {
        return Err((
            key.to_owned(),
            format!("{max_series} is above the {MAX_PLUGIN_SERIES} allowed"),
        ));
    }
    Ok(())
}

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

impl Config {
    /// The directory pulled plugins are kept in, if one is known.
    pub fn plugin_source_cache_dir(&self) -> Option<PathBuf> {
        if let Some(dir) = &self.plugin_source_cache {
            return Some(dir.clone());
        }
        Some(cache_home()?.join("herald").join("oci"))
    }
}

/// `$XDG_CACHE_HOME`, else `$HOME/.cache`.
fn cache_home() -> Option<PathBuf> {
    std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|home| PathBuf::from(home).join(".cache"))
        })
}

impl Default for Config {
    fn default() -> Self {
        Config {
            plugin_dir: PathBuf::from("plugins.d"),
            source: SourceConfig::default(),
            listen: SocketAddr::from(([127, 0, 0, 1], 9090)),
            log: LogConfig::default(),
            cache: CacheConfig::default(),
            limits: LimitsConfig::default(),
            queue: QueueConfig::default(),
            shutdown: ShutdownConfig::default(),
            dispatch: DispatchConfig::default(),
            plugin_files: PluginFilesConfig::default(),
            plugins: BTreeMap::new(),
            leader_election: LeaderElectionConfig::default(),
            sharding: ShardingConfig::default(),
            plugin_sources: Vec::new(),
            plugin_source_cache: None,
            plugin_metrics: PluginMetricsConfig::default(),
        }
    }
}

/// Which cluster to watch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SourceKind {
    /// A kubeconfig if found, else in-cluster; neither is an error (never the embedded server).
    #[default]
    Auto,
    /// `source.kubeconfig` (or the default locations) and `source.context`.
    Kubeconfig,
    /// The pod's service account.
    InCluster,
    /// The embedded API server (development only).
    Embedded,
}

/// `source`: the cluster to watch.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct SourceConfig {
    /// `auto`, `kubeconfig`, `in-cluster` or `embedded`.
    pub kind: SourceKind,
    /// Kubeconfig file (kind `kubeconfig`).
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context (kind `kubeconfig`).
    pub context: Option<String>,
    /// Seed manifests directories (kind `embedded`).
    pub seed: Vec<PathBuf>,
    /// Where to write the embedded server's kubeconfig (kind `embedded`).
    pub kubeconfig_out: Option<PathBuf>,
}

/// Log output format.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Human,
    /// One JSON object per line.
    Json,
}

/// `log`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct LogConfig {
    /// `human` or `json`.
    pub format: LogFormat,
    /// A tracing filter, e.g. `info` or `info,herald::informer=debug`. `RUST_LOG` overrides it.
    pub level: String,
    /// Lines per second each plugin may log (sustained).
    pub plugin_lines_per_second: u32,
    /// Lines each plugin may log in a burst.
    pub plugin_burst: u32,
}

impl Default for LogConfig {
    fn default() -> Self {
        let rate = LogRate::default();
        LogConfig {
            format: LogFormat::Human,
            level: "info".into(),
            plugin_lines_per_second: rate.lines_per_second,
            plugin_burst: rate.burst,
        }
    }
}

/// `cache`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct CacheConfig {
    /// Drop `metadata.managedFields` before caching.
    pub strip_managed_fields: bool,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            strip_managed_fields: true,
        }
    }
}

/// A pair of limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitValues {
    /// Deadline of one handler call, e.g. `1s`.
    pub call_deadline: Duration,
    /// Memory cap of one instance, e.g. `64Mi`.
    pub memory: u64,
}

/// `limits`. Each of its four keys has its own default: setting
/// `limits.max.callDeadline` alone keeps the default `limits.max.memory`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(from = "PartialLimitsConfig")]
pub struct LimitsConfig {
    /// Limits of a plugin that asks for none.
    pub default: LimitValues,
    /// The most any plugin may ask for or be given.
    pub max: LimitValues,
}

/// `limits` as written: any of its keys may be left out.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
struct PartialLimitsConfig {
    default: PluginLimits,
    max: PluginLimits,
}

impl From<PartialLimitsConfig> for LimitsConfig {
    fn from(written: PartialLimitsConfig) -> Self {
        let defaults = LimitsConfig::default();
        let fill = |given: PluginLimits, default: LimitValues| LimitValues {
            call_deadline: given.call_deadline.unwrap_or(default.call_deadline),
            memory: given.memory.unwrap_or(default.memory),
        };
        LimitsConfig {
            default: fill(written.default, defaults.default),
            max: fill(written.max, defaults.max),
        }
    }
}

impl Default for LimitsConfig {
    fn default() -> Self {
        let policy = LimitPolicy::default();
        LimitsConfig {
            default: LimitValues {
                call_deadline: policy.default.call_deadline,
                memory: policy.default.memory_bytes,
            },
            max: LimitValues {
                call_deadline: policy.max.call_deadline,
                memory: policy.max.memory_bytes,
            },
        }
    }
}

/// `queue`: retries of failed calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct QueueConfig {
    /// Every-event delivery: retries in place before a notification is skipped.
    pub max_retries: u32,
    /// Every-event delivery: first retry delay (doubles each retry).
    #[serde(with = "crate::units::duration")]
    pub initial_backoff: Duration,
    /// Every-event delivery: longest retry delay.
    #[serde(with = "crate::units::duration")]
    pub max_backoff: Duration,
    /// Coalesced delivery: the per-key backoff of its work queue.
    pub coalesced: CoalescedQueueConfig,
}

impl Default for QueueConfig {
    fn default() -> Self {
        let retry = RetryPolicy::default();
        QueueConfig {
            max_retries: retry.max_retries,
            initial_backoff: retry.initial_backoff,
            max_backoff: retry.max_backoff,
            coalesced: CoalescedQueueConfig::default(),
        }
    }
}

/// `queue.coalesced`: client-go's per-key failure backoff, and when a key
/// is given up on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct CoalescedQueueConfig {
    /// Wait after a key's first failure; doubles with each further one.
    #[serde(with = "crate::units::duration")]
    pub base_delay: Duration,
    /// Longest wait.
    #[serde(with = "crate::units::duration")]
    pub max_delay: Duration,
    /// Retries of a key before its notification is skipped.
    pub max_retries: u32,
}

impl Default for CoalescedQueueConfig {
    fn default() -> Self {
        let backoff = KeyBackoff::default();
        CoalescedQueueConfig {
            base_delay: backoff.base_delay,
            max_delay: backoff.max_delay,
            max_retries: backoff.max_retries,
        }
    }
}

/// `shutdown`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct ShutdownConfig {
    /// How long queues may drain after SIGTERM.
    #[serde(with = "crate::units::duration")]
    pub grace_period: Duration,
}

impl Default for ShutdownConfig {
    fn default() -> Self {
        ShutdownConfig {
            grace_period: Duration::from_secs(10),
        }
    }
}

/// `dispatch`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct DispatchConfig {
    /// Threads of the worker pool every plugin's calls run on; unset: one
    /// per CPU.
    pub workers: Option<usize>,
}

impl DispatchConfig {
    /// The pool's threads.
    pub fn workers(&self) -> usize {
        self.workers.unwrap_or_else(crate::plugin::default_workers)
    }
}

/// The most `dispatch.workers` may be: more threads than this only adds
/// switching (plugins waiting on I/O hold no thread).
pub const MAX_WORKERS: usize = 1024;

/// `pluginFiles`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct PluginFilesConfig {
    /// Largest plugin file accepted.
    #[serde(with = "crate::units::quantity")]
    pub max_size: u64,
    /// If set, only files whose sha256 (lowercase hex) is listed are loaded.
    pub allowed_sha256: Option<Vec<String>>,
    /// The compiled-artifact cache.
    pub artifact_cache: ArtifactCacheConfig,
    /// How long compiling one plugin may take (in its child process).
    #[serde(with = "crate::units::duration")]
    pub compile_timeout: Duration,
    /// Whether a plugin's sidecar may grant it capabilities and writes (for
    /// what its `plugins.<name>` entry leaves unset). Off by default, so
    /// whoever can write the plugin directory cannot grant authority; turn
    /// it on when the directory is the operator's alone (e.g. a ConfigMap
    /// the operator manages).
    pub sidecar_grants: bool,
}

/// `pluginFiles.artifactCache`: compiled plugins kept on disk, so restarts
/// and reloads of known files skip compilation.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct ArtifactCacheConfig {
    /// Use the cache.
    pub enabled: bool,
    /// Its directory; unset: `$XDG_CACHE_HOME/herald/artifacts`, else
    /// `$HOME/.cache/herald/artifacts` (none if neither is set).
    pub dir: Option<PathBuf>,
    /// Most bytes of entries kept: past it, the least recently used entries
    /// go after each compile (a Python or JavaScript plugin's entry is about
    /// 35 MiB, a Rust one's well under 1 MiB).
    #[serde(with = "crate::units::quantity")]
    pub max_size: u64,
}

impl Default for ArtifactCacheConfig {
    fn default() -> Self {
        ArtifactCacheConfig {
            enabled: true,
            dir: None,
            max_size: crate::plugin::DEFAULT_ARTIFACT_CACHE_BYTES,
        }
    }
}

impl ArtifactCacheConfig {
    /// The directory to use, if the cache is enabled and one is known.
    pub fn directory(&self) -> Option<PathBuf> {
        if !self.enabled {
            return None;
        }
        if let Some(dir) = &self.dir {
            return Some(dir.clone());
        }
        Some(cache_home()?.join("herald").join("artifacts"))
    }
}

impl Default for PluginFilesConfig {
    fn default() -> Self {
        PluginFilesConfig {
            max_size: crate::plugin::DEFAULT_MAX_FILE_BYTES,
            allowed_sha256: None,
            artifact_cache: ArtifactCacheConfig::default(),
            compile_timeout: crate::plugin::DEFAULT_COMPILE_TIMEOUT,
            sidecar_grants: false,
        }
    }
}

/// `plugins.<name>`: the operator's settings for one plugin, keyed by the
/// plugin's identity (the name its manifest gives), never by its file name:
/// a file renamed in the plugin directory does not take over another
/// plugin's configuration or grants.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct PluginConfig {
    /// Do not load this plugin.
    pub disabled: bool,
    /// If not empty, the sha256 digests (lowercase hex) of the builds that
    /// may run under this name: another file calling itself by it is refused,
    /// so configuration and grants go only to these builds.
    pub sha256: Vec<String>,
    /// Configuration handed to the plugin (its `config` import), any YAML value.
    pub config: Option<serde_json::Value>,
    /// Limits overriding the plugin's requests (within `limits.max`).
    pub limits: PluginLimits,
    /// What the plugin may do beyond logging and the cache.
    pub grants: GrantConfig,
    /// `enforce` (the default) or `dry-run`: every write sent with
    /// `dryRun=All`, persisting nothing, and logged with what it would change.
    pub mode: Option<crate::capability::Mode>,
    /// The plugin's Kubernetes API request rate (default: client-go's 5 per
    /// second, burst 10).
    pub rate_limit: Option<crate::capability::rate::RateLimit>,
    /// Its metrics' limits.
    pub metrics: PluginMetricsLimits,
}

/// `plugins.<name>.grants` (and a sidecar's, when `pluginFiles.sidecarGrants`
/// allows): what a plugin may do beyond logging and reading the cache.
/// Denied by default; the grant must cover what the plugin's manifest
/// declares, or the plugin is not loaded.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct GrantConfig {
    /// Capabilities granted by name: `events` (the same as an empty
    /// `events` section). `http` is granted by its own section.
    pub capabilities: Vec<String>,
    /// Events: where the plugin may record them beyond the objects it may
    /// read. Its presence grants the `events` capability.
    pub events: Option<crate::capability::events::EventsGrant>,
    /// Kubernetes API rules granted: verbs × group/kind × namespaces.
    pub writes: Vec<crate::capability::kube::WriteRule>,
    /// Outbound HTTP: the origins the plugin may reach and the bounds of its
    /// requests. Its presence grants the `http` capability.
    pub http: Option<crate::capability::http::HttpGrant>,
}

impl GrantConfig {
    /// True when nothing is granted.
    pub fn is_empty(&self) -> bool {
        self.capabilities.is_empty()
            && self.events.is_none()
            && self.writes.is_empty()
            && self.http.is_none()
    }

    /// Checks the capabilities and rules; the error names the key at
    /// fault, relative to `grants`.
    fn validate(&self) -> Result<(), (String, String)> {
        for capability in &self.capabilities {
            if !crate::capability::KNOWN_CAPABILITIES.contains(&capability.as_str()) {
                return Err((
                    "grants.capabilities".into(),
                    format!(
                        "{capability:?} is not a capability this host has (it has: {})",
                        crate::capability::KNOWN_CAPABILITIES.join(", ")
                    ),
                ));
            }
            if capability == crate::capability::http::CAPABILITY && self.http.is_none() {
                return Err((
                    "grants.http".into(),
                    "is missing: the http capability is granted by grants.http, which lists the \
                     allowedOrigins the plugin may reach"
                        .into(),
                ));
            }
        }
        if let Some(http) = &self.http {
            http.validate()
                .map_err(|(key, problem)| (format!("grants.http.{key}"), problem))?;
        }
        for (index, rule) in self.writes.iter().enumerate() {
            rule.validate(index)
                .map_err(|e| (format!("grants.writes[{index}]"), e.to_string()))?;
        }
        Ok(())
    }
}

/// Checks the grant keys shared by `plugins.<name>` and sidecars.
fn check_grants(
    grants: &GrantConfig,
    rate_limit: Option<&crate::capability::rate::RateLimit>,
) -> Result<(), (String, String)> {
    grants.validate()?;
    if let Some(rate) = rate_limit {
        rate.validate().map_err(|e| ("rateLimit".to_owned(), e))?;
    }
    Ok(())
}

/// Per-plugin limit overrides.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct PluginLimits {
    /// Call deadline.
    #[serde(with = "crate::units::duration::option")]
    pub call_deadline: Option<Duration>,
    /// Memory cap.
    #[serde(with = "crate::units::quantity::option")]
    pub memory: Option<u64>,
}

/// A plugin's sidecar file, `<stem>.yaml` beside `<stem>.wasm` in the plugin
/// directory: lets whoever delivers the plugin disable it, tune its limits
/// (within `limits.max`) or give it configuration. The host configuration's
/// `plugins.<stem>` entry wins where both set a value. A sidecar cannot grant
/// capabilities: only the operator's configuration can.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct Sidecar {
    /// The name of the plugin this sidecar is for: if set, a file whose
    /// plugin calls itself otherwise is refused rather than given this
    /// sidecar's configuration.
    pub plugin: Option<String>,
    /// Do not load the plugin.
    pub disabled: bool,
    /// The plugin's configuration (used when `plugins.<stem>.config` is unset).
    pub config: Option<serde_json::Value>,
    /// Limit overrides (used where `plugins.<stem>.limits` leaves them unset).
    pub limits: PluginLimits,
    /// Grants (used where `plugins.<name>.grants` is unset, and only if
    /// `pluginFiles.sidecarGrants` is on).
    pub grants: GrantConfig,
    /// Mode (used where `plugins.<name>.mode` is unset).
    pub mode: Option<crate::capability::Mode>,
    /// API request rate (used where `plugins.<name>.rateLimit` is unset).
    pub rate_limit: Option<crate::capability::rate::RateLimit>,
}

/// Checks that every entry of the list at `key` is a lowercase hex sha256.
fn check_digests(key: &str, digests: &[String]) -> Result<(), (String, String)> {
    for (index, digest) in digests.iter().enumerate() {
        if digest.len() != 64
            || !digest
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            return Err((
                format!("{key}[{index}]"),
                format!("{digest:?} is not a lowercase hex sha256 (64 characters)"),
            ));
        }
    }
    Ok(())
}

/// Parses YAML text into `T`, naming the key at fault (`a.b[2].c`).
fn parse_yaml<T: serde::de::DeserializeOwned + Default>(
    text: &str,
    source_name: &str,
) -> Result<T, ConfigError> {
    if text.trim().is_empty() {
        return Ok(T::default());
    }
    let deserializer = serde_yaml::Deserializer::from_str(text);
    serde_path_to_error::deserialize(deserializer).map_err(|e| {
        let key = match e.path().to_string() {
            path if path == "." || path.is_empty() => "(top level)".to_owned(),
            path => path,
        };
        ConfigError::new(source_name, &key, &e.into_inner().to_string())
    })
}

/// `leaderElection`: several replicas, one dispatching (see [`crate::leader`]).
pub type LeaderElectionConfig = LeaseConfig;

/// `sharding`: several replicas dividing the plugins, each dispatched by
/// the holder of its Lease (see [`crate::shard`]).
pub type ShardingConfig = LeaseConfig;

/// A section that coordinates replicas through Leases with leader
/// election's rules: `leaderElection` and `sharding` (mutually exclusive).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct LeaseConfig {
    /// On: contend for Leases (leader election: one Lease, only the holder
    /// dispatches; sharding: one Lease per plugin).
    pub enabled: bool,
    /// Name of the Lease (leader election), or the prefix of every Lease
    /// (sharding: `<name>-plugin-<plugin>`, `<name>-member-<hash>`).
    pub lease_name: String,
    /// Namespace of the Lease; unset: the pod's namespace (`POD_NAMESPACE`,
    /// or the service account's namespace file), else `default`.
    pub lease_namespace: Option<String>,
    /// This replica's identity; unset: `POD_NAME`, else the host name.
    pub identity: Option<String>,
    /// How long a follower waits after the Lease last changed before taking
    /// it over (whole seconds).
    #[serde(with = "crate::units::duration")]
    pub lease_duration: Duration,
    /// The leader steps down if it has not renewed for this long.
    #[serde(with = "crate::units::duration")]
    pub renew_deadline: Duration,
    /// Wait between attempts to acquire or renew.
    #[serde(with = "crate::units::duration")]
    pub retry_period: Duration,
}

impl Default for LeaseConfig {
    fn default() -> Self {
        LeaseConfig {
            enabled: false,
            lease_name: "herald".into(),
            lease_namespace: None,
            identity: None,
            lease_duration: crate::leader::DEFAULT_LEASE_DURATION,
            renew_deadline: crate::leader::DEFAULT_RENEW_DEADLINE,
            retry_period: crate::leader::DEFAULT_RETRY_PERIOD,
        }
    }
}

/// Where a pod's service account token mount says which namespace it runs in.
pub const SERVICE_ACCOUNT_NAMESPACE_FILE: &str =
    "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

impl LeaseConfig {
    /// Checks the values of the section `section`; the error is `(key,
    /// problem)` with the full key.
    fn validate(&self, section: &str) -> Result<(), (String, String)> {
        let keyed = |err| lease_key(section, err);
        crate::leader::check_timings(self.lease_duration, self.renew_deadline, self.retry_period)
            .map_err(keyed)?;
        crate::leader::check_lease_name(&self.lease_name).map_err(keyed)?;
        if let Some(namespace) = &self.lease_namespace {
            crate::leader::check_namespace(namespace).map_err(keyed)?;
        }
        if let Some(identity) = &self.identity {
            crate::leader::check_identity(identity).map_err(keyed)?;
        }
        Ok(())
    }

    /// The Lease settings of the section `section` (`leaderElection` or
    /// `sharding`, for error messages), with the unset identity and
    /// namespace taken from the environment (`POD_NAME`, `POD_NAMESPACE`,
    /// the host name, the service account's namespace file).
    pub fn lease_settings(
        &self,
        section: &str,
    ) -> Result<crate::leader::LeaseSettings, ConfigError> {
        self.lease_settings_from(section, &|name| std::env::var(name).ok(), &|path| {
            std::fs::read_to_string(path).ok()
        })
    }

    fn lease_settings_from(
        &self,
        section: &str,
        env: &dyn Fn(&str) -> Option<String>,
        read: &dyn Fn(&str) -> Option<String>,
    ) -> Result<crate::leader::LeaseSettings, ConfigError> {
        let nonblank =
            |value: Option<String>| value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
        let identity = nonblank(self.identity.clone())
            .or_else(|| nonblank(env("POD_NAME")))
            .or_else(|| nonblank(env("HOSTNAME")))
            .or_else(|| nonblank(read("/proc/sys/kernel/hostname")))
            .ok_or_else(|| ConfigError::new(
                "environment",
                &format!("{section}.identity"),
                "is unset and neither POD_NAME nor the host name is available: set it, unique per replica",
            ))?;
        let namespace = nonblank(self.lease_namespace.clone())
            .or_else(|| nonblank(env("POD_NAMESPACE")))
            .or_else(|| nonblank(read(SERVICE_ACCOUNT_NAMESPACE_FILE)))
            .unwrap_or_else(|| "default".into());
        let settings = crate::leader::LeaseSettings {
            namespace,
            name: self.lease_name.clone(),
            identity,
            lease_duration: self.lease_duration,
            renew_deadline: self.renew_deadline,
            retry_period: self.retry_period,
        };
        settings.validate().map_err(|err| {
            let (key, problem) = lease_key(section, err);
            ConfigError::new("environment", &key, &problem)
        })?;
        Ok(settings)
    }
}

/// The full configuration key and problem of a Lease setting error in
/// `section`.
fn lease_key(section: &str, err: crate::leader::LeaderError) -> (String, String) {
    match err {
        crate::leader::LeaderError::InvalidSettings { setting, problem } => {
            (format!("{section}.{setting}"), problem)
        }
        other => (section.into(), other.to_string()),
    }
}

/// An invalid configuration, naming the key at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{source_name}: {key}: {problem}")]
pub struct ConfigError {
    /// The file (or `flags`).
    pub source_name: String,
    /// The dotted key, e.g. `limits.default.memory`.
    pub key: String,
    /// What is wrong.
    pub problem: String,
}

impl ConfigError {
    /// The error of `key` in `source_name`, each part kept on one line
    /// whatever the input holds (keys and values from the file are quoted
    /// in it, and the error is logged).
    pub fn new(source_name: &str, key: &str, problem: &str) -> Self {
        use crate::text::escape_controls;
        ConfigError {
            source_name: escape_controls(source_name),
            key: escape_controls(key),
            problem: escape_controls(problem),
        }
    }
}

impl Config {
    /// Reads and validates a configuration file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            ConfigError::new(
                &path.display().to_string(),
                "(file)",
                &format!("cannot read: {e}"),
            )
        })?;
        Config::parse(&text, &path.display().to_string())
    }

    /// Parses and validates configuration text; `source_name` names it in errors.
    pub fn parse(text: &str, source_name: &str) -> Result<Config, ConfigError> {
        let config: Config = parse_yaml(text, source_name)?;
        config
            .validate()
            .map_err(|(key, problem)| ConfigError::new(source_name, &key, &problem))?;
        Ok(config)
    }

    /// Checks values that parse but make no sense together.
    pub fn validate(&self) -> Result<(), (String, String)> {
        let limits = |key: &str, values: &LimitValues| -> Result<(), (String, String)> {
            if values.call_deadline < Duration::from_millis(1) {
                return Err((
                    format!("limits.{key}.callDeadline"),
                    "must be at least 1ms".into(),
                ));
            }
            if values.memory < (1 << 20) {
                return Err((
                    format!("limits.{key}.memory"),
                    "must be at least 1Mi".into(),
                ));
            }
            Ok(())
        };
        limits("default", &self.limits.default)?;
        limits("max", &self.limits.max)?;
        if self.limits.default.call_deadline > self.limits.max.call_deadline {
            return Err((
                "limits.default.callDeadline".into(),
                "is above limits.max.callDeadline".into(),
            ));
        }
        if self.limits.default.memory > self.limits.max.memory {
            return Err((
                "limits.default.memory".into(),
                "is above limits.max.memory".into(),
            ));
        }
        if tracing_subscriber::EnvFilter::try_new(&self.log.level).is_err() {
            return Err((
                "log.level".into(),
                format!(
                    "{:?} is not a valid filter: use e.g. info, debug or info,herald=debug",
                    self.log.level
                ),
            ));
        }
        if self.log.plugin_lines_per_second == 0 || self.log.plugin_burst == 0 {
            return Err((
                "log.pluginLinesPerSecond".into(),
                "plugin log rate and burst must be at least 1".into(),
            ));
        }
        if self.queue.initial_backoff > self.queue.max_backoff {
            return Err((
                "queue.initialBackoff".into(),
                "is above queue.maxBackoff".into(),
            ));
        }
        let coalesced = &self.queue.coalesced;
        if coalesced.base_delay < Duration::from_millis(1) {
            return Err((
                "queue.coalesced.baseDelay".into(),
                "must be at least 1ms: a failing key would be retried without pause".into(),
            ));
        }
        if coalesced.base_delay > coalesced.max_delay {
            return Err((
                "queue.coalesced.baseDelay".into(),
                "is above queue.coalesced.maxDelay".into(),
            ));
        }
        if self.plugin_files.compile_timeout < Duration::from_secs(1) {
            return Err((
                "pluginFiles.compileTimeout".into(),
                "must be at least 1s: large plugins take seconds to compile".into(),
            ));
        }
        if self.plugin_files.max_size == 0 {
            return Err(("pluginFiles.maxSize".into(), "must be above zero".into()));
        }
        if let Some(workers) = self.dispatch.workers
            && !(1..=MAX_WORKERS).contains(&workers)
        {
            return Err((
                "dispatch.workers".into(),
                format!("must be between 1 and {MAX_WORKERS}, not {workers}"),
            ));
        }
        if let Some(allowed) = &self.plugin_files.allowed_sha256 {
            check_digests("pluginFiles.allowedSha256", allowed)?;
        }
        let source = &self.source;
        match source.kind {
            SourceKind::Embedded | SourceKind::InCluster | SourceKind::Auto
                if source.kubeconfig.is_some() || source.context.is_some() =>
            {
                return Err((
                    "source.kubeconfig".into(),
                    "kubeconfig and context need source.kind: kubeconfig".into(),
                ));
            }
            SourceKind::Kubeconfig | SourceKind::InCluster | SourceKind::Auto
                if !source.seed.is_empty() || source.kubeconfig_out.is_some() =>
            {
                return Err((
                    "source.seed".into(),
                    "seed and kubeconfigOut need source.kind: embedded".into(),
                ));
            }
            _ => {}
        }
        self.leader_election.validate("leaderElection")?;
        self.sharding.validate("sharding")?;
        let group = &self.sharding.lease_name;
        if group.len() > crate::shard::MAX_GROUP_NAME || group.contains('.') {
            return Err((
                "sharding.leaseName".into(),
                format!(
                    "{:?} must be at most {} characters without '.': it is a label value and prefixes every Lease's name",
                    self.sharding.lease_name,
                    crate::shard::MAX_GROUP_NAME
                ),
            ));
        }
        if self.sharding.enabled && self.leader_election.enabled {
            return Err((
                "sharding.enabled".into(),
                "sharding and leaderElection.enabled cannot both be on: under sharding every replica dispatches its own plugins; turn leaderElection off".into(),
            ));
        }
        let mut references = std::collections::HashSet::new();
        for (i, source) in self.plugin_sources.iter().enumerate() {
            let reference = crate::oci::parse_reference(&source.oci)
                .map_err(|e| (format!("pluginSources[{i}].oci"), e.to_string()))?;
            if !references.insert(reference.whole()) {
                return Err((
                    format!("pluginSources[{i}].oci"),
                    format!("{:?} is listed twice", source.oci),
                ));
            }
            if source.poll_interval < Duration::from_secs(1) {
                return Err((
                    format!("pluginSources[{i}].pollInterval"),
                    "must be at least 1s".into(),
                ));
            }
        }
        check_max_series("pluginMetrics.maxSeries", self.plugin_metrics.max_series)?;
        if !self.plugin_sources.is_empty() && self.plugin_source_cache_dir().is_none() {
            return Err((
                "pluginSourceCache".into(),
                "is needed for pluginSources (neither XDG_CACHE_HOME nor HOME is set)".into(),
            ));
        }
        for (name, plugin) in &self.plugins {
            if !crate::plugin::is_plugin_name(name) {
                return Err((
                    format!("plugins.{name}"),
                    "is not a valid plugin name (lowercase letters, digits and '-')".into(),
                ));
            }
            self.check_plugin_limits(&plugin.limits)
                .map_err(|(key, problem)| (format!("plugins.{name}.{key}"), problem))?;
            check_digests(&format!("plugins.{name}.sha256"), &plugin.sha256)?;
            check_grants(&plugin.grants, plugin.rate_limit.as_ref())
                .map_err(|(key, problem)| (format!("plugins.{name}.{key}"), problem))?;
            if let Some(max_series) = plugin.metrics.max_series {
                check_max_series(&format!("plugins.{name}.metrics.maxSeries"), max_series)?;
            }
        }
        Ok(())
    }

    /// Checks a plugin's limit overrides against `limits.max`; the key at
    /// fault is relative (`limits.memory`).
    fn check_plugin_limits(&self, limits: &PluginLimits) -> Result<(), (String, String)> {
        if let Some(deadline) = limits.call_deadline
            && deadline > self.limits.max.call_deadline
        {
            return Err((
                "limits.callDeadline".into(),
                format!(
                    "{} is above limits.max.callDeadline ({})",
                    crate::units::duration::format(deadline),
                    crate::units::duration::format(self.limits.max.call_deadline)
                ),
            ));
        }
        if let Some(memory) = limits.memory
            && memory > self.limits.max.memory
        {
            return Err((
                "limits.memory".into(),
                format!(
                    "{} is above limits.max.memory ({})",
                    crate::units::quantity::format(memory),
                    crate::units::quantity::format(self.limits.max.memory)
                ),
            ));
        }
        Ok(())
    }

    /// Parses a plugin's sidecar file (`<stem>.yaml` beside `<stem>.wasm`),
    /// checking its limits against `limits.max`.
    pub fn parse_sidecar(&self, text: &str, source_name: &str) -> Result<Sidecar, ConfigError> {
        let sidecar: Sidecar = parse_yaml(text, source_name)?;
        self.check_plugin_limits(&sidecar.limits)
            .map_err(|(key, problem)| ConfigError::new(source_name, &key, &problem))?;
        check_grants(&sidecar.grants, sidecar.rate_limit.as_ref())
            .map_err(|(key, problem)| ConfigError::new(source_name, &key, &problem))?;
        if !self.plugin_files.sidecar_grants && !sidecar.grants.is_empty() {
            return Err(ConfigError::new(
                source_name,
                "grants",
                "this sidecar grants capabilities or writes, but pluginFiles.sidecarGrants is \
                 off: grant them in the host configuration's plugins.<name> entry",
            ));
        }
        if let Some(name) = &sidecar.plugin
            && !crate::plugin::is_plugin_name(name)
        {
            return Err(ConfigError::new(
                source_name,
                "plugin",
                &format!("{name:?} is not a valid plugin name (lowercase letters, digits and '-')"),
            ));
        }
        Ok(sidecar)
    }

    /// The limit policy.
    pub fn limit_policy(&self) -> LimitPolicy {
        let limits = |v: &LimitValues| Limits {
            call_deadline: v.call_deadline,
            memory_bytes: v.memory,
        };
        LimitPolicy {
            default: limits(&self.limits.default),
            max: limits(&self.limits.max),
        }
    }

    /// The retry policy.
    pub fn retry_policy(&self) -> RetryPolicy {
        let coalesced = &self.queue.coalesced;
        RetryPolicy {
            max_retries: self.queue.max_retries,
            initial_backoff: self.queue.initial_backoff,
            max_backoff: self.queue.max_backoff,
            coalesced: KeyBackoff {
                base_delay: coalesced.base_delay,
                max_delay: coalesced.max_delay,
                max_retries: coalesced.max_retries,
            },
        }
    }

    /// The plugin log rate.
    pub fn log_rate(&self) -> LogRate {
        LogRate {
            lines_per_second: self.log.plugin_lines_per_second,
            burst: self.log.plugin_burst,
        }
    }

    /// How to load any plugin file before its identity is known: the limit
    /// policy, log rate and allow-list, and nothing keyed to a plugin (no
    /// configuration, overrides or grants).
    pub fn anonymous_load_options(
        &self,
        sink: std::sync::Arc<dyn crate::capability::log::LogSink>,
    ) -> crate::plugin::LoadOptions {
        crate::plugin::LoadOptions {
            sink,
            log_rate: self.log_rate(),
            policy: self.limit_policy(),
            allowed_digests: self
                .plugin_files
                .allowed_sha256
                .as_ref()
                .map(|list| list.clone().into()),
            max_metric_series: self.plugin_metrics.max_series,
            ..crate::plugin::LoadOptions::default()
        }
    }

    /// How to load the plugin called `name` (by its manifest) from a file
    /// with `sidecar`: its `plugins.<name>` entry, then its sidecar for what
    /// that entry leaves unset, with [`anonymous_load_options`]'s policy.
    /// Capabilities are granted only here, never by a sidecar. Check the
    /// file against the entry first ([`Config::check_identity`]).
    ///
    /// [`anonymous_load_options`]: Config::anonymous_load_options
    pub fn load_options(
        &self,
        name: &str,
        sidecar: Option<&Sidecar>,
        sink: std::sync::Arc<dyn crate::capability::log::LogSink>,
    ) -> crate::plugin::LoadOptions {
        let entry = self.plugins.get(name);
        let overrides = self.overrides_for(name);
        let from_sidecar = sidecar.map(|s| s.limits).unwrap_or_default();
        crate::plugin::LoadOptions {
            config: entry
                .and_then(|p| p.config.as_ref())
                .or(sidecar.and_then(|s| s.config.as_ref()))
                .map(|c| c.to_string()),
            overrides: RequestedLimits {
                call_deadline: overrides.call_deadline.or(from_sidecar.call_deadline),
                memory_bytes: overrides.memory_bytes.or(from_sidecar.memory),
            },
            grants: self.grants_for(name, sidecar),
            max_metric_series: entry
                .and_then(|p| p.metrics.max_series)
                .unwrap_or(self.plugin_metrics.max_series),
            ..self.anonymous_load_options(sink)
        }
    }

    /// Checks that a file whose plugin calls itself `name` and whose sha256
    /// is `digest` may run under that name: the digest is one the entry
    /// `plugins.<name>.sha256` pins (if it pins any), and the file's sidecar,
    /// if it names its plugin, names this one.
    pub fn check_identity(
        &self,
        name: &str,
        digest: &str,
        sidecar: Option<&Sidecar>,
    ) -> Result<(), String> {
        if let Some(expected) = sidecar.and_then(|s| s.plugin.as_deref())
            && expected != name
        {
            return Err(format!(
                "its sidecar is for plugin {expected:?} (its `plugin` key), but this file's plugin \
                 calls itself {name:?}: refused rather than given that sidecar's settings"
            ));
        }
        if let Some(entry) = self.plugins.get(name)
            && !entry.sha256.is_empty()
            && !entry.sha256.iter().any(|pinned| pinned == digest)
        {
            return Err(format!(
                "plugin {name:?} is pinned to other builds by plugins.{name}.sha256; this file's \
                 sha256 is {digest}: add it there to give this build the plugin's configuration \
                 and grants"
            ));
        }
        Ok(())
    }

    /// What the plugin called `name` is granted: its `plugins.<name>` entry,
    /// then (if `pluginFiles.sidecarGrants` allows) its sidecar for what the
    /// entry leaves unset.
    pub fn grants_for(&self, name: &str, sidecar: Option<&Sidecar>) -> crate::capability::Grants {
        let entry = self.plugins.get(name);
        let granting = sidecar.filter(|_| self.plugin_files.sidecar_grants);
        let grants = match (entry.map(|e| &e.grants), granting.map(|s| &s.grants)) {
            (Some(own), _) if !own.is_empty() => own.clone(),
            (_, Some(sidecar)) => sidecar.clone(),
            _ => GrantConfig::default(),
        };
        let events = grants.events.clone().or_else(|| {
            grants
                .capabilities
                .iter()
                .any(|c| c == crate::capability::events::CAPABILITY)
                .then(Default::default)
        });
        crate::capability::Grants {
            events,
            writes: grants.writes,
            mode: entry
                .and_then(|e| e.mode)
                .or(sidecar.and_then(|s| s.mode))
                .unwrap_or_default(),
            rate_limit: entry
                .and_then(|e| e.rate_limit)
                .or(sidecar.and_then(|s| s.rate_limit))
                .unwrap_or_default(),
            http: grants.http,
            all_declared: false,
        }
    }

    /// True when the operator disabled the plugin called `name`.
    pub fn is_disabled(&self, name: &str) -> bool {
        self.plugins.get(name).is_some_and(|p| p.disabled)
    }

    /// The operator's overrides for plugin `name`.
    pub fn overrides_for(&self, name: &str) -> RequestedLimits {
        self.plugins
            .get(name)
            .map(|p| RequestedLimits {
                call_deadline: p.limits.call_deadline,
                memory_bytes: p.limits.memory,
            })
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str) -> ConfigError {
        Config::parse(text, "herald.yaml").expect_err("must be refused")
    }

    #[test]
    fn an_empty_file_means_every_default() {
        assert_eq!(Config::parse("", "herald.yaml").unwrap(), Config::default());
    }

    #[test]
    fn the_worker_pool_defaults_to_one_thread_per_cpu_and_refuses_zero() {
        let config = Config::default();
        assert_eq!(config.dispatch.workers(), crate::plugin::default_workers());
        let config = Config::parse("dispatch:\n  workers: 3\n", "herald.yaml").unwrap();
        assert_eq!(config.dispatch.workers(), 3);
        let refused = error("dispatch:\n  workers: 0\n").to_string();
        assert!(
            refused.contains("dispatch.workers") && refused.contains("between 1 and 1024"),
            "{refused}"
        );
    }

    #[test]
    fn every_key_of_the_example_config_parses() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../examples/herald.yaml"
        ))
        .unwrap();
        let config = Config::parse(&text, "examples/herald.yaml").unwrap();
        assert_eq!(
            config.plugins["image-policy"].config.as_ref().unwrap()["allowedRegistries"][0],
            "docker.io"
        );
    }

    /// Every dotted configuration key that a message of the host's code
    /// names (in a string literal outside tests) is documented in
    /// docs/config.md, so an error never points at a setting that does not
    /// exist. `plugins.{name}…` is read as `plugins.<name>…`.
    #[test]
    fn every_setting_an_error_names_is_documented() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let documented: Vec<String> = std::fs::read_to_string(root.join("../docs/config.md"))
            .unwrap()
            .lines()
            .filter_map(|line| line.strip_prefix("| `")?.split('`').next())
            .map(str::to_owned)
            .collect();
        assert!(documented.len() > 30, "docs/config.md lists the keys");
        // A key matches a documented one, or the start of one, segment by
        // segment; a `{placeholder}` segment matches any.
        let is_documented = |key: &str| {
            let key: Vec<&str> = key.split('.').collect();
            documented.iter().any(|doc| {
                let doc: Vec<&str> = doc.split('.').collect();
                key.len() <= doc.len()
                    && key
                        .iter()
                        .zip(&doc)
                        .all(|(k, d)| k == d || k.starts_with('{'))
            })
        };
        let mut named = Vec::new();
        let mut sources = vec![root.join("src")];
        while let Some(path) = sources.pop() {
            if path.is_dir() {
                sources.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                let code = text.split("#[cfg(test)]").next().unwrap();
                for literal in string_literals(code) {
                    for key in setting_names(&literal) {
                        named.push((path.display().to_string(), key));
                    }
                }
            }
        }
        assert!(
            named.iter().any(|(_, key)| key == "pluginFiles.maxSize"),
            "the scan finds the keys errors name: {named:?}"
        );
        let undocumented: Vec<_> = named
            .iter()
            .filter(|(_, key)| !is_documented(key))
            .collect();
        assert!(
            undocumented.is_empty(),
            "named but not in docs/config.md: {undocumented:?}"
        );
    }

    /// The contents of the string literals in `code`, outside `//` comments.
    fn string_literals(code: &str) -> Vec<String> {
        let mut literals = Vec::new();
        for line in code.lines() {
            let mut chars = line.chars().peekable();
            let mut current: Option<String> = None;
            let mut previous = ' ';
            while let Some(c) = chars.next() {
                match &mut current {
                    Some(literal) => match c {
                        '\\' => {
                            chars.next();
                        }
                        '"' => literals.push(current.take().unwrap()),
                        _ => literal.push(c),
                    },
                    None if c == '/' && chars.peek() == Some(&'/') => break,
                    None if c == '"' && previous != '\'' => current = Some(String::new()),
                    None => {}
                }
                previous = c;
            }
            // A literal continued on the next line is read up to here.
            literals.extend(current);
        }
        literals
    }

    /// Dotted keys under a top-level configuration section named in `text`.
    fn setting_names(text: &str) -> Vec<String> {
        const SECTIONS: &[&str] = &[
            "source",
            "log",
            "cache",
            "limits",
            "queue",
            "shutdown",
            "pluginFiles",
            "plugins",
            "leaderElection",
            "sharding",
            "pluginSources[]",
        ];
        // A list entry's index is a placeholder: `pluginSources[{i}].oci`
        // is the documented `pluginSources[].oci`.
        let text = &text.replace("[{i}]", "[]");
        let mut keys = Vec::new();
        for (start, _) in text.match_indices('.') {
            let before = &text[..start];
            let Some(section) = SECTIONS.iter().find(|s| {
                before.ends_with(*s)
                    && !before[..before.len() - s.len()]
                        .ends_with(|c: char| c.is_alphanumeric() || c == '.' || c == '_')
            }) else {
                continue;
            };
            let rest: String = text[start + 1..]
                .chars()
                .take_while(|c| {
                    c.is_alphanumeric() || matches!(c, '.' | '-' | '{' | '}' | '<' | '>' | '_')
                })
                .collect();
            let rest = rest.trim_end_matches('.');
            if rest.is_empty() {
                continue; // the end of a sentence
            }
            let key = if *section == "plugins" {
                let (name, tail) = rest.split_once('.').unwrap_or((rest, ""));
                if name == "d" && tail.is_empty() {
                    continue; // the directory `plugins.d`
                }
                // A plugin's name is a placeholder in a message; a literal
                // one is kept as is, and is then not a documented key.
                let name = if name.starts_with('{') || name.starts_with('<') {
                    "<name>"
                } else {
                    name
                };
                match tail {
                    "" => format!("plugins.{name}"),
                    tail => format!("plugins.{name}.{tail}"),
                }
            } else {
                format!("{section}.{rest}")
            };
            keys.push(key);
        }
        keys
    }

    #[test]
    fn an_http_grant_parses_with_defaults_and_grants_the_capability() {
        let config = Config::parse(
            "plugins:\n  notify:\n    grants:\n      http:\n        allowedOrigins: \
             [https://hooks.example.com, 'http://10.0.0.7:8080', 'https://*.example.com']\n        \
             maxResponseSize: 64Ki\n",
            "herald.yaml",
        )
        .unwrap();
        let grants = config.grants_for("notify", None);
        let http = grants.http.as_ref().expect("the grant");
        assert_eq!(http.allowed_origins.len(), 3);
        assert_eq!(http.max_response_size, 64 << 10);
        assert_eq!(
            http.connect_timeout,
            crate::capability::http::DEFAULT_CONNECT_TIMEOUT
        );
        assert_eq!(http.timeout, crate::capability::http::DEFAULT_TIMEOUT);
        assert_eq!(
            http.max_concurrent,
            crate::capability::http::DEFAULT_MAX_CONCURRENT
        );
        assert!(config.grants_for("other", None).http.is_none());
    }

    #[test]
    fn a_bad_http_grant_names_the_key_at_fault() {
        let grant = |body: &str| error(&format!("plugins:\n  x:\n    grants:\n{body}"));
        let err = grant(
            "      http:\n        allowedOrigins: [https://a.example.com, hooks.example.com]\n",
        );
        assert_eq!(err.key, "plugins.x.grants.http.allowedOrigins[1]");
        assert!(err.problem.contains("no scheme"), "{err}");
        let err = grant("      http:\n        allowedOrigins: [https://a.example.com/api]\n");
        assert_eq!(err.key, "plugins.x.grants.http.allowedOrigins[0]");
        let err = grant("      http:\n        allowedOrigins: []\n");
        assert_eq!(err.key, "plugins.x.grants.http.allowedOrigins");
        let err = grant(
            "      http:\n        allowedOrigins: [https://a.example.com]\n        maxConcurrent: 0\n",
        );
        assert_eq!(err.key, "plugins.x.grants.http.maxConcurrent");
        let err = grant(
            "      http:\n        allowedOrigins: [https://a.example.com]\n        retries: 3\n",
        );
        assert_eq!(err.key, "plugins.x.grants.http.retries");
        let err = grant("      http:\n        timeout: 5s\n");
        assert_eq!(err.key, "plugins.x.grants.http");
        assert!(err.problem.contains("allowedOrigins"), "{err}");
        // The capability is granted by its section, not by its name alone.
        let err = grant("      capabilities: [http]\n");
        assert_eq!(err.key, "plugins.x.grants.http");
    }

    #[test]
    fn each_limit_left_out_keeps_its_own_default() {
        let config =
            Config::parse("limits:\n  max:\n    callDeadline: 120s\n", "herald.yaml").unwrap();
        let defaults = LimitsConfig::default();
        assert_eq!(config.limits.max.call_deadline, Duration::from_secs(120));
        assert_eq!(config.limits.max.memory, defaults.max.memory);
        assert_eq!(config.limits.default, defaults.default);
    }

    #[test]
    fn unknown_keys_are_named_with_their_path() {
        let err =
            error("limits:\n  default:\n    callDeadline: 1s\n    memory: 64Mi\n    cpu: 2\n");
        assert_eq!(err.key, "limits.default.cpu");
        assert!(err.problem.contains("unknown field `cpu`"), "{err}");
    }

    #[test]
    fn bad_values_name_the_key_and_the_problem() {
        let err = error("limits:\n  max:\n    callDeadline: soon\n    memory: 1Gi\n");
        assert_eq!(err.key, "limits.max.callDeadline");
        assert!(err.problem.contains("not a duration"), "{err}");
        let err = error("limits:\n  default: {callDeadline: 1s, memory: 64 apples}\n");
        assert_eq!(err.key, "limits.default.memory");
        let err = error("listen: not-an-address\n");
        assert_eq!(err.key, "listen");
        let err = error("log:\n  format: xml\n");
        assert_eq!(err.key, "log.format");
        assert_eq!(err.to_string().split(':').next(), Some("herald.yaml"));
    }

    #[test]
    fn plugin_series_caps_default_to_the_global_one_and_are_bounded() {
        let sink: std::sync::Arc<dyn crate::capability::log::LogSink> =
            std::sync::Arc::new(crate::capability::log::MemorySink::default());
        let config = Config::parse("", "herald.yaml").unwrap();
        assert_eq!(config.plugin_metrics.max_series, 1000);
        assert_eq!(
            config
                .load_options("any", None, sink.clone())
                .max_metric_series,
            1000
        );
        let config = Config::parse(
            "pluginMetrics: {maxSeries: 50}\nplugins:\n  chatty:\n    metrics: {maxSeries: 5000}\n",
            "herald.yaml",
        )
        .unwrap();
        assert_eq!(
            config
                .load_options("chatty", None, sink.clone())
                .max_metric_series,
            5000
        );
        assert_eq!(
            config
                .load_options("other", None, sink.clone())
                .max_metric_series,
            50
        );
        assert_eq!(config.anonymous_load_options(sink).max_metric_series, 50);
        let err = error("pluginMetrics: {maxSeries: 2000000}\n");
        assert_eq!(err.key, "pluginMetrics.maxSeries");
        assert!(err.problem.contains("above the 1000000 allowed"), "{err}");
        let err = error("plugins:\n  chatty:\n    metrics: {maxSeries: 2000000}\n");
        assert_eq!(err.key, "plugins.chatty.metrics.maxSeries");
        let err = error("plugins:\n  chatty:\n    metrics: {series: 5}\n");
        assert_eq!(err.key, "plugins.chatty.metrics.series");
        let err = error("pluginMetrics: {maxSeries: -1}\n");
        assert_eq!(err.key, "pluginMetrics.maxSeries");
    }

    #[test]
    fn inconsistent_values_are_refused() {
        let err = error("limits:\n  default: {callDeadline: 20s, memory: 64Mi}\n");
        assert_eq!(err.key, "limits.default.callDeadline");
        let err = error("plugins:\n  greedy:\n    limits: {memory: 8Gi}\n");
        assert_eq!(err.key, "plugins.greedy.limits.memory");
        let err = error("plugins:\n  Bad_Name: {}\n");
        assert_eq!(err.key, "plugins.Bad_Name");
        let err = error("source:\n  kind: embedded\n  context: prod\n");
        assert_eq!(err.key, "source.kubeconfig");
        let err = error("pluginFiles:\n  allowedSha256: [abc]\n");
        assert_eq!(err.key, "pluginFiles.allowedSha256[0]");
    }

    #[test]
    fn coalesced_queue_keys_default_to_client_go_and_are_checked() {
        let policy = Config::default().retry_policy();
        assert_eq!(policy.coalesced, KeyBackoff::default());
        assert_eq!(
            (
                policy.coalesced.base_delay,
                policy.coalesced.max_delay,
                policy.coalesced.max_retries
            ),
            (Duration::from_millis(5), Duration::from_secs(1000), 15)
        );
        let config = Config::parse(
            "queue:\n  coalesced:\n    baseDelay: 10ms\n    maxRetries: 4\n",
            "herald.yaml",
        )
        .unwrap();
        let coalesced = config.retry_policy().coalesced;
        assert_eq!(
            (
                coalesced.base_delay,
                coalesced.max_delay,
                coalesced.max_retries
            ),
            (Duration::from_millis(10), Duration::from_secs(1000), 4)
        );
        assert_eq!(
            config.retry_policy().max_retries,
            3,
            "every-event keeps its own"
        );

        let err = error("queue:\n  coalesced:\n    baseDelay: 0s\n");
        assert_eq!(err.key, "queue.coalesced.baseDelay");
        let err = error("queue:\n  coalesced:\n    baseDelay: 2s\n    maxDelay: 1s\n");
        assert_eq!(err.key, "queue.coalesced.baseDelay");
        assert!(err.problem.contains("queue.coalesced.maxDelay"), "{err}");
        let err = error("queue:\n  coalesced:\n    maxDelay: soon\n");
        assert_eq!(err.key, "queue.coalesced.maxDelay");
        let err = error("queue:\n  coalesced:\n    retries: 3\n");
        assert_eq!(err.key, "queue.coalesced.retries");
    }

    #[test]
    fn leader_election_is_off_by_default_with_client_go_timings() {
        let config = Config::parse("leaderElection: {}\n", "herald.yaml").unwrap();
        let election = &config.leader_election;
        assert!(!election.enabled);
        assert_eq!(election.lease_name, "herald");
        assert_eq!(election.lease_duration, Duration::from_secs(15));
        assert_eq!(election.renew_deadline, Duration::from_secs(10));
        assert_eq!(election.retry_period, Duration::from_secs(2));
    }

    #[test]
    fn leader_election_timings_that_break_the_protocol_name_the_key() {
        let err = error("leaderElection:\n  leaseDuration: 10s\n  renewDeadline: 10s\n");
        assert_eq!(err.key, "leaderElection.renewDeadline");
        assert!(err.problem.contains("shorter than leaseDuration"), "{err}");
        let err = error("leaderElection:\n  renewDeadline: 10s\n  retryPeriod: 9s\n");
        assert_eq!(err.key, "leaderElection.retryPeriod");
        let err = error("leaderElection:\n  leaseDuration: 1500ms\n  renewDeadline: 1s\n");
        assert_eq!(err.key, "leaderElection.leaseDuration");
        let err = error("leaderElection:\n  retryPeriod: 0s\n");
        assert_eq!(err.key, "leaderElection.retryPeriod");
        let err = error("leaderElection:\n  retryPeriod: often\n");
        assert_eq!(err.key, "leaderElection.retryPeriod");
        assert!(err.problem.contains("not a duration"), "{err}");
    }

    #[test]
    fn sharding_is_off_by_default_and_refused_together_with_leader_election() {
        let config = Config::parse("sharding: {}\n", "herald.yaml").unwrap();
        assert!(!config.sharding.enabled);
        assert_eq!(config.sharding.lease_duration, Duration::from_secs(15));
        let both = error("leaderElection:\n  enabled: true\nsharding:\n  enabled: true\n");
        assert_eq!(both.key, "sharding.enabled");
        assert!(both.problem.contains("leaderElection.enabled"), "{both}");
    }

    #[test]
    fn sharding_settings_are_checked_naming_the_sharding_key() {
        let err = error("sharding:\n  leaseDuration: 10s\n  renewDeadline: 10s\n");
        assert_eq!(err.key, "sharding.renewDeadline");
        let err = error("sharding:\n  leaseName: herald.shard\n");
        assert_eq!(err.key, "sharding.leaseName");
        let long = format!("sharding:\n  leaseName: {}\n", "a".repeat(64));
        assert_eq!(error(&long).key, "sharding.leaseName");
        assert_eq!(error("sharding:\n  replicas: 3\n").key, "sharding.replicas");
        let settings = ShardingConfig {
            identity: Some("pod-a".into()),
            lease_namespace: Some("ops".into()),
            ..ShardingConfig::default()
        }
        .lease_settings("sharding")
        .unwrap();
        assert_eq!(
            (settings.identity.as_str(), settings.namespace.as_str()),
            ("pod-a", "ops")
        );
        let err = ShardingConfig::default()
            .lease_settings_from("sharding", &|_| None, &|_| None)
            .unwrap_err();
        assert_eq!(err.key, "sharding.identity");
    }

    #[test]
    fn leader_election_names_are_checked_and_unknown_keys_refused() {
        assert_eq!(
            error("leaderElection:\n  leaseName: Herald_Lock\n").key,
            "leaderElection.leaseName"
        );
        assert_eq!(
            error("leaderElection:\n  leaseNamespace: kube.system\n").key,
            "leaderElection.leaseNamespace"
        );
        assert_eq!(
            error("leaderElection:\n  identity: \"\"\n").key,
            "leaderElection.identity"
        );
        assert_eq!(
            error("leaderElection:\n  leaseDurationSeconds: 15\n").key,
            "leaderElection.leaseDurationSeconds"
        );
    }

    #[test]
    fn lease_identity_and_namespace_default_from_the_pod() {
        let config = LeaderElectionConfig::default();
        let pod = |name: &str| match name {
            "POD_NAME" => Some("herald-7d9f-abcde".to_owned()),
            "POD_NAMESPACE" => Some("herald-system".to_owned()),
            "HOSTNAME" => Some("node-host".to_owned()),
            _ => None,
        };
        let settings = config
            .lease_settings_from("leaderElection", &pod, &|_| None)
            .unwrap();
        assert_eq!(settings.identity, "herald-7d9f-abcde");
        assert_eq!(settings.namespace, "herald-system");
        assert_eq!(settings.name, "herald");

        let bare = |name: &str| (name == "HOSTNAME").then(|| "laptop".to_owned());
        let token_dir = |path: &str| {
            (path == SERVICE_ACCOUNT_NAMESPACE_FILE).then(|| "from-token\n".to_owned())
        };
        let settings = config
            .lease_settings_from("leaderElection", &bare, &token_dir)
            .unwrap();
        assert_eq!(settings.identity, "laptop");
        assert_eq!(settings.namespace, "from-token");

        let settings = config
            .lease_settings_from("leaderElection", &bare, &|_| None)
            .unwrap();
        assert_eq!(settings.namespace, "default");

        let explicit = LeaderElectionConfig {
            identity: Some("replica-1".into()),
            lease_namespace: Some("ops".into()),
            ..LeaderElectionConfig::default()
        };
        let settings = explicit
            .lease_settings_from("leaderElection", &pod, &|_| None)
            .unwrap();
        assert_eq!(
            (settings.identity.as_str(), settings.namespace.as_str()),
            ("replica-1", "ops")
        );

        let err = config
            .lease_settings_from("leaderElection", &|_| None, &|_| None)
            .unwrap_err();
        assert_eq!(err.key, "leaderElection.identity");
    }

    #[test]
    fn an_error_stays_on_one_line_whatever_the_file_holds() {
        // Found by the config fuzz target: serde names an unknown field or
        // variant as written, line breaks included, and the key repeats it.
        let errors = [
            error("limits:\n  default: {callDeadline: 1s, \"mem\\nory\": 64Mi}\n"),
            error("log:\n  format: \"json\\r\\n\"\n"),
            error("plugins:\n  \"bad\\nname\": {}\n"),
            error("log:\n  format: \"\\e[2J\"\n"),
        ];
        assert_eq!(errors[0].key, "limits.default.mem\\nory");
        assert!(errors[0].problem.contains("unknown field `mem\\nory`"));
        assert!(errors[1].problem.contains("unknown variant `json\\r\\n`"));
        assert_eq!(errors[2].key, "plugins.bad\\nname");
        assert!(errors[3].problem.contains("`\\u{1b}[2J`"));
        for err in &errors {
            assert!(!err.to_string().contains(char::is_control), "{err:?}");
        }
    }
}
