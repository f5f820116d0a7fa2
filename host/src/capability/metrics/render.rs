//! Plugin metrics in the `/metrics` exposition: the registry is a
//! Prometheus collector, encoded with the host's own families.
//!
//! Output order is deterministic: first the host's two families about
//! plugin metrics (errors by reason, dropped series), then each plugin
//! family by exported name, `# HELP` and `# TYPE` once; within a family
//! series go by plugin, then by label values. Every series carries the
//! `plugin` label first. Help text and label values are escaped as the
//! text format requires.

use super::definition::{MetricKind, family_name, host_exposed_names, occupied};
use super::error::ErrorReason;
use super::registry::{PluginMetricsRegistry, Slot, Value};
use crate::telemetry::escape_help;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::Ordering;

/// Help of `herald_plugin_metric_errors_total`.
const ERRORS_HELP: &str = "Plugin metric updates dropped as misuse, by reason (undefined, \
                           wrong-kind, label-count, label-too-long, label-unsafe, negative, \
                           not-finite)";
/// Help of `herald_plugin_metric_series_dropped_total`.
const DROPPED_HELP: &str =
    "New plugin metric series dropped because the plugin had reached its series limit";

/// One series to encode: its plugin, label values and value.
type Row = (String, Vec<String>, Value);

impl Collector for PluginMetricsRegistry {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let installed = self.shared.lock();
        let defining = || installed.iter().filter(|(_, h)| !h.metrics.is_empty());
        let errors: Vec<_> = defining()
            .flat_map(|(plugin, handle)| {
                ErrorReason::ALL.iter().map(move |reason| {
                    let count = handle.state.errors.of(*reason).load(Ordering::Relaxed);
                    (
                        vec![
                            ("plugin", plugin.clone()),
                            ("reason", reason.as_str().to_owned()),
                        ],
                        count as f64,
                    )
                })
            })
            .collect();
        crate::telemetry::family(
            &mut encoder,
            "herald_plugin_metric_errors",
            ERRORS_HELP,
            MetricType::Counter,
            &errors,
        )?;
        let dropped: Vec<_> = defining()
            .map(|(plugin, handle)| {
                let count = handle.state.dropped.load(Ordering::Relaxed);
                (vec![("plugin", plugin.clone())], count as f64)
            })
            .collect();
        crate::telemetry::family(
            &mut encoder,
            "herald_plugin_metric_series_dropped",
            DROPPED_HELP,
            MetricType::Counter,
            &dropped,
        )?;

        // Exported family name → (plugin, slot). The registry gives every
        // exposed name one owner; the exposition makes sure of it again: a
        // family any of whose names is the host's, or was written already,
        // is left out, so no name ever gets two `# TYPE` lines.
        let mut families: BTreeMap<String, (&str, &Slot)> = BTreeMap::new();
        for (plugin, handle) in installed.iter() {
            for (name, slot) in &handle.metrics {
                families
                    .entry(family_name(plugin, name, slot.metric.shape.kind))
                    .or_insert((plugin.as_str(), slot));
            }
        }
        let host = host_exposed_names();
        let mut written: HashSet<String> = HashSet::new();
        for (family, (plugin, slot)) in families {
            let (help, mut rows) = {
                let series = slot.metric.lock();
                if series.retired {
                    continue;
                }
                let rows: Vec<Row> = series
                    .values
                    .iter()
                    .map(|(labels, value)| (plugin.to_owned(), labels.clone(), value.clone()))
                    .collect();
                (series.help.clone(), rows)
            };
            let names = occupied(&family);
            if names
                .iter()
                .any(|n| host.contains(n) || written.contains(n))
            {
                continue;
            }
            written.extend(names);
            rows.sort_by(|a, b| a.1.cmp(&b.1));
            let shape = &slot.metric.shape;
            let kind = match shape.kind {
                MetricKind::Counter => MetricType::Counter,
                MetricKind::Gauge => MetricType::Gauge,
                MetricKind::Histogram => MetricType::Histogram,
            };
            let mut metric = encoder.encode_descriptor(&family, &escape_help(&help), None, kind)?;
            for (plugin, values, value) in &rows {
                let mut labels: Vec<(&str, &str)> = Vec::with_capacity(values.len() + 1);
                labels.push(("plugin", plugin));
                labels.extend(
                    shape
                        .label_names
                        .iter()
                        .map(String::as_str)
                        .zip(values.iter().map(String::as_str)),
                );
                let mut series = metric.encode_family(&labels)?;
                match value {
                    Value::Number(n) if shape.kind == MetricKind::Counter => {
                        series.encode_counter::<NoLabelSet, _, f64>(n, None)?
                    }
                    Value::Number(n) => series.encode_gauge(n)?,
                    Value::Histogram(h) => {
                        let buckets: Vec<(f64, u64)> = shape
                            .bounds
                            .iter()
                            .copied()
                            .chain([f64::INFINITY])
                            .zip(h.counts.iter().copied())
                            .collect();
                        series.encode_histogram::<NoLabelSet>(h.sum, h.count, &buckets, None)?
                    }
                }
            }
        }
        Ok(())
    }
}

/// The registry alone, in the text format.
#[cfg(test)]
pub(super) fn text(registry: &PluginMetricsRegistry) -> String {
    let mut prometheus = prometheus_client::registry::Registry::default();
    prometheus.register_collector(Box::new(registry.clone()));
    crate::telemetry::encode(&prometheus)
}

#[cfg(test)]
mod tests {
    use super::super::registry::tests::{active, counter, gauge, histogram, labels};
    use super::*;
    use crate::capability::metrics::MetricDefinition;

    /// The plugin families of the exposition: without the two host families
    /// before them and the final `# EOF`.
    fn plugin_families(registry: &PluginMetricsRegistry) -> String {
        let text = text(registry);
        let start = text
            .lines()
            .position(|l| {
                l.starts_with("# HELP ")
                    && !l.starts_with("# HELP herald_plugin_metric_errors ")
                    && !l.starts_with("# HELP herald_plugin_metric_series_dropped ")
            })
            .map(|at| text.lines().take(at).map(|l| l.len() + 1).sum())
            .unwrap_or(text.len());
        text[start..].trim_end_matches("# EOF\n").to_owned()
    }

    #[test]
    fn a_counter_is_exported_with_its_plugin_label_and_total_suffix() {
        let registry = PluginMetricsRegistry::new();
        let p = active(&registry, "pod-watch", &[counter("restarts_total", &[])]);
        p.add("restarts_total", &[], 2.0).unwrap();
        assert_eq!(
            plugin_families(&registry),
            "# HELP herald_plugin_pod_watch__restarts Things counted.\n\
             # TYPE herald_plugin_pod_watch__restarts counter\n\
             herald_plugin_pod_watch__restarts_total{plugin=\"pod-watch\"} 2.0\n"
        );
    }

    #[test]
    fn a_gauges_series_are_sorted_by_label_values_and_escaped() {
        let registry = PluginMetricsRegistry::new();
        let p = active(&registry, "p", &[gauge("pods", &["namespace", "phase"])]);
        p.set("pods", &labels(&["b", "Running"]), 3.0).unwrap();
        p.set("pods", &labels(&["a", "Pending"]), 1.5).unwrap();
        p.set("pods", &labels(&["a\"\\", "Running"]), -2.0).unwrap();
        assert_eq!(
            plugin_families(&registry),
            "# HELP herald_plugin_p__pods A level.\n\
             # TYPE herald_plugin_p__pods gauge\n\
             herald_plugin_p__pods{plugin=\"p\",namespace=\"a\",phase=\"Pending\"} 1.5\n\
             herald_plugin_p__pods{plugin=\"p\",namespace=\"a\\\"\\\\\",phase=\"Running\"} -2.0\n\
             herald_plugin_p__pods{plugin=\"p\",namespace=\"b\",phase=\"Running\"} 3.0\n"
        );
    }

    #[test]
    fn a_histogram_has_its_own_buckets_then_inf_cumulated() {
        let registry = PluginMetricsRegistry::new();
        let p = active(
            &registry,
            "p",
            &[histogram("size_bytes", &["kind"], &[100.0, 1000.0])],
        );
        for value in [50.0, 500.0, 5000.0, 100.0] {
            p.observe("size_bytes", &labels(&["Pod"]), value).unwrap();
        }
        assert_eq!(
            plugin_families(&registry),
            "# HELP herald_plugin_p__size_bytes Observations.\n\
             # TYPE herald_plugin_p__size_bytes histogram\n\
             herald_plugin_p__size_bytes_sum{plugin=\"p\",kind=\"Pod\"} 5650.0\n\
             herald_plugin_p__size_bytes_count{plugin=\"p\",kind=\"Pod\"} 4\n\
             herald_plugin_p__size_bytes_bucket{le=\"100.0\",plugin=\"p\",kind=\"Pod\"} 2\n\
             herald_plugin_p__size_bytes_bucket{le=\"1000.0\",plugin=\"p\",kind=\"Pod\"} 3\n\
             herald_plugin_p__size_bytes_bucket{le=\"+Inf\",plugin=\"p\",kind=\"Pod\"} 4\n"
        );
    }

    #[test]
    fn no_exposed_name_gets_two_type_lines_even_past_a_broken_registration() {
        use super::super::registry::tests::install_unchecked;
        let registry = PluginMetricsRegistry::new();
        // What the registry refuses, installed anyway: plugin `a`'s
        // histogram `x_` against plugin `a--x`'s gauges `bucket` and `sum`
        // (which the registry refuses twice over: `x_` is not a metric name,
        // and the names are claimed).
        let a = install_unchecked(&registry, "a", &[histogram("x_", &[], &[])]);
        let neighbour = active(
            &registry,
            "a--x",
            &[gauge("bucket", &[]), gauge("sum", &[])],
        );
        a.observe("x_", &[], 1.0).unwrap();
        neighbour.set("bucket", &[], 2.0).unwrap();
        neighbour.set("sum", &[], 3.0).unwrap();
        let text = text(&registry);
        let mut declared = std::collections::HashMap::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let name = rest.split(' ').next().unwrap();
                for taken in occupied(name) {
                    assert!(
                        declared.insert(taken.clone(), name).is_none(),
                        "{taken} twice in:\n{text}"
                    );
                }
            }
        }
        // Every sample belongs to the one family declaring its name.
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let name = line.split(['{', ' ']).next().unwrap();
            assert!(declared.contains_key(name), "{name} in:\n{text}");
        }
        // The first family in the exposition's order (by name) is written,
        // the ones sharing its names are left out.
        assert!(
            text.contains("# TYPE herald_plugin_a__x_ histogram"),
            "{text}"
        );
        assert!(!text.contains("# TYPE herald_plugin_a__x__"), "{text}");
        for gauge in ["bucket", "sum"] {
            let sample = format!("herald_plugin_a__x__{gauge}{{plugin=\"a--x\"}}");
            assert!(!text.contains(&sample), "{text}");
        }
    }

    #[test]
    fn no_label_value_or_help_writes_an_unsafe_character() {
        let registry = PluginMetricsRegistry::new();
        let p = active(&registry, "p", &[gauge("g", &["v"])]);
        p.set("g", &labels(&[&crate::text::tests::hostile_text()]), 1.0)
            .unwrap_err();
        p.set("g", &labels(&["ok"]), 1.0).unwrap();
        let text = text(&registry);
        assert!(
            !text.chars().any(|c| c != '\n' && crate::text::is_unsafe(c)),
            "{text:?}"
        );
        assert!(text.contains("reason=\"label-unsafe\"} 1"), "{text}");
    }

    #[test]
    fn help_backslashes_are_escaped() {
        let registry = PluginMetricsRegistry::new();
        active(
            &registry,
            "p",
            &[MetricDefinition {
                help: r"Files under C:\plugins, one \n per line".into(),
                ..gauge("files", &[])
            }],
        );
        let text = plugin_families(&registry);
        assert!(
            text.starts_with(
                "# HELP herald_plugin_p__files Files under C:\\\\plugins, one \\\\n per line\n"
            ),
            "{text}"
        );
        assert_eq!(escape_help("a\nb"), "a\\nb");
    }

    #[test]
    fn each_plugin_has_its_own_family_for_a_metric_of_the_same_name() {
        let registry = PluginMetricsRegistry::new();
        let b = active(
            &registry,
            "b",
            &[MetricDefinition {
                help: "B's words.".into(),
                ..counter("calls_total", &["code"])
            }],
        );
        let a = active(&registry, "a", &[gauge("calls", &[])]);
        b.add("calls_total", &labels(&["500"]), 1.0).unwrap();
        a.set("calls", &[], 4.0).unwrap();
        assert_eq!(
            plugin_families(&registry),
            "# HELP herald_plugin_a__calls A level.\n\
             # TYPE herald_plugin_a__calls gauge\n\
             herald_plugin_a__calls{plugin=\"a\"} 4.0\n\
             # HELP herald_plugin_b__calls B's words.\n\
             # TYPE herald_plugin_b__calls counter\n\
             herald_plugin_b__calls_total{plugin=\"b\",code=\"500\"} 1.0\n"
        );
    }

    #[test]
    fn errors_and_dropped_series_are_counted_per_plugin_that_defines_metrics() {
        let registry = PluginMetricsRegistry::new();
        let p = registry.register("p", &[gauge("g", &["n"])], 1).unwrap();
        p.activate();
        active(&registry, "quiet", &[]);
        p.set("g", &labels(&["1"]), 1.0).unwrap();
        p.set("g", &labels(&["2"]), 1.0).unwrap_err();
        p.set("nope", &[], 1.0).unwrap_err();
        p.set("g", &[], f64::NAN).unwrap_err();
        let text = text(&registry);
        let head: Vec<&str> = text.lines().take(13).collect();
        assert_eq!(
            head,
            [
                format!("# HELP herald_plugin_metric_errors {ERRORS_HELP}").as_str(),
                "# TYPE herald_plugin_metric_errors counter",
                "herald_plugin_metric_errors_total{plugin=\"p\",reason=\"undefined\"} 1",
                "herald_plugin_metric_errors_total{plugin=\"p\",reason=\"wrong-kind\"} 0",
                "herald_plugin_metric_errors_total{plugin=\"p\",reason=\"label-count\"} 0",
                "herald_plugin_metric_errors_total{plugin=\"p\",reason=\"label-too-long\"} 0",
                "herald_plugin_metric_errors_total{plugin=\"p\",reason=\"label-unsafe\"} 0",
                "herald_plugin_metric_errors_total{plugin=\"p\",reason=\"negative\"} 0",
                "herald_plugin_metric_errors_total{plugin=\"p\",reason=\"not-finite\"} 1",
                format!("# HELP herald_plugin_metric_series_dropped {DROPPED_HELP}").as_str(),
                "# TYPE herald_plugin_metric_series_dropped counter",
                "herald_plugin_metric_series_dropped_total{plugin=\"p\"} 1",
                "# HELP herald_plugin_p__g A level.",
            ]
        );
    }

    #[test]
    fn a_new_version_keeps_unchanged_series_and_drops_the_rest_from_the_exposition() {
        let registry = PluginMetricsRegistry::new();
        let v1 = active(
            &registry,
            "p",
            &[
                counter("kept_total", &[]),
                gauge("gone", &[]),
                gauge("changed", &[]),
            ],
        );
        v1.add("kept_total", &[], 1.0).unwrap();
        v1.set("gone", &[], 1.0).unwrap();
        v1.set("changed", &[], 1.0).unwrap();
        active(
            &registry,
            "p",
            &[counter("kept_total", &[]), gauge("changed", &["x"])],
        );
        assert_eq!(
            plugin_families(&registry),
            "# HELP herald_plugin_p__changed A level.\n\
             # TYPE herald_plugin_p__changed gauge\n\
             # HELP herald_plugin_p__kept Things counted.\n\
             # TYPE herald_plugin_p__kept counter\n\
             herald_plugin_p__kept_total{plugin=\"p\"} 1.0\n"
        );
        registry.unregister("p");
        assert_eq!(plugin_families(&registry), "");
        assert!(!text(&registry).contains("plugin=\"p\""));
    }
}
