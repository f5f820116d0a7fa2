//! Every-event delivery: notifications in the order they were distributed,
//! a failed one retried in place, then skipped.

use super::call::{Calls, timed_call};
use super::report::add_millis;
use super::state::Dispatch;
use crate::dispatch::feed::Outcome;
use crate::dispatch::listener::Listener;
use crate::informer::Notification;
use crate::plugin::EventContext;
use std::sync::atomic::Ordering;

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
    /// Delivers one every-event notification with its retries, in place.
    pub(super) async fn deliver_in_order(
        &self,
        calls: &mut impl Calls,
        listener: &Listener,
        notification: &Notification,
        ctx: &EventContext,
    ) -> Delivered {
        let event = notification.kind();
        let mut attempt = 0u32;
        loop {
            let (result, took) = timed_call(calls, listener, notification, ctx).await;
            let err = match result {
                Ok(handled) => {
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
                Err(err) => err,
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
    use super::super::testing::{MS, ManualClock, Script, count, dispatch_with, listener, settle};
    use crate::dispatch::queue::tests::{add, update};
    use crate::plugin::Delivery;
    use std::collections::HashMap;

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
