//! The delivery loop: it visits a plugin's listeners round-robin and hands
//! each ready notification to its listener's delivery.

use super::call::{Calls, Contexts, call_span, in_span};
use super::every_event::Delivered;
use super::slice::Slice;
use super::state::{Dispatch, RunMode};
use crate::dispatch::gate::Admitted;
use crate::dispatch::listener::Listener;
use crate::dispatch::queue::Item;
use crate::informer::Notification;
use crate::plugin::{Busy, Delivery};
use std::sync::Arc;
use std::time::Instant;

/// What the delivery loop carries from one step to the next.
#[derive(Default)]
pub(super) struct Cursor {
    /// The listener visited first next time (round-robin).
    next_listener: usize,
    /// Every-event notifications skipped in a row.
    consecutive_skips: u32,
    /// The event context of each listener, reused call after call.
    contexts: Contexts,
    /// The buffer a batch is gathered in, reused batch after batch.
    batch: Vec<Notification>,
}

/// What one step of the delivery loop did.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Step {
    /// Delivered, retried, skipped or marked something.
    Worked,
    /// Nothing is ready; the first waiting entry is ready at that instant.
    Idle(Option<Instant>),
    /// Told to stop during a backoff.
    Stopped,
}

impl Dispatch {
    /// Delivers until stopped, or, draining, until nothing is ready,
    /// yielding the pool's thread after each slice if other plugins may
    /// want it (see "Scheduling" in [`super`]). `busy` counts the task in
    /// the pool's demand from its spawn.
    pub(super) async fn run(&self, calls: &mut impl Calls, busy: Busy) {
        let mut cursor = Cursor::default();
        let mut slice = Slice::new();
        let mut busy = busy;
        loop {
            let mode = self.mode();
            if mode == RunMode::Stopping {
                return;
            }
            let idle_until = match self.step(calls, &mut cursor).await {
                Step::Worked => {
                    slice.delivered(&self.demand).await;
                    continue;
                }
                Step::Stopped => return,
                // What waits for a retry or a requeue is not waited for.
                Step::Idle(_) if mode == RunMode::Draining => return,
                Step::Idle(ready_at) => ready_at,
            };
            busy = self.wait(calls, busy, idle_until).await;
            slice = Slice::new();
        }
    }

    /// Takes the next ready entry, visiting listeners round-robin, and
    /// delivers it.
    pub(super) async fn step(&self, calls: &mut impl Calls, cursor: &mut Cursor) -> Step {
        let Some(admitted) = self.admitted() else {
            // A listener's initial list coming in wakes the worker.
            return Step::Idle(None);
        };
        let Some((listener, item)) =
            self.next_item(&mut cursor.next_listener, self.now(), &admitted)
        else {
            return Step::Idle(self.next_ready_at(&admitted));
        };
        let notification = match item {
            Item::Synced => {
                listener.mark_synced();
                return Step::Worked;
            }
            Item::Notify(notification) => notification,
        };
        match listener.subscription().delivery {
            Delivery::EveryEvent => {
                let max = calls.max_batch();
                let delivered = if max > 1 {
                    let mut batch = std::mem::take(&mut cursor.batch);
                    batch.push(notification);
                    let synced = self.fill_batch(&listener, &mut batch, max);
                    let delivered = self
                        .deliver_batch_in_order(
                            calls,
                            &mut cursor.contexts,
                            &mut cursor.consecutive_skips,
                            &listener,
                            &batch,
                        )
                        .await;
                    batch.clear();
                    cursor.batch = batch;
                    if synced {
                        listener.mark_synced();
                    }
                    delivered
                } else {
                    self.deliver_one_in_order(
                        calls,
                        &mut cursor.contexts,
                        &mut cursor.consecutive_skips,
                        &listener,
                        &notification,
                        None,
                    )
                    .await
                };
                if matches!(delivered, Delivered::Stopped) {
                    return Step::Stopped;
                }
            }
            Delivery::Coalesced => {
                let ctx = cursor.contexts.for_notification(&listener, &notification);
                let span = call_span(&self.name, &listener, ctx, notification.kind());
                let delivery = self.deliver_coalesced(calls, &listener, notification, ctx);
                in_span(span, delivery).await;
            }
        }
        Step::Worked
    }

    /// Adds to `batch` the every-event notifications of `listener` ready
    /// after it, up to `max` in all; true when it stopped at the marker of
    /// the listener's initial list, taken too: the caller marks the
    /// listener synced once the batch is delivered.
    fn fill_batch(&self, listener: &Listener, batch: &mut Vec<Notification>, max: usize) -> bool {
        let now = self.now();
        while batch.len() < max {
            match listener.pop_ready(now) {
                Some(Item::Notify(notification)) => batch.push(notification),
                Some(Item::Synced) => return true,
                None => break,
            }
        }
        false
    }

    /// Which listeners may deliver: all once every listener's cache is
    /// complete; before that, those of the clusters whose caches are (see
    /// [`crate::dispatch::gate`]); `None` while no cluster's is.
    fn admitted(&self) -> Option<Admitted> {
        let listeners = self.listeners.read().unwrap_or_else(|e| e.into_inner());
        self.caches.admitted(&self.name, &listeners, self.now())
    }

    /// Takes the next item ready at `now`, visiting listeners round-robin.
    fn next_item(
        &self,
        next: &mut usize,
        now: Instant,
        admitted: &Admitted,
    ) -> Option<(Arc<Listener>, Item)> {
        let listeners = self.listeners.read().unwrap_or_else(|e| e.into_inner());
        let count = listeners.len();
        for offset in 0..count {
            let index = (*next + offset) % count;
            if !admitted.admits(&listeners[index]) {
                continue;
            }
            if let Some(item) = listeners[index].pop_ready(now) {
                *next = index + 1;
                return Some((listeners[index].clone(), item));
            }
        }
        None
    }

    /// The earliest instant a waiting entry of an admitted listener
    /// becomes ready.
    pub(super) fn next_ready_at(&self, admitted: &Admitted) -> Option<Instant> {
        self.listeners
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter(|l| admitted.admits(l))
            .filter_map(|l| l.next_ready_at())
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::super::retry::RetryPolicy;
    use super::super::testing::{
        MS, ManualClock, NEVER, Script, dispatch_with, joining, joining_in, listener, settle,
        spawn, threaded,
    };
    use super::*;
    use crate::dispatch::queue::tests::add;
    use std::collections::{HashMap, HashSet};
    use std::sync::mpsc;
    use std::time::Duration;

    #[test]
    fn nothing_is_delivered_until_every_listeners_initial_list_is_in() {
        let clock = ManualClock::new();
        let dispatch = dispatch_with(RetryPolicy::default(), &clock);
        let pods = joining(&dispatch, Delivery::EveryEvent);
        let namespaces = joining(&dispatch, Delivery::Coalesced);
        let mut script = Script::default();
        let mut cursor = Cursor::default();
        let t0 = clock.now();
        pods.push(add("a", 1, true));
        pods.push_synced();
        pods.push(add("b", 1, false));
        namespaces.push(add("n", 1, true));
        clock.set(t0 + 40 * MS);
        assert_eq!(
            settle(&dispatch, &mut script, &mut cursor),
            (Vec::new(), None),
            "the Pods are in, the Namespaces still listing"
        );
        let waiting = dispatch
            .caches
            .status(&dispatch.listeners(), dispatch.now());
        assert_eq!(
            (waiting.synced, waiting.waiting_for, waiting.waited_ms),
            (false, vec!["pods".to_owned()], 40),
            "both listeners are for pods in this test; the second is the one waited for"
        );
        namespaces.push_synced();
        clock.set(t0 + 50 * MS);
        let (calls, _) = settle(&dispatch, &mut script, &mut cursor);
        assert_eq!(calls, ["add n/a@1", "add n/n@1", "add n/b@1"]);
        let synced = dispatch
            .caches
            .status(&dispatch.listeners(), dispatch.now());
        assert_eq!(
            (synced.synced, synced.waiting_for, synced.waited_ms),
            (true, Vec::new(), 50)
        );
        assert!(pods.has_synced() && namespaces.has_synced());
    }

    #[test]
    fn a_cluster_still_listing_holds_back_only_its_own_listeners() {
        let clock = ManualClock::new();
        let dispatch = dispatch_with(RetryPolicy::default(), &clock);
        let home = joining(&dispatch, Delivery::EveryEvent);
        let west = joining_in(&dispatch, Delivery::EveryEvent, "west");
        let mut script = Script::default();
        let mut cursor = Cursor::default();
        home.push(add("a", 1, true));
        west.push(add("w", 1, true));
        assert_eq!(
            settle(&dispatch, &mut script, &mut cursor),
            (Vec::new(), None),
            "neither cluster's list is in"
        );
        home.push_synced();
        home.push(add("b", 1, false));
        let (calls, next) = settle(&dispatch, &mut script, &mut cursor);
        assert_eq!(
            calls,
            ["add n/a@1", "add n/b@1"],
            "the default cluster delivers"
        );
        assert_eq!(next, None, "west's waiting add is not waited on");
        let status = dispatch
            .caches
            .status(&dispatch.listeners(), dispatch.now());
        assert_eq!(
            (status.synced, status.waiting_for),
            (false, vec!["pods in cluster west".to_owned()])
        );
        west.push_synced();
        let (calls, _) = settle(&dispatch, &mut script, &mut cursor);
        assert_eq!(calls, ["add n/w@1"]);
    }

    #[test]
    fn a_drain_ends_with_only_waiting_keys_left_instead_of_waiting_them_out() {
        let dispatch = threaded(Duration::from_secs(1000));
        let pods = listener(&dispatch, Delivery::Coalesced);
        let script = Script {
            failing: HashSet::from(["n/a".to_owned()]),
            requeue: HashMap::from([("n/b".to_owned(), Duration::from_secs(3600))]),
            ..Script::default()
        };
        pods.push(add("a", 1, false));
        pods.push(add("b", 1, false));
        dispatch.set_mode(RunMode::Draining);
        let (thread, calls) = spawn(dispatch.clone(), script);
        let mut seen: Vec<String> = (0..2).map(|_| calls.recv_timeout(NEVER).unwrap()).collect();
        seen.sort();
        assert_eq!(seen, ["add n/a@1", "add n/b@1"]);
        // The thread ends: it does not wait 1000 s for a, nor an hour for b.
        assert_eq!(
            calls.recv_timeout(NEVER),
            Err(mpsc::RecvTimeoutError::Disconnected)
        );
        thread.join().unwrap();
        assert_eq!(pods.delayed(), 2, "left behind, dropped with the listener");
    }
}
