//! The daemon's configuration file (`herald.yaml`): every key, its default,
//! and validation that names the key at fault. Command-line flags override it.
//! `docs/config.md` documents each key; `examples/herald.yaml` shows them all.
//!
//! Each section is defined, with its defaults and its validation, by the
//! part of Herald it configures (the [`source`](crate::source), the host's
//! [`log`](crate::logging), the [`cache`](crate::store), plugin
//! [`limits`](crate::plugin::LimitsConfig), the [`queue`](crate::dispatch),
//! [`shutdown`](crate::dispatch::ShutdownConfig), the
//! [worker pool](crate::plugin::DispatchConfig), [`pluginFiles`] and
//! [`plugins`](crate::reload::settings), [`leaderElection`] and
//! [`sharding`](crate::leader::LeaseConfig), plugin sources, plugin metrics
//! and [`reads`](crate::capability::reads)); this module puts them together,
//! checks what spans sections, and hands each part what it needs.
//!
//! [`pluginFiles`]: crate::reload::PluginFilesConfig
//! [`leaderElection`]: crate::leader::LeaseConfig

use crate::admission::AdmissionConfig;
use crate::capability::metrics::{PluginMetricsConfig, check_max_series};
use crate::capability::reads::ReadPolicy;
use crate::dispatch::ShutdownConfig;
use crate::dispatch::{QueueConfig, RetryPolicy};
use crate::leader::{LeaderElectionConfig, ShardingConfig};
use crate::logging::LogConfig;
use crate::plugin::{DispatchConfig, LimitPolicy, LimitsConfig};
use crate::readiness::ReadinessConfig;
use crate::reload::sources::PluginSourceConfig;
use crate::reload::{PluginConfig, PluginFilesConfig, PluginSettings};
use crate::source::SourceConfig;
use crate::store::CacheConfig;
use crate::yaml::Invalid;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

pub use crate::yaml::ConfigError;

/// The whole configuration.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct Config {
    /// Directory of plugin `.wasm` files (and their optional sidecar `.yaml` files).
    pub plugin_dir: PathBuf,
    /// The cluster to watch: the default cluster.
    pub source: SourceConfig,
    /// The other clusters to watch, each named.
    pub clusters: Vec<SourceConfig>,
    /// A directory of kubeconfig files, one cluster each, followed while
    /// the daemon runs (`crate::fleet::ClusterDirectory`).
    pub cluster_directory: Option<PathBuf>,
    /// Secrets holding kubeconfigs in a namespace of the default cluster
    /// (Cluster API's and Argo CD's conventions), read while the daemon
    /// runs (`crate::fleet::ClusterSecrets`).
    pub cluster_secrets: Option<crate::fleet::ClusterSecretsConfig>,
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
    /// What plugins may read without a grant of their own, and which kinds
    /// only a grant naming them makes readable.
    pub reads: ReadPolicy,
    /// What holds the replica's readiness.
    pub readiness: ReadinessConfig,
    /// Admission: plugins deciding on writes at the API server's door.
    pub admission: AdmissionConfig,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            plugin_dir: PathBuf::from("plugins.d"),
            source: SourceConfig::default(),
            clusters: Vec::new(),
            cluster_directory: None,
            cluster_secrets: None,
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
            reads: Default::default(),
            readiness: ReadinessConfig::default(),
            admission: AdmissionConfig::default(),
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
        let config: Config = crate::yaml::parse_yaml(text, source_name)?;
        config.validate().map_err(|e| e.in_source(source_name))?;
        Ok(config)
    }

    /// Checks every section, then what spans sections; the error names the
    /// full dotted key.
    pub fn validate(&self) -> Result<(), Invalid> {
        let within = |section: &'static str| move |e: Invalid| e.within(section);
        self.source.validate().map_err(within("source"))?;
        self.validate_clusters()?;
        self.log.validate().map_err(within("log"))?;
        self.admission.validate().map_err(within("admission"))?;
        self.limits.validate().map_err(within("limits"))?;
        self.queue.validate().map_err(within("queue"))?;
        self.dispatch.validate().map_err(within("dispatch"))?;
        self.plugin_files
            .validate()
            .map_err(within("pluginFiles"))?;
        self.leader_election.validate("leaderElection")?;
        self.sharding.validate("sharding")?;
        crate::shard::check_group_name(&self.sharding.lease_name)
            .map_err(|problem| Invalid::new("sharding.leaseName", problem.to_string()))?;
        if self.sharding.enabled && self.leader_election.enabled {
            return Err(Invalid::new(
                "sharding.enabled",
                "sharding and leaderElection.enabled cannot both be on: under sharding every \
                 replica dispatches its own plugins; turn leaderElection off",
            ));
        }
        crate::reload::sources::validate_sources(&self.plugin_sources)?;
        if !self.plugin_sources.is_empty() && self.plugin_source_cache_dir().is_none() {
            return Err(Invalid::new(
                "pluginSourceCache",
                "is needed for pluginSources (neither XDG_CACHE_HOME nor HOME is set)",
            ));
        }
        check_max_series("pluginMetrics.maxSeries", self.plugin_metrics.max_series)?;
        for (name, plugin) in &self.plugins {
            if !crate::plugin::is_plugin_name(name) {
                return Err(Invalid::new(
                    format!("plugins.{name}"),
                    "is not a valid plugin name (lowercase letters, digits and '-')",
                ));
            }
            plugin
                .validate(name, &self.limits)
                .map_err(|e| e.within(&format!("plugins.{name}")))?;
        }
        Ok(())
    }

    /// Checks `clusters` (each named, each name once, none the default
    /// cluster's) and that every `plugins.<name>.clusters` names only
    /// clusters configured, or is a well-formed label selector.
    fn validate_clusters(&self) -> Result<(), Invalid> {
        if let Some(secrets) = &self.cluster_secrets {
            secrets.validate().map_err(|e| e.within("clusterSecrets"))?;
        }
        let default_name = self.default_cluster_name();
        let mut names = std::collections::BTreeSet::new();
        for (index, cluster) in self.clusters.iter().enumerate() {
            let key = format!("clusters[{index}]");
            cluster.validate_other().map_err(|e| e.within(&key))?;
            let name = cluster.name.as_ref().map_or("", |n| n.as_str());
            if name == default_name {
                return Err(Invalid::new(
                    format!("{key}.name"),
                    format!(
                        "{name:?} is the default cluster's name (source.name): give each cluster \
                         a name of its own"
                    ),
                ));
            }
            if !names.insert(name) {
                return Err(Invalid::new(
                    format!("{key}.name"),
                    format!("{name:?} names two clusters: give each cluster a name of its own"),
                ));
            }
        }
        // A cluster directory adds clusters at run time: a plugin may name
        // them before they come.
        let open = self.cluster_directory.is_some() || self.cluster_secrets.is_some();
        for (plugin, settings) in &self.plugins {
            for name in &settings.clusters.0 {
                // A selector (checked with the plugin's entry) names none.
                if crate::cluster::selector_entry(name).is_some() {
                    continue;
                }
                if !open
                    && name != crate::cluster::ALL_CLUSTERS
                    && name != default_name
                    && !names.contains(name.as_str())
                {
                    return Err(Invalid::new(
                        format!("plugins.{plugin}.clusters"),
                        format!(
                            "{name:?} is not a configured cluster (source.name {default_name:?} \
                             or a clusters[].name; with clusterDirectory or clusterSecrets, any \
                             name)"
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The names of the clusters the configuration names itself: the
    /// default cluster's first, then each of `clusters[]` (a provider's
    /// come at run time).
    pub fn configured_cluster_names(&self) -> Vec<String> {
        std::iter::once(self.default_cluster_name().to_owned())
            .chain(
                self.clusters
                    .iter()
                    .filter_map(|c| c.name.as_ref().map(|n| n.as_str().to_owned())),
            )
            .collect()
    }

    /// The default cluster's name: `source.name`, else
    /// [`DEFAULT_CLUSTER`](crate::cluster::DEFAULT_CLUSTER).
    pub fn default_cluster_name(&self) -> &str {
        self.source
            .name
            .as_ref()
            .map_or(crate::cluster::DEFAULT_CLUSTER, |n| n.as_str())
    }

    /// The directory pulled plugins are kept in, if one is known.
    pub fn plugin_source_cache_dir(&self) -> Option<PathBuf> {
        if let Some(dir) = &self.plugin_source_cache {
            return Some(dir.clone());
        }
        Some(crate::plugin::cache_home()?.join("herald").join("oci"))
    }

    /// The limit policy.
    pub fn limit_policy(&self) -> LimitPolicy {
        self.limits.policy()
    }

    /// The retry policy.
    pub fn retry_policy(&self) -> RetryPolicy {
        self.queue.retry_policy()
    }

    /// What the reloader needs to settle each plugin file: the settings of
    /// every plugin identity and the host-wide policies they apply within.
    pub fn plugin_settings(&self) -> PluginSettings {
        PluginSettings {
            plugins: self.plugins.clone(),
            limits: self.limits,
            log_rate: self.log.plugin_rate(),
            allowed_sha256: self.plugin_files.allowed_sha256.clone(),
            sidecar_grants: self.plugin_files.sidecar_grants,
            max_metric_series: self.plugin_metrics.max_series,
            reads: ReadPolicy {
                default_cluster: self.source.name.clone(),
                ..self.reads.clone()
            },
            public_keys: self.plugin_files.public_keys.clone(),
        }
    }
}

#[cfg(test)]
mod tests;
