//! The handler against the SDK's stand-in host: what is posted, recorded
//! and counted as Pods crash.

use std::cell::Cell;
use std::rc::Rc;

use herald_sdk::events::EventType;
use herald_sdk::http::{HttpErrorKind, Method, Response};
use herald_sdk::k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateTerminated, ContainerStatus, PodSpec, PodStatus,
};
use herald_sdk::k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use herald_sdk::kube::KubeError;
use herald_sdk::serde_json::json;
use herald_sdk::testing;

use super::*;

const WEBHOOK: &str = "https://hooks.example.com/crashloop";

fn at(minute: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + minute * 60).unwrap()
}

/// A plugin whose clock is `now`, configured with `config`, the webhook
/// answering 200 unless scripted otherwise.
fn set_up(now: &Rc<Cell<Timestamp>>, config: herald_sdk::serde_json::Value) -> CrashLoopAlert {
    testing::reset();
    testing::declare(&CrashLoopAlert::manifest());
    testing::set_config(config.to_string());
    testing::http::grant("https://hooks.example.com");
    testing::http::respond(WEBHOOK, Response::new(200));
    let now = Rc::clone(now);
    CrashLoopAlert::with_clock(move || now.get())
}

fn clock(minute: i64) -> Rc<Cell<Timestamp>> {
    Rc::new(Cell::new(at(minute)))
}

/// Pod `shop/web-0` started at `started` with container `app` restarted
/// `restarts` times, the last run finished at `finished` with exit code 1.
fn pod(uid: &str, started: i64, restarts: i32, finished: Option<i64>) -> Pod {
    let last_state = finished.map(|minute| ContainerState {
        terminated: Some(ContainerStateTerminated {
            exit_code: 1,
            reason: Some("Error".into()),
            finished_at: Some(Time(at(minute))),
            ..ContainerStateTerminated::default()
        }),
        ..ContainerState::default()
    });
    Pod {
        metadata: ObjectMeta {
            name: Some("web-0".into()),
            namespace: Some("shop".into()),
            uid: Some(uid.into()),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            node_name: Some("node-1".into()),
            ..PodSpec::default()
        }),
        status: Some(PodStatus {
            start_time: Some(Time(at(started))),
            container_statuses: Some(vec![ContainerStatus {
                name: "app".into(),
                restart_count: restarts,
                last_state,
                ..ContainerStatus::default()
            }]),
            ..PodStatus::default()
        }),
    }
}

/// Feeds the restarts `(count, finished minute)` one update at a time, the
/// clock following; returns each call's result.
fn crash(
    plugin: &mut CrashLoopAlert,
    now: &Cell<Timestamp>,
    started: i64,
    from: &mut Pod,
    crashes: &[(i32, i64)],
) -> Vec<Result<(), Error>> {
    crashes
        .iter()
        .map(|&(count, minute)| {
            now.set(at(minute));
            let next = pod("uid-1", started, count, Some(minute));
            let result = plugin.on_update(&testing::updated(from, &next));
            *from = next;
            result
        })
        .collect()
}

fn posts() -> Vec<herald_sdk::testing::http::RecordedRequest> {
    testing::http::take_requests()
}

#[test]
fn the_manifest_declares_what_the_host_must_grant() {
    let manifest = CrashLoopAlert::manifest();
    assert_eq!(manifest.capabilities, ["http", "events"]);
    assert_eq!(
        manifest.subscriptions[0].delivery,
        herald_sdk::Delivery::Coalesced
    );
    let names: Vec<&str> = manifest
        .metrics
        .iter()
        .map(|metric| metric.name.as_str())
        .collect();
    assert_eq!(names, [ALERTS, WEBHOOK_FAILURES]);
    // Panics if the host would refuse the definitions.
    testing::declare(&manifest);
}

#[test]
fn restarts_within_the_window_alert_once() {
    let now = clock(0);
    let mut plugin = set_up(&now, json!({"webhookUrl": WEBHOOK}));
    let mut current = pod("uid-1", -1, 0, None);
    plugin.on_add(&testing::added(&current)).unwrap();
    let results = crash(
        &mut plugin,
        &now,
        -1,
        &mut current,
        &[(1, 0), (2, 2), (3, 4), (4, 6), (5, 8)],
    );
    assert!(results.iter().all(Result::is_ok), "{results:?}");

    let [post] = &posts()[..] else {
        panic!("one POST expected");
    };
    assert_eq!((&post.method, post.url.as_str()), (&Method::Post, WEBHOOK));
    assert_eq!(post.header("content-type"), Some("application/json"));
    assert_eq!(
        post.json(),
        json!({
            "text": "shop/web-0: container app restarted 3 times in 10 minutes (last exit code 1, Error)",
            "reason": "CrashLoop",
            "namespace": "shop",
            "pod": "web-0",
            "container": "app",
            "restarts": 3,
            "restartCount": 3,
            "windowMinutes": 10,
            "lastExitCode": 1,
            "lastReason": "Error",
            "lastFinishedAt": at(4).to_string(),
            "node": "node-1",
        })
    );
    let [event] = &testing::take_events()[..] else {
        panic!("one Event expected");
    };
    assert_eq!(event.event_type, EventType::Warning);
    assert_eq!(
        (event.reason.as_str(), event.action.as_str()),
        ("CrashLoop", "Alerted")
    );
    assert_eq!(event.regarding.key(), "shop/web-0");
    assert_eq!(event.regarding.uid.as_deref(), Some("uid-1"));
    assert_eq!(
        event.note,
        "container app restarted 3 times in 10 minutes (last exit code 1, Error)"
    );
    assert_eq!(testing::metric(ALERTS, &["shop"]), Some(1.0));
    assert_eq!(testing::metric(WEBHOOK_FAILURES, &[]), None);
    assert_eq!(
        testing::take_messages(),
        [
            "crashloop pod=shop/web-0 container=app restarts=3 window=10m exit=1 reason=Error",
            "alerted pod=shop/web-0 container=app status=200",
        ]
    );
}

#[test]
fn restarts_spread_out_never_alert() {
    let now = clock(0);
    let mut plugin = set_up(&now, json!({"webhookUrl": WEBHOOK}));
    let mut current = pod("uid-1", -60, 0, None);
    let crashes = [(1, 0), (2, 11), (3, 22), (4, 33), (5, 44), (6, 55)];
    let results = crash(&mut plugin, &now, -60, &mut current, &crashes);
    assert!(results.iter().all(Result::is_ok));
    assert!(posts().is_empty());
    assert!(testing::take_events().is_empty());
    assert_eq!(testing::metrics().len(), 0);
}

#[test]
fn a_failed_webhook_fails_the_call_and_the_retry_sends_exactly_once() {
    let now = clock(0);
    let mut plugin = set_up(&now, json!({"webhookUrl": WEBHOOK, "restarts": 2}));
    testing::http::respond_once(WEBHOOK, Response::new(503).with_body("down"));
    testing::http::fail_once(WEBHOOK, HttpErrorKind::Timeout("scripted".into()));
    let mut current = pod("uid-1", -60, 0, None);
    let results = crash(&mut plugin, &now, -60, &mut current, &[(1, 0), (2, 1)]);
    let error = results[1].as_ref().unwrap_err();
    assert_eq!(
        error.message(),
        "posting the crash-loop alert: POST https://hooks.example.com/crashloop: unexpected status 503: down"
    );
    // The host retries the Pod with its newest state: the same one.
    let retry = testing::updated(&current, &current);
    let error = plugin.on_update(&retry).unwrap_err();
    assert!(error.message().contains("timed out"), "{error}");
    plugin.on_update(&retry).unwrap();
    plugin.on_update(&retry).unwrap();
    assert_eq!(
        posts().len(),
        3,
        "two failures, then one success, then nothing"
    );
    assert_eq!(testing::metric(WEBHOOK_FAILURES, &[]), Some(2.0));
    assert_eq!(testing::metric(ALERTS, &["shop"]), Some(1.0));
    assert_eq!(
        testing::take_events().len(),
        1,
        "the Event is not repeated by the retries"
    );
    // Later crashes of the same episode send nothing more.
    let results = crash(&mut plugin, &now, -60, &mut current, &[(3, 3), (4, 5)]);
    assert!(results.iter().all(Result::is_ok));
    assert!(posts().is_empty());
}

#[test]
fn a_busy_webhook_is_asked_again_when_it_says_and_the_call_succeeds() {
    let now = clock(0);
    let mut plugin = set_up(&now, json!({"webhookUrl": WEBHOOK, "restarts": 1}));
    testing::http::respond_once(WEBHOOK, Response::new(503).with_header("retry-after", "30"));
    let mut current = pod("uid-1", -60, 0, None);
    let results = crash(&mut plugin, &now, -60, &mut current, &[(1, 0)]);
    assert!(results[0].is_ok(), "a busy webhook is not a failure");
    assert_eq!(
        testing::take_requeues(),
        [std::time::Duration::from_secs(30)]
    );
    assert_eq!(posts().len(), 1);
    assert_eq!(testing::metric(WEBHOOK_FAILURES, &[]), Some(1.0));
    assert_eq!(testing::metric(ALERTS, &["shop"]), None);
    // Delivered again after the delay: the alert goes out, once.
    plugin.on_update(&testing::resynced(&current)).unwrap();
    assert_eq!(posts().len(), 1);
    assert!(testing::take_requeues().is_empty());
    assert_eq!(testing::metric(ALERTS, &["shop"]), Some(1.0));
    plugin.on_update(&testing::resynced(&current)).unwrap();
    assert!(posts().is_empty(), "sent once");
    // A Retry-After past the cap is held to it.
    let now = clock(0);
    let mut plugin = set_up(&now, json!({"webhookUrl": WEBHOOK, "restarts": 1}));
    testing::http::respond_once(
        WEBHOOK,
        Response::new(429).with_header("retry-after", "86400"),
    );
    let mut current = pod("uid-1", -60, 0, None);
    crash(&mut plugin, &now, -60, &mut current, &[(1, 0)]);
    assert_eq!(testing::take_requeues(), [crate::alert::MAX_RETRY_AFTER]);
}

#[test]
fn a_denied_webhook_is_counted_and_retried() {
    let now = clock(0);
    let mut plugin = set_up(
        &now,
        json!({"webhookUrl": "https://elsewhere.example.com/x", "restarts": 1}),
    );
    let mut current = pod("uid-1", -60, 0, None);
    let results = crash(&mut plugin, &now, -60, &mut current, &[(1, 0)]);
    let error = results[0].as_ref().unwrap_err();
    assert!(error.message().contains("denied by the host"), "{error}");
    assert_eq!(testing::metric(WEBHOOK_FAILURES, &[]), Some(1.0));
    assert_eq!(testing::metric(ALERTS, &["shop"]), None);
}

#[test]
fn a_quiet_window_ends_the_episode() {
    let now = clock(0);
    let mut plugin = set_up(&now, json!({"webhookUrl": WEBHOOK}));
    let mut current = pod("uid-1", -60, 0, None);
    let crashes = [(1, 0), (2, 1), (3, 2), (4, 30), (5, 31), (6, 32)];
    let results = crash(&mut plugin, &now, -60, &mut current, &crashes);
    assert!(results.iter().all(Result::is_ok));
    let posts = posts();
    assert_eq!(posts.len(), 2, "one alert per episode");
    assert_eq!(posts[1].json()["restartCount"], 6);
    assert_eq!(testing::metric(ALERTS, &["shop"]), Some(2.0));
}

#[test]
fn a_rebuilt_instance_derives_what_it_can_from_the_pod() {
    // The Pod started at minute 0 and has restarted 3 times by minute 5:
    // the object alone proves 3 restarts within 10 minutes.
    let now = clock(6);
    let mut fresh = set_up(&now, json!({"webhookUrl": WEBHOOK}));
    fresh
        .on_add(&testing::listed(&pod("uid-1", 0, 3, Some(5))))
        .unwrap();
    assert_eq!(posts().len(), 1);

    // Started an hour ago: only the latest crash is known in time, so it
    // takes two more within the window.
    let now = clock(6);
    let mut fresh = set_up(&now, json!({"webhookUrl": WEBHOOK}));
    let mut current = pod("uid-1", -60, 10, Some(5));
    fresh.on_update(&testing::resynced(&current)).unwrap();
    let results = crash(&mut fresh, &now, -60, &mut current, &[(11, 7)]);
    assert!(results[0].is_ok());
    assert!(posts().is_empty());
    crash(&mut fresh, &now, -60, &mut current, &[(12, 8)]);
    assert_eq!(posts().len(), 1);
}

#[test]
fn a_crash_loop_that_ended_long_ago_is_not_news() {
    let now = clock(180);
    let mut plugin = set_up(&now, json!({"webhookUrl": WEBHOOK}));
    // Restarted 5 times in its first 3 minutes, three hours ago.
    plugin
        .on_add(&testing::listed(&pod("uid-1", 0, 5, Some(3))))
        .unwrap();
    assert!(posts().is_empty());
    assert!(testing::take_events().is_empty());
}

#[test]
fn without_a_webhook_alerts_are_logged_recorded_and_counted() {
    let now = clock(0);
    let mut plugin = set_up(&now, json!({"restarts": 2, "windowMinutes": 5}));
    let mut current = pod("uid-1", -60, 0, None);
    crash(&mut plugin, &now, -60, &mut current, &[(1, 0), (2, 4)]);
    assert!(posts().is_empty());
    assert_eq!(testing::take_events().len(), 1);
    assert_eq!(testing::metric(ALERTS, &["shop"]), Some(1.0));
    assert_eq!(
        testing::take_messages(),
        [
            "crashloop pod=shop/web-0 container=app restarts=2 window=5m exit=1 reason=Error",
            "alerted pod=shop/web-0 container=app webhook=none",
        ]
    );
}

#[test]
fn event_failures_are_retried_only_when_a_retry_may_help() {
    let now = clock(0);
    let mut plugin = set_up(&now, json!({"webhookUrl": WEBHOOK, "restarts": 1}));
    testing::respond_events(Err(KubeError::Unavailable("apiserver down".into())));
    let mut current = pod("uid-1", -60, 0, None);
    let results = crash(&mut plugin, &now, -60, &mut current, &[(1, 0)]);
    assert!(
        results[0]
            .as_ref()
            .unwrap_err()
            .message()
            .contains("CrashLoop Event")
    );
    assert_eq!(posts().len(), 1, "the webhook was posted all the same");
    testing::respond_events(Ok(()));
    plugin
        .on_update(&testing::updated(&current, &current))
        .unwrap();
    assert!(
        posts().is_empty(),
        "a retry for the Event does not post again"
    );
    assert_eq!(testing::take_events().len(), 2);
    assert_eq!(testing::metric(ALERTS, &["shop"]), Some(1.0));

    let now = clock(0);
    let mut ungranted = set_up(&now, json!({"webhookUrl": WEBHOOK, "restarts": 1}));
    testing::respond_events(Err(KubeError::NotGranted("capability events".into())));
    let mut current = pod("uid-1", -60, 0, None);
    let results = crash(&mut ungranted, &now, -60, &mut current, &[(1, 0)]);
    assert!(results[0].is_ok(), "a missing grant is logged, not retried");
    assert_eq!(posts().len(), 1);
}

#[test]
fn deleted_and_recreated_pods_start_over() {
    let now = clock(0);
    let mut plugin = set_up(&now, json!({"webhookUrl": WEBHOOK}));
    let mut current = pod("uid-1", -60, 0, None);
    crash(&mut plugin, &now, -60, &mut current, &[(1, 0), (2, 1)]);
    assert_eq!(
        plugin.pods["shop/web-0"].containers["app"]
            .crashes
            .restarts(),
        2
    );
    // The same name, another Pod (a StatefulSet's, say), its predecessor's
    // delete missed: its one restart is not the third of the old one.
    now.set(at(2));
    let replaced = pod("uid-2", 2, 1, Some(2));
    plugin
        .on_update(&testing::updated(&current, &replaced))
        .unwrap();
    let state = &plugin.pods["shop/web-0"];
    assert_eq!(state.uid.as_deref(), Some("uid-2"));
    assert_eq!(state.containers["app"].crashes.restarts(), 1);
    plugin.on_delete(&testing::deleted(&replaced)).unwrap();
    assert!(plugin.pods.is_empty());
    assert!(posts().is_empty());
}

#[test]
fn a_bad_configuration_fails_every_call() {
    let now = clock(0);
    let mut plugin = set_up(&now, json!({"restarts": 0}));
    let error = plugin
        .on_add(&testing::added(&pod("uid-1", 0, 1, Some(0))))
        .unwrap_err();
    assert_eq!(
        error.message(),
        "the plugin configuration: restarts must be at least 1"
    );
}
