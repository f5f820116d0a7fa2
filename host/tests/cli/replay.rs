//! `herald plugin replay`: each shipped event file through its example
//! plugin gives exactly the expected log lines; failures stop the replay
//! unless `--keep-going`; a malformed file is refused naming the line.
//! Recorded AdmissionReviews are answered as the daemon answers them.

use super::process::{repo, run, temp_dir};
use herald_test_artifacts as artifacts;

/// Replays `events` (under examples/events/) into `plugin`; returns the exit
/// code and the plugin's log lines as `level message`.
fn replay(plugin: &str, events: &str, extra: &[&str]) -> (Option<i32>, Vec<String>, String) {
    let events = repo().join("examples/events").join(events);
    let mut args = vec![
        "plugin",
        "replay",
        plugin,
        "--events",
        events.to_str().unwrap(),
    ];
    args.extend(extra);
    let output = run(&args);
    let stdout = String::from_utf8(output.stdout).unwrap();
    let logged = stdout
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix('['))
        .filter_map(|line| line.split_once("] ").map(|(_, rest)| rest.to_owned()))
        .collect();
    (output.status.code(), logged, stdout)
}

#[test]
fn pod_lifecycle_reports_each_phase_of_the_recorded_pods() {
    let (code, logged, stdout) = replay(artifacts::POD_LIFECYCLE, "pods.jsonl", &[]);
    assert_eq!(code, Some(0), "{stdout}");
    assert_eq!(
        logged,
        [
            "info listed pod=shop/web-0 phase=Running",
            "info created pod=shop/web-1 phase=Pending",
            "info transitioned pod=shop/web-1 from=Pending to=Running",
            "warn restarted pod=shop/web-1 container=app count=1",
            "info transitioned pod=shop/web-1 from=Running to=Succeeded",
            "info deleted pod=shop/web-1 phase=Succeeded",
            "info vanished pod=shop/web-0 phase=Running",
        ]
    );
    assert!(stdout.ends_with("summary: 7 events, 7 ok, 0 failed, 0 skipped\n"));
}

#[test]
fn image_policy_flags_untagged_latest_foreign_and_invalid_images() {
    let config = format!(
        "@{}",
        repo().join("examples/events/image-policy.yaml").display()
    );
    let (code, logged, stdout) = replay(
        artifacts::IMAGE_POLICY,
        "images.jsonl",
        &["--config", &config],
    );
    assert_eq!(code, Some(0), "{stdout}");
    assert_eq!(
        logged,
        [
            "warn flagged pod=shop/tools-0 init-container=setup image=alpine:latest reason=latest-tag",
            "warn flagged pod=shop/tools-0 container=shell image=busybox reason=no-tag",
            "warn flagged pod=shop/agent-0 container=agent image=quay.io/acme/agent:2.1 reason=registry-not-allowed registry=quay.io",
            "warn flagged pod=shop/api-0 container=api image=ghcr.io/acme/api:latest reason=latest-tag",
            "warn flagged pod=shop/odd-0 container=app image=Registry.Example/UPPER CASE:tag! reason=invalid-reference",
        ]
    );
}

#[test]
fn rollout_watch_follows_a_rollout_through_the_cache_of_replica_sets() {
    let (code, logged, stdout) = replay(artifacts::ROLLOUT_WATCH, "deployments.jsonl", &[]);
    assert_eq!(code, Some(0), "{stdout}");
    assert_eq!(
        logged,
        [
            "info listed deployment=shop/web generation=1 replicas=3 updated=3 available=3 complete=true",
            "info started deployment=shop/web generation=2",
            "info progressed deployment=shop/web updated=0/3 ready=3 available=3 new=web-5c4b6:3/3 old=-",
            "info progressed deployment=shop/web updated=1/3 ready=3 available=3 new=web-7d9f8:0/1 old=web-5c4b6:3/3",
            "warn unavailable deployment=shop/web replicas=1",
            "info progressed deployment=shop/web updated=2/3 ready=3 available=3 new=web-7d9f8:1/1 old=web-5c4b6:2/2",
            "info completed deployment=shop/web generation=2 replicas=3 new=web-7d9f8:3/3",
            "info scaled deployment=shop/web from=3 to=5",
            "info progressed deployment=shop/web updated=5/5 ready=4 available=4 new=web-7d9f8:3/3 old=-",
            "warn unavailable deployment=shop/web replicas=1",
            "info completed deployment=shop/web generation=3 replicas=5 new=web-7d9f8:3/3",
            "info deleted deployment=shop/web",
        ]
    );
}

#[test]
fn a_failing_handler_stops_the_replay_unless_told_to_keep_going() {
    let (code, _, stdout) = replay(artifacts::ALWAYS_ERROR, "pods.jsonl", &[]);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(stdout.contains("#1 add Pod shop/web-0 (line 1): FAILED: handler returned an error"));
    assert!(stdout.contains("stopped at the first failure"));
    assert!(stdout.ends_with("summary: 1 events, 0 ok, 1 failed, 0 skipped\n"));
    let (code, _, stdout) = replay(artifacts::ALWAYS_ERROR, "pods.jsonl", &["--keep-going"]);
    assert_eq!(code, Some(0), "{stdout}");
    assert!(stdout.ends_with("summary: 7 events, 0 ok, 7 failed, 0 skipped\n"));
}

#[test]
fn a_malformed_event_file_is_refused_naming_the_line() {
    let dir = temp_dir("replay");
    let events = dir.join("bad.jsonl");
    std::fs::write(
        &events,
        "{\"type\":\"add\",\"object\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\"}}}\n{\"type\":\"upsert\",\"object\":{}}\n",
    )
    .unwrap();
    let output = run(&[
        "plugin",
        "replay",
        artifacts::POD_LIFECYCLE,
        "--events",
        events.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with(&format!("error: {}: line 2: ", events.display())),
        "{stderr}"
    );
    assert!(stderr.contains("upsert"), "{stderr}");
}

#[test]
fn replay_prints_each_write_a_plugin_would_make_and_scripts_api_answers() {
    let events = repo().join("plugins/namespace-defaults/replay/new-namespace.jsonl");
    let args = [
        "plugin",
        "replay",
        artifacts::NAMESPACE_DEFAULTS,
        "--events",
        events.to_str().unwrap(),
    ];
    let output = run(&args);
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    let intents: Vec<&str> = stdout
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix("=> "))
        .collect();
    assert!(
        intents.iter().any(|i| i.starts_with(
            "apply networking.k8s.io/v1 NetworkPolicy team-a/herald-default-deny (force)"
        )),
        "{stdout}"
    );
    assert!(
        intents.iter().all(|i| !i.contains("kube-system")),
        "excluded namespaces get nothing: {stdout}"
    );

    // A scripted refusal reaches the plugin as the typed error.
    let dir = temp_dir("replay-responses");
    let responses = dir.join("responses.yaml");
    std::fs::write(
        &responses,
        "- verb: apply\n  kind: NetworkPolicy\n  error: {type: forbidden, message: scripted refusal}\n",
    )
    .unwrap();
    let mut scripted = args.to_vec();
    scripted.extend(["--responses", responses.to_str().unwrap(), "--keep-going"]);
    let output = run(&scripted);
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        stdout.contains(
            "NetworkPolicy team-a/herald-default-deny (force) → forbidden: scripted refusal"
        ),
        "{stdout}"
    );
}

#[test]
fn replay_shows_every_host_call_metric_updates_requeues_and_event_names_included() {
    let dir = temp_dir("replay-busy");
    let responses = dir.join("responses.yaml");
    std::fs::write(
        &responses,
        "- http: {method: POST, url: \"https://hooks.example.com/x\", times: 1, status: 503, headers: {retry-after: \"30\"}}\n",
    )
    .unwrap();
    let events = repo().join("plugins/crashloop-alert/replay/crashloop.jsonl");
    let output = run(&[
        "plugin",
        "replay",
        artifacts::CRASHLOOP_ALERT,
        "--events",
        events.to_str().unwrap(),
        "--config",
        r#"{"webhookUrl": "https://hooks.example.com/x"}"#,
        "--responses",
        responses.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    let calls: Vec<&str> = stdout
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix("=> "))
        .filter(|call| !call.starts_with("http "))
        .collect();
    assert_eq!(calls.len(), 4, "{stdout}");
    // The Event, by the name it is created with and what it is about.
    assert!(
        calls[0].starts_with("create events.k8s.io/v1 Event shop/web-0.")
            && calls[0].ends_with(" about Pod shop/web-0 → ok"),
        "{stdout}"
    );
    // The busy webhook: counted, and the Pod asked for again after 30 s.
    assert_eq!(calls[1], "metric add webhook_failures_total 1");
    assert!(calls[2].starts_with("requeue after 30s"), "{stdout}");
    // The next delivery sends the alert and counts it.
    assert_eq!(calls[3], "metric add alerts_total{namespace=\"shop\"} 1");
}

#[test]
fn replay_prints_each_http_request_and_answers_it_offline_from_the_script() {
    let dir = temp_dir("replay-http");
    let configmap = |name: &str, url: &str, method: &str, count: u32, body: &str| {
        serde_json::json!({"type": "add", "object": {
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "probe", "uid": format!("uid-{name}"),
                "resourceVersion": "1", "labels": {"herald.dev/egress-probe": "request"}},
            "data": {"url": url, "method": method, "count": count.to_string(), "body": body},
        }})
        .to_string()
    };
    let events = dir.join("events.jsonl");
    // Unroutable addresses: a request that reached the network would fail,
    // not answer.
    std::fs::write(
        &events,
        [
            configmap(
                "alert",
                "https://hooks.example.com/alerts?token=secret",
                "POST",
                2,
                "{\"pod\":\"web-0\"}\nsecond line",
            ),
            configmap("other", "http://192.0.2.1/status", "GET", 1, ""),
            configmap("refused", "http://192.0.2.1/refuse/me", "GET", 1, ""),
        ]
        .join("\n"),
    )
    .unwrap();
    let responses = dir.join("responses.yaml");
    std::fs::write(
        &responses,
        "- http: {method: POST, url: \"https://hooks.example.com/alerts\", times: 1, status: 503, body: later}\n\
         - http: {url: \"http://192.0.2.1/refuse/*\", error: connection-refused}\n",
    )
    .unwrap();
    let output = run(&[
        "plugin",
        "replay",
        artifacts::EGRESS_PROBE,
        "--events",
        events.to_str().unwrap(),
        "--responses",
        responses.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    let requests: Vec<&str> = stdout
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix("=> http "))
        .collect();
    assert_eq!(
        requests,
        [
            "POST https://hooks.example.com/alerts (27 bytes: {\"pod\":\"web-0\"}…) → 503 (scripted)",
            "POST https://hooks.example.com/alerts (27 bytes: {\"pod\":\"web-0\"}…) → 200 (unscripted: empty body)",
            "GET http://192.0.2.1/status (0 bytes) → 200 (unscripted: empty body)",
            "GET http://192.0.2.1/refuse/me (0 bytes) → error connection-refused (scripted)",
        ],
        "{stdout}"
    );
    assert!(
        !stdout.contains("secret"),
        "queries are never shown: {stdout}"
    );
    let statuses: Vec<&str> = stdout
        .lines()
        .filter_map(|line| {
            line.split_once("egress-probe request=")
                .map(|(_, rest)| rest)
        })
        .collect();
    assert_eq!(
        statuses,
        [
            "probe/alert i=0 status=503 bytes=5 location=-",
            "probe/alert i=1 status=200 bytes=0 location=-",
            "probe/other i=0 status=200 bytes=0 location=-",
            "probe/refused i=0 error=ErrorCode::ConnectionRefused",
        ],
        "{stdout}"
    );
}

/// An AdmissionReview of the creation of ConfigMap `name` in `shop`,
/// labelled `probe: label` (none if empty), on one line.
fn config_map_review(uid: &str, name: &str, label: &str) -> String {
    let mut labels = serde_json::json!({});
    if !label.is_empty() {
        labels["probe"] = label.into();
    }
    let review = serde_json::json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
            "resource": {"group": "", "version": "v1", "resource": "configmaps"},
            "name": name,
            "namespace": "shop",
            "operation": "CREATE",
            "userInfo": {"username": "alice"},
            "object": {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": "shop", "labels": labels},
            },
        },
    });
    format!("{review}\n")
}

/// Replays `reviews` (written to a file) into the admission probe, with
/// `extra` arguments; returns the exit code and stdout.
fn replay_reviews(reviews: &str, extra: &[&str]) -> (Option<i32>, String) {
    let dir = temp_dir("replay-reviews");
    let file = dir.join("reviews.jsonl");
    std::fs::write(&file, reviews).unwrap();
    let mut args = vec![
        "plugin",
        "replay",
        artifacts::ADMISSION_PROBE,
        "--reviews",
        file.to_str().unwrap(),
    ];
    args.extend(extra);
    let output = run(&args);
    (
        output.status.code(),
        String::from_utf8(output.stdout).unwrap(),
    )
}

#[test]
fn replayed_reviews_are_mutated_then_validated_as_the_daemon_answers_them() {
    let reviews = [
        config_map_review("u1", "plain", ""),
        config_map_review("u2", "refused", "deny"),
        config_map_review("u3", "renaming", "rename"),
    ]
    .concat();
    let (code, stdout) = replay_reviews(&reviews, &[]);
    assert_eq!(code, Some(1), "the last review failed: {stdout}");
    let lines: Vec<&str> = stdout.lines().collect();
    // The mutation is printed as the patch the host computed, and the
    // patched object then passes validation.
    assert_eq!(
        lines[0], "review 1 u1 CREATE ConfigMap shop/plain: patched",
        "{stdout}"
    );
    assert!(
        lines[1] == r#"  patch: [{"op":"add","path":"/metadata/labels/mutated","value":"yes"}]"#,
        "{stdout}"
    );
    // A refusal at the mutating webhook is final: validate is not asked.
    assert_eq!(
        lines[2],
        "review 2 u2 CREATE ConfigMap shop/refused: denied (403): probe refuses to mutate",
        "{stdout}"
    );
    // A change that renames the object is refused by the host, and the
    // plugin's failure policy answers: a failure.
    assert!(
        lines[3].starts_with("review 3 u3 CREATE ConfigMap shop/renaming: FAILED: herald: plugin admission-probe could not decide")
            && lines[3].contains("alters the object's name"),
        "{stdout}"
    );
    assert_eq!(
        lines.last().copied(),
        Some("summary: 3 reviews, 0 allowed, 1 denied, 1 patched, 0 not covered, 1 failed")
    );
}

#[test]
fn a_review_the_plugin_cannot_decide_stops_the_replay_unless_told_to_keep_going() {
    let reviews = [
        config_map_review("u1", "trapping", "trap"),
        config_map_review("u2", "plain", ""),
    ]
    .concat();
    let (code, stdout) = replay_reviews(&reviews, &[]);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(
        stdout.contains("review 1 u1 CREATE ConfigMap shop/trapping: FAILED: "),
        "{stdout}"
    );
    assert!(stdout.contains("stopped at the first failure"), "{stdout}");
    assert!(!stdout.contains("review 2"), "{stdout}");
    let (code, stdout) = replay_reviews(&reviews, &["--keep-going"]);
    assert_eq!(code, Some(0), "{stdout}");
    assert!(
        stdout.ends_with(
            "summary: 2 reviews, 0 allowed, 0 denied, 1 patched, 0 not covered, 1 failed\n"
        ),
        "{stdout}"
    );
}

#[test]
fn replayed_events_fill_the_cache_that_replayed_reviews_read() {
    let dir = temp_dir("replay-both");
    let events = dir.join("events.jsonl");
    std::fs::write(
        &events,
        "{\"type\":\"add\",\"object\":{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"probe-seen\",\"namespace\":\"shop\"},\"data\":{\"value\":\"7\"}}}\n",
    )
    .unwrap();
    let (code, stdout) = replay_reviews(
        &config_map_review("u1", "reader", "read"),
        &["--events", events.to_str().unwrap()],
    );
    assert_eq!(code, Some(0), "{stdout}");
    assert!(
        stdout.contains("summary: 1 events, 1 ok, 0 failed, 0 skipped\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("review 1 u1 CREATE ConfigMap shop/reader: denied (403): read 7\n"),
        "the review's look-up saw the replayed event: {stdout}"
    );
}

#[test]
fn reviews_for_a_plugin_that_admits_nothing_or_no_input_at_all_are_refused() {
    let dir = temp_dir("replay-nothing");
    let file = dir.join("reviews.jsonl");
    std::fs::write(&file, config_map_review("u1", "plain", "")).unwrap();
    let output = run(&[
        "plugin",
        "replay",
        artifacts::POD_LIFECYCLE,
        "--reviews",
        file.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("pod-lifecycle admits nothing"), "{stderr}");
    let output = run(&["plugin", "replay", artifacts::POD_LIFECYCLE]);
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--events") && stderr.contains("--reviews"),
        "{stderr}"
    );
    let output = run(&[
        "plugin",
        "replay",
        artifacts::ADMISSION_PROBE,
        "--reviews",
        dir.join("missing.jsonl").to_str().unwrap(),
    ]);
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("missing.jsonl: cannot read"), "{stderr}");
}
