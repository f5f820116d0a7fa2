//! The running plugins' output families at `/metrics`: log lines the rate
//! limit suppressed and stdout/stderr bytes dropped over the byte rate, one
//! series per plugin.

use super::LoadedPlugin;
use crate::capability::log::PluginLogger;
use crate::telemetry::{Labels, family};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;

/// Exports what the logger of each running plugin dropped (documented in
/// docs/metrics.md), labelled with its `plugin`. The plugins are those the
/// function given to [`new`](Self::new) returns, in its order: the daemon
/// keeps them.
pub struct PluginCollector {
    plugins: Box<dyn Fn() -> Vec<LoadedPlugin> + Send + Sync>,
}

impl PluginCollector {
    /// A collector over the plugins `plugins` returns when scraped.
    pub fn new(plugins: impl Fn() -> Vec<LoadedPlugin> + Send + Sync + 'static) -> Self {
        PluginCollector {
            plugins: Box::new(plugins),
        }
    }
}

impl std::fmt::Debug for PluginCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginCollector").finish_non_exhaustive()
    }
}

impl Collector for PluginCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let plugins = (self.plugins)();
        let each = |read: fn(&PluginLogger) -> u64| -> Vec<(Labels, f64)> {
            plugins
                .iter()
                .map(|plugin| {
                    let labels = vec![("plugin", plugin.name().to_owned())];
                    (labels, read(&plugin.context().log.logger) as f64)
                })
                .collect()
        };
        family(
            &mut encoder,
            "herald_plugin_log_lines_suppressed",
            "Plugin log lines dropped by the per-plugin rate limit.",
            MetricType::Counter,
            &each(PluginLogger::suppressed_total),
        )?;
        family(
            &mut encoder,
            "herald_plugin_output_bytes_dropped",
            "Bytes a plugin wrote to stdout or stderr over its byte rate, dropped before they became log lines.",
            MetricType::Counter,
            &each(PluginLogger::output_bytes_dropped),
        )
    }
}
