//! `queue`: how failed calls are retried, in each delivery mode; and
//! `shutdown`: how long the workers may drain their queues.

use super::{KeyBackoff, RetryPolicy};
use serde::Deserialize;
use std::time::Duration;

/// `queue`: retries of failed calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct QueueConfig {
    /// Every-event delivery: retries in place before a notification is skipped.
    pub max_retries: u32,
    /// Every-event delivery: first retry delay (doubles each retry).
    #[serde(with = "crate::units::duration")]
    pub initial_backoff: Duration,
    /// Every-event delivery: longest retry delay.
    #[serde(with = "crate::units::duration")]
    pub max_backoff: Duration,
    /// Coalesced delivery: the per-key backoff of its work queue.
    pub coalesced: CoalescedQueueConfig,
}

impl Default for QueueConfig {
    fn default() -> Self {
        let retry = RetryPolicy::default();
        QueueConfig {
            max_retries: retry.max_retries,
            initial_backoff: retry.initial_backoff,
            max_backoff: retry.max_backoff,
            coalesced: CoalescedQueueConfig::default(),
        }
    }
}

/// `queue.coalesced`: client-go's per-key failure backoff, and when a key
/// is given up on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct CoalescedQueueConfig {
    /// Wait after a key's first failure; doubles with each further one.
    #[serde(with = "crate::units::duration")]
    pub base_delay: Duration,
    /// Longest wait.
    #[serde(with = "crate::units::duration")]
    pub max_delay: Duration,
    /// Retries of a key before its notification is skipped.
    pub max_retries: u32,
}

impl Default for CoalescedQueueConfig {
    fn default() -> Self {
        let backoff = KeyBackoff::default();
        CoalescedQueueConfig {
            base_delay: backoff.base_delay,
            max_delay: backoff.max_delay,
            max_retries: backoff.max_retries,
        }
    }
}

impl QueueConfig {
    /// Checks the backoffs; the key at fault is relative to `queue`.
    pub fn validate(&self) -> Result<(), crate::yaml::Invalid> {
        if self.initial_backoff > self.max_backoff {
            return Err(crate::yaml::Invalid::new(
                "initialBackoff",
                "is above queue.maxBackoff",
            ));
        }
        let coalesced = &self.coalesced;
        if coalesced.base_delay < Duration::from_millis(1) {
            return Err(crate::yaml::Invalid::new(
                "coalesced.baseDelay",
                "must be at least 1ms: a failing key would be retried without pause",
            ));
        }
        if coalesced.base_delay > coalesced.max_delay {
            return Err(crate::yaml::Invalid::new(
                "coalesced.baseDelay",
                "is above queue.coalesced.maxDelay",
            ));
        }
        Ok(())
    }

    /// The retry policy workers follow.
    pub fn retry_policy(&self) -> RetryPolicy {
        let coalesced = &self.coalesced;
        RetryPolicy {
            max_retries: self.max_retries,
            initial_backoff: self.initial_backoff,
            max_backoff: self.max_backoff,
            coalesced: KeyBackoff {
                base_delay: coalesced.base_delay,
                max_delay: coalesced.max_delay,
                max_retries: coalesced.max_retries,
            },
        }
    }
}

/// `shutdown`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct ShutdownConfig {
    /// How long the workers may drain their queues after SIGTERM.
    #[serde(with = "crate::units::duration")]
    pub grace_period: Duration,
}

impl Default for ShutdownConfig {
    fn default() -> Self {
        ShutdownConfig {
            grace_period: Duration::from_secs(10),
        }
    }
}
