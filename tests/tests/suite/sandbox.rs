//! The sandbox denies files, environment and network; output becomes logs;
//! cache look-ups stay within the plugin's subscriptions.

use super::objects::{context, pod};
use herald::capability::log::{LogLevel, LogSource};
use herald::plugin::PluginInstance;
use herald_tests::{artifacts, load, messages};

#[test]
fn files_environment_and_network_are_denied() {
    let (plugin, logs) = load(artifacts::SANDBOX_ESCAPE, None);
    let mut instance = PluginInstance::new(plugin).unwrap();
    let object = pod("ns", "escape", 1);
    instance
        .on_add(&context(&object), &object.to_string())
        .unwrap();
    let lines = messages(&logs.take());
    let attempts: Vec<&String> = lines.iter().filter(|l| l.starts_with("attempt=")).collect();
    assert!(attempts.len() >= 5, "every attempt is reported: {lines:?}");
    for attempt in &attempts {
        assert!(attempt.contains(" result=denied"), "{attempt}");
    }
    assert!(!std::path::Path::new("/tmp/herald-escape").exists());
}

#[test]
fn stdout_and_stderr_become_log_lines_tagged_with_the_plugin() {
    let (plugin, logs) = load(artifacts::SANDBOX_ESCAPE, None);
    let mut instance = PluginInstance::new(plugin).unwrap();
    let object = pod("ns", "escape", 1);
    instance
        .on_add(&context(&object), &object.to_string())
        .unwrap();
    let lines = logs.take();
    let stdout = lines
        .iter()
        .find(|l| l.source == LogSource::Stdout)
        .expect("a stdout line");
    assert_eq!(stdout.message, "stdout-line from sandbox-escape");
    assert_eq!(stdout.plugin, "sandbox-escape");
    assert_eq!(stdout.level, LogLevel::Info);
    let stderr = lines
        .iter()
        .find(|l| l.source == LogSource::Stderr)
        .expect("a stderr line");
    assert_eq!(stderr.level, LogLevel::Warn);
}

#[test]
fn cache_look_ups_outside_the_subscriptions_are_refused() {
    let (plugin, logs) = load(artifacts::CACHE_SNOOP, None);
    let mut replayer = herald::replay::Replayer::new(plugin, logs).unwrap();
    let object = pod("ns", "snoop", 1);
    let event = herald::replay::RecordedEvent {
        line: 1,
        kind: herald::replay::EventType::Add,
        object,
        old: None,
        initial: false,
        resync: false,
        final_state_unknown: false,
    };
    let outcome = replayer.deliver(&event);
    let lines = messages(&outcome.logs);
    let deployments = lines
        .iter()
        .find(|l| l.starts_with("lookup=deployments"))
        .expect("the snoop reports its attempt");
    assert!(
        deployments.contains("not subscribed") || deployments.contains("NotSubscribed"),
        "{deployments}"
    );
    let own = lines
        .iter()
        .find(|l| l.starts_with("lookup=own-pod"))
        .expect("the snoop looks up its own pod");
    assert!(own.contains("result=found"), "{own}");
}

#[test]
fn a_cache_answer_larger_than_the_memory_cap_is_refused_before_it_is_built() {
    use herald::plugin::{FaultKind, LoadOptions, RequestedLimits};
    use herald::replay::{DeliveryResult, EventType, RecordedEvent};
    let cap = 8 * 1024 * 1024;
    let options = LoadOptions {
        overrides: RequestedLimits {
            call_deadline: None,
            memory_bytes: Some(cap),
        },
        ..LoadOptions::default()
    };
    let (plugin, logs) = herald_tests::load_with(artifacts::CACHE_HOG, options);
    let mut replayer = herald::replay::Replayer::new(plugin, logs).unwrap();
    // 256 KiB ConfigMaps: the cache outgrows the 8 MiB cap after about 32.
    let blob = "x".repeat(256 * 1024);
    let mut outcomes = Vec::new();
    for n in 0..64 {
        let object = serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("big-{n}"), "namespace": "ns", "resourceVersion": (n + 1).to_string()},
            "data": {"blob": blob},
        });
        let event = RecordedEvent {
            line: n + 1,
            kind: EventType::Add,
            object,
            old: None,
            initial: false,
            resync: false,
            final_state_unknown: false,
        };
        outcomes.push(replayer.deliver(&event).result);
    }
    assert!(
        matches!(outcomes[0], DeliveryResult::Ok),
        "a small answer fits: {:?}",
        outcomes[0]
    );
    let refused = outcomes
        .iter()
        .find_map(|result| match result {
            DeliveryResult::Failed(err) => Some(err),
            _ => None,
        })
        .expect("the answer outgrows the cap");
    assert_eq!(refused.fault(), Some(FaultKind::MemoryLimit), "{refused}");
    assert!(refused.to_string().contains("host answer"), "{refused}");
}
