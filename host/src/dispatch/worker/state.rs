//! The state a plugin's delivery loop runs on, which its parts share: the
//! listeners, what the task is told to do, the retry policy and the clock.

use super::report::Report;
use super::retry::RetryPolicy;
use crate::dispatch::feed::Feed;
use crate::dispatch::gate::CacheGate;
use crate::dispatch::listener::Listener;
use crate::dispatch::signal::Signal;
use crate::plugin::{Demand, IdlePolicy};
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Instant;

/// What a worker's task is told to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(super) enum RunMode {
    /// Deliver, and wait for more.
    Running,
    /// Deliver what is ready, then end.
    Draining,
    /// End after the call in flight.
    Stopping,
}

impl RunMode {
    fn from_u8(value: u8) -> Self {
        match value {
            0 => RunMode::Running,
            1 => RunMode::Draining,
            _ => RunMode::Stopping,
        }
    }
}

/// Reads the time; [`Instant::now`] but in tests.
pub(super) type Clock = Box<dyn Fn() -> Instant + Send + Sync>;

/// The delivery loop: everything a worker's task needs but the plugin
/// itself, so tests can drive it with a stand-in for the plugin and a clock
/// of their own.
pub(super) struct Dispatch {
    pub(super) name: Arc<str>,
    pub(super) listeners: RwLock<Vec<Arc<Listener>>>,
    pub(super) signal: Arc<Signal>,
    /// Raised only when the mode changes, so backoff sleeps ignore pushes.
    pub(super) mode_changed: Signal,
    mode: AtomicU8,
    pub(super) retry: RetryPolicy,
    /// Where deliveries are reported: the feed, the last error, the log.
    pub(super) report: Report,
    /// Whether other plugins' tasks may be waiting for a pool thread.
    pub(super) demand: Arc<Demand>,
    /// Holds the first delivery until every listener's cache is complete.
    pub(super) caches: CacheGate,
    /// When the instance is dropped for want of work.
    pub(super) idle: IdlePolicy,
    /// Instances dropped so.
    pub(super) reclaimed: AtomicU64,
    clock: Clock,
}

impl Dispatch {
    /// A loop for the plugin `name` with no listener yet, running.
    pub(super) fn new(
        name: Arc<str>,
        retry: RetryPolicy,
        feed: Option<Arc<Feed>>,
        demand: Arc<Demand>,
        clock: Clock,
    ) -> Self {
        let caches = CacheGate::new(clock());
        Dispatch {
            report: Report::new(name.clone(), feed),
            name,
            listeners: RwLock::new(Vec::new()),
            signal: Arc::new(Signal::default()),
            mode_changed: Signal::default(),
            mode: AtomicU8::new(RunMode::Running as u8),
            retry,
            demand,
            caches,
            idle: IdlePolicy::default(),
            reclaimed: AtomicU64::new(0),
            clock,
        }
    }

    /// The time by the loop's clock.
    pub(super) fn now(&self) -> Instant {
        (self.clock)()
    }

    /// Starts draining `listener`, and wakes the loop. A listener joining
    /// after the gate opened (a cluster added at run time) delivers only
    /// once its own cluster's caches are in.
    pub(super) fn attach(&self, listener: Arc<Listener>) {
        if !listener.initial_list_received() {
            self.caches.joined_late();
        }
        self.listeners
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .push(listener);
        self.signal.notify();
    }

    /// Stops draining `listener`.
    pub(super) fn detach(&self, listener: &Arc<Listener>) {
        self.listeners
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|l| !Arc::ptr_eq(l, listener));
        self.signal.notify();
    }

    /// The listeners being drained.
    pub(super) fn listeners(&self) -> Vec<Arc<Listener>> {
        self.listeners
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// What the task is told to do.
    pub(super) fn mode(&self) -> RunMode {
        RunMode::from_u8(self.mode.load(Ordering::Acquire))
    }

    /// Tells the task what to do, and wakes it.
    pub(super) fn set_mode(&self, mode: RunMode) {
        self.mode.store(mode as u8, Ordering::Release);
        self.signal.notify();
        self.mode_changed.notify();
    }
}
