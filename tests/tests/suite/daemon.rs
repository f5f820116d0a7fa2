//! The daemon end to end: plugins built from `plugins/` running in wasmtime,
//! fed by shared informers over the embedded API server.

use super::cluster::TestCluster;
use super::recording::informers;
use herald::capability::log::MemorySink;
use herald::daemon::Daemon;
use herald::dispatch::RetryPolicy;
use herald::plugin::LoadOptions;
use herald_tests::{PATIENCE, artifacts, eventually, load_with};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

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
    eventually("the daemon is ready", PATIENCE, async || daemon.ready()).await;
    let seen = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let collect = |logs: &MemorySink, seen: &Arc<std::sync::Mutex<Vec<String>>>| {
        seen.lock()
            .unwrap()
            .extend(logs.take().into_iter().map(|l| l.message));
    };
    cluster.create_pod("hello", "web").await;
    let key = format!("{}/hello", cluster.namespace);
    eventually("pod-lifecycle reports the creation", PATIENCE, async || {
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
    eventually("pod-lifecycle reports the deletion", PATIENCE, async || {
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
    eventually("three notifications skipped", PATIENCE, async || {
        listener.stats.skipped.load(Ordering::Relaxed) >= 3
    })
    .await;
    let status = daemon
        .status()
        .into_iter()
        .find(|s| s.name == name)
        .unwrap();
    // Stopped before its counters are read, so they stand still. The
    // plugin sees every Pod of the cluster (on a shared real cluster, other
    // tests' too), so one more notification may have been part-way through
    // its attempts when the worker stopped: `part` of them.
    daemon.shutdown(Instant::now() + PATIENCE);
    assert_eq!(listener.stats.delivered.load(Ordering::Relaxed), 0);
    let failed = listener.stats.failed.load(Ordering::Relaxed);
    let retried = listener.stats.retried.load(Ordering::Relaxed);
    let skipped = listener.stats.skipped.load(Ordering::Relaxed);
    let part = failed - skipped * 3;
    assert!(
        part <= 2,
        "each notification: one attempt and two retries ({failed} failed, {skipped} skipped)"
    );
    assert_eq!(retried, skipped * 2 + part);
    let last = status
        .last_error
        .expect("the failure is recorded in the status");
    // The failure is recorded (on a shared cluster the last one may be
    // another test's Pod, still being retried when the status was read).
    assert!(
        last.message
            .contains("handler returned an error: always-error"),
        "{last:?}"
    );
    cluster.cleanup().await;
}

/// A handler's `requeue-after` (the WIT import, through the SDK) hands its
/// key back to the coalesced queue: the key is delivered again, no earlier
/// than asked, as often as the plugin asks, while other keys are delivered
/// once; the requests are counted on `/metrics`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_requeue_after_from_a_plugin_delivers_its_key_again_after_the_delay() {
    let cluster = TestCluster::start().await;
    let daemon = Arc::new(Daemon::new(
        Arc::new(informers(cluster.client.clone())),
        RetryPolicy::default(),
    ));
    let after = Duration::from_millis(200);
    let config = serde_json::json!({
        "name": "requeuer", "coalesced": true, "namespace": cluster.namespace,
        "requeue": {"label": "app=again", "afterMs": after.as_millis() as u64, "times": 2},
    });
    let (plugin, logs) = load_with(artifacts::RECORDER, start_options(config));
    daemon.start(plugin).await.unwrap();
    eventually("the daemon is ready", PATIENCE, async || daemon.ready()).await;
    let listener = daemon.listeners("requeuer").pop().unwrap();
    let seen = std::sync::Mutex::new(Vec::<(Instant, String)>::new());
    let adds_of = |name: &str| -> Vec<Instant> {
        let mut seen = seen.lock().unwrap();
        let now = Instant::now();
        seen.extend(logs.take().into_iter().map(|l| (now, l.message)));
        let key = format!("event=add key={}/{name} ", cluster.namespace);
        seen.iter()
            .filter(|(_, m)| m.starts_with(&key))
            .map(|(at, _)| *at)
            .collect()
    };

    let created = Instant::now();
    cluster.create_pod("again", "again").await;
    cluster.create_pod("once", "web").await;
    eventually(
        "the requeued pod is delivered three times",
        PATIENCE,
        async || adds_of("again").len() == 3,
    )
    .await;
    let again = adds_of("again");
    assert!(
        again[2].duration_since(created) >= after * 2,
        "each redelivery waited its delay: {:?}",
        again
            .iter()
            .map(|at| at.duration_since(created))
            .collect::<Vec<_>>()
    );
    eventually("nothing waits any more", PATIENCE, async || {
        listener.depth() == 0
    })
    .await;
    assert_eq!(adds_of("again").len(), 3, "requeued twice, as asked");
    assert_eq!(adds_of("once").len(), 1, "never requeued");
    assert_eq!(listener.stats.requeued.load(Ordering::SeqCst), 2);
    let registry =
        herald::ops::metrics::registry(herald::ops::metrics::Sources::of(daemon.clone()));
    let metrics = herald::telemetry::encode(&registry);
    let line = "herald_listener_requeues_total{plugin=\"requeuer\",resource=\"pods\",outcome=\"scheduled\"} 2";
    assert!(
        metrics.lines().any(|l| l == line),
        "no {line} in\n{metrics}"
    );
    daemon.shutdown(Instant::now());
    cluster.cleanup().await;
}

/// Coalesced delivery is client-go's rate-limited work queue: one object
/// whose calls fail waits out its backoff in the queue while the other
/// objects are delivered, and a newer change of it is delivered at once,
/// once, with the newest state. The backoff (60 s) is longer than anything
/// here may take ([`PATIENCE`], 20 s), so every delivery seen happened
/// without waiting it out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_coalesced_object_waits_in_backoff_while_others_flow_and_a_change_goes_at_once() {
    let cluster = TestCluster::start().await;
    let backoff = Duration::from_secs(60);
    let retry = RetryPolicy {
        coalesced: herald::dispatch::KeyBackoff {
            base_delay: backoff,
            ..Default::default()
        },
        ..RetryPolicy::default()
    };
    let daemon = Arc::new(Daemon::new(
        Arc::new(informers(cluster.client.clone())),
        retry,
    ));
    let config = serde_json::json!({
        "name": "flaky", "coalesced": true, "namespace": cluster.namespace,
        "failLabel": "app=broken",
    });
    let (plugin, logs) = load_with(artifacts::RECORDER, start_options(config));
    daemon.start(plugin).await.unwrap();
    eventually("the daemon is ready", PATIENCE, async || daemon.ready()).await;
    let listener = daemon.listeners("flaky").pop().unwrap();
    let stats = &listener.stats;
    let seen = std::sync::Mutex::new(Vec::<String>::new());
    let adds_of = |name: &str| -> Vec<String> {
        let mut seen = seen.lock().unwrap();
        seen.extend(logs.take().into_iter().map(|l| l.message));
        let key = format!("event=add key={}/{name} ", cluster.namespace);
        seen.iter()
            .filter(|m| m.starts_with(&key))
            .cloned()
            .collect()
    };

    let broken = cluster.create_pod("broken", "broken").await;
    eventually(
        "the broken pod's call fails and it waits",
        PATIENCE,
        async || stats.failed.load(Ordering::SeqCst) == 1 && listener.delayed() == 1,
    )
    .await;
    let last = daemon.status().remove(0).last_error.expect("recorded");
    assert!(
        !last.skipped && last.message.contains("recorder: refusing"),
        "retried later, not skipped: {last:?}"
    );

    for i in 0..5 {
        cluster.create_pod(&format!("good-{i}"), "web").await;
    }
    eventually(
        "the other pods are delivered meanwhile",
        PATIENCE,
        async || (0..5).all(|i| adds_of(&format!("good-{i}")).len() == 1),
    )
    .await;
    assert_eq!(
        (
            stats.failed.load(Ordering::SeqCst),
            stats.retried.load(Ordering::SeqCst),
            stats.skipped.load(Ordering::SeqCst),
            listener.delayed(),
            listener.depth(),
        ),
        (1, 1, 0, 1, 1),
        "the broken pod still waits its backoff, nothing else does"
    );
    let registry =
        herald::ops::metrics::registry(herald::ops::metrics::Sources::of(daemon.clone()));
    let metrics = herald::telemetry::encode(&registry);
    for line in [
        "herald_listener_queue_delayed{plugin=\"flaky\",resource=\"pods\"} 1",
        "herald_listener_backoff_seconds_total{plugin=\"flaky\",resource=\"pods\"} 60",
        "herald_notifications_retried_total{plugin=\"flaky\",resource=\"pods\"} 1",
    ] {
        assert!(
            metrics.lines().any(|l| l == line),
            "no {line} in\n{metrics}"
        );
    }

    // Healed by a change: delivered at once with the newest state, once.
    let patch =
        kube::api::Patch::Merge(serde_json::json!({"metadata": {"labels": {"app": "fixed"}}}));
    let fixed = cluster
        .pods()
        .patch("broken", &kube::api::PatchParams::default(), &patch)
        .await
        .unwrap();
    let fixed_rv = fixed.metadata.resource_version.unwrap();
    eventually(
        "the changed pod is delivered without waiting out its backoff",
        PATIENCE,
        async || adds_of("broken").len() == 2,
    )
    .await;
    let broken_rv = broken.metadata.resource_version.unwrap();
    let adds = adds_of("broken");
    assert!(
        adds[0].contains(&format!(" rv={broken_rv} "))
            && adds[1].contains(&format!(" rv={fixed_rv} ")),
        "failed at its first state, then delivered as one add of its newest: {adds:?}"
    );
    // The plugin logs inside its call; the host counts the call once it has
    // returned, so the count is waited for, then checked for no more.
    eventually(
        "nothing waits and every call is counted",
        PATIENCE,
        async || listener.depth() == 0 && stats.delivered.load(Ordering::SeqCst) >= 6,
    )
    .await;
    assert_eq!(
        (
            stats.delivered.load(Ordering::SeqCst),
            stats.failed.load(Ordering::SeqCst),
            stats.skipped.load(Ordering::SeqCst),
        ),
        (6, 1, 0)
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
    eventually("the other plugin syncs", PATIENCE, async || daemon.ready()).await;
    assert_eq!(daemon.names(), ["recorder"]);
    daemon.shutdown(Instant::now());
    cluster.cleanup().await;
}
