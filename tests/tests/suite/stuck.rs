//! Plugins stuck in host calls, where epoch interruption cannot reach them
//! (a sleep, a `poll` on a timer at the end of time, a tight loop of writes
//! to stdout, a sleep during `manifest()` or only during the initial list):
//! the call deadline still ends each call with a deadline fault, and nothing
//! else waits on the stuck plugin: its neighbour's events keep flowing in
//! order, the stuck plugin can be swapped and removed, a new version of the
//! neighbour loads afterwards, and the daemon becomes ready.

use super::reload::{Churn, Rig, variant, write};
use herald::dispatch::RetryPolicy;
use herald::plugin::PluginLimits;
use herald::plugin::{FaultKind, digest, revision};
use herald::reload::FileState;
use herald::reload::PluginConfig;
use herald_tests::{PATIENCE, artifacts, eventually};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;

/// The stuck plugin's call deadline.
const DEADLINE: Duration = Duration::from_millis(300);

/// One retry, with short backoffs, so a stuck notification is skipped soon.
fn quick_retries() -> RetryPolicy {
    RetryPolicy {
        max_retries: 1,
        initial_backoff: Duration::from_millis(10),
        max_backoff: Duration::from_millis(50),
        ..RetryPolicy::default()
    }
}

/// The settings of the `blocker` fixture: `settings` (its mode) plus the
/// test's namespace, and a short call deadline.
fn blocker(settings: Value, namespace: &str) -> BTreeMap<String, PluginConfig> {
    let mut config = settings;
    config["namespace"] = json!(namespace);
    BTreeMap::from([(
        "blocker".to_owned(),
        PluginConfig {
            config: Some(config),
            limits: PluginLimits {
                call_deadline: Some(DEADLINE),
                memory: None,
            },
            ..PluginConfig::default()
        },
    )])
}

/// Deadline faults the blocker has had so far.
fn deadline_faults(rig: &Rig) -> u64 {
    rig.daemon
        .listeners("blocker")
        .iter()
        .map(|l| l.stats.faults_of(FaultKind::Deadline))
        .sum()
}

/// The whole scenario for one way of getting stuck.
async fn a_stuck_plugin_holds_up_nothing(settings: Value) {
    let rig =
        Rig::start_with_namespaced(|namespace| blocker(settings, namespace), quick_retries()).await;
    rig.cluster.create_config_map("before", "a", "1").await;
    let v1 = variant("stuck-neighbour-1");
    let rev1 = revision(&digest(&v1)).to_owned();
    write(&rig.dir.join("recorder.wasm"), &v1);
    rig.running("recorder.wasm", &v1).await;
    let stuck = artifacts::bytes(artifacts::BLOCKER);
    write(&rig.dir.join("blocker.wasm"), &stuck);
    rig.running("blocker.wasm", &stuck).await;

    // The stuck plugin's calls end at their deadline, as faults...
    eventually(
        "the blocker's calls hit their deadline",
        PATIENCE,
        async || deadline_faults(&rig) >= 2,
    )
    .await;
    // ...while its neighbour's events keep flowing, in order.
    let churn = Churn::start(rig.config_maps());
    eventually("the neighbour records live events", PATIENCE, async || {
        rig.events_of(&rev1).iter().filter(|e| !e.initial).count() >= 20
    })
    .await;
    // A plugin stuck on its initial list does not hold readiness hostage.
    eventually("the daemon becomes ready", PATIENCE, async || {
        rig.daemon.ready()
    })
    .await;
    let status = rig.daemon.status();
    let blocked = status.iter().find(|p| p.name == "blocker").unwrap();
    let degraded = blocked
        .degraded
        .as_deref()
        .expect("the blocker is degraded");
    assert!(degraded.contains("deadline"), "{degraded}");

    // The stuck plugin can be swapped, then removed...
    let stuck2 = artifacts::variant(&stuck, "stuck-2");
    write(&rig.dir.join("blocker.wasm"), &stuck2);
    rig.running("blocker.wasm", &stuck2).await;
    std::fs::remove_file(rig.dir.join("blocker.wasm")).unwrap();
    eventually("the blocker is unloaded", PATIENCE, async || {
        !rig.daemon.names().contains(&"blocker".to_owned())
    })
    .await;
    // ...and hot reload still works for everyone else.
    let v2 = variant("stuck-neighbour-2");
    let rev2 = revision(&digest(&v2)).to_owned();
    write(&rig.dir.join("recorder.wasm"), &v2);
    rig.running("recorder.wasm", &v2).await;
    churn.stop().await;
    rig.converges(&rev2).await;
    assert!(
        rig.daemon.abandoned_workers().1 == 0,
        "every worker came back by its deadline: {:?}",
        rig.daemon.abandoned_workers()
    );
    rig.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_sleeping_in_on_add_holds_up_nothing() {
    a_stuck_plugin_holds_up_nothing(json!({"mode": "sleep"})).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_polling_a_timer_at_the_end_of_time_holds_up_nothing() {
    a_stuck_plugin_holds_up_nothing(json!({"mode": "poll"})).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_writing_to_stdout_forever_holds_up_nothing() {
    a_stuck_plugin_holds_up_nothing(json!({"mode": "stdout"})).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_sleeping_through_its_initial_list_holds_up_nothing() {
    a_stuck_plugin_holds_up_nothing(json!({"mode": "sleep", "initialOnly": true})).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_sleeping_in_its_manifest_is_refused_and_reload_goes_on() {
    let rig = Rig::start_with_namespaced(|_| BTreeMap::new(), quick_retries()).await;
    write(
        &rig.dir.join("sleepy.wasm"),
        &artifacts::bytes(artifacts::SLEEPY_MANIFEST),
    );
    let refused = rig
        .file_status("sleepy.wasm", |s| s.state == FileState::Failed)
        .await;
    let error = refused.last_error.unwrap_or_default();
    assert!(error.contains("deadline"), "{error}");
    let v1 = variant("after-sleepy");
    write(&rig.dir.join("recorder.wasm"), &v1);
    rig.running("recorder.wasm", &v1).await;
    rig.cluster.create_config_map("after", "a", "1").await;
    rig.converges(revision(&digest(&v1))).await;
    rig.finish().await;
}
