//! The cache-sync gate: a plugin's first delivery waits until every informer
//! it subscribes to has its whole initial list in its cache, as
//! controller-runtime starts a controller's workers only after
//! `WaitForCacheSync`. Without it a plugin subscribed to Pods and Namespaces
//! could handle a Pod while the Namespace cache is still filling, find no
//! namespace in `cache.get`, and act on a wrong picture of the cluster.
//!
//! The gate belongs to a worker, so it holds at every point a plugin starts
//! delivering: at start, after a hot swap (the new version's worker), on a
//! late join, and when a shard moves to this replica. It opens once and
//! stays open: a relist later on (a dropped watch) does not close it, as
//! client-go's `HasSynced` stays true.

use super::listener::Listener;
use serde::Serialize;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// Holds deliveries until every listener's informer has its initial list in.
#[derive(Debug)]
pub(crate) struct CacheGate {
    /// When the worker began waiting.
    since: Instant,
    /// How long it waited, once open.
    opened_after: OnceLock<Duration>,
}

impl CacheGate {
    /// A closed gate, waiting from `since`.
    pub(crate) fn new(since: Instant) -> Self {
        CacheGate {
            since,
            opened_after: OnceLock::new(),
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
                    .map(|l| l.resource().to_owned())
                    .collect(),
                waited_ms: millis(now.saturating_duration_since(self.since)),
                synced: false,
            },
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
