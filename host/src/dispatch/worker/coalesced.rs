//! Coalesced delivery: one call per ready key; a failure or a requeue
//! request hands the notification back to its queue.

use super::call::{Calls, timed_call};
use super::report::add_millis;
use super::state::Dispatch;
use crate::dispatch::feed::Outcome;
use crate::dispatch::listener::Listener;
use crate::dispatch::queue::{Retry, later};
use crate::informer::Notification;
use crate::plugin::EventContext;
use std::sync::atomic::Ordering;
use std::time::Duration;

impl Dispatch {
    /// Delivers one coalesced notification once; a failure hands it back to
    /// its queue to wait for its key's backoff (or gives up on it), a
    /// requeue request hands it back to wait for the delay asked.
    pub(super) async fn deliver_coalesced(
        &self,
        calls: &mut impl Calls,
        listener: &Listener,
        notification: Notification,
        ctx: &EventContext,
    ) {
        let event = notification.kind();
        let (result, took) = timed_call(calls, listener, &notification, ctx).await;
        let now = self.now();
        let err = match result {
            Ok(handled) => {
                listener.stats.delivered.fetch_add(1, Ordering::Relaxed);
                let requeue_at = handled.requeue_after.map(|asked| {
                    listener.stats.requeued.fetch_add(1, Ordering::Relaxed);
                    later(now, self.retry.requeue_delay(asked))
                });
                let failures = listener
                    .coalesced(|queue| queue.handled(notification, requeue_at))
                    .unwrap_or(0);
                self.report.announce(
                    listener,
                    event,
                    ctx,
                    Outcome::Delivered,
                    failures + 1,
                    took,
                    None,
                );
                return;
            }
            Err(err) => err,
        };
        let retry = listener
            .coalesced(|queue| queue.failed(notification, now, &self.retry.coalesced))
            .unwrap_or(Retry::GiveUp { failures: 1 });
        let (failures, delay) = match retry {
            Retry::GiveUp { failures } => {
                self.report
                    .give_up(listener, event, ctx, failures, took, &err);
                return;
            }
            Retry::Backoff { failures, delay } => (failures, delay),
            Retry::Merged { failures } => (failures, Duration::ZERO),
        };
        // The status is written before the counters move, so whoever sees a
        // count also sees the failure that made it.
        self.report
            .record_failure(listener, event, &ctx.key, &err, failures, Some(delay));
        listener.stats.retried.fetch_add(1, Ordering::Release);
        add_millis(&listener.stats.backoff_millis, delay);
        self.report.announce(
            listener,
            event,
            ctx,
            Outcome::Retrying,
            failures,
            took,
            Some(&err),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::super::retry::RetryPolicy;
    use super::super::scheduler::Cursor;
    use super::super::state::Dispatch;
    use super::super::testing::{
        MS, ManualClock, Script, count, dispatch_with, joining, listener, settle,
    };
    use crate::dispatch::queue::KeyBackoff;
    use crate::dispatch::queue::tests::{add, update};
    use crate::plugin::Delivery;
    use std::collections::{HashMap, HashSet};
    use std::time::{Duration, Instant};

    #[test]
    fn other_keys_flow_while_one_keeps_failing_and_it_is_retried_after_its_backoff() {
        let clock = ManualClock::new();
        let dispatch = dispatch_with(RetryPolicy::default(), &clock);
        let pods = listener(&dispatch, Delivery::Coalesced);
        let mut script = Script {
            failing: HashSet::from(["n/a".to_owned()]),
            ..Script::default()
        };
        let mut cursor = Cursor::default();
        for name in ["a", "b", "c"] {
            pods.push(add(name, 1, false));
        }
        let t0 = clock.now();
        let (calls, next) = settle(&dispatch, &mut script, &mut cursor);
        assert_eq!(calls, ["add n/a@1", "add n/b@1", "add n/c@1"]);
        assert_eq!(next, Some(t0 + 5 * MS), "a waits 5 ms");
        assert_eq!((pods.depth(), pods.delayed()), (1, 1));

        // Each failure of a doubles its wait; a key pushed meanwhile goes
        // at once.
        let mut waits = Vec::new();
        let mut now = t0;
        for round in 0..4u32 {
            let ready_at = next_ready(&dispatch);
            pods.push(add(&format!("d{round}"), 1, false));
            let (calls, _) = settle(&dispatch, &mut script, &mut cursor);
            assert_eq!(calls, [format!("add n/d{round}@1")], "not a: it waits");
            waits.push((ready_at - now).as_millis());
            now = ready_at;
            clock.set(now);
            let (calls, _) = settle(&dispatch, &mut script, &mut cursor);
            assert_eq!(calls, ["add n/a@1"]);
        }
        assert_eq!(waits, [5, 10, 20, 40]);

        // Once it succeeds its count is forgotten.
        script.failing.clear();
        clock.set(next_ready(&dispatch));
        assert_eq!(
            settle(&dispatch, &mut script, &mut cursor),
            (vec!["add n/a@1".to_owned()], None)
        );
        let stats = &pods.stats;
        assert_eq!(
            (
                count(&stats.failed),
                count(&stats.retried),
                count(&stats.delivered),
                count(&stats.skipped)
            ),
            (5, 5, 7, 0)
        );
        assert_eq!(count(&stats.backoff_millis), 5 + 10 + 20 + 40 + 80);
        assert!(
            !dispatch.report.last_error().unwrap().skipped,
            "retried, not skipped"
        );
        pods.push(update("a", 1, 2));
        let (calls, _) = settle(&dispatch, &mut script, &mut cursor);
        assert_eq!(calls, ["update n/a@2"]);
        script.failing.insert("n/a".into());
        let now = clock.now();
        pods.push(update("a", 2, 3));
        let (_, next) = settle(&dispatch, &mut script, &mut cursor);
        assert_eq!(next, Some(now + 5 * MS), "the backoff starts over");
    }

    fn next_ready(dispatch: &Dispatch) -> Instant {
        dispatch
            .next_ready_at(&crate::dispatch::gate::Admitted::All)
            .expect("a key waits")
    }

    #[test]
    fn an_initial_key_given_up_on_degrades_the_listener_and_only_then_is_it_synced() {
        let clock = ManualClock::new();
        let retry = RetryPolicy {
            coalesced: KeyBackoff {
                max_retries: 2,
                ..KeyBackoff::default()
            },
            ..RetryPolicy::default()
        };
        let dispatch = dispatch_with(retry, &clock);
        let pods = joining(&dispatch, Delivery::Coalesced);
        let mut script = Script {
            failing: HashSet::from(["n/a".to_owned()]),
            ..Script::default()
        };
        let mut cursor = Cursor::default();
        pods.push(add("a", 1, true));
        pods.push(add("b", 1, true));
        pods.push_synced();
        pods.push(add("c", 1, false));
        let (calls, _) = settle(&dispatch, &mut script, &mut cursor);
        assert_eq!(calls, ["add n/a@1", "add n/b@1", "add n/c@1"]);
        assert!(
            !pods.has_synced(),
            "a, of the initial list, waits for a retry"
        );
        assert!(!pods.initial_list_settled());
        clock.set(next_ready(&dispatch));
        settle(&dispatch, &mut script, &mut cursor);
        assert!(!pods.has_synced());
        clock.set(next_ready(&dispatch));
        let (calls, next) = settle(&dispatch, &mut script, &mut cursor);
        assert_eq!((calls, next), (vec!["add n/a@1".to_owned()], None));
        assert_eq!(count(&pods.stats.skipped), 1);
        assert!(dispatch.report.last_error().unwrap().skipped);
        let degraded = pods.degraded().expect("degraded");
        assert!(
            degraded.contains("skipped add n/a of its initial list after 3 failed attempts"),
            "{degraded}"
        );
        assert!(pods.has_synced() && pods.initial_list_settled());
    }

    #[test]
    fn requeue_after_delivers_the_key_again_after_its_delay_unless_a_newer_event_comes_first() {
        let clock = ManualClock::new();
        let dispatch = dispatch_with(RetryPolicy::default(), &clock);
        let pods = joining(&dispatch, Delivery::Coalesced);
        let mut script = Script {
            requeue: HashMap::from([("n/a".to_owned(), 30 * MS)]),
            ..Script::default()
        };
        let mut cursor = Cursor::default();
        pods.push(add("a", 1, true));
        pods.push_synced();
        let t0 = clock.now();
        let (calls, next) = settle(&dispatch, &mut script, &mut cursor);
        assert_eq!(
            (calls, next),
            (vec!["add n/a@1".to_owned()], Some(t0 + 30 * MS))
        );
        assert!(
            pods.has_synced(),
            "a requeued key was handled: it does not hold readiness"
        );
        assert_eq!((pods.depth(), pods.delayed()), (1, 1));
        assert_eq!(count(&pods.stats.requeued), 1);

        clock.set(t0 + 29 * MS);
        assert_eq!(
            settle(&dispatch, &mut script, &mut cursor).0,
            Vec::<String>::new()
        );
        clock.set(t0 + 30 * MS);
        let (calls, next) = settle(&dispatch, &mut script, &mut cursor);
        assert_eq!(
            (calls, next),
            (vec!["add n/a@1".to_owned()], Some(t0 + 60 * MS))
        );

        // A newer event before the requeue is due: delivered at once, once.
        script.requeue.clear();
        pods.push(update("a", 1, 2));
        let (calls, next) = settle(&dispatch, &mut script, &mut cursor);
        assert_eq!((calls, next), (vec!["update n/a@2".to_owned()], None));
        clock.set(t0 + Duration::from_secs(3600));
        assert_eq!(
            settle(&dispatch, &mut script, &mut cursor).0,
            Vec::<String>::new()
        );
        assert_eq!((pods.depth(), count(&pods.stats.requeued)), (0, 2));
    }
}
