//! The `kube` capability's counters: calls by plugin, verb, outcome and
//! mode, their latency, and the rate limit's waits and refusals.

use super::request::ApiRequest;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::histogram::Histogram;
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

/// Counters of every plugin's Kubernetes API calls.
#[derive(Debug, Default)]
pub struct KubeStats {
    inner: Mutex<Counts>,
}

#[derive(Debug, Default)]
struct Counts {
    /// (plugin, verb, outcome, mode) → calls.
    requests: BTreeMap<(String, &'static str, &'static str, &'static str), u64>,
    /// (plugin, verb) → latency of calls that reached a backend.
    latency: BTreeMap<(String, &'static str), Histogram>,
    /// plugin → rate-limit waits, time waited and refusals.
    throttling: BTreeMap<String, Throttling>,
}

/// What the rate limit did to one plugin's calls.
#[derive(Debug, Default, Clone, Copy)]
struct Throttling {
    waits: u64,
    waited_seconds: f64,
    refused: u64,
}

impl KubeStats {
    fn counts(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts one call. `latency` is `None` for a call refused before it
    /// reached a backend.
    pub fn record(
        &self,
        plugin: &str,
        request: &ApiRequest,
        outcome: &'static str,
        latency: Option<Duration>,
    ) {
        let verb = request.operation.verb().as_str();
        let mode = super::super::audit::mode_label(request.dry_run);
        let mut counts = self.counts();
        *counts
            .requests
            .entry((plugin.to_owned(), verb, outcome, mode))
            .or_default() += 1;
        if let Some(latency) = latency {
            counts
                .latency
                .entry((plugin.to_owned(), verb))
                .or_insert_with(|| Histogram::new(latency_buckets()))
                .observe(latency.as_secs_f64());
        }
    }

    /// Records a wait for the rate limit.
    pub fn waited(&self, plugin: &str, wait: Duration) {
        let mut counts = self.counts();
        let entry = counts.throttling.entry(plugin.to_owned()).or_default();
        entry.waits += 1;
        entry.waited_seconds += wait.as_secs_f64();
    }

    /// Records a call the rate limit refused (its wait would pass the deadline).
    pub fn refused(&self, plugin: &str) {
        self.counts()
            .throttling
            .entry(plugin.to_owned())
            .or_default()
            .refused += 1;
    }

    /// Calls of `plugin` with `verb` that ended in `outcome`, in either mode.
    pub fn requests(&self, plugin: &str, verb: &str, outcome: &str) -> u64 {
        self.counts()
            .requests
            .iter()
            .filter(|((p, v, o, _), _)| p == plugin && *v == verb && *o == outcome)
            .map(|(_, n)| n)
            .sum()
    }

    /// Rate-limit waits of `plugin` and calls it refused.
    pub fn throttling(&self, plugin: &str) -> (u64, u64) {
        self.counts()
            .throttling
            .get(plugin)
            .map(|t| (t.waits, t.refused))
            .unwrap_or_default()
    }
}

/// Latency buckets of API calls, in seconds: 1 ms to about 16 s.
fn latency_buckets() -> impl Iterator<Item = f64> {
    prometheus_client::metrics::histogram::exponential_buckets(0.001, 4.0, 8)
}

impl crate::capability::factor::Stats for KubeStats {
    /// Writes the families for `/metrics`.
    fn encode(&self, encoder: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let counts = self.counts();
        let requests: Vec<_> = counts
            .requests
            .iter()
            .map(|((plugin, verb, outcome, mode), n)| {
                (
                    vec![
                        ("plugin", plugin.clone()),
                        ("verb", (*verb).to_owned()),
                        ("outcome", (*outcome).to_owned()),
                        ("mode", (*mode).to_owned()),
                    ],
                    *n as f64,
                )
            })
            .collect();
        crate::telemetry::family(
            encoder,
            "herald_plugin_api_requests",
            "Kubernetes API calls of plugins, by verb, outcome (ok or the error returned) and mode (enforce or dry-run)",
            MetricType::Counter,
            &requests,
        )?;
        let mut latency = encoder.encode_descriptor(
            "herald_plugin_api_request_duration_seconds",
            "Latency of plugins' Kubernetes API calls that reached the API server, rate-limit waits included",
            None,
            MetricType::Histogram,
        )?;
        for ((plugin, verb), histogram) in &counts.latency {
            let labels = [("plugin", plugin.as_str()), ("verb", *verb)];
            histogram.encode(latency.encode_family(&labels)?)?;
        }
        let per_plugin = |pick: fn(&Throttling) -> f64| -> Vec<_> {
            counts
                .throttling
                .iter()
                .map(|(plugin, entry)| (vec![("plugin", plugin.clone())], pick(entry)))
                .collect()
        };
        crate::telemetry::family(
            encoder,
            "herald_plugin_api_rate_limit_waits",
            "Calls that waited for the plugin's API rate limit",
            MetricType::Counter,
            &per_plugin(|t| t.waits as f64),
        )?;
        crate::telemetry::family(
            encoder,
            "herald_plugin_api_rate_limit_wait_seconds",
            "Time calls spent waiting for the plugin's API rate limit, in seconds",
            MetricType::Counter,
            &per_plugin(|t| t.waited_seconds),
        )?;
        crate::telemetry::family(
            encoder,
            "herald_plugin_api_rate_limited",
            "Calls refused because the rate limit could not admit them before the call's deadline",
            MetricType::Counter,
            &per_plugin(|t| t.refused as f64),
        )
    }
}
