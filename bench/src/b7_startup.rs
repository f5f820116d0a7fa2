//! B7: start-up, from nothing to ready over 10k objects: the informer has
//! listed them and 3 no-op plugins have handled their initial lists.
//! Baseline: a bare kube-runtime reflector (`Store<Pod>`, no transform)
//! with streaming lists, synced over the same objects from the same server.
//! Context: the same reflector with its default paginated list. B7.streamed:
//! Herald syncing by streaming list against Herald listing in pages. Both
//! sides read JSON; B7.protobuf shows Herald reading the embedded server's
//! protobuf, which that server encodes from its JSON object by object (a
//! cost of the stand-in, not of a real kube-apiserver).
//!
//! Plugins are compiled and loaded before the clock starts (restarts load
//! compiled artifacts from the cache); each phase uses a new client, so new
//! connections. Goal: Herald ready no later than the bare reflector is
//! synced (ratio ≤ 1.0).
//!
//! B7.process-*: fresh processes, as an operator starts them, over Pods
//! shaped as a real API server stores them (`managedFields` included):
//! `herald run` with one no-op plugin until `/readyz` says ready, against
//! client-go's typed informer with a strip transform (`bench/clientgo`)
//! until synced, interleaved ([`crate::contenders`]). Goals (issue 32):
//! ready no later than client-go (ratio ≤ 1.0), peak RSS at most half of
//! client-go's.

use crate::cluster::Cluster;
use crate::contenders::{Contenders, Synced};
use crate::data::{Extras, PodSize, PodTemplate};
use crate::fixtures::{Fixture, Fixtures};
use crate::measure::{PATIENCE, Samples};
use crate::settings::Settings;
use crate::table::{Goal, Row, Unit};
use futures::StreamExt;
use herald::daemon::Daemon;
use herald::dispatch::RetryPolicy;
use herald::informer::{Informers, ReflectorConfig};
use herald::plugin::LoadedPlugin;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::runtime::{WatchStreamExt, reflector, watcher};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::runtime::Runtime;

/// Runs B7.
pub fn run(settings: &Settings, fixtures: &Fixtures, runtime: &Runtime) -> Vec<Row> {
    let plugins: Vec<LoadedPlugin> = (0..settings.b7_plugins)
        .map(|i| fixtures.load_named(Fixture::NamedNoop, &format!("start-{i}")))
        .collect();
    let count = settings.b7_objects;
    runtime.block_on(async {
        let cluster = Cluster::start().await;
        crate::progress(format!("B7 creating {count} Pods"));
        cluster
            .fill(&PodTemplate::new(PodSize::Small, Extras::default()), count)
            .await;
        let mut streaming = Samples::new();
        let mut paginated = Samples::new();
        let mut herald = Samples::new();
        let mut herald_paginated = Samples::new();
        let mut herald_protobuf = Samples::new();
        for rep in 0..settings.repetitions {
            crate::progress(format!(
                "B7 start-up repetition {}/{}",
                rep + 1,
                settings.repetitions
            ));
            streaming.push(kube_reflector(&cluster, true).await);
            herald.push(herald_ready(&cluster, &plugins, true, false).await);
            paginated.push(kube_reflector(&cluster, false).await);
            herald_paginated.push(herald_ready(&cluster, &plugins, false, false).await);
            herald_protobuf.push(herald_ready(&cluster, &plugins, true, true).await);
        }
        cluster.shutdown().await;
        let mut rows = vec![
            Row::ratio_of(
                "B7.ready",
                format!(
                    "start-up to ready, {count} Pods, {} no-op plugins, reading JSON; baseline: bare kube-runtime reflector, streaming list, JSON",
                    settings.b7_plugins
                ),
                Unit::Millis,
                streaming,
                herald.clone(),
                Goal::RatioAtMost(1.0),
            ),
            Row::ratio_of(
                "B7.paginated",
                format!(
                    "start-up to ready, {count} Pods; baseline: bare kube-runtime reflector, paginated list (context)"
                ),
                Unit::Millis,
                paginated,
                herald.clone(),
                Goal::None,
            ),
            Row::ratio_of(
                "B7.streamed",
                format!(
                    "Herald's start-up to ready, {count} Pods, synced by a streaming list; baseline: Herald listing in pages (a server without watch-list)"
                ),
                Unit::Millis,
                herald_paginated,
                herald.clone(),
                Goal::RatioAtMost(1.0),
            ),
            Row::ratio_of(
                "B7.protobuf",
                format!(
                    "Herald's start-up to ready, {count} Pods, reading the embedded server's protobuf (Herald's default); baseline: reading its JSON (context: the embedded server encodes protobuf from its JSON, object by object)"
                ),
                Unit::Millis,
                herald,
                herald_protobuf,
                Goal::None,
            ),
        ];
        rows.extend(against_clientgo(settings).await);
        rows
    })
}

/// B7.process-*: `herald run` against client-go, fresh processes,
/// interleaved, over Pods with `managedFields`.
async fn against_clientgo(settings: &Settings) -> Vec<Row> {
    let herald_program = settings.compiler_program.clone().expect(
        "B7 starts `herald run` processes and needs Settings::compiler_program \
         (env!(\"CARGO_BIN_EXE_herald-child\") in a bench or test of herald-bench)",
    );
    let count = settings.b7_objects;
    let template = PodTemplate::new(
        PodSize::Small,
        Extras {
            managed_fields: true,
            stamp: false,
        },
    );
    let pod_bytes = template.render(0, 1, 0).len();
    let cluster = Cluster::start().await;
    crate::progress(format!(
        "B7 creating {count} Pods with managedFields and building bench/clientgo"
    ));
    cluster.fill(&template, count).await;
    let url = cluster.url();
    let repetitions = settings.repetitions;
    let (watch_list, listed, herald) = tokio::task::spawn_blocking(move || {
        let contenders = Contenders::prepare(&url, &herald_program);
        // Not counted: the first `herald run` compiles the plugin into the
        // artifact cache (later ones load it, as a restart does), and the
        // first of each warms the server and the page cache.
        contenders.herald(count);
        contenders.clientgo(true, count);
        let (mut watch_list, mut listed, mut herald) = (Vec::new(), Vec::new(), Vec::new());
        for rep in 0..repetitions {
            crate::progress(format!(
                "B7 processes, herald run against client-go, repetition {}/{repetitions}",
                rep + 1
            ));
            watch_list.push(contenders.clientgo(true, count));
            herald.push(contenders.herald(count));
            listed.push(contenders.clientgo(false, count));
        }
        (watch_list, listed, herald)
    })
    .await
    .expect("the process benchmark");
    cluster.shutdown().await;
    let samples = |runs: &[Synced], f: fn(&Synced) -> f64| {
        let mut samples = Samples::new();
        for run in runs {
            samples.push(f(run));
        }
        samples
    };
    let millis = |s: &Synced| s.millis;
    let rss = |s: &Synced| s.peak_rss;
    let cpu = |s: &Synced| s.cpu_millis;
    let shape = format!(
        "{count} Pods of {:.1} KB with managedFields, one no-op plugin",
        pod_bytes as f64 / 1000.0
    );
    let details = format!(
        "CPU time until synced, medians: herald run {:.0} ms, client-go (watch-list) {:.0} ms, client-go (LIST) {:.0} ms; client-go times itself from its first package's initialisation (about 1 ms after exec), herald run is timed from spawn",
        samples(&herald, cpu).median(),
        samples(&watch_list, cpu).median(),
        samples(&listed, cpu).median(),
    );
    vec![
        Row::ratio_of(
            "B7.process-ready",
            format!(
                "fresh process to ready, `herald run` reading JSON, {shape}; baseline: client-go SharedInformer with a strip transform, watch-list, JSON (bench/clientgo)"
            ),
            Unit::Millis,
            samples(&watch_list, millis),
            samples(&herald, millis),
            Goal::RatioAtMost(1.0),
        )
        .with_details(details),
        Row::ratio_of(
            "B7.process-rss",
            format!(
                "peak RSS when ready, `herald run`, {shape}; baseline: the same client-go informer"
            ),
            Unit::Bytes,
            samples(&watch_list, rss),
            samples(&herald, rss),
            Goal::RatioAtMost(0.5),
        ),
        Row::ratio_of(
            "B7.process-list",
            format!(
                "fresh process to ready, `herald run`, {shape}; baseline: client-go synced by a LIST (no watch-list; context)"
            ),
            Unit::Millis,
            samples(&listed, millis),
            samples(&herald, millis),
            Goal::None,
        ),
    ]
}

/// Milliseconds until a bare reflector's store is ready.
async fn kube_reflector(cluster: &Cluster, streaming: bool) -> f64 {
    let started = Instant::now();
    let api: Api<Pod> = Api::all(cluster.client());
    let config = if streaming {
        watcher::Config::default().streaming_lists()
    } else {
        watcher::Config::default()
    };
    let (reader, writer) = reflector::store::<Pod>();
    let stream = watcher(api, config).reflect(writer);
    let driving = tokio::spawn(async move {
        futures::pin_mut!(stream);
        while let Some(event) = stream.next().await {
            event.expect("the reflector's watch");
        }
    });
    tokio::time::timeout(PATIENCE, reader.wait_until_ready())
        .await
        .expect("the reflector syncs")
        .expect("the reflector's writer lives");
    let took = started.elapsed();
    driving.abort();
    took.as_secs_f64() * 1e3
}

/// Milliseconds until a new daemon with `plugins` is ready, its informers
/// syncing by streaming lists or by paginated lists.
async fn herald_ready(
    cluster: &Cluster,
    plugins: &[LoadedPlugin],
    watch_list: bool,
    protobuf: bool,
) -> f64 {
    let started = Instant::now();
    let config = ReflectorConfig {
        watch_list,
        protobuf,
        ..ReflectorConfig::default()
    };
    let informers = Arc::new(Informers::new(cluster.client(), config));
    let daemon = Daemon::new(informers, RetryPolicy::default());
    for plugin in plugins {
        daemon
            .start(plugin.clone())
            .await
            .expect("starting a plugin");
    }
    while !daemon.ready() {
        assert!(started.elapsed() < PATIENCE, "the daemon never got ready");
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
    let took = started.elapsed();
    daemon.shutdown(Instant::now());
    took.as_secs_f64() * 1e3
}
