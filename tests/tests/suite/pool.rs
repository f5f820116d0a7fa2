//! The worker pool at its smallest, one thread for every plugin: a plugin
//! blocked in a host call and one spinning in wasm, both far from their
//! deadlines, leave that thread to the others. A third plugin handles every
//! event while the two are still inside their first call.

use herald::dispatch::{Listener, PluginWorker, RetryPolicy, Stopped};
use herald::informer::{Change, Processor};
use herald::plugin::{
    EngineSettings, LimitPolicy, Limits, LoadOptions, LoadedPlugin, PluginEngine, RequestedLimits,
};
use herald::store::{CachedObject, Store, Transform};
use herald_tests::{PATIENCE, artifacts, eventually};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// The stuck plugins' deadline: far beyond the test, so their calls are
/// still under way when it checks.
const DEADLINE: Duration = Duration::from_secs(600);

/// One plugin fed by a processor of its own.
struct Fed {
    worker: PluginWorker,
    listener: Arc<Listener>,
    processor: Processor,
}

impl Fed {
    fn start(engine: &PluginEngine, path: &str, config: Option<serde_json::Value>) -> Fed {
        let limits = Limits {
            call_deadline: DEADLINE,
            ..Limits::default()
        };
        let plugin = LoadedPlugin::load(
            engine,
            &artifacts::bytes(path),
            LoadOptions {
                config: config.map(|c| c.to_string()),
                policy: LimitPolicy {
                    default: limits,
                    max: limits,
                },
                overrides: RequestedLimits {
                    call_deadline: Some(DEADLINE),
                    memory_bytes: None,
                },
                ..LoadOptions::default()
            },
        )
        .unwrap_or_else(|e| panic!("loading {path}: {e}"));
        let subscription = plugin.manifest().subscriptions[0].clone();
        let mut worker = PluginWorker::new(plugin, RetryPolicy::default());
        let processor = Processor::new(Arc::new(Store::new()));
        processor.apply(Change::Replace(Vec::new()));
        let listener = worker.new_listener(subscription, "pods".into());
        processor.add_listener(listener.clone());
        worker.attach(listener.clone());
        worker.start();
        Fed {
            worker,
            listener,
            processor,
        }
    }

    fn feed(&self, names: impl IntoIterator<Item = String>) {
        for name in names {
            self.processor.apply(Change::Upsert(pod(&name)));
        }
    }

    /// Calls finished, whatever their outcome.
    fn finished(&self) -> u64 {
        let stats = &self.listener.stats;
        stats.delivered.load(Ordering::Acquire) + stats.failed.load(Ordering::Acquire)
    }

    /// True while the one notification it was given is taken and its call
    /// has not ended.
    fn in_its_call(&self) -> bool {
        self.listener.depth() == 0 && self.finished() == 0
    }
}

fn pod(name: &str) -> Arc<CachedObject> {
    let json = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "pool", "uid": name, "resourceVersion": "1"},
        "data": {},
    });
    Arc::new(CachedObject::from_json(&json.to_string(), "v1", "Pod", Transform::default()).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_one_pool_thread_a_blocked_and_a_spinning_plugin_leave_it_to_the_others() {
    let engine = PluginEngine::new(EngineSettings {
        workers: 1,
        ..EngineSettings::default()
    })
    .unwrap();
    let blocked = Fed::start(&engine, artifacts::BLOCKER, Some(json!({"mode": "sleep"})));
    let spinning = Fed::start(&engine, artifacts::INFINITE_LOOP, None);
    let quiet = Fed::start(&engine, artifacts::NOOP, None);

    blocked.feed(["stuck".to_owned()]);
    spinning.feed(["spin".to_owned()]);
    eventually(
        "both plugins are inside their first call",
        PATIENCE,
        async || blocked.in_its_call() && spinning.in_its_call(),
    )
    .await;

    let events = 200;
    quiet.feed((0..events).map(|i| format!("pod-{i}")));
    eventually(
        "the third plugin handles every event",
        PATIENCE,
        async || quiet.listener.stats.delivered.load(Ordering::Acquire) == events,
    )
    .await;
    assert!(
        blocked.in_its_call() && spinning.in_its_call(),
        "the two are still in their first call (deadline {DEADLINE:?}): they did not hold the \
         pool's only thread"
    );

    // Stopped without waiting out their deadline: both are abandoned (their
    // tasks aborted), the third one ends.
    let stopped = tokio::task::spawn_blocking(move || {
        let now = Instant::now();
        [
            blocked.worker.stop(None, now),
            spinning.worker.stop(None, now),
            quiet.worker.stop_now(),
        ]
    })
    .await
    .unwrap();
    assert_eq!(
        stopped,
        [Stopped::Abandoned, Stopped::Abandoned, Stopped::Exited]
    );
}
