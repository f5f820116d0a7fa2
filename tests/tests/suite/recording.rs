//! A listener the test reads directly: what an informer distributes, without
//! a plugin in between.

use herald::dispatch::{Item, Listener, Notification, Signal};
use herald::gvk::Gvk;
use herald::informer::{InformerKey, Informers, ReflectorConfig, SharedInformer};
use herald::plugin::{Delivery, Subscription};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a test waits for something that should happen at once. Only a
/// safety net: tests wait on events, never on time.
pub const PATIENCE: Duration = Duration::from_secs(20);

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
        .key_for(subscription)
        .await
        .expect("resolving the kind");
    let informer = informers.acquire(&key);
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

/// Drops the open watches and waits until the informer's reflector has seen
/// its watch end, so that changes made next cannot reach it on the old stream.
pub async fn drop_watches_and_wait(faults: &herald_apiserver::Faults, informer: &SharedInformer) {
    use std::sync::atomic::Ordering;
    let before = informer.stats().watch_restarts.load(Ordering::SeqCst)
        + informer.stats().expired.load(Ordering::SeqCst);
    faults.drop_watches();
    let deadline = Instant::now() + PATIENCE;
    while informer.stats().watch_restarts.load(Ordering::SeqCst)
        + informer.stats().expired.load(Ordering::SeqCst)
        == before
    {
        assert!(
            Instant::now() < deadline,
            "the informer did not notice its watch was dropped"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}
