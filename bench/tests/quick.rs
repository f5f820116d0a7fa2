//! The quick mode of the benchmark suite, run by `cargo test` so that CI
//! keeps every benchmark building and running. It checks only that each
//! benchmark ran and produced finite numbers: never anything about speed.

use herald_bench::alloc::CountingAllocator;
use herald_bench::{Goal, Settings, run};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

#[test]
fn every_benchmark_runs_in_quick_mode_and_reports_finite_numbers() {
    let rows = run(&Settings {
        compiler_program: Some(env!("CARGO_BIN_EXE_herald-child").into()),
        ..Settings::quick()
    });
    for id in [
        "B1", "B2", "B3", "B4", "B5", "B6", "B7", "B8", "B9", "B10", "B11", "B12", "B13", "B14",
        "B15", "B16", "B17", "B18",
    ] {
        assert!(
            rows.iter().any(|row| row.id.starts_with(id)),
            "{id} reported no row: {rows:#?}"
        );
    }
    for row in &rows {
        assert!(
            row.is_complete(),
            "{} reported a missing or non-finite figure: {row:#?}",
            row.id
        );
    }
    assert!(
        !rows.iter().any(|row| matches!(row.goal, Goal::Pending(_))),
        "no benchmark is left pending"
    );
}
