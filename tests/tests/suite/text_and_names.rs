//! Text a plugin writes into other systems, and the names its metrics take
//! (issue 38, classes 4 and 5), against the embedded API server: an Event's
//! reason and action are identifiers or refused and its note is stored with
//! every unsafe character as a visible escape; a metric name that would
//! share an exposed name with another plugin's is refused, and a label
//! value that could change how `/metrics` reads is dropped and counted.
//! Each test checks what the server holds or `/metrics` writes afterwards,
//! and that a neighbour kept its deliveries. Both log formats, with the
//! real binary: `host/tests/cli/hostile.rs`.

use super::acting::{Actor, command, outcome, target};
use super::authority::{neighbour, neighbour_saw_everything};
use herald::capability::Grants;
use herald::capability::events::EventsGrant;
use herald::daemon::Daemon;
use herald::plugin::{LoadOptions, LoadedPlugin};
use herald_tests::{PATIENCE, artifacts, engine, eventually, load_with, messages};
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams, PostParams};
use serde_json::{Value, json};
use std::sync::Arc;

/// One character of every kind that changes how text reads, in a terminal
/// (`kubectl describe`), a browser or a log viewer: a CSI sequence, an OSC
/// 8 hyperlink, a bidi override and isolate, a C1 CSI, `DEL`, `NUL`, a
/// line break, a tab, line and paragraph separators, a zero width space.
const HOSTILE: &str = "ok\u{1b}[31mred\u{1b}]8;;https://evil.example/\u{7}click\u{1b}]8;;\u{7}\
                       \u{202e}desrever\u{202c}\u{2067}iso\u{2069}\u{9b}2J\u{7f}\u{0}\nRow\tTab\
                       \u{2028}\u{2029}\u{200b}\u{85}end";

/// What each of those characters must be stored or shown as.
const ESCAPES: &[&str] = &[
    "\\u{1b}[31m",
    "\\u{1b}]8;;https://evil.example/\\u{7}click",
    "\\u{202e}desrever\\u{202c}",
    "\\u{2067}iso\\u{2069}",
    "\\u{9b}2J",
    "\\u{7f}",
    "\\u{0}",
    "\\nRow\\tTab",
    "\\u{2028}\\u{2029}\\u{200b}\\u{85}",
];

/// True for a character that may not be stored or shown raw (the rule,
/// written out again rather than taken from the code under test).
fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}' | '\u{2029}' | '\u{061c}' | '\u{200b}' | '\u{200e}' | '\u{200f}'
                | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_events_reason_and_action_are_identifiers_and_its_note_is_stored_escaped() {
    let grants = Grants {
        events: Some(EventsGrant::default()),
        ..Grants::default()
    };
    let actor = Actor::start(&[], &["events"], grants).await;
    let ns = actor.namespace().to_owned();
    let (plugin, sink) = neighbour(&ns);
    actor.daemon.start(plugin).await.unwrap();
    let about = target(&ns, "subject");
    // A reason or an action outside UpperCamelCase is refused, naming the
    // field; nothing is stored.
    for (field, data) in [
        (
            "reason",
            json!({"reason": format!("Bad{HOSTILE}"), "action": "Check"}),
        ),
        ("reason", json!({"reason": "two words", "action": "Check"})),
        (
            "reason",
            json!({"reason": "Bidi\u{202e}", "action": "Check"}),
        ),
        (
            "action",
            json!({"reason": "Checked", "action": format!("Bad{HOSTILE}")}),
        ),
        (
            "action",
            json!({"reason": "Checked", "action": "Line\u{2028}Break"}),
        ),
        ("action", json!({"reason": "Checked", "action": "C1\u{9b}"})),
    ] {
        let mut extra = data.clone();
        extra["verb"] = json!("event");
        extra["note"] = json!("n");
        let lines = actor.run(command(&about, extra)).await;
        assert_eq!(outcome(&lines[0]), "invalid", "{data}: {lines:?}");
        assert!(
            lines[0].ends_with(&format!("detail=causes={field}")),
            "{data}: {lines:?}"
        );
    }
    // A note is human text: stored, each unsafe character a visible escape.
    let lines = actor
        .run(command(
            &about,
            json!({"verb": "event", "type": "Warning", "reason": "Checked",
                   "action": "Check", "note": HOSTILE}),
        ))
        .await;
    assert_eq!(outcome(&lines[0]), "ok", "{lines:?}");
    let events: Api<Event> = Api::namespaced(actor.cluster.client.clone(), &ns);
    let stored = events.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(stored.len(), 1, "only the well-formed Event: {stored:?}");
    let event = &stored[0];
    assert_eq!(event.reason.as_deref(), Some("Checked"));
    assert_eq!(event.action.as_deref(), Some("Check"));
    let note = event.note.as_deref().unwrap_or_default();
    assert!(note.starts_with("ok\\u{1b}[31mred"), "{note}");
    for escape in ESCAPES {
        assert!(note.contains(escape), "{escape} in {note}");
    }
    // Nothing in the Event as the server holds it is an unsafe character.
    let whole = serde_json::to_value(event).unwrap();
    let mut found = Vec::new();
    strings(&whole, &mut found);
    for string in found {
        assert!(!string.chars().any(is_unsafe), "{string:?} in {whole}");
    }
    assert_eq!(actor.access.stats.events("kube-actor", "invalid"), 6);
    // A note of 1 KiB of escapes is cut between two of them.
    let long = "\u{1b}".repeat(1000);
    let lines = actor
        .run(command(
            &target(&ns, "other"),
            json!({"verb": "event", "reason": "Long", "action": "Check", "note": long}),
        ))
        .await;
    assert_eq!(outcome(&lines[0]), "ok", "{lines:?}");
    let stored = events.list(&ListParams::default()).await.unwrap().items;
    let note = stored
        .iter()
        .find(|e| e.reason.as_deref() == Some("Long"))
        .and_then(|e| e.note.clone())
        .unwrap();
    assert_eq!(note, "\\u{1b}".repeat(1024 / 6), "{note}");
    neighbour_saw_everything(&actor, &sink).await;
}

/// Every string in `value`, keys left out.
fn strings(value: &Value, found: &mut Vec<String>) {
    match value {
        Value::String(s) => found.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|v| strings(v, found)),
        Value::Object(map) => map.values().for_each(|v| strings(v, found)),
        _ => {}
    }
}

/// The names each `# TYPE` line of `text` declares, with every suffix its
/// samples may take; panics on a name declared twice.
fn declared(text: &str) -> std::collections::HashSet<String> {
    let mut taken = std::collections::HashSet::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("# TYPE ") else {
            continue;
        };
        let family = rest.split(' ').next().unwrap();
        for suffix in [
            "", "_bucket", "_sum", "_count", "_created", "_total", "_info",
        ] {
            let name = format!("{family}{suffix}");
            assert!(taken.insert(name.clone()), "{name} twice in:\n{text}");
        }
    }
    taken
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_metric_name_cannot_share_an_exposed_name_and_a_label_value_cannot_write_unsafe_text() {
    let cluster = super::cluster::TestCluster::start().await;
    let daemon = Arc::new(Daemon::new(
        Arc::new(super::recording::informers(cluster.client.clone())),
        herald::dispatch::RetryPolicy::default(),
    ));
    let options = |name: &str, metrics: Value| LoadOptions {
        config: Some(
            json!({
                "name": name,
                "kind": {"version": "v1", "kind": "ConfigMap"},
                "namespace": cluster.namespace,
                "metrics": metrics,
            })
            .to_string(),
        ),
        metrics: Some(daemon.plugin_metrics().clone()),
        ..LoadOptions::default()
    };
    // The reproduction: plugin `a`'s `x_` would expose
    // herald_plugin_a__x__bucket and __sum, the families of plugin `a--x`'s
    // gauges `bucket` and `sum`. `x_` is refused, whichever loads first.
    let refused = LoadedPlugin::load(
        engine(),
        &artifacts::bytes(artifacts::HOSTILE),
        options("a", json!([{"name": "x_", "kind": "gauge"}])),
    )
    .expect_err("a metric name ending in '_' is refused");
    let refused = refused.to_string();
    assert!(
        refused.contains("\"x_\"") && refused.contains("end in '_'"),
        "{refused}"
    );
    let (victim, victim_log) = load_with(
        artifacts::HOSTILE,
        options(
            "a--x",
            json!([{"name": "bucket", "kind": "gauge"}, {"name": "sum", "kind": "gauge"}]),
        ),
    );
    daemon.start(victim).await.expect("a--x loads");
    let refused = LoadedPlugin::load(
        engine(),
        &artifacts::bytes(artifacts::HOSTILE),
        options("a", json!([{"name": "x_", "kind": "gauge"}])),
    )
    .expect_err("still refused with a--x running");
    assert!(refused.to_string().contains("end in '_'"), "{refused}");
    // Plugin `a` with well-formed names loads beside it.
    let (a, a_log) = load_with(
        artifacts::HOSTILE,
        options("a", json!([{"name": "x", "kind": "gauge"}])),
    );
    daemon.start(a).await.expect("a loads");
    // A label value with unsafe characters is dropped and counted; the
    // plugin's other updates go on.
    let (probe, _) = load_with(
        artifacts::METRICS_PROBE,
        LoadOptions {
            metrics: Some(daemon.plugin_metrics().clone()),
            ..LoadOptions::default()
        },
    );
    daemon.start(probe).await.expect("metrics-probe loads");
    for (name, label) in [("hostile-label", HOSTILE), ("fine-label", "fine")] {
        let update: k8s_openapi::api::core::v1::ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": name, "labels": {"herald.dev/metrics-probe": "update"}},
            "data": {"label": label},
        }))
        .unwrap();
        cluster
            .config_maps()
            .create(&PostParams::default(), &update)
            .await
            .unwrap();
    }
    cluster.create_config_map("trigger", "a", "1").await;
    let scrape = || {
        let registry =
            herald::ops::metrics::registry(herald::ops::metrics::Sources::of(daemon.clone()));
        herald::telemetry::encode(&registry)
    };
    eventually("every plugin handled its ConfigMaps", PATIENCE, async || {
        let done = |log: &herald::capability::log::MemorySink| {
            messages(&log.lines())
                .iter()
                .filter(|m| m.starts_with("hostile done"))
                .count()
                >= 3
        };
        done(&victim_log)
            && done(&a_log)
            && scrape().contains(
                "herald_plugin_metrics_probe__updates_total{plugin=\"metrics-probe\",kind=\"fine\"} 1",
            )
    })
    .await;
    let text = scrape();
    // One `# TYPE` line per exposed name, host and plugins together, and
    // every sample under a declared name.
    let taken = declared(&text);
    for sample in text.lines().filter(|l| !l.starts_with('#')) {
        let name = sample.split(['{', ' ']).next().unwrap();
        assert!(taken.contains(name), "{name} is not declared in:\n{text}");
    }
    assert!(
        text.contains("herald_plugin_a__x__bucket{plugin=\"a--x\"} 1"),
        "{text}"
    );
    assert!(
        text.contains("herald_plugin_a__x__sum{plugin=\"a--x\"} 1"),
        "{text}"
    );
    assert!(
        text.contains("herald_plugin_a__x{plugin=\"a\"} 1"),
        "{text}"
    );
    assert!(
        text.contains(
            "herald_plugin_metric_errors_total{plugin=\"metrics-probe\",reason=\"label-unsafe\"} 1"
        ),
        "{text}"
    );
    assert!(!text.chars().any(|c| c != '\n' && is_unsafe(c)), "{text:?}");
    assert!(!text.contains("desrever"), "{text}");
    cluster.cleanup().await;
}
