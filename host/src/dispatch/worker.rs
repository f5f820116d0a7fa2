//! A plugin's worker: one OS thread that owns the plugin's instance and
//! delivers its listeners' notifications one at a time.
//!
//! # Guarantees
//!
//! - Each listener's notifications reach the plugin in the order the informer
//!   distributed them, one call at a time.
//! - Nothing waits on a worker: informers only push into listener buffers, so
//!   a slow, stuck or crashing plugin delays nobody but itself.
//! - A failed call (handler error or fault) is retried with exponential
//!   backoff up to [`RetryPolicy::max_retries`] times, then skipped and
//!   recorded (log line, counters, last error). After a skip the worker waits
//!   before its next notification, longer with each consecutive skip, so a
//!   plugin that keeps failing is backed off rather than spun. A skipped
//!   notification of an initial list marks the listener
//!   [degraded](Listener::degraded), so readiness does not wait on it.
//! - Nothing waits on a worker without a bound: every call ends by its
//!   deadline ([`crate::plugin`]'s deadline mechanism), and
//!   [`PluginWorker::stop`] waits for the thread only until a given instant,
//!   after which the thread is abandoned (detached, and reported by the
//!   caller) and everything else goes on.
//! - A worker given a [`Feed`] publishes one event per notification it is
//!   done with (handled or skipped), without waiting (see [`Feed::publish`]).

use super::feed::{Feed, FeedEvent, Outcome};
use super::listener::Listener;
use super::notification::Notification;
use super::queue::Item;
use super::signal::Signal;
use crate::plugin::{CallError, EventContext, LoadedPlugin, PluginInstance};
use serde::Serialize;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

/// How failed calls are retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first failed attempt, before the notification is skipped.
    pub max_retries: u32,
    /// Delay before the first retry; doubles with each further one.
    pub initial_backoff: Duration,
    /// Longest delay between attempts, and longest wait after skips.
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// The delay before retry number `attempt` (1-based).
    pub fn backoff(&self, attempt: u32) -> Duration {
        self.initial_backoff
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(20))
            .min(self.max_backoff)
    }
}

/// The last failure of a plugin, for status.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LastError {
    /// What failed.
    pub message: String,
    /// The notification: event type and object key.
    pub notification: String,
    /// When.
    #[serde(with = "crate::time_serde")]
    pub at: SystemTime,
    /// Whether it was skipped after the last retry.
    pub skipped: bool,
}

const RUNNING: u8 = 0;
const DRAINING: u8 = 1;
const STOPPING: u8 = 2;

struct Shared {
    plugin: LoadedPlugin,
    listeners: RwLock<Vec<Arc<Listener>>>,
    signal: Arc<Signal>,
    /// Raised only when the mode changes, so backoff sleeps ignore pushes.
    mode_changed: Signal,
    mode: AtomicU8,
    retry: RetryPolicy,
    last_error: Mutex<Option<LastError>>,
    /// Raised by the thread as it exits, so `stop` waits without polling.
    exited: Signal,
    /// Set (before `exited` is raised) once the thread is done.
    has_exited: std::sync::atomic::AtomicBool,
    /// Where finished deliveries are announced, if anywhere.
    feed: Option<Arc<Feed>>,
}

/// The worker of one loaded plugin. Created idle ([`PluginWorker::new`]), so
/// its listeners can be registered and buffer before any call is made, then
/// started ([`PluginWorker::start`]).
pub struct PluginWorker {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for PluginWorker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginWorker")
            .field("plugin", &self.shared.plugin.name())
            .finish()
    }
}

impl PluginWorker {
    /// An idle worker for `plugin`: no thread and no call until [`start`](Self::start).
    pub fn new(plugin: LoadedPlugin, retry: RetryPolicy) -> Self {
        Self::with_feed(plugin, retry, None)
    }

    /// [`new`](Self::new), publishing each finished delivery to `feed`.
    pub fn with_feed(plugin: LoadedPlugin, retry: RetryPolicy, feed: Option<Arc<Feed>>) -> Self {
        PluginWorker {
            shared: Arc::new(Shared {
                plugin,
                listeners: RwLock::new(Vec::new()),
                signal: Arc::new(Signal::default()),
                mode_changed: Signal::default(),
                mode: AtomicU8::new(RUNNING),
                retry,
                last_error: Mutex::new(None),
                exited: Signal::default(),
                has_exited: std::sync::atomic::AtomicBool::new(false),
                feed,
            }),
            thread: None,
        }
    }

    /// A worker for `plugin`, started.
    pub fn spawn(plugin: LoadedPlugin, retry: RetryPolicy) -> Self {
        let mut worker = PluginWorker::new(plugin, retry);
        worker.start();
        worker
    }

    /// Starts the worker thread; it delivers what its listeners buffered so
    /// far, then everything they receive. Does nothing if already started.
    pub fn start(&mut self) {
        if self.thread.is_some() {
            return;
        }
        let shared = self.shared.clone();
        let thread = std::thread::Builder::new()
            .name(format!("plugin-{}", shared.plugin.name()))
            .spawn(move || {
                run(&shared);
                shared.has_exited.store(true, Ordering::Release);
                shared.exited.notify();
            })
            .expect("spawning a plugin worker thread");
        self.thread = Some(thread);
    }

    /// The plugin.
    pub fn plugin(&self) -> &LoadedPlugin {
        &self.shared.plugin
    }

    /// The signal listeners of this worker must wake.
    pub fn signal(&self) -> Arc<Signal> {
        self.shared.signal.clone()
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
        self.shared
            .listeners
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .push(listener);
        self.shared.signal.notify();
    }

    /// The listeners being drained.
    pub fn listeners(&self) -> Vec<Arc<Listener>> {
        self.shared
            .listeners
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// True when every listener has delivered and handled its initial list.
    pub fn has_synced(&self) -> bool {
        self.listeners().iter().all(|l| l.has_synced())
    }

    /// The plugin's last failure.
    pub fn last_error(&self) -> Option<LastError> {
        self.shared
            .last_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Stops the worker: with `drain_until`, after delivering what is
    /// buffered (up to that instant); otherwise after the call in flight
    /// (which ends by itself or at its deadline). What is still buffered is
    /// dropped. Waits for the thread until `give_up_at` and no longer: a
    /// thread still busy then is [`Stopped::Abandoned`], left to end on its
    /// own while its caller goes on.
    pub fn stop(mut self, drain_until: Option<Instant>, give_up_at: Instant) -> Stopped {
        let Some(thread) = self.thread.take() else {
            return Stopped::Exited;
        };
        match drain_until {
            Some(deadline) => {
                self.shared.set_mode(DRAINING);
                if !self.shared.exited.wait_until(deadline.min(give_up_at)) {
                    self.shared.set_mode(STOPPING);
                }
            }
            None => self.shared.set_mode(STOPPING),
        }
        finish(thread, &self.shared, give_up_at)
    }

    /// Stops the worker after its call in flight, waiting for it at most
    /// [`call_bound`](Self::call_bound).
    pub fn stop_now(self) -> Stopped {
        let give_up_at = Instant::now() + self.call_bound();
        self.stop(None, give_up_at)
    }

    /// The longest a call in flight can take to come back: its deadline,
    /// plus [`STOP_MARGIN`] for the fault to be raised and the thread to wake.
    pub fn call_bound(&self) -> Duration {
        self.shared.plugin.limits().call_deadline + STOP_MARGIN
    }
}

/// How long past a call's deadline a worker is waited for before it is
/// abandoned. A deadline fault comes within two epoch ticks (10 ms) of the
/// deadline; the rest is room for a loaded machine.
pub const STOP_MARGIN: Duration = Duration::from_secs(1);

/// How a worker's thread ended when it was stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// The thread exited.
    Exited,
    /// The thread did not exit in time: it was detached and ends on its own,
    /// having no more notifications to deliver.
    Abandoned,
}

/// Joins `thread` if it exits by `give_up_at`; detaches it otherwise.
fn finish(thread: JoinHandle<()>, shared: &Shared, give_up_at: Instant) -> Stopped {
    let exited = || shared.has_exited.load(Ordering::Acquire);
    while !exited() && shared.exited.wait_until(give_up_at) {}
    if exited() {
        let _ = thread.join();
        Stopped::Exited
    } else {
        tracing::error!(
            plugin = shared.plugin.name(),
            "plugin worker did not stop in time: abandoned (its thread ends on its own)"
        );
        Stopped::Abandoned
    }
}

impl Drop for PluginWorker {
    fn drop(&mut self) {
        if let Some(thread) = self.thread.take() {
            self.shared.set_mode(STOPPING);
            let give_up_at = Instant::now() + self.call_bound();
            finish(thread, &self.shared, give_up_at);
        }
    }
}

impl Shared {
    fn set_mode(&self, mode: u8) {
        self.mode.store(mode, Ordering::Release);
        self.signal.notify();
        self.mode_changed.notify();
    }
}

fn run(shared: &Shared) {
    let mut instance = PluginInstance::lazy(shared.plugin.clone());
    let mut contexts = Contexts::default();
    let mut next_listener = 0usize;
    let mut consecutive_skips = 0u32;
    loop {
        let mode = shared.mode.load(Ordering::Acquire);
        if mode == STOPPING {
            return;
        }
        let Some((listener, item)) = next_item(shared, &mut next_listener) else {
            if mode == DRAINING {
                return;
            }
            shared.signal.wait();
            continue;
        };
        match item {
            Item::Synced => listener.mark_synced(),
            Item::Notify(notification) => {
                if consecutive_skips > 0
                    && !pause(
                        shared,
                        shared
                            .retry
                            .backoff(consecutive_skips + shared.retry.max_retries),
                    )
                {
                    return;
                }
                let ctx = contexts.for_notification(&listener, &notification);
                match deliver(shared, &mut instance, &listener, &notification, ctx) {
                    Delivered::Ok => consecutive_skips = 0,
                    Delivered::Skipped => consecutive_skips = consecutive_skips.saturating_add(1),
                    Delivered::Stopped => return,
                }
            }
        }
    }
}

/// Takes the next item, visiting listeners round-robin.
fn next_item(shared: &Shared, next: &mut usize) -> Option<(Arc<Listener>, Item)> {
    let listeners = shared.listeners.read().unwrap_or_else(|e| e.into_inner());
    let count = listeners.len();
    for offset in 0..count {
        let index = (*next + offset) % count;
        if let Some(item) = listeners[index].pop() {
            *next = index + 1;
            return Some((listeners[index].clone(), item));
        }
    }
    None
}

enum Delivered {
    Ok,
    Skipped,
    Stopped,
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

/// Delivers one notification with its retries. With `herald::call=debug`
/// in the log filter, each delivery is a span carrying the plugin, resource,
/// key and event type, so the plugin's log lines show what they were about.
fn deliver(
    shared: &Shared,
    instance: &mut PluginInstance,
    listener: &Listener,
    notification: &Notification,
    ctx: &EventContext,
) -> Delivered {
    let _span = tracing::debug_span!(
        target: "herald::call",
        "call",
        plugin = shared.plugin.name(),
        resource = listener.resource(),
        key = %ctx.key,
        event = notification.kind(),
    )
    .entered();
    let mut attempt = 0u32;
    loop {
        let started = Instant::now();
        let result = match notification {
            Notification::Add { object, .. } => instance.on_add(ctx, object.json()),
            Notification::Update { old, new, .. } => {
                instance.on_update(ctx, old.json(), new.json())
            }
            Notification::Delete { object, .. } => instance.on_delete(ctx, object.json()),
        };
        let took = started.elapsed();
        listener.stats.duration.observe(took.as_secs_f64());
        listener
            .stats
            .call_micros
            .fetch_add(FeedEvent::micros(took), Ordering::Relaxed);
        let err = match result {
            Ok(_handled) => {
                listener.stats.delivered.fetch_add(1, Ordering::Relaxed);
                announce(shared, listener, notification, ctx, attempt, took, None);
                return Delivered::Ok;
            }
            Err(err) => err,
        };
        listener.stats.failed.fetch_add(1, Ordering::Relaxed);
        if let CallError::Fault { kind, .. } = &err {
            listener.stats.record_fault(*kind);
        }
        let give_up = attempt >= shared.retry.max_retries;
        record_failure(
            shared,
            listener,
            notification,
            &ctx.key,
            &err,
            attempt,
            give_up,
        );
        if give_up {
            listener.stats.skipped.fetch_add(1, Ordering::Relaxed);
            announce(
                shared,
                listener,
                notification,
                ctx,
                attempt,
                took,
                Some(&err),
            );
            if ctx.is_initial_list {
                listener.mark_degraded(format!(
                    "skipped {} {} of its initial list after {} failed attempts: {err}",
                    notification.kind(),
                    ctx.key,
                    attempt + 1
                ));
            }
            return Delivered::Skipped;
        }
        attempt += 1;
        listener.stats.retried.fetch_add(1, Ordering::Relaxed);
        if !pause(shared, shared.retry.backoff(attempt)) {
            return Delivered::Stopped;
        }
    }
}

/// Publishes a finished delivery to the feed, if the worker has one (and
/// it has watchers: otherwise nothing is built).
fn announce(
    shared: &Shared,
    listener: &Listener,
    notification: &Notification,
    ctx: &EventContext,
    attempt: u32,
    took: Duration,
    error: Option<&CallError>,
) {
    let Some(feed) = &shared.feed else {
        return;
    };
    feed.publish(|| FeedEvent {
        at_ms: FeedEvent::epoch_ms(SystemTime::now()),
        plugin: listener.plugin_name().clone(),
        resource: listener.resource_name().clone(),
        event: notification.kind(),
        key: ctx.key.clone(),
        initial: ctx.is_initial_list,
        outcome: match error {
            None => Outcome::Delivered,
            Some(_) => Outcome::Skipped,
        },
        attempts: attempt + 1,
        micros: FeedEvent::micros(took),
        error: error.map(ToString::to_string),
    });
}

fn record_failure(
    shared: &Shared,
    listener: &Listener,
    notification: &Notification,
    key: &str,
    err: &CallError,
    attempt: u32,
    skipped: bool,
) {
    let plugin = shared.plugin.name();
    let event = notification.kind();
    let fault = err.fault().map(|f| f.as_str()).unwrap_or("handler-error");
    if skipped {
        tracing::error!(
            plugin,
            event,
            key,
            resource = listener.resource(),
            fault,
            attempts = attempt + 1,
            "skipping notification after {} failed attempts: {err}",
            attempt + 1
        );
    } else {
        tracing::warn!(
            plugin,
            event,
            key,
            resource = listener.resource(),
            fault,
            attempt = attempt + 1,
            "plugin call failed, will retry: {err}"
        );
    }
    *shared.last_error.lock().unwrap_or_else(|e| e.into_inner()) = Some(LastError {
        message: err.to_string(),
        notification: format!("{event} {key}"),
        at: SystemTime::now(),
        skipped,
    });
}

/// Sleeps for `delay` unless the worker is told to stop; false if it was.
fn pause(shared: &Shared, delay: Duration) -> bool {
    let until = Instant::now() + delay;
    while shared.mode.load(Ordering::Acquire) != STOPPING {
        if !shared.mode_changed.wait_until(until) {
            return true;
        }
    }
    false
}
