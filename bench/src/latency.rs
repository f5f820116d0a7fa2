//! Write-to-entry latencies: collected from `latency-probe` plugins' log
//! lines (Herald) or recorded by a native closure (baselines), summarised as
//! percentiles.

use crate::fixtures::LogCollector;
use crate::measure::{PATIENCE, percentile, wait_for};

/// Waits until `probes` probes have reported (each logs `flushed <n>` after
/// its values), then returns every latency they reported, in ms.
pub fn collect_probes(logs: &LogCollector, probes: usize) -> Vec<f64> {
    wait_for("every latency probe to report", PATIENCE, || {
        logs.count_starting_with("flushed ") >= probes
    });
    let mut latencies = Vec::new();
    for (_, message) in logs.take() {
        latencies.extend(reported_latencies(&message));
    }
    latencies
}

/// The latencies (ms) a probe's report line `latencies <ns>,<ns>,…`
/// carries; none for any other line.
pub fn reported_latencies(message: &str) -> impl Iterator<Item = f64> + '_ {
    message
        .strip_prefix("latencies ")
        .into_iter()
        .flat_map(|values| values.split(','))
        .filter_map(|v| v.parse::<u64>().ok())
        .map(|ns| ns as f64 / 1e6)
}

/// p50 and p99 of `latencies`.
pub fn p50_p99(latencies: &[f64]) -> (f64, f64) {
    (percentile(latencies, 50.0), percentile(latencies, 99.0))
}
