//! Dispatch: listeners (a buffer per plugin subscription) and the plugin
//! workers that drain them into wasm calls.

mod listener;
mod notification;
mod queue;
mod signal;
mod worker;

pub use listener::{Listener, ListenerStats};
pub use notification::Notification;
pub use queue::{CoalescedQueue, Item, Queue};
pub use signal::Signal;
pub use worker::{LastError, PluginWorker, RetryPolicy, STOP_MARGIN, Stopped};
