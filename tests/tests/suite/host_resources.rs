//! A plugin granted nothing cannot make the host hold memory for it beyond
//! its memory cap, nor more than the handle cap of host resources: what it
//! keeps in `wasi:http` fields, requests, bodies and pollables across calls
//! ends its instance with a fault naming the limit, the daemon's memory
//! stays bounded and a neighbour keeps its deliveries (SECURITY.md, 11).

use super::objects::{context, pod};
use herald::plugin::{
    CallError, FaultKind, LoadOptions, MAX_HOST_RESOURCES, PluginInstance, RequestedLimits,
};
use herald_tests::{artifacts, load, load_with};

/// The hoarder's memory cap.
const CAP: u64 = 16 << 20;

/// The process's resident memory, in bytes.
fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let kib: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/self/status");
    kib * 1024
}

/// The hoarder, capped at [`CAP`].
fn hoarder() -> PluginInstance {
    let options = LoadOptions {
        overrides: RequestedLimits {
            call_deadline: None,
            memory_bytes: Some(CAP),
        },
        ..LoadOptions::default()
    };
    let (plugin, _logs) = load_with(artifacts::HOST_HOARD, options);
    PluginInstance::new(plugin).unwrap()
}

/// Adds pods named `<prefix>-<i>` to `hoarder` until a call fails (at most
/// `calls`), delivering one pod to `neighbour` after each; the error and
/// how many calls succeeded before it.
fn hoard_until_stopped(
    hoarder: &mut PluginInstance,
    neighbour: &mut PluginInstance,
    prefix: &str,
    calls: u64,
) -> (CallError, u64) {
    for i in 0..calls {
        let object = pod("ns", &format!("{prefix}-{i}"), i + 1);
        let outcome = hoarder.on_add(&context(&object), &object.to_string());
        let next = pod("ns", &format!("neighbour-{prefix}-{i}"), i + 1);
        neighbour
            .on_add(&context(&next), &next.to_string())
            .expect("the neighbour's deliveries go on");
        if let Err(error) = outcome {
            return (error, i);
        }
    }
    panic!("{calls} calls of the hoarder, each keeping more in the host, and no limit stopped it");
}

#[test]
fn host_resources_kept_across_calls_count_against_the_memory_cap() {
    let (neighbour, logs) = load(artifacts::RECORDER, None);
    let mut neighbour = PluginInstance::new(neighbour).unwrap();
    let mut hoarder = hoarder();
    let before = rss();
    // About 1.1 MiB a call: 400 calls would hold 440 MiB without the cap.
    let (error, kept) = hoard_until_stopped(&mut hoarder, &mut neighbour, "hoard", 400);
    let grown = rss().saturating_sub(before);
    assert_eq!(error.fault(), Some(FaultKind::MemoryLimit), "{error}");
    let message = error.to_string();
    assert!(
        message.contains(&format!("memory limit of {CAP} bytes (limits.memory)"))
            && message.contains("host resources"),
        "the fault names the limit: {message}"
    );
    assert!(kept >= 1, "calls within the cap succeed first: {message}");
    // RSS is the whole test process's, and other tests run beside this one:
    // the bound leaves them room and still sits under half of the 440 MiB
    // an uncapped hoarder would hold.
    assert!(
        grown <= CAP + (192 << 20),
        "the daemon grew by {grown} bytes for a plugin capped at {CAP}"
    );
    // The instance was dropped with what it held, and is rebuilt: its next
    // calls start from nothing.
    let object = pod("ns", "after", 1000);
    hoarder
        .on_add(&context(&object), &object.to_string())
        .expect("a fresh instance holds nothing yet");
    assert!(hoarder.rebuilds() >= 1);
    assert_eq!(
        logs.take().len() as u64,
        kept + 1,
        "the neighbour handled every delivery"
    );
}

#[test]
fn an_instance_holding_the_handle_cap_of_host_resources_is_stopped() {
    let (neighbour, logs) = load(artifacts::RECORDER, None);
    let mut neighbour = PluginInstance::new(neighbour).unwrap();
    let mut hoarder = hoarder();
    // 1,024 empty fields a call: a few KiB, far under the memory cap.
    let (error, kept) = hoard_until_stopped(&mut hoarder, &mut neighbour, "handles", 64);
    assert_eq!(error.fault(), Some(FaultKind::MemoryLimit), "{error}");
    let message = error.to_string();
    assert!(
        message.contains(&format!(
            "handle cap of {MAX_HOST_RESOURCES} host resources"
        )),
        "the fault names the limit: {message}"
    );
    // The call that passes the cap fails: the fourth, or the fifth if the
    // instance held no other handle.
    let full_calls = (MAX_HOST_RESOURCES / 1024) as u64;
    assert!(
        (full_calls - 1..=full_calls).contains(&kept),
        "stopped at the cap, not a call sooner or later: {kept} calls kept, {message}"
    );
    assert_eq!(logs.take().len() as u64, kept + 1);
}
