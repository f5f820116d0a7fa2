//! The operator's settings for each plugin identity (`plugins.<name>`),
//! and the sidecar files beside plugin files: which build may run under a
//! name, its configuration, limits, grants and mode.

use crate::capability::GrantConfig;
use crate::plugin::PluginLimits;
use crate::yaml::{ConfigError, parse_yaml};
use serde::Deserialize;

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
    /// `enforce` or `audit`: whether the plugin's admission refusals and
    /// changes reach the API server, or only warnings, audit lines and
    /// counts. Unset: `audit` when `mode` is `dry-run`, else `enforce`.
    /// Only this entry decides it: a sidecar's `mode` never weakens a
    /// policy.
    pub admission: Option<crate::capability::AdmissionMode>,
    /// The plugin's Kubernetes API request rate (default: client-go's 5 per
    /// second, burst 10).
    pub rate_limit: Option<crate::capability::rate::RateLimit>,
    /// Its metrics' limits.
    pub metrics: crate::capability::metrics::PluginMetricsLimits,
    /// Drop the plugin's instance once it has had nothing to deliver for
    /// this long, and make a fresh one for its next delivery: an idle
    /// plugin then holds no instance memory, at the cost of its globals
    /// and of instantiating again ([`crate::plugin::IdlePolicy`]). Unset:
    /// the instance lives as long as the plugin.
    #[serde(with = "crate::units::duration::option")]
    pub reclaim_idle_after: Option<std::time::Duration>,
    /// Let a build of this plugin that is neither pinned nor signed carry
    /// grants that act outside the host (writes, HTTP, Events) or read a
    /// sensitive kind: the operator's explicit opt-out of the identity
    /// rule, for this plugin only ([`super::trust`]).
    pub allow_unpinned: bool,
    /// The clusters the plugin runs on: `["*"]` for every cluster, or
    /// names; left out, the default cluster alone. Only the operator's
    /// entry sets it (a sidecar cannot), and a plugin must import the
    /// `cluster` interface (world 0.6.0) to run anywhere else than the
    /// default cluster.
    pub clusters: crate::cluster::Clusters,
}

/// Checks the grant keys shared by `plugins.<name>` and sidecars.
pub(crate) fn check_grants(
    grants: &GrantConfig,
    rate_limit: Option<&crate::capability::rate::RateLimit>,
) -> Result<(), crate::yaml::Invalid> {
    grants.validate()?;
    if let Some(rate) = rate_limit {
        rate.validate()
            .map_err(|e| crate::yaml::Invalid::new("rateLimit", e.to_string()))?;
    }
    Ok(())
}

/// A file that may not run under the name its plugin gives itself.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdentityError {
    /// Its sidecar names another plugin.
    #[error(
        "its sidecar is for plugin {expected:?} (its `plugin` key), but this file's plugin calls \
         itself {name:?}: refused rather than given that sidecar's settings"
    )]
    OtherSidecar {
        /// The plugin the sidecar names.
        expected: String,
        /// The plugin the file holds.
        name: String,
    },
    /// `plugins.<name>.sha256` pins other builds.
    #[error(
        "plugin {name:?} is pinned to other builds by plugins.{name}.sha256; this file's sha256 \
         is {digest}: add it there to give this build the plugin's configuration and grants"
    )]
    PinnedElsewhere {
        /// The plugin.
        name: String,
        /// The file's sha256.
        digest: String,
    },
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
    /// When to drop an idle instance (used where
    /// `plugins.<name>.reclaimIdleAfter` is unset).
    #[serde(with = "crate::units::duration::option")]
    pub reclaim_idle_after: Option<std::time::Duration>,
}

/// Checks that every entry of the list at `key` is a lowercase hex sha256.
pub(crate) fn check_digests(key: &str, digests: &[String]) -> Result<(), crate::yaml::Invalid> {
    for (index, digest) in digests.iter().enumerate() {
        if digest.len() != 64
            || !digest
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            return Err(crate::yaml::Invalid::new(
                format!("{key}[{index}]"),
                format!("{digest:?} is not a lowercase hex sha256 (64 characters)"),
            ));
        }
    }
    Ok(())
}

impl PluginConfig {
    /// Checks the entry of the plugin `name` against the host's `limits`;
    /// the key at fault is relative to `plugins.<name>`.
    pub fn validate(
        &self,
        name: &str,
        limits: &crate::plugin::LimitsConfig,
    ) -> Result<(), crate::yaml::Invalid> {
        let _ = name;
        limits.check_overrides(&self.limits)?;
        self.clusters
            .validate_reach("clusters")
            .map_err(|e| crate::yaml::Invalid::new("clusters", e))?;
        check_digests("sha256", &self.sha256)?;
        check_grants(&self.grants, self.rate_limit.as_ref())?;
        crate::plugin::IdlePolicy::check("reclaimIdleAfter", self.reclaim_idle_after)?;
        if let Some(max_series) = self.metrics.max_series {
            crate::capability::metrics::check_max_series("metrics.maxSeries", max_series)?;
        }
        Ok(())
    }
}

/// What the reloader needs to settle each plugin file: the operator's
/// settings of every plugin identity, and the host-wide policies they apply
/// within (built by [`Config::plugin_settings`](crate::config::Config::plugin_settings)).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PluginSettings {
    /// `plugins`: the settings of each plugin identity.
    pub plugins: std::collections::BTreeMap<String, PluginConfig>,
    /// `limits`: defaults and maxima.
    pub limits: crate::plugin::LimitsConfig,
    /// How much each plugin may log.
    pub log_rate: crate::capability::log::LogRate,
    /// `pluginFiles.allowedSha256`.
    pub allowed_sha256: Option<Vec<String>>,
    /// `pluginFiles.sidecarGrants`.
    pub sidecar_grants: bool,
    /// `pluginMetrics.maxSeries`.
    pub max_metric_series: usize,
    /// `reads`: the host-wide read policy.
    pub reads: crate::capability::reads::ReadPolicy,
    /// `pluginFiles.publicKeys`: the keys whose signatures the operator trusts.
    pub public_keys: Vec<std::path::PathBuf>,
}

impl PluginSettings {
    /// Parses a plugin's sidecar file (`<stem>.yaml` beside `<stem>.wasm`),
    /// checking its limits against `limits.max`.
    pub fn parse_sidecar(&self, text: &str, source_name: &str) -> Result<Sidecar, ConfigError> {
        let sidecar: Sidecar = parse_yaml(text, source_name)?;
        self.limits
            .check_overrides(&sidecar.limits)
            .map_err(|e| e.in_source(source_name))?;
        check_grants(&sidecar.grants, sidecar.rate_limit.as_ref())
            .map_err(|e| e.in_source(source_name))?;
        crate::plugin::IdlePolicy::check("reclaimIdleAfter", sidecar.reclaim_idle_after)
            .map_err(|e| e.in_source(source_name))?;
        if !self.sidecar_grants && !sidecar.grants.is_empty() {
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

    /// How to load any plugin file before its identity is known: the limit
    /// policy, log rate and allow-list, and nothing keyed to a plugin (no
    /// configuration, overrides or grants).
    pub fn anonymous_load_options(
        &self,
        sink: std::sync::Arc<dyn crate::capability::log::LogSink>,
    ) -> crate::plugin::LoadOptions {
        crate::plugin::LoadOptions {
            sink,
            log_rate: self.log_rate,
            policy: self.limits.policy(),
            allowed_digests: self.allowed_sha256.as_ref().map(|list| list.clone().into()),
            max_metric_series: self.max_metric_series,
            ..crate::plugin::LoadOptions::default()
        }
    }

    /// How to load the plugin called `name` (by its manifest) from a file
    /// with `sidecar`: its `plugins.<name>` entry, then its sidecar for what
    /// that entry leaves unset, with [`anonymous_load_options`]'s policy.
    /// Capabilities are granted only here, never by a sidecar unless
    /// `pluginFiles.sidecarGrants` allows. Check the file against the entry
    /// first ([`PluginSettings::check_identity`]).
    ///
    /// [`anonymous_load_options`]: PluginSettings::anonymous_load_options
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
            overrides: crate::plugin::RequestedLimits {
                call_deadline: overrides.call_deadline.or(from_sidecar.call_deadline),
                memory_bytes: overrides.memory_bytes.or(from_sidecar.memory),
            },
            grants: self.grants_for(name, sidecar),
            max_metric_series: entry
                .and_then(|p| p.metrics.max_series)
                .unwrap_or(self.max_metric_series),
            idle: crate::plugin::IdlePolicy {
                reclaim_after: entry
                    .and_then(|p| p.reclaim_idle_after)
                    .or(sidecar.and_then(|s| s.reclaim_idle_after)),
            },
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
    ) -> Result<(), IdentityError> {
        if let Some(expected) = sidecar.and_then(|s| s.plugin.as_deref())
            && expected != name
        {
            return Err(IdentityError::OtherSidecar {
                expected: expected.to_owned(),
                name: name.to_owned(),
            });
        }
        if let Some(entry) = self.plugins.get(name)
            && !entry.sha256.is_empty()
            && !entry.sha256.iter().any(|pinned| pinned == digest)
        {
            return Err(IdentityError::PinnedElsewhere {
                name: name.to_owned(),
                digest: digest.to_owned(),
            });
        }
        Ok(())
    }

    /// Checks that the build of `name` with sha256 `digest` (its file's
    /// `bytes`) may carry what it is granted: pinned, signed, pulled by
    /// digest or trusted unpinned when it is granted anything that acts
    /// outside the host or reads a sensitive kind ([`super::trust`]).
    pub fn check_trust(
        &self,
        name: &str,
        digest: &str,
        bytes: &[u8],
        sidecar: Option<&Sidecar>,
        evidence: &super::trust::Evidence,
    ) -> Result<(), super::trust::TrustError> {
        let entry = self.plugins.get(name);
        super::trust::check(
            name,
            digest,
            bytes,
            &self.grants_for(name, sidecar),
            entry.map(|e| e.sha256.as_slice()).unwrap_or_default(),
            entry.is_some_and(|e| e.allow_unpinned),
            &self.public_keys,
            evidence,
        )
    }

    /// What the plugin called `name` is granted: its `plugins.<name>` entry,
    /// then (if `pluginFiles.sidecarGrants` allows) its sidecar for what the
    /// entry leaves unset.
    pub fn grants_for(&self, name: &str, sidecar: Option<&Sidecar>) -> crate::capability::Grants {
        let entry = self.plugins.get(name);
        let granting = sidecar.filter(|_| self.sidecar_grants);
        let grants = match (entry.map(|e| &e.grants), granting.map(|s| &s.grants)) {
            (Some(own), _) if !own.is_empty() => own.clone(),
            (_, Some(sidecar)) => sidecar.clone(),
            _ => GrantConfig::default(),
        };
        let operator_mode = entry.and_then(|e| e.mode);
        let admission = entry
            .and_then(|e| e.admission)
            .unwrap_or(match operator_mode {
                Some(crate::capability::Mode::DryRun) => crate::capability::AdmissionMode::Audit,
                _ => crate::capability::AdmissionMode::Enforce,
            });
        crate::capability::Grants {
            admission,
            clusters: entry.map(|e| e.clusters.clone()).unwrap_or_default(),
            ..grants.grants(
                self.reads.clone(),
                operator_mode
                    .or(sidecar.and_then(|s| s.mode))
                    .unwrap_or_default(),
                self.rate_limit_for(entry.and_then(|e| e.rate_limit), sidecar),
            )
        }
    }

    /// The API rate of a plugin: the operator's (its entry's, else the
    /// default). A sidecar's rate replaces it only where the entry sets
    /// none, and, unless sidecars may grant (`pluginFiles.sidecarGrants`),
    /// only to lower it: whoever writes the plugin directory may slow a
    /// plugin down, not let it hit the API server harder.
    fn rate_limit_for(
        &self,
        operator: Option<crate::capability::rate::RateLimit>,
        sidecar: Option<&Sidecar>,
    ) -> crate::capability::rate::RateLimit {
        let base = operator.unwrap_or_default();
        match sidecar.and_then(|s| s.rate_limit) {
            Some(asked) if operator.is_none() && self.sidecar_grants => asked,
            Some(asked) => crate::capability::rate::RateLimit {
                qps: asked.qps.min(base.qps),
                burst: asked.burst.min(base.burst),
            },
            None => base,
        }
    }

    /// True when the operator disabled the plugin called `name`.
    pub fn is_disabled(&self, name: &str) -> bool {
        self.plugins.get(name).is_some_and(|p| p.disabled)
    }

    /// The operator's overrides for plugin `name`.
    pub fn overrides_for(&self, name: &str) -> crate::plugin::RequestedLimits {
        self.plugins
            .get(name)
            .map(|p| crate::plugin::RequestedLimits {
                call_deadline: p.limits.call_deadline,
                memory_bytes: p.limits.memory,
            })
            .unwrap_or_default()
    }
}
