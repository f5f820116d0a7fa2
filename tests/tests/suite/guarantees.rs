//! The controller guarantees of issue 29, end to end against the embedded
//! API server: coalescing never erases a change (a repair controller hears
//! that the object it just created was deleted, even though both events
//! came while it was busy), and a plugin's first delivery waits until every
//! cache it subscribes to has its initial list.
//!
//! Both hold the server's answer to one request with its fault injection
//! (`Faults::hold_requests`), so the plugin is busy, or a list is slow,
//! exactly as long as the test needs: no timing is involved.

use super::acting::granted;
use super::cluster::TestCluster;
use super::recording::informers;
use herald::capability::kube::ClusterApi;
use herald::capability::{ClusterAccess, Grants};
use herald::daemon::Daemon;
use herald::dispatch::RetryPolicy;
use herald::plugin::{LoadOptions, RequestedLimits};
use herald_tests::{PATIENCE, artifacts, eventually, load_with, messages, skip};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Long enough for a call held at the server never to reach its deadline.
const HELD_CALL_DEADLINE: Duration = Duration::from_secs(10);

/// Creates the Namespace `name` with `labels`.
async fn create_namespace(cluster: &TestCluster, name: &str, labels: serde_json::Value) {
    let namespace: Namespace = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": name, "labels": labels},
    }))
    .unwrap();
    Api::<Namespace>::all(cluster.client.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repair_controller_repairs_an_object_deleted_right_after_its_creation_while_busy() {
    let cluster = TestCluster::start().await;
    let Some(faults) = cluster.faults() else {
        return skip(
            "a_repair_controller_repairs_an_object_deleted_right_after_its_creation_while_busy",
            "it holds a request with the embedded API server's fault injection",
        );
    };
    let selector = format!("{}-defaults", cluster.namespace);
    let rules = [
        json!({"verbs": ["get", "apply"], "group": "networking.k8s.io", "kind": "NetworkPolicy", "namespaces": ["*"]}),
        json!({"verbs": ["get", "apply"], "group": "", "kind": "ResourceQuota", "namespaces": ["*"]}),
    ];
    let access = ClusterAccess::new(Arc::new(ClusterApi::new(cluster.writer.clone())));
    let (plugin, logs) = load_with(
        artifacts::NAMESPACE_DEFAULTS,
        LoadOptions {
            config: Some(json!({"namespaceSelector": selector}).to_string()),
            grants: Grants {
                writes: rules.iter().map(granted).collect(),
                ..Grants::default()
            },
            access: Some(access.clone()),
            overrides: RequestedLimits {
                call_deadline: Some(HELD_CALL_DEADLINE),
                memory_bytes: None,
            },
            ..LoadOptions::default()
        },
    );
    let daemon = Daemon::new(
        Arc::new(informers(cluster.client.clone())),
        RetryPolicy::default(),
    );
    daemon.start(plugin).await.unwrap();
    eventually("namespace-defaults is ready", PATIENCE, async || {
        daemon.ready()
    })
    .await;
    let policies_listener = daemon
        .listeners("namespace-defaults")
        .into_iter()
        .find(|l| l.resource() == "networkpolicies")
        .expect("a NetworkPolicy subscription");

    // The plugin applies the policy, then the quota; the quota's apply is
    // held, so the plugin is busy in that call.
    let team = format!("{}-team", cluster.namespace);
    let quota = format!("/api/v1/namespaces/{team}/resourcequotas/herald-default-quota");
    let busy = faults.hold_requests("PATCH", &quota);
    create_namespace(&cluster, &team, json!({ selector.as_str(): "yes" })).await;
    eventually(
        "the plugin is busy applying the quota",
        PATIENCE,
        async || busy.held() == 1,
    )
    .await;
    let policies: Api<NetworkPolicy> = Api::namespaced(cluster.client.clone(), &team);
    let created = policies
        .get("herald-default-deny")
        .await
        .expect("the plugin applied the policy before the quota");

    // Someone deletes the policy at once; its add and its delete both queue
    // while the plugin is busy.
    policies
        .delete("herald-default-deny", &DeleteParams::default())
        .await
        .unwrap();
    eventually(
        "the policy's add and delete are both queued",
        PATIENCE,
        async || policies_listener.stats.received.load(Ordering::Acquire) >= 2,
    )
    .await;
    assert_eq!(
        policies_listener.depth(),
        1,
        "merged into one pending notification"
    );
    busy.release();

    // The delete reaches the plugin, which puts the policy back.
    eventually(
        "the policy deleted while the plugin was busy comes back",
        PATIENCE,
        async || {
            let back = policies.get_opt("herald-default-deny").await.unwrap();
            if back.is_some_and(|back| back.metadata.uid != created.metadata.uid) {
                Ok(())
            } else {
                Err(format!("the plugin logged {:?}", messages(&logs.lines())))
            }
        },
    )
    .await;
    // The plugin logs the repair once its apply has returned, which can be
    // after the server already shows the new policy.
    let repaired =
        format!("applied kind=NetworkPolicy object={team}/herald-default-deny reason=deleted");
    eventually(
        "the plugin logs that the delete made it re-apply",
        PATIENCE,
        async || {
            messages(&logs.lines())
                .iter()
                .any(|line| line.starts_with(&repaired))
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_sees_no_pod_before_the_namespace_cache_has_its_initial_list() {
    let cluster = TestCluster::start().await;
    let Some(faults) = cluster.faults() else {
        return skip(
            "a_plugin_sees_no_pod_before_the_namespace_cache_has_its_initial_list",
            "it holds a list with the embedded API server's fault injection",
        );
    };
    let names = ["a", "b", "c"];
    for name in names {
        cluster.create_pod(name, "web").await;
    }
    // The Namespace list (and the watch after it) is slow: held until released.
    let slow = faults.hold_requests("GET", "/api/v1/namespaces");
    let daemon = Daemon::new(
        Arc::new(informers(cluster.client.clone())),
        RetryPolicy::default(),
    );
    let (plugin, logs) = load_with(artifacts::NAMESPACE_LOOKUP, LoadOptions::default());
    daemon.start(plugin).await.unwrap();
    let listeners = daemon.listeners("namespace-lookup");
    let pods_listener = listeners
        .iter()
        .find(|l| l.resource() == "pods")
        .expect("a Pod subscription");
    eventually(
        "the Pod list is in while the Namespace list is held",
        PATIENCE,
        async || pods_listener.initial_list_received() && slow.held() == 1,
    )
    .await;
    // A live Pod after the Pod cache synced: delivered, were nothing held.
    cluster.create_pod("d", "web").await;
    eventually("the live Pod is queued", PATIENCE, async || {
        pods_listener.stats.received.load(Ordering::Acquire) as usize > names.len()
    })
    .await;
    let status = |daemon: &Daemon| {
        daemon
            .status()
            .into_iter()
            .find(|s| s.name == "namespace-lookup")
            .and_then(|s| s.caches)
            .expect("a dispatching plugin reports its caches")
    };
    let waiting = status(&daemon);
    assert!(!waiting.synced);
    assert_eq!(waiting.waiting_for, ["namespaces"]);
    assert!(
        logs.lines().is_empty(),
        "nothing delivered while the Namespace cache fills: {:?}",
        messages(&logs.lines())
    );
    assert_eq!(pods_listener.stats.delivered.load(Ordering::Acquire), 0);

    slow.release();
    let expected: Vec<String> = ["a", "b", "c", "d"]
        .iter()
        .map(|name| format!("pod={}/{name} namespace=found", cluster.namespace))
        .collect();
    eventually("every Pod is handled", PATIENCE, async || {
        let seen = messages(&logs.lines());
        expected.iter().all(|line| seen.contains(line))
    })
    .await;
    let seen = messages(&logs.lines());
    assert!(
        seen.iter().all(|line| !line.ends_with("namespace=missing")),
        "a Pod was handled before its Namespace was cached: {seen:?}"
    );
    let synced = status(&daemon);
    assert!(synced.synced && synced.waiting_for.is_empty(), "{synced:?}");
}
