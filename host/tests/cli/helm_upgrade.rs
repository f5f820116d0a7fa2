//! Upgrading the chart from the versions released before it
//! (`deploy/helm/released/`, each packaged by `helm package` from the
//! commit that released it), through the real `helm` on the embedded API
//! server: the upgrade is accepted, and with the same values the daemon's
//! configuration and Pod template are unchanged, so the Pods are not rolled
//! and the plugins keep running.

use super::helm::{client_of, helm, helm_chart_on_cluster};
use super::process::{Running, repo, temp_dir};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::Value;

/// The chart versions released before this one, oldest first.
const RELEASED: [&str; 1] = ["deploy/helm/released/herald-0.1.0.tgz"];

/// The values both versions are installed with: the embedded API server
/// serves no policy/v1, hence no budget.
const VALUES: &str = "ci/ha-values.yaml";
const NO_BUDGET: [&str; 2] = ["--set", "podDisruptionBudget.enabled=false"];

/// The stored object `name` of kind `K` in the namespace `herald`, as JSON.
fn stored<K>(runtime: &tokio::runtime::Runtime, client: &kube::Client, name: &str) -> Value
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
    K::DynamicType: Default,
{
    let api = kube::Api::<K>::namespaced(client.clone(), "herald");
    let object = runtime
        .block_on(api.get(name))
        .unwrap_or_else(|e| panic!("{name} is not stored: {e}"));
    serde_json::to_value(object).unwrap()
}

#[test]
fn an_upgrade_from_each_released_version_keeps_the_plugins_running() {
    let Some(helm) = helm() else { return };
    let chart = super::helm::chart().display().to_string();
    for released in RELEASED {
        let previous = repo().join(released).display().to_string();
        let work = temp_dir("helm-upgrade");
        let kubeconfig = work.join("kubeconfig");
        let mut server = Running::apiserver(&kubeconfig);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let client = client_of(&runtime, &kubeconfig);
        let now = || {
            (
                stored::<ConfigMap>(&runtime, &client, "herald-config"),
                stored::<Deployment>(&runtime, &client, "herald"),
            )
        };
        let mut install = NO_BUDGET.to_vec();
        install.push("--create-namespace");
        let installed =
            helm_chart_on_cluster(helm, &kubeconfig, "install", &previous, VALUES, &install);
        assert!(
            installed.contains("STATUS: deployed"),
            "{released}: {installed}"
        );
        let (config, pods) = now();

        let upgraded =
            helm_chart_on_cluster(helm, &kubeconfig, "upgrade", &chart, VALUES, &NO_BUDGET);
        assert!(upgraded.contains("REVISION: 2"), "{released}: {upgraded}");
        let (config_now, pods_now) = now();
        // The same herald.yaml, which the daemon's loader accepts: the same
        // plugins with the same grants.
        let text = config_now["data"]["herald.yaml"].as_str().unwrap();
        assert_eq!(
            config["data"]["herald.yaml"], config_now["data"]["herald.yaml"],
            "{released}: the upgrade changed herald.yaml"
        );
        herald::config::Config::parse(text, "herald.yaml after the upgrade")
            .unwrap_or_else(|e| panic!("{released}: {e}"));
        // The same Pod template (checksum included): nothing rolls.
        assert_eq!(
            pods["spec"]["template"], pods_now["spec"]["template"],
            "{released}: the upgrade changed the Pod template, which rolls the Pods"
        );
        assert_eq!(
            pods["metadata"]["generation"],
            pods_now["metadata"]["generation"]
        );
        server.terminate();
        let (code, _) = server.wait();
        assert_eq!(code, Some(0));
    }
}
