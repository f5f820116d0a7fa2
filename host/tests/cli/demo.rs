//! `herald demo`: the embedded cluster, the example plugins and the churn,
//! every plugin with something to say, plugins acting on the cluster (one
//! for real, one in dry-run), one plugin acting on two clusters, and a
//! clean exit.

use super::process::{get, herald, temp_dir};
use herald_test_artifacts as artifacts;

#[test]
fn the_demo_shows_every_example_plugin_reacting_and_exits_cleanly() {
    let plugins = temp_dir("demo");
    for (name, path) in [
        ("pod-lifecycle", artifacts::POD_LIFECYCLE),
        ("image-policy", artifacts::IMAGE_POLICY),
        ("rollout-watch", artifacts::ROLLOUT_WATCH),
        ("namespace-defaults", artifacts::NAMESPACE_DEFAULTS),
        ("config-mirror", artifacts::CONFIG_MIRROR),
        ("fleet-fanout", artifacts::FLEET_FANOUT),
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
        "{:?}\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("Herald demo: 6 plugin(s) running"),
        "{stdout}"
    );
    assert!(stdout.contains("kubectl --kubeconfig "), "{stdout}");
    assert!(stdout.contains("/metrics"), "{stdout}");
    for plugin in [
        "pod-lifecycle",
        "image-policy",
        "rollout-watch",
        "namespace-defaults",
        "config-mirror",
        "fleet-fanout",
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
    assert!(
        stdout.contains("config-mirror │ copied shop/web-config into payments"),
        "config-mirror reconciles the seeded ConfigMirror with the grants the demo gives it:\n{stdout}"
    );
    for line in [
        "fleet-fanout │ [east] copied shop/fleet-settings from east to west",
        "fleet-fanout │ [west] copied shop/fleet-routes from west to east",
    ] {
        assert!(
            stdout.contains(line),
            "one plugin acts on both clusters, each line naming its own: {line:?} in\n{stdout}"
        );
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.lines().any(|l| l.contains("herald::audit")
            && l.contains("image-policy")
            && l.contains("dry-run")
            && l.contains("would change")),
        "image-policy's labels are sent in dry-run and reported:\n{stderr}"
    );
}

/// Whether process `pid` ignores SIGPIPE (signal 13): the `SigIgn` mask of
/// its `/proc/<pid>/status`.
fn ignores_sigpipe(pid: u32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let mask = status
        .lines()
        .find_map(|line| line.strip_prefix("SigIgn:"))
        .map(|hex| u64::from_str_radix(hex.trim(), 16).unwrap())
        .expect("a SigIgn line");
    mask & (1 << (13 - 1)) != 0
}

/// Runs kubectl with `kubeconfig` and `args`: (succeeded, stdout, stderr).
fn kubectl(kubeconfig: &str, args: &[&str]) -> (bool, String, String) {
    let output = std::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("this test needs kubectl on the PATH ({e}): install it"));
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Looks with `probe` every 50 ms until it returns `Some`, for at most 30 s.
fn within_30s<T>(what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        if let Some(found) = probe() {
            return found;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{what} never happened"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn the_demo_refuses_a_bad_pod_at_the_door_fills_in_a_default_and_judges_existing_pods() {
    use std::io::BufRead as _;
    let plugins = temp_dir("demo-admission");
    for (name, path) in [
        ("image-policy", artifacts::IMAGE_POLICY),
        ("namespace-defaults", artifacts::NAMESPACE_DEFAULTS),
    ] {
        std::fs::copy(path, plugins.join(format!("{name}.wasm"))).unwrap();
    }
    let mut demo = herald()
        .args([
            "demo",
            "--duration",
            "120s",
            "--churn-interval",
            "1h",
            "--listen",
            "127.0.0.1:0",
            "--plugins",
            plugins.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("starting the demo");
    // The banner names the kubeconfig and the endpoints.
    let mut lines = std::io::BufReader::new(demo.stdout.take().unwrap()).lines();
    let (mut kubeconfig, mut address) = (None, None);
    for line in lines.by_ref() {
        let line = line.unwrap();
        if let Some(rest) = line
            .trim()
            .strip_prefix("kubectl       kubectl --kubeconfig ")
        {
            kubeconfig = rest.split_whitespace().next().map(str::to_owned);
        }
        if let Some(rest) = line.trim().strip_prefix("endpoints     http://") {
            address = rest.split('/').next().map(str::to_owned);
        }
        if line.trim().starts_with("stop ") {
            break;
        }
    }
    let kubeconfig = kubeconfig.expect("the banner names the kubeconfig");
    let address = address.expect("the banner names the endpoints");
    // A server ignores SIGPIPE: a peer hanging up on a socket write
    // (hyper's writev) must fail that write, not end the demo.
    assert!(
        ignores_sigpipe(demo.id()),
        "the demo would be ended by SIGPIPE"
    );
    // Keep reading the plugins' output so the demo never blocks on it.
    let reader = std::thread::spawn(move || lines.map_while(Result::ok).collect::<Vec<_>>());

    // At the door: refused with image-policy's own message.
    let (created, _, stderr) = kubectl(
        &kubeconfig,
        &["run", "bad", "--image=evil.example.com/x:1", "-n", "shop"],
    );
    assert!(!created, "the Pod was admitted");
    assert!(
        stderr.contains("denied the request")
            && stderr.contains(
                "image-policy: container bad: image evil.example.com/x:1 comes from registry evil.example.com"
            ),
        "{stderr}"
    );
    let (exists, _, _) = kubectl(&kubeconfig, &["get", "pod", "bad", "-n", "shop"]);
    assert!(!exists, "a refused Pod is not stored");
    // A default filled in by namespace-defaults' mutating webhook.
    let (created, _, stderr) = kubectl(&kubeconfig, &["create", "namespace", "team-b"]);
    assert!(created, "{stderr}");
    let (_, label, _) = kubectl(
        &kubeconfig,
        &[
            "get",
            "namespace",
            "team-b",
            "-o",
            "jsonpath={.metadata.labels.cost-center}",
        ],
    );
    assert_eq!(label, "unassigned");
    // The Pods already there, judged by the same policy.
    let violators = within_30s("image-policy reports the seeded Pods' bad images", || {
        let (_, body) = get(&address, "/plugins");
        let report: serde_json::Value = serde_json::from_str(&body).ok()?;
        let policy = report["plugins"]
            .as_array()?
            .iter()
            .find(|p| p["name"] == "image-policy")?;
        let names: Vec<String> = policy["scan"]["violations"]
            .as_array()?
            .iter()
            .map(|v| {
                format!(
                    "{}/{}",
                    v["namespace"].as_str().unwrap_or_default(),
                    v["name"].as_str().unwrap_or_default()
                )
            })
            .collect();
        names
            .iter()
            .any(|n| n.starts_with("payments/"))
            .then_some(names)
    });
    assert!(
        violators.iter().all(|n| n != "shop/bad"),
        "a refused Pod never exists to be judged: {violators:?}"
    );
    // A clean stop on Ctrl-C.
    let interrupted = std::process::Command::new("kill")
        .args(["-INT", &demo.id().to_string()])
        .status()
        .unwrap();
    assert!(interrupted.success());
    let status = demo.wait().unwrap();
    let output = reader.join().unwrap();
    assert!(status.success(), "{status}: {output:?}");
}
