//! B5: a plugin joining late over 100k cached objects, and what that does to
//! the plugins already running.
//!
//! An informer's processor holds 100k cached 4 KB Pods (applied as its first
//! list); `latency-probe` plugins are running on it and have handled that
//! list. A producer thread then applies stamped updates at a steady rate, as
//! the reflector would (render the JSON, parse it into a `CachedObject`,
//! `Processor::apply`), and the probes report write-to-entry latencies. The
//! API server is left out: the join happens inside the host (snapshot under
//! the processor's lock, then the new worker draining it), and B4 measures
//! the path from the server.
//!
//! Each repetition runs the stream twice: without a join (baseline), then
//! with a no-op plugin joining shortly after the stream starts; the stream
//! goes on until the joiner has handled its whole initial list. Figures: the
//! join rate (objects handled per second from registration to synced; goal
//! ≥ 100k/s) and the others' p99 during the join against the baseline's
//! (goal ≤ 2×).

use crate::cluster::now_ns;
use crate::data::{Extras, PodSize, PodTemplate};
use crate::fixtures::{Fixture, Fixtures};
use crate::latency::{collect_probes, p50_p99};
use crate::measure::{PATIENCE, Samples, wait_for};
use crate::settings::Settings;
use crate::table::{Goal, Row, Unit};
use herald::dispatch::{PluginWorker, RetryPolicy};
use herald::informer::{Change, Processor};
use herald::plugin::LoadedPlugin;
use herald::store::{CachedObject, Store, Transform};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Goal: objects per second a late no-op plugin joins at.
pub const JOIN_RATE_GOAL: f64 = 100_000.0;

/// Live stream length without a join.
const STREAM: Duration = Duration::from_secs(1);

/// Runs B5.
pub fn run(settings: &Settings, fixtures: &Fixtures) -> Vec<Row> {
    let template = PodTemplate::new(
        PodSize::Small,
        Extras {
            managed_fields: false,
            stamp: true,
        },
    );
    let count = settings.b5_objects;
    crate::progress(format!("B5 caching {count} Pods"));
    let objects: Vec<Arc<CachedObject>> = (0..count)
        .map(|i| Arc::new(parse(&template.render(i, 1, 0))))
        .collect();
    // Variation 0 lives in namespace bench-0, as the flush Pod does.
    let flush = template
        .render(0, 1, 0)
        .replace(&template.name(0), crate::cluster::FLUSH_POD);
    let flush = Arc::new(parse(&flush));
    let probes: Vec<LoadedPlugin> = (0..settings.b5_others)
        .map(|i| fixtures.load_named(Fixture::LatencyProbe, &format!("other-{i:02}")))
        .collect();
    let joiner = fixtures.load_named(Fixture::NamedNoop, "late-joiner");
    let stream = if settings.quick {
        Duration::from_millis(200)
    } else {
        STREAM
    };

    let mut without = Samples::new();
    let mut with = Samples::new();
    let mut join_rate = Samples::new();
    let mut p50s = (Samples::new(), Samples::new());
    let mut registering = Samples::new();
    for rep in 0..settings.repetitions {
        crate::progress(format!(
            "B5 late join repetition {}/{}",
            rep + 1,
            settings.repetitions
        ));
        let processor = Arc::new(Processor::new(Arc::new(Store::new())));
        processor.apply(Change::Replace(objects.clone()));
        let workers: Vec<PluginWorker> = probes
            .iter()
            .map(|probe| {
                let worker = PluginWorker::spawn(probe.clone(), RetryPolicy::default());
                let listener =
                    worker.new_listener(probe.manifest().subscriptions[0].clone(), "pods".into());
                processor.add_listener(listener.clone());
                worker.attach(listener);
                worker
            })
            .collect();
        wait_for("the probes' initial lists", PATIENCE, || {
            workers.iter().all(|w| w.has_synced())
        });
        fixtures.logs.take();

        let (p50, p99) = live_stream(
            &processor, &template, settings, &flush, fixtures, stream, None,
        );
        without.push(p99);
        p50s.0.push(p50);
        let join = Joiner::new(joiner.clone());
        let (p50, p99) = live_stream(
            &processor,
            &template,
            settings,
            &flush,
            fixtures,
            stream,
            Some(&join),
        );
        with.push(p99);
        p50s.1.push(p50);
        join_rate.push(count as f64 / join.took().as_secs_f64());
        registering.push(join.registering().as_secs_f64() * 1e3);
        for worker in workers {
            worker.stop_now();
        }
    }
    vec![
        Row {
            id: "B5.join".into(),
            what: format!("late join of a no-op plugin over {count} cached Pods (objects handled/s, registration → synced)"),
            unit: Unit::PerSecond,
            baseline: Samples::new(),
            measured: join_rate,
            ratio: Samples::new(),
            goal: Goal::ValueAtLeast(JOIN_RATE_GOAL),
            details: String::new(),
        },
        Row::ratio_of(
            "B5.others-p99",
            format!("p99 of {} running plugins during the join; baseline: same stream without a join", settings.b5_others),
            Unit::Millis,
            without,
            with,
            Goal::RatioAtMost(2.0),
        )
        .with_details(format!(
            "{} updates/s applied by a producer thread; others' p50 {:.3} ms without the join, {:.3} ms with it; registering the late listener (snapshot pushed under the processor's lock, which holds up distribution) took {:.2} ms (median, {:.2}–{:.2})",
            settings.b5_rate,
            p50s.0.median(),
            p50s.1.median(),
            registering.median(),
            registering.min(),
            registering.max(),
        )),
    ]
}

fn parse(json: &str) -> CachedObject {
    CachedObject::from_json(json, "v1", "Pod", Transform::default()).expect("bench Pods")
}

/// A no-op plugin joining the processor from another thread.
struct Joiner {
    plugin: LoadedPlugin,
    took: std::sync::Mutex<Option<Duration>>,
    /// How long `add_listener` held the processor (snapshot pushed under its lock).
    registering: std::sync::Mutex<Option<Duration>>,
    done: AtomicBool,
}

impl Joiner {
    fn new(plugin: LoadedPlugin) -> Self {
        Joiner {
            plugin,
            took: std::sync::Mutex::new(None),
            registering: std::sync::Mutex::new(None),
            done: AtomicBool::new(false),
        }
    }

    /// Registers, waits until synced, records how long that took; returns the worker.
    fn join(&self, processor: &Processor) -> PluginWorker {
        let worker = PluginWorker::spawn(self.plugin.clone(), RetryPolicy::default());
        let listener = worker.new_listener(
            self.plugin.manifest().subscriptions[0].clone(),
            "pods".into(),
        );
        let started = Instant::now();
        processor.add_listener(listener.clone());
        *self.registering.lock().expect("registration time") = Some(started.elapsed());
        worker.attach(listener.clone());
        wait_for("the late plugin's initial list", PATIENCE, || {
            listener.has_synced()
        });
        *self.took.lock().expect("join time") = Some(started.elapsed());
        self.done.store(true, Ordering::Release);
        worker
    }

    fn took(&self) -> Duration {
        self.took
            .lock()
            .expect("join time")
            .expect("the join finished")
    }

    fn registering(&self) -> Duration {
        self.registering
            .lock()
            .expect("registration time")
            .expect("the join finished")
    }
}

/// Applies stamped updates at the configured rate for `length` (and, with a
/// joiner, until it has synced); returns the probes' (p50, p99) in ms.
fn live_stream(
    processor: &Arc<Processor>,
    template: &PodTemplate,
    settings: &Settings,
    flush: &Arc<CachedObject>,
    fixtures: &Fixtures,
    length: Duration,
    joiner: Option<&Joiner>,
) -> (f64, f64) {
    let interval = Duration::from_secs_f64(1.0 / f64::from(settings.b5_rate));
    let started = Instant::now();
    std::thread::scope(|scope| {
        let join_thread = joiner.map(|joiner| {
            scope.spawn(move || {
                std::thread::sleep(length / 10);
                joiner.join(processor)
            })
        });
        let mut sent = 0usize;
        loop {
            let elapsed = started.elapsed();
            let joined = joiner.is_none_or(|j| j.done.load(Ordering::Acquire));
            if elapsed >= length && joined {
                break;
            }
            let due = interval * sent as u32;
            if due > elapsed {
                std::thread::sleep(due - elapsed);
            }
            let index = sent % settings.b5_objects;
            let json = template.render(index, 2 + sent as u64, now_ns());
            processor.apply(Change::Upsert(Arc::new(parse(&json))));
            sent += 1;
        }
        processor.apply(Change::Upsert(flush.clone()));
        let latencies = collect_probes(&fixtures.logs, settings.b5_others);
        if let Some(thread) = join_thread {
            let worker = thread.join().expect("the joining thread");
            worker.stop_now();
        }
        p50_p99(&latencies)
    })
}
