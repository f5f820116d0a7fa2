//! The informer's side of a listener: what it hands notifications to. The
//! dispatch layer's buffers implement it (one per plugin subscription), so
//! the informer knows nothing of plugins, workers or queues.

use super::notification::Notification;
use std::time::Duration;

/// A receiver of one informer's notifications, registered with its
/// [`Processor`](super::Processor). Every method is called under the
/// processor's lock, in distribution order, and must not block: a receiver
/// buffers and returns.
pub trait Listen: Send + Sync {
    /// Buffers one notification.
    fn push(&self, notification: Notification);

    /// Buffers a late join's snapshot, all at once.
    fn push_batch(&self, notifications: Vec<Notification>);

    /// Marks the end of the initial list (or of a late join's snapshot):
    /// the informer's cache is complete.
    fn push_synced(&self);

    /// How often it wants every cached object again as a resync update;
    /// `None` for never.
    fn resync_period(&self) -> Option<Duration>;
}
