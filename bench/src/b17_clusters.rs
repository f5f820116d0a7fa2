//! B17: several clusters from one daemon.
//!
//! - **B17.startup**: from nothing to ready over K clusters of N Pods each
//!   (one embedded API server per cluster, one no-op plugin on world 0.6.0
//!   running on every cluster), against the same over one cluster of N
//!   Pods, each repetition measuring both, with the CPU the process spent
//!   in each (the servers run in it too, so on two cores K clusters cost K
//!   times the CPU of one, and the wall-clock ratio says how much of it ran
//!   at once). Informers read JSON here: the embedded server's protobuf
//!   encoding is the costlier path on this machine and is B7's subject.
//!   Goal (issue 42): at most 1.5×, since the clusters list in parallel.
//! - **B17.idle**: the heap one more cluster holds while no plugin
//!   subscribes there (its clients for the informers and for plugins'
//!   calls, its discovery), from 16 clusters added; and no informer
//!   starts. Goal: at most 1 MiB per cluster.

use crate::cluster::Cluster;
use crate::data::{Extras, PodSize, PodTemplate};
use crate::fixtures::Fixtures;
use crate::measure::{PATIENCE, Samples};
use crate::settings::Settings;
use crate::table::{Goal, Row, Unit};
use herald::capability::kube::{ClusterApi, writer_config};
use herald::capability::reads::{ReadRule, Reads};
use herald::capability::{ClusterAccess, Grants};
use herald::cluster::{ClusterName, Clusters};
use herald::daemon::Daemon;
use herald::dispatch::RetryPolicy;
use herald::informer::{Informers, ReflectorConfig};
use herald::plugin::{LoadOptions, LoadedPlugin};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::runtime::Runtime;

/// Clusters added for the idle row.
const IDLE_CLUSTERS: usize = 16;

/// Runs B17.
pub fn run(settings: &Settings, fixtures: &Fixtures, runtime: &Runtime) -> Vec<Row> {
    let (count, clusters) = (settings.b17_objects, settings.b17_clusters);
    runtime.block_on(async {
        let mut servers = Vec::new();
        for at in 0..clusters {
            let cluster = Cluster::start().await;
            crate::progress(format!("B17 creating {count} Pods in cluster {}", at + 1));
            cluster
                .fill(&PodTemplate::new(PodSize::Small, Extras::default()), count)
                .await;
            servers.push(cluster);
        }
        let home = load(fixtures, &servers[0], false);
        let everywhere = load(fixtures, &servers[0], true);
        let mut one = Samples::new();
        let mut all = Samples::new();
        let mut cpu_one = Samples::new();
        let mut cpu_all = Samples::new();
        for rep in 0..settings.repetitions {
            crate::progress(format!(
                "B17 start-up repetition {}/{}",
                rep + 1,
                settings.repetitions
            ));
            let (wall, cpu) = ready(&servers[..1], &home).await;
            one.push(wall);
            cpu_one.push(cpu);
            let (wall, cpu) = ready(&servers, &everywhere).await;
            all.push(wall);
            cpu_all.push(cpu);
        }
        let idle = idle_bytes(&servers[0]).await;
        for server in servers {
            server.shutdown().await;
        }
        let details = format!(
            "one cluster: median {:.0} ms, {:.0} ms of CPU ({:.2} cores); {clusters} clusters: \
             median {:.0} ms, {:.0} ms of CPU ({:.2} cores; {:.2}× one cluster's CPU)",
            one.median(),
            cpu_one.median(),
            cpu_one.median() / one.median(),
            all.median(),
            cpu_all.median(),
            cpu_all.median() / all.median(),
            cpu_all.median() / cpu_one.median(),
        );
        let idle_row = Row::ratio_of(
            "B17.idle",
            format!(
                "heap held per cluster added with no subscription there ({IDLE_CLUSTERS} added; no informer started)"
            ),
            Unit::Bytes,
            Samples::new(),
            idle,
            Goal::ValueAtMost(1024.0 * 1024.0),
        );
        vec![
            Row::ratio_of(
                "B17.startup",
                format!(
                    "start-up to ready over {clusters} clusters × {count} Pods, one no-op plugin on all; baseline: one cluster of {count} Pods"
                ),
                Unit::Millis,
                one,
                all,
                Goal::RatioAtMost(1.5),
            )
            .with_details(details),
            idle_row,
        ]
    })
}

/// `cluster-noop` reading every cluster (`everywhere`) or the default one.
fn load(fixtures: &Fixtures, home: &Cluster, everywhere: bool) -> LoadedPlugin {
    let every = Clusters(["*".to_owned()].into());
    let grants = if everywhere {
        Grants {
            clusters: every.clone(),
            reads: Reads {
                granted: vec![ReadRule {
                    group: String::new(),
                    kind: "Pod".into(),
                    namespaces: ["*".to_owned()].into(),
                    clusters: every,
                }],
                ..Reads::default()
            },
            ..Grants::default()
        }
    } else {
        Grants::default()
    };
    let options = LoadOptions {
        grants,
        access: Some(ClusterAccess::new(Arc::new(ClusterApi::new(home.client())))),
        ..LoadOptions::default()
    };
    LoadedPlugin::load(
        fixtures.engine(),
        &herald_test_artifacts::bytes(herald_test_artifacts::CLUSTER_NOOP),
        options,
    )
    .expect("loading cluster-noop")
}

/// The name of the `at`th cluster beside the default one.
fn name(at: usize) -> ClusterName {
    ClusterName::parse("name", &format!("c{at}")).expect("a cluster name")
}

/// Milliseconds from nothing to ready, and of the process's CPU meanwhile:
/// the first of `servers` the default cluster, the others added, `plugin`
/// started, every informer synced (reading JSON) and its initial lists
/// handled.
async fn ready(servers: &[Cluster], plugin: &LoadedPlugin) -> (f64, f64) {
    let started = Instant::now();
    let cpu = crate::measure::process_cpu_ns();
    let config = ReflectorConfig {
        protobuf: false,
        ..ReflectorConfig::default()
    };
    let informers = Informers::new(servers[0].client(), config);
    for (at, server) in servers.iter().enumerate().skip(1) {
        informers.add_cluster(name(at), server.client());
    }
    let daemon = Daemon::new(Arc::new(informers), RetryPolicy::default());
    daemon
        .start(plugin.clone())
        .await
        .expect("starting cluster-noop");
    while !daemon.ready() {
        assert!(started.elapsed() < PATIENCE, "the daemon never got ready");
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
    let took = started.elapsed();
    let cpu = cpu
        .zip(crate::measure::process_cpu_ns())
        .map_or(f64::NAN, |(before, after)| (after - before) as f64 / 1e6);
    daemon.shutdown(Instant::now());
    (took.as_secs_f64() * 1e3, cpu)
}

/// Heap bytes per cluster added with no subscription there, one sample per
/// round of [`IDLE_CLUSTERS`]; panics if one starts an informer.
async fn idle_bytes(server: &Cluster) -> Samples {
    let mut samples = Samples::new();
    for _ in 0..3 {
        let informers = Arc::new(Informers::new(server.client(), ReflectorConfig::default()));
        let api = ClusterApi::new(server.client());
        let daemon = Daemon::new(informers.clone(), RetryPolicy::default());
        let url = server.url();
        let ((), retained) = crate::alloc::retained_by(|| {
            for at in 1..=IDLE_CLUSTERS {
                let config = kube::Config::new(url.parse().expect("server URL"));
                let writer = kube::Client::try_from(writer_config(config.clone())).expect("client");
                let client = kube::Client::try_from(config).expect("client");
                informers.add_cluster(name(at), client);
                api.add_cluster(name(at), writer);
            }
        });
        daemon.refresh_clusters().await;
        assert!(
            informers.all().is_empty(),
            "a cluster nobody subscribes to started an informer"
        );
        if let Some(bytes) = retained {
            samples.push(bytes as f64 / IDLE_CLUSTERS as f64);
        }
    }
    samples
}
