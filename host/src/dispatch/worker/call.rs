//! One handler call: what a worker calls, the event context it passes, its
//! timing and its span.

use crate::cluster::ClusterName;
use crate::dispatch::feed::FeedEvent;
use crate::dispatch::listener::Listener;
use crate::informer::Notification;
use crate::plugin::{
    BatchError, CallError, Change, EventContext, Frame, Handled, HandlerCall, PluginInstance,
};
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tracing::Instrument;

/// The calls a worker makes: the plugin's instance, or a stand-in in tests.
pub(super) trait Calls {
    /// Calls the handler of `notification`, from `cluster` (`None`: the
    /// default one).
    fn call(
        &mut self,
        cluster: Option<&ClusterName>,
        ctx: &EventContext,
        notification: &Notification,
    ) -> impl Future<Output = Result<Handled, CallError>> + Send;

    /// The most notifications one call may carry (1: one per call).
    fn max_batch(&self) -> usize;

    /// Calls the handler once for all of `batch`, notifications of
    /// `listener` in order, each with its context from `contexts`.
    fn call_batch(
        &mut self,
        listener: &Arc<Listener>,
        contexts: &mut Contexts,
        batch: &[Notification],
    ) -> impl Future<Output = Result<Handled, BatchError>> + Send;

    /// Drops what the calls hold while the plugin is idle; true if there
    /// was something to drop.
    fn reclaim(&mut self) -> bool;

    /// How many times the instance was replaced between calls for
    /// outgrowing its memory, so far (none for calls that never are).
    fn retirements(&self) -> u64 {
        0
    }
}

impl Calls for PluginInstance {
    fn call(
        &mut self,
        cluster: Option<&ClusterName>,
        ctx: &EventContext,
        notification: &Notification,
    ) -> impl Future<Output = Result<Handled, CallError>> + Send {
        let call = match notification {
            Notification::Add { object, .. } => HandlerCall::Add(object.json()),
            Notification::Update { old, new, .. } => HandlerCall::Update(old.json(), new.json()),
            Notification::Delete { object, .. } => HandlerCall::Delete(object.json()),
        };
        self.deliver(cluster, ctx, call)
    }

    fn max_batch(&self) -> usize {
        usize::try_from(self.plugin().manifest().max_batch).unwrap_or(usize::MAX)
    }

    fn call_batch(
        &mut self,
        listener: &Arc<Listener>,
        contexts: &mut Contexts,
        batch: &[Notification],
    ) -> impl Future<Output = Result<Handled, BatchError>> + Send {
        let write = move |frame: &mut Frame, old_state: bool| {
            for notification in batch {
                let ctx = contexts.for_notification(listener, notification);
                let change = match notification {
                    Notification::Add { object, .. } => Change::Added(object.json()),
                    Notification::Update { old, new, .. } => Change::Updated {
                        old: old.json(),
                        new: new.json(),
                    },
                    Notification::Delete { object, .. } => Change::Deleted(object.json()),
                };
                frame.push(ctx, change, old_state);
            }
        };
        self.deliver_batch(listener.cluster(), batch.len(), write)
    }

    fn reclaim(&mut self) -> bool {
        PluginInstance::reclaim(self)
    }

    fn retirements(&self) -> u64 {
        PluginInstance::retirements(self)
    }
}

/// One reusable event context per listener: its kind and resource are set
/// once, and each notification rewrites the key and resourceVersion into
/// the buffers they already have, so a call allocates nothing for them.
#[derive(Default)]
pub(super) struct Contexts(Vec<(Arc<Listener>, EventContext)>);

impl Contexts {
    /// The context of `notification`, from `listener`.
    pub(super) fn for_notification(
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

/// Calls the handler, timing the call into the listener's stats.
pub(super) async fn timed_call(
    calls: &mut impl Calls,
    listener: &Listener,
    notification: &Notification,
    ctx: &EventContext,
) -> (Result<Handled, CallError>, Duration) {
    let started = Instant::now();
    let retired = calls.retirements();
    let result = calls.call(listener.cluster(), ctx, notification).await;
    let took = started.elapsed();
    record_call(listener, took, result.as_ref().err());
    record_retirements(listener, calls.retirements() - retired);
    (result, took)
}

/// Calls the handler with a batch, timing the call into the listener's
/// stats.
pub(super) async fn timed_batch(
    calls: &mut impl Calls,
    listener: &Arc<Listener>,
    contexts: &mut Contexts,
    batch: &[Notification],
) -> (Result<Handled, BatchError>, Duration) {
    let started = Instant::now();
    let retired = calls.retirements();
    let result = calls.call_batch(listener, contexts, batch).await;
    let took = started.elapsed();
    record_call(listener, took, result.as_ref().err().map(|e| &e.error));
    record_retirements(listener, calls.retirements() - retired);
    (result, took)
}

/// Counts a call that took `took` and failed with `error`, if it did, in
/// the listener's stats.
fn record_call(listener: &Listener, took: Duration, error: Option<&CallError>) {
    listener.stats.calls.fetch_add(1, Ordering::Relaxed);
    listener.stats.duration.observe(took.as_secs_f64());
    listener
        .stats
        .call_micros
        .fetch_add(FeedEvent::micros(took), Ordering::Relaxed);
    if let Some(err) = error {
        listener.stats.failed.fetch_add(1, Ordering::Relaxed);
        if let CallError::Fault { kind, .. } = err {
            listener.stats.record_fault(*kind);
        }
    }
}

/// Counts the instance replacements a call ended in (0 or 1), in the
/// listener's stats.
fn record_retirements(listener: &Listener, retired: u64) {
    if retired > 0 {
        listener
            .stats
            .retirements
            .fetch_add(retired, Ordering::Relaxed);
    }
}

/// With `herald::call=debug` in the log filter, each delivery is a span
/// carrying the plugin, resource, key and event type, so the plugin's
/// log lines show what they were about.
pub(super) fn call_span(
    plugin: &str,
    listener: &Listener,
    ctx: &EventContext,
    event: &str,
) -> tracing::Span {
    tracing::debug_span!(
        target: "herald::call",
        "call",
        plugin,
        resource = listener.resource(),
        key = %ctx.key,
        event,
    )
}

/// Runs `future` inside `span`, or as it is when the span is disabled (the
/// common case: entering and leaving even a disabled span at every poll
/// costs a measurable share of a no-op delivery).
pub(super) async fn in_span<F: Future>(span: tracing::Span, future: F) -> F::Output {
    if span.is_disabled() {
        future.await
    } else {
        future.instrument(span).await
    }
}
