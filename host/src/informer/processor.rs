//! The shared processor of one informer: applies each change to the store
//! first, then distributes the notification to every listener, and joins late
//! listeners with a consistent snapshot.
//!
//! # Guarantees
//!
//! - **Cache first.** A notification is pushed only after the store holds
//!   its state, so a handler that reads the cache sees that state or newer.
//! - **Order.** Changes are applied and distributed under one lock, so every
//!   listener receives them in the same order.
//! - **Late join.** A listener added after the first list receives the store's
//!   snapshot as `initial` adds, then every later change: the snapshot and the
//!   registration happen under the same lock as distribution, so nothing is
//!   missed or delivered twice.
//! - **Relist.** A replacing list is reconciled against the store: new keys are
//!   adds, changed ones updates, unchanged ones resyncs (only for listeners
//!   that asked for resync), and keys missing from the list are deletes with
//!   `final_state_unknown` carrying the last known state.

use super::listen::Listen;
use super::notification::Notification;
use crate::store::{CachedObject, Store};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A change from the API server, ready to apply.
#[derive(Debug, Clone)]
pub enum Change {
    /// Created or modified (`ADDED` / `MODIFIED`).
    Upsert(Arc<CachedObject>),
    /// Deleted (`DELETED`), with the object's final state.
    Delete(Arc<CachedObject>),
    /// A complete list: replaces the store's contents.
    Replace(Vec<Arc<CachedObject>>),
}

/// Counters of one informer, for metrics.
#[derive(Debug, Default)]
pub struct ProcessorStats {
    /// Adds applied.
    pub adds: AtomicU64,
    /// Updates applied (not counting resyncs).
    pub updates: AtomicU64,
    /// Deletes applied (including tombstones).
    pub deletes: AtomicU64,
    /// Deletes inferred from relists.
    pub tombstones: AtomicU64,
    /// Complete lists applied.
    pub relists: AtomicU64,
}

struct Registered {
    listener: Arc<dyn Listen>,
    next_resync: Option<Instant>,
}

/// Store plus listeners of one informer.
pub struct Processor {
    store: Arc<Store>,
    listeners: Mutex<Vec<Registered>>,
    synced: AtomicBool,
    /// The informer's counters.
    pub stats: ProcessorStats,
}

impl std::fmt::Debug for Processor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Processor")
            .field("objects", &self.store.len())
            .field("synced", &self.has_synced())
            .finish()
    }
}

impl Processor {
    /// A processor over `store`.
    pub fn new(store: Arc<Store>) -> Self {
        Processor {
            store,
            listeners: Mutex::new(Vec::new()),
            synced: AtomicBool::new(false),
            stats: ProcessorStats::default(),
        }
    }

    /// The store.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// True once the first complete list has been applied.
    pub fn has_synced(&self) -> bool {
        self.synced.load(Ordering::Acquire)
    }

    /// Number of listeners.
    pub fn listener_count(&self) -> usize {
        self.lock().len()
    }

    /// Registers a listener. After the first list, it first receives the
    /// snapshot as initial adds and a synced marker; before it, it gets the
    /// first list like everyone else.
    pub fn add_listener(&self, listener: Arc<dyn Listen>) {
        let mut listeners = self.lock();
        self.join(&mut listeners, listener);
    }

    /// Unregisters a listener; returns whether it was registered.
    pub fn remove_listener<L: Listen + ?Sized>(&self, listener: &Arc<L>) -> bool {
        let mut listeners = self.lock();
        let before = listeners.len();
        listeners.retain(|r| !same(&r.listener, listener));
        before != listeners.len()
    }

    /// Atomically replaces `old` by `new`: `new` receives the snapshot and
    /// every later change, `old` nothing after this point.
    pub fn swap_listener<L: Listen + ?Sized>(&self, old: &Arc<L>, new: Arc<dyn Listen>) {
        let mut listeners = self.lock();
        listeners.retain(|r| !same(&r.listener, old));
        self.join(&mut listeners, new);
    }

    /// Registers `listener` under the lock distribution takes, after handing
    /// it the snapshot if the first list is in: nothing missed, nothing twice.
    fn join(&self, listeners: &mut Vec<Registered>, listener: Arc<dyn Listen>) {
        if self.has_synced() {
            listener.push_batch(snapshot_adds(&self.store).collect());
            listener.push_synced();
        }
        let next_resync = listener
            .resync_period()
            .map(|period| Instant::now() + period);
        listeners.push(Registered {
            listener,
            next_resync,
        });
    }

    /// Applies one change to the store, then distributes it.
    pub fn apply(&self, change: Change) {
        let listeners = self.lock();
        match change {
            Change::Upsert(object) => {
                let notification = match self.store.upsert(object.clone()) {
                    Some(old) => {
                        self.stats.updates.fetch_add(1, Ordering::Relaxed);
                        Notification::Update {
                            old,
                            new: object,
                            resync: false,
                        }
                    }
                    None => {
                        self.stats.adds.fetch_add(1, Ordering::Relaxed);
                        Notification::Add {
                            object,
                            initial: false,
                        }
                    }
                };
                distribute(&listeners, &notification);
            }
            Change::Delete(object) => {
                self.store.remove(&object.key());
                self.stats.deletes.fetch_add(1, Ordering::Relaxed);
                distribute(
                    &listeners,
                    &Notification::Delete {
                        object,
                        final_state_unknown: false,
                    },
                );
            }
            Change::Replace(objects) => self.replace(&listeners, objects),
        }
    }

    fn replace(&self, listeners: &[Registered], objects: Vec<Arc<CachedObject>>) {
        let first = !self.has_synced();
        let listed: HashSet<String> = objects.iter().map(|o| o.key()).collect();
        for key in self.store.keys() {
            if !listed.contains(&key)
                && let Some(last) = self.store.remove(&key)
            {
                self.stats.deletes.fetch_add(1, Ordering::Relaxed);
                self.stats.tombstones.fetch_add(1, Ordering::Relaxed);
                distribute(
                    listeners,
                    &Notification::Delete {
                        object: last,
                        final_state_unknown: true,
                    },
                );
            }
        }
        for object in objects {
            match self.store.upsert(object.clone()) {
                None => {
                    self.stats.adds.fetch_add(1, Ordering::Relaxed);
                    distribute(
                        listeners,
                        &Notification::Add {
                            object,
                            initial: first,
                        },
                    );
                }
                Some(old) if old.resource_version() == object.resource_version() => {
                    let resync = Notification::Update {
                        old,
                        new: object,
                        resync: true,
                    };
                    for registered in listeners
                        .iter()
                        .filter(|r| r.listener.resync_period().is_some())
                    {
                        registered.listener.push(resync.clone());
                    }
                }
                Some(old) => {
                    self.stats.updates.fetch_add(1, Ordering::Relaxed);
                    distribute(
                        listeners,
                        &Notification::Update {
                            old,
                            new: object,
                            resync: false,
                        },
                    );
                }
            }
        }
        // Counted once the list is applied, so that a reader who sees the
        // count also sees the listed objects in the store.
        self.stats.relists.fetch_add(1, Ordering::Release);
        if first {
            self.synced.store(true, Ordering::Release);
            for registered in listeners {
                registered.listener.push_synced();
            }
        }
    }

    /// Delivers due resyncs: every cached object as `update(cached, cached)` to
    /// each listener whose period has elapsed. Returns when the next is due.
    pub fn resync_due(&self, now: Instant) -> Option<Instant> {
        let mut listeners = self.lock();
        if !self.has_synced() {
            return listeners.iter().filter_map(|r| r.next_resync).min();
        }
        let mut snapshot: Option<Vec<Arc<CachedObject>>> = None;
        for registered in listeners.iter_mut() {
            let (Some(due), Some(period)) =
                (registered.next_resync, registered.listener.resync_period())
            else {
                continue;
            };
            if due > now {
                continue;
            }
            let objects = snapshot.get_or_insert_with(|| self.store.snapshot());
            for object in objects.iter() {
                registered.listener.push(Notification::Update {
                    old: object.clone(),
                    new: object.clone(),
                    resync: true,
                });
            }
            registered.next_resync = Some(next_after(due, period, now));
        }
        listeners.iter().filter_map(|r| r.next_resync).min()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Registered>> {
        self.listeners.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Whether `a` and `b` are the same listener (their data pointers; a fat
/// pointer's vtable may differ between codegen units).
fn same<L: Listen + ?Sized>(a: &Arc<dyn Listen>, b: &Arc<L>) -> bool {
    std::ptr::addr_eq(Arc::as_ptr(a), Arc::as_ptr(b))
}

/// The store's snapshot as the initial adds of a late join.
fn snapshot_adds(store: &Store) -> impl Iterator<Item = Notification> {
    store
        .snapshot()
        .into_iter()
        .map(|object| Notification::Add {
            object,
            initial: true,
        })
}

fn distribute(listeners: &[Registered], notification: &Notification) {
    for registered in listeners {
        registered.listener.push(notification.clone());
    }
}

/// The first multiple of `period` after `due` that is later than `now`.
fn next_after(due: Instant, period: Duration, now: Instant) -> Instant {
    let mut next = due + period;
    if next <= now {
        let behind = now.duration_since(next).as_nanos() / period.as_nanos().max(1);
        next += period * (behind as u32 + 1);
    }
    next
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dispatch::{Item, Listener, Signal};
    use crate::gvk::Gvk;
    use crate::plugin::{Delivery, Subscription};
    use crate::store::Transform;

    fn obj(name: &str, rv: u32) -> Arc<CachedObject> {
        let json = format!(
            r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}","namespace":"n","resourceVersion":"{rv}"}}}}"#
        );
        Arc::new(CachedObject::from_json(&json, "v1", "Pod", Transform::default()).unwrap())
    }

    fn listener(resync: Option<Duration>) -> Arc<Listener> {
        let subscription = Subscription {
            kind: Gvk::new("", "v1", "Pod"),
            namespace: None,
            label_selector: None,
            field_selector: None,
            resync_period: resync,
            delivery: Delivery::EveryEvent,
        };
        Arc::new(Listener::new(
            "test".into(),
            subscription,
            "pods".into(),
            Arc::new(Signal::default()),
        ))
    }

    /// Everything buffered in `listener`, described as `kind name@rv [flags]`.
    fn drain(listener: &Listener) -> Vec<String> {
        let mut seen = Vec::new();
        while let Some(item) = listener.pop() {
            seen.push(match item {
                Item::Synced => "synced".to_owned(),
                Item::Notify(Notification::Add { object, initial }) => format!(
                    "add {}@{}{}",
                    object.name(),
                    object.resource_version(),
                    if initial { " initial" } else { "" }
                ),
                Item::Notify(Notification::Update { old, new, resync }) => {
                    format!(
                        "update {}@{}->{}{}",
                        new.name(),
                        old.resource_version(),
                        new.resource_version(),
                        if resync { " resync" } else { "" }
                    )
                }
                Item::Notify(Notification::Delete {
                    object,
                    final_state_unknown,
                }) => {
                    format!(
                        "delete {}@{}{}",
                        object.name(),
                        object.resource_version(),
                        if final_state_unknown { " unknown" } else { "" }
                    )
                }
            });
        }
        seen
    }

    #[test]
    fn the_first_list_is_an_initial_list_followed_by_the_synced_marker() {
        let processor = Processor::new(Arc::new(Store::new()));
        let early = listener(None);
        processor.add_listener(early.clone());
        assert!(!processor.has_synced());
        processor.apply(Change::Replace(vec![obj("a", 1), obj("b", 2)]));
        assert!(processor.has_synced());
        let mut seen = drain(&early);
        seen[..2].sort();
        assert_eq!(seen, ["add a@1 initial", "add b@2 initial", "synced"]);
    }

    #[test]
    fn changes_reach_the_store_before_any_listener() {
        let processor = Processor::new(Arc::new(Store::new()));
        let l = listener(None);
        processor.add_listener(l.clone());
        processor.apply(Change::Replace(vec![]));
        processor.apply(Change::Upsert(obj("a", 5)));
        processor.apply(Change::Upsert(obj("a", 6)));
        processor.apply(Change::Delete(obj("a", 7)));
        assert_eq!(
            drain(&l),
            ["synced", "add a@5", "update a@5->6", "delete a@7"]
        );
        assert!(processor.store().is_empty());
    }

    #[test]
    fn a_relist_reconciles_with_updates_resyncs_and_tombstones() {
        let processor = Processor::new(Arc::new(Store::new()));
        let plain = listener(None);
        let resyncing = listener(Some(Duration::from_secs(3600)));
        processor.add_listener(plain.clone());
        processor.add_listener(resyncing.clone());
        processor.apply(Change::Replace(vec![
            obj("same", 1),
            obj("changed", 2),
            obj("gone", 3),
        ]));
        drain(&plain);
        drain(&resyncing);

        processor.apply(Change::Replace(vec![
            obj("same", 1),
            obj("changed", 9),
            obj("new", 10),
        ]));
        assert_eq!(
            drain(&plain),
            ["delete gone@3 unknown", "update changed@2->9", "add new@10"]
        );
        assert_eq!(
            drain(&resyncing),
            [
                "delete gone@3 unknown",
                "update same@1->1 resync",
                "update changed@2->9",
                "add new@10"
            ]
        );
        assert_eq!(processor.stats.tombstones.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn a_late_listener_gets_the_snapshot_then_live_changes_exactly_once() {
        let processor = Processor::new(Arc::new(Store::new()));
        processor.apply(Change::Replace(vec![obj("a", 1)]));
        processor.apply(Change::Upsert(obj("b", 2)));
        let late = listener(None);
        processor.add_listener(late.clone());
        processor.apply(Change::Upsert(obj("a", 3)));
        let mut seen = drain(&late);
        seen[..2].sort();
        assert_eq!(
            seen,
            [
                "add a@1 initial",
                "add b@2 initial",
                "synced",
                "update a@1->3"
            ]
        );
    }

    #[test]
    fn a_swap_moves_every_later_change_to_the_new_listener() {
        let processor = Processor::new(Arc::new(Store::new()));
        let old = listener(None);
        processor.add_listener(old.clone());
        processor.apply(Change::Replace(vec![obj("a", 1)]));
        let new = listener(None);
        processor.swap_listener(&old, new.clone());
        processor.apply(Change::Upsert(obj("a", 2)));
        assert_eq!(drain(&old), ["add a@1 initial", "synced"]);
        assert_eq!(drain(&new), ["add a@1 initial", "synced", "update a@1->2"]);
    }

    #[test]
    fn resync_reaches_only_listeners_that_asked_and_only_when_due() {
        let processor = Processor::new(Arc::new(Store::new()));
        let plain = listener(None);
        let resyncing = listener(Some(Duration::from_secs(1)));
        processor.add_listener(plain.clone());
        processor.add_listener(resyncing.clone());
        processor.apply(Change::Replace(vec![obj("a", 1)]));
        drain(&plain);
        drain(&resyncing);
        let start = Instant::now();
        processor.resync_due(start);
        assert!(drain(&resyncing).is_empty(), "not due yet");
        let next = processor
            .resync_due(start + Duration::from_millis(1500))
            .unwrap();
        assert_eq!(drain(&resyncing), ["update a@1->1 resync"]);
        assert!(drain(&plain).is_empty());
        assert!(next > start + Duration::from_millis(1500));
    }
}
