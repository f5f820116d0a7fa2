//! Odd but valid objects travel intact from the API server to the cache:
//! unicode and control characters, an annotation of 200 KB, and a custom
//! resource nested 100 levels deep. (The cache itself takes any depth, see
//! `store::object`'s tests; 100 stays under the 128 levels the embedded API
//! server and plugins that parse whole objects into `serde_json::Value`
//! accept.)

use super::cluster::TestCluster;
use super::recording::{config_maps, informer, informers};
use herald::gvk::Gvk;
use herald::informer::SharedInformer;
use herald::plugin::{Delivery, Subscription};
use herald_tests::{PATIENCE, eventually};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, PostParams};
use serde_json::{Value, json};

/// The JSON an informer cached for `name`, parsed, without managedFields.
fn cached(informer: &SharedInformer, name: &str) -> Option<Value> {
    informer
        .store()
        .snapshot()
        .into_iter()
        .find(|o| o.name() == name)
        .map(|o| serde_json::from_str(o.json()).unwrap())
}

/// `value` without `metadata.managedFields` (the cache strips them).
fn without_managed_fields(mut value: Value) -> Value {
    if let Some(metadata) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.remove("managedFields");
    }
    value
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unicode_control_characters_and_large_annotations_arrive_intact() {
    let cluster = TestCluster::start().await;
    let informers = informers(cluster.client.clone());
    let (_key, informer) = informer(&informers, &config_maps(&cluster.namespace)).await;
    let text =
        "héllo 世界 🚀 \u{202e}rtl\u{202c} \"quoted\" back\\slash tab\t newline\n nul\u{0} end";
    let large = "x".repeat(200_000);
    let api = cluster.config_maps();
    for (name, cm) in [
        (
            "unicode",
            json!({"metadata": {"name": "unicode", "annotations": {"note": text}}, "data": {"text": text}}),
        ),
        (
            "large",
            json!({"metadata": {"name": "large", "annotations": {"blob": large}}}),
        ),
    ] {
        let cm: ConfigMap = serde_json::from_value(cm).unwrap();
        api.create(&PostParams::default(), &cm).await.unwrap();
        let stored =
            without_managed_fields(serde_json::to_value(api.get(name).await.unwrap()).unwrap());
        eventually(
            &format!("{name} is cached as stored"),
            PATIENCE,
            async || {
                cached(&informer, name).is_some_and(|c| {
                    c["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]
                })
            },
        )
        .await;
        let mut cached = cached(&informer, name).unwrap();
        // List items lack apiVersion/kind; the cache fills them in.
        for field in ["apiVersion", "kind"] {
            cached.as_object_mut().unwrap().remove(field);
        }
        let mut stored = stored;
        for field in ["apiVersion", "kind"] {
            stored.as_object_mut().unwrap().remove(field);
        }
        assert_eq!(
            cached, stored,
            "{name} is cached exactly as the server holds it"
        );
    }
    assert_eq!(cached(&informer, "unicode").unwrap()["data"]["text"], text);
    cluster.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_resource_nested_a_hundred_levels_deep_is_cached_and_delivered() {
    let cluster = TestCluster::start().await;
    // A CRD of its own per test namespace, so runs on a real cluster do not collide.
    let group = format!("{}.example.com", cluster.namespace);
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "metadata": {"name": format!("nests.{group}")},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"plural": "nests", "singular": "nest", "kind": "Nest"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                     "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    }))
    .unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(cluster.client.clone());
    crds.create(&PostParams::default(), &crd).await.unwrap();

    let mut deep = json!("bottom");
    for level in 0..100 {
        deep = json!({ format!("level{level}"): deep });
    }
    let resource =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(&group, "v1", "Nest"), "nests");
    let nests: Api<DynamicObject> =
        Api::namespaced_with(cluster.client.clone(), &cluster.namespace, &resource);
    let informers = informers(cluster.client.clone());
    let subscription = Subscription {
        kind: Gvk::new(group.clone(), "v1", "Nest"),
        namespace: Some(cluster.namespace.clone()),
        label_selector: None,
        field_selector: None,
        resync_period: None,
        delivery: Delivery::EveryEvent,
    };
    // Discovery may take a moment to list a new CRD on a real cluster.
    let key = eventually("discovery lists the Nest kind", PATIENCE, async || {
        informers.key_for(&subscription, None).await
    })
    .await;
    let informer = informers.acquire(&key).expect("the default cluster");
    let object: DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("{group}/v1"), "kind": "Nest",
        "metadata": {"name": "deep"}, "spec": deep
    }))
    .unwrap();
    nests.create(&PostParams::default(), &object).await.unwrap();
    eventually("the deep object is cached", PATIENCE, async || {
        cached(&informer, "deep").is_some()
    })
    .await;
    let mut cached = cached(&informer, "deep").unwrap();
    let mut walk = &cached["spec"];
    for level in (0..100).rev() {
        walk = &walk[format!("level{level}")];
    }
    assert_eq!(walk, "bottom", "all 100 levels are there");
    cached.as_object_mut().unwrap().remove("metadata");
    assert_eq!(cached["spec"], object.data["spec"]);
    drop(informer);
    informers.release(&key);
    let _ = crds
        .delete(&format!("nests.{group}"), &DeleteParams::default())
        .await;
    cluster.cleanup().await;
}
