//! A listener the test reads directly: what an informer distributes, without
//! a plugin in between.

use herald::dispatch::{Item, Listener, Signal};
use herald::gvk::Gvk;
use herald::informer::Notification;
use herald::informer::{InformerKey, Informers, ReflectorConfig, SharedInformer};
use herald::plugin::{Delivery, Subscription};
use herald_tests::{PATIENCE, eventually};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A subscription to ConfigMaps in `namespace`.
pub fn config_maps(namespace: &str) -> Subscription {
    Subscription {
        kind: Gvk::new("", "v1", "ConfigMap"),
        namespace: Some(namespace.to_owned()),
        label_selector: None,
        field_selector: None,
        resync_period: None,
        delivery: Delivery::EveryEvent,
    }
}

/// Informers tuned to reconnect fast in tests.
pub fn informers(client: kube::Client) -> Informers {
    let config = ReflectorConfig {
        initial_backoff: Duration::from_millis(20),
        max_backoff: Duration::from_millis(500),
        ..ReflectorConfig::default()
    };
    Informers::new(client, config)
}

/// Resolves and starts the informer of `subscription`.
pub async fn informer(
    informers: &Informers,
    subscription: &Subscription,
) -> (InformerKey, Arc<SharedInformer>) {
    let key = informers
        .key_for(subscription, None)
        .await
        .expect("resolving the kind");
    let informer = informers.acquire(&key).expect("the default cluster");
    (key, informer)
}

/// One event as a test sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// An add.
    Add {
        name: String,
        rv: String,
        initial: bool,
    },
    /// An update.
    Update {
        name: String,
        old_rv: String,
        rv: String,
        resync: bool,
    },
    /// A delete.
    Delete {
        name: String,
        rv: String,
        unknown: bool,
    },
    /// The end of the initial list.
    Synced,
}

impl Seen {
    /// The object's name (empty for `Synced`).
    pub fn name(&self) -> &str {
        match self {
            Seen::Add { name, .. } | Seen::Update { name, .. } | Seen::Delete { name, .. } => name,
            Seen::Synced => "",
        }
    }
}

/// A listener plus the signal it raises.
pub struct Recording {
    /// The listener.
    pub listener: Arc<Listener>,
    signal: Arc<Signal>,
}

impl Recording {
    /// A listener for `subscription`.
    pub fn new(subscription: Subscription) -> Self {
        let signal = Arc::new(Signal::default());
        let listener = Arc::new(Listener::new(
            "recording".into(),
            subscription,
            "configmaps".into(),
            signal.clone(),
        ));
        Recording { listener, signal }
    }

    /// The next item, waiting for it (on a multi-threaded test runtime).
    pub fn next(&self) -> Seen {
        let deadline = Instant::now() + PATIENCE;
        tokio::task::block_in_place(|| {
            loop {
                if let Some(item) = self.listener.pop() {
                    return describe(item);
                }
                assert!(
                    self.signal.wait_until(deadline) || self.listener.depth() > 0,
                    "nothing arrived within {PATIENCE:?}"
                );
            }
        })
    }

    /// The next `n` items.
    pub fn take(&self, n: usize) -> Vec<Seen> {
        (0..n).map(|_| self.next()).collect()
    }

    /// Everything buffered now, without waiting.
    pub fn drain(&self) -> Vec<Seen> {
        std::iter::from_fn(|| self.listener.pop().map(describe)).collect()
    }

    /// Items until (and including) the first that satisfies `done`.
    pub fn until(&self, done: impl Fn(&Seen) -> bool) -> Vec<Seen> {
        let mut seen = Vec::new();
        loop {
            let item = self.next();
            let stop = done(&item);
            seen.push(item);
            if stop {
                return seen;
            }
        }
    }
}

fn describe(item: Item) -> Seen {
    match item {
        Item::Synced => Seen::Synced,
        Item::Notify(Notification::Add { object, initial }) => Seen::Add {
            name: object.name().into(),
            rv: object.resource_version().into(),
            initial,
        },
        Item::Notify(Notification::Update { old, new, resync }) => Seen::Update {
            name: new.name().into(),
            old_rv: old.resource_version().into(),
            rv: new.resource_version().into(),
            resync,
        },
        Item::Notify(Notification::Delete {
            object,
            final_state_unknown,
        }) => Seen::Delete {
            name: object.name().into(),
            rv: object.resource_version().into(),
            unknown: final_state_unknown,
        },
    }
}

/// Begins an outage: new watches are refused (500) and open ones dropped;
/// returns once none is open, so nothing changed from then on reaches the
/// informer until `faults.fail_watches(false)`. Unlike
/// [`drop_watches_and_wait`], it does not need a watch to be open: the
/// informer may be between a drop and its next watch.
pub async fn begin_watch_outage(faults: &herald_apiserver::Faults) {
    faults.fail_watches(true);
    faults.drop_watches();
    eventually(
        "every watch is closed after the drop",
        PATIENCE,
        async || match faults.open_watches() {
            0 => Ok(()),
            open => Err(format!("{open} open")),
        },
    )
    .await;
}

/// Drops the open watches and waits until the informer's reflector has seen
/// its watch end, so that changes made next cannot reach it on the old stream.
pub async fn drop_watches_and_wait(faults: &herald_apiserver::Faults, informer: &SharedInformer) {
    use std::sync::atomic::Ordering;
    // A drop before the watch is open would hit nothing.
    eventually("the informer opens a watch", PATIENCE, async || {
        faults.open_watches() > 0
    })
    .await;
    let stats = informer.stats();
    let ended =
        || stats.watch_restarts.load(Ordering::SeqCst) + stats.expired.load(Ordering::SeqCst);
    let before = ended();
    faults.drop_watches();
    eventually(
        "the informer notices its watch was dropped",
        PATIENCE,
        async || {
            if ended() != before {
                Ok(())
            } else {
                Err(format!(
                    "restarts {}, expired {}, errors {}, lists {}",
                    stats.watch_restarts.load(Ordering::SeqCst),
                    stats.expired.load(Ordering::SeqCst),
                    stats.errors.load(Ordering::SeqCst),
                    stats.lists.load(Ordering::SeqCst)
                ))
            }
        },
    )
    .await;
}

/// What one listener has seen, and the rules it must follow.
#[derive(Debug, Default)]
pub struct View {
    /// Name → resourceVersion of what the listener holds.
    pub objects: BTreeMap<String, String>,
    /// Everything after the end of its initial list.
    pub live: Vec<Seen>,
    /// Its initial list has ended.
    pub synced: bool,
    /// Names it received a tombstone (final state unknown) for.
    pub tombstones: BTreeSet<String>,
}

impl View {
    /// Applies one item, checking the informer's ordering rules.
    pub fn apply(&mut self, who: &str, seen: Seen) {
        match &seen {
            Seen::Synced => {
                self.synced = true;
                return;
            }
            Seen::Add { name, rv, .. } => {
                assert!(
                    !self.objects.contains_key(name),
                    "{who}: add of {name} while it is present"
                );
                self.objects.insert(name.clone(), rv.clone());
            }
            Seen::Update {
                name, old_rv, rv, ..
            } => {
                // Coalescing merges but never erases: an add then a delete
                // while queued is delivered as the delete, and a delete then
                // an add as an update from the deleted state, so a coalesced
                // listener may hear of a key it never held, or from a state
                // it never saw.
                if !who.contains("coalesced") {
                    let current = self
                        .objects
                        .get(name)
                        .unwrap_or_else(|| panic!("{who}: update of {name} before its add"));
                    assert_eq!(
                        current, old_rv,
                        "{who}: update of {name} from a state it did not see"
                    );
                }
                self.objects.insert(name.clone(), rv.clone());
            }
            Seen::Delete { name, unknown, .. } => {
                let held = self.objects.remove(name).is_some();
                assert!(
                    held || who.contains("coalesced"),
                    "{who}: delete of {name} that it does not have"
                );
                if *unknown {
                    self.tombstones.insert(name.clone());
                }
            }
        }
        if self.synced {
            self.live.push(seen);
        }
    }
}
