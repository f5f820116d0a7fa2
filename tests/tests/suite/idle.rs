//! An idle plugin's instance dropped and made afresh (`reclaimIdleAfter`),
//! on a whole daemon over the embedded API server: the drop is counted in
//! the plugin's status, the next notification is delivered by a fresh
//! instance (whose globals started over, as the setting warns), and a
//! plugin without the setting keeps its instance.

use super::cluster::TestCluster;
use herald::daemon::Daemon;
use herald::dispatch::RetryPolicy;
use herald::plugin::{IdlePolicy, LoadOptions};
use herald_tests::{PATIENCE, artifacts, eventually, load_with};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `recorder` on the test namespace's ConfigMaps, coalesced, asking once per
/// key (a count its instance keeps) for a ConfigMap labelled `app=again` to
/// be delivered again.
fn options(cluster: &TestCluster, name: &str, idle: IdlePolicy) -> LoadOptions {
    LoadOptions {
        config: Some(
            serde_json::json!({
                "name": name,
                "kind": {"version": "v1", "kind": "ConfigMap"},
                "namespace": cluster.namespace,
                "coalesced": true,
                "requeue": {"label": "app=again", "afterMs": 1, "times": 1},
            })
            .to_string(),
        ),
        idle,
        ..LoadOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_instance_is_dropped_and_the_next_delivery_gets_a_fresh_one() {
    let cluster = TestCluster::start().await;
    let daemon = Daemon::new(
        Arc::new(super::recording::informers(cluster.client.clone())),
        RetryPolicy::default(),
    );
    let reclaiming = IdlePolicy {
        reclaim_after: Some(IdlePolicy::MIN_RECLAIM_AFTER),
    };
    let (plugin, logs) = load_with(
        artifacts::RECORDER,
        options(&cluster, "reclaimed", reclaiming),
    );
    let (keeper, keeper_logs) = load_with(
        artifacts::RECORDER,
        options(&cluster, "kept", IdlePolicy::default()),
    );
    daemon.start(plugin).await.unwrap();
    daemon.start(keeper).await.unwrap();
    eventually("the daemon is ready", PATIENCE, async || daemon.ready()).await;
    let status = |name: &str| {
        daemon
            .status()
            .into_iter()
            .find(|s| s.name == name)
            .expect("the plugin's status")
    };
    assert_eq!(
        status("reclaimed").reclaim_idle_after,
        Some(Duration::from_secs(1))
    );
    let key = format!("key={}/c ", cluster.namespace);
    let lines = |logs: &herald::capability::log::MemorySink| {
        logs.lines()
            .into_iter()
            .filter(|l| l.message.contains(&key))
            .count()
    };

    // The add, then its one requeue: the instance counted the key.
    cluster.create_config_map("c", "again", "1").await;
    eventually("the add and its requeue", PATIENCE, async || {
        lines(&logs) == 2 && lines(&keeper_logs) == 2
    })
    .await;
    eventually("the idle instance is dropped", PATIENCE, async || {
        status("reclaimed").instances_reclaimed >= 1
    })
    .await;

    // A fresh instance has forgotten the count, so the update is requeued
    // once more; the kept instance remembers it and does not requeue.
    cluster.update_config_map("c", "2").await;
    eventually("the update reaches both", PATIENCE, async || {
        lines(&logs) == 4 && lines(&keeper_logs) == 3
    })
    .await;
    assert_eq!(status("kept").instances_reclaimed, 0);
    assert_eq!(status("kept").reclaim_idle_after, None);
    daemon.shutdown(Instant::now() + Duration::from_secs(5));
    cluster.cleanup().await;
}
