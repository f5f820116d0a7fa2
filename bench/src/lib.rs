//! Herald's benchmark suite: the measurements of issue 7 (B1–B7), each
//! reported as a ratio against a baseline measured in the same run, with the
//! median and spread of several repetitions.
//!
//! Run it with `cargo bench -p herald-bench` (full, under 15 minutes on two
//! cores) or `cargo bench -p herald-bench -- --quick` (a smoke run with tiny
//! sizes; the test `tests/quick.rs` runs that mode in CI and checks only
//! that every benchmark produced finite numbers). `BENCHMARKS.md` at the
//! repository root explains the method and reports the figures.
//!
//! One module per measurement ([`b1_throughput`] … [`b7_startup`], and
//! [`b8_pool`], [`b9_deadline`], [`b10_patch`], [`b11_sdks`], [`b12_capabilities`],
//! [`b13_index`], [`b14_sharding`], [`b15_admission`] with [`b15_memory`], [`b16_reconcile`], [`b17_clusters`], [`b18_controllers`]); the rest is what they share: [`data`] (Pod variations), [`fixtures`] (plugin
//! components), [`native`] (the same handlers compiled natively),
//! [`cluster`] (the embedded API server), [`latency`] (write-to-entry
//! latencies), [`measure`] (repetitions, medians, memory) and [`table`]
//! (the report).

pub mod alloc;
pub mod b10_patch;
pub mod b11_sdks;
pub mod b12_capabilities;
pub mod b13_index;
pub mod b14_sharding;
pub mod b15_admission;
pub mod b15_memory;
pub mod b16_reconcile;
pub mod b17_clusters;
pub mod b18_controllers;
pub mod b1_throughput;
pub mod b2_fanout;
pub mod b3_cache_memory;
pub mod b4_latency;
pub mod b5_late_join;
pub mod b6_reload;
pub mod b7_startup;
pub mod b8_pool;
pub mod b9_deadline;
pub mod cluster;
pub mod contenders;
pub mod data;
pub mod fixtures;
pub mod latency;
pub mod measure;
pub mod native;
pub mod settings;
pub mod table;

pub use settings::Settings;
pub use table::{Goal, Row};

/// Runs every benchmark `settings` selects, in order, and returns their rows.
/// Progress goes to stderr.
pub fn run(settings: &Settings) -> Vec<Row> {
    let fixtures = fixtures::Fixtures::new();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("building the tokio runtime");
    let mut rows = Vec::new();
    if settings.selected("B1") {
        rows.extend(b1_throughput::run(settings, &fixtures));
    }
    if settings.selected("B2") {
        rows.extend(b2_fanout::run(settings, &fixtures));
    }
    if settings.selected("B8") {
        rows.extend(b8_pool::run(settings, &fixtures));
    }
    if settings.selected("B3") {
        rows.extend(b3_cache_memory::run(settings));
    }
    if settings.selected("B4") {
        rows.extend(b4_latency::run(settings, &fixtures, &runtime));
    }
    if settings.selected("B5") {
        rows.extend(b5_late_join::run(settings, &fixtures));
    }
    if settings.selected("B6") {
        rows.extend(b6_reload::run(settings, &fixtures, &runtime));
    }
    if settings.selected("B7") {
        rows.extend(b7_startup::run(settings, &fixtures, &runtime));
    }
    if settings.selected("B9") {
        rows.extend(b9_deadline::run(settings, &fixtures));
    }
    if settings.selected("B10") {
        rows.extend(b10_patch::run(settings, &fixtures, &runtime));
    }
    if settings.selected("B11") {
        rows.extend(b11_sdks::run(settings, &fixtures));
    }
    if settings.selected("B12") {
        rows.extend(b12_capabilities::run(settings, &fixtures, &runtime));
    }
    if settings.selected("B13") {
        rows.extend(b13_index::run(settings));
    }
    if settings.selected("B14") {
        rows.extend(b14_sharding::run(settings, &runtime));
    }
    if settings.selected("B15") {
        rows.extend(b15_admission::run(settings, &runtime));
    }
    if settings.selected("B16") {
        rows.extend(b16_reconcile::run(settings, &fixtures, &runtime));
    }
    if settings.selected("B17") {
        rows.extend(b17_clusters::run(settings, &fixtures, &runtime));
    }
    if settings.selected("B18") {
        rows.extend(b18_controllers::run(settings, &runtime));
    }
    rows
}

/// Prints a progress line to stderr.
pub(crate) fn progress(message: impl std::fmt::Display) {
    eprintln!("[herald-bench] {message}");
}
