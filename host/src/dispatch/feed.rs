//! The delivery feed: one event per notification a plugin finished with
//! (handled, or skipped after its retries), and one per failed call of
//! coalesced delivery whose notification waits for a retry, for watchers
//! such as the dashboard's live stream.
//!
//! # Guarantees
//!
//! - Publishing never waits on a watcher: the feed is a broadcast channel
//!   with a bounded buffer ([`FEED_BUFFER`] events). A watcher that falls
//!   behind by more than that loses the oldest events it had not read; it
//!   is told how many, and the feed counts them ([`Feed::dropped`]).
//! - With no watcher, publishing costs one relaxed atomic load: the event is
//!   not even built.
//! - At most [`MAX_WATCHERS`] watch at once; more are refused, so the
//!   feed's memory and the time a publish takes stay bounded.

use crate::cluster::ClusterName;
use serde::Serialize;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};
use tokio::sync::broadcast;

/// Events a watcher may fall behind by before it loses the oldest.
pub const FEED_BUFFER: usize = 1024;

/// Watchers at once.
pub const MAX_WATCHERS: usize = 16;

/// How a delivery ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// The plugin handled it (perhaps after retries).
    Delivered,
    /// Every attempt failed: given up on.
    Skipped,
    /// The call failed and the notification waits for another attempt
    /// (coalesced delivery: its key's backoff, while other keys go on).
    Retrying,
}

/// One finished delivery, or (outcome `retrying`) one failed attempt.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FeedEvent {
    /// When it finished, in milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// The plugin.
    #[serde(serialize_with = "shared_str")]
    pub plugin: Arc<str>,
    /// The plural resource of the listener it came through.
    #[serde(serialize_with = "shared_str")]
    pub resource: Arc<str>,
    /// The cluster it came from; left out for the default cluster.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterName>,
    /// `add`, `update` or `delete`.
    pub event: &'static str,
    /// The object's key, `namespace/name` or `name`.
    pub key: String,
    /// Part of an initial list.
    pub initial: bool,
    /// How it ended.
    pub outcome: Outcome,
    /// Calls made: 1 unless the first failed (in coalesced delivery, calls
    /// since the key's last success).
    pub attempts: u32,
    /// Duration of the last call, in microseconds.
    pub micros: u64,
    /// The last attempt's error, when it failed.
    pub error: Option<String>,
}

impl FeedEvent {
    /// Milliseconds since the Unix epoch of `time`.
    pub fn epoch_ms(time: SystemTime) -> u64 {
        time.duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64)
    }

    /// `duration` in whole microseconds.
    pub fn micros(duration: Duration) -> u64 {
        duration.as_micros().min(u64::MAX as u128) as u64
    }
}

fn shared_str<S: serde::Serializer>(text: &Arc<str>, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(text)
}

/// The feed: plugin workers publish, watchers subscribe.
#[derive(Debug)]
pub struct Feed {
    sender: broadcast::Sender<Arc<FeedEvent>>,
    watchers: Arc<AtomicUsize>,
    published: AtomicU64,
    dropped: Arc<AtomicU64>,
}

impl Default for Feed {
    fn default() -> Self {
        Feed {
            sender: broadcast::Sender::new(FEED_BUFFER),
            watchers: Arc::default(),
            published: AtomicU64::new(0),
            dropped: Arc::default(),
        }
    }
}

/// The feed has [`MAX_WATCHERS`] watchers already.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the delivery feed has {MAX_WATCHERS} watchers already")]
pub struct TooManyWatchers;

impl Feed {
    /// Publishes the event `make` builds, if anyone watches; never waits.
    #[inline]
    pub fn publish(&self, make: impl FnOnce() -> FeedEvent) {
        if self.watchers.load(Ordering::Relaxed) == 0 {
            return;
        }
        self.published.fetch_add(1, Ordering::Relaxed);
        // An error only means the last watcher left meanwhile.
        let _ = self.sender.send(Arc::new(make()));
    }

    /// A new watcher, seeing every event published from now on.
    pub fn watch(&self) -> Result<Watcher, TooManyWatchers> {
        self.watchers
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < MAX_WATCHERS).then_some(n + 1)
            })
            .map_err(|_| TooManyWatchers)?;
        Ok(Watcher {
            receiver: self.sender.subscribe(),
            watchers: self.watchers.clone(),
            dropped: self.dropped.clone(),
        })
    }

    /// Watchers now.
    pub fn watchers(&self) -> usize {
        self.watchers.load(Ordering::Relaxed)
    }

    /// Events published (while someone watched).
    pub fn published(&self) -> u64 {
        self.published.load(Ordering::Relaxed)
    }

    /// Events watchers lost by falling behind, summed over watchers.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// What a watcher receives next.
#[derive(Debug, Clone)]
pub enum Received {
    /// An event.
    Event(Arc<FeedEvent>),
    /// The watcher fell behind and lost this many events.
    Dropped(u64),
}

/// One watcher of the feed; leaving is dropping it.
#[derive(Debug)]
pub struct Watcher {
    receiver: broadcast::Receiver<Arc<FeedEvent>>,
    watchers: Arc<AtomicUsize>,
    dropped: Arc<AtomicU64>,
}

impl Watcher {
    /// The next event, or how many were lost; `None` once the feed is gone.
    pub async fn recv(&mut self) -> Option<Received> {
        match self.receiver.recv().await {
            Ok(event) => Some(Received::Event(event)),
            Err(broadcast::error::RecvError::Lagged(lost)) => {
                self.dropped.fetch_add(lost, Ordering::Relaxed);
                Some(Received::Dropped(lost))
            }
            Err(broadcast::error::RecvError::Closed) => None,
        }
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.watchers.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(n: usize) -> FeedEvent {
        FeedEvent {
            at_ms: 0,
            plugin: "p".into(),
            resource: "pods".into(),
            cluster: None,
            event: "add",
            key: format!("ns/pod-{n}"),
            initial: false,
            outcome: Outcome::Delivered,
            attempts: 1,
            micros: 5,
            error: None,
        }
    }

    #[test]
    fn without_watchers_nothing_is_built() {
        let feed = Feed::default();
        feed.publish(|| unreachable!("built with nobody watching"));
        assert_eq!(feed.published(), 0);
    }

    #[tokio::test]
    async fn a_slow_watcher_loses_the_oldest_events_and_is_told_how_many() {
        let feed = Feed::default();
        let mut watcher = feed.watch().unwrap();
        let total = FEED_BUFFER + 100;
        for n in 0..total {
            // Never waits, however far behind the watcher is.
            feed.publish(|| event(n));
        }
        let Some(Received::Dropped(lost)) = watcher.recv().await else {
            panic!("the watcher fell behind by 100 events")
        };
        assert_eq!(lost, 100);
        assert_eq!(feed.dropped(), 100);
        let Some(Received::Event(first)) = watcher.recv().await else {
            panic!("events follow")
        };
        assert_eq!(first.key, "ns/pod-100", "the oldest were the ones lost");
    }

    /// What a worker pays per finished delivery for the feed, with nobody
    /// watching and with one watcher reading on another thread. Figures
    /// only mean something in a release build.
    #[test]
    #[ignore = "measurement: cargo test --release -p herald --lib publish_cost -- --ignored --nocapture"]
    fn publish_cost() {
        const N: usize = 2_000_000;
        let feed = Arc::new(Feed::default());
        let key = "payments/payments-api-c7d9f6b58-p8r3t".to_owned();
        let (plugin, resource): (Arc<str>, Arc<str>) = ("pod-lifecycle".into(), "pods".into());
        let publish = |feed: &Feed| {
            feed.publish(|| FeedEvent {
                at_ms: FeedEvent::epoch_ms(SystemTime::now()),
                plugin: plugin.clone(),
                resource: resource.clone(),
                cluster: None,
                event: "update",
                key: key.clone(),
                initial: false,
                outcome: Outcome::Delivered,
                attempts: 1,
                micros: 150,
                error: None,
            })
        };
        let started = std::time::Instant::now();
        for _ in 0..N {
            publish(std::hint::black_box(&feed));
        }
        let idle = started.elapsed().as_nanos() as f64 / N as f64;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let mut watcher = feed.watch().unwrap();
        let reader = std::thread::spawn(move || {
            runtime.block_on(async {
                let (mut events, mut lost) = (0u64, 0u64);
                while let Some(received) = watcher.recv().await {
                    match received {
                        Received::Event(_) => events += 1,
                        Received::Dropped(n) => lost += n,
                    }
                    if events + lost == N as u64 {
                        break;
                    }
                }
                (events, lost)
            })
        });
        let started = std::time::Instant::now();
        for _ in 0..N {
            publish(&feed);
        }
        let watched = started.elapsed().as_nanos() as f64 / N as f64;
        let (events, lost) = reader.join().unwrap();
        println!(
            "publish: {idle:.1} ns with no watcher, {watched:.1} ns with one \
             ({events} read, {lost} lost by the reader falling behind)"
        );
    }

    #[test]
    fn watchers_are_bounded_and_counted_until_dropped() {
        let feed = Feed::default();
        let watchers: Vec<Watcher> = (0..MAX_WATCHERS).map(|_| feed.watch().unwrap()).collect();
        assert_eq!(feed.watch().unwrap_err(), TooManyWatchers);
        drop(watchers);
        assert_eq!(feed.watchers(), 0);
        assert!(feed.watch().is_ok());
    }
}
