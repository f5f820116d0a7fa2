//! A wake-up flag a plugin worker sleeps on, set by every push to its listeners.

use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// Wakes a worker thread. A notify that arrives before the wait is not lost.
#[derive(Debug, Default)]
pub struct Signal {
    raised: Mutex<bool>,
    condvar: Condvar,
}

impl Signal {
    /// Raises the flag and wakes the waiter.
    pub fn notify(&self) {
        *self.raised.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.condvar.notify_one();
    }

    /// Waits until the flag is raised, then lowers it.
    pub fn wait(&self) {
        let mut raised = self.raised.lock().unwrap_or_else(|e| e.into_inner());
        while !*raised {
            raised = self.condvar.wait(raised).unwrap_or_else(|e| e.into_inner());
        }
        *raised = false;
    }

    /// Waits until the flag is raised or `deadline` passes; lowers it.
    /// Returns true if it was raised.
    pub fn wait_until(&self, deadline: Instant) -> bool {
        let mut raised = self.raised.lock().unwrap_or_else(|e| e.into_inner());
        while !*raised {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            raised = self
                .condvar
                .wait_timeout(raised, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        *raised = false;
        true
    }

    /// Waits up to `timeout`.
    pub fn wait_for(&self, timeout: Duration) -> bool {
        self.wait_until(Instant::now() + timeout)
    }
}
