//! `pluginMetrics` and `plugins.<name>.metrics`: how many series plugins'
//! metrics may have.

use serde::Deserialize;

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
pub fn check_max_series(key: &str, max_series: usize) -> Result<(), crate::yaml::Invalid> {
    if max_series > MAX_PLUGIN_SERIES {
        return Err(crate::yaml::Invalid::new(
            key.to_owned(),
            format!("{max_series} is above the {MAX_PLUGIN_SERIES} allowed"),
        ));
    }
    Ok(())
}
