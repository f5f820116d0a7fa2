//! A hostile plugin against the host's own log, in the human format an
//! operator reads: it writes lines made to read as another plugin's (line
//! breaks, escape sequences), floods its stdout, and makes tens of
//! thousands of calls it is refused. The log keeps one line per line, every
//! forged line still says whose it is, the audit lines it causes are
//! rate-limited and summed up (never silently), and a neighbour keeps its
//! deliveries. The other classes of issue 27 are in the suite
//! (`tests/tests/suite/authority.rs`).

use super::process::{Running, get, repo, temp_dir, wait_for_status};
use herald_test_artifacts as artifacts;
use std::time::Instant;

/// The sample of `metric` with `labels` in a scrape, if there is one.
fn sample(metrics: &str, metric: &str, labels: &str) -> Option<f64> {
    let prefix = format!("{metric}{{{labels}}} ");
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(&prefix)?.parse().ok())
}

#[test]
fn a_hostile_plugin_can_neither_forge_the_hosts_log_nor_flood_it() {
    let work = temp_dir("hostile");
    let plugins = work.join("plugins.d");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::copy(artifacts::HOSTILE, plugins.join("hostile.wasm")).unwrap();
    std::fs::copy(artifacts::RECORDER, plugins.join("recorder.wasm")).unwrap();
    // The hostile plugin on the four Pods of `shop`, each add making every
    // attack; its neighbour, the recorder, on every Pod.
    let config = r#"
plugins:
  hostile:
    config:
      namespace: shop
      callDeadlineMs: 10000
      attacks: [forge-log, refused-calls, stdout-flood]
      count: 20000
      bytes: 4000000
"#;
    let config_file = work.join("herald.yaml");
    std::fs::write(&config_file, config).unwrap();
    let seed = repo().join("examples/cluster");
    let started = Instant::now();
    let mut herald = Running::start(&[
        "run",
        "--config",
        config_file.to_str().unwrap(),
        "--embedded",
        "--seed",
        seed.to_str().unwrap(),
        "--plugins",
        plugins.to_str().unwrap(),
        "--kubeconfig-out",
        work.join("kubeconfig").to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
        "--log-format",
        "human",
    ]);
    let address = herald.endpoints();
    wait_for_status(&address, "/readyz", 200);
    // Its own log lines are rate-limited too: its handled calls are
    // counted in the metrics.
    let delivered = "herald_notifications_delivered_total{plugin=\"hostile\",resource=\"pods\"} ";
    let metrics = loop {
        let (_, metrics) = get(&address, "/metrics");
        if metrics
            .lines()
            .any(|l| l.strip_prefix(delivered) == Some("4"))
        {
            break metrics;
        }
        assert!(
            started.elapsed() < super::process::PATIENCE,
            "the hostile plugin never handled the four Pods of shop:\n{metrics}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let elapsed = started.elapsed().as_secs_f64();
    herald.terminate();
    herald.wait();
    let log = &herald.log;

    // Forged lines: each is one line of the log, and says whose it is.
    let forged: Vec<&String> = log
        .iter()
        .filter(|line| line.contains("victim-says-pwned"))
        .collect();
    assert!(!forged.is_empty(), "the plugin's lines were logged");
    for line in &forged {
        assert!(
            line.ends_with("plugin=hostile revision=") || line.contains(" plugin=hostile "),
            "{line}"
        );
        assert!(!line.starts_with("2026-11-25T00:00:00"), "{line}");
    }
    assert!(
        forged.iter().any(|l| l.contains("innocent\\n2026")),
        "a line break in a message is written as an escape"
    );
    assert!(
        log.iter().all(|line| !line.contains('\u{1b}')),
        "no escape sequence reaches the terminal"
    );
    // 80,000 refused calls: audit lines within the plugin's rate (a burst
    // of 2,000, then 200 a second), the rest counted and summed up.
    let audit_lines = log
        .iter()
        .filter(|l| l.contains("herald::audit") && l.contains("plugin=hostile"))
        .count();
    let allowed = 2000.0 + 200.0 * elapsed + 20.0;
    assert!(
        (audit_lines as f64) < allowed,
        "{audit_lines} audit lines in {elapsed:.1} s"
    );
    let suppressed = sample(
        &metrics,
        "herald_plugin_audit_lines_suppressed_total",
        "plugin=\"hostile\"",
    )
    .expect("the suppressed audit lines are counted");
    assert!(suppressed > 10_000.0, "{suppressed}");
    assert!(
        log.iter()
            .any(|l| l.contains("audit lines of this plugin suppressed")),
        "a summary line says so"
    );
    let refused = sample(
        &metrics,
        "herald_plugin_api_requests_total",
        "plugin=\"hostile\",verb=\"get\",outcome=\"not-granted\",mode=\"enforce\"",
    )
    .expect("every refused call is counted");
    assert!(refused >= 40_000.0, "{refused}");
    // 16 MB of stdout: bounded in bytes (a 2 MiB burst, then 256 KiB a
    // second), what was dropped summed up.
    let stdout_bytes: usize = log
        .iter()
        .filter(|l| l.contains("plugin=hostile") && l.contains("source=stdout"))
        .map(|l| l.len())
        .sum();
    assert!(
        (stdout_bytes as f64) < 2.0 * ((2 << 20) as f64 + 262_144.0 * elapsed),
        "{stdout_bytes} bytes of stdout lines in {elapsed:.1} s"
    );
    assert!(
        log.iter().any(|l| l.contains("output rate limit: dropped")),
        "the dropped output is summed up"
    );
    // The neighbour saw every Pod of the example cluster (four in shop,
    // four in payments).
    let seen: std::collections::BTreeSet<&str> = log
        .iter()
        .filter(|l| l.contains("plugin=recorder") && l.contains("event=add"))
        .filter_map(|l| l.split(" key=").nth(1)?.split(' ').next())
        .collect();
    assert_eq!(seen.len(), 8, "{seen:?}");
    assert_eq!(seen.iter().filter(|k| k.starts_with("shop/")).count(), 4);
}
