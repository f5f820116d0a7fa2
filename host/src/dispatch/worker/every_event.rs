//! Every-event delivery: notifications in the order they were distributed,
//! one per call or in batches, a failed one retried in place, then skipped.

use super::call::{Calls, Contexts, call_span, in_span, timed_batch, timed_call};
use super::report::add_millis;
use super::state::Dispatch;
use crate::dispatch::feed::Outcome;
use crate::dispatch::listener::Listener;
use crate::informer::Notification;
use crate::plugin::{BatchError, CallError, EventContext};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// How the delivery of an every-event notification ended.
pub(super) enum Delivered {
    /// Handled.
    Ok,
    /// Skipped after its last retry.
    Skipped,
    /// Told to stop during a backoff.
    Stopped,
}

impl Dispatch {
    /// Delivers one every-event notification with its retries, in place,
    /// after the pause `skips` (notifications skipped in a row before it)
    /// calls for; counts it into `skips`. With `failed`, its first attempt
    /// was already made (in a batch) and failed with that error after
    /// that long.
    pub(super) async fn deliver_one_in_order(
        &self,
        calls: &mut impl Calls,
        contexts: &mut Contexts,
        skips: &mut u32,
        listener: &Arc<Listener>,
        notification: &Notification,
        failed: Option<(CallError, Duration)>,
    ) -> Delivered {
        if *skips > 0
            && !self
                .pause(self.retry.backoff(*skips + self.retry.max_retries))
                .await
        {
            return Delivered::Stopped;
        }
        let ctx = contexts.for_notification(listener, notification);
        let span = call_span(&self.name, listener, ctx, notification.kind());
        let delivery = self.deliver_in_order(calls, listener, notification, ctx, failed);
        let delivered = in_span(span, delivery).await;
        match delivered {
            Delivered::Ok => *skips = 0,
            Delivered::Skipped => *skips = skips.saturating_add(1),
            Delivered::Stopped => {}
        }
        delivered
    }

    /// Delivers every-event notifications of one listener, in order, in
    /// calls of as many as `batch` has (at most the plugin's
    /// [`Calls::max_batch`]). A notification the plugin failed is retried
    /// in place on its own, as [`Self::deliver_one_in_order`] does, and
    /// those after it go on in a batch; a call that faulted is made again
    /// one notification at a time, so the fault is pinned to the one that
    /// causes it (the lost instance may have handled some before it: they
    /// are delivered again, as after any fault).
    pub(super) async fn deliver_batch_in_order(
        &self,
        calls: &mut impl Calls,
        contexts: &mut Contexts,
        skips: &mut u32,
        listener: &Arc<Listener>,
        batch: &[Notification],
    ) -> Delivered {
        let mut rest = batch;
        let mut delivered = Delivered::Ok;
        // After a fault, the rest of the batch goes one at a time.
        let mut one_at_a_time = false;
        while let [first, ..] = rest {
            // A lone notification, and skips in a row (which slow
            // every-event delivery down one notification at a time), go
            // on their own.
            if rest.len() == 1 || *skips > 0 || one_at_a_time {
                delivered = self
                    .deliver_one_in_order(calls, contexts, skips, listener, first, None)
                    .await;
                if matches!(delivered, Delivered::Stopped) {
                    return delivered;
                }
                rest = &rest[1..];
                continue;
            }
            let ctx = contexts.for_notification(listener, first);
            let span = call_span(&self.name, listener, ctx, "batch");
            let (result, took) = in_span(span, timed_batch(calls, listener, contexts, rest)).await;
            let (handled, failure) = match result {
                Ok(handled) => {
                    if handled.requeue_after.is_some() {
                        self.ignore_requeue(listener);
                    }
                    (rest.len(), None)
                }
                Err(BatchError {
                    handled: Some(handled),
                    error,
                }) => (handled, Some(error)),
                Err(BatchError {
                    handled: None,
                    error,
                }) => {
                    let key = &contexts.for_notification(listener, first).key;
                    self.report.record_failure(
                        listener,
                        "batch",
                        key,
                        &error,
                        1,
                        Some(Duration::ZERO),
                    );
                    one_at_a_time = true;
                    continue;
                }
            };
            let share = took / u32::try_from(rest.len()).unwrap_or(u32::MAX);
            for notification in &rest[..handled] {
                listener.stats.delivered.fetch_add(1, Ordering::Relaxed);
                let ctx = contexts.for_notification(listener, notification);
                let event = notification.kind();
                self.report
                    .announce(listener, event, ctx, Outcome::Delivered, 1, share, None);
            }
            let Some(error) = failure else {
                return Delivered::Ok;
            };
            let failing = &rest[handled];
            delivered = self
                .deliver_one_in_order(
                    calls,
                    contexts,
                    skips,
                    listener,
                    failing,
                    Some((error, share)),
                )
                .await;
            if matches!(delivered, Delivered::Stopped) {
                return delivered;
            }
            rest = &rest[handled + 1..];
        }
        delivered
    }

    /// Delivers one every-event notification with its retries, in place;
    /// with `failed`, its first attempt was already made and failed so.
    async fn deliver_in_order(
        &self,
        calls: &mut impl Calls,
        listener: &Listener,
        notification: &Notification,
        ctx: &EventContext,
        mut failed: Option<(CallError, Duration)>,
    ) -> Delivered {
        let event = notification.kind();
        let mut attempt = 0u32;
        loop {
            let (err, took) = match failed.take() {
                Some(failed) => failed,
                None => match timed_call(calls, listener, notification, ctx).await {
                    (Ok(handled), took) => {
                        listener.stats.delivered.fetch_add(1, Ordering::Relaxed);
                        if handled.requeue_after.is_some() {
                            self.ignore_requeue(listener);
                        }
                        self.report.announce(
                            listener,
                            event,
                            ctx,
                            Outcome::Delivered,
                            attempt + 1,
                            took,
                            None,
                        );
                        return Delivered::Ok;
                    }
                    (Err(err), took) => (err, took),
                },
            };
            if attempt >= self.retry.max_retries {
                self.report
                    .give_up(listener, event, ctx, attempt + 1, took, &err);
                return Delivered::Skipped;
            }
            attempt += 1;
            let delay = self.retry.backoff(attempt);
            listener.stats.retried.fetch_add(1, Ordering::Relaxed);
            add_millis(&listener.stats.backoff_millis, delay);
            self.report
                .record_failure(listener, event, &ctx.key, &err, attempt, Some(delay));
            if !self.pause(delay).await {
                return Delivered::Stopped;
            }
        }
    }

    /// Counts a requeue request every-event delivery cannot honour, and says
    /// so once per listener.
    fn ignore_requeue(&self, listener: &Listener) {
        listener
            .stats
            .requeues_ignored
            .fetch_add(1, Ordering::Relaxed);
        if listener.first_ignored_requeue() {
            tracing::warn!(
                plugin = &*self.name,
                resource = listener.resource(),
                "the plugin asked for a notification to be delivered again later, which \
                 every-event delivery cannot do without breaking its order: ignored (this \
                 listener's further requests are only counted). Requeue needs `delivery: \
                 coalesced` in the subscription"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::retry::RetryPolicy;
    use super::super::scheduler::Cursor;
    use super::super::testing::{
        MS, ManualClock, Script, count, dispatch_with, joining, listener, settle,
    };
    use crate::dispatch::queue::tests::{add, update};
    use crate::plugin::Delivery;
    use std::collections::{HashMap, HashSet};
    use std::time::Duration;

    /// Retries at once, at most `max_retries` times.
    fn retrying(max_retries: u32) -> RetryPolicy {
        RetryPolicy {
            max_retries,
            initial_backoff: Duration::ZERO,
            max_backoff: Duration::ZERO,
            ..RetryPolicy::default()
        }
    }

    fn adds(keys: &str) -> Vec<String> {
        keys.chars().map(|k| format!("add n/{k}@1")).collect()
    }

    #[test]
    fn a_batch_carries_what_is_ready_in_order_up_to_the_plugins_max_and_stops_at_the_sync_marker() {
        let clock = ManualClock::new();
        let dispatch = dispatch_with(RetryPolicy::default(), &clock);
        let pods = joining(&dispatch, Delivery::EveryEvent);
        let nodes = listener(&dispatch, Delivery::Coalesced);
        let mut script = Script {
            max_batch: 3,
            ..Script::default()
        };
        let mut cursor = Cursor::default();
        for key in ["a", "b", "c", "d"] {
            pods.push(add(key, 1, true));
        }
        pods.push_synced();
        pods.push(add("e", 1, false));
        nodes.push(add("x", 1, false));
        nodes.push(add("y", 1, false));
        let (calls, next) = settle(&dispatch, &mut script, &mut cursor);
        assert_eq!(next, None);
        let mut pod_calls = calls.clone();
        pod_calls.retain(|call| !call.contains("n/x") && !call.contains("n/y"));
        assert_eq!(pod_calls, adds("abcde"), "in the order distributed");
        assert_eq!(
            script.batches,
            [3],
            "a, b and c together; d alone (the marker ends its batch), e alone (nothing \
             followed it), and coalesced keys one per call"
        );
        assert!(pods.has_synced());
        assert_eq!(count(&pods.stats.delivered), 5);
    }

    #[test]
    fn a_failure_in_a_batch_retries_that_notification_alone_and_the_rest_goes_on() {
        let clock = ManualClock::new();
        let dispatch = dispatch_with(retrying(2), &clock);
        let pods = listener(&dispatch, Delivery::EveryEvent);
        let mut script = Script {
            max_batch: 8,
            failing: HashSet::from(["n/b".to_owned()]),
            ..Script::default()
        };
        let mut cursor = Cursor::default();
        for key in ["a", "b", "c", "d", "e"] {
            pods.push(add(key, 1, false));
        }
        let (calls, _) = settle(&dispatch, &mut script, &mut cursor);
        assert_eq!(
            calls,
            adds("abbbcde"),
            "a handled in the batch is not delivered again; b is retried twice alone and \
             skipped; c goes alone (a skip slows delivery down), then d and e together"
        );
        assert_eq!(script.batches, [5, 2]);
        let stats = &pods.stats;
        assert_eq!(
            (
                count(&stats.delivered),
                count(&stats.failed),
                count(&stats.retried),
                count(&stats.skipped)
            ),
            (4, 3, 2, 1)
        );
        assert!(dispatch.report.last_error().unwrap().skipped);
    }

    #[test]
    fn a_batch_call_that_traps_is_made_again_one_notification_at_a_time() {
        let clock = ManualClock::new();
        let dispatch = dispatch_with(retrying(1), &clock);
        let pods = listener(&dispatch, Delivery::EveryEvent);
        let mut script = Script {
            max_batch: 8,
            trapping: HashSet::from(["n/b".to_owned()]),
            ..Script::default()
        };
        let mut cursor = Cursor::default();
        for key in ["a", "b", "c"] {
            pods.push(add(key, 1, false));
        }
        let (calls, _) = settle(&dispatch, &mut script, &mut cursor);
        assert_eq!(
            calls,
            adds("ababbc"),
            "which of the batch the lost instance handled is unknown: a is delivered again, \
             b traps alone twice and is skipped, c follows"
        );
        assert_eq!(script.batches, [3]);
        let stats = &pods.stats;
        assert_eq!(
            (
                count(&stats.delivered),
                count(&stats.failed),
                count(&stats.skipped)
            ),
            (2, 3, 1)
        );
    }

    #[test]
    fn an_instance_replaced_for_its_memory_is_counted_for_the_listener_whose_call_it_followed() {
        let clock = ManualClock::new();
        let dispatch = dispatch_with(RetryPolicy::default(), &clock);
        let pods = listener(&dispatch, Delivery::EveryEvent);
        let mut script = Script {
            retiring: HashSet::from(["n/b".to_owned(), "n/d".to_owned()]),
            ..Script::default()
        };
        let mut cursor = Cursor::default();
        for key in ["a", "b", "c", "d"] {
            pods.push(add(key, 1, false));
        }
        let (calls, _) = settle(&dispatch, &mut script, &mut cursor);
        assert_eq!(
            calls,
            adds("abcd"),
            "a replacement is no failure: nothing is retried"
        );
        let stats = &pods.stats;
        assert_eq!(
            (
                count(&stats.retirements),
                count(&stats.delivered),
                count(&stats.failed)
            ),
            (2, 4, 0)
        );
        // In batches too.
        let mut script = Script {
            max_batch: 8,
            retiring: HashSet::from(["n/f".to_owned()]),
            ..Script::default()
        };
        for key in ["e", "f", "g"] {
            pods.push(add(key, 1, false));
        }
        settle(&dispatch, &mut script, &mut cursor);
        assert_eq!(script.batches, [3]);
        assert_eq!(count(&stats.retirements), 3);
    }

    #[test]
    fn every_event_delivery_ignores_requeue_requests_and_counts_them() {
        let clock = ManualClock::new();
        let dispatch = dispatch_with(RetryPolicy::default(), &clock);
        let pods = listener(&dispatch, Delivery::EveryEvent);
        let mut script = Script {
            requeue: HashMap::from([("n/a".to_owned(), 30 * MS)]),
            ..Script::default()
        };
        let mut cursor = Cursor::default();
        pods.push(add("a", 1, false));
        pods.push(update("a", 1, 2));
        let (calls, next) = settle(&dispatch, &mut script, &mut cursor);
        assert_eq!(calls, ["add n/a@1", "update n/a@2"]);
        assert_eq!(next, None, "nothing waits");
        assert_eq!(
            (
                count(&pods.stats.requeues_ignored),
                count(&pods.stats.requeued)
            ),
            (2, 0)
        );
        assert!(!pods.first_ignored_requeue(), "the warning was logged once");
    }
}
