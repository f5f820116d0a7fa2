//! The plugin loader's families at `/metrics`: reloads, unloads, load
//! errors, compilations and their time, artifact cache hits and source
//! pulls, process-wide.

use super::LoaderStats;
use crate::telemetry::{Labels, family};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Exports the loader's [`LoaderStats`] (documented in docs/metrics.md):
/// unlabelled counters, and the source pulls by `outcome`.
#[derive(Debug)]
pub struct LoaderCollector(pub Arc<LoaderStats>);

impl Collector for LoaderCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let stats = &self.0;
        let total = |count: &AtomicU64| -> [(Labels, f64); 1] {
            [(Vec::new(), count.load(Ordering::Relaxed) as f64)]
        };
        family(
            &mut encoder,
            "herald_plugin_reloads",
            "Plugins loaded or swapped in from the plugin directory.",
            MetricType::Counter,
            &total(&stats.reloads),
        )?;
        family(
            &mut encoder,
            "herald_plugin_unloads",
            "Plugins unloaded because their file was removed from the plugin directory.",
            MetricType::Counter,
            &total(&stats.unloads),
        )?;
        family(
            &mut encoder,
            "herald_plugin_load_errors",
            "Plugin files that failed to load (kept the previous version, if any).",
            MetricType::Counter,
            &total(&stats.load_errors),
        )?;
        family(
            &mut encoder,
            "herald_plugin_compiles",
            "Plugin compilations (compiled-artifact cache misses).",
            MetricType::Counter,
            &total(&stats.compiles),
        )?;
        let micros = stats.compile_micros.load(Ordering::Relaxed);
        family(
            &mut encoder,
            "herald_plugin_compile_seconds",
            "Total time spent compiling plugins, in seconds.",
            MetricType::Counter,
            &[(Vec::new(), micros as f64 / 1e6)],
        )?;
        family(
            &mut encoder,
            "herald_plugin_artifact_cache_hits",
            "Plugin loads served from the compiled-artifact cache.",
            MetricType::Counter,
            &total(&stats.cache_hits),
        )?;
        let pulls = [
            ("pulled", &stats.source_pulls),
            ("unchanged", &stats.source_unchanged),
            ("error", &stats.source_errors),
        ]
        .map(|(outcome, count)| {
            let labels = vec![("outcome", outcome.to_owned())];
            (labels, count.load(Ordering::Relaxed) as f64)
        });
        family(
            &mut encoder,
            "herald_plugin_source_pulls",
            "Attempts to pull plugin sources from their OCI registries, by outcome: pulled (a new version), unchanged, error.",
            MetricType::Counter,
            &pulls,
        )
    }
}
