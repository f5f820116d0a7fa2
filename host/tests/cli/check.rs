//! `herald plugin check`: every example prints its manifest; every kind of
//! broken file gets a one-line error naming the file and the problem.

use super::process::{run, temp_dir};
use herald_test_artifacts as artifacts;
use std::path::Path;

/// Runs `herald plugin check` on `file` with `extra` arguments.
fn check(file: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["plugin", "check", file.to_str().unwrap()];
    args.extend(extra);
    run(&args)
}

#[test]
fn each_example_plugin_passes_and_prints_its_manifest() {
    for (name, path, kinds) in [
        ("pod-lifecycle", artifacts::POD_LIFECYCLE, vec!["Pod"]),
        ("image-policy", artifacts::IMAGE_POLICY, vec!["Pod"]),
        (
            "rollout-watch",
            artifacts::ROLLOUT_WATCH,
            vec!["Deployment", "ReplicaSet"],
        ),
    ] {
        let json = check(Path::new(path), &["--output", "json"]);
        assert!(json.status.success(), "{name}: {json:?}");
        let report: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
        assert_eq!(report["manifest"]["name"], name);
        assert_eq!(report["world"], "herald:plugin/plugin@0.7.0");
        let subscribed: Vec<&str> = report["manifest"]["subscriptions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["kind"]["kind"].as_str().unwrap())
            .collect();
        assert_eq!(subscribed, kinds, "{name}");
        // Each subscription is a read, allowed by the default read policy.
        let reads: Vec<(&str, &str)> = report["reads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|read| {
                let kind = read["kind"].as_str().unwrap();
                let kind = kind.rsplit('/').next().unwrap();
                (kind, read["allowed"].as_str().unwrap())
            })
            .collect();
        let by_default: Vec<(&str, &str)> = kinds.iter().map(|k| (*k, "by-default")).collect();
        assert_eq!(reads, by_default, "{name}");
    }
}

#[test]
fn a_plugin_with_metrics_shows_each_family_as_it_is_exported() {
    let text = check(Path::new(artifacts::ROLLOUT_WATCH), &[]);
    assert!(text.status.success(), "{text:?}");
    let stdout = String::from_utf8(text.stdout).unwrap();
    assert!(
        stdout.contains("metric         herald_plugin_rollout_watch__"),
        "{stdout}"
    );
    assert!(
        stdout.contains("reads          apps/Deployment in every namespace"),
        "{stdout}"
    );
}

#[test]
fn the_manifest_also_prints_for_people_and_as_yaml() {
    let path = Path::new(artifacts::POD_LIFECYCLE);
    let text = check(path, &[]);
    assert!(text.status.success(), "{text:?}");
    let stdout = String::from_utf8(text.stdout).unwrap();
    assert!(
        stdout.contains("ok, implements herald:plugin/plugin@0.7.0"),
        "{stdout}"
    );
    assert!(stdout.contains("plugin         pod-lifecycle "), "{stdout}");
    assert!(
        stdout
            .contains("subscribes to  v1 Pod in every namespace (or cluster-scoped), every event"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "reads          Pod in every namespace (or cluster-scoped) (readable by default)"
        ),
        "{stdout}"
    );
    let yaml = check(path, &["--output", "yaml"]);
    assert!(yaml.status.success());
    let report: serde_json::Value = serde_yaml::from_slice(&yaml.stdout).unwrap();
    assert_eq!(report["manifest"]["name"], "pod-lifecycle");
}

#[test]
fn broken_files_get_one_line_errors_naming_the_file_and_the_problem() {
    let dir = temp_dir("check");
    let good = artifacts::bytes(artifacts::POD_LIFECYCLE);
    let mut random = Vec::with_capacity(4096);
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    for _ in 0..4096 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        random.push(state as u8);
    }
    let core_module = b"\0asm\x01\0\0\0".to_vec();
    let cases: Vec<(&str, Vec<u8>, &str, Vec<&str>)> = vec![
        ("empty.wasm", Vec::new(), "file is empty", vec![]),
        (
            "truncated.wasm",
            good[..good.len() / 2].to_vec(),
            "invalid or corrupt component",
            vec![],
        ),
        ("random.wasm", random, "not a WebAssembly file", vec![]),
        ("core.wasm", core_module, "core WebAssembly module", vec![]),
        (
            "wrong-world.wasm",
            artifacts::bytes(artifacts::WRONG_WORLD),
            "does not implement a herald:plugin/plugin world this host runs",
            vec![],
        ),
        (
            "big.wasm",
            good.clone(),
            "over the 1000-byte limit",
            vec!["--max-file-bytes", "1000"],
        ),
    ];
    for (name, bytes, problem, extra) in cases {
        let file = dir.join(name);
        std::fs::write(&file, bytes).unwrap();
        let output = check(&file, &extra);
        assert_eq!(output.status.code(), Some(1), "{name}");
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert_eq!(stderr.lines().count(), 1, "{name}: one line: {stderr}");
        assert!(
            stderr.starts_with(&format!("error: {}: ", file.display())),
            "{name}: names the file: {stderr}"
        );
        assert!(
            stderr.contains(problem),
            "{name}: says {problem:?}: {stderr}"
        );
    }
    let missing = check(&dir.join("missing.wasm"), &[]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("cannot read"));
}

#[test]
fn version_names_the_plugin_world() {
    let output = run(&["version"]);
    assert!(output.status.success());
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        stdout.starts_with(&format!("herald {} ", env!("CARGO_PKG_VERSION"))),
        "{stdout}"
    );
    assert!(
        stdout.contains("(plugin world herald:plugin/plugin@0.7.0)"),
        "the newest world: {stdout}"
    );
}

#[test]
fn check_and_replay_take_a_compiled_plugin_from_the_artifact_cache() {
    let dir = temp_dir("check-cache");
    let cache = dir.join("artifacts");
    let path = Path::new(artifacts::POD_LIFECYCLE);
    let cached = ["--artifact-cache", cache.to_str().unwrap()];
    let first = String::from_utf8(check(path, &cached).stdout).unwrap();
    assert!(first.contains("  compiled in    "), "{first}");
    let again = String::from_utf8(check(path, &cached).stdout).unwrap();
    assert!(
        again.contains("(compiled artifact from the cache)"),
        "the second check compiles nothing: {again}"
    );
    // Replay uses the same cache: it loads without compiling.
    let events = super::process::repo().join("examples/events/pods.jsonl");
    let replayed = run(&[
        "plugin",
        "replay",
        artifacts::POD_LIFECYCLE,
        "--events",
        events.to_str().unwrap(),
        "--artifact-cache",
        cache.to_str().unwrap(),
    ]);
    assert!(replayed.status.success(), "{replayed:?}");
    let said = String::from_utf8(replayed.stderr).unwrap();
    assert!(said.contains("compiled artifact from the cache"), "{said}");
    // Without the cache, every check compiles.
    let uncached = String::from_utf8(check(path, &["--no-artifact-cache"]).stdout).unwrap();
    assert!(uncached.contains("  compiled in    "), "{uncached}");
}
