//! A plugin's worker: one task of the plugins' worker pool that owns the
//! plugin's instance and delivers its listeners' notifications one at a
//! time.
//!
//! # Scheduling
//!
//! Every plugin is one task on the engine's worker pool (a few threads,
//! one per CPU unless configured): a plugin costs a parked task, not a
//! thread, and a wake-up of its task drains every one of its listeners.
//! A call waiting in a host call (a Kubernetes write, an HTTP request, a
//! WASI clock) is a suspended future that holds no thread, so a slow or
//! stuck plugin leaves the pool to the others until its deadline.
//!
//! Fairness is time slicing, round-robin: a task gives its thread back to
//! the pool, going to the back of its run queue, after one
//! [`EPOCH_TICK`](crate::plugin::EPOCH_TICK) (5 ms) of running or
//! [`SLICE_CALLS`] deliveries, whichever comes first, and a single call
//! running wasm for longer yields at every epoch tick (the store's epoch
//! callback). So a busy plugin, one
//! with a deep backlog or one spinning in a call, delays another runnable
//! plugin by at most about one slice per task ahead of it in the queue,
//! whatever it does; it cannot starve it.
//!
//! # Guarantees
//!
//! - No call before the plugin's caches are complete: the first delivery
//!   waits until every listener's informer has its initial list in (see
//!   [`super::gate`]), so a handler's cache reads of any kind it
//!   subscribes to see the whole initial list.
//! - One call at a time: a key is never delivered twice concurrently.
//! - Every-event listeners: notifications reach the plugin in the order the
//!   informer distributed them. A failed call (handler error or fault) is
//!   retried in place with exponential backoff up to
//!   [`RetryPolicy::max_retries`] times, then skipped; meanwhile the worker
//!   waits, so the plugin's other listeners wait too. After a skip the worker
//!   waits before its next every-event notification, longer with each
//!   consecutive skip, so a plugin that keeps failing is backed off rather
//!   than spun. A handler's requeue request cannot keep that order, so it is
//!   not honoured: it is counted and logged once per listener.
//! - Coalesced listeners are client-go's rate-limited work queue: each key's
//!   notifications reach the plugin in order, merged, newest state last.
//!   A failed call does not block: the notification goes back to its queue,
//!   not ready before its key's backoff ([`KeyBackoff`]: 5 ms doubling per
//!   consecutive failure of that key, up to 1000 s, forgotten on its next
//!   success) while other keys keep flowing; after
//!   [`KeyBackoff::max_retries`] retries it is skipped. A newer notification
//!   for a waiting key merges with it and is ready at once (delivered once,
//!   newest state; the failure count is kept). After a successful call whose
//!   handler asked for it ([`Handled::requeue_after`]), the notification is
//!   delivered again after the delay, unless a newer one for its key comes
//!   first, which is then delivered at once instead.
//! - A skipped notification is recorded (log line, counters, last error); one
//!   of an initial list marks the listener [degraded](Listener::degraded), so
//!   readiness does not wait on it. A coalesced listener is
//!   [synced](Listener::has_synced) only once every key of its initial list
//!   was handled or skipped: a key of it waiting for a retry holds the
//!   marker (and readiness) back, not the other keys.
//! - The worker never polls: with nothing ready its task sleeps until the
//!   earliest instant a waiting key becomes ready, or until a push or a stop
//!   wakes it.
//! - Nothing waits on a worker: informers only push into listener buffers, so
//!   a slow, stuck or crashing plugin delays nobody but itself.
//! - Nothing waits on a worker without a bound: every call ends by its
//!   deadline ([`crate::plugin`]'s deadline mechanism), and
//!   [`PluginWorker::stop`] waits for the task only until a given instant,
//!   after which the task is abandoned (aborted, which drops its call at its
//!   next epoch tick or wait, and reported by the caller) and everything
//!   else goes on. A drain delivers what is ready and
//!   ends: keys waiting for a retry or a requeue are dropped, not waited for
//!   (a restarted or swapped-in plugin gets every key again in its initial
//!   list).
//! - A worker given a [`Feed`] publishes one event per notification it is
//!   done with (handled or skipped), and one per failed coalesced call whose
//!   notification waits for a retry ([`Outcome::Retrying`]), without waiting
//!   (see [`Feed::publish`]).

use super::feed::{Feed, FeedEvent, Outcome};
use super::gate::{CacheGate, CacheSync, Opened};
use super::listener::Listener;
use super::queue::{Item, KeyBackoff, Retry, exponential, later};
use super::signal::Signal;
use crate::informer::Notification;
use crate::plugin::EPOCH_TICK;
use crate::plugin::HandlerCall;
use crate::plugin::{
    Busy, CallError, Delivery, Demand, EventContext, Handled, IdlePolicy, LoadedPlugin,
    PluginInstance, idle,
};
use crate::throttle::{Admit, Throttle};
use serde::Serialize;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime};
use tokio::task::JoinHandle;
use tracing::Instrument;

/// Deliveries a plugin's task makes before it yields its thread to the
/// pool's other tasks (sooner if one [`EPOCH_TICK`] has passed). A yield
/// costs the pool a wake-up of another thread and may move the task: at 64
/// the host's own cost per no-op delivery rose by a fifth (B1.a1); at 1024
/// a no-op plugin yields about every 2 ms, so time ends most slices.
pub const SLICE_CALLS: u32 = 1024;

/// Sustained rate of the host's log lines about one plugin's failed calls.
pub const FAILURE_LINES_PER_SECOND: u64 = 10;
/// Lines about one plugin's failed calls logged at once before the rate
/// applies.
pub const FAILURE_LINES_BURST: u64 = 100;

/// How failed calls are retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Every-event delivery: retries in place after the first failed
    /// attempt, before the notification is skipped.
    pub max_retries: u32,
    /// Every-event delivery: delay before the first retry; doubles with each
    /// further one.
    pub initial_backoff: Duration,
    /// Every-event delivery: longest delay between attempts, and longest
    /// wait after skips.
    pub max_backoff: Duration,
    /// Coalesced delivery: the per-key backoff and its bound.
    pub coalesced: KeyBackoff,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(30),
            coalesced: KeyBackoff::default(),
        }
    }
}

impl RetryPolicy {
    /// The delay before in-place retry number `attempt` (1-based).
    pub fn backoff(&self, attempt: u32) -> Duration {
        exponential(
            self.initial_backoff,
            self.max_backoff,
            attempt.saturating_sub(1),
        )
    }

    /// The delay a coalesced notification is requeued after when its
    /// handler asked for `requested`: at least the coalesced base delay (a
    /// handler asking for 0 cannot spin its key faster than a failing one
    /// is retried), at most [`MAX_REQUEUE_DELAY`].
    pub fn requeue_delay(&self, requested: Duration) -> Duration {
        requested
            .max(self.coalesced.base_delay)
            .min(MAX_REQUEUE_DELAY)
    }
}

/// The longest requeue-after honoured (a day); longer requests are
/// shortened to it.
pub const MAX_REQUEUE_DELAY: Duration = Duration::from_secs(24 * 60 * 60);

/// The last failure of a plugin, for status.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LastError {
    /// What failed.
    pub message: String,
    /// The notification: event type and object key.
    pub notification: String,
    /// When.
    #[serde(with = "crate::units::time")]
    pub at: SystemTime,
    /// Whether it was skipped after the last retry (otherwise it is retried).
    pub skipped: bool,
}

/// What a worker's task is told to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum RunMode {
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

struct Shared {
    plugin: LoadedPlugin,
    dispatch: Dispatch,
    /// Raised by the task as it ends, so `stop` waits without polling.
    exited: Signal,
    /// Set (before `exited` is raised) once the task is done.
    has_exited: AtomicBool,
}

/// Reads the time; [`Instant::now`] but in tests.
type Clock = Box<dyn Fn() -> Instant + Send + Sync>;

/// The delivery loop: everything a worker's task needs but the plugin
/// itself, so tests can drive it with a stand-in for the plugin and a clock
/// of their own.
struct Dispatch {
    name: Arc<str>,
    listeners: RwLock<Vec<Arc<Listener>>>,
    signal: Arc<Signal>,
    /// Raised only when the mode changes, so backoff sleeps ignore pushes.
    mode_changed: Signal,
    mode: AtomicU8,
    retry: RetryPolicy,
    last_error: Mutex<Option<LastError>>,
    /// Where finished deliveries are announced, if anywhere.
    feed: Option<Arc<Feed>>,
    /// Whether other plugins' tasks may be waiting for a pool thread.
    demand: Arc<Demand>,
    /// Holds the first delivery until every listener's cache is complete.
    caches: CacheGate,
    /// Bounds the host's lines about this plugin's failed calls, which
    /// carry its error text: counters and the last error see every failure,
    /// the log at most [`FAILURE_LINES_PER_SECOND`].
    failure_lines: Throttle,
    /// When the instance is dropped for want of work.
    idle: IdlePolicy,
    /// Instances dropped so.
    reclaimed: AtomicU64,
    clock: Clock,
}

/// The worker of one loaded plugin. Created idle ([`PluginWorker::new`]), so
/// its listeners can be registered and buffer before any call is made, then
/// started ([`PluginWorker::start`]).
pub struct PluginWorker {
    shared: Arc<Shared>,
    task: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for PluginWorker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginWorker")
            .field("plugin", &self.shared.plugin.name())
            .finish()
    }
}

impl PluginWorker {
    /// An idle worker for `plugin`: no task and no call until [`start`](Self::start).
    pub fn new(plugin: LoadedPlugin, retry: RetryPolicy) -> Self {
        Self::with_feed(plugin, retry, None)
    }

    /// [`new`](Self::new), publishing each finished delivery to `feed`.
    pub fn with_feed(plugin: LoadedPlugin, retry: RetryPolicy, feed: Option<Arc<Feed>>) -> Self {
        let mut dispatch = Dispatch::new(
            plugin.name().into(),
            retry,
            feed,
            plugin.engine().demand().clone(),
            Box::new(Instant::now),
        );
        dispatch.idle = plugin.idle_policy();
        PluginWorker {
            shared: Arc::new(Shared {
                plugin,
                dispatch,
                exited: Signal::default(),
                has_exited: AtomicBool::new(false),
            }),
            task: None,
        }
    }

    /// A worker for `plugin`, started.
    pub fn spawn(plugin: LoadedPlugin, retry: RetryPolicy) -> Self {
        let mut worker = PluginWorker::new(plugin, retry);
        worker.start();
        worker
    }

    /// Starts the worker's task on the engine's worker pool; it delivers
    /// what its listeners buffered so far, then everything they receive.
    /// Does nothing if already started.
    pub fn start(&mut self) {
        if self.task.is_some() {
            return;
        }
        let shared = self.shared.clone();
        let pool = shared.plugin.engine().pool().clone();
        // Counted before it first runs: a spawned task waits for a thread.
        let busy = shared.dispatch.demand.busy();
        self.task = Some(pool.spawn(async move {
            let mut instance = PluginInstance::lazy(shared.plugin.clone());
            shared.dispatch.run(&mut instance, busy).await;
            drop(instance);
            shared.has_exited.store(true, Ordering::Release);
            shared.exited.notify();
        }));
    }

    /// The plugin.
    pub fn plugin(&self) -> &LoadedPlugin {
        &self.shared.plugin
    }

    /// The signal listeners of this worker must wake.
    pub fn signal(&self) -> Arc<Signal> {
        self.shared.dispatch.signal.clone()
    }

    /// Makes a listener for one of the plugin's subscriptions, waking this worker.
    pub fn new_listener(
        &self,
        subscription: crate::plugin::Subscription,
        resource: Arc<str>,
    ) -> Arc<Listener> {
        Arc::new(Listener::new(
            self.shared.plugin.name().into(),
            subscription,
            resource,
            self.signal(),
        ))
    }

    /// Starts draining `listener`.
    pub fn attach(&self, listener: Arc<Listener>) {
        self.shared.dispatch.attach(listener);
    }

    /// The listeners being drained.
    pub fn listeners(&self) -> Vec<Arc<Listener>> {
        self.shared.dispatch.listeners()
    }

    /// True when every listener has delivered and handled its initial list.
    pub fn has_synced(&self) -> bool {
        self.listeners().iter().all(|l| l.has_synced())
    }

    /// How many times its idle instance was dropped (`reclaimIdleAfter`).
    pub fn instances_reclaimed(&self) -> u64 {
        self.shared.dispatch.instances_reclaimed()
    }

    /// The plugin's last failure.
    pub fn last_error(&self) -> Option<LastError> {
        self.shared.dispatch.last_error()
    }

    /// Whether the plugin's caches are complete, so its deliveries have
    /// started, or what they are waiting for (see [`super::gate`]).
    pub fn cache_sync(&self) -> CacheSync {
        let dispatch = &self.shared.dispatch;
        dispatch
            .caches
            .status(&dispatch.listeners(), dispatch.now())
    }

    /// Stops the worker: with `drain_until`, after delivering what is
    /// ready (up to that instant; what waits for a retry or a requeue is
    /// not waited for); otherwise after the call in flight (which ends by
    /// itself or at its deadline). What is still buffered is dropped. Waits
    /// for the task until `give_up_at` and no longer: a task still busy
    /// then is [`Stopped::Abandoned`], aborted while its caller goes on.
    /// Blocks the calling thread: call it off the async runtime.
    pub fn stop(mut self, drain_until: Option<Instant>, give_up_at: Instant) -> Stopped {
        let Some(task) = self.task.take() else {
            return Stopped::Exited;
        };
        let dispatch = &self.shared.dispatch;
        match drain_until {
            Some(deadline) => {
                dispatch.set_mode(RunMode::Draining);
                if !self.shared.exited.wait_until(deadline.min(give_up_at)) {
                    dispatch.set_mode(RunMode::Stopping);
                }
            }
            None => dispatch.set_mode(RunMode::Stopping),
        }
        finish(task, &self.shared, give_up_at)
    }

    /// Stops the worker after its call in flight, waiting for it at most
    /// [`call_bound`](Self::call_bound).
    pub fn stop_now(self) -> Stopped {
        let give_up_at = Instant::now() + self.call_bound();
        self.stop(None, give_up_at)
    }

    /// The longest a call in flight can take to come back: its deadline,
    /// plus [`STOP_MARGIN`] for the fault to be raised and the task to wake.
    pub fn call_bound(&self) -> Duration {
        self.shared.plugin.limits().call_deadline + STOP_MARGIN
    }
}

/// How long past a call's deadline a worker is waited for before it is
/// abandoned. A deadline fault comes within two epoch ticks (10 ms) of the
/// deadline; the rest is room for a loaded machine.
pub const STOP_MARGIN: Duration = Duration::from_secs(1);

/// How a worker's task ended when it was stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// The task ended.
    Exited,
    /// The task did not end in time: it was aborted, which drops its call
    /// in flight at the call's next epoch tick or wait, and the instance
    /// with it; it has no more notifications to deliver.
    Abandoned,
}

/// Waits for `task` to end until `give_up_at`; aborts it otherwise.
fn finish(task: JoinHandle<()>, shared: &Shared, give_up_at: Instant) -> Stopped {
    let exited = || shared.has_exited.load(Ordering::Acquire);
    while !exited() && shared.exited.wait_until(give_up_at) {}
    if exited() {
        Stopped::Exited
    } else {
        task.abort();
        tracing::error!(
            plugin = shared.plugin.name(),
            "plugin worker did not stop in time: abandoned (its call is dropped at its next \
             epoch tick or wait)"
        );
        Stopped::Abandoned
    }
}

impl Drop for PluginWorker {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            self.shared.dispatch.set_mode(RunMode::Stopping);
            let give_up_at = Instant::now() + self.call_bound();
            finish(task, &self.shared, give_up_at);
        }
    }
}

/// The calls a worker makes: the plugin's instance, or a stand-in in tests.
trait Calls {
    /// Calls the handler of `notification`.
    fn call(
        &mut self,
        ctx: &EventContext,
        notification: &Notification,
    ) -> impl Future<Output = Result<Handled, CallError>> + Send;

    /// Drops what the calls hold while the plugin is idle; true if there
    /// was something to drop.
    fn reclaim(&mut self) -> bool;
}

impl Calls for PluginInstance {
    fn call(
        &mut self,
        ctx: &EventContext,
        notification: &Notification,
    ) -> impl Future<Output = Result<Handled, CallError>> + Send {
        let call = match notification {
            Notification::Add { object, .. } => HandlerCall::Add(object.json()),
            Notification::Update { old, new, .. } => HandlerCall::Update(old.json(), new.json()),
            Notification::Delete { object, .. } => HandlerCall::Delete(object.json()),
        };
        self.deliver(ctx, call)
    }

    fn reclaim(&mut self) -> bool {
        PluginInstance::reclaim(self)
    }
}

/// What the delivery loop carries from one step to the next.
#[derive(Default)]
struct Cursor {
    /// The listener visited first next time (round-robin).
    next_listener: usize,
    /// Every-event notifications skipped in a row.
    consecutive_skips: u32,
    contexts: Contexts,
}

/// What one step of the delivery loop did.
#[derive(Debug, PartialEq, Eq)]
enum Step {
    /// Delivered, retried, skipped or marked something.
    Worked,
    /// Nothing is ready; the first waiting entry is ready at that instant.
    Idle(Option<Instant>),
    /// Told to stop during a backoff.
    Stopped,
}

enum Delivered {
    Ok,
    Skipped,
    Stopped,
}

impl Dispatch {
    fn new(
        name: Arc<str>,
        retry: RetryPolicy,
        feed: Option<Arc<Feed>>,
        demand: Arc<Demand>,
        clock: Clock,
    ) -> Self {
        let caches = CacheGate::new(clock());
        Dispatch {
            failure_lines: Throttle::new(FAILURE_LINES_PER_SECOND, FAILURE_LINES_BURST),
            name,
            listeners: RwLock::new(Vec::new()),
            signal: Arc::new(Signal::default()),
            mode_changed: Signal::default(),
            mode: AtomicU8::new(RunMode::Running as u8),
            retry,
            last_error: Mutex::new(None),
            feed,
            demand,
            caches,
            idle: IdlePolicy::default(),
            reclaimed: AtomicU64::new(0),
            clock,
        }
    }

    fn now(&self) -> Instant {
        (self.clock)()
    }

    fn attach(&self, listener: Arc<Listener>) {
        self.listeners
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .push(listener);
        self.signal.notify();
    }

    fn listeners(&self) -> Vec<Arc<Listener>> {
        self.listeners
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn last_error(&self) -> Option<LastError> {
        self.last_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn mode(&self) -> RunMode {
        RunMode::from_u8(self.mode.load(Ordering::Acquire))
    }

    fn set_mode(&self, mode: RunMode) {
        self.mode.store(mode as u8, Ordering::Release);
        self.signal.notify();
        self.mode_changed.notify();
    }

    /// Delivers until stopped, or, draining, until nothing is ready,
    /// yielding the pool's thread after each slice if other plugins may
    /// want it (see the module docs). `busy` counts the task in the pool's
    /// demand from its spawn.
    async fn run(&self, calls: &mut impl Calls, busy: Busy) {
        let mut cursor = Cursor::default();
        let mut slice = Slice::new();
        let mut busy = busy;
        loop {
            let mode = self.mode();
            if mode == RunMode::Stopping {
                return;
            }
            let idle_until = match self.step(calls, &mut cursor).await {
                Step::Worked => {
                    if slice.spent() {
                        if self.demand.contended() {
                            tokio::task::yield_now().await;
                        }
                        slice = Slice::new();
                    }
                    continue;
                }
                Step::Stopped => return,
                // What waits for a retry or a requeue is not waited for.
                Step::Idle(_) if mode == RunMode::Draining => return,
                Step::Idle(ready_at) => ready_at,
            };
            busy = self.wait(calls, busy, idle_until).await;
            slice = Slice::new();
        }
    }

    /// Waits, counted idle, until something is pushed or `ready_at`
    /// passes. Should the idle policy's time pass first, drops the
    /// instance, then goes on waiting.
    async fn wait(&self, calls: &mut impl Calls, busy: Busy, ready_at: Option<Instant>) -> Busy {
        let mut busy = busy;
        // An idle time past the clock's range is never reached.
        let reclaim_at = self
            .idle
            .reclaim_after
            .and_then(|after| Instant::now().checked_add(after));
        if let Some(reclaim_at) = reclaim_at
            && ready_at.is_none_or(|ready| ready > reclaim_at)
        {
            let (raised, woken) = idle(busy, self.signal.raised_by(reclaim_at)).await;
            if raised {
                return woken;
            }
            if calls.reclaim() {
                self.reclaimed.fetch_add(1, Ordering::Relaxed);
            }
            busy = woken;
        }
        match ready_at {
            Some(ready_at) => idle(busy, self.signal.raised_by(ready_at)).await.1,
            None => idle(busy, self.signal.raised()).await.1,
        }
    }

    /// Takes the next ready entry, visiting listeners round-robin, and
    /// delivers it.
    async fn step(&self, calls: &mut impl Calls, cursor: &mut Cursor) -> Step {
        if !self.caches_synced() {
            // A listener's initial list coming in wakes the worker.
            return Step::Idle(None);
        }
        let Some((listener, item)) = self.next_item(&mut cursor.next_listener, self.now()) else {
            return Step::Idle(self.next_ready_at());
        };
        let notification = match item {
            Item::Synced => {
                listener.mark_synced();
                return Step::Worked;
            }
            Item::Notify(notification) => notification,
        };
        match listener.subscription().delivery {
            Delivery::EveryEvent => {
                let skips = cursor.consecutive_skips;
                if skips > 0
                    && !self
                        .pause(self.retry.backoff(skips + self.retry.max_retries))
                        .await
                {
                    return Step::Stopped;
                }
                let ctx = cursor.contexts.for_notification(&listener, &notification);
                let span = self.call_span(&listener, ctx, notification.kind());
                let delivery = self.deliver_in_order(calls, &listener, &notification, ctx);
                match in_span(span, delivery).await {
                    Delivered::Ok => cursor.consecutive_skips = 0,
                    Delivered::Skipped => {
                        cursor.consecutive_skips = skips.saturating_add(1);
                    }
                    Delivered::Stopped => return Step::Stopped,
                }
            }
            Delivery::Coalesced => {
                let ctx = cursor.contexts.for_notification(&listener, &notification);
                let span = self.call_span(&listener, ctx, notification.kind());
                let delivery = self.deliver_coalesced(calls, &listener, notification, ctx);
                in_span(span, delivery).await;
            }
        }
        Step::Worked
    }

    /// How many times the idle instance was dropped.
    fn instances_reclaimed(&self) -> u64 {
        self.reclaimed.load(Ordering::Relaxed)
    }

    /// Whether every listener's cache is complete, so deliveries may start.
    fn caches_synced(&self) -> bool {
        let listeners = self.listeners.read().unwrap_or_else(|e| e.into_inner());
        match self.caches.open(&listeners, self.now()) {
            Opened::Already => true,
            Opened::No => false,
            Opened::Now(waited) => {
                tracing::debug!(
                    plugin = %self.name,
                    waited_ms = u64::try_from(waited.as_millis()).unwrap_or(u64::MAX),
                    "caches synced; deliveries start"
                );
                true
            }
        }
    }

    /// Takes the next item ready at `now`, visiting listeners round-robin.
    fn next_item(&self, next: &mut usize, now: Instant) -> Option<(Arc<Listener>, Item)> {
        let listeners = self.listeners.read().unwrap_or_else(|e| e.into_inner());
        let count = listeners.len();
        for offset in 0..count {
            let index = (*next + offset) % count;
            if let Some(item) = listeners[index].pop_ready(now) {
                *next = index + 1;
                return Some((listeners[index].clone(), item));
            }
        }
        None
    }

    /// The earliest instant a waiting entry of any listener becomes ready.
    fn next_ready_at(&self) -> Option<Instant> {
        self.listeners
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter_map(|l| l.next_ready_at())
            .min()
    }

    /// Calls the handler, timing the call into the listener's stats.
    async fn timed_call(
        &self,
        calls: &mut impl Calls,
        listener: &Listener,
        notification: &Notification,
        ctx: &EventContext,
    ) -> (Result<Handled, CallError>, Duration) {
        let started = Instant::now();
        let result = calls.call(ctx, notification).await;
        let took = started.elapsed();
        listener.stats.duration.observe(took.as_secs_f64());
        listener
            .stats
            .call_micros
            .fetch_add(FeedEvent::micros(took), Ordering::Relaxed);
        if let Err(err) = &result {
            listener.stats.failed.fetch_add(1, Ordering::Relaxed);
            if let CallError::Fault { kind, .. } = err {
                listener.stats.record_fault(*kind);
            }
        }
        (result, took)
    }

    /// Delivers one every-event notification with its retries, in place.
    async fn deliver_in_order(
        &self,
        calls: &mut impl Calls,
        listener: &Listener,
        notification: &Notification,
        ctx: &EventContext,
    ) -> Delivered {
        let event = notification.kind();
        let mut attempt = 0u32;
        loop {
            let (result, took) = self.timed_call(calls, listener, notification, ctx).await;
            let err = match result {
                Ok(handled) => {
                    listener.stats.delivered.fetch_add(1, Ordering::Relaxed);
                    if handled.requeue_after.is_some() {
                        self.ignore_requeue(listener);
                    }
                    self.announce(
                        listener,
                        event,
                        ctx,
                        Outcome::Delivered,
                        attempt + 1,
                        took,
                        None,
                    );
                    return Delivered::Ok;
                }
                Err(err) => err,
            };
            if attempt >= self.retry.max_retries {
                self.give_up(listener, event, ctx, attempt + 1, took, &err);
                return Delivered::Skipped;
            }
            attempt += 1;
            let delay = self.retry.backoff(attempt);
            listener.stats.retried.fetch_add(1, Ordering::Relaxed);
            add_millis(&listener.stats.backoff_millis, delay);
            self.record_failure(listener, event, &ctx.key, &err, attempt, Some(delay));
            if !self.pause(delay).await {
                return Delivered::Stopped;
            }
        }
    }

    /// Delivers one coalesced notification once; a failure hands it back to
    /// its queue to wait for its key's backoff (or gives up on it), a
    /// requeue request hands it back to wait for the delay asked.
    async fn deliver_coalesced(
        &self,
        calls: &mut impl Calls,
        listener: &Listener,
        notification: Notification,
        ctx: &EventContext,
    ) {
        let event = notification.kind();
        let (result, took) = self.timed_call(calls, listener, &notification, ctx).await;
        let now = self.now();
        let err = match result {
            Ok(handled) => {
                listener.stats.delivered.fetch_add(1, Ordering::Relaxed);
                let requeue_at = handled.requeue_after.map(|asked| {
                    listener.stats.requeued.fetch_add(1, Ordering::Relaxed);
                    later(now, self.retry.requeue_delay(asked))
                });
                let failures = listener
                    .coalesced(|queue| queue.handled(notification, requeue_at))
                    .unwrap_or(0);
                self.announce(
                    listener,
                    event,
                    ctx,
                    Outcome::Delivered,
                    failures + 1,
                    took,
                    None,
                );
                return;
            }
            Err(err) => err,
        };
        let retry = listener
            .coalesced(|queue| queue.failed(notification, now, &self.retry.coalesced))
            .unwrap_or(Retry::GiveUp { failures: 1 });
        let (failures, delay) = match retry {
            Retry::GiveUp { failures } => {
                self.give_up(listener, event, ctx, failures, took, &err);
                return;
            }
            Retry::Backoff { failures, delay } => (failures, delay),
            Retry::Merged { failures } => (failures, Duration::ZERO),
        };
        // The status is written before the counters move, so whoever sees a
        // count also sees the failure that made it.
        self.record_failure(listener, event, &ctx.key, &err, failures, Some(delay));
        listener.stats.retried.fetch_add(1, Ordering::Release);
        add_millis(&listener.stats.backoff_millis, delay);
        self.announce(
            listener,
            event,
            ctx,
            Outcome::Retrying,
            failures,
            took,
            Some(&err),
        );
    }

    /// Skips a notification after its last attempt, and records it.
    fn give_up(
        &self,
        listener: &Listener,
        event: &'static str,
        ctx: &EventContext,
        attempts: u32,
        took: Duration,
        err: &CallError,
    ) {
        self.record_failure(listener, event, &ctx.key, err, attempts, None);
        listener.stats.skipped.fetch_add(1, Ordering::Release);
        self.announce(
            listener,
            event,
            ctx,
            Outcome::Skipped,
            attempts,
            took,
            Some(err),
        );
        if ctx.is_initial_list {
            listener.mark_degraded(format!(
                "skipped {event} {} of its initial list after {attempts} failed attempts: {err}",
                ctx.key,
            ));
        }
    }

    /// Counts a requeue request every-event delivery cannot honour, and says
    /// so once per listener.
    fn ignore_requeue(&self, listener: &Listener) {
        listener
            .stats
            .requeues_ignored
            .fetch_add(1, Ordering::Relaxed);
        if listener.first_ignored_requeue() {
            tracing::warn!(
                plugin = &*self.name,
                resource = listener.resource(),
                "the plugin asked for a notification to be delivered again later, which \
                 every-event delivery cannot do without breaking its order: ignored (this \
                 listener's further requests are only counted). Requeue needs `delivery: \
                 coalesced` in the subscription"
            );
        }
    }

    /// With `herald::call=debug` in the log filter, each delivery is a span
    /// carrying the plugin, resource, key and event type, so the plugin's
    /// log lines show what they were about.
    fn call_span(&self, listener: &Listener, ctx: &EventContext, event: &str) -> tracing::Span {
        tracing::debug_span!(
            target: "herald::call",
            "call",
            plugin = &*self.name,
            resource = listener.resource(),
            key = %ctx.key,
            event,
        )
    }

    /// Publishes a delivery's outcome to the feed, if the worker has one
    /// (and it has watchers: otherwise nothing is built).
    #[allow(clippy::too_many_arguments)]
    fn announce(
        &self,
        listener: &Listener,
        event: &'static str,
        ctx: &EventContext,
        outcome: Outcome,
        attempts: u32,
        took: Duration,
        error: Option<&CallError>,
    ) {
        let Some(feed) = &self.feed else {
            return;
        };
        feed.publish(|| FeedEvent {
            at_ms: FeedEvent::epoch_ms(SystemTime::now()),
            plugin: listener.plugin_name().clone(),
            resource: listener.resource_name().clone(),
            event,
            key: ctx.key.clone(),
            initial: ctx.is_initial_list,
            outcome,
            attempts,
            micros: FeedEvent::micros(took),
            error: error.map(ToString::to_string),
        });
    }

    /// Logs a failed attempt and keeps it as the last error: retried after
    /// `retry_in`, or skipped (`None`).
    fn record_failure(
        &self,
        listener: &Listener,
        event: &'static str,
        key: &str,
        err: &CallError,
        attempts: u32,
        retry_in: Option<Duration>,
    ) {
        let plugin = &*self.name;
        let fault = err.fault().map(|f| f.as_str()).unwrap_or("handler-error");
        let resource = listener.resource();
        *self.last_error.lock().unwrap_or_else(|e| e.into_inner()) = Some(LastError {
            message: err.to_string(),
            notification: format!("{event} {key}"),
            at: SystemTime::now(),
            skipped: retry_in.is_none(),
        });
        match self.failure_lines.admit(1, Instant::now()) {
            Admit::Drop => return,
            Admit::Pass { summary: None } => {}
            Admit::Pass {
                summary: Some(dropped),
            } => tracing::warn!(
                plugin,
                dropped,
                "{dropped} lines about failed calls of this plugin were not logged (over \
                 {FAILURE_LINES_PER_SECOND} per second); herald_notifications_retried_total and \
                 herald_notifications_skipped_total count every one"
            ),
        }
        match retry_in {
            None => tracing::error!(
                plugin,
                event,
                key,
                resource,
                fault,
                attempts,
                "skipping notification after {attempts} failed attempts: {err}"
            ),
            Some(delay) => tracing::warn!(
                plugin,
                event,
                key,
                resource,
                fault,
                attempt = attempts,
                retry_in_ms = delay.as_millis() as u64,
                "plugin call failed, will retry: {err}"
            ),
        }
    }

    /// Sleeps for `delay` unless the worker is told to stop; false if it was.
    async fn pause(&self, delay: Duration) -> bool {
        let until = Instant::now() + delay;
        while self.mode() != RunMode::Stopping {
            if !self.mode_changed.raised_by(until).await {
                return true;
            }
        }
        false
    }
}

/// One turn of a plugin's task on a pool thread: it ends after
/// [`SLICE_CALLS`] deliveries or one [`EPOCH_TICK`], whichever is first.
struct Slice {
    started: Instant,
    calls: u32,
}

impl Slice {
    fn new() -> Self {
        Slice {
            started: Instant::now(),
            calls: 0,
        }
    }

    /// Counts a delivery; true once the slice is used up.
    fn spent(&mut self) -> bool {
        self.calls += 1;
        self.calls >= SLICE_CALLS || self.started.elapsed() >= EPOCH_TICK
    }
}

/// Runs `future` inside `span`, or as it is when the span is disabled (the
/// common case: entering and leaving even a disabled span at every poll
/// costs a measurable share of a no-op delivery).
async fn in_span<F: Future>(span: tracing::Span, future: F) -> F::Output {
    if span.is_disabled() {
        future.await
    } else {
        future.instrument(span).await
    }
}

fn add_millis(counter: &std::sync::atomic::AtomicU64, delay: Duration) {
    let millis = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
    counter.fetch_add(millis, Ordering::Relaxed);
}

/// One reusable event context per listener: its kind and resource are set
/// once, and each notification rewrites the key and resourceVersion into
/// the buffers they already have, so a call allocates nothing for them.
#[derive(Default)]
struct Contexts(Vec<(Arc<Listener>, EventContext)>);

impl Contexts {
    /// The context of `notification`, from `listener`.
    fn for_notification(
        &mut self,
        listener: &Arc<Listener>,
        notification: &Notification,
    ) -> &EventContext {
        let at = match self.0.iter().position(|(l, _)| Arc::ptr_eq(l, listener)) {
            Some(at) => at,
            None => {
                self.0.push((
                    listener.clone(),
                    EventContext {
                        kind: listener.kind().clone(),
                        resource: listener.resource().to_owned(),
                        key: String::new(),
                        resource_version: String::new(),
                        is_initial_list: false,
                        is_resync: false,
                        final_state_unknown: false,
                    },
                ));
                self.0.len() - 1
            }
        };
        let ctx = &mut self.0[at].1;
        let object = notification.object();
        object.write_key(&mut ctx.key);
        ctx.resource_version.clear();
        ctx.resource_version.push_str(object.resource_version());
        ctx.is_initial_list = matches!(notification, Notification::Add { initial: true, .. });
        ctx.is_resync = matches!(notification, Notification::Update { resync: true, .. });
        ctx.final_state_unknown = matches!(
            notification,
            Notification::Delete {
                final_state_unknown: true,
                ..
            }
        );
        ctx
    }
}

#[cfg(test)]
mod tests {
    use super::super::queue::tests::{add, update};
    use super::*;
    use crate::gvk::Gvk;
    use crate::plugin::Subscription;
    use std::collections::{HashMap, HashSet};
    use std::sync::mpsc;

    const MS: Duration = Duration::from_millis(1);

    /// A clock the test moves by hand.
    #[derive(Clone)]
    struct ManualClock(Arc<Mutex<Instant>>);

    impl ManualClock {
        fn new() -> Self {
            ManualClock(Arc::new(Mutex::new(Instant::now())))
        }

        fn now(&self) -> Instant {
            *self.0.lock().unwrap()
        }

        fn set(&self, at: Instant) {
            *self.0.lock().unwrap() = at;
        }
    }

    /// A stand-in for the plugin: fails the keys in `failing`, asks for the
    /// keys in `requeue` to be delivered again after their delay, and
    /// reports every call as `kind key@rv`.
    #[derive(Default)]
    struct Script {
        failing: HashSet<String>,
        /// Keys whose call never ends: it waits, as in a host call.
        stuck: HashSet<String>,
        requeue: HashMap<String, Duration>,
        calls: Vec<String>,
        /// Where calls are also reported, for tests on a real thread.
        report: Option<mpsc::Sender<String>>,
        /// Run during the call whose key this is.
        hook: Option<(String, Box<dyn FnOnce() + Send>)>,
        /// An instance is live: made by a call, dropped by a reclaim.
        live: bool,
        /// Times asked to reclaim.
        reclaims: Arc<std::sync::atomic::AtomicU32>,
    }

    impl Calls for Script {
        fn call(
            &mut self,
            ctx: &EventContext,
            notification: &Notification,
        ) -> impl Future<Output = Result<Handled, CallError>> + Send {
            let stuck = self.stuck.contains(&ctx.key);
            self.live = true;
            let answer = self.answer(ctx, notification);
            async move {
                if stuck {
                    std::future::pending::<()>().await;
                }
                answer
            }
        }

        fn reclaim(&mut self) -> bool {
            self.reclaims.fetch_add(1, Ordering::Relaxed);
            std::mem::take(&mut self.live)
        }
    }

    impl Script {
        fn answer(
            &mut self,
            ctx: &EventContext,
            notification: &Notification,
        ) -> Result<Handled, CallError> {
            let call = format!(
                "{} {}@{}",
                notification.kind(),
                ctx.key,
                ctx.resource_version
            );
            self.calls.push(call.clone());
            if let Some(report) = &self.report {
                let _ = report.send(call);
            }
            if self.hook.as_ref().is_some_and(|(key, _)| *key == ctx.key)
                && let Some((_, hook)) = self.hook.take()
            {
                hook();
            }
            if self.failing.contains(&ctx.key) {
                return Err(CallError::Handler(format!("refused {}", ctx.key)));
            }
            Ok(Handled {
                requeue_after: self.requeue.get(&ctx.key).copied(),
            })
        }
    }

    fn dispatch_with(retry: RetryPolicy, clock: &ManualClock) -> Dispatch {
        let clock = clock.clone();
        Dispatch::new(
            "test".into(),
            retry,
            None,
            Arc::new(Demand::new(1)),
            Box::new(move || clock.now()),
        )
    }

    /// A listener of an informer whose initial list is in (and empty).
    fn listener(dispatch: &Dispatch, delivery: Delivery) -> Arc<Listener> {
        let listener = joining(dispatch, delivery);
        listener.push_synced();
        listener
    }

    /// A listener of an informer still listing: its initial list is to come.
    fn joining(dispatch: &Dispatch, delivery: Delivery) -> Arc<Listener> {
        let subscription = Subscription {
            kind: Gvk::new("", "v1", "Pod"),
            namespace: None,
            label_selector: None,
            field_selector: None,
            resync_period: None,
            delivery,
        };
        let listener = Arc::new(Listener::new(
            "test".into(),
            subscription,
            "pods".into(),
            dispatch.signal.clone(),
        ));
        dispatch.attach(listener.clone());
        listener
    }

    /// Steps until nothing is ready; returns the calls made and when the
    /// next waiting entry is ready.
    fn settle(
        dispatch: &Dispatch,
        script: &mut Script,
        cursor: &mut Cursor,
    ) -> (Vec<String>, Option<Instant>) {
        let runtime = current_thread();
        for _ in 0..10_000 {
            match runtime.block_on(dispatch.step(script, cursor)) {
                Step::Worked => {}
                Step::Idle(next) => return (std::mem::take(&mut script.calls), next),
                Step::Stopped => panic!("stopped"),
            }
        }
        panic!("never idle")
    }

    fn current_thread() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    fn count(counter: &std::sync::atomic::AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }

    #[test]
    fn other_keys_flow_while_one_keeps_failing_and_it_is_retried_after_its_backoff() {
        let clock = ManualClock::new();
        let dispatch = dispatch_with(RetryPolicy::default(), &clock);
        let pods = listener(&dispatch, Delivery::Coalesced);
        let mut script = Script {
            failing: HashSet::from(["n/a".to_owned()]),
            ..Script::default()
        };
        let mut cursor = Cursor::default();
        for name in ["a", "b", "c"] {
            pods.push(add(name, 1, false));
        }
        let t0 = clock.now();
        let (calls, next) = settle(&dispatch, &mut script, &mut cursor);
        assert_eq!(calls, ["add n/a@1", "add n/b@1", "add n/c@1"]);
        assert_eq!(next, Some(t0 + 5 * MS), "a waits 5 ms");
        assert_eq!((pods.depth(), pods.delayed()), (1, 1));

        // Each failure of a doubles its wait; a key pushed meanwhile goes
        // at once.
        let mut waits = Vec::new();
        let mut now = t0;
        for round in 0..4u32 {
            let ready_at = next_ready(&dispatch);
            pods.push(add(&format!("d{round}"), 1, false));
            let (calls, _) = settle(&dispatch, &mut script, &mut cursor);
            assert_eq!(calls, [format!("add n/d{round}@1")], "not a: it waits");
            waits.push((ready_at - now).as_millis());
            now = ready_at;
            clock.set(now);
            let (calls, _) = settle(&dispatch, &mut script, &mut cursor);
            assert_eq!(calls, ["add n/a@1"]);
        }
        assert_eq!(waits, [5, 10, 20, 40]);

        // Once it succeeds its count is forgotten.
        script.failing.clear();
        clock.set(next_ready(&dispatch));
        assert_eq!(
            settle(&dispatch, &mut script, &mut cursor),
            (vec!["add n/a@1".to_owned()], None)
        );
        let stats = &pods.stats;
        assert_eq!(
            (
                count(&stats.failed),
                count(&stats.retried),
                count(&stats.delivered),
                count(&stats.skipped)
            ),
            (5, 5, 7, 0)
        );
        assert_eq!(count(&stats.backoff_millis), 5 + 10 + 20 + 40 + 80);
        assert!(
            !dispatch.last_error().unwrap().skipped,
            "retried, not skipped"
        );
        pods.push(update("a", 1, 2));
        let (calls, _) = settle(&dispatch, &mut script, &mut cursor);
        assert_eq!(calls, ["update n/a@2"]);
        script.failing.insert("n/a".into());
        let now = clock.now();
        pods.push(update("a", 2, 3));
        let (_, next) = settle(&dispatch, &mut script, &mut cursor);
        assert_eq!(next, Some(now + 5 * MS), "the backoff starts over");
    }

    fn next_ready(dispatch: &Dispatch) -> Instant {
        dispatch.next_ready_at().expect("a key waits")
    }

    #[test]
    fn an_initial_key_given_up_on_degrades_the_listener_and_only_then_is_it_synced() {
        let clock = ManualClock::new();
        let retry = RetryPolicy {
            coalesced: KeyBackoff {
                max_retries: 2,
                ..KeyBackoff::default()
            },
            ..RetryPolicy::default()
        };
        let dispatch = dispatch_with(retry, &clock);
        let pods = joining(&dispatch, Delivery::Coalesced);
        let mut script = Script {
            failing: HashSet::from(["n/a".to_owned()]),
            ..Script::default()
        };
        let mut cursor = Cursor::default();
        pods.push(add("a", 1, true));
        pods.push(add("b", 1, true));
        pods.push_synced();
        pods.push(add("c", 1, false));
        let (calls, _) = settle(&dispatch, &mut script, &mut cursor);
        assert_eq!(calls, ["add n/a@1", "add n/b@1", "add n/c@1"]);
        assert!(
            !pods.has_synced(),
            "a, of the initial list, waits for a retry"
        );
        assert!(!pods.initial_list_settled());
        clock.set(next_ready(&dispatch));
        settle(&dispatch, &mut script, &mut cursor);
        assert!(!pods.has_synced());
        clock.set(next_ready(&dispatch));
        let (calls, next) = settle(&dispatch, &mut script, &mut cursor);
        assert_eq!((calls, next), (vec!["add n/a@1".to_owned()], None));
        assert_eq!(count(&pods.stats.skipped), 1);
        assert!(dispatch.last_error().unwrap().skipped);
        let degraded = pods.degraded().expect("degraded");
        assert!(
            degraded.contains("skipped add n/a of its initial list after 3 failed attempts"),
            "{degraded}"
        );
        assert!(pods.has_synced() && pods.initial_list_settled());
    }

    #[test]
    fn nothing_is_delivered_until_every_listeners_initial_list_is_in() {
        let clock = ManualClock::new();
        let dispatch = dispatch_with(RetryPolicy::default(), &clock);
        let pods = joining(&dispatch, Delivery::EveryEvent);
        let namespaces = joining(&dispatch, Delivery::Coalesced);
        let mut script = Script::default();
        let mut cursor = Cursor::default();
        let t0 = clock.now();
        pods.push(add("a", 1, true));
        pods.push_synced();
        pods.push(add("b", 1, false));
        namespaces.push(add("n", 1, true));
        clock.set(t0 + 40 * MS);
        assert_eq!(
            settle(&dispatch, &mut script, &mut cursor),
            (Vec::new(), None),
            "the Pods are in, the Namespaces still listing"
        );
        let waiting = dispatch
            .caches
            .status(&dispatch.listeners(), dispatch.now());
        assert_eq!(
            (waiting.synced, waiting.waiting_for, waiting.waited_ms),
            (false, vec!["pods".to_owned()], 40),
            "both listeners are for pods in this test; the second is the one waited for"
        );
        namespaces.push_synced();
        clock.set(t0 + 50 * MS);
        let (calls, _) = settle(&dispatch, &mut script, &mut cursor);
        assert_eq!(calls, ["add n/a@1", "add n/n@1", "add n/b@1"]);
        let synced = dispatch
            .caches
            .status(&dispatch.listeners(), dispatch.now());
        assert_eq!(
            (synced.synced, synced.waiting_for, synced.waited_ms),
            (true, Vec::new(), 50)
        );
        assert!(pods.has_synced() && namespaces.has_synced());
    }

    #[test]
    fn an_idle_instance_is_dropped_after_the_idle_time_and_not_while_work_keeps_coming() {
        let clock = ManualClock::new();
        let mut dispatch = dispatch_with(RetryPolicy::default(), &clock);
        dispatch.idle.reclaim_after = Some(MS);
        let pods = listener(&dispatch, Delivery::EveryEvent);
        let mut script = Script::default();
        let reclaims = script.reclaims.clone();
        let mut cursor = Cursor::default();
        pods.push(add("a", 1, false));
        assert_eq!(settle(&dispatch, &mut script, &mut cursor).0, ["add n/a@1"]);
        assert!(script.live);
        let runtime = current_thread();

        // Work already waiting: the wait ends at once, nothing dropped.
        pods.push(add("a", 2, false));
        runtime.block_on(dispatch.wait(&mut script, dispatch.demand.busy(), None));
        assert_eq!((count32(&reclaims), dispatch.instances_reclaimed()), (0, 0));
        assert_eq!(settle(&dispatch, &mut script, &mut cursor).0, ["add n/a@2"]);

        // Idle past the idle time: the instance is dropped, then the wait
        // goes on until work comes (pushed once the drop is seen).
        let idle_until_reclaimed = |script: &mut Script, rv: u32| {
            let before = count32(&reclaims);
            runtime.block_on(async {
                let push = async {
                    while count32(&reclaims) == before {
                        tokio::time::sleep(MS).await;
                    }
                    pods.push(add("a", rv, false));
                };
                tokio::join!(dispatch.wait(script, dispatch.demand.busy(), None), push);
            });
        };
        idle_until_reclaimed(&mut script, 3);
        assert_eq!((count32(&reclaims), dispatch.instances_reclaimed()), (1, 1));
        assert!(!script.live, "dropped while idle");
        assert_eq!(settle(&dispatch, &mut script, &mut cursor).0, ["add n/a@3"]);
        assert!(script.live, "the next delivery made a fresh one");

        // Nothing live to drop: asked, but not counted as a reclaim.
        script.live = false;
        idle_until_reclaimed(&mut script, 4);
        assert_eq!((count32(&reclaims), dispatch.instances_reclaimed()), (2, 1));
    }

    fn count32(counter: &std::sync::atomic::AtomicU32) -> u32 {
        counter.load(Ordering::Relaxed)
    }

    #[test]
    fn requeue_after_delivers_the_key_again_after_its_delay_unless_a_newer_event_comes_first() {
        let clock = ManualClock::new();
        let dispatch = dispatch_with(RetryPolicy::default(), &clock);
        let pods = joining(&dispatch, Delivery::Coalesced);
        let mut script = Script {
            requeue: HashMap::from([("n/a".to_owned(), 30 * MS)]),
            ..Script::default()
        };
        let mut cursor = Cursor::default();
        pods.push(add("a", 1, true));
        pods.push_synced();
        let t0 = clock.now();
        let (calls, next) = settle(&dispatch, &mut script, &mut cursor);
        assert_eq!(
            (calls, next),
            (vec!["add n/a@1".to_owned()], Some(t0 + 30 * MS))
        );
        assert!(
            pods.has_synced(),
            "a requeued key was handled: it does not hold readiness"
        );
        assert_eq!((pods.depth(), pods.delayed()), (1, 1));
        assert_eq!(count(&pods.stats.requeued), 1);

        clock.set(t0 + 29 * MS);
        assert_eq!(
            settle(&dispatch, &mut script, &mut cursor).0,
            Vec::<String>::new()
        );
        clock.set(t0 + 30 * MS);
        let (calls, next) = settle(&dispatch, &mut script, &mut cursor);
        assert_eq!(
            (calls, next),
            (vec!["add n/a@1".to_owned()], Some(t0 + 60 * MS))
        );

        // A newer event before the requeue is due: delivered at once, once.
        script.requeue.clear();
        pods.push(update("a", 1, 2));
        let (calls, next) = settle(&dispatch, &mut script, &mut cursor);
        assert_eq!((calls, next), (vec!["update n/a@2".to_owned()], None));
        clock.set(t0 + Duration::from_secs(3600));
        assert_eq!(
            settle(&dispatch, &mut script, &mut cursor).0,
            Vec::<String>::new()
        );
        assert_eq!((pods.depth(), count(&pods.stats.requeued)), (0, 2));
    }

    #[test]
    fn every_event_delivery_ignores_requeue_requests_and_counts_them() {
        let clock = ManualClock::new();
        let dispatch = dispatch_with(RetryPolicy::default(), &clock);
        let pods = listener(&dispatch, Delivery::EveryEvent);
        let mut script = Script {
            requeue: HashMap::from([("n/a".to_owned(), 30 * MS)]),
            ..Script::default()
        };
        let mut cursor = Cursor::default();
        pods.push(add("a", 1, false));
        pods.push(update("a", 1, 2));
        let (calls, next) = settle(&dispatch, &mut script, &mut cursor);
        assert_eq!(calls, ["add n/a@1", "update n/a@2"]);
        assert_eq!(next, None, "nothing waits");
        assert_eq!(
            (
                count(&pods.stats.requeues_ignored),
                count(&pods.stats.requeued)
            ),
            (2, 0)
        );
        assert!(!pods.first_ignored_requeue(), "the warning was logged once");
    }

    #[test]
    fn requeue_delays_are_floored_at_the_base_delay_and_capped_at_a_day() {
        let retry = RetryPolicy::default();
        assert_eq!(retry.requeue_delay(Duration::ZERO), 5 * MS);
        assert_eq!(
            retry.requeue_delay(Duration::from_secs(90)),
            Duration::from_secs(90)
        );
        assert_eq!(retry.requeue_delay(Duration::MAX), MAX_REQUEUE_DELAY);
    }

    #[test]
    fn in_place_retry_delays_keep_their_schedule() {
        let retry = RetryPolicy::default();
        let delays: Vec<u128> = (1..=10).map(|n| retry.backoff(n).as_millis()).collect();
        assert_eq!(
            delays,
            [100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 30000]
        );
        assert_eq!(retry.backoff(u32::MAX), Duration::from_secs(30));
    }

    /// Runs `dispatch` on a thread of its own (with the real clock) and
    /// returns its handle and the calls it reports.
    fn spawn(
        dispatch: Arc<Dispatch>,
        mut script: Script,
    ) -> (std::thread::JoinHandle<()>, mpsc::Receiver<String>) {
        let (report, calls) = mpsc::channel();
        script.report = Some(report);
        let thread = std::thread::spawn(move || {
            let busy = dispatch.demand.busy();
            current_thread().block_on(dispatch.run(&mut script, busy))
        });
        (thread, calls)
    }

    /// Spawns `dispatch`'s loop on `runtime`, counted busy from now as a
    /// worker's task is.
    fn run_on(
        runtime: &tokio::runtime::Runtime,
        dispatch: &Arc<Dispatch>,
        mut script: Script,
    ) -> tokio::task::JoinHandle<()> {
        let dispatch = dispatch.clone();
        let busy = dispatch.demand.busy();
        runtime.spawn(async move { dispatch.run(&mut script, busy).await })
    }

    /// The pool at its smallest, one thread, shared by three plugins: one
    /// with a deep backlog (five slices), one whose call waits forever (as in a host
    /// call), one with a single notification. The busy one gives the thread
    /// up after one slice, the waiting one holds none, and the third one's
    /// notification is delivered before the busy one's second slice.
    #[test]
    fn a_busy_plugin_yields_the_thread_after_a_slice_and_a_waiting_one_holds_none() {
        let runtime = current_thread();
        let demand = Arc::new(Demand::new(1));
        let (report, calls) = mpsc::channel();
        let plugin = |keys: Vec<String>, stuck: &[&str]| {
            let dispatch = threaded_on(Duration::from_millis(5), demand.clone());
            let pods = listener(&dispatch, Delivery::Coalesced);
            for key in keys {
                pods.push(add(&key, 1, false));
            }
            let script = Script {
                stuck: stuck.iter().map(|k| (*k).to_owned()).collect(),
                report: Some(report.clone()),
                ..Script::default()
            };
            let task = run_on(&runtime, &dispatch, script);
            (dispatch, pods, task)
        };
        let backlog = 5 * u64::from(SLICE_CALLS);
        let busy = plugin((0..backlog).map(|i| format!("busy-{i}")).collect(), &[]);
        let waiting = plugin(vec!["stuck".into()], &["n/stuck"]);
        let quiet = plugin(vec!["quiet".into()], &[]);

        runtime.block_on(async {
            while quiet.1.stats.delivered.load(Ordering::Acquire) == 0 {
                tokio::task::yield_now().await;
            }
        });
        let seen: Vec<String> = calls.try_iter().collect();
        let quiet_at = seen.iter().position(|c| c == "add n/quiet@1").unwrap();
        let busy_before = seen[..quiet_at]
            .iter()
            .filter(|c| c.contains("busy"))
            .count();
        assert!(
            busy_before <= SLICE_CALLS as usize,
            "the busy plugin made {busy_before} calls before the quiet one had its turn"
        );
        assert!(seen[..quiet_at].contains(&"add n/stuck@1".to_owned()));
        assert_eq!(
            waiting.1.stats.delivered.load(Ordering::Relaxed)
                + waiting.1.stats.failed.load(Ordering::Relaxed),
            0,
            "the waiting call is still under way"
        );

        // The busy plugin goes on to the end of its backlog meanwhile.
        runtime.block_on(async {
            while busy.1.stats.delivered.load(Ordering::Acquire) < backlog {
                tokio::task::yield_now().await;
            }
        });
        for (dispatch, _, task) in [busy, waiting, quiet] {
            dispatch.set_mode(RunMode::Stopping);
            drop(task);
        }
    }

    /// One thread, two plugins: one with a deep backlog, one idle. A push
    /// to the idle one during the busy one's slice (made from inside a
    /// call, so on the pool's only thread) counts it as wanting the thread
    /// at once, so the busy one yields at the end of that slice, not at the
    /// end of its backlog.
    #[test]
    fn a_plugin_woken_while_another_is_busy_is_served_at_the_end_of_its_slice() {
        let runtime = current_thread();
        let demand = Arc::new(Demand::new(1));
        let (report, calls) = mpsc::channel();
        let busy = threaded_on(Duration::from_millis(5), demand.clone());
        let quiet = threaded_on(Duration::from_millis(5), demand.clone());
        let busy_pods = listener(&busy, Delivery::Coalesced);
        let quiet_pods = listener(&quiet, Delivery::Coalesced);
        let backlog = 10 * u64::from(SLICE_CALLS);
        for i in 0..backlog {
            busy_pods.push(add(&format!("busy-{i}"), 1, false));
        }
        let push_at = "n/busy-1500";
        let busy_script = Script {
            report: Some(report.clone()),
            hook: Some((
                push_at.to_owned(),
                Box::new(move || quiet_pods.push(add("quiet", 1, false))),
            )),
            ..Script::default()
        };
        let quiet_script = Script {
            report: Some(report),
            ..Script::default()
        };
        let tasks = [
            (busy.clone(), run_on(&runtime, &busy, busy_script)),
            (quiet.clone(), run_on(&runtime, &quiet, quiet_script)),
        ];
        runtime.block_on(async {
            while busy_pods.stats.delivered.load(Ordering::Acquire) < backlog {
                tokio::task::yield_now().await;
            }
        });
        let seen: Vec<String> = calls.try_iter().collect();
        let pushed = seen.iter().position(|c| c.contains(push_at)).unwrap();
        let served = seen.iter().position(|c| c == "add n/quiet@1").unwrap();
        assert!(
            served > pushed && served - pushed <= SLICE_CALLS as usize,
            "pushed during call {pushed}, served at call {served} (slice: {SLICE_CALLS})"
        );
        for (dispatch, task) in tasks {
            dispatch.set_mode(RunMode::Stopping);
            drop(task);
        }
    }

    /// How long a test waits for what must happen before calling it a hang.
    const NEVER: Duration = Duration::from_secs(30);

    fn threaded(base_delay: Duration) -> Arc<Dispatch> {
        threaded_on(base_delay, Arc::new(Demand::new(1)))
    }

    /// A dispatch counted in `demand` (with the real clock).
    fn threaded_on(base_delay: Duration, demand: Arc<Demand>) -> Arc<Dispatch> {
        let retry = RetryPolicy {
            coalesced: KeyBackoff {
                base_delay,
                ..KeyBackoff::default()
            },
            ..RetryPolicy::default()
        };
        Arc::new(Dispatch::new(
            "test".into(),
            retry,
            None,
            demand,
            Box::new(Instant::now),
        ))
    }

    fn failing(key: &str) -> Script {
        Script {
            failing: HashSet::from([key.to_owned()]),
            ..Script::default()
        }
    }

    #[test]
    fn the_thread_sleeps_until_a_waiting_key_is_ready_then_retries_it() {
        let dispatch = threaded(Duration::from_millis(100));
        let pods = listener(&dispatch, Delivery::Coalesced);
        pods.push(add("a", 1, false));
        let started = Instant::now();
        let (thread, calls) = spawn(dispatch.clone(), failing("n/a"));
        assert_eq!(calls.recv_timeout(NEVER).unwrap(), "add n/a@1");
        assert_eq!(calls.recv_timeout(NEVER).unwrap(), "add n/a@1");
        assert!(
            started.elapsed() >= Duration::from_millis(100),
            "retried before its backoff: {:?}",
            started.elapsed()
        );
        dispatch.set_mode(RunMode::Stopping);
        thread.join().unwrap();
    }

    #[test]
    fn a_push_wakes_the_thread_while_a_key_waits_out_a_long_backoff() {
        let dispatch = threaded(Duration::from_secs(1000));
        let pods = listener(&dispatch, Delivery::Coalesced);
        pods.push(add("a", 1, false));
        let (thread, calls) = spawn(dispatch.clone(), failing("n/a"));
        assert_eq!(calls.recv_timeout(NEVER).unwrap(), "add n/a@1");
        pods.push(add("b", 1, false));
        assert_eq!(calls.recv_timeout(NEVER).unwrap(), "add n/b@1");
        assert_eq!(pods.delayed(), 1, "a still waits");
        dispatch.set_mode(RunMode::Stopping);
        thread.join().unwrap();
    }

    #[test]
    fn a_drain_ends_with_only_waiting_keys_left_instead_of_waiting_them_out() {
        let dispatch = threaded(Duration::from_secs(1000));
        let pods = listener(&dispatch, Delivery::Coalesced);
        let script = Script {
            failing: HashSet::from(["n/a".to_owned()]),
            requeue: HashMap::from([("n/b".to_owned(), Duration::from_secs(3600))]),
            ..Script::default()
        };
        pods.push(add("a", 1, false));
        pods.push(add("b", 1, false));
        dispatch.set_mode(RunMode::Draining);
        let (thread, calls) = spawn(dispatch.clone(), script);
        let mut seen: Vec<String> = (0..2).map(|_| calls.recv_timeout(NEVER).unwrap()).collect();
        seen.sort();
        assert_eq!(seen, ["add n/a@1", "add n/b@1"]);
        // The thread ends: it does not wait 1000 s for a, nor an hour for b.
        assert_eq!(
            calls.recv_timeout(NEVER),
            Err(mpsc::RecvTimeoutError::Disconnected)
        );
        thread.join().unwrap();
        assert_eq!(pods.delayed(), 2, "left behind, dropped with the listener");
    }
}
