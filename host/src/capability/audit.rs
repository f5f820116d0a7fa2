//! The record of what plugins do through their capabilities: the audit
//! log target every capability writes its lines on, and the host-wide
//! counters `/metrics` exports, each capability's own ([`KubeStats`],
//! [`EventStats`], [`EgressStats`]) gathered in one [`ActionStats`].

use super::events::EventStats;
use super::http::EgressStats;
use super::kube::KubeStats;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use std::sync::Arc;

/// The log target of audit lines, for filtering (`RUST_LOG=herald::audit=info`).
pub const AUDIT_TARGET: &str = "herald::audit";

/// The `mode` label: how a write was sent.
pub fn mode_label(dry_run: bool) -> &'static str {
    if dry_run { "dry-run" } else { "enforce" }
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
}

/// The Prometheus collector of an [`ActionStats`].
#[derive(Debug)]
pub struct ActionStatsCollector(pub Arc<ActionStats>);

impl Collector for ActionStatsCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        self.0.kube.encode(&mut encoder)?;
        self.0.events.encode(&mut encoder)?;
        self.0.http.encode(&mut encoder)
    }
}
