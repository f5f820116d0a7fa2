//! B4: end-to-end latency, API server write → plugin entry, p50 and p99, at
//! 1k and 5k events/s, with 10 plugins.
//!
//! The embedded API server holds a pool of 4 KB Pods. A writer sends merge
//! patches at a steady rate, each stamping the Pod with the time it was sent
//! ([`crate::data::STAMP_ANNOTATION`]). Each repetition runs two phases on the
//! same server and the same write schedule, one after the other:
//!
//! - **baseline**: a kube-runtime `watcher` on `Api<Pod>` feeding a native
//!   closure, which reads the clock on entry (after kube's decoding, as its
//!   handler would see the object);
//! - **Herald**: a `Daemon` running 10 `latency-probe` plugins on the same
//!   Pods (one shared informer), each reading the wall clock first thing on
//!   entry.
//!
//! - **client-go against `herald run`** (issue 32), both processes of
//!   their own on the same server and write schedule
//!   ([`crate::contenders`]): `bench/clientgo --mode=latency`, a typed
//!   informer whose handler reads the clock first thing, and `herald run`
//!   with one `latency-probe`; rows `B4.*-clientgo`.
//!
//! Goal: Herald adds at most 1 ms at p99 (against the kube-runtime
//! watcher; against client-go the rows are context).

use crate::cluster::{Cluster, FLUSH_POD, now_ns};
use crate::contenders::{ClientGoLatency, Contenders, HeraldLatency};
use crate::data::{Extras, PodSize, PodTemplate, STAMP_ANNOTATION};
use crate::fixtures::{Fixture, Fixtures};
use crate::latency::{collect_probes, p50_p99};
use crate::measure::{PATIENCE, Samples};
use crate::settings::Settings;
use crate::table::{Goal, Row, Unit};
use futures::TryStreamExt;
use herald::daemon::Daemon;
use herald::dispatch::RetryPolicy;
use herald::informer::{Informers, ReflectorConfig};
use herald::plugin::LoadedPlugin;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::runtime::watcher;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::runtime::Runtime;

/// Goal: milliseconds Herald may add at p99.
pub const ADDED_P99_GOAL_MS: f64 = 1.0;

#[derive(Debug, Default)]
struct Percentiles {
    p50: Samples,
    p99: Samples,
}

/// Runs B4.
pub fn run(settings: &Settings, fixtures: &Fixtures, runtime: &Runtime) -> Vec<Row> {
    let template = PodTemplate::new(
        PodSize::Small,
        Extras {
            managed_fields: false,
            stamp: true,
        },
    );
    let probes: Vec<LoadedPlugin> = (0..settings.b4_plugins)
        .map(|i| fixtures.load_named(Fixture::LatencyProbe, &format!("probe-{i:02}")))
        .collect();
    let herald_program = settings.compiler_program.clone().expect(
        "B4 builds bench/clientgo beside Herald and needs Settings::compiler_program \
         (env!(\"CARGO_BIN_EXE_herald-child\") in a bench or test of herald-bench)",
    );
    runtime.block_on(async {
        let cluster = Cluster::start().await;
        cluster.fill(&template, settings.b4_pool).await;
        let url = cluster.url();
        let contenders =
            tokio::task::spawn_blocking(move || Contenders::prepare(&url, &herald_program))
                .await
                .expect("building bench/clientgo");
        let contenders = Arc::new(contenders);
        let mut rows = Vec::new();
        for &rate in &settings.b4_rates {
            let mut baseline = Percentiles::default();
            let mut clientgo = Percentiles::default();
            let mut herald_run = Percentiles::default();
            let mut herald = Percentiles::default();
            let mut achieved = Samples::new();
            for rep in 0..settings.repetitions {
                crate::progress(format!(
                    "B4 {rate} events/s repetition {}/{}",
                    rep + 1,
                    settings.repetitions
                ));
                let (p50, p99, _) = kube_watcher_phase(&cluster, &template, settings, rate).await;
                baseline.p50.push(p50);
                baseline.p99.push(p99);
                let go = contenders.clone();
                let (p50, p99) = process_phase(
                    &cluster,
                    &template,
                    settings,
                    rate,
                    move || go.clientgo_latency(),
                    ClientGoLatency::finish,
                )
                .await;
                clientgo.p50.push(p50);
                clientgo.p99.push(p99);
                let run = contenders.clone();
                let (p50, p99) = process_phase(
                    &cluster,
                    &template,
                    settings,
                    rate,
                    move || run.herald_latency(),
                    HeraldLatency::finish,
                )
                .await;
                herald_run.p50.push(p50);
                herald_run.p99.push(p99);
                let (p50, p99, rate_done) =
                    herald_phase(&cluster, &template, settings, rate, &probes, fixtures).await;
                herald.p50.push(p50);
                herald.p99.push(p99);
                achieved.push(rate_done);
            }
            let label = format!("{}k", f64::from(rate) / 1000.0);
            rows.push(Row::ratio_of(
                format!("B4.p50-{label}"),
                format!("p50 write → plugin entry, {} plugins, {rate} events/s; baseline: kube-runtime watcher + native closure", settings.b4_plugins),
                Unit::Millis,
                baseline.p50.clone(),
                herald.p50.clone(),
                Goal::None,
            ));
            rows.push(
                Row::ratio_of(
                    format!("B4.p99-{label}"),
                    format!("p99 write → plugin entry, {} plugins, {rate} events/s; baseline: kube-runtime watcher + native closure", settings.b4_plugins),
                    Unit::Millis,
                    baseline.p99.clone(),
                    herald.p99.clone(),
                    Goal::AddedAtMost(ADDED_P99_GOAL_MS),
                )
                .with_details(format!(
                    "{rate} events/s asked, {:.0} achieved (median); Herald p99 − baseline p99 = {:.3} ms (median of repetitions); {:.1} s of writes per phase over {} Pods",
                    achieved.median(),
                    herald.p99.paired(&baseline.p99, |h, b| h - b).median(),
                    settings.b4_seconds,
                    settings.b4_pool,
                )),
            );
            rows.push(Row::ratio_of(
                format!("B4.p50-{label}-clientgo"),
                format!("p50 write → handler entry, {rate} events/s, `herald run` with one latency-probe; baseline: client-go typed informer + handler; both processes of their own"),
                Unit::Millis,
                clientgo.p50,
                herald_run.p50,
                Goal::None,
            ));
            rows.push(Row::ratio_of(
                format!("B4.p99-{label}-clientgo"),
                format!("p99 write → handler entry, {rate} events/s, `herald run` with one latency-probe; baseline: client-go typed informer + handler; both processes of their own"),
                Unit::Millis,
                clientgo.p99,
                herald_run.p99,
                Goal::None,
            ));
        }
        cluster.shutdown().await;
        rows
    })
}

/// One phase with the kube-runtime watcher: (p50 ms, p99 ms, rate achieved).
async fn kube_watcher_phase(
    cluster: &Cluster,
    template: &PodTemplate,
    settings: &Settings,
    rate: u32,
) -> (f64, f64, f64) {
    let api: Api<Pod> = Api::all(cluster.client());
    let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
    let watching = tokio::spawn(async move {
        let mut ready_tx = Some(ready_tx);
        let mut latencies = Vec::new();
        let stream = watcher(api, watcher::Config::default());
        futures::pin_mut!(stream);
        while let Some(event) = stream.try_next().await.expect("the watch") {
            match event {
                watcher::Event::InitDone => {
                    if let Some(tx) = ready_tx.take() {
                        let _ = tx.send(());
                    }
                }
                watcher::Event::Apply(pod) => {
                    let entry = now_ns();
                    if pod.metadata.name.as_deref() == Some(FLUSH_POD) {
                        return latencies;
                    }
                    let written = pod
                        .metadata
                        .annotations
                        .as_ref()
                        .and_then(|a| a.get(STAMP_ANNOTATION))
                        .and_then(|v| v.parse::<u64>().ok())
                        .filter(|&ns| ns > 0);
                    if let Some(written) = written {
                        latencies.push(entry.saturating_sub(written) as f64 / 1e6);
                    }
                }
                _ => {}
            }
        }
        latencies
    });
    ready_rx.await.expect("the watcher lists");
    let (_, achieved) = cluster
        .write_stamps(template, settings.b4_pool, rate, settings.b4_seconds)
        .await;
    cluster.flush().await;
    let latencies = tokio::time::timeout(PATIENCE, watching)
        .await
        .expect("the watcher sees the flush")
        .expect("the watcher task");
    let (p50, p99) = p50_p99(&latencies);
    (p50, p99, achieved)
}

/// One phase with a contender in a process of its own, started (until it
/// is ready) by `start`, and asked for its percentiles after the flush:
/// (p50 ms, p99 ms).
async fn process_phase<R: Send + 'static>(
    cluster: &Cluster,
    template: &PodTemplate,
    settings: &Settings,
    rate: u32,
    start: impl FnOnce() -> R + Send + 'static,
    finish: impl FnOnce(R) -> (f64, f64) + Send + 'static,
) -> (f64, f64) {
    let run = tokio::task::spawn_blocking(start)
        .await
        .expect("starting the process");
    cluster
        .write_stamps(template, settings.b4_pool, rate, settings.b4_seconds)
        .await;
    cluster.flush().await;
    tokio::time::timeout(PATIENCE, tokio::task::spawn_blocking(move || finish(run)))
        .await
        .expect("the process sees the flush")
        .expect("the process's task")
}

/// One phase with Herald: (p50 ms, p99 ms, rate achieved).
async fn herald_phase(
    cluster: &Cluster,
    template: &PodTemplate,
    settings: &Settings,
    rate: u32,
    probes: &[LoadedPlugin],
    fixtures: &Fixtures,
) -> (f64, f64, f64) {
    fixtures.logs.take();
    let informers = Arc::new(Informers::new(cluster.client(), ReflectorConfig::default()));
    let daemon = Daemon::new(informers, RetryPolicy::default());
    for probe in probes {
        daemon.start(probe.clone()).await.expect("starting a probe");
    }
    let deadline = Instant::now() + PATIENCE;
    while !daemon.ready() {
        assert!(Instant::now() < deadline, "the daemon never got ready");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let (_, achieved) = cluster
        .write_stamps(template, settings.b4_pool, rate, settings.b4_seconds)
        .await;
    cluster.flush().await;
    let logs = fixtures.logs.clone();
    let count = probes.len();
    let latencies = tokio::task::spawn_blocking(move || collect_probes(&logs, count))
        .await
        .expect("collecting latencies");
    daemon.shutdown(Instant::now() + Duration::from_secs(5));
    let (p50, p99) = p50_p99(&latencies);
    (p50, p99, achieved)
}
