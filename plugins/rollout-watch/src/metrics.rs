//! The plugin's metrics: how long rollouts take, and how many are stuck.
//!
//! - `rollout_duration_seconds{namespace}` (histogram): from the update
//!   that changed a Deployment's Pod template (the `started` line) to the
//!   one that made it complete (the `completed` line), on the plugin's
//!   monotonic clock. Only rollouts whose start this instance saw are
//!   timed: one already under way when the plugin joined (or when its
//!   instance was rebuilt) is not; one superseded by another template
//!   change before completing is timed from the newest change.
//! - `stuck_rollouts{namespace}` (gauge): Deployments whose `Progressing`
//!   condition is `False` with reason `ProgressDeadlineExceeded`, counted
//!   from the host's cache whenever one becomes stuck or stops being stuck
//!   (so the count is right after an instance rebuild too, at the next such
//!   change).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use herald_sdk::cache;
use herald_sdk::k8s_openapi::api::apps::v1::Deployment;
use herald_sdk::metrics::{self, Metric};

use crate::status;

/// The histogram of rollout durations.
pub const DURATION: &str = "rollout_duration_seconds";

/// The gauge of stuck rollouts.
pub const STUCK: &str = "stuck_rollouts";

/// The definitions for the manifest.
pub fn definitions() -> [Metric; 2] {
    [
        Metric::histogram(
            DURATION,
            "Time from a Deployment's Pod template change to its rollout's completion",
        )
        .labels(["namespace"])
        .buckets([5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 1800.0, 3600.0]),
        Metric::gauge(
            STUCK,
            "Deployments whose rollout exceeded its progress deadline (Progressing=False, ProgressDeadlineExceeded)",
        )
        .labels(["namespace"]),
    ]
}

/// A monotonic clock: the time since some fixed origin.
pub type Clock = Box<dyn Fn() -> Duration>;

/// The system's monotonic clock (WASI's on wasm).
pub fn monotonic() -> Clock {
    let origin = Instant::now();
    Box::new(move || origin.elapsed())
}

/// Rollouts under way, by Deployment key: when each started.
pub struct Rollouts {
    clock: Clock,
    started: BTreeMap<String, Duration>,
}

impl Rollouts {
    /// No rollouts, times read from `clock`.
    pub fn new(clock: Clock) -> Self {
        Self {
            clock,
            started: BTreeMap::new(),
        }
    }

    /// A rollout of `key` started now (replacing one under way).
    pub fn start(&mut self, key: &str) {
        self.started.insert(key.to_owned(), (self.clock)());
    }

    /// The rollout of `key` completed: its duration is observed, if its
    /// start was seen.
    pub fn complete(&mut self, key: &str, namespace: &str) -> Option<Duration> {
        let started = self.started.remove(key)?;
        let duration = (self.clock)().saturating_sub(started);
        metrics::histogram(DURATION)
            .with(&[namespace])
            .observe_duration(duration);
        Some(duration)
    }

    /// `key` is gone.
    pub fn forget(&mut self, key: &str) {
        self.started.remove(key);
    }
}

/// Sets `stuck_rollouts{namespace}` to the number of stuck Deployments in
/// the cache's view of `namespace` (which already holds the change being
/// delivered). A failed look-up is logged and leaves the gauge alone.
pub fn count_stuck(namespace: &str) {
    match cache::list::<Deployment>(Some(namespace), None) {
        Ok(deployments) => {
            let stuck = deployments.iter().filter(|d| status::is_stuck(d)).count();
            metrics::gauge(STUCK).with(&[namespace]).set(stuck as f64);
        }
        Err(error) => {
            herald_sdk::warn!("failed lookup=deployments namespace={namespace} error={error}")
        }
    }
}
