//! The JavaScript SDK (`sdk/js`) end to end: its `node --test` suite and the
//! example plugin's, the example built into a component with the SDK's one
//! build command (`herald-build`), and that component checked and replayed by
//! the real binary.
//!
//! Needs Node.js 20 or later and the pinned JavaScript toolchain (`npm ci` at
//! the repository root, which `.ci/run` does). Without them these tests fail
//! saying so: they are never skipped.

use super::process::{repo, run, succeed};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Instant;

/// What to run when the toolchain is missing.
const INSTALL: &str =
    "install Node.js 20 or later, then run `npm ci` at the repository root (.ci/run does both)";

/// Checks that `node` runs and the pinned toolchain is installed; returns the
/// repository root.
fn toolchain() -> PathBuf {
    let root = repo();
    let version = Command::new("node")
        .arg("--version")
        .output()
        .unwrap_or_else(|error| panic!("cannot run `node` ({error}): {INSTALL}"));
    assert!(
        version.status.success(),
        "`node --version` failed: {INSTALL}"
    );
    let version = String::from_utf8_lossy(&version.stdout);
    let major: u32 = version
        .trim()
        .trim_start_matches('v')
        .split('.')
        .next()
        .and_then(|major| major.parse().ok())
        .unwrap_or(0);
    assert!(major >= 20, "node {} is too old: {INSTALL}", version.trim());
    for installed in [
        "node_modules/@bytecodealliance/componentize-js/package.json",
        "node_modules/@bytecodealliance/jco/package.json",
        "node_modules/rolldown/package.json",
        "node_modules/@herald/sdk/package.json",
        "node_modules/.bin/herald-build",
    ] {
        assert!(
            root.join(installed).exists(),
            "the JavaScript toolchain is not installed (no {installed}): {INSTALL}"
        );
    }
    root
}

/// Runs a `node --test` suite in `dir` and checks it ran tests and none failed.
fn node_suite(dir: &Path) {
    let output = succeed(
        &format!("node --test in {}", dir.display()),
        Command::new("node")
            .args(["--test", "test/"])
            .current_dir(dir),
        INSTALL,
    );
    let report = String::from_utf8_lossy(&output.stdout);
    let count = |label: &str| -> u32 {
        report
            .lines()
            .find_map(|line| line.strip_prefix(&format!("# {label} ")))
            .and_then(|count| count.trim().parse().ok())
            .unwrap_or_else(|| panic!("no `# {label}` line in the node --test report:\n{report}"))
    };
    assert!(count("pass") > 0, "no test passed:\n{report}");
    assert_eq!(count("fail"), 0, "{report}");
    assert_eq!(count("skipped"), 0, "{report}");
}

#[test]
fn the_sdk_suite_passes() {
    let root = toolchain();
    node_suite(&root.join("sdk/js"));
}

#[test]
fn the_example_plugin_suite_passes() {
    let root = toolchain();
    node_suite(&root.join("plugins/configmap-diff"));
}

/// The example built once, with the command its `npm run build` runs.
fn configmap_diff_wasm() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let root = toolchain();
        // Kept for the whole run, so in the build's own scratch folder.
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sdk-js");
        std::fs::create_dir_all(&dir).unwrap();
        let wasm = dir.join("configmap-diff.wasm");
        let output = succeed(
            "herald-build configmap-diff",
            Command::new(root.join("node_modules/.bin/herald-build"))
                .arg(root.join("plugins/configmap-diff/src/plugin.js"))
                .arg("-o")
                .arg(&wasm)
                .current_dir(root.join("plugins/configmap-diff")),
            INSTALL,
        );
        let said = String::from_utf8_lossy(&output.stdout);
        assert!(said.starts_with("built "), "{said}");
        wasm
    })
}

#[test]
fn the_built_example_passes_plugin_check() {
    let wasm = configmap_diff_wasm();
    let started = Instant::now();
    let output = run(&["plugin", "check", wasm.to_str().unwrap()]);
    eprintln!(
        "herald plugin check: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("ok, implements herald:plugin/plugin@0.7.0"),
        "{stdout}"
    );
    assert!(
        stdout.contains("plugin         configmap-diff 0.1.0"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "subscribes to  v1 ConfigMap in every namespace (or cluster-scoped), every event"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("asks limits    call deadline default, memory default"),
        "{stdout}"
    );
}

#[test]
fn the_built_example_replays_the_recorded_configmap_changes() {
    let wasm = configmap_diff_wasm();
    let events = repo().join("examples/events/configmap-diff.jsonl");
    let started = Instant::now();
    let output = run(&[
        "plugin",
        "replay",
        wasm.to_str().unwrap(),
        "--events",
        events.to_str().unwrap(),
    ]);
    eprintln!(
        "herald plugin replay: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let logged: Vec<&str> = stdout
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix("[configmap-diff] "))
        .collect();
    assert_eq!(
        logged,
        [
            "debug listed configmap=shop/web-config keys=2",
            "info created configmap=shop/feature-flags keys=2",
            "info changed configmap=shop/feature-flags +dark-mode=\"on\" ~checkout-v2=\"false\"→\"true\" -banner",
            "info changed configmap=shop/web-config +nginx.conf=\"server {\\n  listen 8080;\\n  location / { p…(71 chars)\" ~LOG_LEVEL=\"info\"→\"debug\"",
            "info changed configmap=shop/web-config +ca.crt=<26 bytes>",
            "info deleted configmap=shop/feature-flags keys=2",
            "info deleted configmap=shop/web-config keys=3 binary=1 final-state-unknown",
        ],
        "{stdout}"
    );
    assert!(
        stdout.ends_with("summary: 9 events, 9 ok, 0 failed, 0 skipped\n"),
        "{stdout}"
    );
}
