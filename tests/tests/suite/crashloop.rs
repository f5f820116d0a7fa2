//! `crashloop-alert` end to end: a Pod's container restarts on the embedded
//! API server, the plugin (built from `plugins/crashloop-alert`) POSTs one
//! alert to a webhook receiver on loopback that fails first and then
//! recovers (the demo's), the host's workqueue retries the Pod alone, and
//! the alert lands once; the Warning Event is on the Pod and the alert is
//! counted in the plugin's own metric on a live scrape.

use super::cluster::TestCluster;
use super::recording::informers;
use herald::capability::kube::ClusterApi;
use herald::capability::{ClusterAccess, Grants};
use herald::daemon::Daemon;
use herald::demo::webhook::WebhookReceiver;
use herald::dispatch::RetryPolicy;
use herald::plugin::LoadOptions;
use herald_tests::{PATIENCE, artifacts, eventually, load_with, messages};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;
use std::sync::Arc;

/// The restarts of the Pod's one container, as the kubelet reports them,
/// with the Pod's start time (which lets the plugin count every restart
/// since then even when coalesced delivery merges several changes into
/// one, as it may under load).
fn restarted(restarts: i32, started: std::time::SystemTime) -> serde_json::Value {
    json!({"status": {"phase": "Running", "startTime": herald::units::time::format(started),
        "containerStatuses": [{
        "name": "worker", "image": "ghcr.io/example/worker:1.4", "imageID": "",
        "ready": false, "started": false, "restartCount": restarts,
        "state": {"waiting": {"reason": "CrashLoopBackOff"}},
        "lastState": {"terminated": {"exitCode": 1, "reason": "Error",
            "finishedAt": herald::units::time::format(std::time::SystemTime::now())}},
    }]}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_loop_is_alerted_once_through_a_failing_then_recovering_webhook() {
    let cluster = TestCluster::start().await;
    let webhook = WebhookReceiver::start().await.unwrap();
    let http = serde_json::from_value(json!({"allowedOrigins": [webhook.origin()]})).unwrap();
    let access = ClusterAccess::new(Arc::new(ClusterApi::new(cluster.writer.clone())));
    let daemon = Daemon::new(
        Arc::new(informers(cluster.client.clone())),
        RetryPolicy::default(),
    );
    let options = LoadOptions {
        config: Some(
            json!({"webhookUrl": webhook.url(), "restarts": 3, "windowMinutes": 5}).to_string(),
        ),
        grants: Grants {
            events: Some(Default::default()),
            http: Some(http),
            ..Grants::default()
        },
        access: Some(access),
        metrics: Some(daemon.plugin_metrics().clone()),
        ..LoadOptions::default()
    };
    let (plugin, logs) = load_with(artifacts::CRASHLOOP_ALERT, options.clone());
    daemon.start(plugin).await.expect("crashloop-alert starts");

    let pods: Api<Pod> = Api::namespaced(cluster.client.clone(), &cluster.namespace);
    let pod: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "crashy"},
        "spec": {"containers": [{"name": "worker", "image": "ghcr.io/example/worker:1.4"}]},
    }))
    .unwrap();
    let started = std::time::SystemTime::now();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    for restarts in 1..=3 {
        pods.patch_status(
            "crashy",
            &PatchParams::default(),
            &Patch::Merge(restarted(restarts, started)),
        )
        .await
        .unwrap();
    }
    let alerted = format!("alerted pod={}/crashy", cluster.namespace);
    eventually("the alert accepted", PATIENCE, async || {
        messages(&logs.lines())
            .iter()
            .any(|m| m.starts_with(&alerted))
    })
    .await;
    // Refused once (503), retried by the workqueue, accepted once.
    assert_eq!(webhook.received(), 2);
    let lines = messages(&logs.lines());
    assert_eq!(
        lines
            .iter()
            .filter(|m| m.starts_with("webhook-failed"))
            .count(),
        1,
        "{lines:#?}"
    );
    // More restarts in the same episode: no second alert.
    pods.patch_status(
        "crashy",
        &PatchParams::default(),
        &Patch::Merge(restarted(4, started)),
    )
    .await
    .unwrap();

    let events: Api<Event> = Api::namespaced(cluster.client.clone(), &cluster.namespace);
    let warning = format!("a CrashLoop Event on {}/crashy", cluster.namespace);
    let event = eventually(&warning, PATIENCE, async || {
        let found = events.list(&ListParams::default()).await.unwrap().items;
        match found
            .iter()
            .find(|e| e.reason.as_deref() == Some("CrashLoop"))
        {
            Some(event) => Ok(event.clone()),
            None => Err(format!("{found:#?}")),
        }
    })
    .await;
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    assert_eq!(
        event.regarding.as_ref().and_then(|r| r.name.as_deref()),
        Some("crashy")
    );

    let scrape = || {
        let mut registry = prometheus_client::registry::Registry::default();
        registry.register_collector(Box::new(daemon.plugin_metrics().clone()));
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        text
    };
    let series = format!(
        "herald_plugin_crashloop_alert__alerts_total{{plugin=\"crashloop-alert\",namespace=\"{}\"}}",
        cluster.namespace
    );
    let alerts = format!("{series} 1");
    let before = scrape();
    assert!(before.contains(&alerts), "{alerts} in:\n{before}");
    assert_eq!(webhook.received(), 2, "one alert per crash-loop episode");
    assert!(
        before.contains(
            "herald_plugin_crashloop_alert__webhook_failures_total{plugin=\"crashloop-alert\""
        ),
        "{before}"
    );
    // A hot swap to another build with the same definitions keeps the series.
    let next = herald::plugin::LoadedPlugin::load(
        herald_tests::engine(),
        &artifacts::variant(&artifacts::bytes(artifacts::CRASHLOOP_ALERT), "2"),
        options,
    )
    .unwrap();
    daemon.swap(next).await.expect("the swap");
    // The new version starts with no memory of the episode, and may alert
    // again on the snapshot it is given; the series itself must survive.
    let after = scrape();
    assert!(
        after.lines().any(|line| line.starts_with(&series)),
        "{series} after the swap:\n{after}"
    );
    cluster.cleanup().await;
}
