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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconciler_copies_follows_its_source_reports_conditions_and_cleans_up_through_its_finalizer()
 {
    let cluster = TestCluster::start().await;
    let client = cluster.client.clone();
    let ns = cluster.namespace.clone();
    create_crd(&client).await;
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

    let access = ClusterAccess::new(Arc::new(ClusterApi::new(cluster.writer.clone())));
    let daemon = Daemon::new(Arc::new(informers(client.clone())), RetryPolicy::default());
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

    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("herald.example.com", "v1", "ConfigMirror"),
        "configmirrors",
    );
    let mirrors: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns, &resource);
    let mirror: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "herald.example.com/v1", "kind": "ConfigMirror",
        "metadata": {"name": "web"},
        "spec": {"source": "settings", "targets": targets},
    }))
    .unwrap();
    mirrors
        .create(&PostParams::default(), &mirror)
        .await
        .unwrap();

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
        async || {
            for target in &targets {
                if Api::<ConfigMap>::namespaced(client.clone(), target)
                    .get_opt("web")
                    .await
                    .map_err(|e| e.to_string())?
                    .is_some()
                {
                    return Err(format!("the copy in {target} is still there"));
                }
            }
            match mirrors.get_opt("web").await.map_err(|e| e.to_string())? {
                Some(mirror) => Err(format!("the mirror is still there: {:?}", mirror.metadata)),
                None => Ok(()),
            }
        },
    )
    .await;
    let cleanups = messages(&logs.lines())
        .iter()
        .filter(|m| *m == "deleted the copies of web")
        .count();
    assert_eq!(cleanups, 1, "{:?}", messages(&logs.lines()));

    daemon.stop("config-mirror").await;
    for target in &targets {
        let _ = Api::<Namespace>::all(client.clone())
            .delete(target, &Default::default())
            .await;
    }
    cluster.cleanup().await;
}
