//! A hostile plugin against the host's own log, in the human format an
//! operator reads and the JSON format a collector reads: it writes lines
//! made to read as another plugin's (line breaks, escape sequences, bidi
//! overrides, C1 controls, hyperlinks, a JSON object of its own), floods
//! its stdout, and makes tens of thousands of calls it is refused. The log
//! keeps one line per line, every forged line still says whose it is, no
//! unsafe character reaches the log raw (nor, in JSON, decodes from it),
//! the audit lines it causes are rate-limited and summed up (never
//! silently), and a neighbour keeps its deliveries. The other classes of
//! issue 27 are in the suite (`tests/tests/suite/authority.rs`).

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

/// True for a character that may not reach the log raw: what
/// `herald::text::is_unsafe` names (the test repeats the rule rather than
/// trusting the code under test).
fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}' | '\u{2029}' | '\u{061c}' | '\u{200b}' | '\u{200e}' | '\u{200f}'
                | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

/// The escapes of the forged line's characters, as both formats show them.
const ESCAPES: &[&str] = &[
    "\\u{1b}[2J",
    "\\u{2028}",
    "\\u{2029}",
    "\\u{202e}desrever\\u{202c}",
    "\\u{9b}31m",
    "\\u{7f}",
    "\\u{0}",
    "\\u{200b}",
    "\\u{85}",
    "\\u{1b}]8;;https://evil.example/\\u{7}click",
];

/// What the run of [`run_hostile`] left: the log, a scrape, its length.
struct Run {
    log: Vec<String>,
    metrics: String,
    elapsed: f64,
}

/// Runs the hostile plugin and its neighbour with `--log-format format`
/// until the hostile one handled the four Pods of `shop`.
fn run_hostile(format: &str) -> Run {
    let work = temp_dir(&format!("hostile-{format}"));
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
        format,
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
    Run {
        log: std::mem::take(&mut herald.log),
        metrics,
        elapsed,
    }
}

#[test]
fn a_hostile_plugin_can_neither_forge_the_hosts_log_nor_flood_it() {
    let Run {
        log,
        metrics,
        elapsed,
    } = run_hostile("human");
    let log = &log;

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
    for line in log {
        assert!(
            !line.chars().any(is_unsafe),
            "a raw unsafe character: {line:?}"
        );
    }
    let message = forged
        .iter()
        .find(|l| l.contains("source=log"))
        .expect("the plugin's own log line");
    for escape in ESCAPES {
        assert!(message.contains(escape), "{escape} in {message}");
    }
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

/// Every string in `value`, keys left out.
fn strings(value: &serde_json::Value, found: &mut Vec<String>) {
    match value {
        serde_json::Value::String(s) => found.push(s.clone()),
        serde_json::Value::Array(items) => items.iter().for_each(|v| strings(v, found)),
        serde_json::Value::Object(map) => map.values().for_each(|v| strings(v, found)),
        _ => {}
    }
}

#[test]
fn a_hostile_plugin_cannot_forge_the_json_log_either() {
    let Run { log, .. } = run_hostile("json");
    // Every line is one JSON object, and nothing in it is, or decodes to,
    // a raw unsafe character.
    let lines: Vec<serde_json::Value> = log
        .iter()
        .map(|line| {
            assert!(
                !line.chars().any(is_unsafe),
                "a raw unsafe character: {line:?}"
            );
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"))
        })
        .collect();
    for (line, value) in log.iter().zip(&lines) {
        let mut found = Vec::new();
        strings(value, &mut found);
        for string in found {
            assert!(
                !string.chars().any(is_unsafe),
                "{string:?} decodes from {line}"
            );
        }
    }
    // Forged lines are the hostile plugin's, each written with every
    // escape, as the human format writes them.
    let field = |value: &serde_json::Value, name: &str| -> String {
        value["fields"][name]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    let forged: Vec<&serde_json::Value> = lines
        .iter()
        .filter(|v| field(v, "message").contains("victim-says-pwned"))
        .collect();
    assert!(!forged.is_empty(), "the plugin's lines were logged");
    for value in &forged {
        assert_eq!(field(value, "plugin"), "hostile", "{value}");
    }
    let message = forged
        .iter()
        .map(|v| field(v, "message"))
        .find(|m| m.starts_with("innocent\\n2026"))
        .expect("the plugin's own log line, its line break escaped");
    for escape in ESCAPES {
        assert!(message.contains(escape), "{escape} in {message}");
    }
    assert!(
        lines.iter().all(|v| field(v, "plugin") != "victim"),
        "no line of the plugin's making reads as another plugin's"
    );
    // The neighbour saw every Pod of the example cluster.
    let seen: std::collections::BTreeSet<String> = lines
        .iter()
        .filter(|v| field(v, "plugin") == "recorder")
        .map(|v| field(v, "message"))
        .filter(|m| m.contains("event=add"))
        .filter_map(|m| Some(m.split(" key=").nth(1)?.split(' ').next()?.to_owned()))
        .collect();
    assert_eq!(seen.len(), 8, "{seen:?}");
}
