//! The sharding's families at `/metrics`: plugins owned, members alive and
//! ownership changes of this replica, exported only when sharding is on.

use super::{Change, ShardView};
use crate::telemetry::family;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;
use std::sync::Arc;

/// Exports a [`ShardView`] at `/metrics` (documented in docs/metrics.md).
#[derive(Debug)]
pub struct ShardCollector(pub Arc<ShardView>);

impl Collector for ShardCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let view = &self.0;
        family(
            &mut encoder,
            "herald_shard_owned_plugins",
            "Plugins this replica owns (holds the Lease of) and dispatches to",
            MetricType::Gauge,
            &[(vec![], view.owned() as f64)],
        )?;
        family(
            &mut encoder,
            "herald_shard_members",
            "Live replicas sharing the plugins, as this replica last observed them",
            MetricType::Gauge,
            &[(vec![], view.members() as f64)],
        )?;
        let changes: Vec<_> = [Change::Acquired, Change::Released, Change::Lost]
            .into_iter()
            .map(|c| {
                (
                    vec![("change", c.as_str().to_owned())],
                    view.changes(c) as f64,
                )
            })
            .collect();
        family(
            &mut encoder,
            "herald_shard_ownership_changes",
            "Changes of this replica's ownership of plugins: acquired, released (rebalancing, unload, shutdown) or lost (another holder, or no renewal within renewDeadline)",
            MetricType::Counter,
            &changes,
        )
    }
}
