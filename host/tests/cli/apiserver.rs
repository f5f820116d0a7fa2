//! `herald apiserver`: the embedded API server alone, driven with kubectl
//! as a person would (skipped, saying so, where kubectl is not installed).

use super::process::{Running, repo, temp_dir};
use std::process::Command;

fn kubectl_available() -> bool {
    Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn kubectl_applies_the_example_cluster_to_herald_apiserver_and_lists_its_pods() {
    if !kubectl_available() {
        eprintln!("skipped: kubectl is not installed");
        return;
    }
    let work = temp_dir("apiserver");
    let kubeconfig = work.join("kubeconfig");
    let mut server = Running::start(&[
        "apiserver",
        "--listen",
        "127.0.0.1:0",
        "--kubeconfig-out",
        kubeconfig.to_str().unwrap(),
    ]);
    server.wait_for_log("kubectl --kubeconfig");
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
    std::fs::remove_dir_all(work).unwrap();
}
