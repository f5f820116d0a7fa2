//! A cluster for the informer tests: the embedded API server by default, or
//! the real cluster `HERALD_TEST_KUBECONFIG` points to (each test then works
//! in a namespace of its own and deletes it when done).

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::json;
use std::sync::atomic::{AtomicU64, Ordering};

/// A connection plus the namespace a test owns.
pub struct TestCluster {
    /// The client (real kube-rs, real HTTP).
    pub client: kube::Client,
    /// A client that never retries on its own, as plugins' calls use.
    pub writer: kube::Client,
    /// The embedded server, when not on a real cluster.
    pub server: Option<herald_apiserver::ApiServer>,
    /// This test's namespace.
    pub namespace: String,
}

impl TestCluster {
    /// Connects and creates a fresh namespace.
    pub async fn start() -> TestCluster {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let (config, server) = match std::env::var_os("HERALD_TEST_KUBECONFIG") {
            Some(path) => {
                let kubeconfig = kube::config::Kubeconfig::read_from(path)
                    .expect("reading HERALD_TEST_KUBECONFIG");
                let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
                    .await
                    .expect("kubeconfig");
                (config, None)
            }
            None => {
                let server = herald_apiserver::start(herald_apiserver::ApiServerConfig::default())
                    .await
                    .expect("embedded API server");
                let config = kube::Config::new(server.url().parse().expect("server URL"));
                (config, Some(server))
            }
        };
        let writer = herald::capability::kube::writer_config(config.clone());
        let writer = kube::Client::try_from(writer).expect("client");
        let client = kube::Client::try_from(config).expect("client");
        let namespace = format!(
            "herald-test-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let ns: Namespace = serde_json::from_value(
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}),
        )
        .unwrap();
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &ns)
            .await
            .expect("creating the test namespace");
        if server.is_none() {
            default_service_account(&client, &namespace).await;
        }
        TestCluster {
            client,
            writer,
            server,
            namespace,
        }
    }

    /// A kubeconfig for kubectl: the embedded server's, written into `dir`,
    /// or the real cluster's.
    pub fn kubeconfig(&self, dir: &std::path::Path) -> std::path::PathBuf {
        match &self.server {
            Some(server) => {
                let path = dir.join("kubeconfig");
                server.write_kubeconfig(&path).unwrap();
                path
            }
            None => std::env::var_os("HERALD_TEST_KUBECONFIG").unwrap().into(),
        }
    }

    /// The fault injector; `None` on a real cluster (such tests skip).
    pub fn faults(&self) -> Option<herald_apiserver::Faults> {
        self.server.as_ref().map(|s| s.faults())
    }

    /// Pods of this test's namespace.
    pub fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    /// ConfigMaps of this test's namespace: the informer tests watch them,
    /// since no controller of a real cluster changes them behind the test's back.
    pub fn config_maps(&self) -> Api<ConfigMap> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    /// Creates a ConfigMap with `data.value = value` and label `app=<app>`.
    pub async fn create_config_map(&self, name: &str, app: &str, value: &str) -> ConfigMap {
        let cm: ConfigMap = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "labels": {"app": app}},
            "data": {"value": value}
        }))
        .unwrap();
        self.config_maps()
            .create(&PostParams::default(), &cm)
            .await
            .expect("creating a ConfigMap")
    }

    /// Sets `data.value` of a ConfigMap; returns its new resourceVersion.
    pub async fn update_config_map(&self, name: &str, value: &str) -> String {
        let patch = kube::api::Patch::Merge(json!({"data": {"value": value}}));
        let cm = self
            .config_maps()
            .patch(name, &kube::api::PatchParams::default(), &patch)
            .await
            .expect("patching a ConfigMap");
        cm.metadata.resource_version.unwrap_or_default()
    }

    /// Deletes a ConfigMap.
    pub async fn delete_config_map(&self, name: &str) {
        self.config_maps()
            .delete(name, &DeleteParams::default())
            .await
            .expect("deleting a ConfigMap");
    }

    /// Creates a pod named `name` with label `app=<app>`.
    pub async fn create_pod(&self, name: &str, app: &str) -> Pod {
        let pod: Pod = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": app}},
            "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}]}
        }))
        .unwrap();
        self.pods()
            .create(&PostParams::default(), &pod)
            .await
            .expect("creating a pod")
    }

    /// A fresh plugin directory for this test, named after `what`, holding
    /// copies of `plugins` (each a built component, as `name.wasm`).
    pub fn plugin_dir(&self, what: &str, plugins: &[(&str, &str)]) -> herald::scratch::ScratchDir {
        let dir = herald::scratch::ScratchDir::new(what).unwrap();
        for (name, artifact) in plugins {
            std::fs::copy(artifact, dir.join(format!("{name}.wasm"))).unwrap();
        }
        dir
    }

    /// A whole daemon on this cluster with `config`, its endpoints on a
    /// loopback port, its plugins logging into `sink`.
    pub async fn service(
        &self,
        config: herald::config::Config,
        sink: std::sync::Arc<dyn herald::capability::log::LogSink>,
    ) -> herald::service::Service {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        herald::service::Service::start(
            std::sync::Arc::new(config),
            herald::source::Clients {
                client: self.client.clone(),
                writer: self.writer.clone(),
            },
            sink,
            listener,
            herald::plugin::Compiler::InProcess,
        )
        .await
        .expect("starting the daemon")
    }

    /// Deletes this test's namespace (on a real cluster).
    pub async fn cleanup(self) {
        if self.server.is_none() {
            let _ = Api::<Namespace>::all(self.client.clone())
                .delete(&self.namespace, &DeleteParams::default())
                .await;
        }
    }
}

/// Makes `namespace`'s `default` ServiceAccount, as a real cluster's
/// controller-manager would: without it a real API server's ServiceAccount
/// admission refuses every Pod, and a bare kube-apiserver (as
/// `bench/kube-apiserver` starts one) runs no controller-manager.
async fn default_service_account(client: &kube::Client, namespace: &str) {
    let account: k8s_openapi::api::core::v1::ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": "default"}})).unwrap();
    match Api::namespaced(client.clone(), namespace)
        .create(&PostParams::default(), &account)
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 409 => {}
        Err(other) => panic!("creating {namespace}'s default ServiceAccount: {other}"),
    }
}
