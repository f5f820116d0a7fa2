//! The bound on what a plugin makes the host write: a token bucket that
//! drops what is over the rate, counts it, and asks for at most one summary
//! of it per [`SUMMARY_INTERVAL`], so that a flood costs the host's log a
//! bounded number of lines and is never silent.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Shortest time between two summaries of what one throttle dropped.
pub const SUMMARY_INTERVAL: Duration = Duration::from_secs(10);

/// A token bucket with a memory of what it dropped.
#[derive(Debug)]
pub struct Throttle {
    per_second: f64,
    burst: f64,
    state: Mutex<State>,
    dropped_total: AtomicU64,
}

#[derive(Debug)]
struct State {
    tokens: f64,
    refilled: Instant,
    dropped_since_summary: u64,
    last_summary: Option<Instant>,
}

/// What the throttle says of one item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// Write it; first, if `summary` is set, one line saying that many were
    /// dropped since the last summary.
    Pass {
        /// Dropped since the last summary, when one is due.
        summary: Option<u64>,
    },
    /// Over the rate: dropped (and counted).
    Drop,
}

impl Throttle {
    /// A bucket of `burst` refilled at `per_second` (units of cost).
    pub fn new(per_second: u64, burst: u64) -> Self {
        Throttle {
            per_second: per_second as f64,
            burst: burst as f64,
            state: Mutex::new(State {
                tokens: burst as f64,
                refilled: Instant::now(),
                dropped_since_summary: 0,
                last_summary: None,
            }),
            dropped_total: AtomicU64::new(0),
        }
    }

    /// Admits an item costing `cost` at `now`, or drops it.
    pub fn admit(&self, cost: u64, now: Instant) -> Admit {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let refill = now.saturating_duration_since(state.refilled).as_secs_f64() * self.per_second;
        state.tokens = (state.tokens + refill).min(self.burst);
        state.refilled = now;
        let cost = cost as f64;
        if state.tokens < cost {
            state.dropped_since_summary += 1;
            self.dropped_total.fetch_add(1, Ordering::Relaxed);
            return Admit::Drop;
        }
        state.tokens -= cost;
        let due = state
            .last_summary
            .is_none_or(|at| now.saturating_duration_since(at) >= SUMMARY_INTERVAL);
        let summary = (state.dropped_since_summary > 0 && due).then(|| {
            state.last_summary = Some(now);
            std::mem::take(&mut state.dropped_since_summary)
        });
        Admit::Pass { summary }
    }

    /// Items dropped since the throttle was made.
    pub fn dropped_total(&self) -> u64 {
        self.dropped_total.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_passes_its_burst_then_its_rate_with_one_summary_per_interval() {
        let throttle = Throttle::new(10, 100);
        let start = Instant::now();
        let mut passed = 0;
        let mut summaries = Vec::new();
        // 100,000 items over 30 s: the burst, then 10 per second.
        for i in 0..100_000u64 {
            let now = start + Duration::from_micros(i * 300);
            if let Admit::Pass { summary } = throttle.admit(1, now) {
                passed += 1;
                summaries.extend(summary);
            }
        }
        assert!((390..=402).contains(&passed), "passed {passed}");
        assert_eq!(throttle.dropped_total(), 100_000 - passed);
        assert!(
            (3..=4).contains(&summaries.len()),
            "one summary per 10 s, not one per resumption: {summaries:?}"
        );
        assert!(summaries.iter().sum::<u64>() <= throttle.dropped_total());
    }

    #[test]
    fn costs_count_bytes_as_well_as_lines() {
        let throttle = Throttle::new(1000, 4096);
        let now = Instant::now();
        assert_eq!(throttle.admit(4000, now), Admit::Pass { summary: None });
        assert_eq!(throttle.admit(200, now), Admit::Drop);
        assert_eq!(throttle.admit(96, now), Admit::Pass { summary: Some(1) });
    }
}
