//! Two whole daemons (`Service`) sharing a cluster under leader election:
//! only the leader dispatches, the follower keeps a warm cache, and when the
//! leader shuts down the follower takes over, its plugin receiving the cache
//! as an initial list and then live events, ending with the server's state.

use super::cluster::TestCluster;
use herald::capability::log::{MemorySink, OwnedLogLine};
use herald::config::Config;
use herald::leader::LeaderElectionConfig;
use herald::reload::PluginConfig;
use herald::scratch::ScratchDir;
use herald::service::Service;
use herald_tests::{PATIENCE, artifacts, eventually};
use kube::api::ListParams;
use std::collections::BTreeSet;

use std::sync::Arc;
use std::time::Duration;

/// A daemon with the recorder (ConfigMaps of the test namespace) and leader
/// election on the test's Lease as `identity`.
async fn replica(cluster: &TestCluster, identity: &str) -> (Service, MemorySink, ScratchDir) {
    let dir = cluster.plugin_dir(
        &format!("replica-{identity}"),
        &[("recorder", artifacts::RECORDER)],
    );
    let mut config = Config {
        plugin_dir: dir.to_path_buf(),
        leader_election: LeaderElectionConfig {
            enabled: true,
            lease_name: "herald-replicas".into(),
            lease_namespace: Some(cluster.namespace.clone()),
            identity: Some(identity.into()),
            lease_duration: Duration::from_secs(2),
            renew_deadline: Duration::from_secs(1),
            retry_period: Duration::from_millis(100),
        },
        ..Config::default()
    };
    config.log.plugin_lines_per_second = 1_000_000;
    config.log.plugin_burst = 1_000_000;
    config.plugin_files.artifact_cache.enabled = false;
    config.plugins.insert(
        "recorder".into(),
        PluginConfig {
            config: Some(serde_json::json!({
                "kind": {"version": "v1", "kind": "ConfigMap"},
                "namespace": cluster.namespace,
            })),
            ..PluginConfig::default()
        },
    );
    let sink = MemorySink::default();
    let service = cluster.service(config, Arc::new(sink.clone())).await;
    (service, sink, dir)
}

/// The keys of the recorder's events, in order, with their kind.
fn events(lines: &[OwnedLogLine]) -> Vec<(String, bool)> {
    lines
        .iter()
        .filter_map(|l| {
            let key = l.message.split(' ').find_map(|f| f.strip_prefix("key="))?;
            Some((key.to_owned(), l.message.contains("initial=true")))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_leader_dispatches_and_the_follower_takes_over_with_a_warm_cache() {
    let cluster = TestCluster::start().await;
    cluster.create_config_map("before", "a", "1").await;
    let (a, a_log, _a_plugins) = replica(&cluster, "replica-a").await;
    let (b, b_log, _b_plugins) = replica(&cluster, "replica-b").await;
    eventually("one replica leads", PATIENCE, async || {
        a.is_leading() || b.is_leading()
    })
    .await;
    let (leader, leader_log, follower, follower_log) = if a.is_leading() {
        (a, a_log, b, b_log)
    } else {
        (b, b_log, a, a_log)
    };
    assert!(!follower.is_leading(), "never two leaders");

    cluster.create_config_map("during", "a", "1").await;
    let leader_lines = std::sync::Mutex::new(Vec::new());
    eventually(
        "the leader's plugin records the new ConfigMap",
        PATIENCE,
        async || {
            let mut lines = leader_lines.lock().unwrap();
            lines.extend(leader_log.take());
            events(&lines).iter().any(|(k, _)| k.ends_with("/during"))
        },
    )
    .await;
    let follower_informer = follower.daemon().informers().all().pop().unwrap();
    eventually("the follower's cache is warm", PATIENCE, async || {
        follower_informer.store().len() == 2
    })
    .await;
    assert!(
        follower_log.take().is_empty(),
        "a follower's plugin receives nothing"
    );
    assert!(follower.daemon().listeners("recorder").is_empty());

    leader.shutdown(Duration::from_secs(5)).await;
    eventually(
        "the follower takes over once the Lease is released",
        PATIENCE,
        async || follower.is_leading(),
    )
    .await;
    cluster.create_config_map("after", "a", "1").await;
    let lines = std::sync::Mutex::new(Vec::new());
    eventually(
        "the new leader's plugin records the later ConfigMap",
        PATIENCE,
        async || {
            let mut lines = lines.lock().unwrap();
            lines.extend(follower_log.take());
            events(&lines).iter().any(|(k, _)| k.ends_with("/after"))
        },
    )
    .await;
    let seen = events(&lines.lock().unwrap());
    let snapshot: BTreeSet<&str> = seen
        .iter()
        .filter(|(_, initial)| *initial)
        .map(|(k, _)| k.rsplit('/').next().unwrap())
        .collect();
    assert_eq!(
        snapshot,
        BTreeSet::from(["before", "during"]),
        "the new leader's plugin starts from the cache"
    );
    let server: usize = cluster
        .config_maps()
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .len();
    assert_eq!(server, 3);

    follower.shutdown(Duration::from_secs(5)).await;
    cluster.cleanup().await;
}
