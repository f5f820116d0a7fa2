//! Upgrading the chart from the versions released before it
//! (`deploy/helm/released/`, each packaged by `helm package` from the
//! commit that released it), through the real `helm` on the embedded API
//! server: the upgrade is accepted, and with the same values the daemon's
//! configuration and Pod template are unchanged, so the Pods are not rolled
//! and the plugins keep running.

use super::helm::{chart_file, client_of, helm, run_helm, stderr};
use super::process::{Running, repo, temp_dir};
use serde_json::Value;
use std::path::Path;

/// The chart versions released before this one, oldest first.
const RELEASED: [&str; 1] = ["deploy/helm/released/herald-0.1.0.tgz"];

/// `helm <verb> herald <chart> -f <values> …` in the namespace `herald`.
fn helm_chart_on(
    helm: &Path,
    kubeconfig: &Path,
    verb: &str,
    chart: &str,
    extra: &[&str],
) -> String {
    let values = chart_file("ci/ha-values.yaml");
    let mut args = vec![
        verb,
        "herald",
        chart,
        "--namespace",
        "herald",
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "-f",
        values.as_str(),
        // The embedded API server serves no policy/v1.
        "--set",
        "podDisruptionBudget.enabled=false",
    ];
    args.extend(extra);
    let output = run_helm(helm, &args);
    assert!(
        output.status.success(),
        "helm {args:?}: {}",
        stderr(&output)
    );
    String::from_utf8(output.stdout).unwrap()
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
        let stored = |kind: &str| -> Value {
            let value = match kind {
                "Deployment" => runtime
                    .block_on(
                        kube::Api::<k8s_openapi::api::apps::v1::Deployment>::namespaced(
                            client.clone(),
                            "herald",
                        )
                        .get("herald"),
                    )
                    .map(|d| serde_json::to_value(d).unwrap()),
                _ => runtime
                    .block_on(
                        kube::Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(
                            client.clone(),
                            "herald",
                        )
                        .get("herald-config"),
                    )
                    .map(|c| serde_json::to_value(c).unwrap()),
            };
            value.unwrap_or_else(|e| panic!("{released}: the {kind} is not stored: {e}"))
        };
        let installed = helm_chart_on(
            helm,
            &kubeconfig,
            "install",
            &previous,
            &["--create-namespace"],
        );
        assert!(
            installed.contains("STATUS: deployed"),
            "{released}: {installed}"
        );
        let (config, pods) = (stored("ConfigMap"), stored("Deployment"));

        let upgraded = helm_chart_on(helm, &kubeconfig, "upgrade", &chart, &[]);
        assert!(upgraded.contains("REVISION: 2"), "{released}: {upgraded}");
        let (config_now, pods_now) = (stored("ConfigMap"), stored("Deployment"));
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
        std::fs::remove_dir_all(work).unwrap();
    }
}
