//! The Python SDK end to end: its pytest suite and the `label-audit`
//! example's, the example built into a component with the SDK's one build
//! command, then `herald plugin check` and `herald plugin replay` on it.
//!
//! Needs Python 3.10+ with the pinned build requirements
//! (`python3 -m pip install -r sdk/python/requirements-build.txt`, which
//! `.ci/run` does); without them the test fails saying so. `HERALD_PYTHON`
//! names another interpreter than `python3`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

use super::process::{repo, run, succeed, temp_dir};

/// The install command the failure messages name.
const INSTALL: &str = "python3 -m pip install -r sdk/python/requirements-build.txt";

/// The Python interpreter: `HERALD_PYTHON`, else `python3`.
fn python() -> String {
    std::env::var("HERALD_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// A Python command in `dir`, finding the SDK in `sdk/python/src` and
/// writing no bytecode into the repository.
fn python_in(dir: &Path) -> Command {
    let mut command = Command::new(python());
    command
        .current_dir(dir)
        .env("PYTHONPATH", repo().join("sdk/python/src"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env_remove("VIRTUAL_ENV");
    command
}

/// Fails, naming the install command, unless componentize-py and pytest import.
fn require_build_requirements() {
    let probe = python_in(&repo())
        .args(["-c", "import componentize_py, pytest"])
        .output();
    match probe {
        Ok(output) if output.status.success() => {}
        Ok(output) => panic!(
            "the Python SDK test needs componentize-py and pytest: run `{INSTALL}`\n{}",
            String::from_utf8_lossy(&output.stderr)
        ),
        Err(e) => panic!(
            "the Python SDK test needs {} ({e}): install Python 3, then run `{INSTALL}`",
            python()
        ),
    }
}

/// The number in pytest's `N passed` summary; nothing may have failed,
/// errored or been skipped.
fn passed(what: &str, output: &Output) -> usize {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let summary = stdout.lines().last().unwrap_or_default();
    let words: Vec<&str> = summary.split_whitespace().collect();
    assert_eq!(
        words.get(1).map(|word| word.trim_end_matches(',')),
        Some("passed"),
        "{what}: {summary}"
    );
    for outcome in ["failed", "error", "skipped", "xfail", "xpass", "deselected"] {
        assert!(
            !summary.contains(outcome),
            "{what}: every test must run and pass: {summary}"
        );
    }
    words[0].parse().unwrap()
}

/// Builds `plugins/label-audit` with the SDK's build command into `dir`.
fn build_label_audit(dir: &Path) -> PathBuf {
    let wasm = dir.join("label-audit.wasm");
    let app = repo().join("plugins/label-audit/label_audit.py");
    let output = succeed(
        "python -m herald_sdk build",
        python_in(&repo())
            .args(["-m", "herald_sdk", "build"])
            .arg(&app)
            .arg("-o")
            .arg(&wasm),
        INSTALL,
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.starts_with(&format!("built {}", wasm.display())),
        "{stdout}"
    );
    wasm
}

/// The plugin's log lines in `herald plugin replay` output, as `level message`.
fn logged(stdout: &str) -> Vec<&str> {
    stdout
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix("[label-audit] "))
        .collect()
}

/// Runs the pytest suite in `dir` (relative to the repository) and returns
/// how many tests passed; nothing may have failed.
fn pytest(dir: &str) -> usize {
    let output = succeed(
        &format!("pytest {dir}"),
        python_in(&repo().join(dir)).args(["-m", "pytest", "-q", "-p", "no:cacheprovider"]),
        INSTALL,
    );
    passed(dir, &output)
}

#[test]
fn python_sdk_builds_label_audit_that_the_host_checks_and_replays() {
    let started = Instant::now();
    require_build_requirements();

    assert!(pytest("sdk/python") >= 30);
    assert!(pytest("plugins/label-audit") >= 10);
    assert!(pytest("plugins/reloader-py") >= 5);
    assert!(pytest("plugins/fleet-fanout-py") >= 4);

    let scratch = temp_dir("sdk-python");
    let wasm = build_label_audit(&scratch);
    let wasm_arg = wasm.to_str().unwrap();

    let check_started = Instant::now();
    let check = run(&["plugin", "check", wasm_arg, "--output", "json"]);
    eprintln!(
        "herald plugin check: {:.1}s",
        check_started.elapsed().as_secs_f64()
    );
    assert!(check.status.success(), "{check:?}");
    let report: serde_json::Value = serde_json::from_slice(&check.stdout).unwrap();
    assert_eq!(report["world"], "herald:plugin/plugin@0.7.0");
    assert_eq!(report["manifest"]["name"], "label-audit");
    assert_eq!(report["manifest"]["version"], "0.1.0");
    let kinds: Vec<(&str, &str)> = report["manifest"]["subscriptions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["kind"]["group"].as_str().unwrap(),
                s["kind"]["kind"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(kinds, [("", "Pod"), ("apps", "Deployment")]);

    let config = format!(
        "@{}",
        repo().join("examples/events/label-audit.yaml").display()
    );
    let events = repo().join("examples/events/label-audit.jsonl");
    let replay_started = Instant::now();
    let replay = run(&[
        "plugin",
        "replay",
        wasm_arg,
        "--events",
        events.to_str().unwrap(),
        "--config",
        &config,
    ]);
    eprintln!(
        "herald plugin replay: {:.1}s",
        replay_started.elapsed().as_secs_f64()
    );
    let stdout = String::from_utf8(replay.stdout).unwrap();
    assert_eq!(replay.status.code(), Some(0), "{stdout}");
    assert_eq!(
        logged(&stdout),
        [
            "warn missing required labels kind=Pod key=shop/web-1 missing=team",
            "warn missing required labels kind=Deployment key=shop/checkout missing=app,team",
            "info initial list audited objects=3 missing=2",
            "info required labels now present kind=Pod key=shop/web-1",
            "warn missing required labels kind=Deployment key=shop/checkout missing=team",
            "warn missing required labels kind=Pod key=payments/debug-shell missing=team",
            "info deleted while missing labels kind=Pod key=payments/debug-shell missing=team",
        ],
        "{stdout}"
    );
    assert!(
        stdout.contains("skipped: label-audit does not subscribe to v1 ConfigMap"),
        "{stdout}"
    );
    assert!(
        stdout.ends_with("summary: 10 events, 9 ok, 0 failed, 1 skipped\n"),
        "{stdout}"
    );

    eprintln!(
        "python SDK end to end: {:.1}s",
        started.elapsed().as_secs_f64()
    );
}
