//! `herald plugin rbac` for a daemon watching several clusters: one
//! ClusterRole per cluster, each for the plugins that run there.

use super::process::{herald, temp_dir};
use herald_test_artifacts as artifacts;

#[test]
fn plugin_rbac_prints_a_cluster_role_per_cluster_for_the_plugins_running_there() {
    let dir = temp_dir("rbac-clusters");
    let config = dir.join("herald.yaml");
    std::fs::write(
        &config,
        "source:\n  name: east\nclusters:\n  - name: west\n    kind: kubeconfig\n    kubeconfig: /nonexistent\n    context: w\nplugins:\n  fleet-fanout:\n    clusters: [\"*\"]\n",
    )
    .unwrap();
    let output = herald()
        .args(["plugin", "rbac", "--config"])
        .arg(&config)
        .args([artifacts::FLEET_FANOUT, artifacts::POD_LIFECYCLE])
        .output()
        .expect("running herald plugin rbac");
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let roles: Vec<&str> = stdout.split("\n---\n").collect();
    assert_eq!(roles.len(), 2, "one role per cluster:\n{stdout}");
    assert!(
        roles[0].starts_with(
            "# Least-privilege ClusterRole for cluster east, where the plugins fleet-fanout, \
             pod-lifecycle run"
        ) && roles[0].contains("- configmaps")
            && roles[0].contains("- pods"),
        "{}",
        roles[0]
    );
    assert!(
        roles[1].starts_with(
            "# Least-privilege ClusterRole for cluster west, where the plugins fleet-fanout run"
        ) && roles[1].contains("- configmaps")
            && !roles[1].contains("- pods"),
        "pod-lifecycle runs on the default cluster alone:\n{}",
        roles[1]
    );
    // One cluster: one role, as before.
    let single = herald()
        .args(["plugin", "rbac", artifacts::POD_LIFECYCLE])
        .output()
        .unwrap();
    let single = String::from_utf8(single.stdout).unwrap();
    assert!(
        !single.contains("\n---\n")
            && single.starts_with("# Least-privilege ClusterRole for the plugins pod-lifecycle,"),
        "{single}"
    );
}
