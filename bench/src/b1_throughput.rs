//! B1: notifications per second through store → listener → plugin, for the
//! no-op, JSON-metadata, typed-Pod and lazy-view plugins on 4 KB and 16 KB
//! Pods.
//!
//! Three ways of handling the same N distinct cached Pods, in each
//! repetition:
//!
//! - **bare call**: `PluginInstance::on_add` in a loop on one warm instance,
//!   with one prepared event context: the component call and nothing else.
//! - **Herald**: a `Processor` (store + distribution) feeding a `Listener`
//!   drained by a `PluginWorker` (its own thread, warm instance): every add
//!   is applied to the store and queued, then the worker is attached and
//!   delivers them. The two phases run one after the other and their times
//!   add up, so the figure is the whole cost of a notification, not hidden
//!   by the second core; the worker's wake-ups are B4's subject.
//! - **native**: the same processor and listener, drained on the bench
//!   thread by the handler compiled natively ([`crate::native`]).
//!
//! Each way is timed in CPU time (every thread of the process, from
//! `CLOCK_PROCESS_CPUTIME_ID`, less the bench thread's own polling while
//! it waits), so that what other processes take from this shared machine
//! does not count; rates are notifications per CPU-second. Wall-clock
//! figures are in the details.
//!
//! The host's own cost per notification is Herald's CPU time less the bare
//! call's; its goal is at most one no-op call. The no-op also goes through
//! Herald taking batches of up to 64 notifications per call (the
//! `noop-batch` fixture, B1.a1b), against the same native listener. The no-op's bare call is
//! itself held to at most 1.3× the floor's, a component that takes the same
//! event through the raw bindings and returns (the `floor` fixture), timed
//! in the same repetition. A typed-Pod plugin's rate must be at least 0.8
//! of the native listener's, which decodes the whole Pod: `typed-pod` does
//! the same work in wasm; `pod-view` reads what a handler typically reads
//! through the SDK's lazy view, and is also compared with those reads
//! compiled natively (B1.a4n), so that what the view saves and what wasm
//! costs are both in the table.

use crate::data::{PodSize, cached_pods};
use crate::fixtures::{Fixture, Fixtures};
use crate::measure::{PATIENCE, Samples, process_cpu_ns, thread_cpu_ns, wait_every, wait_for};
use crate::native;
use crate::settings::Settings;
use crate::table::{Goal, Row, Unit};
use herald::dispatch::{Item, Listener, PluginWorker, RetryPolicy, Signal};
use herald::informer::{Change, Processor};
use herald::plugin::{EventContext, GroupVersionKind, LoadedPlugin, PluginInstance};
use herald::store::{CachedObject, Store};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Notifications handled before timing starts.
const WARM_UP: usize = 50;

/// Per-notification times (µs) of one plugin and Pod size, per repetition:
/// CPU time, and wall-clock time for context.
#[derive(Debug, Default)]
struct Times {
    bare: Samples,
    herald: Samples,
    native: Samples,
    /// `pod-view` only: the native listener decoding the whole Pod.
    native_typed: Samples,
    bare_wall: Samples,
    herald_wall: Samples,
    native_wall: Samples,
}

/// CPU and wall-clock µs per notification of one measurement.
#[derive(Debug, Clone, Copy)]
struct PerNotification {
    cpu: f64,
    wall: f64,
}

impl Times {
    fn push(&mut self, bare: PerNotification, herald: PerNotification, native: PerNotification) {
        self.bare.push(bare.cpu);
        self.herald.push(herald.cpu);
        self.native.push(native.cpu);
        self.bare_wall.push(bare.wall);
        self.herald_wall.push(herald.wall);
        self.native_wall.push(native.wall);
    }
}

/// Runs B1.
pub fn run(settings: &Settings, fixtures: &Fixtures) -> Vec<Row> {
    let mut rows = Vec::new();
    let largest = settings
        .b1_noop_notifications
        .max(settings.b1_parse_notifications);
    let sizes: &[(PodSize, char)] = if settings.b1_noop_only {
        &[(PodSize::Small, 'a')]
    } else {
        &[(PodSize::Small, 'a'), (PodSize::Large, 'b')]
    };
    let plugins: &[Fixture] = if settings.b1_noop_only {
        &[Fixture::Noop]
    } else {
        &[
            Fixture::Noop,
            Fixture::JsonMeta,
            Fixture::TypedPod,
            Fixture::PodView,
        ]
    };
    for &(size, letter) in sizes {
        let objects = cached_pods(size, largest + WARM_UP);
        let (warm, objects) = objects.split_at(WARM_UP);
        let mut noop_bare = Samples::new();
        let floor = fixtures.load(Fixture::Floor);
        let handler_floor = fixtures.load(Fixture::HandlerFloor);
        let noop_batch = fixtures.load(Fixture::NoopBatch);
        for (index, &fixture) in plugins.iter().enumerate() {
            let count = if fixture == Fixture::Noop {
                settings.b1_noop_notifications
            } else {
                settings.b1_parse_notifications
            };
            let plugin = fixtures.load(fixture);
            let mut times = Times::default();
            let mut floor_bare = Samples::new();
            let mut handler_floor_bare = Samples::new();
            let mut batched = Samples::new();
            for rep in 0..settings.repetitions {
                crate::progress(format!(
                    "B1 {} {} repetition {}/{}",
                    fixture.label(),
                    size.label(),
                    rep + 1,
                    settings.repetitions
                ));
                let bare = bare_call(&plugin, warm, &objects[..count]);
                if fixture == Fixture::Noop {
                    floor_bare.push(bare_call(&floor, warm, &objects[..count]).cpu);
                    handler_floor_bare.push(bare_call(&handler_floor, warm, &objects[..count]).cpu);
                }
                let herald = through_herald(&plugin, warm, &objects[..count]);
                if fixture == Fixture::Noop {
                    batched.push(through_herald(&noop_batch, warm, &objects[..count]).cpu);
                }
                let native = native_listener(fixture, warm, &objects[..count]);
                times.push(bare, herald, native);
                if fixture == Fixture::PodView {
                    let typed = native_listener(Fixture::TypedPod, warm, &objects[..count]);
                    times.native_typed.push(typed.cpu);
                }
            }
            let rate = |micros: &Samples| {
                let mut rates = Samples::new();
                for v in micros.values() {
                    rates.push(1e6 / v);
                }
                rates
            };
            let host_cost = times.herald.paired(&times.bare, |h, b| h - b);
            let mut details = format!(
                "{} {}: CPU µs per notification: bare call {:.3}, through Herald {:.3}, native listener {:.3}, host's own cost {:.3}; wall-clock µs: bare {:.3}, Herald {:.3}, native {:.3}; {count} notifications per repetition",
                fixture.label(),
                size.label(),
                times.bare.median(),
                times.herald.median(),
                times.native.median(),
                host_cost.median(),
                times.bare_wall.median(),
                times.herald_wall.median(),
                times.native_wall.median(),
            );
            if fixture == Fixture::PodView {
                details.push_str(&format!(
                    "; native listener decoding the whole Pod: CPU µs per notification {:.3}",
                    times.native_typed.median()
                ));
            }
            if fixture == Fixture::Noop {
                noop_bare = times.bare.clone();
                rows.push(
                    Row::ratio_of(
                        format!("B1.{letter}0w"),
                        format!(
                            "bare call doing nothing, world 0.7.0's delivery frame, {}; baseline: world 0.6.0's handler (context record and object as strings)",
                            size.label()
                        ),
                        Unit::Micros,
                        handler_floor_bare.clone(),
                        floor_bare.clone(),
                        Goal::None,
                    )
                    .with_details(format!(
                        "CPU µs per call: 0.6.0 handler floor {:.3}, 0.7.0 delivery floor {:.3}, the SDK's no-op on 0.7.0 {:.3}",
                        handler_floor_bare.median(),
                        floor_bare.median(),
                        times.bare.median(),
                    )),
                );
                rows.push(
                    Row::ratio_of(
                        format!("B1.{letter}0"),
                        format!(
                            "bare no-op call through the SDK, {}; baseline: the floor, a component taking the same event through the raw bindings and returning",
                            size.label()
                        ),
                        Unit::Micros,
                        floor_bare,
                        times.bare.clone(),
                        Goal::RatioAtMost(1.3),
                    )
                    .with_details(details.clone()),
                );
                rows.push(
                    Row::ratio_of(
                        format!("B1.{letter}1"),
                        format!(
                            "host's own cost per notification (Herald − bare call), no-op, {}; baseline: bare no-op call",
                            size.label()
                        ),
                        Unit::Micros,
                        times.bare.clone(),
                        host_cost,
                        Goal::RatioAtMost(1.0),
                    )
                    .with_details(details.clone()),
                );
                rows.push(
                    Row::ratio_of(
                        format!("B1.{letter}1b"),
                        format!(
                            "notifications per CPU-second, no-op plugin taking batches of up to {MAX_BATCH}, {}; baseline: native in-process listener",
                            size.label()
                        ),
                        Unit::PerSecond,
                        rate(&times.native),
                        rate(&batched),
                        Goal::RatioAtLeast(BATCH_GOAL),
                    )
                    .with_details(format!(
                        "CPU µs per notification through Herald: batches {:.3}, one per call {:.3}, native listener {:.3}",
                        batched.median(),
                        times.herald.median(),
                        times.native.median(),
                    )),
                );
            } else {
                let mut row = Row::ratio_of(
                    format!("B1.{letter}{}", index + 1),
                    format!(
                        "host's own cost per notification, {}, {}; baseline: bare no-op call",
                        fixture.label(),
                        size.label()
                    ),
                    Unit::Micros,
                    noop_bare.clone(),
                    host_cost,
                    Goal::None,
                );
                // Parsing plugins: the host cost is a small difference of large
                // numbers, so it is context; the rate is what the goal is on.
                row.ratio = Samples::new();
                rows.push(row);
            }
            if fixture == Fixture::PodView {
                rows.push(
                    Row::ratio_of(
                        format!("B1.{letter}{}r", index + 1),
                        format!(
                            "notifications per CPU-second, pod-view plugin (lazy view: metadata, typed status, node), {}; baseline: native in-process listener decoding the whole typed Pod",
                            size.label()
                        ),
                        Unit::PerSecond,
                        rate(&times.native_typed),
                        rate(&times.herald),
                        Goal::RatioAtLeast(TYPED_GOAL),
                    )
                    .with_details(details.clone()),
                );
            }
            let (id, baseline) = if fixture == Fixture::PodView {
                ("n", "the same reads natively")
            } else {
                ("r", "native in-process listener")
            };
            rows.push(
                Row::ratio_of(
                    format!("B1.{letter}{}{id}", index + 1),
                    format!(
                        "notifications per CPU-second, {} plugin, {}; baseline: {baseline}",
                        fixture.label(),
                        size.label()
                    ),
                    Unit::PerSecond,
                    rate(&times.native),
                    rate(&times.herald),
                    goal_for(fixture),
                )
                .with_details(details),
            );
        }
    }
    rows
}

/// A typed-Pod plugin's rate against the native listener's (issue 16).
const TYPED_GOAL: f64 = 0.8;

/// A no-op plugin's rate against the native listener's: at most twice its
/// CPU per notification (issue 44).
const NOOP_GOAL: f64 = 0.5;

/// Batched no-op delivery against the native listener: at most 1.2 times
/// its CPU per notification (issue 44).
const BATCH_GOAL: f64 = 1.0 / 1.2;

/// What the `noop-batch` fixture asks for.
const MAX_BATCH: u32 = 64;

fn goal_for(fixture: Fixture) -> Goal {
    match fixture {
        Fixture::TypedPod => Goal::RatioAtLeast(TYPED_GOAL),
        Fixture::Noop => Goal::RatioAtLeast(NOOP_GOAL),
        _ => Goal::None,
    }
}

/// The event context of every benchmark call: an add of a Pod.
pub fn context() -> EventContext {
    EventContext {
        kind: GroupVersionKind {
            group: String::new(),
            version: "v1".into(),
            kind: "Pod".into(),
        },
        resource: "pods".into(),
        key: "bench-0/pod".into(),
        resource_version: "1".into(),
        is_initial_list: false,
        is_resync: false,
        final_state_unknown: false,
    }
}

/// Per call of `on_add` on a warm instance (all on the bench thread).
fn bare_call(
    plugin: &LoadedPlugin,
    warm: &[Arc<CachedObject>],
    objects: &[Arc<CachedObject>],
) -> PerNotification {
    let mut instance = PluginInstance::new(plugin.clone()).expect("instantiating");
    let ctx = context();
    for object in warm {
        instance.on_add(&ctx, object.json()).expect("warm-up call");
    }
    let cpu = thread_cpu_ns();
    let started = Instant::now();
    for object in objects {
        instance.on_add(&ctx, object.json()).expect("bare call");
    }
    per_notification(
        objects.len(),
        started,
        cpu.zip(thread_cpu_ns()).map(|(a, b)| b - a),
    )
}

fn per_notification(count: usize, started: Instant, cpu_ns: Option<u64>) -> PerNotification {
    let wall = started.elapsed().as_secs_f64() * 1e6 / count as f64;
    PerNotification {
        cpu: cpu_ns.map_or(f64::NAN, |ns| ns as f64 / 1e3 / count as f64),
        wall,
    }
}

/// A synced processor over an empty store, with `listener` registered.
fn processor_with(listener: &Arc<Listener>) -> Processor {
    let processor = Processor::new(Arc::new(Store::new()));
    processor.apply(Change::Replace(Vec::new()));
    processor.add_listener(listener.clone());
    processor
}

/// A listener whose pushes wake no one (the benchmark attaches it when ready).
fn quiet_listener(plugin: &LoadedPlugin) -> Arc<Listener> {
    Arc::new(Listener::new(
        plugin.name().into(),
        plugin.manifest().subscriptions[0].clone(),
        "pods".into(),
        Arc::new(Signal::default()),
    ))
}

/// Per notification from `Processor::apply` to the plugin's return: CPU
/// time of every thread, less the bench thread's while it only waits.
fn through_herald(
    plugin: &LoadedPlugin,
    warm: &[Arc<CachedObject>],
    objects: &[Arc<CachedObject>],
) -> PerNotification {
    let worker = PluginWorker::spawn(plugin.clone(), RetryPolicy::default());
    // Warm up: the worker instantiates the plugin on its first call.
    let warm_listener = quiet_listener(plugin);
    let warm_processor = processor_with(&warm_listener);
    for object in warm {
        warm_processor.apply(Change::Upsert(object.clone()));
    }
    worker.attach(warm_listener.clone());
    wait_for("the warm-up notifications", PATIENCE, || {
        warm_listener.stats.delivered.load(Ordering::Acquire) == warm.len() as u64
    });

    let listener = quiet_listener(plugin);
    let processor = processor_with(&listener);
    let cpu = process_cpu_ns();
    let started = Instant::now();
    for object in objects {
        processor.apply(Change::Upsert(object.clone()));
    }
    worker.attach(listener.clone());
    let waiting = thread_cpu_ns();
    wait_every(
        "the notifications",
        PATIENCE,
        Duration::from_micros(200),
        || listener.stats.delivered.load(Ordering::Acquire) == objects.len() as u64,
    );
    let waited = waiting.zip(thread_cpu_ns()).map(|(a, b)| b - a);
    let cpu = cpu
        .zip(process_cpu_ns())
        .zip(waited)
        .map(|((a, b), w)| b - a - w);
    let result = per_notification(objects.len(), started, cpu);
    worker.stop_now();
    assert_eq!(listener.stats.failed.load(Ordering::Relaxed), 0);
    assert!(
        plugin.manifest().max_batch == 1 || plugin.manifest().max_batch == MAX_BATCH,
        "a batching fixture asks for what the row says"
    );
    result
}

/// Per notification from `Processor::apply` through the same listener to
/// the native handler's return (all on the bench thread).
fn native_listener(
    fixture: Fixture,
    warm: &[Arc<CachedObject>],
    objects: &[Arc<CachedObject>],
) -> PerNotification {
    let drain = |listener: &Listener| {
        while let Some(item) = listener.pop() {
            if let Item::Notify(notification) = item {
                native::on_add(fixture, notification.object().json());
            }
        }
    };
    let subscription = herald::plugin::Subscription {
        kind: herald::gvk::Gvk::new("", "v1", "Pod"),
        namespace: None,
        label_selector: None,
        field_selector: None,
        resync_period: None,
        delivery: herald::plugin::Delivery::EveryEvent,
    };
    let listener = Arc::new(Listener::new(
        "native".into(),
        subscription,
        "pods".into(),
        Arc::new(Signal::default()),
    ));
    let processor = processor_with(&listener);
    for object in warm {
        processor.apply(Change::Upsert(object.clone()));
    }
    drain(&listener);

    let processor = processor_with(&listener);
    let cpu = thread_cpu_ns();
    let started = Instant::now();
    for object in objects {
        processor.apply(Change::Upsert(object.clone()));
    }
    drain(&listener);
    per_notification(
        objects.len(),
        started,
        cpu.zip(thread_cpu_ns()).map(|(a, b)| b - a),
    )
}
