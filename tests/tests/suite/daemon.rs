//! The daemon end to end: plugins built from `plugins/` running in wasmtime,
//! fed by shared informers over the embedded API server.

use super::cluster::TestCluster;
use super::recording::{PATIENCE, informers};
use herald::daemon::Daemon;
use herald::dispatch::RetryPolicy;
use herald::plugin::{LoadOptions, MemorySink};
use herald_tests::{artifacts, load_with};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Waits (up to [`PATIENCE`]) until `condition` holds, checking every few ms.
pub async fn eventually(what: &str, condition: impl Fn() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn start_options(config: serde_json::Value) -> LoadOptions {
    LoadOptions {
        config: Some(config.to_string()),
        ..LoadOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_created_and_deleted_pod_reaches_pod_lifecycle() {
    let cluster = TestCluster::start().await;
    let daemon = Daemon::new(
        Arc::new(informers(cluster.client.clone())),
        RetryPolicy::default(),
    );
    let (plugin, logs) = load_with(artifacts::POD_LIFECYCLE, LoadOptions::default());
    daemon.start(plugin).await.unwrap();
    eventually("the daemon is ready", || daemon.ready()).await;
    let seen = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let collect = |logs: &MemorySink, seen: &Arc<std::sync::Mutex<Vec<String>>>| {
        seen.lock()
            .unwrap()
            .extend(logs.take().into_iter().map(|l| l.message));
    };
    cluster.create_pod("hello", "web").await;
    let key = format!("{}/hello", cluster.namespace);
    eventually("pod-lifecycle reports the creation", || {
        collect(&logs, &seen);
        seen.lock()
            .unwrap()
            .iter()
            .any(|m| m.starts_with(&format!("created pod={key}")))
    })
    .await;
    cluster
        .pods()
        .delete("hello", &Default::default())
        .await
        .unwrap();
    eventually("pod-lifecycle reports the deletion", || {
        collect(&logs, &seen);
        seen.lock()
            .unwrap()
            .iter()
            .any(|m| m.starts_with(&format!("deleted pod={key}")))
    })
    .await;
    daemon.shutdown(Instant::now() + Duration::from_secs(5));
    cluster.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_handler_is_retried_with_backoff_then_skipped_and_recorded() {
    let cluster = TestCluster::start().await;
    let retry = RetryPolicy {
        max_retries: 2,
        initial_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(4),
        ..RetryPolicy::default()
    };
    let daemon = Daemon::new(Arc::new(informers(cluster.client.clone())), retry);
    let (plugin, _logs) = load_with(artifacts::ALWAYS_ERROR, LoadOptions::default());
    let name = plugin.name().to_owned();
    daemon.start(plugin).await.unwrap();
    for i in 0..3 {
        cluster.create_pod(&format!("p{i}"), "web").await;
    }
    let listener = daemon.listeners(&name).pop().unwrap();
    eventually("three notifications skipped", || {
        listener.stats.skipped.load(Ordering::Relaxed) >= 3
    })
    .await;
    assert_eq!(listener.stats.delivered.load(Ordering::Relaxed), 0);
    let failed = listener.stats.failed.load(Ordering::Relaxed);
    let retried = listener.stats.retried.load(Ordering::Relaxed);
    let skipped = listener.stats.skipped.load(Ordering::Relaxed);
    assert_eq!(
        failed,
        skipped * 3,
        "each notification: one attempt and two retries"
    );
    assert_eq!(retried, skipped * 2);
    let status = daemon
        .status()
        .into_iter()
        .find(|s| s.name == name)
        .unwrap();
    let last = status
        .last_error
        .expect("the failure is recorded in the status");
    assert!(
        last.skipped && last.message.contains("handler returned an error"),
        "{last:?}"
    );
    daemon.shutdown(Instant::now());
    cluster.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_subscribing_to_an_unknown_kind_is_refused_and_others_run() {
    let cluster = TestCluster::start().await;
    let daemon = Daemon::new(
        Arc::new(informers(cluster.client.clone())),
        RetryPolicy::default(),
    );
    let config = serde_json::json!({"name": "lost", "kind": {"group": "example.com", "version": "v1", "kind": "Unicorn"}});
    let (lost, _) = load_with(artifacts::RECORDER, start_options(config));
    let err = daemon.start(lost).await.unwrap_err().to_string();
    assert!(
        err.contains("\"lost\"") && err.contains("Unicorn"),
        "names the plugin and the kind: {err}"
    );
    let (recorder, _) = load_with(artifacts::RECORDER, LoadOptions::default());
    daemon.start(recorder).await.unwrap();
    eventually("the other plugin syncs", || daemon.ready()).await;
    assert_eq!(daemon.names(), ["recorder"]);
    daemon.shutdown(Instant::now());
    cluster.cleanup().await;
}
