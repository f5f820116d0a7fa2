//! `herald demo`: the embedded cluster, the example plugins and the churn,
//! every plugin with something to say, plugins acting on the cluster (one
//! for real, one in dry-run), and a clean exit.

use super::process::{herald, temp_dir};
use herald_test_artifacts as artifacts;

#[test]
fn the_demo_shows_every_example_plugin_reacting_and_exits_cleanly() {
    let plugins = temp_dir("demo");
    for (name, path) in [
        ("pod-lifecycle", artifacts::POD_LIFECYCLE),
        ("image-policy", artifacts::IMAGE_POLICY),
        ("rollout-watch", artifacts::ROLLOUT_WATCH),
        ("namespace-defaults", artifacts::NAMESPACE_DEFAULTS),
    ] {
        std::fs::copy(path, plugins.join(format!("{name}.wasm"))).unwrap();
    }
    let output = herald()
        .args([
            "demo",
            "--duration",
            "6s",
            "--churn-interval",
            "100ms",
            "--listen",
            "127.0.0.1:0",
            "--plugins",
            plugins.to_str().unwrap(),
        ])
        .output()
        .expect("running the demo");
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("Herald demo: 4 plugin(s) running"),
        "{stdout}"
    );
    assert!(stdout.contains("kubectl --kubeconfig "), "{stdout}");
    assert!(stdout.contains("/metrics"), "{stdout}");
    for plugin in [
        "pod-lifecycle",
        "image-policy",
        "rollout-watch",
        "namespace-defaults",
    ] {
        assert!(
            stdout
                .lines()
                .any(|l| l.trim_start().starts_with(&format!("{plugin} │ "))),
            "{plugin} said nothing:\n{stdout}"
        );
    }
    assert!(
        stdout.contains("created pod="),
        "the churn creates pods and pod-lifecycle reports them:\n{stdout}"
    );
    assert!(
        stdout.contains("applied kind=NetworkPolicy object=shop/herald-default-deny"),
        "namespace-defaults applies its NetworkPolicy to the seeded namespaces:\n{stdout}"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.lines().any(|l| l.contains("herald::audit")
            && l.contains("image-policy")
            && l.contains("dry-run")
            && l.contains("would change")),
        "image-policy's labels are sent in dry-run and reported:\n{stderr}"
    );
    std::fs::remove_dir_all(plugins).unwrap();
}
