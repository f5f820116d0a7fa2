//! How failed calls are retried: in place for every-event delivery, per key
//! for coalesced delivery, and how late a requested requeue may come.

use crate::dispatch::queue::{KeyBackoff, exponential};
use std::time::Duration;

/// How failed calls are retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Every-event delivery: retries in place after the first failed
    /// attempt, before the notification is skipped.
    pub max_retries: u32,
    /// Every-event delivery: delay before the first retry; doubles with each
    /// further one.
    pub initial_backoff: Duration,
    /// Every-event delivery: longest delay between attempts, and longest
    /// wait after skips.
    pub max_backoff: Duration,
    /// Coalesced delivery: the per-key backoff and its bound.
    pub coalesced: KeyBackoff,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(30),
            coalesced: KeyBackoff::default(),
        }
    }
}

impl RetryPolicy {
    /// The delay before in-place retry number `attempt` (1-based).
    pub fn backoff(&self, attempt: u32) -> Duration {
        exponential(
            self.initial_backoff,
            self.max_backoff,
            attempt.saturating_sub(1),
        )
    }

    /// The delay a coalesced notification is requeued after when its
    /// handler asked for `requested`: at least the coalesced base delay (a
    /// handler asking for 0 cannot spin its key faster than a failing one
    /// is retried), at most [`MAX_REQUEUE_DELAY`].
    pub fn requeue_delay(&self, requested: Duration) -> Duration {
        requested
            .max(self.coalesced.base_delay)
            .min(MAX_REQUEUE_DELAY)
    }
}

/// The longest requeue-after honoured (a day); longer requests are
/// shortened to it.
pub const MAX_REQUEUE_DELAY: Duration = Duration::from_secs(24 * 60 * 60);

#[cfg(test)]
mod tests {
    use super::super::testing::MS;
    use super::*;

    #[test]
    fn requeue_delays_are_floored_at_the_base_delay_and_capped_at_a_day() {
        let retry = RetryPolicy::default();
        assert_eq!(retry.requeue_delay(Duration::ZERO), 5 * MS);
        assert_eq!(
            retry.requeue_delay(Duration::from_secs(90)),
            Duration::from_secs(90)
        );
        assert_eq!(retry.requeue_delay(Duration::MAX), MAX_REQUEUE_DELAY);
    }

    #[test]
    fn in_place_retry_delays_keep_their_schedule() {
        let retry = RetryPolicy::default();
        let delays: Vec<u128> = (1..=10).map(|n| retry.backoff(n).as_millis()).collect();
        assert_eq!(
            delays,
            [100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 30000]
        );
        assert_eq!(retry.backoff(u32::MAX), Duration::from_secs(30));
    }
}
