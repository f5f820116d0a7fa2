//! The record of what plugins do through their capabilities: the audit
//! log target every capability writes its lines on, each plugin's
//! rate-limited [`AuditLog`], and the count of what the rate suppressed
//! ([`AuditStats`]). Each capability counts its own calls; the list in
//! `capability/mod.rs` gathers those counters in one
//! [`ActionStats`](super::ActionStats).

use super::log::LogRate;
use crate::throttle::{Admit, Throttle};
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The log target of audit lines, for filtering (`RUST_LOG=herald::audit=info`).
pub const AUDIT_TARGET: &str = "herald::audit";

/// The `mode` label: how a write was sent.
pub fn mode_label(dry_run: bool) -> &'static str {
    if dry_run { "dry-run" } else { "enforce" }
}

/// A latency for an audit line, in milliseconds to the microsecond
/// (`0.33`, not `0.32975000000000004`); 0 when there is none.
pub fn millis(latency: Option<std::time::Duration>) -> f64 {
    // A whole number of microseconds over 1000 prints as its shortest
    // decimal form.
    latency.map_or(0.0, |latency| latency.as_micros() as f64 / 1e3)
}

/// Audit lines each plugin caused that its rate limit suppressed.
#[derive(Debug, Default)]
pub struct AuditStats {
    suppressed: Mutex<BTreeMap<String, u64>>,
}

impl AuditStats {
    fn counts(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, u64>> {
        self.suppressed.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Audit lines of `plugin` its rate limit suppressed.
    pub fn suppressed(&self, plugin: &str) -> u64 {
        self.counts().get(plugin).copied().unwrap_or(0)
    }

    fn count(&self, plugin: &str) {
        *self.counts().entry(plugin.to_owned()).or_default() += 1;
    }
}

impl super::factor::Stats for AuditStats {
    fn encode(&self, encoder: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let rows: Vec<_> = self
            .counts()
            .iter()
            .map(|(plugin, n)| (vec![("plugin", plugin.clone())], *n as f64))
            .collect();
        crate::telemetry::family(
            encoder,
            "herald_plugin_audit_lines_suppressed",
            "Audit lines plugins caused that their log rate limit suppressed (every call is still counted)",
            MetricType::Counter,
            &rows,
        )
    }
}

/// The audit lines one plugin causes, rate-limited as its log lines are
/// (the same [`LogRate`]): a plugin making 200,000 refused calls a second
/// costs the host's log the burst and then the rate, not 200,000 lines.
/// What is suppressed is counted
/// (`herald_plugin_audit_lines_suppressed_total{plugin}`) and summed up in
/// one line per plugin every ten seconds at most, never silently. Counters
/// of calls and their outcomes count every call, suppressed or not.
#[derive(Debug)]
pub struct AuditLog {
    plugin: Arc<str>,
    throttle: Throttle,
    stats: Option<Arc<AuditStats>>,
}

impl AuditLog {
    /// The audit log of `plugin`, at `rate`, counting suppressed lines in
    /// `stats` (if the host exports any).
    pub fn new(plugin: &str, rate: LogRate, stats: Option<Arc<AuditStats>>) -> Self {
        AuditLog {
            plugin: plugin.into(),
            throttle: Throttle::new(rate.lines_per_second.into(), rate.burst.into()),
            stats,
        }
    }

    /// Writes one audit line with `write`, unless the plugin is over its
    /// rate (then the line is counted and dropped); first, when one is
    /// due, the summary of what was suppressed since the last one.
    pub fn record(&self, write: impl FnOnce()) {
        match self.throttle.admit(1, Instant::now()) {
            Admit::Drop => {
                if let Some(stats) = &self.stats {
                    stats.count(&self.plugin);
                }
            }
            Admit::Pass { summary } => {
                if let Some(suppressed) = summary {
                    tracing::warn!(
                        target: AUDIT_TARGET,
                        plugin = &*self.plugin,
                        suppressed,
                        "audit lines of this plugin suppressed by its rate limit (counted in \
                         herald_plugin_audit_lines_suppressed_total)"
                    );
                }
                write();
            }
        }
    }

    /// Lines suppressed since the plugin was loaded.
    pub fn suppressed_total(&self) -> u64 {
        self.throttle.dropped_total()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    #[test]
    fn audit_latencies_are_milliseconds_to_the_microsecond() {
        let latency = super::millis(Some(Duration::from_nanos(329_750)));
        assert_eq!(latency.to_string(), "0.329");
        assert_eq!(super::millis(Some(Duration::from_secs(2))), 2000.0);
        assert_eq!(super::millis(None), 0.0);
    }
}
