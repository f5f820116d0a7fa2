//! Exponential backoff with jitter for reconnecting list/watch, like
//! client-go's reflector: it never spins, and resets after success.

use std::time::Duration;

/// Exponential backoff state.
#[derive(Debug, Clone)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
    current: Option<Duration>,
    seed: u64,
}

impl Backoff {
    /// Starts at `initial`, doubling up to `max`.
    pub fn new(initial: Duration, max: Duration) -> Self {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos() as u64)
            .unwrap_or(1)
            | 1;
        Backoff {
            initial,
            max,
            current: None,
            seed,
        }
    }

    /// The next delay: the previous doubled (first: `initial`), capped at
    /// `max`, with up to 25% random jitter added.
    pub fn next_delay(&mut self) -> Duration {
        let base = match self.current {
            None => self.initial,
            Some(previous) => (previous * 2).min(self.max),
        };
        self.current = Some(base);
        // xorshift: cheap jitter, no dependency.
        self.seed ^= self.seed << 13;
        self.seed ^= self.seed >> 7;
        self.seed ^= self.seed << 17;
        let jitter = base.mul_f64((self.seed % 1000) as f64 / 4000.0);
        (base + jitter).min(self.max + self.max / 4)
    }

    /// Forgets past failures.
    pub fn reset(&mut self) {
        self.current = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_to_the_cap_and_reset() {
        let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(1));
        let delays: Vec<Duration> = (0..8).map(|_| backoff.next_delay()).collect();
        assert!(delays[0] >= Duration::from_millis(100) && delays[0] <= Duration::from_millis(125));
        assert!(delays[1] >= Duration::from_millis(200));
        assert!(delays.iter().all(|d| *d <= Duration::from_millis(1250)));
        assert!(delays[7] >= Duration::from_secs(1));
        backoff.reset();
        assert!(backoff.next_delay() <= Duration::from_millis(125));
    }
}
