//! A plugin's worker: one task of the plugins' worker pool that owns the
//! plugin's instance and delivers its listeners' notifications one at a
//! time.
//!
//! # Scheduling
//!
//! Every plugin is one task on the engine's worker pool (a few threads,
//! one per CPU unless configured): a plugin costs a parked task, not a
//! thread, and a wake-up of its task drains every one of its listeners.
//! A call waiting in a host call (a Kubernetes write, an HTTP request, a
//! WASI clock) is a suspended future that holds no thread, so a slow or
//! stuck plugin leaves the pool to the others until its deadline.
//!
//! Fairness is time slicing, round-robin: a task gives its thread back to
//! the pool, going to the back of its run queue, after one
//! [`EPOCH_TICK`](crate::plugin::EPOCH_TICK) (5 ms) of running or
//! [`SLICE_CALLS`] deliveries, whichever comes first, and a single call
//! running wasm for longer yields at every epoch tick (the store's epoch
//! callback). So a busy plugin, one
//! with a deep backlog or one spinning in a call, delays another runnable
//! plugin by at most about one slice per task ahead of it in the queue,
//! whatever it does; it cannot starve it.
//!
//! # Guarantees
//!
//! - No call before the plugin's caches are complete: the first delivery
//!   waits until every listener's informer has its initial list in (see
//!   [`super::gate`]), so a handler's cache reads of any kind it
//!   subscribes to see the whole initial list.
//! - One call at a time: a key is never delivered twice concurrently.
//! - Every-event listeners: notifications reach the plugin in the order the
//!   informer distributed them. A failed call (handler error or fault) is
//!   retried in place with exponential backoff up to
//!   [`RetryPolicy::max_retries`] times, then skipped; meanwhile the worker
//!   waits, so the plugin's other listeners wait too. After a skip the worker
//!   waits before its next every-event notification, longer with each
//!   consecutive skip, so a plugin that keeps failing is backed off rather
//!   than spun. A handler's requeue request cannot keep that order, so it is
//!   not honoured: it is counted and logged once per listener.
//! - Batches (a world 0.7.0 plugin whose delivery options ask for more
//!   than one notification per call): an every-event listener's ready
//!   notifications go in one call, up to the plugin's maximum, never
//!   waiting for more to arrive and never past its initial-list marker;
//!   one call deadline covers the batch. Order and the retry policy are
//!   as above: a notification the plugin reports failed is retried in
//!   place on its own, those before it are done and those after it go on
//!   in the next call. A call that faults loses the instance and what it
//!   handled, so the batch is delivered again one notification at a time,
//!   pinning the fault to its notification (those handled before it come
//!   twice, as after any fault). Coalesced listeners keep one call per
//!   key: their backoffs and requeues are per key.
//! - Coalesced listeners are client-go's rate-limited work queue: each key's
//!   notifications reach the plugin in order, merged, newest state last.
//!   A failed call does not block: the notification goes back to its queue,
//!   not ready before its key's backoff ([`KeyBackoff`]: 5 ms doubling per
//!   consecutive failure of that key, up to 1000 s, forgotten on its next
//!   success) while other keys keep flowing; after
//!   [`KeyBackoff::max_retries`] retries it is skipped. A newer notification
//!   for a waiting key merges with it and is ready at once (delivered once,
//!   newest state; the failure count is kept). After a successful call whose
//!   handler asked for it ([`Handled::requeue_after`]), the notification is
//!   delivered again after the delay, unless a newer one for its key comes
//!   first, which is then delivered at once instead.
//! - A skipped notification is recorded (log line, counters, last error); one
//!   of an initial list marks the listener [degraded](super::Listener::degraded), so
//!   readiness does not wait on it. A coalesced listener is
//!   [synced](super::Listener::has_synced) only once every key of its initial list
//!   was handled or skipped: a key of it waiting for a retry holds the
//!   marker (and readiness) back, not the other keys.
//! - The worker never polls: with nothing ready its task sleeps until the
//!   earliest instant a waiting key becomes ready, or until a push or a stop
//!   wakes it.
//! - Nothing waits on a worker: informers only push into listener buffers, so
//!   a slow, stuck or crashing plugin delays nobody but itself.
//! - Nothing waits on a worker without a bound: every call ends by its
//!   deadline ([`crate::plugin`]'s deadline mechanism), and
//!   [`PluginWorker::stop`] waits for the task only until a given instant,
//!   after which the task is abandoned (aborted, which drops its call at its
//!   next epoch tick or wait, and reported by the caller) and everything
//!   else goes on. A drain delivers what is ready and
//!   ends: keys waiting for a retry or a requeue are dropped, not waited for
//!   (a restarted or swapped-in plugin gets every key again in its initial
//!   list).
//! - A worker given a [`Feed`] publishes one event per notification it is
//!   done with (handled or skipped), and one per failed coalesced call whose
//!   notification waits for a retry ([`Outcome::Retrying`]), without waiting
//!   (see [`Feed::publish`]).
//!
//! [`SLICE_CALLS`]: slice::SLICE_CALLS
//! [`KeyBackoff`]: super::KeyBackoff
//! [`KeyBackoff::max_retries`]: super::KeyBackoff::max_retries
//! [`Handled::requeue_after`]: crate::plugin::Handled::requeue_after
//! [`Feed`]: super::Feed
//! [`Feed::publish`]: super::Feed::publish
//! [`Outcome::Retrying`]: super::Outcome::Retrying
//!
//! # Parts
//!
//! Each uses only parts listed before it: [`retry`], [`slice`], [`call`]
//! and [`report`] stand alone; [`state`] holds the [`Dispatch`] the others
//! work on; [`wait`], [`every_event`] and [`coalesced`] add its waits and
//! its two deliveries; the [`scheduler`] drives them; [`lifecycle`] runs it
//! as the plugin's task.
//!
//! [`Dispatch`]: state::Dispatch

mod call;
mod coalesced;
mod every_event;
mod lifecycle;
mod report;
mod retry;
mod scheduler;
mod slice;
mod state;
mod wait;

pub use lifecycle::{PluginWorker, STOP_MARGIN, Stopped};
pub use report::LastError;
pub use retry::{MAX_REQUEUE_DELAY, RetryPolicy};

#[cfg(test)]
mod testing;
