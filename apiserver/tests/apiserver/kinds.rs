//! The kinds plugins write beyond the basics (NetworkPolicy, ResourceQuota, events.k8s.io
//! Events over the core Events), and the errors a client acts on.

use k8s_openapi::api::core::v1::{ConfigMap, Event as CoreEvent, ResourceQuota};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams,
    PostParams, Preconditions, PropagationPolicy, WatchEvent, WatchParams,
};
use kube::{Discovery, ResourceExt};
use serde_json::{Value, json};

use crate::common::{client, config_map, server, status, within};
use futures::{StreamExt, TryStreamExt};

fn causes(err: &kube::core::Status) -> Vec<(String, String)> {
    err.details
        .as_ref()
        .map(|d| {
            d.causes
                .iter()
                .map(|c| (c.field.clone(), c.reason.clone()))
                .collect()
        })
        .unwrap_or_default()
}

fn netpol(name: &str, types: &[&str]) -> NetworkPolicy {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"podSelector": {"matchLabels": {"app": "web"}}, "policyTypes": types,
                 "ingress": [{"from": [{"podSelector": {}}]}]}
    }))
    .unwrap()
}

#[tokio::test]
async fn network_policies_are_served_discovered_and_validated() {
    let server = server().await;
    let c = client(&server);
    let discovery = Discovery::new(c.clone()).run().await.unwrap();
    for (group, kind) in [
        ("networking.k8s.io", "NetworkPolicy"),
        ("", "ResourceQuota"),
        ("events.k8s.io", "Event"),
    ] {
        let (ar, caps) = discovery
            .resolve_gvk(&GroupVersionKind::gvk(group, "v1", kind))
            .unwrap_or_else(|| panic!("{kind} not discovered"));
        assert!(caps.supports_operation("watch"), "{kind}");
        assert_eq!(caps.scope, kube::discovery::Scope::Namespaced, "{kind}");
        assert!(!ar.plural.is_empty());
    }
    let nps: Api<NetworkPolicy> = Api::default_namespaced(c.clone());
    let created = nps
        .create(&PostParams::default(), &netpol("allow-web", &["Ingress"]))
        .await
        .unwrap();
    assert_eq!(created.metadata.generation, Some(1));
    let all: Api<NetworkPolicy> = Api::all(c);
    assert_eq!(all.list(&Default::default()).await.unwrap().items.len(), 1);
    let err = status(
        nps.create(
            &PostParams::default(),
            &netpol("bad", &["Ingress", "Sideways"]),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        causes(&err),
        [(
            "spec.policyTypes[1]".to_string(),
            "FieldValueNotSupported".to_string()
        )]
    );
    assert!(
        err.message.starts_with("NetworkPolicy.networking.k8s.io \"bad\" is invalid: spec.policyTypes[1]: Unsupported value: \"Sideways\""),
        "{}",
        err.message
    );
    // Patches are validated too.
    let err = status(
        nps.patch(
            "allow-web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"policyTypes": ["Nope"]}})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(err.code, 422);
}

fn quota(name: &str, cpu: &str) -> ResourceQuota {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"hard": {"cpu": cpu, "pods": "10"}}
    }))
    .unwrap()
}

#[tokio::test]
async fn resource_quotas_validate_quantities_and_have_a_status_subresource() {
    let server = server().await;
    let quotas: Api<ResourceQuota> = Api::default_namespaced(client(&server));
    quotas
        .create(&PostParams::default(), &quota("q", "2"))
        .await
        .unwrap();
    let err = status(
        quotas
            .create(&PostParams::default(), &quota("neg", "-1"))
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        causes(&err),
        [(
            "spec.hard[cpu]".to_string(),
            "FieldValueInvalid".to_string()
        )]
    );
    // Not a quantity at all: the real server fails decoding the body, with 400.
    let req = http::Request::post("/api/v1/namespaces/default/resourcequotas")
        .header("content-type", "application/json")
        .body(
            serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "ResourceQuota",
                "metadata": {"name": "junk"}, "spec": {"hard": {"cpu": "lots"}}}))
            .unwrap(),
        )
        .unwrap();
    let err = status(client(&server).request_text(req).await.unwrap_err());
    assert_eq!(err.code, 400);
    assert!(
        err.message.contains("quantities must match"),
        "{}",
        err.message
    );

    let used = quotas
        .patch_status(
            "q",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"hard": {"cpu": "100"}},
                "status": {"hard": {"cpu": "2", "pods": "10"}, "used": {"cpu": "1", "pods": "3"}}})),
        )
        .await
        .unwrap();
    let v = serde_json::to_value(&used).unwrap();
    assert_eq!(v["spec"]["hard"]["cpu"], "2");
    assert_eq!(v["status"]["used"]["pods"], "3");
    let ignored = quotas
        .patch(
            "q",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"used": {"pods": "9"}}})),
        )
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&ignored).unwrap()["status"]["used"]["pods"],
        "3"
    );
}

fn events_v1(name: &str) -> Value {
    json!({
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": name},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "regarding": {"kind": "Pod", "namespace": "default", "name": "web-1"},
        "note": "Pulled image", "reason": "Pulled", "type": "Normal", "action": "Pull",
        "reportingController": "herald.dev/plugin", "reportingInstance": "herald-0",
        "series": {"count": 3, "lastObservedTime": "2026-01-01T00:01:00.000000Z"}
    })
}

#[tokio::test]
async fn events_k8s_io_events_are_core_events_with_the_field_mapping() {
    let server = server().await;
    let c = client(&server);
    let events: Api<Event> = Api::default_namespaced(c.clone());
    let core: Api<CoreEvent> = Api::default_namespaced(c.clone());
    let created = events
        .create(
            &PostParams::default(),
            &serde_json::from_value(events_v1("pulled")).unwrap(),
        )
        .await
        .unwrap();
    let created = serde_json::to_value(&created).unwrap();
    assert_eq!(created["note"], "Pulled image");
    assert_eq!(created["regarding"]["name"], "web-1");
    assert_eq!(created["series"]["count"], 3);

    let as_core = serde_json::to_value(core.get("pulled").await.unwrap()).unwrap();
    assert_eq!(as_core["apiVersion"], "v1");
    assert_eq!(as_core["message"], "Pulled image");
    assert_eq!(as_core["involvedObject"]["name"], "web-1");
    assert_eq!(as_core["reportingComponent"], "herald.dev/plugin");
    assert_eq!(as_core["reportingInstance"], "herald-0");
    assert_eq!(as_core["action"], "Pull");
    assert_eq!(
        as_core["series"]["lastObservedTime"],
        "2026-01-01T00:01:00.000000Z"
    );
    assert!(as_core.get("note").is_none() && as_core.get("regarding").is_none());

    // And the other way round, with a watch through events.k8s.io seeing it.
    let rv = server.current_resource_version().to_string();
    let mut stream = events
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();
    let legacy: CoreEvent = serde_json::from_value(json!({
        "metadata": {"name": "legacy"},
        "involvedObject": {"kind": "Node", "name": "worker-a"},
        "message": "Node is ready", "reason": "NodeReady", "type": "Normal",
        "source": {"component": "kubelet", "host": "worker-a"},
        "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:05:00Z",
        "count": 4
    }))
    .unwrap();
    core.create(&PostParams::default(), &legacy).await.unwrap();
    let seen = within("the events.k8s.io watch event", async {
        loop {
            match stream.try_next().await.unwrap() {
                Some(WatchEvent::Added(e)) => break e,
                Some(_) => continue,
                None => panic!("watch ended"),
            }
        }
    })
    .await;
    let seen = serde_json::to_value(seen).unwrap();
    assert_eq!(seen["apiVersion"], "events.k8s.io/v1");
    assert_eq!(seen["note"], "Node is ready");
    assert_eq!(seen["regarding"]["name"], "worker-a");
    assert_eq!(seen["deprecatedSource"]["component"], "kubelet");
    assert_eq!(seen["deprecatedCount"], 4);
    assert_eq!(seen["deprecatedLastTimestamp"], "2026-01-01T00:05:00Z");
    let names: Vec<String> = events
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(|e| e.name_any())
        .collect();
    assert_eq!(names, ["legacy", "pulled"]);

    // Patches and apply through events.k8s.io write the core fields.
    events
        .patch(
            "pulled",
            &PatchParams::default(),
            &Patch::Merge(json!({"note": "Pulled image again"})),
        )
        .await
        .unwrap();
    assert_eq!(
        core.get("pulled").await.unwrap().message.as_deref(),
        Some("Pulled image again")
    );
    let mut config = events_v1("applied");
    config["metadata"]["namespace"] = json!("default");
    events
        .patch(
            "applied",
            &PatchParams::apply("herald"),
            &Patch::Apply(config),
        )
        .await
        .unwrap();
    assert_eq!(
        core.get("applied").await.unwrap().message.as_deref(),
        Some("Pulled image")
    );
}

#[tokio::test]
async fn events_k8s_io_events_are_validated_like_the_real_servers() {
    let server = server().await;
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("events.k8s.io", "v1", "Event"),
        "events",
    );
    let events: Api<DynamicObject> = Api::default_namespaced_with(client(&server), &ar);
    let mut bad = events_v1("bad");
    let obj = bad.as_object_mut().unwrap();
    obj.remove("eventTime");
    obj.remove("reportingController");
    obj.insert("deprecatedCount".into(), json!(2));
    let err = status(
        events
            .create(
                &PostParams::default(),
                &serde_json::from_value(bad).unwrap(),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        causes(&err),
        [
            ("eventTime".to_string(), "FieldValueRequired".to_string()),
            (
                "reportingController".to_string(),
                "FieldValueRequired".to_string()
            ),
            (
                "deprecatedCount".to_string(),
                "FieldValueInvalid".to_string()
            ),
        ]
    );
    assert!(
        err.message
            .starts_with("Event.events.k8s.io \"bad\" is invalid: ["),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn delete_preconditions_and_propagation_policies() {
    let server = server().await;
    let c = client(&server);
    let cms: Api<ConfigMap> = Api::default_namespaced(c);
    let owner = cms
        .create(&PostParams::default(), &config_map("owner", &[], "1"))
        .await
        .unwrap();
    let dependent = |name: &str| {
        let mut cm = config_map(name, &[], "1");
        cm.metadata.owner_references = Some(vec![
            serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
            "uid": owner.uid().unwrap()}))
            .unwrap(),
        ]);
        cm
    };
    cms.create(&PostParams::default(), &dependent("dep"))
        .await
        .unwrap();
    let wrong_uid = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some("00000000-0000-4000-8000-000000000000".into()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    let err = status(cms.delete("owner", &wrong_uid).await.unwrap_err());
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    assert!(
        err.message
            .contains("Precondition failed: UID in precondition"),
        "{}",
        err.message
    );
    let stale_rv = DeleteParams {
        preconditions: Some(Preconditions {
            uid: None,
            resource_version: Some("1".into()),
        }),
        ..DeleteParams::default()
    };
    let err = status(cms.delete("owner", &stale_rv).await.unwrap_err());
    assert_eq!(err.code, 409);
    assert!(
        err.message.contains("ResourceVersion in precondition: 1"),
        "{}",
        err.message
    );
    let bad_policy = http::Request::delete(
        "/api/v1/namespaces/default/configmaps/owner?propagationPolicy=Sideways",
    )
    .body(vec![])
    .unwrap();
    let err = status(client(&server).request_text(bad_policy).await.unwrap_err());
    assert_eq!(err.code, 422);

    // Orphan keeps the dependent; matching preconditions pass.
    let orphan = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Orphan),
        preconditions: Some(Preconditions {
            uid: owner.uid(),
            resource_version: owner.resource_version(),
        }),
        ..DeleteParams::default()
    };
    cms.delete("owner", &orphan).await.unwrap();
    assert!(cms.get("dep").await.is_ok());

    // Foreground and Background both take the dependents along.
    for policy in [PropagationPolicy::Foreground, PropagationPolicy::Background] {
        let owner_again = cms
            .create(&PostParams::default(), &config_map("owner", &[], "1"))
            .await
            .unwrap();
        let mut dep = config_map("dep2", &[], "1");
        dep.metadata.owner_references = Some(vec![
            serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
            "uid": owner_again.uid().unwrap()}))
            .unwrap(),
        ]);
        cms.create(&PostParams::default(), &dep).await.unwrap();
        let dp = DeleteParams {
            propagation_policy: Some(policy),
            ..DeleteParams::default()
        };
        cms.delete("owner", &dp).await.unwrap();
        assert_eq!(status(cms.get("dep2").await.unwrap_err()).code, 404);
    }
}

#[tokio::test]
async fn custom_resources_with_a_status_subresource_keep_status_out_of_main_writes() {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let server = server().await;
    let c = client(&server);
    let crds: Api<CustomResourceDefinition> = Api::all(c.clone());
    for (plural, kind, status_sub) in [("gadgets", "Gadget", true), ("gizmos", "Gizmo", false)] {
        let mut version = json!({"name": "v1", "served": true, "storage": true,
            "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}});
        if status_sub {
            version["subresources"] = json!({"status": {}});
        }
        let crd: CustomResourceDefinition = serde_json::from_value(json!({
            "metadata": {"name": format!("{plural}.example.com")},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": plural, "kind": kind},
                     "versions": [version]}
        }))
        .unwrap();
        crds.create(&PostParams::default(), &crd).await.unwrap();
        let ar = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("example.com", "v1", kind),
            plural,
        );
        let api: Api<DynamicObject> = Api::default_namespaced_with(c.clone(), &ar);
        let obj: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "example.com/v1", "kind": kind,
            "metadata": {"name": "x"}, "spec": {"size": 1}
        }))
        .unwrap();
        api.create(&PostParams::default(), &obj).await.unwrap();
        let patched = api
            .patch(
                "x",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"size": 2}, "status": {"ready": true}})),
            )
            .await
            .unwrap();
        assert_eq!(patched.data["spec"]["size"], 2);
        if status_sub {
            assert!(
                patched.data.get("status").is_none(),
                "{kind}: {:?}",
                patched.data
            );
            let st = api
                .patch_status(
                    "x",
                    &PatchParams::default(),
                    &Patch::Merge(json!({"spec": {"size": 3}, "status": {"ready": true}})),
                )
                .await
                .unwrap();
            assert_eq!(
                (
                    st.data["spec"]["size"].clone(),
                    st.data["status"]["ready"].clone()
                ),
                (json!(2), json!(true))
            );
        } else {
            assert_eq!(patched.data["status"]["ready"], true, "{kind}");
            assert_eq!(status(api.get_status("x").await.unwrap_err()).code, 404);
        }
    }
}

#[tokio::test]
async fn invalid_names_and_stale_versions_carry_what_a_client_acts_on() {
    let server = server().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client(&server));
    let mut nameless = config_map("x", &[], "1");
    nameless.metadata.name = None;
    let err = status(
        cms.create(&PostParams::default(), &nameless)
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        err.message,
        "ConfigMap \"\" is invalid: metadata.name: Required value: name or generateName is required"
    );
    assert_eq!(
        causes(&err),
        [(
            "metadata.name".to_string(),
            "FieldValueRequired".to_string()
        )]
    );
    let err = status(
        cms.create(&PostParams::default(), &config_map("Not_Valid", &[], "1"))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        causes(&err),
        [("metadata.name".to_string(), "FieldValueInvalid".to_string())]
    );

    let v1 = cms
        .create(&PostParams::default(), &config_map("c", &[], "1"))
        .await
        .unwrap();
    cms.patch(
        "c",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"value": "2"}})),
    )
    .await
    .unwrap();
    let stale = v1.resource_version().unwrap();
    let strategic =
        Patch::Strategic(json!({"metadata": {"resourceVersion": stale}, "data": {"value": "3"}}));
    let err = status(
        cms.patch("c", &PatchParams::default(), &strategic)
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    let applied = Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "resourceVersion": stale}, "data": {"value": "3"}}));
    let err = status(
        cms.patch("c", &PatchParams::apply("a").force(), &applied)
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    assert!(
        err.message.contains("the object has been modified"),
        "{}",
        err.message
    );
    // A dry-run apply reports the same conflicts a real one would.
    cms.patch(
        "c",
        &PatchParams::apply("owner"),
        &Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c"}, "data": {"value": "2"}})),
    )
    .await
    .unwrap();
    let dry = PatchParams {
        dry_run: true,
        ..PatchParams::apply("rival")
    };
    let err = status(
        cms.patch(
            "c",
            &dry,
            &Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "c"}, "data": {"value": "9"}})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(err.code, 409);
    assert_eq!(
        err.details.unwrap().causes[0].reason,
        "FieldManagerConflict"
    );
}
