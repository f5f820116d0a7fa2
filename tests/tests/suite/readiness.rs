//! Readiness that names its cause, on a whole daemon (`Service`): while the
//! API server refuses one informer's list `403 Forbidden` (the embedded
//! server's `Faults::forbid_reads`, worded as kube-apiserver words a missing
//! RBAC rule), `/readyz`, `/plugins`-side JSON and the dashboard's snapshot
//! name the informer, the verb, the resource and the plugin waiting on it;
//! `readiness.forbiddenInformers` decides whether that holds the replica
//! (`hold-replica`, the default) or only the plugin (`hold-plugin`), and
//! granting the rule makes the replica ready with nothing else done.

use super::cluster::TestCluster;
use herald::capability::log::MemorySink;
use herald::config::Config;
use herald::readiness::ForbiddenInformers;
use herald::reload::PluginConfig;
use herald::scratch::ScratchDir;
use herald::service::Service;
use herald_tests::{PATIENCE, artifacts, eventually};

use std::sync::Arc;
use std::time::Duration;

/// `GET path` on the daemon's endpoints: the status and the body.
fn get(address: &str, path: &str) -> (u16, String) {
    herald_tests::http_get(address, path).expect("the endpoints answer")
}

/// A daemon running `recorder` on the ConfigMaps of the test namespace and
/// `noop` on every Pod, under `policy`.
async fn daemon(cluster: &TestCluster, policy: ForbiddenInformers) -> (Service, ScratchDir) {
    let dir = cluster.plugin_dir(
        "readiness",
        &[("recorder", artifacts::RECORDER), ("noop", artifacts::NOOP)],
    );
    let mut config = Config {
        plugin_dir: dir.to_path_buf(),
        ..Config::default()
    };
    config.readiness.forbidden_informers = policy;
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
    let service = cluster
        .service(config, Arc::new(MemorySink::default()))
        .await;
    (service, dir)
}

/// The lines `/readyz` must carry while the namespace's ConfigMaps are
/// forbidden: the informer with the request refused as the server said it,
/// and the plugin waiting for that cache.
fn forbidden_lines(namespace: &str) -> [String; 2] {
    [
        format!(
            "- informer configmaps in {namespace}: not synced: list configmaps in namespace \
             {namespace} refused: 403 Forbidden: configmaps is forbidden: User \"herald\" cannot \
             list resource \"configmaps\" in API group \"\" in the namespace \"{namespace}\" \
             (subscribed: recorder)\n"
        ),
        format!(
            "- plugin recorder: waiting for caches: configmaps; informer configmaps in \
             {namespace} is forbidden to list configmaps\n"
        ),
    ]
}

/// The dashboard's snapshot says the same: the informer's row carries the
/// refused request, and the replica's readiness lists both.
fn assert_the_dashboard_names_it(address: &str, namespace: &str, holding: bool) {
    let (status, snapshot) = get(address, "/api/dashboard");
    assert_eq!(status, 200);
    let snapshot: serde_json::Value = serde_json::from_str(&snapshot).unwrap();
    let informer = snapshot["informers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["resource"] == "configmaps")
        .expect("the ConfigMap informer is listed");
    assert_eq!(informer["synced"], false);
    assert_eq!(informer["failure"]["code"], 403, "{informer:#}");
    assert_eq!(informer["failure"]["verb"], "list");
    assert_eq!(informer["failure"]["resource"], "configmaps");
    assert_eq!(informer["failure"]["namespace"], namespace);
    let readiness = &snapshot["replica"]["readiness"];
    let (listed, empty) = if holding {
        ("holding", "notHolding")
    } else {
        ("notHolding", "holding")
    };
    let names: Vec<(String, String)> = readiness[listed]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["kind"].as_str().unwrap().to_owned(),
                h["name"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            ("informer".into(), format!("configmaps in {namespace}")),
            ("plugin".into(), "recorder".into())
        ],
        "{readiness:#}"
    );
    assert_eq!(readiness[empty], serde_json::json!([]), "{readiness:#}");
    assert_eq!(snapshot["replica"]["ready"], !holding);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forbidden_informer_is_named_and_holds_the_replica_until_the_rule_is_granted() {
    let test =
        "readiness::a_forbidden_informer_is_named_and_holds_the_replica_until_the_rule_is_granted";
    let cluster = TestCluster::start().await;
    let Some(faults) = cluster.faults() else {
        herald_tests::skip(test, "it needs the embedded API server's fault injection");
        return;
    };
    let namespace = cluster.namespace.clone();
    let forbidden = faults.forbid_reads(&format!("/api/v1/namespaces/{namespace}/configmaps"));
    let (service, _plugins) = daemon(&cluster, ForbiddenInformers::HoldReplica).await;
    let address = service.address().to_string();
    let lines = forbidden_lines(&namespace);
    eventually(
        "/readyz names the refused list and the plugin waiting on it",
        PATIENCE,
        async || {
            let (status, body) = get(&address, "/readyz");
            status == 503 && lines.iter().all(|line| body.contains(line.as_str()))
        },
    )
    .await;
    let (_, body) = get(&address, "/readyz");
    assert!(body.starts_with("not ready\n"), "{body}");
    assert!(
        !body.contains("noop") && !body.contains("informer pods"),
        "what has synced holds nothing: {body}"
    );
    assert!(!service.daemon().ready());
    assert_the_dashboard_names_it(&address, &namespace, true);

    // The rule is granted: the informer lists, the plugin gets its initial
    // list, and the replica is ready.
    drop(forbidden);
    eventually(
        "ready once the list is allowed",
        PATIENCE,
        async || match get(&address, "/readyz") {
            (200, body) if body == "ready\n" => Ok(()),
            (status, body) => Err(format!("/readyz answers {status}: {body}")),
        },
    )
    .await;
    let (_, snapshot) = get(&address, "/api/dashboard");
    let snapshot: serde_json::Value = serde_json::from_str(&snapshot).unwrap();
    assert!(
        snapshot["informers"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["synced"] == true && i["failure"].is_null()),
        "{snapshot:#}"
    );
    service.shutdown(Duration::from_secs(5)).await;
    cluster.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_hold_plugin_a_forbidden_informer_holds_only_its_plugin() {
    let test = "readiness::under_hold_plugin_a_forbidden_informer_holds_only_its_plugin";
    let cluster = TestCluster::start().await;
    let Some(faults) = cluster.faults() else {
        herald_tests::skip(test, "it needs the embedded API server's fault injection");
        return;
    };
    let namespace = cluster.namespace.clone();
    let _forbidden = faults.forbid_reads(&format!("/api/v1/namespaces/{namespace}/configmaps"));
    let (service, _plugins) = daemon(&cluster, ForbiddenInformers::HoldPlugin).await;
    let address = service.address().to_string();
    let lines = forbidden_lines(&namespace);
    eventually(
        "ready, naming what waits without holding readiness",
        PATIENCE,
        async || {
            let (status, body) = get(&address, "/readyz");
            status == 200 && lines.iter().all(|line| body.contains(line.as_str()))
        },
    )
    .await;
    let (_, body) = get(&address, "/readyz");
    assert!(
        body.starts_with(
            "ready\nnot holding readiness (readiness.forbiddenInformers: hold-plugin):\n"
        ),
        "{body}"
    );
    assert!(service.daemon().ready());
    // The other plugin runs meanwhile: through its initial list.
    let noop = service
        .daemon()
        .status()
        .into_iter()
        .find(|p| p.name == "noop")
        .expect("noop runs");
    assert!(noop.synced, "{noop:?}");
    assert_the_dashboard_names_it(&address, &namespace, false);
    service.shutdown(Duration::from_secs(5)).await;
    cluster.cleanup().await;
}
