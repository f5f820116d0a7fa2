//! Create, get, update, patch and delete through kube-rs, with the real server's semantics.

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use kube::core::ObjectMeta;
use kube::{Discovery, ResourceExt};
use serde_json::json;

use crate::common::{client, config_map, namespace, server, status};

fn pod(name: &str) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}
    }))
    .unwrap()
}

#[tokio::test]
async fn created_pods_get_server_assigned_metadata() {
    let server = server().await;
    let pods: Api<Pod> = Api::default_namespaced(client(&server));
    let created = pods
        .create(&PostParams::default(), &pod("web"))
        .await
        .unwrap();
    let meta = &created.metadata;
    assert_eq!(meta.namespace.as_deref(), Some("default"));
    assert_eq!(meta.uid.as_ref().map(String::len), Some(36));
    assert_eq!(meta.generation, Some(1));
    assert!(meta.creation_timestamp.is_some());
    let rv: u64 = meta.resource_version.as_deref().unwrap().parse().unwrap();
    assert_eq!(rv, server.current_resource_version());
    let fetched = pods.get("web").await.unwrap();
    assert_eq!(fetched.metadata.uid, meta.uid);
    assert_eq!(
        fetched.spec.unwrap().containers[0].image.as_deref(),
        Some("nginx:1.27")
    );
}

#[tokio::test]
async fn resource_versions_increase_globally_across_resources() {
    let server = server().await;
    let c = client(&server);
    let cms: Api<ConfigMap> = Api::default_namespaced(c.clone());
    let pods: Api<Pod> = Api::default_namespaced(c);
    let a = cms
        .create(&PostParams::default(), &config_map("a", &[], "1"))
        .await
        .unwrap();
    let b = pods
        .create(&PostParams::default(), &pod("b"))
        .await
        .unwrap();
    let rv = |m: &ObjectMeta| {
        m.resource_version
            .as_deref()
            .unwrap()
            .parse::<u64>()
            .unwrap()
    };
    assert_eq!(rv(&b.metadata), rv(&a.metadata) + 1);
    let list = cms.list(&Default::default()).await.unwrap();
    assert_eq!(
        list.metadata.resource_version.unwrap(),
        rv(&b.metadata).to_string()
    );
}

#[tokio::test]
async fn generate_name_yields_a_unique_suffix() {
    let server = server().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client(&server));
    let mut cm = config_map("", &[], "x");
    cm.metadata.name = None;
    cm.metadata.generate_name = Some("gen-".into());
    let a = cms.create(&PostParams::default(), &cm).await.unwrap();
    let b = cms.create(&PostParams::default(), &cm).await.unwrap();
    assert!(
        a.name_any().starts_with("gen-") && a.name_any().len() == 9,
        "{}",
        a.name_any()
    );
    assert_ne!(a.name_any(), b.name_any());
}

#[tokio::test]
async fn creating_twice_is_already_exists_and_missing_objects_are_not_found() {
    let server = server().await;
    let deps: Api<Deployment> = Api::default_namespaced(client(&server));
    let dep: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
    }))
    .unwrap();
    deps.create(&PostParams::default(), &dep).await.unwrap();
    let err = status(deps.create(&PostParams::default(), &dep).await.unwrap_err());
    assert_eq!((err.code, err.reason.as_str()), (409, "AlreadyExists"));
    assert_eq!(err.message, "deployments.apps \"web\" already exists");
    let err = status(deps.get("nope").await.unwrap_err());
    assert_eq!((err.code, err.reason.as_str()), (404, "NotFound"));
    let details = err.details.unwrap();
    assert_eq!(
        (
            details.name.as_str(),
            details.group.as_str(),
            details.kind.as_str()
        ),
        ("nope", "apps", "deployments")
    );
}

#[tokio::test]
async fn objects_in_a_missing_namespace_are_rejected_with_not_found() {
    let server = server().await;
    let cms: Api<ConfigMap> = Api::namespaced(client(&server), "ghost");
    let err = status(
        cms.create(&PostParams::default(), &config_map("a", &[], "1"))
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (404, "NotFound"));
    assert_eq!(err.message, "namespaces \"ghost\" not found");
}

#[tokio::test]
async fn invalid_names_and_mismatched_kinds_are_invalid() {
    let server = server().await;
    let c = client(&server);
    let cms: Api<ConfigMap> = Api::default_namespaced(c.clone());
    let err = status(
        cms.create(&PostParams::default(), &config_map("Bad_Name", &[], "1"))
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    assert!(err.message.contains("RFC 1123"), "{}", err.message);

    let mut nameless = config_map("x", &[], "1");
    nameless.metadata.name = None;
    let err = status(
        cms.create(&PostParams::default(), &nameless)
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));

    let gvk = GroupVersionKind::gvk("", "v1", "ConfigMap");
    let dyn_api: Api<DynamicObject> =
        Api::default_namespaced_with(c, &ApiResource::from_gvk_with_plural(&gvk, "configmaps"));
    let mut wrong: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "w"}
    }))
    .unwrap();
    let err = status(
        dyn_api
            .create(&PostParams::default(), &wrong)
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    wrong.types.as_mut().unwrap().kind = "ConfigMap".into();
    wrong.types.as_mut().unwrap().api_version = "apps/v1".into();
    let err = status(
        dyn_api
            .create(&PostParams::default(), &wrong)
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
}

#[tokio::test]
async fn replace_with_a_stale_resource_version_conflicts() {
    let server = server().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client(&server));
    let v1 = cms
        .create(&PostParams::default(), &config_map("a", &[], "1"))
        .await
        .unwrap();
    let mut v2 = v1.clone();
    v2.data = Some([("value".to_string(), "2".to_string())].into());
    let stored = cms.replace("a", &PostParams::default(), &v2).await.unwrap();
    assert_eq!(stored.data.unwrap()["value"], "2");
    let err = status(
        cms.replace("a", &PostParams::default(), &v1)
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    assert!(
        err.message.contains("the object has been modified"),
        "{}",
        err.message
    );
    // A merge patch carrying a stale resourceVersion is a precondition too.
    let stale = v1.metadata.resource_version.clone().unwrap();
    let patch =
        Patch::Merge(json!({"metadata": {"resourceVersion": stale}, "data": {"value": "3"}}));
    let err = status(
        cms.patch("a", &PatchParams::default(), &patch)
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 409);
}

#[tokio::test]
async fn merge_json_strategic_and_apply_patches_all_apply() {
    let server = server().await;
    let pods: Api<Pod> = Api::default_namespaced(client(&server));
    pods.create(&PostParams::default(), &pod("p"))
        .await
        .unwrap();
    let pp = PatchParams::default();
    let merged = pods
        .patch(
            "p",
            &pp,
            &Patch::Merge(json!({"metadata": {"labels": {"tier": "front"}}})),
        )
        .await
        .unwrap();
    assert_eq!(merged.labels()["tier"], "front");
    assert_eq!(merged.labels()["app"], "web");
    let json_patch: json_patch::Patch = serde_json::from_value(json!([
        {"op": "remove", "path": "/metadata/labels/app"},
        {"op": "add", "path": "/metadata/annotations", "value": {"note": "hi"}}
    ]))
    .unwrap();
    let patched = pods
        .patch("p", &pp, &Patch::Json::<()>(json_patch))
        .await
        .unwrap();
    assert!(!patched.labels().contains_key("app"));
    assert_eq!(patched.annotations()["note"], "hi");
    let strategic = pods
        .patch(
            "p",
            &pp,
            &Patch::Strategic(
                json!({"spec": {"containers": [{"name": "app", "image": "nginx:1.28"}]}}),
            ),
        )
        .await
        .unwrap();
    let containers = strategic.spec.unwrap().containers;
    assert_eq!(containers.len(), 1);
    assert_eq!(containers[0].image.as_deref(), Some("nginx:1.28"));
    let applied = pods
        .patch(
            "q",
            &PatchParams::apply("test"),
            &Patch::Apply(
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "q"},
                "spec": {"containers": [{"name": "a", "image": "busybox"}]}}),
            ),
        )
        .await
        .unwrap();
    assert_eq!(applied.metadata.generation, Some(1));
    let reapplied = pods
        .patch(
            "q",
            &PatchParams::apply("labeller"),
            &Patch::Apply(json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "q", "labels": {"x": "y"}}})),
        )
        .await
        .unwrap();
    assert_eq!(reapplied.labels()["x"], "y");
    assert_eq!(
        reapplied.spec.unwrap().containers[0].image.as_deref(),
        Some("busybox")
    );
}

#[tokio::test]
async fn generation_tracks_spec_changes_only() {
    let server = server().await;
    let pods: Api<Pod> = Api::default_namespaced(client(&server));
    pods.create(&PostParams::default(), &pod("g"))
        .await
        .unwrap();
    let pp = PatchParams::default();
    let labelled = pods
        .patch(
            "g",
            &pp,
            &Patch::Merge(json!({"metadata": {"labels": {"x": "1"}}})),
        )
        .await
        .unwrap();
    assert_eq!(labelled.metadata.generation, Some(1));
    let respec = pods
        .patch(
            "g",
            &pp,
            &Patch::Merge(json!({"spec": {"activeDeadlineSeconds": 30}})),
        )
        .await
        .unwrap();
    assert_eq!(respec.metadata.generation, Some(2));
    let rv_before = respec.metadata.resource_version.clone();
    let noop = pods
        .patch(
            "g",
            &pp,
            &Patch::Merge(json!({"spec": {"activeDeadlineSeconds": 30}})),
        )
        .await
        .unwrap();
    assert_eq!(
        noop.metadata.resource_version, rv_before,
        "a no-op patch does not bump the RV"
    );
}

#[tokio::test]
async fn a_deployments_generation_also_moves_with_its_annotations_as_kube_apiserver_does() {
    let server = server().await;
    let deps: Api<Deployment> = Api::default_namespaced(client(&server));
    let dep: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"app": "d"}},
                 "template": {"metadata": {"labels": {"app": "d"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
    }))
    .unwrap();
    deps.create(&PostParams::default(), &dep).await.unwrap();
    // Labels do not move it (nor do they a Pod's); annotations do, as
    // kube-apiserver's Deployment strategy says (they are copied to the
    // ReplicaSets); annotations set to what they are do not.
    for (change, generation) in [
        (json!({"metadata": {"labels": {"x": "1"}}}), 1),
        (json!({"metadata": {"annotations": {"a": "1"}}}), 2),
        (json!({"metadata": {"annotations": {"a": "1"}}}), 2),
    ] {
        let patched = deps
            .patch("d", &PatchParams::default(), &Patch::Merge(&change))
            .await
            .unwrap();
        assert_eq!(patched.metadata.generation, Some(generation), "{change}");
    }
}

#[tokio::test]
async fn status_subresource_changes_only_status() {
    let server = server().await;
    let pods: Api<Pod> = Api::default_namespaced(client(&server));
    pods.create(&PostParams::default(), &pod("s"))
        .await
        .unwrap();
    let patched = pods
        .patch_status(
            "s",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"ignored": "yes"}},
                                "spec": {"nodeName": "ignored"},
                                "status": {"phase": "Running"}})),
        )
        .await
        .unwrap();
    assert_eq!(
        patched.status.clone().unwrap().phase.as_deref(),
        Some("Running")
    );
    assert!(!patched.labels().contains_key("ignored"));
    assert_eq!(patched.spec.unwrap().node_name, None);
    assert_eq!(patched.metadata.generation, Some(1));
}

#[tokio::test]
async fn dry_run_validates_without_storing() {
    let server = server().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client(&server));
    let rv = server.current_resource_version();
    let pp = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    cms.create(&pp, &config_map("dry", &[], "1")).await.unwrap();
    assert_eq!(status(cms.get("dry").await.unwrap_err()).code, 404);
    assert_eq!(server.current_resource_version(), rv);
    let err = status(
        cms.create(&pp, &config_map("Dry!", &[], "1"))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 422);
}

#[tokio::test]
async fn delete_returns_the_object_and_cascades_to_dependents() {
    let server = server().await;
    let c = client(&server);
    let deps: Api<Deployment> = Api::default_namespaced(c.clone());
    let rss: Api<ReplicaSet> = Api::default_namespaced(c.clone());
    let pods: Api<Pod> = Api::default_namespaced(c);
    let dep: Deployment = serde_json::from_value(json!({"metadata": {"name": "d"},
        "spec": {"selector": {}, "template": {}}}))
    .unwrap();
    let dep = deps.create(&PostParams::default(), &dep).await.unwrap();
    let owner = |kind: &str, name: &str, uid: &str, api_version: &str| json!([{"apiVersion": api_version, "kind": kind, "name": name, "uid": uid, "controller": true}]);
    let rs: ReplicaSet = serde_json::from_value(json!({"metadata": {"name": "d-1",
        "ownerReferences": owner("Deployment", "d", dep.metadata.uid.as_deref().unwrap(), "apps/v1")},
        "spec": {"selector": {}}})).unwrap();
    let rs = rss.create(&PostParams::default(), &rs).await.unwrap();
    let mut p = pod("d-1-x");
    p.metadata.owner_references = Some(
        serde_json::from_value(owner(
            "ReplicaSet",
            "d-1",
            rs.metadata.uid.as_deref().unwrap(),
            "apps/v1",
        ))
        .unwrap(),
    );
    pods.create(&PostParams::default(), &p).await.unwrap();
    let deleted = deps.delete("d", &DeleteParams::default()).await.unwrap();
    let last = deleted.left().expect("the deleted object is returned");
    assert_eq!(last.metadata.uid, dep.metadata.uid);
    assert_eq!(status(rss.get("d-1").await.unwrap_err()).code, 404);
    assert_eq!(status(pods.get("d-1-x").await.unwrap_err()).code, 404);
    assert_eq!(
        status(
            deps.delete("d", &DeleteParams::default())
                .await
                .unwrap_err()
        )
        .code,
        404
    );
}

#[tokio::test]
async fn deleting_a_namespace_deletes_its_objects() {
    let server = server().await;
    let c = client(&server);
    namespace(&c, "doomed").await;
    let cms: Api<ConfigMap> = Api::namespaced(c.clone(), "doomed");
    cms.create(&PostParams::default(), &config_map("a", &[], "1"))
        .await
        .unwrap();
    let nss: Api<Namespace> = Api::all(c.clone());
    let gone = nss
        .delete("doomed", &DeleteParams::default())
        .await
        .unwrap()
        .left()
        .unwrap();
    assert_eq!(gone.status.unwrap().phase.as_deref(), Some("Terminating"));
    assert_eq!(status(cms.get("a").await.unwrap_err()).code, 404);
    let all: Api<ConfigMap> = Api::all(c);
    assert!(
        all.list(&Default::default())
            .await
            .unwrap()
            .items
            .iter()
            .all(|cm| cm.namespace().as_deref() != Some("doomed"))
    );
}

#[tokio::test]
async fn well_known_namespaces_exist_at_start() {
    let server = server().await;
    let nss: Api<Namespace> = Api::all(client(&server));
    let names: Vec<String> = nss
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(|n| n.name_any())
        .collect();
    for ns in ["default", "kube-system", "kube-public"] {
        assert!(
            names.contains(&ns.to_string()),
            "{ns} missing from {names:?}"
        );
    }
}

#[tokio::test]
async fn discovery_finds_every_builtin_resource() {
    let server = server().await;
    let discovery = Discovery::new(client(&server)).run().await.unwrap();
    for (group, version, kind) in [
        ("", "v1", "Pod"),
        ("", "v1", "Namespace"),
        ("", "v1", "ConfigMap"),
        ("", "v1", "Secret"),
        ("", "v1", "Service"),
        ("", "v1", "ServiceAccount"),
        ("", "v1", "Event"),
        ("", "v1", "Node"),
        ("apps", "v1", "Deployment"),
        ("apps", "v1", "ReplicaSet"),
        ("apps", "v1", "StatefulSet"),
        ("apps", "v1", "DaemonSet"),
        ("batch", "v1", "Job"),
        ("batch", "v1", "CronJob"),
        ("coordination.k8s.io", "v1", "Lease"),
        ("rbac.authorization.k8s.io", "v1", "Role"),
        ("rbac.authorization.k8s.io", "v1", "RoleBinding"),
        ("rbac.authorization.k8s.io", "v1", "ClusterRole"),
        ("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding"),
        ("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
    ] {
        let gvk = GroupVersionKind::gvk(group, version, kind);
        let (ar, caps) = discovery
            .resolve_gvk(&gvk)
            .unwrap_or_else(|| panic!("{kind} not discovered"));
        assert!(!ar.plural.is_empty());
        assert!(caps.supports_operation("watch"), "{kind} not watchable");
    }
    let version = client(&server).apiserver_version().await.unwrap();
    assert_eq!(version.major, "1");
}

#[tokio::test]
async fn unknown_paths_and_verbs_get_status_errors() {
    let server = server().await;
    let c = client(&server);
    let req = http::Request::post("/api/v1/namespaces/default/configmaps/named")
        .body(b"{}".to_vec())
        .unwrap();
    let err = status(c.request_text(req).await.unwrap_err());
    assert_eq!((err.code, err.reason.as_str()), (405, "MethodNotAllowed"));
    let req = http::Request::get("/apis/nope.example.com/v1/things")
        .body(vec![])
        .unwrap();
    assert_eq!(status(c.request_text(req).await.unwrap_err()).code, 404);
    let req = http::Request::post("/api/v1/namespaces/default/configmaps")
        .header("content-type", "application/json")
        .body(b"{not json".to_vec())
        .unwrap();
    let err = status(c.request_text(req).await.unwrap_err());
    assert_eq!((err.code, err.reason.as_str()), (400, "BadRequest"));
    let req = http::Request::post("/api/v1/namespaces/default/configmaps")
        .header("content-type", "application/vnd.kubernetes.protobuf")
        .body(b"k8s\0".to_vec())
        .unwrap();
    let err = status(c.request_text(req).await.unwrap_err());
    assert_eq!((err.code, err.reason.as_str()), (400, "BadRequest"));
    assert!(err.message.contains("no kind"), "{}", err.message);
}

#[tokio::test]
async fn rbac_objects_are_stored_with_colons_allowed_in_their_names() {
    use k8s_openapi::api::rbac::v1::ClusterRole;
    let server = server().await;
    let roles: Api<ClusterRole> = Api::all(client(&server));
    let role: ClusterRole = serde_json::from_value(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "system:herald-reader"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "watch"]}]
    }))
    .unwrap();
    roles.create(&PostParams::default(), &role).await.unwrap();
    let stored = roles.get("system:herald-reader").await.unwrap();
    assert_eq!(stored.rules, role.rules);
    let mut bad = role.clone();
    bad.metadata.name = Some("a/b".into());
    let err = roles
        .create(&PostParams::default(), &bad)
        .await
        .unwrap_err();
    assert_eq!(status(err).code, 422);
}

/// A delete of an object with finalizers marks it (`deletionTimestamp`) and
/// keeps it until the last finalizer is removed, as the real server; no new
/// finalizer may be added meanwhile; removing the last deletes it.
#[tokio::test]
async fn finalizers_hold_a_deleted_object_until_the_last_is_removed() {
    let server = server().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client(&server));
    let mut cm = config_map("held", &[], "1");
    cm.metadata.finalizers = Some(vec!["example.com/a".into(), "example.com/b".into()]);
    cms.create(&PostParams::default(), &cm).await.unwrap();

    let deleted = cms.delete("held", &DeleteParams::default()).await.unwrap();
    let marked = deleted.left().expect("the object, still there");
    let at = marked.metadata.deletion_timestamp.clone().expect("marked");
    assert_eq!(marked.metadata.deletion_grace_period_seconds, Some(0));
    // A second delete changes nothing.
    let again = cms.delete("held", &DeleteParams::default()).await.unwrap();
    let again = again.left().expect("still there");
    assert_eq!(again.metadata.deletion_timestamp, Some(at));
    assert_eq!(
        again.metadata.resource_version,
        marked.metadata.resource_version
    );

    // No new finalizer while it is being deleted.
    let add = Patch::Merge(
        json!({"metadata": {"finalizers": ["example.com/a", "example.com/b", "example.com/c"]}}),
    );
    let refused = status(
        cms.patch("held", &PatchParams::default(), &add)
            .await
            .unwrap_err(),
    );
    assert_eq!(refused.code, 422, "{refused:?}");
    assert!(refused.message.contains("no new finalizers"), "{refused:?}");

    // One removed: still there, still marked.
    let one = Patch::Merge(json!({"metadata": {"finalizers": ["example.com/b"]}}));
    let left = cms
        .patch("held", &PatchParams::default(), &one)
        .await
        .unwrap();
    assert_eq!(
        left.metadata.finalizers,
        Some(vec!["example.com/b".to_owned()])
    );
    assert!(left.metadata.deletion_timestamp.is_some());
    assert!(cms.get_opt("held").await.unwrap().is_some());

    // The last removed: gone.
    let none = Patch::Merge(json!({"metadata": {"finalizers": null}}));
    let last = cms
        .patch("held", &PatchParams::default(), &none)
        .await
        .unwrap();
    assert_eq!(last.metadata.finalizers, None);
    assert!(cms.get_opt("held").await.unwrap().is_none());

    // An object without finalizers is deleted at once, as before.
    cms.create(&PostParams::default(), &config_map("free", &[], "1"))
        .await
        .unwrap();
    cms.delete("free", &DeleteParams::default()).await.unwrap();
    assert!(cms.get_opt("free").await.unwrap().is_none());
}
