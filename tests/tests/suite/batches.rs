//! Batched delivery with a real component: the recorder asks for batches of
//! up to 16 every-event notifications. Queued before its worker starts, 40
//! notifications reach it in order in a few calls; one it fails is retried
//! alone, then skipped, and nothing else is delivered twice.

use herald::dispatch::{PluginWorker, RetryPolicy};
use herald::informer::{Change, Processor};
use herald::store::{CachedObject, Store, Transform};
use herald_tests::{PATIENCE, artifacts, eventually, load, messages};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

fn pod(index: usize, failing: bool) -> Arc<CachedObject> {
    let labels = if failing {
        json!({"fail": "yes"})
    } else {
        json!({})
    };
    let json = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": format!("pod-{index:02}"),
            "namespace": "batch",
            "uid": format!("uid-{index}"),
            "resourceVersion": format!("{}", 100 + index),
            "labels": labels,
        },
    });
    Arc::new(CachedObject::from_json(&json.to_string(), "v1", "Pod", Transform::default()).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batching_plugin_gets_every_event_in_order_in_fewer_calls_and_a_failure_retries_only_it()
{
    let (plugin, logs) = load(artifacts::RECORDER, Some(json!({"failLabel": "fail=yes"})));
    assert_eq!(
        plugin.manifest().max_batch,
        16,
        "the recorder asks for batches"
    );
    let subscription = plugin.manifest().subscriptions[0].clone();
    let retry = RetryPolicy {
        max_retries: 1,
        initial_backoff: Duration::ZERO,
        max_backoff: Duration::ZERO,
        ..RetryPolicy::default()
    };
    let mut worker = PluginWorker::new(plugin, retry);
    let processor = Processor::new(Arc::new(Store::new()));
    processor.apply(Change::Replace(Vec::new()));
    let listener = worker.new_listener(subscription, "pods".into());
    processor.add_listener(listener.clone());
    let count = 40;
    for index in 0..count {
        processor.apply(Change::Upsert(pod(index, index == 20)));
    }
    worker.attach(listener.clone());
    worker.start();
    let stats = &listener.stats;
    eventually(
        "every notification is handled or skipped",
        PATIENCE,
        async || {
            stats.delivered.load(Ordering::Acquire) + stats.skipped.load(Ordering::Acquire)
                == count as u64
        },
    )
    .await;

    let expected: Vec<String> = (0..count)
        .flat_map(|index| {
            // The failing one logs its line on each of its two attempts.
            let times = if index == 20 { 2 } else { 1 };
            let rv = 100 + index;
            std::iter::repeat_n(
                format!(
                    "event=add key=batch/pod-{index:02} rv={rv} initial=false resync=false unknown=false"
                ),
                times,
            )
        })
        .collect();
    assert_eq!(messages(&logs.take()), expected);
    assert_eq!(
        (
            stats.delivered.load(Ordering::Relaxed),
            stats.skipped.load(Ordering::Relaxed),
            stats.failed.load(Ordering::Relaxed),
        ),
        (39, 1, 2)
    );
    let calls = stats.calls.load(Ordering::Relaxed);
    assert_eq!(
        calls, 6,
        "0–15 in one call; 16–20 in the next, failing at 20; 20 again alone; 21 alone (after a \
         skip, delivery slows down); 22–31, the rest of that batch; 32–39"
    );
    worker.stop_now();
}
