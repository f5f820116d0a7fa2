//! The vocabulary of Herald's Prometheus metrics, shared by everything that
//! exports them: the names of the host's own families (which plugin metrics
//! may not take), the handler-duration buckets, and the helpers that write
//! a family of constant samples and encode a registry as text.

use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// Every metric family the host exports itself, by the name its `# TYPE`
/// line gives (counters' samples add `_total`), with its type: the names
/// plugin metrics may not take (`capability::metrics` refuses a definition
/// whose series would collide with one). A test renders the host's
/// collectors and checks this list against what they export, and against
/// docs/metrics.md.
pub const HOST_FAMILIES: &[(&str, MetricType)] = &[
    // Informers.
    ("herald_watch_events", MetricType::Counter),
    ("herald_cache_objects", MetricType::Gauge),
    ("herald_cache_bytes", MetricType::Gauge),
    ("herald_watch_restarts", MetricType::Counter),
    ("herald_relists", MetricType::Counter),
    ("herald_watch_errors", MetricType::Counter),
    ("herald_watch_bad_objects", MetricType::Counter),
    // Listeners.
    ("herald_notifications_received", MetricType::Counter),
    ("herald_notifications_delivered", MetricType::Counter),
    ("herald_notifications_failed", MetricType::Counter),
    ("herald_notifications_retried", MetricType::Counter),
    ("herald_notifications_skipped", MetricType::Counter),
    ("herald_listener_queue_depth", MetricType::Gauge),
    ("herald_listener_queue_delayed", MetricType::Gauge),
    ("herald_listener_backoff_milliseconds", MetricType::Counter),
    ("herald_listener_requeues", MetricType::Counter),
    ("herald_plugin_faults", MetricType::Counter),
    ("herald_handler_duration_seconds", MetricType::Histogram),
    // Plugins and the process.
    ("herald_plugin_log_lines_suppressed", MetricType::Counter),
    ("herald_plugin_output_bytes_dropped", MetricType::Counter),
    ("herald_plugin_reloads", MetricType::Counter),
    ("herald_plugin_unloads", MetricType::Counter),
    ("herald_plugin_load_errors", MetricType::Counter),
    ("herald_plugin_compiles", MetricType::Counter),
    ("herald_plugin_compile_microseconds", MetricType::Counter),
    ("herald_plugin_artifact_cache_hits", MetricType::Counter),
    ("herald_plugin_source_pulls", MetricType::Counter),
    ("herald_dispatching", MetricType::Gauge),
    ("herald_plugin_workers_abandoned", MetricType::Counter),
    ("herald_plugin_degraded", MetricType::Gauge),
    ("herald_plugin_waiting_for_caches", MetricType::Gauge),
    ("herald_ready", MetricType::Gauge),
    // What plugins do (capability::audit).
    ("herald_plugin_api_requests", MetricType::Counter),
    (
        "herald_plugin_api_request_duration_seconds",
        MetricType::Histogram,
    ),
    ("herald_plugin_api_rate_limit_waits", MetricType::Counter),
    (
        "herald_plugin_api_rate_limit_wait_milliseconds",
        MetricType::Counter,
    ),
    ("herald_plugin_api_rate_limited", MetricType::Counter),
    ("herald_plugin_events", MetricType::Counter),
    ("herald_plugin_audit_lines_suppressed", MetricType::Counter),
    ("herald_plugin_http_requests", MetricType::Counter),
    (
        "herald_plugin_http_request_duration_seconds",
        MetricType::Histogram,
    ),
    // Plugins' own metrics (capability::metrics).
    ("herald_plugin_metric_errors", MetricType::Counter),
    ("herald_plugin_metric_series_dropped", MetricType::Counter),
    // Sharding (shard::view), exported only when it is on.
    ("herald_shard_owned_plugins", MetricType::Gauge),
    ("herald_shard_members", MetricType::Gauge),
    ("herald_shard_ownership_changes", MetricType::Counter),
];

/// Buckets of the handler duration histogram, in seconds: 10 µs to ~10 s.
pub fn handler_duration_buckets() -> impl Iterator<Item = f64> {
    prometheus_client::metrics::histogram::exponential_buckets(0.000_01, 4.0, 11)
}

/// A new handler duration histogram.
pub fn handler_histogram() -> Histogram {
    Histogram::new(handler_duration_buckets())
}

/// Encodes a registry in the Prometheus text format.
pub fn encode(registry: &Registry) -> String {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, registry)
        .expect("writing to a String cannot fail");
    text
}

/// The labels of one sample: name and value.
pub type Labels = Vec<(&'static str, String)>;

/// Writes one family of constant samples (a counter's or a gauge's).
pub fn family(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    kind: MetricType,
    rows: &[(Labels, f64)],
) -> Result<(), std::fmt::Error> {
    let mut metric = encoder.encode_descriptor(name, help, None, kind)?;
    for (labels, value) in rows {
        let labels: Vec<(&str, &str)> = labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let encoder = metric.encode_family(&labels)?;
        match kind {
            MetricType::Counter => ConstCounter::new(*value as u64).encode(encoder)?,
            _ => ConstGauge::new(*value as i64).encode(encoder)?,
        }
    }
    Ok(())
}
