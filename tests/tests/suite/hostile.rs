//! Hostile plugins are stopped with the right fault, their instance is
//! rebuilt, and a well-behaved plugin next to them keeps working.

use super::objects::{context, pod};
use herald::capability::log::LogLevel;
use herald::plugin::{CallError, FaultKind, LoadOptions, PluginInstance, RequestedLimits};
use herald_tests::{artifacts, load, load_with, messages};
use std::time::Duration;

/// Calls `on-add` of `path` and returns the error it must fail with.
fn fault_of(path: &str, options: LoadOptions) -> (CallError, PluginInstance) {
    let (plugin, _logs) = load_with(path, options);
    let mut instance = PluginInstance::new(plugin).unwrap();
    let object = pod("ns", "victim", 1);
    let err = instance
        .on_add(&context(&object), &object.to_string())
        .expect_err("the hostile call must fail");
    (err, instance)
}

/// After a fault the same plugin is called again (it is rebuilt), and a
/// well-behaved plugin in the same engine still handles its events.
fn host_still_works(mut hostile: PluginInstance, expected: FaultKind) {
    let object = pod("ns", "again", 2);
    let err = hostile
        .on_add(&context(&object), &object.to_string())
        .unwrap_err();
    assert_eq!(err.fault(), Some(expected), "second call: {err}");
    assert!(hostile.rebuilds() >= 1, "the faulted instance was rebuilt");

    let (recorder, logs) = load(artifacts::RECORDER, None);
    let mut recorder = PluginInstance::new(recorder).unwrap();
    for rv in 1..=20 {
        let object = pod("ns", "ok", rv);
        recorder
            .on_add(&context(&object), &object.to_string())
            .unwrap();
    }
    assert_eq!(logs.take().len(), 20);
}

fn short_deadline() -> LoadOptions {
    LoadOptions {
        overrides: RequestedLimits {
            call_deadline: Some(Duration::from_millis(200)),
            memory_bytes: None,
        },
        ..LoadOptions::default()
    }
}

#[test]
fn an_infinite_loop_hits_the_deadline() {
    let (err, instance) = fault_of(artifacts::INFINITE_LOOP, short_deadline());
    assert_eq!(err.fault(), Some(FaultKind::Deadline), "{err}");
    assert!(err.to_string().contains("200 ms deadline"), "{err}");
    host_still_works(instance, FaultKind::Deadline);
}

#[test]
fn a_plugin_looping_forever_does_not_hold_up_another_plugin() {
    let options = LoadOptions {
        overrides: RequestedLimits {
            call_deadline: Some(Duration::from_secs(5)),
            memory_bytes: None,
        },
        ..LoadOptions::default()
    };
    let (looping, _logs) = load_with(artifacts::INFINITE_LOOP, options);
    let mut looping = PluginInstance::new(looping).unwrap();
    let stuck = std::thread::spawn(move || {
        let object = pod("ns", "stuck", 1);
        looping.on_add(&context(&object), &object.to_string())
    });
    let (recorder, logs) = load(artifacts::RECORDER, None);
    let mut recorder = PluginInstance::new(recorder).unwrap();
    for rv in 1..=200 {
        let object = pod("ns", "flowing", rv);
        recorder
            .on_add(&context(&object), &object.to_string())
            .unwrap();
    }
    assert_eq!(logs.take().len(), 200);
    assert!(
        !stuck.is_finished(),
        "the recorder finished its 200 calls while the loop was still running"
    );
    let err = stuck.join().unwrap().unwrap_err();
    assert_eq!(err.fault(), Some(FaultKind::Deadline), "{err}");
}

#[test]
fn deep_recursion_overflows_the_stack() {
    let (err, instance) = fault_of(artifacts::DEEP_RECURSION, LoadOptions::default());
    assert_eq!(err.fault(), Some(FaultKind::StackOverflow), "{err}");
    host_still_works(instance, FaultKind::StackOverflow);
}

/// Load options capping an instance's memory at 16 MiB.
fn capped_at_16_mib() -> LoadOptions {
    LoadOptions {
        overrides: RequestedLimits {
            call_deadline: None,
            memory_bytes: Some(16 * 1024 * 1024),
        },
        ..LoadOptions::default()
    }
}

#[test]
fn a_memory_bomb_hits_the_memory_cap() {
    let options = capped_at_16_mib();
    let (err, instance) = fault_of(artifacts::MEMORY_BOMB, options);
    assert_eq!(err.fault(), Some(FaultKind::MemoryLimit), "{err}");
    assert!(err.to_string().contains("16777216"), "names the cap: {err}");
    host_still_works(instance, FaultKind::MemoryLimit);
}

#[test]
fn an_instance_leaking_with_every_call_is_replaced_between_calls_before_its_cap() {
    // memory-bomb leaks 1 MiB with every update, as ComponentizeJS 0.23
    // leaks every export's arguments: against a 16 MiB cap it would fault
    // within about a dozen calls.
    let options = capped_at_16_mib();
    let (plugin, _logs) = load_with(artifacts::MEMORY_BOMB, options.clone());
    let mut leaking = PluginInstance::new(plugin).unwrap();
    let object = pod("ns", "leaky", 1);
    let text = object.to_string();
    for call in 0..100 {
        leaking
            .on_update(&context(&object), &text, &text)
            .unwrap_or_else(|e| panic!("update {call} failed: {e}"));
    }
    assert_eq!(leaking.rebuilds(), 0, "never a fault");
    assert!(
        (5..=25).contains(&leaking.retirements()),
        "replaced every few calls, each time before the cap: {} times in 100",
        leaking.retirements()
    );
    // A plugin that does not grow is never replaced.
    let (plugin, _logs) = load_with(artifacts::RECORDER, options);
    let mut steady = PluginInstance::new(plugin).unwrap();
    for rv in 1..=100 {
        let object = pod("ns", "steady", rv);
        steady
            .on_add(&context(&object), &object.to_string())
            .unwrap();
    }
    assert_eq!((steady.rebuilds(), steady.retirements()), (0, 0));
}

#[test]
fn a_panic_is_a_fault_and_its_message_is_logged() {
    let (plugin, logs) = load(artifacts::PANIC, None);
    let mut instance = PluginInstance::new(plugin).unwrap();
    let object = pod("ns", "p", 1);
    let err = instance
        .on_add(&context(&object), &object.to_string())
        .unwrap_err();
    assert_eq!(err.fault(), Some(FaultKind::Panic), "{err}");
    let lines = logs.take();
    assert!(
        lines
            .iter()
            .any(|l| l.level == LogLevel::Warn && l.message.contains("panicked")),
        "the panic message reaches the log through stderr: {:?}",
        messages(&lines)
    );
    host_still_works(instance, FaultKind::Panic);
}

#[test]
fn an_explicit_trap_is_a_fault() {
    let (err, instance) = fault_of(artifacts::TRAP, LoadOptions::default());
    assert_eq!(
        err.fault(),
        Some(FaultKind::Panic),
        "`unreachable` is reported like a panic: {err}"
    );
    host_still_works(instance, FaultKind::Panic);
}

#[test]
fn a_huge_error_string_is_truncated() {
    let (err, _instance) = fault_of(artifacts::HUGE_ERROR, LoadOptions::default());
    let CallError::Handler(message) = &err else {
        panic!("expected a handler error, got {err}")
    };
    assert!(
        message.len() <= herald::plugin::MAX_ERROR_BYTES + 64,
        "kept {} bytes",
        message.len()
    );
    assert!(
        message.contains("truncated"),
        "{}",
        &message[message.len() - 60..]
    );
}

#[test]
fn a_log_flood_is_rate_limited_and_counted() {
    let options = LoadOptions {
        overrides: RequestedLimits {
            call_deadline: Some(Duration::from_secs(10)),
            memory_bytes: None,
        },
        ..LoadOptions::default()
    };
    let started = std::time::Instant::now();
    let (plugin, logs) = load_with(artifacts::LOG_FLOOD, options);
    let rate = plugin.context().log.logger.rate();
    let logger = plugin.context().log.logger.clone();
    let mut instance = PluginInstance::new(plugin).unwrap();
    let object = pod("ns", "flood", 1);
    instance
        .on_add(&context(&object), &object.to_string())
        .unwrap();
    let allowed = f64::from(rate.burst)
        + f64::from(rate.lines_per_second) * started.elapsed().as_secs_f64()
        + 2.0;
    let lines = logs.take();
    let (notices, kept): (Vec<_>, Vec<_>) = lines
        .iter()
        .partition(|l| l.message.starts_with("log rate limit: suppressed"));
    assert!(
        !notices.is_empty(),
        "the suppression is reported in the log"
    );
    let kept = kept.len() as f64;
    let suppressed = logger.suppressed_total();
    assert!(
        kept <= allowed,
        "kept {kept} lines, the bucket allows {allowed:.0}"
    );
    assert!(suppressed > 90_000, "suppressed {suppressed}");
}

#[test]
fn a_slow_plugin_under_its_deadline_completes_and_over_it_faults() {
    let generous = LoadOptions {
        config: Some(r#"{"delayMs": 50}"#.into()),
        overrides: RequestedLimits {
            call_deadline: Some(Duration::from_millis(1000)),
            memory_bytes: None,
        },
        ..LoadOptions::default()
    };
    let (plugin, _logs) = load_with(artifacts::SLOW, generous);
    let mut instance = PluginInstance::new(plugin).unwrap();
    let object = pod("ns", "slow", 1);
    instance
        .on_add(&context(&object), &object.to_string())
        .expect("50 ms of work fits in a 1 s deadline");

    let tight = LoadOptions {
        config: Some(r#"{"delayMs": 1000}"#.into()),
        overrides: RequestedLimits {
            call_deadline: Some(Duration::from_millis(50)),
            memory_bytes: None,
        },
        ..LoadOptions::default()
    };
    let (err, _instance) = fault_of(artifacts::SLOW, tight);
    assert_eq!(err.fault(), Some(FaultKind::Deadline), "{err}");
}
