//! Lists: label and field selectors, pagination with continue tokens, resource versions.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::common::{client, config_map, namespace, server, status};

async fn names(api: &Api<ConfigMap>, lp: &ListParams) -> Vec<String> {
    api.list(lp)
        .await
        .unwrap()
        .items
        .iter()
        .map(|c| c.name_any())
        .collect()
}

#[tokio::test]
async fn label_selectors_support_every_operator() {
    let server = server().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client(&server));
    let pp = PostParams::default();
    cms.create(
        &pp,
        &config_map("a", &[("app", "web"), ("env", "prod")], ""),
    )
    .await
    .unwrap();
    cms.create(&pp, &config_map("b", &[("app", "web"), ("env", "dev")], ""))
        .await
        .unwrap();
    cms.create(&pp, &config_map("c", &[("app", "db")], ""))
        .await
        .unwrap();
    cms.create(&pp, &config_map("d", &[], "")).await.unwrap();
    let sel = |s: &str| ListParams::default().labels(s);
    assert_eq!(names(&cms, &sel("app=web")).await, ["a", "b"]);
    assert_eq!(names(&cms, &sel("app==db")).await, ["c"]);
    assert_eq!(names(&cms, &sel("app!=web")).await, ["c", "d"]);
    assert_eq!(names(&cms, &sel("env in (prod,staging)")).await, ["a"]);
    assert_eq!(names(&cms, &sel("env notin (prod)")).await, ["b", "c", "d"]);
    assert_eq!(names(&cms, &sel("env")).await, ["a", "b"]);
    assert_eq!(names(&cms, &sel("!app")).await, ["d"]);
    assert_eq!(names(&cms, &sel("app=web,env!=prod")).await, ["b"]);
    let err = status(cms.list(&sel("app in (")).await.unwrap_err());
    assert_eq!((err.code, err.reason.as_str()), (400, "BadRequest"));
}

#[tokio::test]
async fn field_selectors_filter_by_name_namespace_and_pod_fields() {
    let server = server().await;
    let c = client(&server);
    namespace(&c, "other").await;
    let pp = PostParams::default();
    let here: Api<ConfigMap> = Api::default_namespaced(c.clone());
    let there: Api<ConfigMap> = Api::namespaced(c.clone(), "other");
    here.create(&pp, &config_map("a", &[], "")).await.unwrap();
    here.create(&pp, &config_map("b", &[], "")).await.unwrap();
    there.create(&pp, &config_map("a", &[], "")).await.unwrap();
    let all: Api<ConfigMap> = Api::all(c.clone());
    let keyed = |lp: ListParams| {
        let all = all.clone();
        async move {
            all.list(&lp)
                .await
                .unwrap()
                .items
                .iter()
                .map(|c| format!("{}/{}", c.namespace().unwrap(), c.name_any()))
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(
        keyed(ListParams::default().fields("metadata.name=a")).await,
        ["default/a", "other/a"]
    );
    assert_eq!(
        keyed(ListParams::default().fields("metadata.namespace==other")).await,
        ["other/a"]
    );
    assert_eq!(
        keyed(ListParams::default().fields("metadata.name!=a,metadata.namespace=default")).await,
        ["default/b"]
    );
    let err = status(
        all.list(&ListParams::default().fields("data.value=x"))
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (400, "BadRequest"));

    let pods: Api<Pod> = Api::default_namespaced(c);
    for (name, node) in [("p1", "node-a"), ("p2", "node-b")] {
        let pod: Pod = serde_json::from_value(json!({"metadata": {"name": name},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "x"}]}}))
        .unwrap();
        pods.create(&pp, &pod).await.unwrap();
    }
    pods.patch_status(
        "p2",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"phase": "Running"}})),
    )
    .await
    .unwrap();
    let on_a: Vec<String> = pods
        .list(&ListParams::default().fields("spec.nodeName=node-a"))
        .await
        .unwrap()
        .items
        .iter()
        .map(|p| p.name_any())
        .collect();
    assert_eq!(on_a, ["p1"]);
    let running: Vec<String> = pods
        .list(&ListParams::default().fields("status.phase=Running"))
        .await
        .unwrap()
        .items
        .iter()
        .map(|p| p.name_any())
        .collect();
    assert_eq!(running, ["p2"]);
}

#[tokio::test]
async fn pages_are_consistent_with_the_first_page_under_concurrent_writes() {
    let server = server().await;
    let c = client(&server);
    namespace(&c, "paged").await;
    let cms: Api<ConfigMap> = Api::namespaced(c, "paged");
    let pp = PostParams::default();
    let initial: BTreeSet<String> = (0..10).map(|i| format!("c{i:02}")).collect();
    for name in &initial {
        cms.create(&pp, &config_map(name, &[], "old"))
            .await
            .unwrap();
    }
    let first = cms.list(&ListParams::default().limit(4)).await.unwrap();
    let snapshot_rv = first.metadata.resource_version.clone().unwrap();
    assert_eq!(first.items.len(), 4);
    assert_eq!(first.metadata.remaining_item_count, Some(6));
    let mut seen: Vec<ConfigMap> = first.items.clone();
    let mut token = first.metadata.continue_.clone();
    let mut writes = 0;
    while let Some(t) = token.filter(|t| !t.is_empty()) {
        // Concurrent writers: delete one not yet listed, add new ones, modify one.
        if writes == 0 {
            cms.delete("c07", &DeleteParams::default()).await.unwrap();
            cms.create(&pp, &config_map("c045", &[], "new"))
                .await
                .unwrap();
            cms.create(&pp, &config_map("c99", &[], "new"))
                .await
                .unwrap();
            cms.patch(
                "c08",
                &PatchParams::default(),
                &Patch::Merge(json!({"data": {"value": "new"}})),
            )
            .await
            .unwrap();
        }
        writes += 1;
        let page = cms
            .list(&ListParams::default().limit(4).continue_token(&t))
            .await
            .unwrap();
        assert_eq!(
            page.metadata.resource_version.as_deref(),
            Some(snapshot_rv.as_str())
        );
        seen.extend(page.items);
        token = page.metadata.continue_;
    }
    let names: BTreeSet<String> = seen.iter().map(|c| c.name_any()).collect();
    assert_eq!(names, initial);
    assert_eq!(seen.len(), 10);
    assert!(
        seen.iter()
            .all(|c| c.data.as_ref().unwrap()["value"] == "old")
    );
    let fresh = names_of(&cms).await;
    assert!(fresh.contains("c99") && fresh.contains("c045") && !fresh.contains("c07"));
}

async fn names_of(api: &Api<ConfigMap>) -> BTreeSet<String> {
    api.list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(|c| c.name_any())
        .collect()
}

#[tokio::test]
async fn an_expired_continue_token_is_gone() {
    let server = server().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client(&server));
    for n in ["a", "b", "c"] {
        cms.create(&PostParams::default(), &config_map(n, &[], ""))
            .await
            .unwrap();
    }
    let first = cms.list(&ListParams::default().limit(1)).await.unwrap();
    cms.create(&PostParams::default(), &config_map("d", &[], ""))
        .await
        .unwrap();
    server.faults().compact_history();
    let token = first.metadata.continue_.unwrap();
    let err = status(
        cms.list(&ListParams::default().limit(1).continue_token(&token))
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (410, "Expired"));
    let err = status(
        cms.list(&ListParams::default().continue_token("garbage"))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 400);
}

#[tokio::test]
async fn list_resource_version_parameters_are_honoured() {
    let server = server().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client(&server));
    cms.create(&PostParams::default(), &config_map("a", &[], ""))
        .await
        .unwrap();
    let rv = server.current_resource_version();
    let any = cms.list(&ListParams::default().match_any()).await.unwrap();
    assert_eq!(any.metadata.resource_version, Some(rv.to_string()));
    let exact = ListParams::default()
        .at(&rv.to_string())
        .matching(kube::api::VersionMatch::Exact);
    cms.create(&PostParams::default(), &config_map("b", &[], ""))
        .await
        .unwrap();
    let old = cms.list(&exact).await.unwrap();
    assert_eq!(
        old.items.len(),
        1,
        "an exact list shows the state at that version"
    );
    server.faults().compact_history();
    let err = status(cms.list(&exact).await.unwrap_err());
    assert_eq!((err.code, err.reason.as_str()), (410, "Expired"));
}

#[tokio::test]
async fn delete_collection_removes_only_selected_objects() {
    let server = server().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client(&server));
    let pp = PostParams::default();
    cms.create(&pp, &config_map("a", &[("tier", "x")], ""))
        .await
        .unwrap();
    cms.create(&pp, &config_map("b", &[("tier", "x")], ""))
        .await
        .unwrap();
    cms.create(&pp, &config_map("c", &[("tier", "y")], ""))
        .await
        .unwrap();
    let deleted = cms
        .delete_collection(
            &DeleteParams::default(),
            &ListParams::default().labels("tier=x"),
        )
        .await
        .unwrap()
        .left()
        .expect("the deleted objects are returned");
    let gone: Vec<String> = deleted.items.iter().map(|c| c.name_any()).collect();
    assert_eq!(gone, ["a", "b"]);
    assert_eq!(names(&cms, &ListParams::default()).await, ["c"]);
}
