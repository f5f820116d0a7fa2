//! B2: fan-out of one resource to 1, 10 and 100 plugins (and the method of
//! [`crate::b8_pool`], the same at 100 and 1,000).
//!
//! One `named-noop` component is loaded as 100 distinct plugins. Each
//! repetition grows the set of running plugins step by step (1 → 10 → 100
//! workers, never dropping one, so memory measured at a step is not memory
//! freed by an earlier one), and at each step feeds one fresh processor
//! whose listeners go to every running plugin with N adds of 4 KB Pods,
//! waiting until every plugin has handled all of them.
//!
//! Figures: the cache's bytes at each step (one cache, whatever the fan-out);
//! resident memory per plugin instance that has handled events, as the
//! growth of RSS from one step to the next divided by the plugins added
//! (the instance, its store, its touched linear memory and its task; the
//! largest value over the repetitions, since a later repetition may reuse
//! heap an earlier one freed); and notifications delivered per CPU-second
//! across all plugins (CPU time of every thread, less the bench thread's
//! polling while it waits), which stays flat when the cost per delivered
//! notification does not grow with the fan-out. Wall-clock rates are in the
//! details; they cannot stay flat per plugin (two cores cannot make each of
//! 100 plugins as fast as one).

use crate::alloc::live_bytes;
use crate::data::{PodSize, cached_pods};
use crate::fixtures::{Fixture, Fixtures};
use crate::measure::{
    PATIENCE, Samples, process_cpu_ns, resident_bytes, thread_cpu_ns, wait_every,
};
use crate::settings::Settings;
use crate::table::{Goal, Row, Unit};
use herald::dispatch::{PluginWorker, RetryPolicy};
use herald::informer::{Change, Processor};
use herald::store::Store;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Goal: resident memory per plugin instance that has handled events.
pub const RSS_PER_PLUGIN_GOAL: f64 = 256.0 * 1024.0;

/// One step's figures.
#[derive(Debug, Default, Clone)]
struct Step {
    rate: Samples,
    wall_rate: Samples,
    cache_bytes: Samples,
    rss_per_plugin: Samples,
    heap_per_plugin: Samples,
}

/// Runs B2.
pub fn run(settings: &Settings, fixtures: &Fixtures) -> Vec<Row> {
    fanout(
        settings,
        fixtures,
        "B2",
        &settings.b2_plugins,
        settings.b2_events,
    )
}

/// Fans `events` adds out to each of `counts` plugins in turn (ascending),
/// reporting rows named `id`.
pub fn fanout(
    settings: &Settings,
    fixtures: &Fixtures,
    id: &str,
    counts: &[usize],
    events: usize,
) -> Vec<Row> {
    let most = *counts.last().expect("a fan-out needs plugin counts");
    let plugins: Vec<_> = (0..most)
        .map(|i| fixtures.load_named(Fixture::NamedNoop, &format!("fan-{i:04}")))
        .collect();
    let objects = cached_pods(PodSize::Small, events);
    let subscription = plugins[0].manifest().subscriptions[0].clone();
    let mut steps = vec![Step::default(); counts.len()];
    for rep in 0..settings.repetitions {
        crate::progress(format!(
            "{id} fan-out repetition {}/{}",
            rep + 1,
            settings.repetitions
        ));
        let mut workers: Vec<PluginWorker> = Vec::new();
        let mut rss_before = resident_bytes().unwrap_or(0) as f64;
        let mut heap_before = live_bytes().unwrap_or(0) as f64;
        for (step, &count) in steps.iter_mut().zip(counts) {
            let added = count - workers.len();
            while workers.len() < count {
                workers.push(PluginWorker::spawn(
                    plugins[workers.len()].clone(),
                    RetryPolicy::default(),
                ));
            }
            let processor = Processor::new(Arc::new(Store::new()));
            processor.apply(Change::Replace(Vec::new()));
            let listeners: Vec<_> = workers
                .iter()
                .map(|worker| {
                    let listener = worker.new_listener(subscription.clone(), "pods".into());
                    processor.add_listener(listener.clone());
                    worker.attach(listener.clone());
                    listener
                })
                .collect();
            let cpu = process_cpu_ns().unwrap_or(0);
            let started = Instant::now();
            for object in &objects {
                processor.apply(Change::Upsert(object.clone()));
            }
            let waiting = thread_cpu_ns().unwrap_or(0);
            wait_every(
                "every plugin to handle every event",
                PATIENCE,
                Duration::from_micros(200),
                || {
                    listeners
                        .iter()
                        .all(|l| l.stats.delivered.load(Ordering::Acquire) == objects.len() as u64)
                },
            );
            let elapsed = started.elapsed().as_secs_f64();
            let waited = thread_cpu_ns().unwrap_or(0) - waiting;
            let cpu = (process_cpu_ns().unwrap_or(0) - cpu - waited) as f64 / 1e9;
            let delivered = (count * objects.len()) as f64;
            step.rate.push(delivered / cpu);
            step.wall_rate.push(delivered / elapsed);
            step.cache_bytes.push(processor.store().heap_bytes() as f64);
            drop(processor);
            let rss = resident_bytes().unwrap_or(0) as f64;
            let heap = live_bytes().unwrap_or(0) as f64;
            step.rss_per_plugin.push((rss - rss_before) / added as f64);
            step.heap_per_plugin
                .push((heap - heap_before) / added as f64);
            rss_before = rss;
            heap_before = heap;
        }
        for worker in workers {
            worker.stop_now();
        }
    }

    let first = &steps[0];
    let mut rows = Vec::new();
    for (step, &count) in steps.iter().zip(counts).skip(1) {
        rows.push(Row::ratio_of(
            format!("{id}.cache-{count}"),
            format!("cache bytes with {count} plugins on one resource; baseline: 1 plugin"),
            Unit::Bytes,
            first.cache_bytes.clone(),
            step.cache_bytes.clone(),
            Goal::RatioAtMost(1.0),
        ));
    }
    for (step, &count) in steps.iter().zip(counts).skip(1) {
        rows.push(Row::ratio_of(
            format!("{id}.rate-{count}"),
            format!("notifications delivered per CPU-second across {count} no-op plugins; baseline: 1 plugin"),
            Unit::PerSecond,
            first.rate.clone(),
            step.rate.clone(),
            Goal::RatioAtLeast(0.8),
        ));
    }
    let (last, &count) = (steps.last().expect("steps"), counts.last().expect("counts"));
    let previous = counts[counts.len().saturating_sub(2)];
    let worst = |samples: &Samples| {
        let mut s = Samples::new();
        s.push(samples.max());
        s
    };
    let mut rss_row = Row::ratio_of(
        format!("{id}.rss-{count}"),
        format!(
            "RSS per plugin instance that has handled events (growth {previous}→{count} plugins, worst repetition); baseline: the first plugin"
        ),
        Unit::Bytes,
        worst(&first.rss_per_plugin),
        worst(&last.rss_per_plugin),
        Goal::ValueAtMost(RSS_PER_PLUGIN_GOAL),
    );
    rss_row.details = format!(
        "RSS per plugin over repetitions {}; of which heap (counting allocator) {:.1} KiB per plugin (median); {} events of 4 KB per step; delivered per CPU-second by plugin count: {}; wall-clock delivered/s: {}",
        last.rss_per_plugin
            .values()
            .iter()
            .map(|v| format!("{:.1} KiB", v / 1024.0))
            .collect::<Vec<_>>()
            .join(", "),
        last.heap_per_plugin.median() / 1024.0,
        events,
        steps
            .iter()
            .zip(counts)
            .map(|(s, c)| format!("{c}: {:.0}", s.rate.median()))
            .collect::<Vec<_>>()
            .join(", "),
        steps
            .iter()
            .zip(counts)
            .map(|(s, c)| format!("{c}: {:.0}", s.wall_rate.median()))
            .collect::<Vec<_>>()
            .join(", "),
    );
    rows.push(rss_row);
    rows
}
