//! The record of what plugins do through their capabilities: the audit
//! log target every capability writes its lines on, and the host-wide
//! counters `/metrics` exports, each capability's own ([`KubeStats`],
//! [`EventStats`], [`EgressStats`]) gathered in one [`ActionStats`].

use super::events::EventStats;
use super::http::EgressStats;
use super::kube::KubeStats;
use super::log::LogRate;
use crate::throttle::{Admit, Throttle};
use prometheus_client::collector::Collector;
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

/// Counters of what every plugin did through its capabilities.
#[derive(Debug, Default)]
pub struct ActionStats {
    /// Kubernetes API calls ([`crate::capability::kube`]).
    pub kube: KubeStats,
    /// Events ([`crate::capability::events`]).
    pub events: EventStats,
    /// Outbound HTTP requests ([`crate::capability::http`]).
    pub http: Arc<EgressStats>,
    /// Audit lines each plugin caused that its rate limit suppressed.
    audit_suppressed: Mutex<BTreeMap<String, u64>>,
}

impl ActionStats {
    /// API calls of `plugin` with `verb` that ended in `outcome`, in either mode.
    pub fn requests(&self, plugin: &str, verb: &str, outcome: &str) -> u64 {
        self.kube.requests(plugin, verb, outcome)
    }

    /// Rate-limit waits of `plugin` and calls it refused.
    pub fn throttling(&self, plugin: &str) -> (u64, u64) {
        self.kube.throttling(plugin)
    }

    /// Events of `plugin` that ended in `outcome`.
    pub fn events(&self, plugin: &str, outcome: &str) -> u64 {
        self.events.count(plugin, outcome)
    }

    /// Audit lines of `plugin` its rate limit suppressed.
    pub fn audit_suppressed(&self, plugin: &str) -> u64 {
        self.audit_suppressed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(plugin)
            .copied()
            .unwrap_or(0)
    }

    fn suppressed(&self, plugin: &str) {
        *self
            .audit_suppressed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(plugin.to_owned())
            .or_default() += 1;
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
    stats: Option<Arc<ActionStats>>,
}

impl AuditLog {
    /// The audit log of `plugin`, at `rate`, counting suppressed lines in
    /// `stats` (if the host exports any).
    pub fn new(plugin: &str, rate: LogRate, stats: Option<Arc<ActionStats>>) -> Self {
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
                    stats.suppressed(&self.plugin);
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

/// The Prometheus collector of an [`ActionStats`].
#[derive(Debug)]
pub struct ActionStatsCollector(pub Arc<ActionStats>);

impl Collector for ActionStatsCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        self.0.kube.encode(&mut encoder)?;
        self.0.events.encode(&mut encoder)?;
        self.0.http.encode(&mut encoder)?;
        let rows: Vec<_> = self
            .0
            .audit_suppressed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(plugin, n)| (vec![("plugin", plugin.clone())], *n as f64))
            .collect();
        crate::telemetry::family(
            &mut encoder,
            "herald_plugin_audit_lines_suppressed",
            "Audit lines plugins caused that their log rate limit suppressed (every call is still counted)",
            MetricType::Counter,
            &rows,
        )
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
