//! B9: how long past its deadline a call really ends, for a plugin stuck in
//! wasm (a tight loop: epoch interruption stops it) and for one stuck in a
//! host call (`std::thread::sleep`, a WASI clock and `poll`: the call's
//! future is dropped at the deadline).
//!
//! Each repetition makes `CALLS` calls with a `DEADLINE` call deadline,
//! each on a fresh instance (a deadline fault discards it; the rebuild is
//! outside the timed span), and reports the median time from the deadline
//! to the call's return with its fault. The goal is one epoch tick plus
//! 5 ms, the bound ARCHITECTURE.md states.

use crate::b1_throughput::context;
use crate::data::{PodSize, cached_pods};
use crate::fixtures::{Fixture, Fixtures};
use crate::measure::Samples;
use crate::settings::Settings;
use crate::table::{Goal, Row, Unit};
use herald::plugin::{CallError, EPOCH_TICK, FaultKind, PluginInstance};
use std::time::{Duration, Instant};

/// The call deadline of the stuck plugins.
const DEADLINE: Duration = Duration::from_millis(50);

/// Calls per repetition.
const CALLS: usize = 5;

/// Runs B9.
pub fn run(settings: &Settings, fixtures: &Fixtures) -> Vec<Row> {
    let object = cached_pods(PodSize::Small, 1).remove(0);
    let bound = (EPOCH_TICK + Duration::from_millis(5)).as_secs_f64() * 1e3;
    let mut rows = Vec::new();
    for (id, fixture, what) in [
        ("B9.wasm", Fixture::InfiniteLoop, "a loop in wasm"),
        ("B9.host", Fixture::Blocker, "a sleep in a host call"),
    ] {
        let plugin = fixtures.load_stuck(fixture, DEADLINE);
        let mut overruns = Samples::new();
        let mut worst = 0f64;
        for rep in 0..settings.repetitions {
            crate::progress(format!(
                "B9 {} repetition {}/{}",
                fixture.label(),
                rep + 1,
                settings.repetitions
            ));
            let mut calls = Vec::with_capacity(CALLS);
            for _ in 0..CALLS {
                let mut instance = PluginInstance::new(plugin.clone()).expect("instantiating");
                let started = Instant::now();
                let outcome = instance.on_add(&context(), object.json());
                let overrun = started.elapsed().as_secs_f64() * 1e3 - DEADLINE.as_secs_f64() * 1e3;
                match outcome {
                    Err(CallError::Fault {
                        kind: FaultKind::Deadline,
                        ..
                    }) => {}
                    other => panic!("{} should hit its deadline: {other:?}", fixture.label()),
                }
                calls.push(overrun);
            }
            worst = calls.iter().copied().fold(worst, f64::max);
            overruns.push(crate::measure::percentile(&calls, 50.0));
        }
        rows.push(
            Row::ratio_of(
                id,
                format!(
                    "deadline to fault, {what} ({} ms deadline); no baseline",
                    DEADLINE.as_millis()
                ),
                Unit::Millis,
                Samples::new(),
                overruns,
                Goal::ValueAtMost(bound),
            )
            .with_details(format!(
                "{}: time from the deadline to the call's return with a deadline fault, median of {CALLS} calls per repetition; worst single call {worst:.2} ms",
                fixture.label()
            )),
        );
    }
    rows
}
