//! The Go SDK (`sdk/go`) end to end: its `go test` suite and vet, bindings
//! regenerated from `wit/0.7.0` equal to the committed ones, the example
//! plugin's tests, the example built by `herald plugin build` (Go only:
//! `go build`, then Herald embeds the world's type and componentizes), and
//! that component checked and replayed by the real binary; the SDK's
//! admission fixture built, its webhooks declared and reviews replayed
//! through it (every field of a review in, every kind of answer out); the
//! SDK's delivery fixture, whose options skip the old state, replayed; a Go plugin
//! taking hundreds of Pods whose copies into its memory grow its heap (the
//! SDK's `cabi_realloc` and the adapter's clock); and what `herald plugin
//! build` says when Go is missing or the build fails.
//!
//! Needs Go 1.24 or later on the PATH and the Go module proxy (or a module
//! cache holding `k8s.io/api`). Without them these tests fail saying so:
//! they are never skipped.

use super::process::{herald, one_go_build_at_a_time, repo, run, succeed, temp_dir};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

/// What to install when Go is missing.
const INSTALL: &str = "install Go 1.24 or later (https://go.dev/dl/) with the Go module proxy reachable (.ci/run checks for it)";

/// A `go` command in `dir` (relative to the repository).
fn go_in(dir: &str) -> Command {
    let mut command = Command::new("go");
    command.current_dir(repo().join(dir));
    command
}

/// `go test ./...` in `dir`: every package with tests passed; returns the
/// packages that ran tests.
fn go_test(dir: &str) -> Vec<String> {
    let output = succeed(
        &format!("go test ./... in {dir}"),
        go_in(dir).args(["test", "./..."]),
        INSTALL,
    );
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(!report.contains("FAIL"), "{report}");
    report
        .lines()
        .filter_map(|line| line.strip_prefix("ok  \t"))
        .map(|rest| rest.split('\t').next().unwrap_or_default().to_owned())
        .collect()
}

/// `go vet ./...` in `dir`, natively and for the plugin target.
fn go_vet(dir: &str) {
    succeed(
        &format!("go vet in {dir}"),
        go_in(dir).args(["vet", "./..."]),
        INSTALL,
    );
    succeed(
        &format!("go vet (wasip1) in {dir}"),
        go_in(dir)
            .args(["vet", "./..."])
            .env("GOOS", "wasip1")
            .env("GOARCH", "wasm"),
        INSTALL,
    );
}

/// The plugin's log lines in `herald plugin replay` output, as `level message`.
fn logged(stdout: &str) -> Vec<&str> {
    stdout
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix("[go-pod-phases] "))
        .collect()
}

/// Builds `plugins/go-pod-phases` with `herald plugin build` into `dir`;
/// returns the component's path.
fn build_example(dir: &Path) -> PathBuf {
    let wasm = dir.join("go-pod-phases.wasm");
    build_go("plugins/go-pod-phases", &wasm);
    wasm
}

/// `herald plugin check --output json` of the component at `wasm`, which
/// must pass.
fn check_report(wasm: &str) -> serde_json::Value {
    let check = run(&["plugin", "check", wasm, "--output", "json"]);
    assert!(check.status.success(), "{check:?}");
    serde_json::from_slice(&check.stdout).unwrap()
}

/// Builds the Go project at `project` (relative to the repository) into
/// `wasm` with `herald plugin build`, checking what it says it built.
fn build_go(project: &str, wasm: &Path) {
    let building = one_go_build_at_a_time();
    let output = succeed(
        &format!("herald plugin build {project}"),
        herald()
            .args(["plugin", "build"])
            .arg(repo().join(project))
            .arg("-o")
            .arg(wasm),
        INSTALL,
    );
    drop(building);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.starts_with(&format!("built {} (", wasm.display()))
            && stdout.contains("against herald:plugin/plugin@0.7.0"),
        "{stdout}"
    );
}

#[test]
fn the_go_sdk_suite_passes_and_its_bindings_are_generated_from_the_wit() {
    let started = Instant::now();
    let packages = go_test("sdk/go");
    assert!(
        packages.iter().any(|p| p == "herald.dev/sdk/go"),
        "{packages:?}"
    );
    go_vet("sdk/go");
    let output = succeed(
        "sdk/go/generate.sh --check",
        Command::new("bash")
            .arg(repo().join("sdk/go/generate.sh"))
            .arg("--check"),
        INSTALL,
    );
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("bindings are up to date"),
        "{output:?}"
    );
    eprintln!("go SDK suite: {:.1} s", started.elapsed().as_secs_f64());
}

/// The Go reconcile example's own tests (its suite test builds and runs it
/// against the API server: `tests/tests/suite/reloader.rs`).
#[test]
fn go_reloader_passes_its_tests_and_vet() {
    let packages = go_test("plugins/go-reloader");
    assert_eq!(packages, ["herald.dev/plugins/go-reloader"]);
    go_vet("plugins/go-reloader");
}

#[test]
fn go_pod_phases_builds_with_herald_and_the_host_checks_and_replays_it() {
    let started = Instant::now();
    let packages = go_test("plugins/go-pod-phases");
    assert_eq!(packages, ["herald.dev/plugins/go-pod-phases"]);
    go_vet("plugins/go-pod-phases");

    let scratch = temp_dir("sdk-go");
    let wasm = build_example(&scratch);
    let wasm_arg = wasm.to_str().unwrap();
    let report = check_report(wasm_arg);
    // Every Go plugin exports 0.7.0's `delivery` and 0.5.0's `admission`;
    // this one admits nothing.
    assert_eq!(report["world"], "herald:plugin/plugin@0.7.0");
    assert_eq!(report["manifest"]["name"], "go-pod-phases");
    assert!(
        report["manifest"].get("admission").is_none(),
        "{}",
        report["manifest"]
    );
    assert_eq!(
        report["manifest"]["capabilities"],
        serde_json::json!(["events"])
    );
    let metrics: Vec<&str> = report["manifest"]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        metrics,
        [
            "container_restarts_total",
            "phase_changes_total",
            "pods_seen"
        ]
    );

    let events = repo().join("plugins/crashloop-alert/replay/crashloop.jsonl");
    let replay = run(&[
        "plugin",
        "replay",
        wasm_arg,
        "--events",
        events.to_str().unwrap(),
        "--config",
        r#"{"restartWarning": 2}"#,
    ]);
    let stdout = String::from_utf8(replay.stdout).unwrap();
    assert_eq!(replay.status.code(), Some(0), "{stdout}");
    assert_eq!(
        logged(&stdout),
        [
            "info pod added pod=shop/old-0 phase=Running node=node-1 initial=true",
            "info pod added pod=shop/web-0 phase=Running node=node-1 initial=false",
            "info pod added pod=shop/batch-0 phase=Running node=node-2 initial=false",
            "info pod deleted pod=shop/web-0 final-state-unknown=false",
        ],
        "{stdout}"
    );
    // One Warning Event per Pod crossing the threshold, each after the
    // plugin read its deadline through the 0.4.0 import.
    let warnings: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains("\"reason\":\"RestartingContainer\""))
        .collect();
    assert_eq!(warnings.len(), 2, "{stdout}");
    assert!(
        warnings
            .iter()
            .all(|w| w.contains("\"note\":\"container app restarted 2 times\"")),
        "{stdout}"
    );
    assert!(
        stdout.contains("=> metric add container_restarts_total{namespace=\"shop\"} 1"),
        "{stdout}"
    );
    assert!(
        stdout.ends_with("summary: 12 events, 12 ok, 0 failed, 0 skipped\n"),
        "{stdout}"
    );
    eprintln!(
        "go-pod-phases end to end: {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// An AdmissionReview v1 of `operation` on the Pod `shop/name` labelled
/// `labels` (`app: web` besides), with its `subresource` (or none), as one
/// JSON line.
fn pod_review(
    n: u32,
    operation: &str,
    name: &str,
    labels: serde_json::Value,
    subresource: &str,
) -> String {
    let mut metadata =
        serde_json::json!({"name": name, "namespace": "shop", "resourceVersion": "7"});
    metadata["labels"] = labels;
    metadata["labels"]["app"] = "web".into();
    let pod = serde_json::json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": metadata,
        "spec": {"containers": [{"name": "app", "image": "nginx"}]},
    });
    let (object, old_object) = match operation {
        "CREATE" => (pod, serde_json::Value::Null),
        "DELETE" => (serde_json::Value::Null, pod),
        _ => (pod.clone(), pod),
    };
    let options = format!(
        "{}{}Options",
        &operation[..1],
        operation[1..].to_lowercase()
    );
    let dry_run = n == 1;
    let mut request = serde_json::json!({
        "uid": format!("0000000{n}-gate"),
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "name": name, "namespace": "shop", "operation": operation,
        "userInfo": {"username": "alice@example.com", "uid": "u-1",
            "groups": ["dev", "system:authenticated"], "extra": {"scopes": ["a", "b"]}},
        "object": object, "oldObject": old_object, "dryRun": dry_run,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": options},
    });
    if !subresource.is_empty() {
        request["subResource"] = subresource.into();
    }
    let review = serde_json::json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request,
    });
    format!("{review}\n")
}

/// The SDK's admission fixture (`sdk/go/testdata/admission-gate`) built by
/// `herald plugin build`: `declare` answers the manifest's two webhooks
/// (every field set on one), and reviews replayed through it cross the
/// ABI whole (each field logged as the plugin received it) and come back
/// as every kind of answer: a JSON Patch, a changed object, a refusal with
/// its code and warnings, an error and a panic answered by the failure
/// policy, and a write no webhook covers.
#[test]
fn a_go_admission_plugin_declares_its_webhooks_and_answers_replayed_reviews() {
    let started = Instant::now();
    let dir = temp_dir("go-admission");
    let wasm = dir.join("go-admission-gate.wasm");
    build_go("sdk/go/testdata/admission-gate", &wasm);
    let wasm_arg = wasm.to_str().unwrap();
    let report = check_report(wasm_arg);
    assert_eq!(report["world"], "herald:plugin/plugin@0.7.0");
    let pod = serde_json::json!({"group": "", "version": "v1", "kind": "Pod"});
    assert_eq!(
        report["manifest"]["admission"],
        serde_json::json!({
            "validating": {
                "rules": [
                    {"kind": pod, "operations": ["CREATE", "UPDATE"]},
                    {"kind": pod, "operations": ["UPDATE"], "subresource": "status"},
                ],
                "failurePolicy": "Fail",
                "timeoutSeconds": 10,
            },
            "mutating": {
                "rules": [{"kind": pod, "operations": ["CREATE"]}],
                "objectSelector": "app",
                "failurePolicy": "Ignore",
                "timeoutSeconds": 5,
            },
        }),
        "{}",
        report["manifest"]
    );

    let reviews = dir.join("reviews.jsonl");
    let no_labels = serde_json::json!({});
    std::fs::write(
        &reviews,
        [
            pod_review(1, "CREATE", "web-1", no_labels.clone(), ""),
            pod_review(
                2,
                "CREATE",
                "web-2",
                serde_json::json!({"team": "a", "gate": "rewrite"}),
                "",
            ),
            pod_review(
                3,
                "CREATE",
                "web-3",
                serde_json::json!({"team": "a", "gate": "deny"}),
                "",
            ),
            pod_review(
                4,
                "UPDATE",
                "web-4",
                serde_json::json!({"gate": "error"}),
                "",
            ),
            pod_review(
                5,
                "UPDATE",
                "web-5",
                serde_json::json!({"gate": "panic"}),
                "status",
            ),
            pod_review(6, "DELETE", "web-6", no_labels, ""),
        ]
        .concat(),
    )
    .unwrap();
    let replay = run(&[
        "plugin",
        "replay",
        wasm_arg,
        "--reviews",
        reviews.to_str().unwrap(),
        "--keep-going",
    ]);
    let stdout = String::from_utf8_lossy(&replay.stdout);
    let verdicts: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("review "))
        .collect();
    let expected = [
        "review 1 00000001-gate CREATE Pod shop/web-1: patched",
        "review 2 00000002-gate CREATE Pod shop/web-2: patched",
        "review 3 00000003-gate CREATE Pod shop/web-3: denied (422): gate=deny refuses shop/web-3",
        "review 4 00000004-gate UPDATE Pod shop/web-4: FAILED: ",
        "review 5 00000005-gate UPDATE Pod shop/web-5: FAILED: ",
        "review 6 00000006-gate DELETE Pod shop/web-6: not covered by the plugin's webhooks",
    ];
    assert_eq!(verdicts.len(), expected.len(), "{stdout}");
    for (verdict, expected) in verdicts.iter().zip(expected) {
        assert!(
            verdict.starts_with(expected),
            "{verdict:?} is not {expected:?}:\n{stdout}"
        );
    }
    assert!(verdicts[3].contains("gate=error fails"), "{stdout}");
    assert!(
        verdicts[4].contains("Validate panicked: gate=panic panics"),
        "{stdout}"
    );
    // Every field of the first review, as the plugin received it.
    let fields = "uid=00000001-gate operation=CREATE kind=v1/Pod resource=pods subresource=\"\" \
                  key=shop/web-1 user=alice@example.com userUID=u-1 groups=dev,system:authenticated \
                  extra=\"scopes=a+b\" dryRun=true options=CreateOptions oldResourceVersion=none";
    for line in [
        format!("  [go-admission-gate] info mutate {fields}"),
        format!("  [go-admission-gate] info validate {fields}"),
        "  warning: checked for alice@example.com".to_owned(),
        r#"  patch: [{"op":"add","path":"/metadata/labels/team","value":"shop"}]"#.to_owned(),
        "  warning: refused by label".to_owned(),
    ] {
        assert!(stdout.lines().any(|l| l == line), "{line:?} in:\n{stdout}");
    }
    assert!(
        stdout.contains("subresource=status key=shop/web-5")
            && stdout.contains("oldResourceVersion=7"),
        "{stdout}"
    );
    let rewritten = stdout
        .lines()
        .skip_while(|l| !l.starts_with("review 2 "))
        .find(|l| l.starts_with("  patch: "))
        .unwrap_or_default();
    assert!(rewritten.contains(r#""value":"nginx:1.27""#), "{stdout}");
    assert!(
        stdout.ends_with(
            "summary: 6 reviews, 0 allowed, 1 denied, 2 patched, 1 not covered, 2 failed\n"
        ),
        "{stdout}"
    );
    eprintln!(
        "go admission fixture end to end: {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// `count` add events of distinct Pods of about 4 KB each, as JSON lines.
fn pods_of_4kb(count: usize) -> String {
    let env: Vec<serde_json::Value> = (0..60)
        .map(|i| serde_json::json!({"name": format!("E{i}"), "value": "x".repeat(30)}))
        .collect();
    (0..count)
        .map(|i| {
            let pod = serde_json::json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": format!("web-{i}"), "namespace": "shop",
                    "uid": format!("uid-{i}"), "resourceVersion": format!("{}", i + 1)},
                "spec": {"containers": [{"name": "app", "image": "nginx:1.27", "env": env}]},
                "status": {"phase": "Running"},
            });
            format!("{}\n", serde_json::json!({"type": "add", "object": pod}))
        })
        .collect()
}

/// The host writes each Pod into the plugin's memory through the SDK's
/// `cabi_realloc`; a Go allocation there that grows the heap makes the
/// runtime read the monotonic clock, which traps inside a realloc unless the
/// SDK pauses the adapter's clock. B11's Go plugin, parsing every Pod into a
/// map, trapped so within a few dozen calls before it did (here, every
/// fourth call).
#[test]
fn a_go_plugin_takes_hundreds_of_pods_whose_copies_grow_its_heap() {
    let dir = temp_dir("go-heap");
    let wasm = dir.join("sdk-bench-go.wasm");
    let building = one_go_build_at_a_time();
    succeed(
        "herald plugin build bench/plugins/go",
        herald()
            .args(["plugin", "build"])
            .arg(repo().join("bench/plugins/go"))
            .arg("-o")
            .arg(&wasm),
        INSTALL,
    );
    drop(building);
    let events = dir.join("pods.jsonl");
    std::fs::write(&events, pods_of_4kb(300)).unwrap();
    let replay = run(&[
        "plugin",
        "replay",
        wasm.to_str().unwrap(),
        "--events",
        events.to_str().unwrap(),
        "--config",
        r#"{"mode": "parse"}"#,
        "--keep-going",
    ]);
    let stdout = String::from_utf8_lossy(&replay.stdout);
    let failed: Vec<&str> = stdout.lines().filter(|l| l.contains("FAILED")).collect();
    assert!(failed.is_empty(), "{}", failed.join("\n"));
    assert!(
        stdout.ends_with("summary: 300 events, 300 ok, 0 failed, 0 skipped\n"),
        "{stdout}"
    );
}

/// The SDK's delivery fixture (`sdk/go/testdata/delivery-options`) built by
/// `herald plugin build`: a Go plugin whose `DeliveryOptions` skip the old
/// state (and take batches of 16) answers 0.7.0's `options` through the
/// real ABI, and the host honours it: replayed, its update carries the new
/// state alone, and `Old` says why. (go-pod-phases above takes the default,
/// and reads each update's old state.)
#[test]
fn a_go_plugin_that_skips_the_old_state_gets_updates_without_it() {
    let dir = temp_dir("go-delivery-options");
    let wasm = dir.join("go-delivery-options.wasm");
    build_go("sdk/go/testdata/delivery-options", &wasm);
    let wasm_arg = wasm.to_str().unwrap();
    assert_eq!(
        check_report(wasm_arg)["world"],
        "herald:plugin/plugin@0.7.0"
    );
    let config_map = |version: &str, value: &str| {
        serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "settings", "namespace": "shop", "uid": "u1", "resourceVersion": version},
            "data": {"a": value}})
    };
    let (old, new) = (config_map("5", "b"), config_map("6", "c"));
    let events = dir.join("events.jsonl");
    std::fs::write(
        &events,
        format!(
            "{}\n{}\n",
            serde_json::json!({"type": "add", "object": old}),
            serde_json::json!({"type": "update", "old": old, "object": new}),
        ),
    )
    .unwrap();
    let replay = run(&[
        "plugin",
        "replay",
        wasm_arg,
        "--events",
        events.to_str().unwrap(),
    ]);
    let out = String::from_utf8_lossy(&replay.stdout);
    assert!(replay.status.success(), "{out}");
    let new_bytes = new.to_string().len();
    assert!(
        out.contains(&format!(
            "[go-delivery-options] info updated key=shop/settings old=0 new={new_bytes} err=\"the update carries no old state (the handler's DeliveryOptions skip it: SkipOldState)\""
        )),
        "{out}"
    );
    assert!(
        out.ends_with("summary: 2 events, 2 ok, 0 failed, 0 skipped\n"),
        "{out}"
    );
}

/// A Go module whose main package does not compile.
fn broken_project() -> herald::scratch::ScratchDir {
    let dir = temp_dir("go-broken");
    std::fs::write(dir.join("go.mod"), "module broken\n\ngo 1.24\n").unwrap();
    std::fs::write(
        dir.join("main.go"),
        "package main\n\nfunc main() { undefinedThing() }\n",
    )
    .unwrap();
    dir
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn herald_plugin_build_names_what_is_at_fault() {
    // A build failure: Go's own output, naming the file and line.
    let dir = broken_project();
    let output = herald()
        .args(["plugin", "build"])
        .arg(&dir)
        .output()
        .unwrap();
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert!(err.starts_with("error: `go build` failed in "), "{err}");
    assert!(err.contains("main.go:3:"), "{err}");
    assert!(err.contains("undefined: undefinedThing"), "{err}");
    assert!(
        !dir.join(format!(
            "{}.wasm",
            dir.file_name().unwrap().to_string_lossy()
        ))
        .exists()
    );

    // A Go program that is not a plugin: built, but refused before
    // componentizing, saying what its main package lacks.
    std::fs::write(dir.join("main.go"), "package main\n\nfunc main() {}\n").unwrap();
    let output = herald()
        .args(["plugin", "build"])
        .arg(&dir)
        .output()
        .unwrap();
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert!(err.contains("exports no `manifest`"), "{err}");
    assert!(err.contains("herald.Register"), "{err}");

    // No Go at all: what to install.
    let output = herald()
        .args(["plugin", "build"])
        .arg(&dir)
        .env("PATH", "/nonexistent")
        .env_remove("HERALD_GO")
        .output()
        .unwrap();
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert!(err.starts_with("error: cannot run `go`"), "{err}");
    assert!(err.contains("install Go 1.24 or later"), "{err}");

    // Another language: the command that builds it.
    let rust = repo().join("plugins/pod-lifecycle");
    let output = herald()
        .args(["plugin", "build"])
        .arg(&rust)
        .output()
        .unwrap();
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert!(err.contains("is a Rust plugin"), "{err}");
    assert!(
        err.contains("cargo build --release --target wasm32-wasip2"),
        "{err}"
    );
}

/// The SDK's cluster fixture (`sdk/go/testdata/cluster-census`) built by
/// `herald plugin build`: a Go plugin that asks for its cluster imports
/// `herald:plugin/cluster@0.6.0` (one that does not imports nothing of
/// 0.6.0, as go-pod-phases above; both are world 0.7.0 components), and the
/// calls answer through the real ABI in replay (the default cluster, named
/// `default`).
#[test]
fn a_go_plugin_that_asks_for_its_cluster_is_answered_through_the_abi() {
    let dir = temp_dir("go-cluster");
    let wasm = dir.join("go-cluster-census.wasm");
    build_go("sdk/go/testdata/cluster-census", &wasm);
    let wasm_arg = wasm.to_str().unwrap();
    let report = check_report(wasm_arg);
    assert_eq!(report["world"], "herald:plugin/plugin@0.7.0");
    let events = dir.join("events.jsonl");
    std::fs::write(
        &events,
        serde_json::json!({"type": "add", "initial": true, "object": {
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "settings", "namespace": "shop", "uid": "u1", "resourceVersion": "5"},
            "data": {"a": "b"}}})
        .to_string()
            + "\n",
    )
    .unwrap();
    let replay = run(&[
        "plugin",
        "replay",
        wasm_arg,
        "--events",
        events.to_str().unwrap(),
    ]);
    let out = String::from_utf8_lossy(&replay.stdout);
    assert!(replay.status.success(), "{out}");
    assert!(
        out.contains(
            "[go-cluster-census] info counted key=shop/settings cluster=default clusters=default"
        ),
        "{out}"
    );
}
