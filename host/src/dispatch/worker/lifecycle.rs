//! A plugin's worker from creation to stop: its task on the pool, and a
//! bounded wait for that task to end.

use super::report::LastError;
use super::retry::RetryPolicy;
use super::state::{Dispatch, RunMode};
use crate::dispatch::feed::Feed;
use crate::dispatch::gate::CacheSync;
use crate::dispatch::listener::Listener;
use crate::dispatch::signal::Signal;
use crate::plugin::{LoadedPlugin, PluginInstance};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;

/// What a worker and its task share.
struct Shared {
    plugin: LoadedPlugin,
    dispatch: Dispatch,
    /// Raised by the task as it ends, so `stop` waits without polling.
    exited: Signal,
    /// Set (before `exited` is raised) once the task is done.
    has_exited: AtomicBool,
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
        self.new_listener_in(None, subscription, resource)
    }

    /// A listener as [`new_listener`](Self::new_listener), on an informer
    /// of `cluster` (`None`: the default one).
    pub fn new_listener_in(
        &self,
        cluster: Option<crate::cluster::ClusterName>,
        subscription: crate::plugin::Subscription,
        resource: Arc<str>,
    ) -> Arc<Listener> {
        Arc::new(
            Listener::new(
                self.shared.plugin.name().into(),
                subscription,
                resource,
                self.signal(),
            )
            .in_cluster(cluster),
        )
    }

    /// Starts draining `listener`.
    pub fn attach(&self, listener: Arc<Listener>) {
        self.shared.dispatch.attach(listener);
    }

    /// Stops draining `listener` (its informer has let it go): what it
    /// still holds is dropped with it.
    pub fn detach(&self, listener: &Arc<Listener>) {
        self.shared.dispatch.detach(listener);
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
        self.shared.dispatch.report.last_error()
    }

    /// Whether the plugin's caches are complete, so its deliveries have
    /// started, or what they are waiting for (see `dispatch::gate`).
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
