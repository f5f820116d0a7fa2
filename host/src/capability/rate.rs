//! The per-plugin rate limit on API requests: a token bucket with
//! client-go's semantics (`golang.org/x/time/rate`, as `rest.Config`'s
//! `QPS` and `Burst` use it): the bucket holds up to `burst` tokens, refills
//! at `qps` per second, and a request that finds it empty reserves the next
//! token and waits for it, unless that wait would outlast the handler
//! call's deadline, in which case the request is refused at once and the
//! reservation given back.

use serde::Deserialize;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// client-go's default `rest.Config.QPS`.
pub const DEFAULT_QPS: f64 = 5.0;
/// client-go's default `rest.Config.Burst`.
pub const DEFAULT_BURST: u32 = 10;

/// A rate limit that admits nothing; each variant holds the value at fault.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum RateLimitError {
    /// `qps` is zero, negative or not a number.
    #[error("rateLimit.qps must be a positive number, not {0}")]
    Qps(f64),
    /// `burst` is zero.
    #[error("rateLimit.burst must be at least 1")]
    Burst,
}

/// `plugins.<name>.rateLimit`: the plugin's API request rate.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct RateLimit {
    /// Sustained requests per second (client-go's default 5).
    pub qps: f64,
    /// Requests allowed at once after a quiet spell (client-go's default 10).
    pub burst: u32,
}

impl Default for RateLimit {
    fn default() -> Self {
        RateLimit {
            qps: DEFAULT_QPS,
            burst: DEFAULT_BURST,
        }
    }
}

impl RateLimit {
    /// Checks the limit can admit anything.
    pub fn validate(&self) -> Result<(), RateLimitError> {
        if !(self.qps.is_finite() && self.qps > 0.0) {
            return Err(RateLimitError::Qps(self.qps));
        }
        if self.burst == 0 {
            return Err(RateLimitError::Burst);
        }
        Ok(())
    }
}

/// A token bucket.
#[derive(Debug)]
pub struct TokenBucket {
    limit: RateLimit,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    /// Tokens in the bucket as of `at`; negative while reservations wait.
    tokens: f64,
    at: Instant,
}

/// The wait a request would need is longer than it may wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitTooLong(pub Duration);

impl TokenBucket {
    /// A full bucket.
    pub fn new(limit: RateLimit) -> Self {
        TokenBucket {
            limit,
            state: Mutex::new(State {
                tokens: f64::from(limit.burst),
                at: Instant::now(),
            }),
        }
    }

    /// The limit it enforces.
    pub fn limit(&self) -> RateLimit {
        self.limit
    }

    /// Takes one token at `now`: the wait until it is due (zero when the
    /// bucket had one), or `WaitTooLong` with that wait, taking nothing,
    /// when it is longer than `max_wait`.
    pub fn reserve(&self, now: Instant, max_wait: Duration) -> Result<Duration, WaitTooLong> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let elapsed = now.saturating_duration_since(state.at).as_secs_f64();
        let refilled = (state.tokens + elapsed * self.limit.qps).min(f64::from(self.limit.burst));
        let left = refilled - 1.0;
        let wait = if left >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-left / self.limit.qps)
        };
        if wait > max_wait {
            return Err(WaitTooLong(wait));
        }
        state.tokens = left;
        state.at = now.max(state.at);
        Ok(wait)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bucket(qps: f64, burst: u32) -> TokenBucket {
        TokenBucket::new(RateLimit { qps, burst })
    }

    #[test]
    fn a_full_bucket_admits_its_burst_then_paces_at_qps() {
        let bucket = bucket(10.0, 3);
        let now = Instant::now() + Duration::from_secs(1);
        let long = Duration::from_secs(60);
        for _ in 0..3 {
            assert_eq!(bucket.reserve(now, long), Ok(Duration::ZERO));
        }
        // The fourth waits one token's time (100 ms), the fifth two.
        let fourth = bucket.reserve(now, long).unwrap();
        let fifth = bucket.reserve(now, long).unwrap();
        assert!((fourth.as_secs_f64() - 0.1).abs() < 1e-6, "{fourth:?}");
        assert!((fifth.as_secs_f64() - 0.2).abs() < 1e-6, "{fifth:?}");
        // Half a second later the two reservations are paid and three tokens
        // came back... of which the bucket holds the burst at most.
        let later = now + Duration::from_millis(500);
        assert_eq!(bucket.reserve(later, long), Ok(Duration::ZERO));
    }

    #[test]
    fn a_wait_longer_than_allowed_is_refused_and_takes_nothing() {
        let bucket = bucket(1.0, 1);
        let now = Instant::now() + Duration::from_secs(1);
        assert_eq!(bucket.reserve(now, Duration::ZERO), Ok(Duration::ZERO));
        let refused = bucket.reserve(now, Duration::from_millis(500));
        assert_eq!(refused, Err(WaitTooLong(Duration::from_secs(1))));
        // The refusal reserved nothing: the next caller waits one second, not two.
        assert_eq!(
            bucket.reserve(now, Duration::from_secs(5)),
            Ok(Duration::from_secs(1))
        );
    }

    #[test]
    fn limits_that_admit_nothing_are_refused() {
        assert_eq!(
            RateLimit { qps: 0.0, burst: 1 }
                .validate()
                .unwrap_err()
                .to_string(),
            "rateLimit.qps must be a positive number, not 0"
        );
        assert!(
            RateLimit {
                qps: f64::NAN,
                burst: 1
            }
            .validate()
            .is_err()
        );
        assert_eq!(
            RateLimit { qps: 1.0, burst: 0 }.validate(),
            Err(RateLimitError::Burst)
        );
        assert!(RateLimit::default().validate().is_ok());
    }
}
