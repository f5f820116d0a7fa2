//! `herald apiserver`: the embedded API server alone, driven with kubectl
//! as a person would (skipped, saying so, where kubectl is not installed;
//! a failure instead where `CI` is set).

use super::process::{Running, repo, temp_dir};
use std::process::Command;

fn kubectl_available() -> bool {
    let found = Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .is_ok_and(|o| o.status.success());
    // CI has kubectl: there a missing one is a failure, never a skip.
    assert!(
        found || std::env::var_os("CI").is_none(),
        "kubectl is not on PATH, and CI is set: the kubectl tests must run in CI"
    );
    found
}

#[test]
fn kubectl_applies_the_example_cluster_to_herald_apiserver_and_lists_its_pods() {
    if !kubectl_available() {
        eprintln!("skipped: kubectl is not installed");
        return;
    }
    let work = temp_dir("apiserver");
    let kubeconfig = work.join("kubeconfig");
    let mut server = Running::apiserver(&kubeconfig);
    let kubectl = |args: &[&str]| {
        let output = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(args)
            .output()
            .expect("running kubectl");
        assert!(
            output.status.success(),
            "kubectl {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    };
    let cluster = repo().join("examples/cluster");
    kubectl(&["apply", "-f", cluster.to_str().unwrap()]);
    let pods = kubectl(&["get", "pods", "-A", "--no-headers"]);
    assert!(pods.lines().count() >= 5, "{pods}");
    assert!(pods.lines().any(|l| l.starts_with("shop ")), "{pods}");
    assert!(pods.lines().any(|l| l.starts_with("payments ")), "{pods}");
    server.terminate();
    let (code, _) = server.wait();
    assert_eq!(code, Some(0));
}

#[test]
fn the_churn_generator_keeps_changing_the_seeded_cluster() {
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::{Api, ListParams};
    let work = temp_dir("apiserver-churn");
    let kubeconfig = work.join("kubeconfig");
    let cluster = repo().join("examples/cluster");
    let mut server = Running::start(&[
        "apiserver",
        "--seed",
        cluster.to_str().unwrap(),
        "--kubeconfig-out",
        kubeconfig.to_str().unwrap(),
        "--churn-interval",
        "5ms",
    ]);
    server.wait_for_log("churn         one change every 5ms");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let created = runtime.block_on(async {
        let kubeconfig = kube::config::Kubeconfig::read_from(&kubeconfig).unwrap();
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .unwrap();
        let pods: Api<Pod> = Api::all(kube::Client::try_from(config).unwrap());
        let deadline = std::time::Instant::now() + super::process::PATIENCE;
        loop {
            let churned = pods
                .list(&ListParams::default().labels("demo=churn"))
                .await
                .unwrap();
            if !churned.items.is_empty() {
                return churned.items;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the churn generator created no Pod"
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    });
    let namespace = created[0].metadata.namespace.as_deref().unwrap();
    assert!(["shop", "payments"].contains(&namespace), "{namespace}");
    server.terminate();
    let (code, _) = server.wait();
    assert_eq!(code, Some(0));
}
