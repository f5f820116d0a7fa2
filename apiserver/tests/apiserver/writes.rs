//! Writes as plugins make them: server-side apply with field managers and `managedFields`,
//! `dryRun=All` on every verb, and the status subresource.

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::core::ObjectMeta;
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

use crate::common::{client, config_map, server, status};

/// The `managedFields` entry of `manager` (with `operation`), as JSON.
fn entry(obj: &impl serde::Serialize, manager: &str, operation: &str) -> Option<Value> {
    let v = serde_json::to_value(obj).unwrap();
    v["metadata"]["managedFields"]
        .as_array()?
        .iter()
        .find(|e| e["manager"] == manager && e["operation"] == operation)
        .cloned()
}

fn apply(manager: &str) -> PatchParams {
    PatchParams::apply(manager)
}

fn cm_config(data: Value, labels: Value) -> Patch<Value> {
    Patch::Apply(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "labels": labels},
        "data": data,
    }))
}

#[tokio::test]
async fn apply_creates_records_ownership_and_conflicts_name_the_other_manager() {
    let server = server().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client(&server));
    let created = cms
        .patch(
            "c",
            &apply("alice"),
            &cm_config(json!({"a": "1", "b": "1"}), json!({"team": "x"})),
        )
        .await
        .unwrap();
    let alice = entry(&created, "alice", "Apply").expect("alice's Apply entry");
    assert_eq!(alice["apiVersion"], "v1");
    assert_eq!(alice["fieldsType"], "FieldsV1");
    assert!(alice["time"].as_str().is_some_and(|t| t.ends_with('Z')));
    assert_eq!(
        alice["fieldsV1"],
        json!({
            "f:data": {".": {}, "f:a": {}, "f:b": {}},
            "f:metadata": {"f:labels": {".": {}, "f:team": {}}}
        })
    );

    // Another value for a field alice owns: 409 naming alice.
    let err = status(
        cms.patch("c", &apply("bob"), &cm_config(json!({"a": "2"}), json!({})))
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        err.message,
        "Apply failed with 1 conflict: conflict with \"alice\": .data.a"
    );
    let causes = err.details.unwrap().causes;
    assert_eq!(causes.len(), 1);
    assert_eq!(causes[0].reason, "FieldManagerConflict");
    assert_eq!(causes[0].field, ".data.a");
    assert!(causes[0].message.contains("\"alice\""), "{causes:?}");
    assert_eq!(cms.get("c").await.unwrap().data.unwrap()["a"], "1");

    // The same value is shared ownership; force takes a differing one.
    cms.patch(
        "c",
        &apply("carol"),
        &cm_config(json!({"b": "1"}), json!({})),
    )
    .await
    .unwrap();
    let forced = cms
        .patch(
            "c",
            &apply("bob").force(),
            &cm_config(json!({"a": "2"}), json!({})),
        )
        .await
        .unwrap();
    assert_eq!(forced.data.as_ref().unwrap()["a"], "2");
    let alice = entry(&forced, "alice", "Apply").unwrap();
    assert!(alice["fieldsV1"]["f:data"].get("f:a").is_none(), "{alice}");
    assert!(entry(&forced, "bob", "Apply").unwrap()["fieldsV1"]["f:data"]["f:a"].is_object());

    // Alice stops applying data: b stays (carol owns it too), the label goes with her.
    let reapplied = cms
        .patch(
            "c",
            &apply("alice"),
            &Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "c", "annotations": {"note": "n"}}})),
        )
        .await
        .unwrap();
    let data = reapplied.data.clone().unwrap();
    assert_eq!((data["a"].as_str(), data["b"].as_str()), ("2", "1"));
    assert!(!reapplied.labels().contains_key("team"), "{reapplied:?}");
    assert_eq!(reapplied.annotations()["note"], "n");

    // Carol stops too: b is nobody's any more and goes.
    let last = cms
        .patch("c", &apply("carol"), &cm_config(json!({}), json!({})))
        .await
        .unwrap();
    assert!(!last.data.unwrap().contains_key("b"));
}

#[tokio::test]
async fn apply_without_a_field_manager_and_force_without_apply_are_invalid() {
    let server = server().await;
    let c = client(&server);
    let req = http::Request::patch("/api/v1/namespaces/default/configmaps/x")
        .header("content-type", "application/apply-patch+yaml")
        .body(b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n".to_vec())
        .unwrap();
    let err = status(c.request_text(req).await.unwrap_err());
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    let causes = err.details.unwrap().causes;
    assert_eq!(causes[0].field, "fieldManager");
    assert!(causes[0].message.contains("is required for apply patch"));
    let req = http::Request::patch("/api/v1/namespaces/default/configmaps/x?force=true")
        .header("content-type", "application/merge-patch+json")
        .body(b"{}".to_vec())
        .unwrap();
    let err = status(c.request_text(req).await.unwrap_err());
    assert_eq!(
        (err.code, err.details.unwrap().causes[0].field.as_str()),
        (422, "force")
    );
}

#[tokio::test]
async fn non_apply_writes_record_update_entries_that_apply_conflicts_with() {
    let server = server().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client(&server));
    let pp = PostParams {
        field_manager: Some("creator".into()),
        ..PostParams::default()
    };
    let created = cms
        .create(&pp, &config_map("c", &[("app", "web")], "1"))
        .await
        .unwrap();
    let creator = entry(&created, "creator", "Update").expect("creator's Update entry");
    assert_eq!(
        creator["fieldsV1"],
        json!({"f:data": {".": {}, "f:value": {}},
               "f:metadata": {"f:labels": {".": {}, "f:app": {}}}})
    );
    let patcher = PatchParams {
        field_manager: Some("patcher".into()),
        ..PatchParams::default()
    };
    let patched = cms
        .patch(
            "c",
            &patcher,
            &Patch::Merge(json!({"data": {"value": "2"}})),
        )
        .await
        .unwrap();
    let p = entry(&patched, "patcher", "Update").unwrap();
    assert_eq!(p["fieldsV1"], json!({"f:data": {"f:value": {}}}));
    let creator = entry(&patched, "creator", "Update").unwrap();
    assert!(creator["fieldsV1"]["f:data"].get("f:value").is_none());
    // PUT records its manager too.
    let mut replaced = patched.clone();
    replaced.labels_mut().insert("tier".into(), "front".into());
    let pp = PostParams {
        field_manager: Some("replacer".into()),
        ..PostParams::default()
    };
    let patched = cms.replace("c", &pp, &replaced).await.unwrap();
    assert_eq!(
        entry(&patched, "replacer", "Update").unwrap()["fieldsV1"],
        json!({"f:metadata": {"f:labels": {"f:tier": {}}}})
    );
    // A no-op write changes nothing, not even the resource version.
    let again = cms
        .patch(
            "c",
            &patcher,
            &Patch::Merge(json!({"data": {"value": "2"}})),
        )
        .await
        .unwrap();
    assert_eq!(again.resource_version(), patched.resource_version());
    let err = status(
        cms.patch(
            "c",
            &apply("applier"),
            &cm_config(json!({"value": "3"}), json!({})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(err.code, 409);
    assert_eq!(
        err.message,
        "Apply failed with 1 conflict: conflict with \"patcher\" using v1: .data.value"
    );
}

fn deployment_config(containers: Value) -> Patch<Value> {
    Patch::Apply(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"app": "d"}},
                 "template": {"metadata": {"labels": {"app": "d"}},
                              "spec": {"containers": containers}}}
    }))
}

#[tokio::test]
async fn lists_keyed_by_name_merge_per_element_between_managers() {
    let server = server().await;
    let deps: Api<Deployment> = Api::default_namespaced(client(&server));
    deps.patch(
        "d",
        &apply("app-team"),
        &deployment_config(json!([{"name": "app", "image": "app:1"}])),
    )
    .await
    .unwrap();
    let both = deps
        .patch(
            "d",
            &apply("mesh"),
            &deployment_config(json!([{"name": "proxy", "image": "proxy:1"}])),
        )
        .await
        .unwrap();
    let names = |d: &Deployment| -> Vec<String> {
        let v = serde_json::to_value(d).unwrap();
        v["spec"]["template"]["spec"]["containers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(names(&both), ["app", "proxy"]);
    let mesh = entry(&both, "mesh", "Apply").unwrap();
    assert_eq!(
        mesh["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"],
        json!({"k:{\"name\":\"proxy\"}": {".": {}, "f:image": {}, "f:name": {}}})
    );
    let err = status(
        deps.patch(
            "d",
            &apply("mesh"),
            &deployment_config(json!([{"name": "app", "image": "app:2"}])),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(err.code, 409);
    assert_eq!(
        err.details.unwrap().causes[0].field,
        ".spec.template.spec.containers[name=\"app\"].image"
    );
    // The app team drops its container: only the proxy is left.
    let dropped = deps
        .patch("d", &apply("app-team"), &deployment_config(json!([])))
        .await
        .unwrap();
    assert_eq!(names(&dropped), ["proxy"]);
}

fn pod(name: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "app", "image": "nginx"}]}
    }))
    .unwrap()
}

async fn unchanged<K>(
    server: &herald_apiserver::ApiServer,
    api: &Api<K>,
    name: &str,
    rv: u64,
    before: &K,
) where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + serde::Serialize,
{
    assert_eq!(
        server.current_resource_version(),
        rv,
        "a dry run bumped the resource version"
    );
    let now = api.get(name).await.unwrap();
    assert_eq!(
        serde_json::to_value(&now).unwrap(),
        serde_json::to_value(before).unwrap(),
        "a dry run changed {name}"
    );
}

/// Every verb with `dryRun=All` answers as if done and stores nothing: the global resource
/// version (which every stored change and so every watch event bumps) does not move.
#[tokio::test]
async fn dry_run_answers_every_verb_without_storing() {
    let server = server().await;
    let c: Client = client(&server);
    let cms: Api<ConfigMap> = Api::default_namespaced(c.clone());
    let pods: Api<Pod> = Api::default_namespaced(c);
    let cm = cms
        .create(&PostParams::default(), &config_map("d", &[], "1"))
        .await
        .unwrap();
    let p = pods
        .create(&PostParams::default(), &pod("p"))
        .await
        .unwrap();
    let rv = server.current_resource_version();
    let mut watch = cms
        .watch(&kube::api::WatchParams::default(), &rv.to_string())
        .await
        .unwrap()
        .boxed();
    let post = PostParams {
        dry_run: true,
        field_manager: Some("dry".into()),
    };
    let patch = PatchParams {
        dry_run: true,
        field_manager: Some("dry".into()),
        ..PatchParams::default()
    };

    let created = cms
        .create(&post, &config_map("new", &[], "1"))
        .await
        .unwrap();
    assert_eq!(created.uid().map(|u| u.len()), Some(36));
    assert!(entry(&created, "dry", "Update").is_some());
    assert_eq!(status(cms.get("new").await.unwrap_err()).code, 404);
    let err = status(
        cms.create(&post, &config_map("d", &[], "1"))
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "AlreadyExists"));

    let mut changed = cm.clone();
    changed.data = Some([("value".to_string(), "2".to_string())].into());
    let replaced = cms.replace("d", &post, &changed).await.unwrap();
    assert_eq!(replaced.data.unwrap()["value"], "2");
    unchanged(&server, &cms, "d", rv, &cm).await;

    let merged = cms
        .patch("d", &patch, &Patch::Merge(json!({"data": {"value": "3"}})))
        .await
        .unwrap();
    assert_eq!(merged.data.unwrap()["value"], "3");
    let strategic = cms
        .patch(
            "d",
            &patch,
            &Patch::Strategic(json!({"data": {"value": "4"}})),
        )
        .await
        .unwrap();
    assert_eq!(strategic.data.unwrap()["value"], "4");
    let ops: json_patch::Patch =
        serde_json::from_value(json!([{"op": "replace", "path": "/data/value", "value": "5"}]))
            .unwrap();
    let jsoned = cms
        .patch("d", &patch, &Patch::Json::<()>(ops))
        .await
        .unwrap();
    assert_eq!(jsoned.data.unwrap()["value"], "5");
    let dry_apply = PatchParams {
        dry_run: true,
        ..apply("dry-applier")
    };
    let applied = cms
        .patch(
            "d",
            &dry_apply,
            &Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "d"}, "data": {"other": "x"}})),
        )
        .await
        .unwrap();
    assert_eq!(applied.data.as_ref().unwrap()["other"], "x");
    assert!(entry(&applied, "dry-applier", "Apply").is_some());
    let applied_new = cms
        .patch(
            "fresh",
            &dry_apply,
            &Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "fresh"}, "data": {"k": "v"}})),
        )
        .await
        .unwrap();
    assert_eq!(applied_new.name_any(), "fresh");
    assert_eq!(status(cms.get("fresh").await.unwrap_err()).code, 404);
    unchanged(&server, &cms, "d", rv, &cm).await;

    let dp = DeleteParams {
        dry_run: true,
        ..DeleteParams::default()
    };
    let deleted = cms.delete("d", &dp).await.unwrap().left().unwrap();
    assert_eq!(deleted.uid(), cm.uid());
    unchanged(&server, &cms, "d", rv, &cm).await;

    let st = pods
        .patch_status(
            "p",
            &patch,
            &Patch::Merge(json!({"status": {"phase": "Running"}})),
        )
        .await
        .unwrap();
    assert_eq!(st.status.unwrap().phase.as_deref(), Some("Running"));
    let mut running = p.clone();
    running.status.as_mut().unwrap().phase = Some("Succeeded".into());
    let st = pods.replace_status("p", &post, &running).await.unwrap();
    assert_eq!(st.status.unwrap().phase.as_deref(), Some("Succeeded"));
    unchanged(&server, &pods, "p", rv, &p).await;

    // Validation still runs.
    let err = status(
        cms.create(&post, &config_map("Bad!", &[], "1"))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 422);
    // The first event the watch sees is the first real write after all those dry runs.
    cms.create(&PostParams::default(), &config_map("real", &[], "1"))
        .await
        .unwrap();
    let first = crate::common::within("the first watch event", watch.next())
        .await
        .unwrap()
        .unwrap();
    match first {
        kube::api::WatchEvent::Added(o) => assert_eq!(o.name_any(), "real"),
        other => panic!("a dry run produced a watch event: {other:?}"),
    }
}

#[tokio::test]
async fn main_writes_ignore_status_and_status_writes_change_only_status() {
    let server = server().await;
    let deps: Api<Deployment> = Api::default_namespaced(client(&server));
    let created = deps
        .patch(
            "d",
            &apply("owner"),
            &deployment_config(json!([{"name": "app", "image": "app:1"}])),
        )
        .await
        .unwrap();
    assert!(created.status.is_none());
    let with_status = deps
        .patch(
            "d",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}, "status": {"replicas": 9}})),
        )
        .await
        .unwrap();
    assert_eq!(with_status.spec.replicas, Some(3));
    assert!(with_status.status.is_none(), "{:?}", with_status.status);
    let mut replaced = with_status.clone();
    replaced.status = Some(serde_json::from_value(json!({"replicas": 7})).unwrap());
    let replaced = deps
        .replace("d", &PostParams::default(), &replaced)
        .await
        .unwrap();
    assert!(replaced.status.is_none());

    let status_patch = PatchParams {
        field_manager: Some("controller".into()),
        ..PatchParams::default()
    };
    let st = deps
        .patch_status(
            "d",
            &status_patch,
            &Patch::Merge(
                json!({"spec": {"replicas": 1}, "status": {"replicas": 3, "readyReplicas": 3}}),
            ),
        )
        .await
        .unwrap();
    assert_eq!(st.spec.replicas, Some(3));
    assert_eq!(st.status.as_ref().unwrap().ready_replicas, Some(3));
    assert_eq!(st.metadata.generation, with_status.metadata.generation);
    let controller = entry(&st, "controller", "Update").unwrap();
    assert_eq!(controller["subresource"], "status");
    assert_eq!(
        controller["fieldsV1"],
        json!({"f:status": {"f:readyReplicas": {}, "f:replicas": {}}})
    );
    // Apply to the status subresource, with its own entry.
    let applied = deps
        .patch_status(
            "d",
            &apply("status-applier").force(),
            &Patch::Apply(json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "d"}, "status": {"availableReplicas": 2}})),
        )
        .await
        .unwrap();
    assert_eq!(applied.status.as_ref().unwrap().available_replicas, Some(2));
    assert_eq!(applied.status.as_ref().unwrap().ready_replicas, Some(3));
    assert_eq!(
        entry(&applied, "status-applier", "Apply").unwrap()["subresource"],
        "status"
    );
    // GET …/status serves the object; PUT …/status takes only the status.
    let mut got = deps.get_status("d").await.unwrap();
    assert_eq!(got.status.as_ref().unwrap().available_replicas, Some(2));
    got.spec.replicas = Some(42);
    got.status.as_mut().unwrap().updated_replicas = Some(3);
    let put = deps
        .replace_status("d", &PostParams::default(), &got)
        .await
        .unwrap();
    assert_eq!(put.spec.replicas, Some(3));
    assert_eq!(put.status.as_ref().unwrap().updated_replicas, Some(3));
    // ConfigMaps have no status subresource.
    let cms: Api<ConfigMap> = Api::default_namespaced(client(&server));
    cms.create(&PostParams::default(), &config_map("c", &[], "1"))
        .await
        .unwrap();
    let err = status(cms.get_status("c").await.unwrap_err());
    assert_eq!(err.code, 404);
    let _ = ObjectMeta::default();
}

#[tokio::test]
async fn finalizers_are_a_set_shared_between_appliers_and_a_repeated_apply_is_a_no_op() {
    let server = server().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client(&server));
    let config = |finalizers: Value| {
        Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "f", "finalizers": finalizers}}))
    };
    cms.patch("f", &apply("one"), &config(json!(["example.com/one"])))
        .await
        .unwrap();
    let both = cms
        .patch("f", &apply("two"), &config(json!(["example.com/two"])))
        .await
        .unwrap();
    assert_eq!(
        both.finalizers(),
        ["example.com/one".to_string(), "example.com/two".to_string()]
    );
    assert_eq!(
        entry(&both, "two", "Apply").unwrap()["fieldsV1"],
        json!({"f:metadata": {"f:finalizers": {"v:\"example.com/two\"": {}}}})
    );
    let again = cms
        .patch("f", &apply("two"), &config(json!(["example.com/two"])))
        .await
        .unwrap();
    assert_eq!(again.resource_version(), both.resource_version());
    assert_eq!(
        serde_json::to_value(&again).unwrap(),
        serde_json::to_value(&both).unwrap()
    );
    let one_left = cms
        .patch("f", &apply("two"), &config(json!([])))
        .await
        .unwrap();
    assert_eq!(one_left.finalizers(), ["example.com/one".to_string()]);
}

#[tokio::test]
async fn seeded_objects_first_applied_conflict_with_before_first_apply() {
    let seed = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/cluster");
    let server = crate::common::server_with(|c| c.seed_dirs = vec![seed]).await;
    let cms: Api<ConfigMap> = Api::namespaced(client(&server), "payments");
    let config = |currency: &str| {
        Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "payments-settings", "namespace": "payments"},
            "data": {"currency": currency}}))
    };
    let err = status(
        cms.patch("payments-settings", &apply("plugin"), &config("USD"))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        err.message,
        "Apply failed with 1 conflict: conflict with \"before-first-apply\" using v1: .data.currency"
    );
    let taken = cms
        .patch(
            "payments-settings",
            &apply("plugin").force(),
            &config("USD"),
        )
        .await
        .unwrap();
    assert_eq!(taken.data.as_ref().unwrap()["currency"], "USD");
    assert_eq!(taken.data.as_ref().unwrap()["fraud-threshold"], "0.82");
    let before = entry(&taken, "before-first-apply", "Update").unwrap();
    assert!(before["fieldsV1"]["f:data"].get("f:currency").is_none());
    assert!(before["fieldsV1"]["f:data"]["f:fraud-threshold"].is_object());
}
