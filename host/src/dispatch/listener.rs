//! A listener: one plugin subscription's buffer and counters, fed by its
//! informer and drained by the plugin's worker.

use super::queue::{CoalescedQueue, Item, Queue};
use super::signal::Signal;
use crate::cluster::ClusterName;
use crate::informer::Listen;
use crate::informer::Notification;
use crate::plugin::{Delivery, FaultKind, GroupVersionKind, Subscription};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Counters of one listener, read by metrics and status.
#[derive(Debug)]
pub struct ListenerStats {
    /// Notifications handed to the listener.
    pub received: AtomicU64,
    /// Notifications the plugin handled successfully.
    pub delivered: AtomicU64,
    /// Failed calls (each attempt).
    pub failed: AtomicU64,
    /// Retries after a failure: made in place (every-event) or scheduled
    /// (coalesced).
    pub retried: AtomicU64,
    /// Notifications given up on after the last retry.
    pub skipped: AtomicU64,
    /// Backoff after failed calls, in milliseconds: waited in place before a
    /// retry (every-event), or set for a key to wait (coalesced).
    pub backoff_millis: AtomicU64,
    /// Requeue-after requests honoured: the notification was scheduled again
    /// (coalesced delivery).
    pub requeued: AtomicU64,
    /// Requeue-after requests ignored because the subscription's delivery is
    /// every-event, whose order a requeue would break.
    pub requeues_ignored: AtomicU64,
    /// Faults, by kind (see [`record_fault`](Self::record_fault)).
    faults: [AtomicU64; FaultKind::ALL.len()],
    /// Times the plugin's instance was replaced after one of this
    /// listener's calls because its memory had grown towards its cap (a
    /// guest leaking with every call; no fault, nothing retried).
    pub retirements: AtomicU64,
    /// Handler calls made, whatever their outcome (a batch is one call).
    pub calls: AtomicU64,
    /// Duration of handler calls, in seconds.
    pub duration: prometheus_client::metrics::histogram::Histogram,
    /// Time spent in handler calls, in microseconds (the histogram's sum,
    /// readable outside a scrape).
    pub call_micros: AtomicU64,
}

impl Default for ListenerStats {
    fn default() -> Self {
        ListenerStats {
            received: AtomicU64::new(0),
            delivered: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            retried: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
            backoff_millis: AtomicU64::new(0),
            requeued: AtomicU64::new(0),
            requeues_ignored: AtomicU64::new(0),
            faults: Default::default(),
            retirements: AtomicU64::new(0),
            calls: AtomicU64::new(0),
            duration: crate::telemetry::handler_histogram(),
            call_micros: AtomicU64::new(0),
        }
    }
}

impl ListenerStats {
    /// Counts a fault.
    pub fn record_fault(&self, kind: FaultKind) {
        self.faults[kind as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Faults of `kind` so far.
    pub fn faults_of(&self, kind: FaultKind) -> u64 {
        self.faults[kind as usize].load(Ordering::Relaxed)
    }
}

/// One plugin subscription's end of an informer.
pub struct Listener {
    plugin: Arc<str>,
    subscription: Subscription,
    resource: Arc<str>,
    kind: GroupVersionKind,
    /// The cluster its informer watches; `None` for the default one.
    cluster: Option<ClusterName>,
    queue: Mutex<Queue>,
    signal: Arc<Signal>,
    /// The informer's initial list (or a late join's snapshot) is all in
    /// the buffer: the informer's cache is complete.
    initial_list_received: AtomicBool,
    synced: AtomicBool,
    /// Why the plugin could not get through its initial list, once it
    /// skipped a notification of it.
    degraded: Mutex<Option<String>>,
    /// Set once an ignored requeue request was logged, so a plugin asking on
    /// every call logs one warning, not one per call.
    requeue_warned: AtomicBool,
    /// The listener's counters.
    pub stats: ListenerStats,
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener")
            .field("plugin", &self.plugin)
            .field("kind", &self.subscription.kind)
            .field("cluster", &self.cluster)
            .field("depth", &self.depth())
            .field("synced", &self.has_synced())
            .finish()
    }
}

impl Listener {
    /// A listener for `plugin`'s `subscription`, resolved to the plural
    /// `resource`, waking `signal` on every push.
    pub fn new(
        plugin: Arc<str>,
        subscription: Subscription,
        resource: Arc<str>,
        signal: Arc<Signal>,
    ) -> Self {
        let queue = match subscription.delivery {
            Delivery::EveryEvent => Queue::every_event(),
            Delivery::Coalesced => Queue::coalesced(),
        };
        let kind = GroupVersionKind {
            group: subscription.kind.group.clone(),
            version: subscription.kind.version.clone(),
            kind: subscription.kind.kind.clone(),
        };
        Listener {
            plugin,
            subscription,
            resource,
            kind,
            cluster: None,
            queue: Mutex::new(queue),
            signal,
            initial_list_received: AtomicBool::new(false),
            synced: AtomicBool::new(false),
            degraded: Mutex::new(None),
            requeue_warned: AtomicBool::new(false),
            stats: ListenerStats::default(),
        }
    }

    /// The same listener on an informer of `cluster` (`None`: the default).
    pub fn in_cluster(self, cluster: Option<ClusterName>) -> Self {
        Listener { cluster, ..self }
    }

    /// The cluster its informer watches; `None` for the default one.
    pub fn cluster(&self) -> Option<&ClusterName> {
        self.cluster.as_ref()
    }

    /// Its resource as a wait for its cache names it: `configmaps`, or
    /// `configmaps in cluster west`.
    pub fn waiting_name(&self) -> String {
        match &self.cluster {
            Some(cluster) => format!("{} in cluster {cluster}", self.resource),
            None => self.resource.to_string(),
        }
    }

    /// The plugin's name.
    pub fn plugin(&self) -> &str {
        &self.plugin
    }

    /// The plugin's name, shared.
    pub fn plugin_name(&self) -> &Arc<str> {
        &self.plugin
    }

    /// The plural resource name, shared.
    pub fn resource_name(&self) -> &Arc<str> {
        &self.resource
    }

    /// The subscription.
    pub fn subscription(&self) -> &Subscription {
        &self.subscription
    }

    /// The plural resource name.
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The kind, as passed to the plugin.
    pub fn kind(&self) -> &GroupVersionKind {
        &self.kind
    }

    /// Whether this listener wants resync notifications.
    pub fn wants_resync(&self) -> bool {
        self.subscription.resync_period.is_some()
    }

    /// Buffers a notification and wakes the worker. Never blocks on the plugin.
    pub fn push(&self, notification: Notification) {
        self.lock().push(notification);
        self.stats.received.fetch_add(1, Ordering::Relaxed);
        self.signal.notify();
    }

    /// Buffers a batch (a late join's snapshot) under one lock, then wakes the
    /// worker once: the informer's lock is held for the whole batch, so a
    /// lock round-trip and a wake-up per notification would hold up every
    /// other listener for that much longer.
    pub fn push_batch(&self, notifications: impl IntoIterator<Item = Notification>) {
        let mut count = 0u64;
        {
            let mut queue = self.lock();
            for notification in notifications {
                queue.push(notification);
                count += 1;
            }
        }
        if count > 0 {
            self.stats.received.fetch_add(count, Ordering::Relaxed);
            self.signal.notify();
        }
    }

    /// Buffers the end-of-initial-list marker: the informer's cache now
    /// holds its whole initial list.
    pub fn push_synced(&self) {
        self.lock().push_synced();
        self.initial_list_received.store(true, Ordering::Release);
        self.signal.notify();
    }

    /// True once the informer's whole initial list (or a late join's
    /// snapshot) is in the buffer, so its cache is complete (client-go's
    /// informer `HasSynced`); the plugin may not have handled it yet
    /// ([`has_synced`](Self::has_synced)).
    pub fn initial_list_received(&self) -> bool {
        self.initial_list_received.load(Ordering::Acquire)
    }

    /// Takes the next entry ready now, if any.
    pub fn pop(&self) -> Option<Item> {
        self.pop_ready(Instant::now())
    }

    /// Takes the next entry ready at `now`, if any (see [`Queue::pop`]).
    pub fn pop_ready(&self, now: Instant) -> Option<Item> {
        self.lock().pop(now)
    }

    /// When the first entry waiting for its instant (failure backoff or
    /// requeue-after, coalesced delivery only) becomes ready.
    pub fn next_ready_at(&self) -> Option<Instant> {
        self.lock().next_ready_at()
    }

    /// Runs `f` on the coalescing queue, under the listener's lock; `None`
    /// for an every-event listener.
    pub(crate) fn coalesced<R>(&self, f: impl FnOnce(&mut CoalescedQueue) -> R) -> Option<R> {
        self.lock().as_coalesced().map(f)
    }

    /// Notifications held: ready, and (coalesced delivery) waiting for their
    /// instant.
    pub fn depth(&self) -> usize {
        self.lock().depth()
    }

    /// Notifications waiting for their instant: a failed key's backoff or a
    /// requeue-after (coalesced delivery only).
    pub fn delayed(&self) -> usize {
        self.lock().delayed()
    }

    /// True the first time it is called: whether to log that a requeue
    /// request was ignored.
    pub(crate) fn first_ignored_requeue(&self) -> bool {
        !self.requeue_warned.swap(true, Ordering::Relaxed)
    }

    /// True once the listener's initial list has been delivered and handled
    /// (client-go's registration `HasSynced`).
    pub fn has_synced(&self) -> bool {
        self.synced.load(Ordering::Acquire)
    }

    pub(crate) fn mark_synced(&self) {
        self.synced.store(true, Ordering::Release);
    }

    /// Why the plugin is degraded on this listener: it skipped a
    /// notification of its initial list (every attempt failed or hit its
    /// deadline). Readiness does not wait for such a listener: a plugin that
    /// cannot get through its initial list must not hold the daemon back.
    pub fn degraded(&self) -> Option<String> {
        self.degraded
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// True once readiness no longer waits on this listener: its initial
    /// list is handled, or the plugin is [degraded](Self::degraded) on it.
    pub fn initial_list_settled(&self) -> bool {
        self.has_synced() || self.degraded().is_some()
    }

    pub(crate) fn mark_degraded(&self, reason: String) {
        let mut degraded = self.degraded.lock().unwrap_or_else(|e| e.into_inner());
        degraded.get_or_insert(reason);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Listen for Listener {
    fn push(&self, notification: Notification) {
        Listener::push(self, notification);
    }

    fn push_batch(&self, notifications: Vec<Notification>) {
        Listener::push_batch(self, notifications);
    }

    fn push_synced(&self) {
        Listener::push_synced(self);
    }

    fn resync_period(&self) -> Option<std::time::Duration> {
        self.subscription.resync_period
    }
}
