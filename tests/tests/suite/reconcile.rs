//! A controller written with the Rust SDK's reconcile API, end to end:
//! `plugins/config-mirror` (its CRD in `examples/controllers/config-mirror.yaml`)
//! built from source, loaded by the daemon, fed by real informers from the
//! API server, and acting on it through the host's kube client. What it
//! did is read back from the server: the copies in other namespaces, the
//! finalizer it added, its `Ready` condition and `observedGeneration`, and,
//! once the mirror is deleted, its copies deleted once before it goes.

use super::acting::granted;
use super::cluster::TestCluster;
use super::recording::informers;
use herald::capability::kube::ClusterApi;
use herald::capability::log::MemorySink;
use herald::capability::{ClusterAccess, Grants};
use herald::daemon::Daemon;
use herald::dispatch::RetryPolicy;
use herald::plugin::LoadOptions;
use herald_tests::{PATIENCE, artifacts, eventually, load_with, messages};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use serde::Deserialize as _;
use serde_json::{Value, json};
use std::sync::Arc;

/// The example's CRD, as the demo's seed ships it; created unless a run on the
/// same (real) cluster already did.
async fn create_crd(client: &kube::Client) {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/controllers/config-mirror.yaml"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let crd: CustomResourceDefinition = serde_yaml::Deserializer::from_str(&text)
        .map(|document| Value::deserialize(document).unwrap())
        .find(|document| document["kind"] == "CustomResourceDefinition")
        .map(|crd| serde_json::from_value(crd).unwrap())
        .expect("the ConfigMirror CRD in examples/controllers");
    match Api::<CustomResourceDefinition>::all(client.clone())
        .create(&PostParams::default(), &crd)
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 409 => {}
        Err(e) => panic!("creating the ConfigMirror CRD: {e}"),
    }
}

/// The `Ready` condition and the mirror's generation, from the server.
fn ready(mirror: &DynamicObject) -> Option<(Value, i64)> {
    let conditions = mirror.data["status"]["conditions"].as_array()?;
    let ready = conditions.iter().find(|c| c["type"] == "Ready")?.clone();
    Some((ready, mirror.metadata.generation?))
}

/// The CRD, two target namespaces beside the test's and the source
/// ConfigMap `settings`; returns the targets.
async fn set_up(cluster: &TestCluster) -> [String; 2] {
    let client = &cluster.client;
    create_crd(client).await;
    let ns = &cluster.namespace;
    let targets = [format!("{ns}-a"), format!("{ns}-b")];
    for target in &targets {
        let namespace: Namespace =
            serde_json::from_value(json!({"metadata": {"name": target}})).unwrap();
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &namespace)
            .await
            .unwrap();
    }
    cluster
        .create_config_map("settings", "mirror", "blue")
        .await;
    targets
}

/// config-mirror loaded with its writes granted, started on `daemon`; its
/// log.
async fn start(cluster: &TestCluster, daemon: &Daemon) -> MemorySink {
    let access = ClusterAccess::new(Arc::new(ClusterApi::new(cluster.writer.clone())));
    let rules = [
        json!({"verbs": ["apply", "delete"], "group": "", "kind": "ConfigMap", "namespaces": ["*"]}),
        json!({"verbs": ["patch"], "group": "herald.example.com", "kind": "ConfigMirror", "namespaces": ["*"]}),
        json!({"verbs": ["apply"], "group": "herald.example.com", "kind": "ConfigMirror", "subresource": "status", "namespaces": ["*"]}),
    ];
    let options = LoadOptions {
        grants: Grants {
            writes: rules.iter().map(granted).collect(),
            ..Grants::default()
        },
        access: Some(access),
        metrics: Some(daemon.plugin_metrics().clone()),
        ..LoadOptions::default()
    };
    let (plugin, logs) = load_with(artifacts::CONFIG_MIRROR, options);
    assert_eq!(plugin.manifest().name, "config-mirror");
    daemon.start(plugin).await.expect("config-mirror starts");
    logs
}

/// The ConfigMirrors of the test's namespace.
fn mirrors(cluster: &TestCluster) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("herald.example.com", "v1", "ConfigMirror"),
        "configmirrors",
    );
    Api::namespaced_with(cluster.client.clone(), &cluster.namespace, &resource)
}

/// Creates the mirror `name` of `settings` into `targets`, once the
/// ConfigMirror kind is served: a real kube-apiserver serves a CRD created
/// a moment ago only once it is established, answering 404 until then.
async fn create_mirror(mirrors: &Api<DynamicObject>, name: &str, targets: &[String]) {
    let mirror: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "herald.example.com/v1", "kind": "ConfigMirror",
        "metadata": {"name": name},
        "spec": {"source": "settings", "targets": targets},
    }))
    .unwrap();
    eventually(
        "the ConfigMirror kind served",
        PATIENCE,
        async || match mirrors.create(&PostParams::default(), &mirror).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => {
                Err(format!("not served yet: {}", status.message))
            }
            Err(error) => panic!("creating the mirror {name}: {error}"),
        },
    )
    .await;
}

/// The ConfigMirror CRD is cluster-wide: on a real cluster the tests share
/// it, so the one that deletes it runs alone (a write lock) and the others
/// beside each other (read locks). On the embedded server each test has a
/// server of its own and the lock costs nothing but order.
static CRD: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

/// Whether the copy `name` exists in each of `targets`.
async fn copies(
    client: &kube::Client,
    name: &str,
    targets: &[String],
) -> Result<Vec<bool>, String> {
    let mut found = Vec::new();
    for target in targets {
        let copy = Api::<ConfigMap>::namespaced(client.clone(), target)
            .get_opt(name)
            .await
            .map_err(|e| e.to_string())?;
        found.push(copy.is_some());
    }
    Ok(found)
}

/// Waits until the copy `name` is in every one of `targets`.
async fn wait_copied(client: &kube::Client, logs: &MemorySink, name: &str, targets: &[String]) {
    eventually(
        &format!("{name} copied"),
        PATIENCE,
        async || match copies(client, name, targets).await? {
            found if found.iter().all(|&copied| copied) => Ok(()),
            found => Err(format!(
                "copies {found:?}; logged {:?}",
                messages(&logs.lines())
            )),
        },
    )
    .await;
}

/// Asserts config-mirror cleaned up the mirror `name` exactly once.
fn assert_cleaned_up_once(logs: &MemorySink, name: &str) {
    let line = format!("deleted the copies of {name}");
    let lines = messages(&logs.lines());
    let cleanups = lines.iter().filter(|m| **m == line).count();
    assert_eq!(cleanups, 1, "{lines:?}");
}

/// Deletes the target namespaces and the test's.
async fn tear_down(cluster: TestCluster, targets: &[String]) {
    for target in targets {
        let _ = Api::<Namespace>::all(cluster.client.clone())
            .delete(target, &Default::default())
            .await;
    }
    cluster.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconciler_copies_follows_its_source_reports_conditions_and_cleans_up_through_its_finalizer()
 {
    let _crd = CRD.read().await;
    let cluster = TestCluster::start().await;
    let client = cluster.client.clone();
    let ns = cluster.namespace.clone();
    let targets = set_up(&cluster).await;
    let daemon = Daemon::new(Arc::new(informers(client.clone())), RetryPolicy::default());
    let logs = start(&cluster, &daemon).await;
    let mirrors = mirrors(&cluster);
    create_mirror(&mirrors, "web", &targets).await;

    let copies_hold = |value: &'static str| {
        let client = client.clone();
        let targets = targets.clone();
        let logs = logs.clone();
        async move || {
            for target in &targets {
                let copy = Api::<ConfigMap>::namespaced(client.clone(), target)
                    .get_opt("web")
                    .await
                    .map_err(|e| e.to_string())?;
                let data = copy.and_then(|c| c.data).unwrap_or_default();
                if data.get("value").map(String::as_str) != Some(value) {
                    return Err(format!(
                        "the copy in {target} holds {data:?}; the plugin logged {:?}",
                        messages(&logs.lines())
                    ));
                }
            }
            Ok(())
        }
    };
    let condition_is = |status: &'static str, reason: &'static str| {
        let mirrors = mirrors.clone();
        async move || {
            let mirror = mirrors.get("web").await.map_err(|e| e.to_string())?;
            match ready(&mirror) {
                Some((ready, generation))
                    if ready["status"] == status
                        && ready["reason"] == reason
                        && ready["observedGeneration"] == generation =>
                {
                    Ok((mirror, ready))
                }
                other => Err(format!("Ready (and generation): {other:?}")),
            }
        }
    };

    eventually(
        "the source is copied into both targets",
        PATIENCE,
        copies_hold("blue"),
    )
    .await;
    let (mirror, synced) = eventually(
        "Ready is True/Synced at the mirror's generation",
        PATIENCE,
        condition_is("True", "Synced"),
    )
    .await;
    let finalizers = mirror.metadata.finalizers.unwrap_or_default();
    assert_eq!(finalizers, ["herald.example.com/config-mirror"]);

    // A change of the source (a watched kind, mapped to its mirrors through
    // the cache) reaches every copy.
    cluster.update_config_map("settings", "green").await;
    eventually(
        "the source's new data reaches both copies",
        PATIENCE,
        copies_hold("green"),
    )
    .await;

    // A new spec: the condition follows the new generation, and its
    // transition time moves with its status.
    mirrors
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"source": "missing"}})),
        )
        .await
        .unwrap();
    let (mirror, missing) = eventually(
        "Ready is False/SourceMissing at the new generation",
        PATIENCE,
        condition_is("False", "SourceMissing"),
    )
    .await;
    assert_eq!(mirror.metadata.generation, Some(2));
    assert!(
        missing["message"]
            .as_str()
            .unwrap()
            .contains(&format!("ConfigMap {ns}/missing")),
        "{missing}"
    );
    assert!(
        missing["lastTransitionTime"].as_str() >= synced["lastTransitionTime"].as_str(),
        "{synced} → {missing}"
    );
    assert!(
        !messages(&logs.lines())
            .iter()
            .any(|m| m.contains("failed") || m.contains("error")),
        "{:?}",
        messages(&logs.lines())
    );

    // Deleted: the finalizer holds the mirror until its copies, in
    // namespaces owner references cannot reach, are gone; the cleanup runs
    // once, then the finalizer goes and the mirror with it.
    mirrors.delete("web", &Default::default()).await.unwrap();
    eventually(
        "the copies are deleted, then the mirror",
        PATIENCE,
        all_gone(&client, &mirrors, "web", &targets),
    )
    .await;
    assert_cleaned_up_once(&logs, "web");

    daemon.stop("config-mirror").await;
    tear_down(cluster, &targets).await;
}

/// A probe: the copies of `name` are gone from `targets`, then the mirror.
fn all_gone<'a>(
    client: &'a kube::Client,
    mirrors: &'a Api<DynamicObject>,
    name: &'a str,
    targets: &'a [String],
) -> impl AsyncFnMut() -> Result<(), String> + 'a {
    async move || {
        let found = copies(client, name, targets).await?;
        if found.contains(&true) {
            return Err(format!("copies still there in {targets:?}: {found:?}"));
        }
        match mirrors.get_opt(name).await.map_err(|e| e.to_string())? {
            Some(mirror) => Err(format!("the mirror is still there: {:?}", mirror.metadata)),
            None => Ok(()),
        }
    }
}

/// A deletion asked for while the controller was stopped (a restart, a
/// hot swap that failed half-way) is not lost: the finalizer holds the
/// mirror in the API server, and the next instance's initial list brings
/// it, being deleted, to a reconcile that cleans up once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cleanup_asked_for_while_the_controller_was_stopped_runs_when_it_starts_again() {
    let _crd = CRD.read().await;
    let cluster = TestCluster::start().await;
    let client = cluster.client.clone();
    let targets = set_up(&cluster).await;
    let daemon = Daemon::new(Arc::new(informers(client.clone())), RetryPolicy::default());
    let logs = start(&cluster, &daemon).await;
    let mirrors = mirrors(&cluster);
    create_mirror(&mirrors, "api", &targets).await;
    eventually(
        "copied, with the finalizer on the mirror",
        PATIENCE,
        async || {
            let found = copies(&client, "api", &targets).await?;
            let mirror = mirrors.get("api").await.map_err(|e| e.to_string())?;
            let finalizers = mirror.metadata.finalizers.unwrap_or_default();
            if found == [true, true] && finalizers == ["herald.example.com/config-mirror"] {
                Ok(())
            } else {
                Err(format!(
                    "copies {found:?}, finalizers {finalizers:?}; logged {:?}",
                    messages(&logs.lines())
                ))
            }
        },
    )
    .await;

    assert!(daemon.stop("config-mirror").await);
    mirrors.delete("api", &Default::default()).await.unwrap();
    let held = mirrors.get("api").await.unwrap();
    assert!(
        held.metadata.deletion_timestamp.is_some(),
        "the finalizer holds the mirror: {:?}",
        held.metadata
    );
    assert_eq!(
        copies(&client, "api", &targets).await.unwrap(),
        [true, true]
    );

    let logs = start(&cluster, &daemon).await;
    eventually(
        "the new instance cleans up, then the mirror goes",
        PATIENCE,
        all_gone(&client, &mirrors, "api", &targets),
    )
    .await;
    assert_cleaned_up_once(&logs, "api");
    daemon.stop("config-mirror").await;
    tear_down(cluster, &targets).await;
}

/// The CRD removed under the controller: as kube-apiserver does, the mirror
/// is marked for deletion and the CRD waits for its finalizer, so the
/// controller cleans up once and the CRD then goes; the controller's
/// informer of the removed kind fails on its own, the neighbour on
/// ConfigMaps keeps getting its notifications, and once the CRD is back a
/// new mirror is reconciled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crd_removed_under_the_controller_is_cleaned_up_once_and_nothing_else_stops() {
    let _crd = CRD.write().await;
    let cluster = TestCluster::start().await;
    let client = cluster.client.clone();
    let ns = cluster.namespace.clone();
    let targets = set_up(&cluster).await;
    let daemon = Daemon::new(Arc::new(informers(client.clone())), RetryPolicy::default());
    let logs = start(&cluster, &daemon).await;
    let (neighbour, seen) = super::authority::neighbour(&ns);
    daemon.start(neighbour).await.expect("the neighbour starts");
    let mirrors = mirrors(&cluster);
    create_mirror(&mirrors, "db", &targets).await;
    wait_copied(&client, &logs, "db", &targets).await;

    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.delete("configmirrors.herald.example.com", &Default::default())
        .await
        .unwrap();
    eventually(
        "the mirror cleaned up, then the CRD gone",
        PATIENCE,
        async || {
            let found = copies(&client, "db", &targets).await?;
            let crd = crds
                .get_opt("configmirrors.herald.example.com")
                .await
                .map_err(|e| e.to_string())?;
            if found == [false, false] && crd.is_none() {
                Ok(())
            } else {
                Err(format!("copies {found:?}, CRD there: {}", crd.is_some()))
            }
        },
    )
    .await;
    assert_cleaned_up_once(&logs, "db");

    // The neighbour on ConfigMaps keeps getting its notifications.
    let revision = cluster.update_config_map("settings", "green").await;
    eventually("the neighbour sees the change", PATIENCE, async || {
        let lines = messages(&seen.lines());
        if lines
            .iter()
            .any(|m| m.starts_with("event=update") && m.contains(&format!("rv={revision}")))
        {
            Ok(())
        } else {
            Err(format!("the neighbour logged {lines:?}"))
        }
    })
    .await;

    // The CRD back: the controller's informer finds the kind again, and a
    // new mirror is reconciled.
    create_crd(&client).await;
    create_mirror(&mirrors, "cache", &targets).await;
    wait_copied(&client, &logs, "cache", &targets).await;
    daemon.stop("config-mirror").await;
    daemon.stop("neighbour").await;
    tear_down(cluster, &targets).await;
}

/// Reconciles that panic, loop past their deadline or fail, through the
/// adapter (`deployment-summaries`, told by a label): each is a fault of
/// its own key, retried with that key's backoff; every other Deployment is
/// reconciled, before and after, by the instance made afresh after a trap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconcile_that_panics_loops_or_fails_holds_up_no_other_key() {
    let cluster = TestCluster::start().await;
    let client = cluster.client.clone();
    let ns = cluster.namespace.clone();
    let access = ClusterAccess::new(Arc::new(ClusterApi::new(cluster.writer.clone())));
    let daemon = Daemon::new(Arc::new(informers(client.clone())), RetryPolicy::default());
    let rule = json!({"verbs": ["apply"], "group": "", "kind": "ConfigMap", "namespaces": ["*"]});
    let options = LoadOptions {
        grants: Grants {
            writes: vec![granted(&rule)],
            ..Grants::default()
        },
        access: Some(access),
        overrides: herald::plugin::RequestedLimits {
            call_deadline: Some(std::time::Duration::from_millis(100)),
            memory_bytes: None,
        },
        ..LoadOptions::default()
    };
    let (plugin, _logs) = load_with(artifacts::DEPLOYMENT_SUMMARIES, options);
    daemon
        .start(plugin)
        .await
        .expect("deployment-summaries starts");

    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> =
        Api::namespaced(client.clone(), &ns);
    let create = |name: &'static str, fault: Option<&'static str>| {
        let deployments = deployments.clone();
        async move {
            let labels = fault
                .map(|f| json!({"herald.dev/fault": f}))
                .unwrap_or(json!({}));
            let deployment = serde_json::from_value(json!({
                "metadata": {"name": name, "labels": labels},
                "spec": {
                    "selector": {"matchLabels": {"app": name}},
                    "template": {
                        "metadata": {"labels": {"app": name}},
                        "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
                    },
                },
            }))
            .unwrap();
            deployments
                .create(&PostParams::default(), &deployment)
                .await
                .unwrap();
        }
    };
    let summaries = |names: &'static [&'static str]| {
        let client = client.clone();
        let ns = ns.clone();
        async move || {
            let mut missing = Vec::new();
            for name in names {
                let found = Api::<ConfigMap>::namespaced(client.clone(), &ns)
                    .get_opt(&format!("{name}-summary"))
                    .await
                    .map_err(|e| e.to_string())?;
                if found.is_none() {
                    missing.push(*name);
                }
            }
            if missing.is_empty() {
                Ok(())
            } else {
                Err(format!("no summary yet for {missing:?}"))
            }
        }
    };

    create("first", None).await;
    create("panics", Some("panic")).await;
    create("loops", Some("loop")).await;
    create("fails", Some("error")).await;
    create("second", None).await;
    eventually(
        "the healthy Deployments summarized around the faulty ones",
        PATIENCE,
        summaries(&["first", "second"]),
    )
    .await;
    create("after", None).await;
    eventually(
        "a Deployment created after the faults summarized",
        PATIENCE,
        summaries(&["after"]),
    )
    .await;

    let status = daemon
        .status()
        .into_iter()
        .find(|s| s.name == "deployment-summaries")
        .expect("still loaded");
    let failed: u64 = status.subscriptions.iter().map(|s| s.failed).sum();
    assert!(
        failed >= 3,
        "each faulty key failed at least once: {status:?}"
    );
    for name in ["panics", "loops", "fails"] {
        assert!(
            Api::<ConfigMap>::namespaced(client.clone(), &ns)
                .get_opt(&format!("{name}-summary"))
                .await
                .unwrap()
                .is_none(),
            "{name} was never reconciled to the end"
        );
    }
    daemon.stop("deployment-summaries").await;
    cluster.cleanup().await;
}
