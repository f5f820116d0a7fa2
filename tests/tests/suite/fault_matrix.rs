//! The plugin-fault matrix, at the level of the running daemon: each hostile
//! fixture runs beside the well-behaved `recorder`, both on the same Pod
//! informer, while Pods are created, changed and deleted. For every row:
//! the host stays up; the recorder receives the full, ordered stream and
//! ends with the server's state; the hostile plugin's failures are recorded
//! with its name and the kind of fault in its listener's counters, in its
//! status, in the Prometheus metrics and in the host's log; and each failed
//! notification is retried once (the policy here), then skipped.
//!
//! The fixtures watch every Pod of the cluster, so on a real cluster these
//! tests fail unless skipping is allowed ([`herald_tests::skip`]); each row's
//! checks run on everything the hostile plugin logged, never on an empty list
//! standing for "skipped".

use super::cluster::TestCluster;
use super::recording::informers;
use herald::capability::log::OwnedLogLine;
use herald::daemon::Daemon;
use herald::dispatch::RetryPolicy;
use herald::plugin::{FaultKind, LoadOptions, RequestedLimits};
use herald_tests::{PATIENCE, artifacts, eventually, host_log, load_with, skip};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// What the hostile plugin's calls must come to.
enum Outcome {
    /// Each on-add is stopped by this fault.
    Fault(FaultKind),
    /// Each on-add returns an error.
    Refused,
    /// Every call succeeds (the plugin's misbehaviour is contained).
    Handled,
}

/// One row of the matrix.
struct Row {
    plugin: &'static str,
    path: &'static str,
    config: Option<serde_json::Value>,
    limits: RequestedLimits,
    outcome: Outcome,
}

impl Row {
    fn new(plugin: &'static str, path: &'static str, outcome: Outcome) -> Row {
        Row {
            plugin,
            path,
            config: None,
            limits: RequestedLimits::default(),
            outcome,
        }
    }

    fn deadline(mut self, millis: u64) -> Row {
        self.limits.call_deadline = Some(Duration::from_millis(millis));
        self
    }

    fn config(mut self, config: serde_json::Value) -> Row {
        self.config = Some(config);
        self
    }
}

/// Pods made by the row: created, one updated, one deleted.
const PODS: usize = 4;

/// What a row left, for its own checks.
struct Ran {
    /// Everything the hostile plugin logged.
    logged: Vec<OwnedLogLine>,
    /// Lines of the hostile plugin its log rate limit dropped.
    suppressed: u64,
    /// The last error in its status.
    last_error: Option<String>,
}

/// Runs a row; `None` only when it was skipped, as [`skip`] allows.
async fn run(row: Row) -> Option<Ran> {
    let cluster = TestCluster::start().await;
    if cluster.faults().is_none() {
        skip(
            &format!("the fault-matrix row of {}", row.plugin),
            "a real cluster (the fixtures watch every Pod of the cluster)",
        );
        cluster.cleanup().await;
        return None;
    }
    let log = host_log();
    let retry = RetryPolicy {
        max_retries: 1,
        initial_backoff: Duration::from_millis(5),
        max_backoff: Duration::from_millis(20),
        ..RetryPolicy::default()
    };
    let daemon = Arc::new(Daemon::new(
        Arc::new(informers(cluster.client.clone())),
        retry,
    ));
    let (hostile, hostile_logs) = load_with(
        row.path,
        LoadOptions {
            config: row.config.as_ref().map(|c| c.to_string()),
            overrides: row.limits,
            ..LoadOptions::default()
        },
    );
    let hostile_logger = hostile.context().log.logger.clone();
    let (recorder, recorder_logs) = load_with(artifacts::RECORDER, LoadOptions::default());
    daemon.start(hostile).await.unwrap();
    daemon.start(recorder).await.unwrap();
    assert_eq!(
        daemon.informers().all().len(),
        1,
        "both plugins share the Pod informer"
    );

    for i in 0..PODS {
        cluster.create_pod(&format!("pod-{i}"), "matrix").await;
    }
    let patch = Patch::Merge(serde_json::json!({"metadata": {"labels": {"changed": "yes"}}}));
    cluster
        .pods()
        .patch("pod-1", &PatchParams::default(), &patch)
        .await
        .unwrap();
    cluster
        .pods()
        .delete("pod-2", &DeleteParams::default())
        .await
        .unwrap();

    // The well-behaved neighbour gets the full, ordered stream.
    let server: BTreeMap<String, String> = cluster
        .pods()
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|p| {
            (
                format!("{}/{}", cluster.namespace, p.metadata.name.unwrap()),
                p.metadata.resource_version.unwrap(),
            )
        })
        .collect();
    let seen = std::sync::Mutex::new(Vec::new());
    eventually(
        "the recorder's view matches the server",
        PATIENCE,
        async || {
            let mut seen = seen.lock().unwrap();
            seen.extend(recorder_logs.take());
            fold(&seen, &cluster.namespace) == server
        },
    )
    .await;

    let listener = daemon.listeners(row.plugin).pop().expect("its listener");
    let stats = &listener.stats;
    let status = || {
        daemon
            .status()
            .into_iter()
            .find(|s| s.name == row.plugin)
            .expect("its status")
    };
    let registry =
        herald::ops::metrics::registry(herald::ops::metrics::Sources::of(daemon.clone()));
    match row.outcome {
        Outcome::Fault(_) | Outcome::Refused => {
            // Each attempt of a faulting plugin rebuilds its instance; on a
            // loaded two-core machine the attempts of four notifications
            // took more than PATIENCE once, so this bound is generous.
            eventually("every add is given up on", 3 * PATIENCE, async || {
                stats.skipped.load(Ordering::SeqCst) >= PODS as u64
            })
            .await;
            let (failed, retried, skipped) = (
                stats.failed.load(Ordering::SeqCst),
                stats.retried.load(Ordering::SeqCst),
                stats.skipped.load(Ordering::SeqCst),
            );
            assert_eq!(
                (failed, retried),
                (2 * skipped, skipped),
                "each failed notification: one retry, then skipped"
            );
            let last = status().last_error.expect("the failure is in the status");
            assert!(last.skipped, "{last:?}");
            let fault = match &row.outcome {
                Outcome::Fault(kind) => {
                    assert!(stats.faults_of(*kind) >= skipped, "{kind} counted");
                    assert!(last.message.starts_with(kind.as_str()), "{last:?}");
                    let metric = format!(
                        "herald_plugin_faults_total{{plugin=\"{}\",resource=\"pods\",kind=\"{kind}\"}} ",
                        row.plugin
                    );
                    let metrics = herald::telemetry::encode(&registry);
                    let value: u64 = metrics
                        .lines()
                        .find_map(|l| l.strip_prefix(&metric))
                        .unwrap_or_else(|| panic!("no {metric} in\n{metrics}"))
                        .parse()
                        .unwrap();
                    assert!(value >= skipped, "{metric}{value}");
                    kind.as_str()
                }
                _ => {
                    assert!(
                        last.message.starts_with("handler returned an error"),
                        "{last:?}"
                    );
                    "handler-error"
                }
            };
            let plugin_field = format!("\"plugin\":\"{}\"", row.plugin);
            let fault_field = format!("\"fault\":\"{fault}\"");
            assert!(
                !log.lines_with(&["skipping notification", &plugin_field, &fault_field])
                    .is_empty(),
                "the host logs the skip with the plugin and the fault"
            );
        }
        Outcome::Handled => {
            let handled = || stats.delivered.load(Ordering::SeqCst) >= PODS as u64 + 2;
            eventually("every notification is handled", PATIENCE, async || {
                handled() || stats.failed.load(Ordering::SeqCst) > 0
            })
            .await;
            assert!(handled(), "a call failed: {:?}", status().last_error);
            assert_eq!(stats.failed.load(Ordering::SeqCst), 0);
            assert!(status().last_error.is_none());
        }
    }
    let last_error = status().last_error.map(|e| e.message);
    daemon.shutdown(std::time::Instant::now() + Duration::from_secs(5));
    cluster.cleanup().await;
    Some(Ran {
        logged: hostile_logs.take(),
        suppressed: hostile_logger.suppressed_total(),
        last_error,
    })
}

/// The Pods of `namespace` a recorder's log lines leave, checking that no
/// update or delete comes before its add.
fn fold(lines: &[OwnedLogLine], namespace: &str) -> BTreeMap<String, String> {
    let mut view = BTreeMap::new();
    for line in lines {
        let fields: BTreeMap<&str, &str> = line
            .message
            .split(' ')
            .filter_map(|f| f.split_once('='))
            .collect();
        let (Some(event), Some(key), Some(rv)) =
            (fields.get("event"), fields.get("key"), fields.get("rv"))
        else {
            continue;
        };
        if !key.starts_with(&format!("{namespace}/")) {
            continue;
        }
        let present = view.contains_key(*key);
        match *event {
            "add" => {
                assert!(!present, "add of {key} while present");
                view.insert(key.to_string(), rv.to_string());
            }
            "update" => {
                assert!(present, "update of {key} before its add");
                view.insert(key.to_string(), rv.to_string());
            }
            _ => {
                assert!(present, "delete of {key} before its add");
                view.remove(*key);
            }
        }
    }
    view
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_infinite_loop_is_stopped_at_its_deadline_and_its_neighbour_sees_everything() {
    run(Row::new(
        "infinite-loop",
        artifacts::INFINITE_LOOP,
        Outcome::Fault(FaultKind::Deadline),
    )
    .deadline(100))
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deep_recursion_overflows_its_stack_and_its_neighbour_sees_everything() {
    run(Row::new(
        "deep-recursion",
        artifacts::DEEP_RECURSION,
        Outcome::Fault(FaultKind::StackOverflow),
    ))
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memory_bomb_hits_its_cap_and_its_neighbour_sees_everything() {
    let mut row = Row::new(
        "memory-bomb",
        artifacts::MEMORY_BOMB,
        Outcome::Fault(FaultKind::MemoryLimit),
    );
    row.limits.memory_bytes = Some(32 << 20);
    run(row).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_is_a_fault_and_its_neighbour_sees_everything() {
    let Some(ran) = run(Row::new(
        "panic",
        artifacts::PANIC,
        Outcome::Fault(FaultKind::Panic),
    ))
    .await
    else {
        return;
    };
    let panics = ran
        .logged
        .iter()
        .filter(|l| l.message.contains("panic fixture: on-add of"))
        .count();
    assert!(
        panics >= PODS,
        "the panic message of each add reaches the log: {:?}",
        ran.logged
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_explicit_trap_is_a_fault_and_its_neighbour_sees_everything() {
    run(Row::new(
        "trap",
        artifacts::TRAP,
        Outcome::Fault(FaultKind::Panic),
    ))
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_just_over_its_deadline_is_stopped_and_its_neighbour_sees_everything() {
    run(
        Row::new("slow", artifacts::SLOW, Outcome::Fault(FaultKind::Deadline))
            .deadline(100)
            .config(serde_json::json!({"delayMs": 300})),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_just_under_its_deadline_completes() {
    run(Row::new("slow", artifacts::SLOW, Outcome::Handled)
        .deadline(1000)
        .config(serde_json::json!({"delayMs": 20})))
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_that_always_errs_is_retried_then_skipped() {
    run(Row::new(
        "always-error",
        artifacts::ALWAYS_ERROR,
        Outcome::Refused,
    ))
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_error_string_is_cut_and_recorded() {
    let Some(ran) = run(Row::new(
        "huge-error",
        artifacts::HUGE_ERROR,
        Outcome::Refused,
    ))
    .await
    else {
        return;
    };
    let recorded = ran.last_error.expect("the error is in the status");
    assert!(
        recorded.len() <= herald::plugin::MAX_ERROR_BYTES + 128,
        "the 10 MiB error is cut, not kept whole: {} bytes recorded",
        recorded.len()
    );
    assert!(
        recorded.contains("truncated"),
        "the cut is marked: …{}",
        &recorded[recorded.len().saturating_sub(80)..]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_flood_is_rate_limited_and_its_neighbour_sees_everything() {
    // 10 000 lines per call on each channel (ten times the burst the host
    // allows): a flood, with a roomy deadline for a debug build.
    let row = Row::new("log-flood", artifacts::LOG_FLOOD, Outcome::Handled)
        .deadline(10_000)
        .config(serde_json::json!({"lines": 10_000}));
    let Some(ran) = run(row).await else {
        return;
    };
    let flood = ran
        .logged
        .iter()
        .filter(|l| l.message.starts_with("flood n="))
        .count();
    // Burst 2 000, then 200 lines/s: some of the flood, well under 10 000
    // lines within the test, and the rest dropped, counted and reported.
    assert!(flood > 0, "none of the flood got through: {:?}", ran.logged);
    assert!(
        ran.logged.len() < 10_000,
        "{} of the {} lines got through",
        ran.logged.len(),
        (PODS + 2) * 20_000
    );
    assert!(
        ran.suppressed >= 50_000,
        "{} of at least {} host-log lines dropped",
        ran.suppressed,
        (PODS + 2) * 10_000
    );
    assert!(
        ran.logged
            .iter()
            .any(|l| l.message.contains("log rate limit: suppressed")),
        "the suppression is reported in the log"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attempts_at_files_environment_and_network_are_denied() {
    let Some(ran) = run(Row::new(
        "sandbox-escape",
        artifacts::SANDBOX_ESCAPE,
        Outcome::Handled,
    ))
    .await
    else {
        return;
    };
    let attempts: Vec<&OwnedLogLine> = ran
        .logged
        .iter()
        .filter(|l| l.message.starts_with("attempt="))
        .collect();
    assert!(
        attempts.len() >= 6 * PODS,
        "six denied attempts logged per Pod: {:?}",
        ran.logged
    );
    assert!(
        attempts
            .iter()
            .all(|l| l.message.contains(" result=denied")),
        "{attempts:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cache_look_ups_beyond_the_subscriptions_are_refused() {
    let Some(ran) = run(Row::new(
        "cache-snoop",
        artifacts::CACHE_SNOOP,
        Outcome::Handled,
    ))
    .await
    else {
        return;
    };
    let logged = ran.logged;
    let lookups = |prefix: &str| {
        logged
            .iter()
            .filter(|l| l.message.starts_with(prefix))
            .count()
    };
    assert_eq!(
        lookups("lookup=deployments result=error reason=not subscribed to apps/v1/Deployment"),
        PODS,
        "{logged:?}"
    );
    assert_eq!(lookups("lookup=own-pod key="), PODS, "{logged:?}");
    // Cache first: the store holds the Pod's state or a newer one when
    // its add arrives. pod-2 is deleted by the test right after it is
    // created, so by the time its add is handled the newer state may be
    // "gone"; every other Pod must be found.
    let deleted = "/pod-2 ";
    let found = logged
        .iter()
        .filter(|l| l.message.starts_with("lookup=own-pod"))
        .filter(|l| !l.message.contains(deleted))
        .filter(|l| l.message.ends_with("result=found"))
        .count();
    assert_eq!(
        found,
        PODS - 1,
        "cache first: each Pod but the deleted one is cached when its add arrives: {logged:?}"
    );
}
