//! The informer under the API faults the embedded API server injects:
//! dropped watches, repeated 410s, a full restart from persisted state,
//! bursts of 500s, slow responses and watches ended at once. Nothing is
//! lost: at quiet time the listener's view equals the server's state (with
//! the informer's ordering rules checked on every item), deletes missed
//! while disconnected arrive as tombstones, and reconnecting backs off
//! rather than spins. The lower bounds on elapsed time below only prove the
//! backoff waits; a slower machine only makes them hold more easily.
//!
//! These tests need fault injection, so on a real cluster they say so and
//! return.

use super::cluster::TestCluster;
use super::recording::{
    Recording, View, begin_watch_outage, config_maps, drop_watches_and_wait, informer, informers,
};
use herald::informer::{Informers, SharedInformer};
use herald::scratch::ScratchDir;
use herald_apiserver::{ApiServer, ApiServerConfig, Faults};
use herald_tests::{PATIENCE, Patience, eventually};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// An informer on a namespace's ConfigMaps with one recording listener.
struct Watched {
    _informers: Informers,
    informer: Arc<SharedInformer>,
    recording: Recording,
    view: View,
}

impl Watched {
    async fn start(client: &kube::Client, namespace: &str) -> Watched {
        let informers = informers(client.clone());
        let subscription = config_maps(namespace);
        let (_key, informer) = informer(&informers, &subscription).await;
        let recording = Recording::new(subscription);
        informer.add_listener(recording.listener.clone());
        Watched {
            _informers: informers,
            informer,
            recording,
            view: View::default(),
        }
    }

    /// Waits until the view equals what `api` lists now.
    async fn converges(&mut self, api: &Api<ConfigMap>) {
        eventually("the view matches the server", PATIENCE, async || {
            let server: BTreeMap<String, String> = api
                .list(&ListParams::default())
                .await
                .expect("listing")
                .items
                .into_iter()
                .map(|cm| {
                    (
                        cm.metadata.name.unwrap(),
                        cm.metadata.resource_version.unwrap(),
                    )
                })
                .collect();
            for seen in self.recording.drain() {
                self.view.apply("listener", seen);
            }
            if self.view.synced && self.view.objects == server {
                Ok(())
            } else {
                Err(format!(
                    "\n view   {:?} (synced: {})\n server {server:?}",
                    self.view.objects, self.view.synced
                ))
            }
        })
        .await;
    }

    fn counter(&self, read: impl Fn(&herald::informer::ReflectorStats) -> u64) -> u64 {
        read(self.informer.stats())
    }
}

fn errors(stats: &herald::informer::ReflectorStats) -> u64 {
    stats.errors.load(Ordering::SeqCst)
}

/// Waits until `read` of the informer's stats reaches `target`; returns when.
async fn reaches(
    watched: &Watched,
    what: &str,
    read: impl Fn(&herald::informer::ReflectorStats) -> u64,
    target: u64,
) -> Instant {
    // Looking every millisecond: a late look would make the time late too.
    let patience = Patience::new(PATIENCE).looking_at_least_every(Duration::from_millis(1));
    eventually(&format!("{what} reaches {target}"), patience, async || {
        let now = watched.counter(&read);
        if now >= target {
            Ok(Instant::now())
        } else {
            Err(format!("{what} at {now}"))
        }
    })
    .await
}

/// Drops the open watches once there is one to drop.
async fn drop_open_watches(faults: &Faults) {
    eventually("a watch is opened", PATIENCE, async || {
        faults.open_watches() > 0
    })
    .await;
    faults.drop_watches();
}

/// The cluster's fault injector, or `None` on a real cluster, where the
/// test skips only if skipping is allowed ([`herald_tests::skip`]).
fn faults_of(cluster: &TestCluster, test: &str) -> Option<Faults> {
    let faults = cluster.faults();
    if faults.is_none() {
        herald_tests::skip(test, "it needs the embedded API server's fault injection");
    }
    faults
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_watches_resume_from_the_last_version_without_a_relist() {
    let cluster = TestCluster::start().await;
    let Some(faults) = faults_of(&cluster, "dropped watches") else {
        return cluster.cleanup().await;
    };
    let mut watched = Watched::start(&cluster.client, &cluster.namespace).await;
    let api = cluster.config_maps();
    watched.converges(&api).await;
    let lists = watched.counter(|s| s.lists.load(Ordering::SeqCst));
    for round in 0..5 {
        drop_watches_and_wait(&faults, &watched.informer).await;
        cluster
            .create_config_map(&format!("dropped-{round}"), "a", "1")
            .await;
        watched.converges(&api).await;
    }
    assert_eq!(
        watched.counter(|s| s.lists.load(Ordering::SeqCst)),
        lists,
        "a dropped watch resumes; it does not relist"
    );
    cluster.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_410s_each_force_a_relist_and_missed_deletes_arrive_as_tombstones() {
    let cluster = TestCluster::start().await;
    let Some(faults) = faults_of(&cluster, "repeated 410s") else {
        return cluster.cleanup().await;
    };
    let mut watched = Watched::start(&cluster.client, &cluster.namespace).await;
    let api = cluster.config_maps();
    for round in 0..4 {
        cluster
            .create_config_map(&format!("kept-{round}"), "a", "1")
            .await;
        cluster
            .create_config_map(&format!("gone-{round}"), "a", "1")
            .await;
    }
    watched.converges(&api).await;
    for round in 0..4 {
        let expired = watched.counter(|s| s.expired.load(Ordering::SeqCst));
        // Disconnected: every change now is one the watch will not replay.
        begin_watch_outage(&faults).await;
        cluster.delete_config_map(&format!("gone-{round}")).await;
        cluster
            .update_config_map(&format!("kept-{round}"), "2")
            .await;
        faults.compact_history();
        faults.fail_watches(false);
        watched.converges(&api).await;
        assert_eq!(
            watched.counter(|s| s.expired.load(Ordering::SeqCst)),
            expired + 1,
            "round {round}: one 410, one relist"
        );
        assert!(
            watched.view.tombstones.contains(&format!("gone-{round}")),
            "round {round}: the delete missed while disconnected arrived as a tombstone"
        );
    }
    cluster.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_500s_is_ridden_out_with_a_growing_backoff() {
    let cluster = TestCluster::start().await;
    let Some(faults) = faults_of(&cluster, "500s") else {
        return cluster.cleanup().await;
    };
    let mut watched = Watched::start(&cluster.client, &cluster.namespace).await;
    let api = cluster.config_maps();
    cluster.create_config_map("before", "a", "1").await;
    watched.converges(&api).await;
    let before = watched.counter(errors);
    faults.fail_next_requests(8);
    drop_open_watches(&faults).await;
    let first = reaches(&watched, "the dropped watch's error", errors, before + 1).await;
    let last = reaches(&watched, "eight failed reconnects", errors, before + 9).await;
    // Backoff 20 ms doubling to 500 ms: 20+40+80+160+320+500+500+500.
    assert!(
        last - first >= Duration::from_millis(2000),
        "eight failures in {:?}: the reconnects did not back off",
        last - first
    );
    cluster.create_config_map("after", "a", "1").await;
    watched.converges(&api).await;
    cluster.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_ended_at_once_are_retried_with_backoff_not_in_a_loop() {
    let cluster = TestCluster::start().await;
    let Some(faults) = faults_of(&cluster, "watches ended at once") else {
        return cluster.cleanup().await;
    };
    let mut watched = Watched::start(&cluster.client, &cluster.namespace).await;
    let api = cluster.config_maps();
    watched.converges(&api).await;
    let before = watched.counter(errors);
    faults.close_watches(true);
    drop_open_watches(&faults).await;
    let first = reaches(&watched, "the dropped watch's error", errors, before + 1).await;
    let last = reaches(&watched, "five very short watches", errors, before + 6).await;
    // Backoff 20 ms doubling: 20+40+80+160+320.
    assert!(
        last - first >= Duration::from_millis(600),
        "five empty watches in {:?}: the reconnects did not back off",
        last - first
    );
    faults.close_watches(false);
    cluster.create_config_map("after", "a", "1").await;
    watched.converges(&api).await;
    cluster.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_responses_delay_events_but_lose_none() {
    let cluster = TestCluster::start().await;
    let Some(faults) = faults_of(&cluster, "slow responses") else {
        return cluster.cleanup().await;
    };
    let mut watched = Watched::start(&cluster.client, &cluster.namespace).await;
    let api = cluster.config_maps();
    faults.set_latency(Duration::from_millis(150));
    drop_watches_and_wait(&faults, &watched.informer).await;
    for i in 0..6 {
        cluster
            .create_config_map(&format!("slow-{i}"), "a", "1")
            .await;
    }
    cluster.delete_config_map("slow-0").await;
    cluster.update_config_map("slow-1", "2").await;
    watched.converges(&api).await;
    faults.set_latency(Duration::ZERO);
    cluster.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_api_server_restart_from_persisted_state_loses_nothing() {
    let scratch = ScratchDir::new("api-restart").unwrap();
    let dir = scratch.join("state");
    let config = ApiServerConfig {
        persist_dir: Some(dir.clone()),
        ..ApiServerConfig::default()
    };
    let server = herald_apiserver::start(config.clone()).await.unwrap();
    let client = kube::Client::try_from(kube::Config::new(server.url().parse().unwrap())).unwrap();
    let namespace: Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": "restart"}})).unwrap();
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "restart");
    let create = |name: &str| {
        let api = api.clone();
        let cm: ConfigMap =
            serde_json::from_value(serde_json::json!({"metadata": {"name": name}})).unwrap();
        async move { api.create(&PostParams::default(), &cm).await.unwrap() }
    };
    for name in ["a", "b", "c"] {
        create(name).await;
    }
    let mut watched = Watched::start(&client, "restart").await;
    watched.converges(&api).await;

    let listen = server.addr();
    server.shutdown().await;
    let server: ApiServer = herald_apiserver::start(ApiServerConfig { listen, ..config })
        .await
        .expect("restarting on the same address from the persisted state");
    api.delete("a", &DeleteParams::default()).await.unwrap();
    create("d").await;
    watched.converges(&api).await;
    assert!(
        watched.counter(errors) >= 1,
        "the informer noticed the server was gone"
    );
    server.shutdown().await;
}
