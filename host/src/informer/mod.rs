//! Shared informers: one list/watch and one cache per distinct watched
//! resource (resource + namespace + selectors), shared by every plugin
//! subscription with that key, with client-go's SharedInformer semantics.
//!
//! The parts, in the order an event flows: [`reflector`] lists and watches
//! through `kube::Client` and turns each event into a [`Change`];
//! `answer` reads the server's answers, in JSON or (for built-in kinds, as
//! client-go asks) in [`protobuf`] transcoded to the same JSON;
//! [`processor`] applies it to the [`Store`] first and then distributes a
//! notification to every listener; [`registry`] shares informers between
//! subscriptions and stops them when none is left.

mod answer;
mod backoff;
mod listen;
pub mod metrics;
mod notification;
pub mod processor;
pub mod protobuf;
pub mod reflector;
pub mod registry;
mod resource;

pub use backoff::Backoff;
pub use listen::Listen;
pub use notification::Notification;
pub use processor::{Change, Processor, ProcessorStats};
pub use reflector::{
    EventCounts, Reflector, ReflectorConfig, ReflectorStats, RequestFailure, WatchEventType,
};
pub use registry::Informers;
pub use resource::InformerKey;

use crate::store::Store;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;

/// How often due resyncs are checked.
const RESYNC_CHECK: Duration = Duration::from_millis(200);

/// One running informer: a reflector task feeding a processor and its store.
pub struct SharedInformer {
    key: InformerKey,
    processor: Arc<Processor>,
    stats: Arc<ReflectorStats>,
    tasks: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for SharedInformer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedInformer")
            .field("key", &self.key.to_string())
            .field("processor", &self.processor)
            .finish()
    }
}

impl SharedInformer {
    /// Starts listing and watching `key` on the current tokio runtime.
    pub fn start(client: kube::Client, key: InformerKey, config: ReflectorConfig) -> Self {
        let processor = Arc::new(Processor::new(Arc::new(Store::new())));
        let stats = Arc::new(ReflectorStats::default());
        let reflector = Reflector::new(
            client,
            key.clone(),
            processor.clone(),
            config,
            stats.clone(),
        );
        let resync_processor = processor.clone();
        let tasks = vec![
            tokio::spawn(reflector.run()),
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(RESYNC_CHECK).await;
                    resync_processor.resync_due(Instant::now());
                }
            }),
        ];
        tracing::info!(informer = %key, "informer started");
        SharedInformer {
            key,
            processor,
            stats,
            tasks,
        }
    }

    /// What it watches.
    pub fn key(&self) -> &InformerKey {
        &self.key
    }

    /// The cache.
    pub fn store(&self) -> &Arc<Store> {
        self.processor.store()
    }

    /// The processor (listeners and counters).
    pub fn processor(&self) -> &Arc<Processor> {
        &self.processor
    }

    /// The reflector's counters.
    pub fn stats(&self) -> &Arc<ReflectorStats> {
        &self.stats
    }

    /// True once the first list has been applied.
    pub fn has_synced(&self) -> bool {
        self.processor.has_synced()
    }

    /// Registers a listener (late joiners get the snapshot first).
    pub fn add_listener(&self, listener: Arc<dyn Listen>) {
        self.processor.add_listener(listener);
    }

    /// Unregisters a listener.
    pub fn remove_listener<L: Listen + ?Sized>(&self, listener: &Arc<L>) -> bool {
        self.processor.remove_listener(listener)
    }

    /// Atomically replaces `old` by `new` (see [`Processor::swap_listener`]).
    pub fn swap_listener<L: Listen + ?Sized>(&self, old: &Arc<L>, new: Arc<dyn Listen>) {
        self.processor.swap_listener(old, new);
    }
}

impl Drop for SharedInformer {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
        tracing::info!(informer = %self.key, "informer stopped");
    }
}
