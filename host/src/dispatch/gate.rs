//! The cache-sync gate: a plugin's first delivery waits until every informer
//! it subscribes to has its whole initial list in its cache, as
//! controller-runtime starts a controller's workers only after
//! `WaitForCacheSync`. Without it a plugin subscribed to Pods and Namespaces
//! could handle a Pod while the Namespace cache is still filling, find no
//! namespace in `cache.get`, and act on a wrong picture of the cluster.
//!
//! A plugin running on several clusters waits per cluster: the listeners of
//! a cluster whose informers all have their initial lists deliver, while
//! those of a cluster still listing (or unreachable) wait, so one slow
//! cluster never holds back what the plugin sees of the others. A look-up
//! in a cluster still listing finds what is there so far.
//!
//! The gate belongs to a worker, so it holds at every point a plugin starts
//! delivering: at start, after a hot swap (the new version's worker), on a
//! late join, and when a shard moves to this replica. It opens once and
//! stays open: a relist later on (a dropped watch) does not close it, as
//! client-go's `HasSynced` stays true.

use super::listener::Listener;
use crate::cluster::ClusterName;
use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// Holds deliveries until every listener's informer has its initial list in.
#[derive(Debug)]
pub(crate) struct CacheGate {
    /// When the worker began waiting.
    since: Instant,
    /// How long it waited, once open.
    opened_after: OnceLock<Duration>,
    /// A listener whose initial list is to come joined after the gate
    /// opened: until it is in, listeners deliver cluster by cluster.
    late: AtomicBool,
}

impl CacheGate {
    /// A closed gate, waiting from `since`.
    pub(crate) fn new(since: Instant) -> Self {
        CacheGate {
            since,
            opened_after: OnceLock::new(),
            late: AtomicBool::new(false),
        }
    }

    /// A listener whose initial list is to come has joined.
    pub(crate) fn joined_late(&self) {
        self.late.store(true, Ordering::Release);
    }

    /// Which listeners may deliver at `now`: all once the gate is open and
    /// no listener that joined since waits for its initial list; otherwise
    /// those of the clusters whose listeners all have theirs (logging the
    /// gate's opening); `None` when no cluster's have.
    pub(crate) fn admitted(
        &self,
        plugin: &str,
        listeners: &[Arc<Listener>],
        now: Instant,
    ) -> Option<Admitted> {
        match self.open(listeners, now) {
            Opened::Already if !self.late.load(Ordering::Acquire) => Some(Admitted::All),
            Opened::Already => {
                let admitted = Admitted::of(listeners);
                if admitted == Some(Admitted::All) {
                    self.late.store(false, Ordering::Release);
                }
                admitted
            }
            Opened::No => Admitted::of(listeners),
            Opened::Now(waited) => {
                tracing::debug!(
                    plugin,
                    waited_ms = u64::try_from(waited.as_millis()).unwrap_or(u64::MAX),
                    "caches synced; deliveries start"
                );
                Some(Admitted::All)
            }
        }
    }

    /// Whether deliveries may start at `now`: true from the moment every
    /// listener's initial list is in, and from then on. A worker with no
    /// listener has nothing to wait for, but stays closed until it has one,
    /// so a listener attached later is waited for too. Returns the wait
    /// when this call opened it.
    pub(crate) fn open(&self, listeners: &[Arc<Listener>], now: Instant) -> Opened {
        if self.opened_after.get().is_some() {
            return Opened::Already;
        }
        if listeners.is_empty() || !listeners.iter().all(|l| l.initial_list_received()) {
            return Opened::No;
        }
        let waited = now.saturating_duration_since(self.since);
        match self.opened_after.set(waited) {
            Ok(()) => Opened::Now(waited),
            Err(_) => Opened::Already,
        }
    }

    /// What the gate is waiting for, for status.
    pub(crate) fn status(&self, listeners: &[Arc<Listener>], now: Instant) -> CacheSync {
        match self.opened_after.get() {
            Some(waited) => CacheSync {
                waiting_for: Vec::new(),
                waited_ms: millis(*waited),
                synced: true,
            },
            None => CacheSync {
                waiting_for: listeners
                    .iter()
                    .filter(|l| !l.initial_list_received())
                    .map(|l| l.waiting_name())
                    .collect(),
                waited_ms: millis(now.saturating_duration_since(self.since)),
                synced: false,
            },
        }
    }
}

/// Which listeners may deliver while the gate is not open for all: those
/// of the clusters whose listeners all have their initial lists in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Admitted {
    /// Every listener (the gate is open).
    All,
    /// The listeners of these clusters (`None`: the default one).
    Clusters(Vec<Option<ClusterName>>),
}

impl Admitted {
    /// The listeners of the clusters whose listeners all have their
    /// initial lists in (all of them: [`Admitted::All`]); `None` when there
    /// is none.
    pub(crate) fn of(listeners: &[Arc<Listener>]) -> Option<Admitted> {
        let mut open: Vec<Option<ClusterName>> = Vec::new();
        let mut closed: Vec<Option<ClusterName>> = Vec::new();
        for listener in listeners {
            let cluster = listener.cluster().cloned();
            if !listener.initial_list_received() {
                open.retain(|c| c != &cluster);
                if !closed.contains(&cluster) {
                    closed.push(cluster);
                }
            } else if !closed.contains(&cluster) && !open.contains(&cluster) {
                open.push(cluster);
            }
        }
        if closed.is_empty() {
            return (!open.is_empty()).then_some(Admitted::All);
        }
        (!open.is_empty()).then_some(Admitted::Clusters(open))
    }

    /// Whether `listener` may deliver.
    pub(crate) fn admits(&self, listener: &Listener) -> bool {
        match self {
            Admitted::All => true,
            Admitted::Clusters(open) => open.iter().any(|c| c.as_ref() == listener.cluster()),
        }
    }
}

/// What [`CacheGate::open`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Opened {
    /// Some informer's initial list is not in yet.
    No,
    /// This call opened it, after waiting this long.
    Now(Duration),
    /// It was open already.
    Already,
}

/// Whether a plugin's caches are complete, as `/plugins` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CacheSync {
    /// Every informer the plugin subscribes to has its initial list in: its
    /// deliveries have started.
    pub synced: bool,
    /// The resources whose initial list is not in yet (plural names); empty
    /// once synced.
    pub waiting_for: Vec<String>,
    /// How long the plugin has waited (while not synced), or waited (once
    /// synced), in milliseconds.
    pub waited_ms: u64,
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
