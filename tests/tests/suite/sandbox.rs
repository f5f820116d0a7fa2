//! The sandbox denies files, environment and network; output becomes logs;
//! cache look-ups stay within the plugin's subscriptions.

use super::objects::{context, pod};
use herald::plugin::{LogLevel, LogSource, PluginInstance};
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
