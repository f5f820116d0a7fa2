//! The worker's test doubles: a stand-in plugin, a clock moved by hand, and
//! helpers that build a [`Dispatch`] and drive it.

use super::call::{Calls, Contexts};
use super::retry::RetryPolicy;
use super::scheduler::{Cursor, Step};
use super::state::Dispatch;
use crate::dispatch::listener::Listener;
use crate::dispatch::queue::KeyBackoff;
use crate::gvk::Gvk;
use crate::informer::Notification;
use crate::plugin::{BatchError, CallError, Delivery, Demand, EventContext, Handled, Subscription};
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

pub(super) const MS: Duration = Duration::from_millis(1);

/// How long a test waits for what must happen before calling it a hang.
pub(super) const NEVER: Duration = Duration::from_secs(30);

/// A clock the test moves by hand.
#[derive(Clone)]
pub(super) struct ManualClock(Arc<Mutex<Instant>>);

impl ManualClock {
    pub(super) fn new() -> Self {
        ManualClock(Arc::new(Mutex::new(Instant::now())))
    }

    pub(super) fn now(&self) -> Instant {
        *self.0.lock().unwrap()
    }

    pub(super) fn set(&self, at: Instant) {
        *self.0.lock().unwrap() = at;
    }
}

/// A stand-in for the plugin: fails the keys in `failing`, asks for the
/// keys in `requeue` to be delivered again after their delay, and
/// reports every call as `kind key@rv`.
#[derive(Default)]
pub(super) struct Script {
    pub(super) failing: HashSet<String>,
    /// Keys whose call never ends: it waits, as in a host call.
    pub(super) stuck: HashSet<String>,
    pub(super) requeue: HashMap<String, Duration>,
    pub(super) calls: Vec<String>,
    /// Where calls are also reported, for tests on a real thread.
    pub(super) report: Option<mpsc::Sender<String>>,
    /// Run during the call whose key this is.
    pub(super) hook: Option<(String, Box<dyn FnOnce() + Send>)>,
    /// An instance is live: made by a call, dropped by a reclaim.
    pub(super) live: bool,
    /// Times asked to reclaim.
    pub(super) reclaims: Arc<std::sync::atomic::AtomicU32>,
    /// The most notifications a call may carry (0 or 1: one per call).
    pub(super) max_batch: usize,
    /// Keys whose call traps, in a batch or alone.
    pub(super) trapping: HashSet<String>,
    /// How many notifications each batch call carried.
    pub(super) batches: Vec<usize>,
    /// Keys whose call, handled, ends in the instance being replaced for
    /// outgrowing its memory.
    pub(super) retiring: HashSet<String>,
    /// Replacements so far.
    pub(super) retired: u64,
}

impl Calls for Script {
    fn call(
        &mut self,
        _: Option<&crate::cluster::ClusterName>,
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

    fn max_batch(&self) -> usize {
        self.max_batch.max(1)
    }

    fn call_batch(
        &mut self,
        listener: &Arc<Listener>,
        contexts: &mut Contexts,
        batch: &[Notification],
    ) -> impl Future<Output = Result<Handled, BatchError>> + Send {
        self.live = true;
        self.batches.push(batch.len());
        let mut answer = Ok(Handled::default());
        let mut stuck = false;
        for (handled, notification) in batch.iter().enumerate() {
            let ctx = contexts.for_notification(listener, notification);
            stuck |= self.stuck.contains(&ctx.key);
            match self.answer(ctx, notification) {
                Ok(one) => {
                    if let Ok(all) = &mut answer {
                        all.requeue_after = one.requeue_after.or(all.requeue_after);
                    }
                }
                Err(error) => {
                    let handled = (error.fault().is_none()).then_some(handled);
                    answer = Err(BatchError { handled, error });
                    break;
                }
            }
        }
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

    fn retirements(&self) -> u64 {
        self.retired
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
        if self.trapping.contains(&ctx.key) {
            return Err(CallError::Fault {
                kind: crate::plugin::FaultKind::Trap,
                detail: format!("trapped on {}", ctx.key),
            });
        }
        if self.failing.contains(&ctx.key) {
            return Err(CallError::Handler(format!("refused {}", ctx.key)));
        }
        if self.retiring.contains(&ctx.key) {
            self.retired += 1;
            self.live = false;
        }
        Ok(Handled {
            requeue_after: self.requeue.get(&ctx.key).copied(),
        })
    }
}

pub(super) fn dispatch_with(retry: RetryPolicy, clock: &ManualClock) -> Dispatch {
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
pub(super) fn listener(dispatch: &Dispatch, delivery: Delivery) -> Arc<Listener> {
    let listener = joining(dispatch, delivery);
    listener.push_synced();
    listener
}

/// A listener of an informer of `cluster` still listing.
pub(super) fn joining_in(dispatch: &Dispatch, delivery: Delivery, cluster: &str) -> Arc<Listener> {
    let cluster = crate::cluster::ClusterName::parse("cluster", cluster).unwrap();
    let listener = Arc::new(
        Listener::new(
            "test".into(),
            pods(delivery),
            "pods".into(),
            dispatch.signal.clone(),
        )
        .in_cluster(Some(cluster)),
    );
    dispatch.attach(listener.clone());
    listener
}

/// A subscription to Pods, delivered so.
fn pods(delivery: Delivery) -> Subscription {
    Subscription {
        kind: Gvk::new("", "v1", "Pod"),
        namespace: None,
        label_selector: None,
        field_selector: None,
        resync_period: None,
        delivery,
    }
}

/// A listener of an informer still listing: its initial list is to come.
pub(super) fn joining(dispatch: &Dispatch, delivery: Delivery) -> Arc<Listener> {
    let listener = Arc::new(Listener::new(
        "test".into(),
        pods(delivery),
        "pods".into(),
        dispatch.signal.clone(),
    ));
    dispatch.attach(listener.clone());
    listener
}

/// Steps until nothing is ready; returns the calls made and when the
/// next waiting entry is ready.
pub(super) fn settle(
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

pub(super) fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

pub(super) fn count(counter: &std::sync::atomic::AtomicU64) -> u64 {
    counter.load(Ordering::Relaxed)
}

/// Runs `dispatch` on a thread of its own (with the real clock) and
/// returns its handle and the calls it reports.
pub(super) fn spawn(
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
pub(super) fn run_on(
    runtime: &tokio::runtime::Runtime,
    dispatch: &Arc<Dispatch>,
    mut script: Script,
) -> tokio::task::JoinHandle<()> {
    let dispatch = dispatch.clone();
    let busy = dispatch.demand.busy();
    runtime.spawn(async move { dispatch.run(&mut script, busy).await })
}

/// A dispatch with the real clock, alone in its pool.
pub(super) fn threaded(base_delay: Duration) -> Arc<Dispatch> {
    threaded_on(base_delay, Arc::new(Demand::new(1)))
}

/// A dispatch counted in `demand` (with the real clock).
pub(super) fn threaded_on(base_delay: Duration, demand: Arc<Demand>) -> Arc<Dispatch> {
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
