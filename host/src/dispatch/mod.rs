//! Dispatch: listeners (a buffer per plugin subscription), the plugin
//! workers that drain them into wasm calls, and the feed of finished
//! deliveries they publish to.

mod feed;
mod gate;
mod listener;
pub mod metrics;
mod queue;
mod settings;
mod signal;
mod worker;

pub use feed::{
    FEED_BUFFER, Feed, FeedEvent, MAX_WATCHERS, Outcome, Received, TooManyWatchers, Watcher,
};
pub use gate::CacheSync;
pub use listener::{Listener, ListenerStats};
pub use queue::{CoalescedQueue, Item, KeyBackoff, Queue, Retry};
pub use settings::{CoalescedQueueConfig, QueueConfig, ShutdownConfig};
pub use signal::Signal;
pub use worker::{LastError, MAX_REQUEUE_DELAY, PluginWorker, RetryPolicy, STOP_MARGIN, Stopped};
