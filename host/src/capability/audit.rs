//! The record of what plugins did through their capabilities: one audit
//! line per API call (plugin, verb, object, outcome, latency, dry-run) on
//! the `herald::audit` log target, and the counters `/metrics` exports.

use super::kube::ApiRequest;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::histogram::Histogram;
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

/// The log target of audit lines, for filtering (`RUST_LOG=herald::audit=info`).
pub const AUDIT_TARGET: &str = "herald::audit";

/// Counters of every plugin's API calls, Events and rate-limit waits, and
/// of their outbound HTTP requests.
#[derive(Debug, Default)]
pub struct ActionStats {
    inner: Mutex<Counts>,
    /// Outbound HTTP requests ([`crate::capability::http`]).
    pub http: std::sync::Arc<crate::capability::http::EgressStats>,
}

#[derive(Debug, Default)]
struct Counts {
    /// (plugin, verb, outcome, mode) → calls.
    requests: BTreeMap<(String, &'static str, &'static str, &'static str), u64>,
    /// (plugin, verb) → latency of calls that reached a backend.
    latency: BTreeMap<(String, &'static str), Histogram>,
    /// plugin → (waits, seconds waited, refusals).
    throttling: BTreeMap<String, (u64, f64, u64)>,
    /// (plugin, outcome) → Events.
    events: BTreeMap<(String, &'static str), u64>,
}

/// The `mode` label: how a write was sent.
pub fn mode_label(dry_run: bool) -> &'static str {
    if dry_run { "dry-run" } else { "enforce" }
}

impl ActionStats {
    fn counts(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records one call and writes its audit line. `latency` is `None` for a
    /// call refused before it reached a backend.
    pub fn record(
        &self,
        plugin: &str,
        request: &ApiRequest,
        outcome: &'static str,
        latency: Option<Duration>,
        detail: &str,
    ) {
        let verb = request.operation.verb().as_str();
        let mode = mode_label(request.dry_run);
        let target = &request.target;
        tracing::info!(
            target: AUDIT_TARGET,
            plugin,
            verb,
            kind = %target.gvk,
            namespace = target.namespace.as_deref().unwrap_or(""),
            name = %target.name,
            subresource = target.subresource.as_deref().unwrap_or(""),
            outcome,
            mode,
            latency_ms = latency.map(|l| l.as_secs_f64() * 1e3).unwrap_or(0.0),
            detail,
            "plugin API call"
        );
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
        entry.0 += 1;
        entry.1 += wait.as_secs_f64();
    }

    /// Records a call the rate limit refused (its wait would pass the deadline).
    pub fn refused(&self, plugin: &str) {
        self.counts()
            .throttling
            .entry(plugin.to_owned())
            .or_default()
            .2 += 1;
    }

    /// Records what became of one published Event.
    pub fn event(&self, plugin: &str, outcome: &'static str) {
        *self
            .counts()
            .events
            .entry((plugin.to_owned(), outcome))
            .or_default() += 1;
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
            .map(|(waits, _, refused)| (*waits, *refused))
            .unwrap_or_default()
    }

    /// Events of `plugin` that ended in `outcome`.
    pub fn events(&self, plugin: &str, outcome: &str) -> u64 {
        self.counts()
            .events
            .iter()
            .filter(|((p, o), _)| p == plugin && *o == outcome)
            .map(|(_, n)| n)
            .sum()
    }
}

/// Latency buckets of API calls, in seconds: 1 ms to about 16 s.
fn latency_buckets() -> impl Iterator<Item = f64> {
    prometheus_client::metrics::histogram::exponential_buckets(0.001, 4.0, 8)
}

impl Collector for ActionStatsCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let counts = self.0.counts();
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
        crate::metrics::family(
            &mut encoder,
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
        let per_plugin = |pick: fn(&(u64, f64, u64)) -> f64| -> Vec<_> {
            counts
                .throttling
                .iter()
                .map(|(plugin, entry)| (vec![("plugin", plugin.clone())], pick(entry)))
                .collect()
        };
        crate::metrics::family(
            &mut encoder,
            "herald_plugin_api_rate_limit_waits",
            "Calls that waited for the plugin's API rate limit",
            MetricType::Counter,
            &per_plugin(|e| e.0 as f64),
        )?;
        crate::metrics::family(
            &mut encoder,
            "herald_plugin_api_rate_limit_wait_milliseconds",
            "Time calls spent waiting for the plugin's API rate limit",
            MetricType::Counter,
            &per_plugin(|e| e.1 * 1e3),
        )?;
        crate::metrics::family(
            &mut encoder,
            "herald_plugin_api_rate_limited",
            "Calls refused because the rate limit could not admit them before the call's deadline",
            MetricType::Counter,
            &per_plugin(|e| e.2 as f64),
        )?;
        let events: Vec<_> = counts
            .events
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
        crate::metrics::family(
            &mut encoder,
            "herald_plugin_events",
            "Kubernetes Events published by plugins: created, merged into a series, dropped by the flood limit, or the error returned",
            MetricType::Counter,
            &events,
        )?;
        drop(counts);
        self.0.http.encode(&mut encoder)
    }
}

/// The Prometheus collector of an [`ActionStats`].
#[derive(Debug)]
pub struct ActionStatsCollector(pub std::sync::Arc<ActionStats>);
