//! The record of plugins' outbound HTTP requests: one audit line per
//! request on the `herald::audit` target when the request is over (refusals
//! at `warn`), and the counters `/metrics` exports.

use super::super::audit::AUDIT_TARGET;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::histogram::Histogram;
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

/// How one request ended (the `outcome` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Outcome {
    /// A response was received and its body read to the end, or dropped by
    /// the plugin: whatever its status.
    Ok,
    /// No granted origin matches the request (or the plugin has no grant).
    DeniedOrigin,
    /// The name resolved to an address the plugin may not reach.
    DeniedAddress,
    /// The request's time budget, or its connect timeout, ran out.
    Timeout,
    /// The response body is larger than `maxResponseSize`.
    TooLarge,
    /// The request body is larger than `maxRequestSize`: refused when it
    /// declares its length, cut when it passes the cap.
    RequestTooLarge,
    /// Dry-run: a request with an unsafe method, not sent.
    WouldSend,
    /// Anything else: no such name, connection refused, TLS, protocol.
    Error,
}

impl Outcome {
    /// As written in metrics and audit lines.
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::DeniedOrigin => "denied-origin",
            Outcome::DeniedAddress => "denied-address",
            Outcome::Timeout => "timeout",
            Outcome::TooLarge => "too-large",
            Outcome::RequestTooLarge => "request-too-large",
            Outcome::WouldSend => "would-send",
            Outcome::Error => "error",
        }
    }

    /// True for the refusals of the policy (before any connection).
    pub fn is_refusal(self) -> bool {
        matches!(self, Outcome::DeniedOrigin | Outcome::DeniedAddress)
    }
}

/// What one finished request was, for its audit line.
#[derive(Debug, Clone)]
pub struct Finished<'a> {
    /// The plugin.
    pub plugin: &'a str,
    /// The request method.
    pub method: &'a str,
    /// The URL, without its query (which often holds credentials).
    pub url: &'a str,
    /// How it ended.
    pub outcome: Outcome,
    /// The response status, if one came.
    pub status: Option<u16>,
    /// Response body bytes passed to the plugin.
    pub bytes: u64,
    /// From the request to its end; `None` for a request refused before
    /// anything was sent.
    pub duration: Option<Duration>,
    /// Why it was refused or failed; empty if it did not.
    pub detail: &'a str,
}

/// Counters of every plugin's outbound HTTP requests.
#[derive(Debug, Default)]
pub struct EgressStats {
    inner: Mutex<Counts>,
}

#[derive(Debug, Default)]
struct Counts {
    /// (plugin, outcome) → requests.
    requests: BTreeMap<(String, Outcome), u64>,
    /// plugin → duration of requests that were attempted.
    duration: BTreeMap<String, Histogram>,
}

impl EgressStats {
    fn counts(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts one request and writes its audit line through `audit` (the
    /// plugin's, rate-limited).
    pub fn record(&self, request: &Finished<'_>, audit: &crate::capability::AuditLog) {
        let Finished {
            plugin,
            method,
            url,
            outcome,
            status,
            bytes,
            duration,
            detail,
        } = *request;
        let label = outcome.label();
        let duration_ms = crate::capability::audit::millis(duration);
        let status = status.unwrap_or(0);
        audit.record(|| {
            if outcome.is_refusal() {
                tracing::warn!(
                    target: AUDIT_TARGET,
                    plugin, method, url, outcome = label, reason = detail,
                    "plugin HTTP request refused"
                );
            } else if outcome == Outcome::WouldSend {
                tracing::info!(
                    target: AUDIT_TARGET,
                    plugin, method, url, outcome = label, bytes, detail,
                    "plugin HTTP request (dry-run: would send, not sent)"
                );
            } else {
                tracing::info!(
                    target: AUDIT_TARGET,
                    plugin, method, url, outcome = label, status, bytes, duration_ms, detail,
                    "plugin HTTP request"
                );
            }
        });
        let mut counts = self.counts();
        *counts
            .requests
            .entry((plugin.to_owned(), outcome))
            .or_default() += 1;
        if let Some(duration) = duration {
            counts
                .duration
                .entry(plugin.to_owned())
                .or_insert_with(|| Histogram::new(duration_buckets()))
                .observe(duration.as_secs_f64());
        }
    }

    /// Requests of `plugin` that ended in `outcome`.
    pub fn requests(&self, plugin: &str, outcome: Outcome) -> u64 {
        self.counts()
            .requests
            .get(&(plugin.to_owned(), outcome))
            .copied()
            .unwrap_or(0)
    }
}

/// Duration buckets, in seconds: 5 ms to about 20 s.
fn duration_buckets() -> impl Iterator<Item = f64> {
    prometheus_client::metrics::histogram::exponential_buckets(0.005, 4.0, 7)
}

/// The pending record of one request: written once, when the request ends
/// (refused, failed, its body read to the end or dropped), or when it is
/// dropped unfinished.
pub(super) struct Ledger {
    pub(super) stats: std::sync::Arc<EgressStats>,
    pub(super) audit: std::sync::Arc<crate::capability::AuditLog>,
    pub(super) plugin: std::sync::Arc<str>,
    pub(super) method: String,
    pub(super) url: String,
    pub(super) started: std::time::Instant,
    /// Set once the request was attempted (past the origin check).
    pub(super) attempted: bool,
    pub(super) status: Option<u16>,
    pub(super) bytes: u64,
    /// What a drop before [`Ledger::finish`] means.
    pub(super) on_drop: (Outcome, &'static str),
    finished: bool,
}

impl Ledger {
    pub(super) fn new(
        stats: std::sync::Arc<EgressStats>,
        audit: std::sync::Arc<crate::capability::AuditLog>,
        plugin: std::sync::Arc<str>,
        method: String,
        url: String,
    ) -> Self {
        Ledger {
            stats,
            audit,
            plugin,
            method,
            url,
            started: std::time::Instant::now(),
            attempted: false,
            status: None,
            bytes: 0,
            on_drop: (
                Outcome::Error,
                "cancelled before the response: the plugin dropped the request or its call ended",
            ),
            finished: false,
        }
    }

    /// Writes the record (once).
    pub(super) fn finish(&mut self, outcome: Outcome, detail: &str) {
        if std::mem::replace(&mut self.finished, true) {
            return;
        }
        self.stats.record(
            &Finished {
                plugin: &self.plugin,
                method: &self.method,
                url: &self.url,
                outcome,
                status: self.status,
                bytes: self.bytes,
                duration: self.attempted.then(|| self.started.elapsed()),
                detail,
            },
            &self.audit,
        );
    }
}

impl Drop for Ledger {
    fn drop(&mut self) {
        let (outcome, detail) = self.on_drop;
        self.finish(outcome, detail);
    }
}

impl crate::capability::factor::Stats for EgressStats {
    /// Writes the metric families.
    fn encode(&self, encoder: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let counts = self.counts();
        let requests: Vec<_> = counts
            .requests
            .iter()
            .map(|((plugin, outcome), n)| {
                (
                    vec![
                        ("plugin", plugin.clone()),
                        ("outcome", outcome.label().to_owned()),
                    ],
                    *n as f64,
                )
            })
            .collect();
        crate::telemetry::family(
            encoder,
            "herald_plugin_http_requests",
            "Outbound HTTP requests of plugins, by outcome: ok (a response, any status), \
             denied-origin, denied-address, timeout, too-large or error",
            MetricType::Counter,
            &requests,
        )?;
        let mut duration = encoder.encode_descriptor(
            "herald_plugin_http_request_duration_seconds",
            "Duration of plugins' outbound HTTP requests that were attempted, from the request \
             to the end of its response body, waits for a concurrency slot included",
            None,
            MetricType::Histogram,
        )?;
        for (plugin, histogram) in &counts.duration {
            histogram.encode(duration.encode_family(&[("plugin", plugin.as_str())])?)?;
        }
        Ok(())
    }
}
