//! CustomResourceDefinitions: serving, discovery, versions, status, removal.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use kube::{Client, Discovery, ResourceExt};
use serde_json::json;

use crate::common::{client, server, status};

fn crd(
    plural: &str,
    kind: &str,
    scope: &str,
    versions: &[(&str, bool)],
) -> CustomResourceDefinition {
    let versions: Vec<_> = versions
        .iter()
        .map(|(v, storage)| json!({"name": v, "served": true, "storage": storage,
            "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
            "subresources": {"status": {}}}))
        .collect();
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.example.com")},
        "spec": {"group": "example.com", "scope": scope,
                 "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind},
                 "versions": versions}
    }))
    .unwrap()
}

fn dyn_api(
    c: &Client,
    kind: &str,
    plural: &str,
    version: &str,
    ns: Option<&str>,
) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", version, kind),
        plural,
    );
    match ns {
        Some(ns) => Api::namespaced_with(c.clone(), ns, &ar),
        None => Api::all_with(c.clone(), &ar),
    }
}

fn object(kind: &str, version: &str, name: &str, size: i64) -> DynamicObject {
    serde_json::from_value(
        json!({"apiVersion": format!("example.com/{version}"), "kind": kind,
        "metadata": {"name": name}, "spec": {"size": size}}),
    )
    .unwrap()
}

#[tokio::test]
async fn a_created_crd_is_established_and_serves_namespaced_custom_resources() {
    let server = server().await;
    let c = client(&server);
    let crds: Api<CustomResourceDefinition> = Api::all(c.clone());
    let created = crds
        .create(
            &PostParams::default(),
            &crd("widgets", "Widget", "Namespaced", &[("v1", true)]),
        )
        .await
        .unwrap();
    let conditions = created.status.unwrap().conditions.unwrap();
    for t in ["Established", "NamesAccepted"] {
        assert!(
            conditions
                .iter()
                .any(|c| c.type_ == t && c.status == "True"),
            "{t} missing"
        );
    }
    let widgets = dyn_api(&c, "Widget", "widgets", "v1", Some("default"));
    let w = widgets
        .create(&PostParams::default(), &object("Widget", "v1", "w1", 3))
        .await
        .unwrap();
    assert_eq!(w.metadata.generation, Some(1));
    assert_eq!(w.namespace().as_deref(), Some("default"));
    let patched = widgets
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 4}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.data["spec"]["size"], 4);
    assert_eq!(patched.metadata.generation, Some(2));
    let with_status = widgets
        .patch_status(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"ready": true}})),
        )
        .await
        .unwrap();
    assert_eq!(with_status.data["status"]["ready"], true);
    let all = dyn_api(&c, "Widget", "widgets", "v1", None);
    assert_eq!(all.list(&Default::default()).await.unwrap().items.len(), 1);

    let discovery = Discovery::new(c.clone()).run().await.unwrap();
    let (ar, _) = discovery
        .resolve_gvk(&GroupVersionKind::gvk("example.com", "v1", "Widget"))
        .expect("the custom resource is discovered");
    assert_eq!(ar.plural, "widgets");
}

#[tokio::test]
async fn cluster_scoped_crds_serve_every_served_version() {
    let server = server().await;
    let c = client(&server);
    let crds: Api<CustomResourceDefinition> = Api::all(c.clone());
    crds.create(
        &PostParams::default(),
        &crd(
            "gadgets",
            "Gadget",
            "Cluster",
            &[("v1beta1", false), ("v1", true)],
        ),
    )
    .await
    .unwrap();
    let v1 = dyn_api(&c, "Gadget", "gadgets", "v1", None);
    let v1beta1 = dyn_api(&c, "Gadget", "gadgets", "v1beta1", None);
    v1beta1
        .create(&PostParams::default(), &object("Gadget", "v1beta1", "g", 1))
        .await
        .unwrap();
    let stored = v1.get("g").await.unwrap();
    assert_eq!(stored.types.unwrap().api_version, "example.com/v1");
    let old = v1beta1.get("g").await.unwrap();
    assert_eq!(old.types.unwrap().api_version, "example.com/v1beta1");
    assert!(old.metadata.namespace.is_none());
}

#[tokio::test]
async fn deleting_a_crd_removes_its_resource_and_objects() {
    let server = server().await;
    let c = client(&server);
    let crds: Api<CustomResourceDefinition> = Api::all(c.clone());
    crds.create(
        &PostParams::default(),
        &crd("widgets", "Widget", "Namespaced", &[("v1", true)]),
    )
    .await
    .unwrap();
    let widgets = dyn_api(&c, "Widget", "widgets", "v1", Some("default"));
    widgets
        .create(&PostParams::default(), &object("Widget", "v1", "w1", 1))
        .await
        .unwrap();
    crds.delete("widgets.example.com", &DeleteParams::default())
        .await
        .unwrap();
    let err = status(widgets.list(&Default::default()).await.unwrap_err());
    assert_eq!(err.code, 404);
    let discovery = Discovery::new(c.clone()).run().await.unwrap();
    assert!(
        discovery
            .resolve_gvk(&GroupVersionKind::gvk("example.com", "v1", "Widget"))
            .is_none()
    );
    // Recreating the CRD serves an empty resource: the objects went with it.
    crds.create(
        &PostParams::default(),
        &crd("widgets", "Widget", "Namespaced", &[("v1", true)]),
    )
    .await
    .unwrap();
    assert!(
        widgets
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

/// As kube-apiserver: a deleted CRD deletes its objects, but one with
/// finalizers is only marked, and the CRD waits for it (`Terminating`);
/// meanwhile no new object may be created; when the last finalizer goes,
/// the object goes, then the CRD and its resource.
#[tokio::test]
async fn a_deleted_crd_waits_for_its_objects_finalizers() {
    let server = server().await;
    let c = client(&server);
    let crds: Api<CustomResourceDefinition> = Api::all(c.clone());
    crds.create(
        &PostParams::default(),
        &crd("gadgets", "Gadget", "Namespaced", &[("v1", true)]),
    )
    .await
    .unwrap();
    let gadgets = dyn_api(&c, "Gadget", "gadgets", "v1", Some("default"));
    let mut held = object("Gadget", "v1", "held", 1);
    held.metadata.finalizers = Some(vec!["example.com/cleanup".into()]);
    gadgets.create(&PostParams::default(), &held).await.unwrap();
    gadgets
        .create(&PostParams::default(), &object("Gadget", "v1", "free", 2))
        .await
        .unwrap();

    crds.delete("gadgets.example.com", &DeleteParams::default())
        .await
        .unwrap();
    let terminating = crds.get("gadgets.example.com").await.unwrap();
    assert!(terminating.metadata.deletion_timestamp.is_some());
    assert!(gadgets.get_opt("free").await.unwrap().is_none());
    let marked = gadgets.get("held").await.unwrap();
    assert!(marked.metadata.deletion_timestamp.is_some());
    let refused = status(
        gadgets
            .create(&PostParams::default(), &object("Gadget", "v1", "new", 3))
            .await
            .unwrap_err(),
    );
    assert_eq!(refused.code, 405, "{refused:?}");
    assert_eq!(
        refused.message,
        "create not allowed while custom resource definition is terminating"
    );

    let none = Patch::Merge(json!({"metadata": {"finalizers": null}}));
    gadgets
        .patch("held", &PatchParams::default(), &none)
        .await
        .unwrap();
    assert!(crds.get_opt("gadgets.example.com").await.unwrap().is_none());
    assert_eq!(
        status(gadgets.list(&Default::default()).await.unwrap_err()).code,
        404
    );
}

#[tokio::test]
async fn a_crd_named_unlike_its_resource_is_invalid() {
    let server = server().await;
    let crds: Api<CustomResourceDefinition> = Api::all(client(&server));
    let mut bad = crd("widgets", "Widget", "Namespaced", &[("v1", true)]);
    bad.metadata.name = Some("wrong.example.com".into());
    let err = status(crds.create(&PostParams::default(), &bad).await.unwrap_err());
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
}
