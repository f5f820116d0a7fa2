//! `herald plugin new`: for each language, the generated project's own
//! tests pass, it builds into a component, and `herald plugin check` and
//! `herald plugin replay --events events.jsonl` accept it and show its log.
//!
//! Needs each language's toolchain (see `sdk_python.rs` and `sdk_js.rs`;
//! Rust needs the `wasm32-wasip2` target); a missing one fails the test with
//! the install command. The Rust project builds with `CARGO_TARGET_DIR`
//! `target/wasm` of the repository (or `HERALD_WASM_TARGET_DIR`), offline,
//! so dependencies compiled once are reused.

use super::process::{repo, run, succeed, temp_dir};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// The plugin's log lines the sample events must produce, in order.
fn expected(name: &str) -> Vec<String> {
    [
        "info listed pod=shop/web-0 phase=Running",
        "info added pod=shop/web-1 phase=Pending",
        "info phase pod=shop/web-1 from=Pending to=Running",
        "info deleted pod=shop/web-0",
    ]
    .iter()
    .map(|line| format!("[{name}] {line}"))
    .collect()
}

/// Runs `herald plugin new NAME --lang LANG --dir` a fresh directory;
/// returns the project directory.
fn new_project(name: &str, lang: &str) -> PathBuf {
    let parent = temp_dir("plugin-new");
    let output = run(&[
        "plugin",
        "new",
        name,
        "--lang",
        lang,
        "--dir",
        parent.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{output:?}");
    for step in ["plugin check", "plugin replay", "--events events.jsonl"] {
        assert!(
            stdout.contains(step),
            "the next steps name {step}: {stdout}"
        );
    }
    let project = parent.join(name);
    assert!(project.join("events.jsonl").is_file());
    assert!(project.join("README.md").is_file());
    project
}

/// Checks and replays `wasm`, asserting the sample events' log lines.
fn check_and_replay(name: &str, project: &Path, wasm: &Path) {
    let wasm = wasm.to_str().unwrap();
    let started = Instant::now();
    let check = run(&["plugin", "check", wasm, "--output", "json"]);
    assert!(check.status.success(), "{check:?}");
    let report: serde_json::Value = serde_json::from_slice(&check.stdout).unwrap();
    assert_eq!(report["manifest"]["name"], name);
    let events = project.join("events.jsonl");
    let replay = run(&[
        "plugin",
        "replay",
        wasm,
        "--events",
        events.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&replay.stdout);
    assert!(replay.status.success(), "{stdout}");
    let logged: Vec<&str> = stdout
        .lines()
        .map(str::trim)
        .filter(|line| line.starts_with('['))
        .collect();
    assert_eq!(logged, expected(name), "{stdout}");
    assert!(
        stdout.ends_with("summary: 4 events, 4 ok, 0 failed, 0 skipped\n"),
        "{stdout}"
    );
    eprintln!(
        "herald plugin check + replay: {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn plugin_new_refuses_bad_names_and_existing_directories() {
    let parent = temp_dir("plugin-new");
    let dir = parent.to_str().unwrap();
    for bad in ["Pods", "pod_watch", "pods.watch", "pods-", ""] {
        let output = run(&["plugin", "new", bad, "--lang", "rust", "--dir", dir]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{bad}: {stderr}");
        assert!(stderr.contains("is not a valid plugin name"), "{stderr}");
    }
    std::fs::create_dir(parent.join("taken")).unwrap();
    std::fs::write(parent.join("taken/keep.txt"), "mine").unwrap();
    let output = run(&["plugin", "new", "taken", "--lang", "python", "--dir", dir]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("refusing to overwrite"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(parent.join("taken/keep.txt")).unwrap(),
        "mine"
    );
    let output = run(&[
        "plugin",
        "new",
        "fine",
        "--lang",
        "rust",
        "--dir",
        dir,
        "--sdk",
        "/nonexistent",
    ]);
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("--sdk /nonexistent"),
        "{output:?}"
    );
    assert!(!parent.join("fine").exists());
}

#[test]
fn plugin_new_rust_project_tests_builds_and_replays() {
    const INSTALL: &str = "install Rust (rustup), then `rustup target add wasm32-wasip2`";
    let started = Instant::now();
    let project = new_project("new-rust", "rust");
    let target = std::env::var_os("HERALD_WASM_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target/wasm"));
    let cargo = |args: &[&str]| {
        let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        command
            .args(args)
            .current_dir(&project)
            .env("CARGO_TARGET_DIR", &target)
            .env("CARGO_NET_OFFLINE", "true")
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_BUILD_TARGET");
        command
    };
    succeed(
        "cargo test (new-rust)",
        &mut cargo(&["test", "-q"]),
        INSTALL,
    );
    succeed(
        "cargo build wasm32-wasip2 (new-rust)",
        &mut cargo(&["build", "--release", "--target", "wasm32-wasip2"]),
        INSTALL,
    );
    let wasm = target.join("wasm32-wasip2/release/new_rust.wasm");
    check_and_replay("new-rust", &project, &wasm);
    eprintln!("plugin new rust: {:.1} s", started.elapsed().as_secs_f64());
}

#[test]
fn plugin_new_python_project_tests_builds_and_replays() {
    const INSTALL: &str =
        "install Python 3.10+, then `python3 -m pip install -r sdk/python/requirements-build.txt`";
    let started = Instant::now();
    let project = new_project("new-python", "python");
    let python = |args: &[&str]| {
        let mut command =
            Command::new(std::env::var("HERALD_PYTHON").unwrap_or_else(|_| "python3".into()));
        command
            .args(args)
            .current_dir(&project)
            .env("PYTHONPATH", repo().join("sdk/python/src"))
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env_remove("VIRTUAL_ENV");
        command
    };
    let tests = succeed(
        "pytest (new-python)",
        &mut python(&["-m", "pytest", "-q", "-p", "no:cacheprovider"]),
        INSTALL,
    );
    let summary = String::from_utf8_lossy(&tests.stdout);
    assert!(summary.contains("1 passed"), "{summary}");
    succeed(
        "python -m herald_sdk build (new-python)",
        &mut python(&[
            "-m",
            "herald_sdk",
            "build",
            "app.py",
            "-o",
            "new-python.wasm",
        ]),
        INSTALL,
    );
    check_and_replay("new-python", &project, &project.join("new-python.wasm"));
    eprintln!(
        "plugin new python: {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn plugin_new_js_project_tests_builds_and_replays() {
    const INSTALL: &str =
        "install Node.js 20 or later, then run `npm ci` at the repository root (.ci/run does both)";
    let started = Instant::now();
    let project = new_project("new-js", "js");
    // The README's no-download route: the checkout's installed toolchain,
    // which resolves `@herald/sdk` to sdk/js like the `file:` dependency.
    let modules = repo().join("node_modules");
    assert!(
        modules.join(".bin/herald-build").exists() && modules.join("@herald/sdk").exists(),
        "the JavaScript toolchain is not installed: {INSTALL}"
    );
    std::os::unix::fs::symlink(&modules, project.join("node_modules")).unwrap();
    let npm = |args: &[&str]| {
        let mut command = Command::new("npm");
        command.args(args).current_dir(&project);
        command
    };
    let tests = succeed("npm test (new-js)", &mut npm(&["test"]), INSTALL);
    let report = String::from_utf8_lossy(&tests.stdout);
    assert!(
        report.contains("# pass 1") && report.contains("# fail 0"),
        "{report}"
    );
    succeed(
        "npm run build (new-js)",
        &mut npm(&["run", "build"]),
        INSTALL,
    );
    check_and_replay("new-js", &project, &project.join("new-js.wasm"));
    eprintln!("plugin new js: {:.1} s", started.elapsed().as_secs_f64());
}
