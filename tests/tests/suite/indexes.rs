//! Cache indexes declared by plugins (client-go's indexers), end to end:
//! `rollout-watch` finds a Deployment's ReplicaSets through its owner index,
//! kept by the ReplicaSet informer fed by the API server.

use super::cluster::TestCluster;
use super::recording::informers;
use herald::daemon::Daemon;
use herald::dispatch::RetryPolicy;
use herald::plugin::LoadOptions;
use herald_tests::{PATIENCE, artifacts, eventually, load_with};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

fn deployment(name: &str, revision: u32) -> Deployment {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "annotations": {"deployment.kubernetes.io/revision": revision.to_string()}},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": "nginx:1.27"}]}
            }
        }
    }))
    .unwrap()
}

/// A ReplicaSet of revision `revision` owned by the object `owner` (a UID).
fn replica_set(name: &str, app: &str, owner: &str, revision: u32, replicas: i32) -> ReplicaSet {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {
            "name": name,
            "labels": {"app": app},
            "annotations": {"deployment.kubernetes.io/revision": revision.to_string()},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": app,
                                 "uid": owner, "controller": true}]
        },
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": app}},
            "template": {
                "metadata": {"labels": {"app": app}},
                "spec": {"containers": [{"name": "main", "image": "nginx:1.27"}]}
            }
        }
    }))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollout_watch_finds_a_deployments_replica_sets_through_its_owner_index() {
    let cluster = TestCluster::start().await;
    let daemon = Daemon::new(
        Arc::new(informers(cluster.client.clone())),
        RetryPolicy::default(),
    );
    let (plugin, logs) = load_with(artifacts::ROLLOUT_WATCH, LoadOptions::default());
    daemon.start(plugin).await.unwrap();
    eventually("the daemon is ready", PATIENCE, async || daemon.ready()).await;
    let namespace = &cluster.namespace;
    let deployments: Api<Deployment> = Api::namespaced(cluster.client.clone(), namespace);
    let sets: Api<ReplicaSet> = Api::namespaced(cluster.client.clone(), namespace);
    let create = PostParams::default();

    let web = deployments
        .create(&create, &deployment("web", 2))
        .await
        .unwrap();
    let api = deployments
        .create(&create, &deployment("api", 1))
        .await
        .unwrap();
    let (web_uid, api_uid) = (web.metadata.uid.unwrap(), api.metadata.uid.unwrap());
    for set in [
        replica_set("web-1", "web", &web_uid, 1, 2),
        replica_set("web-2", "web", &web_uid, 2, 3),
        replica_set("api-1", "api", &api_uid, 1, 3),
    ] {
        sets.create(&create, &set).await.unwrap();
    }
    let delivered = || {
        daemon
            .listeners("rollout-watch")
            .iter()
            .map(|l| l.stats.delivered.load(Ordering::SeqCst))
            .sum::<u64>()
    };
    eventually(
        "both Deployments and the three ReplicaSets are delivered",
        PATIENCE,
        async || delivered() == 5,
    )
    .await;

    let status = json!({"status": {"observedGeneration": 1, "replicas": 3, "updatedReplicas": 1,
                                   "readyReplicas": 1, "availableReplicas": 1}});
    deployments
        .patch_status("web", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
    let expected = format!(
        "progressed deployment={namespace}/web updated=1/3 ready=1 available=1 new=web-2:0/3 old=web-1:0/2"
    );
    let seen = std::sync::Mutex::new(Vec::<String>::new());
    eventually(
        "rollout-watch reports web's own ReplicaSets",
        PATIENCE,
        async || {
            let mut seen = seen.lock().unwrap();
            seen.extend(logs.take().into_iter().map(|l| l.message));
            seen.iter().any(|m| m.starts_with("progressed "))
        },
    )
    .await;
    let progressed: Vec<String> = seen
        .into_inner()
        .unwrap()
        .into_iter()
        .filter(|m| m.starts_with("progressed "))
        .collect();
    assert_eq!(progressed, [expected], "found by owner UID, api-1 left out");
    daemon.shutdown(Instant::now());
    cluster.cleanup().await;
}
