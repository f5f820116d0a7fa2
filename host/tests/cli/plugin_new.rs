//! `herald plugin new`: for each language and template, the generated
//! project's own tests pass, it builds into a component, and `herald plugin
//! check` and `herald plugin replay` (`--events events.jsonl` for a
//! handler, `--reviews reviews.jsonl` for an admission policy) accept it
//! and show what it did; a reconcile project (`--events deployments.jsonl`)
//! shows each reconcile, the apply it would make and its requeue.
//!
//! Needs each language's toolchain (see `sdk_python.rs`, `sdk_js.rs` and
//! `sdk_go.rs`; Rust needs the `wasm32-wasip2` target); a missing one fails the test with
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

/// The reconcile template's log lines the sample events must produce, in
/// order: the Deployment listed, its summary added (which reconciles its
/// owner), the Deployment changed, then deleted.
fn expected_reconciles(name: &str) -> Vec<String> {
    [
        "info summarized deployment=shop/web images=nginx:1.27 replicas=2",
        "info summarized deployment=shop/web images=nginx:1.27 replicas=2",
        "info summarized deployment=shop/web images=nginx:1.28 replicas=3",
        "info gone deployment=shop/web",
    ]
    .iter()
    .map(|line| format!("[{name}] {line}"))
    .collect()
}

/// The sample file a `template`'s project replays.
fn samples(template: &str) -> &'static str {
    match template {
        "handler" => "events.jsonl",
        "admission" => "reviews.jsonl",
        "reconcile" => "deployments.jsonl",
        other => panic!("no template {other}"),
    }
}

/// The replay flag of a `template`'s samples.
fn samples_flag(template: &str) -> &'static str {
    match template {
        "admission" => "--reviews",
        _ => "--events",
    }
}

/// Runs `herald plugin new NAME --lang LANG --template TEMPLATE --dir
/// PARENT`; returns the project directory, `PARENT/NAME`.
fn new_project(parent: &Path, name: &str, lang: &str, template: &str) -> PathBuf {
    let output = run(&[
        "plugin",
        "new",
        name,
        "--lang",
        lang,
        "--template",
        template,
        "--dir",
        parent.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{output:?}");
    let replay_flag = format!("{} {}", samples_flag(template), samples(template));
    for step in ["plugin check", "plugin replay", &replay_flag] {
        assert!(
            stdout.contains(step),
            "the next steps name {step}: {stdout}"
        );
    }
    let project = parent.join(name);
    assert!(project.join(samples(template)).is_file());
    assert!(project.join("README.md").is_file());
    project
}

/// Checks and replays `wasm` with the `template`'s samples, asserting
/// what the replay printed.
fn check_and_replay(name: &str, template: &str, project: &Path, wasm: &Path) {
    let wasm = wasm.to_str().unwrap();
    let started = Instant::now();
    let check = run(&["plugin", "check", wasm, "--output", "json"]);
    assert!(check.status.success(), "{check:?}");
    let report: serde_json::Value = serde_json::from_slice(&check.stdout).unwrap();
    assert_eq!(report["manifest"]["name"], name);
    let samples = project.join(samples(template));
    let replay = run(&[
        "plugin",
        "replay",
        wasm,
        samples_flag(template),
        samples.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&replay.stdout);
    assert!(replay.status.success(), "{stdout}");
    replayed_the_samples(name, template, &stdout);
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

/// Scaffolds a Rust project of `template`, runs its tests, builds it and
/// checks and replays the component.
fn rust_project_tests_builds_and_replays(name: &str, template: &str) {
    const INSTALL: &str = "install Rust (rustup), then `rustup target add wasm32-wasip2`";
    let started = Instant::now();
    let parent = temp_dir("plugin-new");
    let project = new_project(&parent, name, "rust", template);
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
        &format!("cargo test ({name})"),
        &mut cargo(&["test", "-q"]),
        INSTALL,
    );
    succeed(
        &format!("cargo build wasm32-wasip2 ({name})"),
        &mut cargo(&["build", "--release", "--target", "wasm32-wasip2"]),
        INSTALL,
    );
    let wasm = target
        .join("wasm32-wasip2/release")
        .join(format!("{}.wasm", name.replace('-', "_")));
    check_and_replay(name, template, &project, &wasm);
    eprintln!(
        "plugin new {name}: {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn plugin_new_rust_project_tests_builds_and_replays() {
    rust_project_tests_builds_and_replays("new-rust", "handler");
}

#[test]
fn plugin_new_rust_admission_project_tests_builds_and_replays() {
    rust_project_tests_builds_and_replays("new-rust-admission", "admission");
}

#[test]
fn plugin_new_rust_reconcile_project_tests_builds_and_replays() {
    rust_project_tests_builds_and_replays("new-rust-reconcile", "reconcile");
}

/// Every file under `dir` with its size and modification time: what a
/// command that must not write there is checked against.
fn listing(dir: &Path) -> std::collections::BTreeMap<PathBuf, (u64, std::time::SystemTime)> {
    let mut files = std::collections::BTreeMap::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(path) = pending.pop() {
        let meta = std::fs::symlink_metadata(&path).unwrap();
        if meta.is_dir() {
            pending.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        }
        files.insert(path, (meta.len(), meta.modified().unwrap()));
    }
    files
}

/// A copy of the SDK at `sdk_in_checkout` in `dir`, made read-only: the
/// scaffold must install from it without writing into it (a read-only
/// checkout).
fn read_only_sdk(dir: &Path, sdk_in_checkout: &str) -> PathBuf {
    let copy = dir.join(Path::new(sdk_in_checkout).file_name().unwrap());
    let status = Command::new("cp")
        .arg("-r")
        .arg(repo().join(sdk_in_checkout))
        .arg(&copy)
        .status()
        .unwrap();
    assert!(status.success());
    for junk in ["node_modules", "__pycache__", ".pytest_cache"] {
        let _ = std::fs::remove_dir_all(copy.join(junk));
    }
    let status = Command::new("chmod")
        .args(["-R", "a-w"])
        .arg(&copy)
        .status()
        .unwrap();
    assert!(status.success());
    copy
}

/// Scaffolds `name` in `lang` from `template` against `sdk`, then runs
/// exactly the commands it printed, one by one in a shell, with this
/// build's `herald` first on the `PATH`; returns the output of the last
/// one (the replay).
fn run_printed_steps(name: &str, lang: &str, template: &str, sdk: &Path, install: &str) -> String {
    let parent = temp_dir("plugin-new");
    let output = run(&[
        "plugin",
        "new",
        name,
        "--lang",
        lang,
        "--template",
        template,
        "--dir",
        parent.to_str().unwrap(),
        "--sdk",
        sdk.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{output:?}");
    let printed = String::from_utf8_lossy(&output.stdout).into_owned();
    let steps: Vec<String> = printed
        .split_once("next:\n")
        .expect("the next steps")
        .1
        .lines()
        .filter_map(|line| line.strip_prefix("    "))
        .map(|line| match line.find("  #") {
            Some(comment) => line[..comment].trim_end().to_owned(),
            None => line.trim_end().to_owned(),
        })
        .collect();
    assert!(steps[0].starts_with("cd "), "{printed}");
    let herald = PathBuf::from(env!("CARGO_BIN_EXE_herald"));
    let path = format!(
        "{}:{}",
        herald.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let script = steps.join(" && \\\n");
    eprintln!("running the printed steps:\n{script}");
    let output = succeed(
        &format!("the printed steps ({name})"),
        Command::new("sh")
            .args(["-c", &script])
            .env("PATH", path)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env_remove("PYTHONPATH")
            .env_remove("VIRTUAL_ENV"),
        install,
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Asserts that the replay printed what the `template`'s samples must
/// produce: the handler's log lines, or the admission policy's verdicts.
fn replayed_the_samples(name: &str, template: &str, stdout: &str) {
    if template == "reconcile" {
        let logged: Vec<&str> = stdout
            .lines()
            .map(str::trim)
            .filter(|line| line.starts_with('['))
            .collect();
        assert_eq!(logged, expected_reconciles(name), "{stdout}");
        let applies = stdout
            .lines()
            .filter(|line| {
                line.trim_start().starts_with("=> apply") && line.contains("shop/web-summary")
            })
            .count();
        assert_eq!(applies, 3, "one apply per live reconcile:\n{stdout}");
        let requeues = stdout.matches("=> requeue after 10m").count();
        assert_eq!(requeues, 3, "one requeue per live reconcile:\n{stdout}");
        assert!(
            stdout.ends_with("summary: 4 events, 4 ok, 0 failed, 0 skipped\n"),
            "{stdout}"
        );
        return;
    }
    if template == "handler" {
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
        return;
    }
    let verdicts: Vec<&str> = stdout
        .lines()
        .filter(|line| line.starts_with("review "))
        .collect();
    assert_eq!(verdicts.len(), 4, "{stdout}");
    assert!(
        verdicts[0].ends_with("CREATE Pod shop/web-1: allowed"),
        "{stdout}"
    );
    for (verdict, image) in [
        (verdicts[1], "registry.example.com/shop/web:latest"),
        (verdicts[2], "registry.example.com/shop/web"),
    ] {
        assert!(verdict.contains(": denied"), "{stdout}");
        assert!(
            verdict.contains("images must be pinned to a tag or digest, not latest")
                && verdict.ends_with(image),
            "{stdout}"
        );
    }
    assert!(
        verdicts[3].ends_with("DELETE Pod shop/web-1: not covered by the plugin's webhooks"),
        "{stdout}"
    );
    assert!(
        stdout.ends_with(
            "summary: 4 reviews, 1 allowed, 2 denied, 0 patched, 1 not covered, 0 failed\n"
        ),
        "{stdout}"
    );
}

/// Scaffolds a `lang` project of `template` against a read-only copy of
/// its SDK, runs exactly the printed steps and checks the replay; nothing
/// may be written into the SDK.
fn printed_steps_build_and_replay(name: &str, lang: &str, template: &str, install: &str) {
    let started = Instant::now();
    let sdk_in_checkout = match lang {
        "python" => "sdk/python",
        "js" => "sdk/js",
        "go" => "sdk/go",
        other => panic!("no printed-steps test for {other}"),
    };
    let scratch = temp_dir("sdk");
    let sdk = read_only_sdk(&scratch, sdk_in_checkout);
    let before = listing(&sdk);
    let building = (lang == "go").then(super::process::one_go_build_at_a_time);
    let replay = run_printed_steps(name, lang, template, &sdk, install);
    drop(building);
    replayed_the_samples(name, template, &replay);
    assert_eq!(listing(&sdk), before, "nothing was written into the SDK");
    eprintln!(
        "plugin new {name}: {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// What the Python projects need.
const PYTHON: &str = "install Python 3.10+ with venv and pip (PyPI reachable)";
/// What the JavaScript projects need.
const JS: &str = "install Node.js 20 or later with npm (the npm registry reachable)";
/// What the Go projects need.
const GO: &str =
    "install Go 1.24 or later (https://go.dev/dl/), with the Go module proxy reachable";

#[test]
fn plugin_new_python_project_builds_with_exactly_the_printed_commands() {
    printed_steps_build_and_replay("new-python", "python", "handler", PYTHON);
}

#[test]
fn plugin_new_python_admission_project_builds_with_exactly_the_printed_commands() {
    printed_steps_build_and_replay("new-python-admission", "python", "admission", PYTHON);
}

#[test]
fn plugin_new_python_reconcile_project_builds_with_exactly_the_printed_commands() {
    printed_steps_build_and_replay("new-python-reconcile", "python", "reconcile", PYTHON);
}

#[test]
fn plugin_new_js_project_builds_with_exactly_the_printed_commands() {
    printed_steps_build_and_replay("new-js", "js", "handler", JS);
}

#[test]
fn plugin_new_js_admission_project_builds_with_exactly_the_printed_commands() {
    printed_steps_build_and_replay("new-js-admission", "js", "admission", JS);
}

#[test]
fn plugin_new_js_reconcile_project_builds_with_exactly_the_printed_commands() {
    printed_steps_build_and_replay("new-js-reconcile", "js", "reconcile", JS);
}

#[test]
fn plugin_new_go_project_builds_with_exactly_the_printed_commands() {
    printed_steps_build_and_replay("new-go", "go", "handler", GO);
}

#[test]
fn plugin_new_go_admission_project_builds_with_exactly_the_printed_commands() {
    printed_steps_build_and_replay("new-go-admission", "go", "admission", GO);
}

#[test]
fn plugin_new_go_reconcile_project_builds_with_exactly_the_printed_commands() {
    printed_steps_build_and_replay("new-go-reconcile", "go", "reconcile", GO);
}
