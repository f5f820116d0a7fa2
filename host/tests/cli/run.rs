//! `herald run` against the embedded API server: endpoints, readiness,
//! plugins reacting to changes, hot reload, graceful shutdown, and refusal
//! of an invalid configuration.

use super::process::{Running, get, repo, run, temp_dir, wait_for_response, wait_for_status};
use herald_test_artifacts as artifacts;
use std::path::Path;

/// Starts `herald run` on the embedded API server seeded with the example
/// cluster, with the plugins of `plugins` and the configuration `config`.
pub(super) fn start(plugins: &Path, config: &str, kubeconfig: &Path) -> Running {
    let dir = plugins.parent().unwrap();
    let config_file = dir.join("herald.yaml");
    std::fs::write(&config_file, config).unwrap();
    let seed = repo().join("examples/cluster");
    Running::start(&[
        "run",
        "--config",
        config_file.to_str().unwrap(),
        "--embedded",
        "--seed",
        seed.to_str().unwrap(),
        "--plugins",
        plugins.to_str().unwrap(),
        "--kubeconfig-out",
        kubeconfig.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
        "--log-format",
        "json",
    ])
}

/// The value of the first sample of `metric` (with any labels) in a scrape.
pub(super) fn sample(metrics: &str, metric: &str) -> f64 {
    metrics
        .lines()
        .find(|line| line.starts_with(metric) && !line.starts_with('#'))
        .and_then(|line| line.rsplit(' ').next())
        .and_then(|value| value.parse().ok())
        .unwrap_or_else(|| panic!("no sample of {metric} in:\n{metrics}"))
}

/// Waits until the informers have applied their first list; returns the
/// number of objects cached then.
fn first_list_applied(address: &str) -> usize {
    let deadline = std::time::Instant::now() + super::process::PATIENCE;
    loop {
        let (_, metrics) = get(address, "/metrics");
        if metrics.contains("herald_relists_total{")
            && sample(&metrics, "herald_relists_total") >= 1.0
        {
            return sample(&metrics, "herald_cache_objects") as usize;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no first list:\n{metrics}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Deletes the first Pod of namespace `shop` through kube-rs, as kubectl
/// would; returns its name.
fn delete_a_shop_pod(kubeconfig: &Path) -> String {
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::{Api, DeleteParams, ListParams};
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let kubeconfig = kube::config::Kubeconfig::read_from(kubeconfig).unwrap();
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .unwrap();
        let pods: Api<Pod> = Api::namespaced(kube::Client::try_from(config).unwrap(), "shop");
        let name = pods.list(&ListParams::default()).await.unwrap().items[0]
            .metadata
            .name
            .clone()
            .unwrap();
        pods.delete(&name, &DeleteParams::default()).await.unwrap();
        name
    })
}

/// Every metric family in a scrape in the text format 0.0.4 is described in
/// `docs/metrics.md` (by its exposed name, which for a counter's `# TYPE`
/// line in that format includes `_total`, as its samples do), and the page
/// describes no metric the daemon does not serve, but for those its table
/// says are served "Under sharding" (this daemon is not sharded; the
/// sharding suite scrapes those).
fn assert_every_metric_is_documented(metrics: &str) {
    let served: std::collections::BTreeSet<String> = metrics
        .lines()
        .filter_map(|line| line.strip_prefix("# TYPE "))
        .map(|line| match line.split_once(' ') {
            Some((name, _)) => name.to_owned(),
            None => panic!("a TYPE line without a type: {line}"),
        })
        .collect();
    let page = std::fs::read_to_string(repo().join("docs/metrics.md")).unwrap();
    let documented: std::collections::BTreeSet<String> = page
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|quoted| {
            quoted.starts_with("herald_")
                && quoted
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
        .map(str::to_owned)
        .collect();
    let sharded_only: std::collections::BTreeSet<String> = page
        .lines()
        .filter_map(|row| {
            let cells: Vec<&str> = row.split('|').map(str::trim).collect();
            let name = cells.get(1)?.strip_prefix('`')?.strip_suffix('`')?;
            cells
                .get(4)?
                .starts_with("Under sharding")
                .then(|| name.to_owned())
        })
        .collect();
    assert_eq!(sharded_only.len(), 3, "{sharded_only:?}");
    assert!(served.len() >= 20, "too few metric families: {served:?}");
    let undocumented: Vec<_> = served.difference(&documented).collect();
    let not_served: Vec<_> = documented
        .difference(&served)
        .filter(|name| !sharded_only.contains(*name))
        .collect();
    assert!(
        undocumented.is_empty() && not_served.is_empty(),
        "docs/metrics.md is out of date: served but not described {undocumented:?}; described but not served {not_served:?}"
    );
}

/// `GET /metrics` with `accept` (none if `None`): the response's
/// `content-type` and body.
fn scrape(address: &str, accept: Option<&str>) -> (String, String) {
    let response = super::process::request(address, "/metrics", accept);
    assert_eq!(response.status, 200, "{}", response.body);
    (
        response.content_type.expect("a content-type"),
        response.body,
    )
}

/// Checks a `/metrics` body with the parsers Prometheus itself uses, run by
/// `host/tests/promcheck` (a Go program: `go run`, as `.ci/run` has Go for
/// the Go SDK): `text` is the text format 0.0.4 through `expfmt`'s parser
/// and promlint (what `promtool check metrics` runs), `openmetrics` is
/// OpenMetrics through the parser Prometheus scrapes it with. Go's are the
/// reference parsers of both formats; no Rust crate reads 0.0.4 as
/// Prometheus does (openmetrics-parser applies OpenMetrics' suffix rules to
/// it, so it accepts the mislabelled counters this guards against, and
/// prometheus-parse ignores what it does not match). Fails with every
/// problem the parser or the linter found.
fn promcheck(format: &str, body: &str) {
    use std::io::Write;
    let mut child = std::process::Command::new("go")
        .args(["run", ".", format])
        .current_dir(repo().join("host/tests/promcheck"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("cannot run `go` ({e}): install Go 1.23 or later with the Go module proxy reachable (.ci/run checks for it)")
        });
    child
        .stdin
        .take()
        .unwrap()
        .write_all(body.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "Prometheus' {format} parser rejects /metrics:\n{}\n{body}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// `/metrics` in both formats, as Prometheus negotiates them, read by
/// Prometheus' own parsers.
fn assert_prometheus_reads_both_formats(address: &str) {
    let (content_type, text) = scrape(address, None);
    assert_eq!(content_type, "text/plain; version=0.0.4; charset=utf-8");
    assert!(!text.contains("# EOF") && !text.contains("{}"), "{text}");
    assert!(
        text.contains("# TYPE herald_notifications_delivered_total counter\n"),
        "{text}"
    );
    promcheck("text", &text);
    // What Prometheus 3 sends.
    let (content_type, openmetrics) = scrape(
        address,
        Some(
            "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.5,\
             application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=1.0.0;\
             escaping=allow-utf-8;q=0.3,text/plain;version=0.0.4;q=0.2,*/*;q=0.1",
        ),
    );
    assert_eq!(
        content_type,
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    );
    assert!(openmetrics.ends_with("# EOF\n") && !openmetrics.contains("{}"));
    assert!(
        openmetrics.contains("# TYPE herald_notifications_delivered counter\n"),
        "{openmetrics}"
    );
    promcheck("openmetrics", &openmetrics);
}

#[test]
fn the_daemon_serves_its_endpoints_reacts_to_changes_and_reloads_plugins() {
    let work = temp_dir("run");
    let plugins = work.join("plugins.d");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::copy(artifacts::POD_LIFECYCLE, plugins.join("pod-lifecycle.wasm")).unwrap();
    let kubeconfig = work.join("kubeconfig");
    let config = "log:\n  level: info,herald::call=debug\n";
    let mut herald = start(&plugins, config, &kubeconfig);
    let address = herald.endpoints();

    assert_eq!(wait_for_status(&address, "/readyz", 200), "ready\n");
    assert_eq!(get(&address, "/healthz"), (200, "ok\n".to_owned()));
    let (_, status) = get(&address, "/plugins");
    let status: serde_json::Value = serde_json::from_str(&status).unwrap();
    assert_eq!(status["ready"], true);
    assert_eq!(status["plugins"][0]["name"], "pod-lifecycle");
    assert_eq!(status["plugins"][0]["synced"], true);
    let (_, metrics) = get(&address, "/metrics");
    assert_eq!(sample(&metrics, "herald_ready"), 1.0);
    assert!(sample(&metrics, "herald_cache_objects") >= 1.0);
    assert!(sample(&metrics, "herald_notifications_delivered_total") >= 1.0);
    assert!(metrics.contains("herald_handler_duration_seconds_bucket{"));
    assert_every_metric_is_documented(&metrics);
    assert_prometheus_reads_both_formats(&address);
    // With herald::call at debug, a plugin's lines sit in a span saying
    // which call they belong to.
    let listed = herald.wait_for_log("listed pod=shop/");
    for field in [
        "\"name\":\"call\"",
        "\"plugin\":\"pod-lifecycle\"",
        "\"resource\":\"pods\"",
        "\"event\":\"add\"",
        "\"key\":\"shop/",
    ] {
        assert!(listed.contains(field), "{field} missing from {listed}");
    }

    let deleted = delete_a_shop_pod(&kubeconfig);
    herald.wait_for_log(&format!("deleted pod=shop/{deleted}"));

    std::fs::copy(artifacts::IMAGE_POLICY, plugins.join("image-policy.wasm")).unwrap();
    herald.wait_for_log_with(&["plugin loaded", "\"plugin\":\"image-policy\""]);
    let (_, status) = get(&address, "/plugins");
    let status: serde_json::Value = serde_json::from_str(&status).unwrap();
    let names: Vec<&str> = status["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["image-policy", "pod-lifecycle"]);

    herald.terminate();
    let (code, _) = herald.wait();
    assert_eq!(code, Some(0), "log:\n{}", herald.log.join("\n"));
}

/// Starts the daemon with the `slow` fixture taking `delay_ms` per call and
/// a grace period of `grace`; returns it, its endpoints' address and the
/// number of Pods its first list brought (the slow plugin's backlog).
fn start_slow(work: &Path, delay_ms: u64, grace: &str) -> (Running, String, usize) {
    let plugins = work.join("plugins.d");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::copy(artifacts::SLOW, plugins.join("slow.wasm")).unwrap();
    let config = format!(
        "shutdown:\n  gracePeriod: {grace}\nplugins:\n  slow:\n    config: {{delayMs: {delay_ms}}}\n"
    );
    let mut herald = start(&plugins, &config, &work.join("kubeconfig"));
    let address = herald.endpoints();
    let pods = first_list_applied(&address);
    (herald, address, pods)
}

/// How many notifications the `slow` fixture logged as done.
fn handled(herald: &Running) -> usize {
    herald
        .log
        .iter()
        .filter(|l| l.contains("done event=add"))
        .count()
}

#[test]
fn sigterm_drops_readiness_first_then_drains_every_queue_and_exits_zero() {
    let work = temp_dir("drain");
    let (mut herald, address, pods) = start_slow(&work, 150, "60s");
    assert!(pods >= 3, "the example cluster has Pods");
    herald.terminate();
    // Readiness drops while the queue still drains: the daemon answers
    // "shutting down" before it exits.
    wait_for_response(&address, "/readyz", |code, body| {
        code == 503 && body == "not ready\n- shutting down\n"
    });
    let (code, _) = herald.wait();
    assert_eq!(code, Some(0));
    assert_eq!(
        handled(&herald),
        pods,
        "every buffered notification was delivered"
    );
    assert!(herald.log.iter().any(|l| l.contains("shutdown complete")));
}

#[test]
fn the_grace_period_bounds_the_drain() {
    let work = temp_dir("grace");
    let (mut herald, _, pods) = start_slow(&work, 800, "1s");
    herald.terminate();
    let (code, _) = herald.wait();
    assert_eq!(code, Some(0));
    let handled = handled(&herald);
    assert!(
        handled < pods,
        "{handled} of {pods} handled: the backlog outlasts the grace period and is dropped"
    );
    assert!(herald.log.iter().any(|l| l.contains("shutdown complete")));
}

#[test]
fn an_invalid_configuration_is_refused_at_start_naming_the_key() {
    let dir = temp_dir("config");
    let file = dir.join("herald.yaml");
    for (text, key) in [
        (
            "limits:\n  default: {callDeadline: soon, memory: 64Mi}\n",
            "limits.default.callDeadline",
        ),
        ("pluginDirectory: /plugins\n", "pluginDirectory"),
        (
            "queue:\n  initialBackoff: 1m\n  maxBackoff: 1s\n",
            "queue.initialBackoff",
        ),
    ] {
        std::fs::write(&file, text).unwrap();
        let output = run(&["run", "--config", file.to_str().unwrap()]);
        assert_eq!(output.status.code(), Some(1), "{text}");
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.starts_with(&format!("error: {}: {key}: ", file.display())),
            "{stderr}"
        );
    }
}

/// Sends `method path` to the endpoints and returns the response's status
/// line.
fn status_line(address: &str, method: &str, path: &str) -> String {
    use std::io::{BufRead, Write};
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nContent-Length: 0\r\n\r\n"
    )
    .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(stream)
        .read_line(&mut line)
        .unwrap();
    line.trim_end().to_owned()
}

/// An open `/events/stream`, read line by line.
fn open_stream(address: &str) -> std::io::Lines<std::io::BufReader<std::net::TcpStream>> {
    use std::io::{BufRead, Write};
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(super::process::PATIENCE))
        .unwrap();
    write!(
        stream,
        "GET /events/stream HTTP/1.1\r\nHost: {address}\r\n\r\n"
    )
    .unwrap();
    let mut lines = std::io::BufReader::new(stream).lines();
    let status = lines.next().unwrap().unwrap();
    assert!(status.contains(" 200 "), "{status}");
    lines
}

#[test]
fn the_dashboard_shows_deliveries_live_and_the_reload_history_and_nothing_can_be_changed_through_it()
 {
    let work = temp_dir("dashboard-api");
    let plugins = work.join("plugins.d");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::copy(artifacts::POD_LIFECYCLE, plugins.join("pod-lifecycle.wasm")).unwrap();
    let kubeconfig = work.join("kubeconfig");
    let mut herald = start(&plugins, "", &kubeconfig);
    let address = herald.endpoints();
    wait_for_status(&address, "/readyz", 200);
    let snapshot = || -> serde_json::Value {
        let (code, body) = get(&address, "/api/dashboard");
        assert_eq!(code, 200, "{body}");
        serde_json::from_str(&body).unwrap()
    };

    let (code, page) = get(&address, "/");
    assert_eq!(code, 200);
    assert!(page.contains("src=\"dashboard.js\""), "{page}");
    for asset in ["/dashboard.js", "/dashboard.css"] {
        assert_eq!(get(&address, asset).0, 200, "{asset}");
    }
    for (method, path) in [
        ("POST", "/"),
        ("PUT", "/plugins"),
        ("DELETE", "/api/dashboard"),
    ] {
        assert!(
            status_line(&address, method, path).contains(" 405 "),
            "{method} {path} is refused"
        );
    }

    let first = snapshot();
    let plugin = &first["plugins"][0];
    assert_eq!(plugin["name"], "pod-lifecycle");
    assert_eq!(plugin["dispatching"], true);
    assert_eq!(first["replica"]["dispatching"], true);
    assert!(
        plugin["logs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|line| line["message"]
                .as_str()
                .unwrap()
                .starts_with("listed pod=shop/")),
        "its initial list's log lines are kept: {plugin:#}"
    );
    let pods = first["informers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|informer| informer["key"] == "pods")
        .unwrap_or_else(|| panic!("no pods informer: {first:#}"));
    assert_eq!(pods["synced"], true);
    assert!(pods["objects"].as_u64().unwrap() >= 1, "{pods}");
    assert_eq!(first["reloads"][0]["action"], "loaded");

    // A deletion reaches an open stream as a delivery event.
    let mut stream = open_stream(&address);
    let deleted = delete_a_shop_pod(&kubeconfig);
    let key = format!("\"key\":\"shop/{deleted}\"");
    let event = stream
        .by_ref()
        .map(|line| line.expect("the stream stays open"))
        .find(|line| line.starts_with("data: ") && line.contains(&key))
        .unwrap();
    for field in [
        "\"plugin\":\"pod-lifecycle\"",
        "\"event\":\"delete\"",
        "\"outcome\":\"delivered\"",
    ] {
        assert!(event.contains(field), "{field} missing from {event}");
    }
    // Streams are bounded: this one and 15 more, then none.
    let more: Vec<_> = (0..15).map(|_| open_stream(&address)).collect();
    assert!(status_line(&address, "GET", "/events/stream").contains(" 503 "));
    drop(more);

    // A swap, a refusal and an unload, newest first in the history. Each
    // file appears whole (written beside the directory, then renamed in),
    // as an operator's deploy does: a loaded machine can otherwise show the
    // watcher a file truncated and not yet written, a refusal of its own.
    let put = |name: &str, bytes: &[u8]| {
        let staged = work.join(format!("{name}.staged"));
        std::fs::write(&staged, bytes).unwrap();
        std::fs::rename(&staged, plugins.join(name)).unwrap();
    };
    let v2 = artifacts::variant(&artifacts::bytes(artifacts::POD_LIFECYCLE), "v2");
    put("pod-lifecycle.wasm", &v2);
    herald.wait_for_log("plugin swapped to a new version");
    put("broken.wasm", b"not a component");
    herald.wait_for_log("plugin file not loaded");
    std::fs::remove_file(plugins.join("pod-lifecycle.wasm")).unwrap();
    herald.wait_for_log("plugin unloaded");
    let last = snapshot();
    let actions: Vec<&str> = last["reloads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|record| record["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        ["unloaded", "refused", "swapped", "loaded"],
        "{last:#}"
    );
    let swapped = &last["reloads"][2];
    assert_eq!(swapped["plugin"], "pod-lifecycle");
    assert_ne!(swapped["from"], swapped["revision"]);
    assert_eq!(
        swapped["from"],
        first["plugins"][0]["sha256"].as_str().unwrap()[..12]
    );
    assert!(
        last["files"]
            .as_array()
            .unwrap()
            .iter()
            .any(
                |file| file["file"].as_str().unwrap().ends_with("broken.wasm")
                    && file["state"] == "failed"
            ),
        "{last:#}"
    );

    // An open stream does not hold up a graceful shutdown.
    herald.terminate();
    let (code, _) = herald.wait();
    assert_eq!(code, Some(0), "log:\n{}", herald.log.join("\n"));
    drop(stream);
}
