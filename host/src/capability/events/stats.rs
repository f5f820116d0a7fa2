//! The `events` capability's counters: what became of each Event published.

use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// Events published by every plugin, by outcome.
#[derive(Debug, Default)]
pub struct EventStats {
    /// (plugin, outcome) → Events.
    counts: Mutex<BTreeMap<(String, &'static str), u64>>,
}

impl EventStats {
    /// Records what became of one published Event.
    pub fn record(&self, plugin: &str, outcome: &'static str) {
        *self
            .counts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry((plugin.to_owned(), outcome))
            .or_default() += 1;
    }

    /// Events of `plugin` that ended in `outcome`.
    pub fn count(&self, plugin: &str, outcome: &str) -> u64 {
        self.counts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter(|((p, o), _)| p == plugin && *o == outcome)
            .map(|(_, n)| n)
            .sum()
    }
}

impl crate::capability::factor::Stats for EventStats {
    /// Writes the family for `/metrics`.
    fn encode(&self, encoder: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let rows: Vec<_> = self
            .counts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|((plugin, outcome), n)| {
                (
                    vec![
                        ("plugin", plugin.clone()),
                        ("outcome", (*outcome).to_owned()),
                    ],
                    *n as f64,
                )
            })
            .collect();
        crate::telemetry::family(
            encoder,
            "herald_plugin_events",
            "Kubernetes Events published by plugins: created, merged into a series, dropped by the flood limit, or the error returned",
            MetricType::Counter,
            &rows,
        )
    }
}
