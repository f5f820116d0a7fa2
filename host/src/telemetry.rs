//! The vocabulary of Herald's Prometheus metrics, shared by everything that
//! exports them: the names of the host's own families (which plugin metrics
//! may not take), the handler-duration buckets, the helpers that write a
//! family of constant samples, and the two exposition formats `/metrics`
//! serves ([`Format`]): OpenMetrics 1.0.0, as `prometheus-client` encodes
//! it, and the Prometheus text format 0.0.4 derived from it.

use prometheus_client::encoding::{DescriptorEncoder, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
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
    ("herald_watch_protobuf_fallback", MetricType::Gauge),
    ("herald_watch_bad_objects", MetricType::Counter),
    // Listeners.
    ("herald_notifications_received", MetricType::Counter),
    ("herald_notifications_delivered", MetricType::Counter),
    ("herald_notifications_failed", MetricType::Counter),
    ("herald_notifications_retried", MetricType::Counter),
    ("herald_notifications_skipped", MetricType::Counter),
    ("herald_listener_queue_depth", MetricType::Gauge),
    ("herald_listener_queue_delayed", MetricType::Gauge),
    ("herald_listener_backoff_seconds", MetricType::Counter),
    ("herald_listener_requeues", MetricType::Counter),
    ("herald_plugin_faults", MetricType::Counter),
    ("herald_plugin_instances_replaced", MetricType::Counter),
    ("herald_handler_duration_seconds", MetricType::Histogram),
    // Plugins and the process.
    ("herald_plugin_log_lines_suppressed", MetricType::Counter),
    ("herald_plugin_output_bytes_dropped", MetricType::Counter),
    ("herald_plugin_reloads", MetricType::Counter),
    ("herald_plugin_unloads", MetricType::Counter),
    ("herald_plugin_load_errors", MetricType::Counter),
    ("herald_plugin_compiles", MetricType::Counter),
    ("herald_plugin_compile_seconds", MetricType::Counter),
    ("herald_plugin_artifact_cache_hits", MetricType::Counter),
    ("herald_plugin_source_pulls", MetricType::Counter),
    // Admission (admission::metrics).
    ("herald_admission_reviews", MetricType::Counter),
    ("herald_admission_duration_seconds", MetricType::Histogram),
    (
        "herald_admission_request_duration_seconds",
        MetricType::Histogram,
    ),
    ("herald_admission_violations", MetricType::Gauge),
    ("herald_admission_scanned", MetricType::Counter),
    ("herald_dispatching", MetricType::Gauge),
    ("herald_plugin_workers_abandoned", MetricType::Counter),
    ("herald_plugin_instances_reclaimed", MetricType::Counter),
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
        "herald_plugin_api_rate_limit_wait_seconds",
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

/// Encodes a registry in the OpenMetrics text format (what
/// `prometheus-client` writes: counter families named without `_total`,
/// their samples with it, `# EOF` last).
pub fn encode(registry: &Registry) -> String {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, registry)
        .expect("writing to a String cannot fail");
    text
}

/// Encodes a registry in `format`.
pub fn encode_as(registry: &Registry, format: Format) -> String {
    let openmetrics = encode(registry);
    match format {
        Format::OpenMetrics => openmetrics,
        Format::Text => text_from_openmetrics(&openmetrics),
    }
}

/// An exposition format of `/metrics`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// OpenMetrics 1.0.0 (`application/openmetrics-text`), when the
    /// scraper asks for it, as Prometheus does by default.
    OpenMetrics,
    /// The Prometheus text format 0.0.4 (`text/plain`): what is served to
    /// anyone who does not ask for OpenMetrics (curl, older scrapers,
    /// `promtool check metrics`).
    Text,
}

impl Format {
    /// The `Content-Type` of a response in this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Format::Text => "text/plain; version=0.0.4; charset=utf-8",
        }
    }

    /// The format an `Accept` header asks for, as Prometheus' client
    /// libraries negotiate it: media ranges by falling quality (the first
    /// listed first among equals); the first that is OpenMetrics (version
    /// 1.0.0, 0.0.1 or none) or plain text (version 0.0.4 or none) wins;
    /// anything else, or no header, gets the text format.
    pub fn negotiate(accept: Option<&str>) -> Format {
        let Some(accept) = accept else {
            return Format::Text;
        };
        let mut ranges: Vec<(f64, usize, Option<Format>)> = Vec::new();
        for (at, range) in accept.split(',').enumerate() {
            let mut parts = range.split(';').map(str::trim);
            let media = parts.next().unwrap_or_default().to_ascii_lowercase();
            let (mut quality, mut version) = (1.0, None);
            for parameter in parts {
                let Some((key, value)) = parameter.split_once('=') else {
                    continue;
                };
                let value = value.trim().trim_matches('"');
                match key.trim().to_ascii_lowercase().as_str() {
                    "q" => quality = value.parse().unwrap_or(0.0),
                    "version" => version = Some(value.to_owned()),
                    _ => {}
                }
            }
            let format = match (media.as_str(), version.as_deref()) {
                ("application/openmetrics-text", None | Some("1.0.0" | "0.0.1")) => {
                    Some(Format::OpenMetrics)
                }
                ("text/plain", None | Some("0.0.4")) => Some(Format::Text),
                _ => None,
            };
            if quality > 0.0 {
                ranges.push((quality, at, format));
            }
        }
        ranges.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        ranges
            .into_iter()
            .find_map(|(_, _, format)| format)
            .unwrap_or(Format::Text)
    }
}

/// The Prometheus text format 0.0.4 of an OpenMetrics exposition as
/// `prometheus-client` writes it: a counter family's `# HELP` and `# TYPE`
/// lines name it as its samples do (with `_total`), an info family becomes
/// a gauge named as its `_info` samples, `unknown` is `untyped`; `# UNIT`
/// and `# EOF` lines, which 0.0.4 does not have, are left out, and so are
/// exemplars; `\"` in help text is written as a plain `"` (0.0.4 escapes
/// only backslashes and line breaks there). Samples are unchanged.
pub fn text_from_openmetrics(openmetrics: &str) -> String {
    let kinds: std::collections::HashMap<&str, &str> = openmetrics
        .lines()
        .filter_map(|line| line.strip_prefix("# TYPE ")?.split_once(' '))
        .collect();
    let renamed = |name: &str| -> String {
        match kinds.get(name) {
            Some(&"counter") => format!("{name}_total"),
            Some(&"info") => format!("{name}_info"),
            _ => name.to_owned(),
        }
    };
    let mut text = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').unwrap_or((rest, ""));
            text.push_str("# HELP ");
            text.push_str(&renamed(name));
            text.push(' ');
            text.push_str(&unescape_quotes(help));
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, "unknown"));
            let kind = match kind {
                "counter" | "gauge" | "histogram" | "summary" => kind,
                "info" => "gauge",
                _ => "untyped",
            };
            text.push_str("# TYPE ");
            text.push_str(&renamed(name));
            text.push(' ');
            text.push_str(kind);
        } else if line.starts_with('#') {
            // `# UNIT`, `# EOF`: not in 0.0.4.
            continue;
        } else {
            text.push_str(&plain_sample(line));
        }
        text.push('\n');
    }
    text
}

/// A help text of OpenMetrics (`\\`, `\n` and `\"` escaped) as 0.0.4
/// writes it (`\\` and `\n` only).
fn unescape_quotes(help: &str) -> std::borrow::Cow<'_, str> {
    if !help.contains("\\\"") {
        return help.into();
    }
    let mut out = String::with_capacity(help.len());
    let mut chars = help.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('"') => out.push('"'),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out.into()
}

/// A sample line without an empty label set (`name{} 1`) and without an
/// exemplar (` # {…} 1`), which 0.0.4 does not have.
fn plain_sample(line: &str) -> String {
    let name_end = line.find(['{', ' ']).unwrap_or(line.len());
    let (name, rest) = line.split_at(name_end);
    let (labels, rest) = if rest.starts_with('{') {
        // The label set ends at the first `}` outside a quoted value.
        let (mut quoted, mut escaped, mut end) = (false, false, rest.len());
        for (at, c) in rest.char_indices() {
            match c {
                _ if escaped => escaped = false,
                '\\' if quoted => escaped = true,
                '"' => quoted = !quoted,
                '}' if !quoted => {
                    end = at + 1;
                    break;
                }
                _ => {}
            }
        }
        rest.split_at(end)
    } else {
        ("", rest)
    };
    let labels = if labels == "{}" { "" } else { labels };
    let rest = rest.split(" # ").next().unwrap_or(rest);
    format!("{name}{labels}{rest}")
}

/// The labels of one sample: name and value.
pub type Labels = Vec<(&'static str, String)>;

/// `help` as an OpenMetrics `# HELP` line holds it: backslashes, line
/// breaks and double quotes escaped (the text format 0.0.4 writes the
/// quotes plain: [`text_from_openmetrics`]).
pub fn escape_help(help: &str) -> std::borrow::Cow<'_, str> {
    if !help.contains(['\\', '\n', '"']) {
        return help.into();
    }
    help.replace('\\', "\\\\")
        .replace('\n', "\\n")
        .replace('"', "\\\"")
        .into()
}

/// Writes one family of constant samples (a counter's or a gauge's), its
/// help escaped: an unlabelled sample without a label set, a whole value
/// as an integer.
pub fn family(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    kind: MetricType,
    rows: &[(Labels, f64)],
) -> Result<(), std::fmt::Error> {
    let mut metric = encoder.encode_descriptor(name, &escape_help(help), None, kind)?;
    for (labels, value) in rows {
        let labels: Vec<(&str, &str)> = labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
        if labels.is_empty() {
            sample(&mut metric, kind, *value)?;
        } else {
            sample(&mut metric.encode_family(&labels)?, kind, *value)?;
        }
    }
    Ok(())
}

/// Writes one sample's value: whole values as integers, others as floats.
fn sample(metric: &mut MetricEncoder, kind: MetricType, value: f64) -> Result<(), std::fmt::Error> {
    let whole = value.fract() == 0.0 && value.abs() < 9.0e15;
    match kind {
        MetricType::Counter if whole && value >= 0.0 => {
            metric.encode_counter::<NoLabelSet, _, f64>(&(value as u64), None)
        }
        MetricType::Counter => metric.encode_counter::<NoLabelSet, _, f64>(&value, None),
        _ if whole => metric.encode_gauge(&(value as i64)),
        _ => metric.encode_gauge(&value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::collector::Collector;
    use prometheus_client::encoding::EncodeMetric;

    /// One family of each kind the host writes, labelled and not.
    #[derive(Debug)]
    struct Families;

    impl Collector for Families {
        fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
            family(
                &mut encoder,
                "herald_things",
                "Things counted, \"quoted\".",
                MetricType::Counter,
                &[(vec![], 3.0)],
            )?;
            family(
                &mut encoder,
                "herald_waited_seconds",
                "Time waited, in seconds.",
                MetricType::Counter,
                &[(vec![("plugin", "a \"b\"".to_owned())], 0.25)],
            )?;
            family(
                &mut encoder,
                "herald_level",
                "A level.",
                MetricType::Gauge,
                &[(vec![], -2.0)],
            )?;
            let mut metric = encoder.encode_descriptor(
                "herald_took_seconds",
                "Durations.",
                None,
                MetricType::Histogram,
            )?;
            let histogram = Histogram::new([0.5]);
            histogram.observe(0.1);
            histogram.encode(metric.encode_family(&[("plugin", "p")])?)
        }
    }

    fn registry() -> Registry {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(Families));
        registry
    }

    #[test]
    fn openmetrics_names_counter_families_without_total_and_ends_with_eof() {
        assert_eq!(
            encode_as(&registry(), Format::OpenMetrics),
            "# HELP herald_things Things counted, \\\"quoted\\\".\n\
             # TYPE herald_things counter\n\
             herald_things_total 3\n\
             # HELP herald_waited_seconds Time waited, in seconds.\n\
             # TYPE herald_waited_seconds counter\n\
             herald_waited_seconds_total{plugin=\"a \\\"b\\\"\"} 0.25\n\
             # HELP herald_level A level.\n\
             # TYPE herald_level gauge\n\
             herald_level -2\n\
             # HELP herald_took_seconds Durations.\n\
             # TYPE herald_took_seconds histogram\n\
             herald_took_seconds_sum{plugin=\"p\"} 0.1\n\
             herald_took_seconds_count{plugin=\"p\"} 1\n\
             herald_took_seconds_bucket{le=\"0.5\",plugin=\"p\"} 1\n\
             herald_took_seconds_bucket{le=\"+Inf\",plugin=\"p\"} 1\n\
             # EOF\n"
        );
    }

    #[test]
    fn the_text_format_names_counter_families_as_their_samples_without_eof() {
        assert_eq!(
            encode_as(&registry(), Format::Text),
            "# HELP herald_things_total Things counted, \"quoted\".\n\
             # TYPE herald_things_total counter\n\
             herald_things_total 3\n\
             # HELP herald_waited_seconds_total Time waited, in seconds.\n\
             # TYPE herald_waited_seconds_total counter\n\
             herald_waited_seconds_total{plugin=\"a \\\"b\\\"\"} 0.25\n\
             # HELP herald_level A level.\n\
             # TYPE herald_level gauge\n\
             herald_level -2\n\
             # HELP herald_took_seconds Durations.\n\
             # TYPE herald_took_seconds histogram\n\
             herald_took_seconds_sum{plugin=\"p\"} 0.1\n\
             herald_took_seconds_count{plugin=\"p\"} 1\n\
             herald_took_seconds_bucket{le=\"0.5\",plugin=\"p\"} 1\n\
             herald_took_seconds_bucket{le=\"+Inf\",plugin=\"p\"} 1\n"
        );
    }

    #[test]
    fn the_text_format_drops_what_0_0_4_lacks() {
        let openmetrics = "# HELP a_info Build.\n# TYPE a info\na_info{v=\"1\"} 1\n\
                           # HELP b_seconds Spent \\\"here\\\" \\\\ \\n.\n# TYPE b_seconds counter\n\
                           # UNIT b_seconds seconds\nb_seconds_total{} 1.5 # {id=\"x\"} 1.0\n\
                           # TYPE c unknown\nc{x=\"{} # }\"} 2\n# EOF\n";
        assert_eq!(
            text_from_openmetrics(openmetrics),
            "# HELP a_info Build.\n# TYPE a_info gauge\na_info{v=\"1\"} 1\n\
             # HELP b_seconds_total Spent \"here\" \\\\ \\n.\n# TYPE b_seconds_total counter\n\
             b_seconds_total 1.5\n# TYPE c untyped\nc{x=\"{} # }\"} 2\n"
        );
    }

    #[test]
    fn the_format_follows_accept_as_prometheus_asks() {
        use Format::{OpenMetrics, Text};
        let cases = [
            (None, Text),
            (Some("*/*"), Text),
            (Some("text/plain"), Text),
            (Some("application/openmetrics-text"), OpenMetrics),
            // Prometheus 2.x and 3.x scrapes.
            (
                Some(
                    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;\
                     version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
                ),
                OpenMetrics,
            ),
            (
                Some(
                    "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.5,\
                     application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=1.0.0;\
                     escaping=allow-utf-8;q=0.3,text/plain;version=0.0.4;q=0.2,*/*;q=0.1",
                ),
                OpenMetrics,
            ),
            // Preferences by quality, whatever the order.
            (
                Some("application/openmetrics-text; q=0.2, text/plain; q=0.9"),
                Text,
            ),
            (Some("application/openmetrics-text;q=0"), Text),
            // Versions it does not serve are skipped.
            (
                Some("application/openmetrics-text;version=2.0.0, text/plain"),
                Text,
            ),
            (
                Some("text/plain;version=1.0.0, application/openmetrics-text;q=0.5"),
                OpenMetrics,
            ),
            (Some("application/json"), Text),
        ];
        for (accept, wanted) in cases {
            assert_eq!(Format::negotiate(accept), wanted, "Accept: {accept:?}");
        }
        assert_eq!(
            OpenMetrics.content_type(),
            "application/openmetrics-text; version=1.0.0; charset=utf-8"
        );
        assert_eq!(
            Text.content_type(),
            "text/plain; version=0.0.4; charset=utf-8"
        );
    }
}
