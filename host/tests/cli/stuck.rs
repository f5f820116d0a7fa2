//! `herald run` with a plugin stuck in a host call: the daemon still
//! becomes ready, says which plugin is degraded and why, reloads other
//! plugins, and SIGTERM ends it within its grace period plus a bound. And
//! with no cluster configured, `herald run` refuses to start rather than
//! fall back to the embedded API server.

use super::process::{get, herald, temp_dir, wait_for_response};
use super::run::{sample, start};
use herald_test_artifacts as artifacts;
use std::time::Duration;

#[test]
fn a_plugin_stuck_on_its_initial_list_lets_the_daemon_become_ready_and_says_why() {
    let work = temp_dir("degraded");
    let plugins = work.join("plugins.d");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::copy(artifacts::BLOCKER, plugins.join("blocker.wasm")).unwrap();
    std::fs::copy(artifacts::POD_LIFECYCLE, plugins.join("pod-lifecycle.wasm")).unwrap();
    let config =
        "queue:\n  maxRetries: 0\nplugins:\n  blocker:\n    limits: {callDeadline: 200ms}\n";
    let mut herald = start(&plugins, config, &work.join("kubeconfig"));
    let address = herald.endpoints();
    herald.wait_for_log("listed pod=shop/");
    wait_for_response(&address, "/readyz", |code, _| code == 200);
    let (_, status) = get(&address, "/plugins");
    let status: serde_json::Value = serde_json::from_str(&status).unwrap();
    let blocker = status["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "blocker")
        .expect("the blocker runs");
    let degraded = blocker["degraded"]
        .as_str()
        .expect("the blocker is degraded");
    assert!(degraded.contains("deadline"), "{degraded}");
    let (_, metrics) = get(&address, "/metrics");
    assert_eq!(
        sample(&metrics, "herald_plugin_degraded{plugin=\"blocker\"}"),
        1.0
    );
    assert!(
        sample(
            &metrics,
            "herald_plugin_faults_total{plugin=\"blocker\",resource=\"configmaps\",kind=\"deadline\"}"
        ) >= 1.0
    );

    std::fs::remove_file(plugins.join("blocker.wasm")).unwrap();
    herald.wait_for_log_with(&["plugin unloaded", "\"plugin\":\"blocker\""]);
    std::fs::copy(artifacts::IMAGE_POLICY, plugins.join("image-policy.wasm")).unwrap();
    herald.wait_for_log_with(&["plugin loaded", "\"plugin\":\"image-policy\""]);
    herald.terminate();
    let (code, _) = herald.wait();
    assert_eq!(code, Some(0), "log:\n{}", herald.log.join("\n"));
}

#[test]
fn sigterm_ends_the_daemon_within_its_grace_period_while_a_plugin_sleeps_in_a_host_call() {
    let work = temp_dir("stuck-sigterm");
    let plugins = work.join("plugins.d");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::copy(artifacts::BLOCKER, plugins.join("blocker.wasm")).unwrap();
    std::fs::copy(artifacts::POD_LIFECYCLE, plugins.join("pod-lifecycle.wasm")).unwrap();
    // The blocker's calls may take two minutes: only the grace period and
    // the abandonment bound can end the daemon sooner.
    let config = "shutdown:\n  gracePeriod: 1s\nlimits:\n  max:\n    callDeadline: 120s\nplugins:\n  blocker:\n    limits: {callDeadline: 120s}\n";
    let mut herald = start(&plugins, config, &work.join("kubeconfig"));
    herald.wait_for_log_with(&["plugin loaded", "\"plugin\":\"blocker\""]);
    herald.wait_for_log("listed pod=shop/");
    // 1 s of grace plus 1 s for calls in flight; anything near the
    // blocker's 120 s deadline means the daemon waited on it.
    ends_within_grace_abandoning(herald, &["abandoned", "blocker"]);
}

#[test]
fn sigterm_ends_the_daemon_within_its_grace_period_while_a_plugin_is_still_loading() {
    let work = temp_dir("loading-sigterm");
    let plugins = work.join("plugins.d");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::copy(artifacts::POD_LIFECYCLE, plugins.join("pod-lifecycle.wasm")).unwrap();
    // sleepy-manifest's manifest() sleeps for an hour: loading it takes the
    // whole two-minute deadline, and the directory's pass with it.
    let config = "shutdown:\n  gracePeriod: 1s\nlimits:\n  max:\n    callDeadline: 120s\n  default:\n    callDeadline: 120s\n";
    let mut herald = start(&plugins, config, &work.join("kubeconfig"));
    let address = herald.endpoints();
    herald.wait_for_log("listed pod=shop/");
    let sleepy = plugins.join("sleepy.wasm");
    std::fs::copy(artifacts::SLEEPY_MANIFEST, &sleepy).unwrap();
    let sleepy = sleepy.canonicalize().unwrap().display().to_string();
    wait_for_response(&address, "/plugins", |_, body| {
        serde_json::from_str::<serde_json::Value>(body)
            .is_ok_and(|status| status["files"][&sleepy]["state"] == "loading")
    });
    // Waiting for the load would take about 120 s.
    ends_within_grace_abandoning(herald, &["abandoned a step", "loading plugins"]);
}

/// Sends SIGTERM to `herald` (its grace period 1 s) and checks that it
/// exits cleanly well before its plugins' 120 s deadlines, with a log
/// line holding each of `abandoned` saying what it gave up on.
fn ends_within_grace_abandoning(mut herald: super::process::Running, abandoned: &[&str]) {
    herald.terminate();
    let (code, took) = herald.wait();
    let log = herald.log.join("\n");
    assert_eq!(code, Some(0), "log:\n{log}");
    assert!(
        took < Duration::from_secs(20),
        "SIGTERM took {took:?}:\n{log}"
    );
    assert!(
        herald
            .log
            .iter()
            .any(|l| abandoned.iter().all(|text| l.contains(text))),
        "no line says {abandoned:?}:\n{log}"
    );
}

#[test]
fn with_no_cluster_configured_herald_run_exits_naming_what_it_looked_for() {
    let work = temp_dir("no-source");
    let plugins = work.join("plugins.d");
    std::fs::create_dir_all(&plugins).unwrap();
    let output = herald()
        .args(["run", "--plugins", plugins.to_str().unwrap()])
        .args(["--listen", "127.0.0.1:0"])
        .env("HOME", &work)
        .env_remove("KUBECONFIG")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("KUBERNETES_SERVICE_PORT")
        .output()
        .unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    for needed in [
        "no cluster configuration found",
        "KUBECONFIG",
        "--in-cluster",
        "--embedded",
    ] {
        assert!(stderr.contains(needed), "{needed:?} missing from {stderr}");
    }
    assert!(!stderr.contains("EMBEDDED API server"), "{stderr}");
}
