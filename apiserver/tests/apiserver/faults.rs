//! Fault injection, restarts, persistence and seeding.

use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, PostParams};

use crate::common::{TempDir, client, config_map, server, server_with, status};

#[tokio::test]
async fn injected_failures_answer_the_next_requests_with_500() {
    let server = server().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client(&server));
    cms.create(&PostParams::default(), &config_map("a", &[], "1"))
        .await
        .unwrap();
    server.faults().fail_next_requests(2);
    for _ in 0..2 {
        let err = status(cms.get("a").await.unwrap_err());
        assert_eq!((err.code, err.reason.as_str()), (500, "InternalError"));
    }
    assert_eq!(cms.get("a").await.unwrap().name_any(), "a");
}

#[tokio::test]
async fn injected_latency_delays_every_response() {
    let server = server().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client(&server));
    server.faults().set_latency(Duration::from_millis(300));
    let started = Instant::now();
    assert_eq!(status(cms.get("missing").await.unwrap_err()).code, 404);
    assert!(started.elapsed() >= Duration::from_millis(300));
    server.faults().set_latency(Duration::ZERO);
}

#[tokio::test]
async fn restart_on_the_same_port_keeps_objects_and_versions() {
    let server = server().await;
    let c = client(&server);
    let cms: Api<ConfigMap> = Api::default_namespaced(c.clone());
    cms.create(&PostParams::default(), &config_map("kept", &[], "1"))
        .await
        .unwrap();
    let rv = server.current_resource_version();
    let addr = server.addr();
    let server = server.restart(None).await.unwrap();
    assert_eq!(server.addr(), addr);
    assert_eq!(server.current_resource_version(), rv);
    assert_eq!(cms.get("kept").await.unwrap().data.unwrap()["value"], "1");
    let moved = server
        .restart(Some("127.0.0.1:0".parse().unwrap()))
        .await
        .unwrap();
    let cms: Api<ConfigMap> = Api::default_namespaced(client(&moved));
    assert_eq!(cms.get("kept").await.unwrap().name_any(), "kept");
    moved.shutdown().await;
}

#[tokio::test]
async fn persisted_state_survives_a_full_restart() {
    let dir = TempDir::new("persist");
    let first = server_with(|c| c.persist_dir = Some(dir.path().to_path_buf())).await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client(&first));
    let a = cms
        .create(&PostParams::default(), &config_map("a", &[("k", "v")], "1"))
        .await
        .unwrap();
    cms.create(&PostParams::default(), &config_map("b", &[], "1"))
        .await
        .unwrap();
    cms.delete("b", &DeleteParams::default()).await.unwrap();
    let rv = first.current_resource_version();
    first.shutdown().await;
    assert!(dir.path().join(herald_apiserver::SNAPSHOT_FILE).exists());

    let second = server_with(|c| c.persist_dir = Some(dir.path().to_path_buf())).await;
    assert_eq!(second.current_resource_version(), rv);
    let cms: Api<ConfigMap> = Api::default_namespaced(client(&second));
    let restored = cms.get("a").await.unwrap();
    assert_eq!(restored.metadata.uid, a.metadata.uid);
    assert_eq!(
        restored.metadata.resource_version,
        a.metadata.resource_version
    );
    assert_eq!(status(cms.get("b").await.unwrap_err()).code, 404);
    let next = cms
        .create(&PostParams::default(), &config_map("c", &[], "1"))
        .await
        .unwrap();
    assert_eq!(next.metadata.resource_version, Some((rv + 1).to_string()));
    second.shutdown().await;
}

fn example_cluster() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/cluster")
}

#[tokio::test]
async fn the_example_cluster_seeds_namespaces_workloads_and_nodes() {
    let server = server_with(|c| c.seed_dirs = vec![example_cluster()]).await;
    let c = client(&server);
    let pods: Api<Pod> = Api::namespaced(c.clone(), "shop");
    let web = pods.get("web-6b8f7c9d4f-x7k2p").await.unwrap();
    assert_eq!(web.status.unwrap().phase.as_deref(), Some("Running"));
    let rs_uid = &web.metadata.owner_references.unwrap()[0].uid;
    let rss: Api<ReplicaSet> = Api::namespaced(c.clone(), "shop");
    assert_eq!(
        rss.get("web-6b8f7c9d4f")
            .await
            .unwrap()
            .metadata
            .uid
            .as_ref(),
        Some(rs_uid)
    );
    let nodes: Api<Node> = Api::all(c.clone());
    assert_eq!(
        nodes.list(&Default::default()).await.unwrap().items.len(),
        2
    );
    let all: Api<Pod> = Api::all(c);
    let images: Vec<String> = all
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .iter()
        .flat_map(|p| p.spec.clone().unwrap().containers)
        .filter_map(|c| c.image)
        .collect();
    for image in [
        "docker.io/library/nginx:1.27",
        "ghcr.io/acme/cart:2.3.1",
        "redis:latest",
        "busybox",
    ] {
        assert!(
            images.iter().any(|i| i == image),
            "{image} missing from {images:?}"
        );
    }
    assert!(images.iter().any(|i| i.starts_with("quay.io/")));
}

#[tokio::test]
async fn seeding_rejects_objects_in_undeclared_namespaces() {
    let dir = TempDir::new("seed");
    std::fs::write(
        dir.path().join("bad.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: nowhere}\n",
    )
    .unwrap();
    let err = herald_apiserver::start(herald_apiserver::ApiServerConfig {
        seed_dirs: vec![dir.path().to_path_buf()],
        ..Default::default()
    })
    .await
    .unwrap_err();
    assert!(err.to_string().contains("nowhere"), "{err}");
}
