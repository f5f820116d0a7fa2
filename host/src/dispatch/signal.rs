//! A wake-up flag a plugin's dispatch task sleeps on, set by every push to
//! its listeners.

use std::future::poll_fn;
use std::sync::{Condvar, Mutex};
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

/// Wakes a waiter: a thread blocked in [`wait_until`](Self::wait_until), or the task
/// awaiting [`raised`](Self::raised). A notify that arrives before the wait
/// is not lost.
///
/// A waiter is woken only when one is actually waiting: pushes to the
/// listeners of a busy plugin (the common case under load) then cost a lock
/// and a store, not a wake-up each.
#[derive(Debug, Default)]
pub struct Signal {
    state: Mutex<State>,
    condvar: Condvar,
}

#[derive(Debug, Default)]
struct State {
    raised: bool,
    /// Threads blocked in `wait_until`, counted under the same lock
    /// as `raised`, so a notify either sees a waiter or is seen by it.
    waiters: usize,
    /// The task awaiting [`Signal::raised`], if one is.
    task: Option<Waker>,
}

impl Signal {
    /// Raises the flag and wakes the waiter.
    pub fn notify(&self) {
        let mut state = self.lock();
        state.raised = true;
        let wake = state.waiters > 0;
        let task = state.task.take();
        drop(state);
        if wake {
            self.condvar.notify_one();
        }
        if let Some(task) = task {
            task.wake();
        }
    }

    /// Waits, without blocking the thread, until the flag is raised; lowers
    /// it. Meant for one task at a time: a second task awaiting it at once
    /// takes the first one's place.
    pub async fn raised(&self) {
        poll_fn(|cx| {
            let mut state = self.lock();
            if state.raised {
                state.raised = false;
                state.task = None;
                return Poll::Ready(());
            }
            match &mut state.task {
                Some(task) => task.clone_from(cx.waker()),
                None => state.task = Some(cx.waker().clone()),
            }
            Poll::Pending
        })
        .await
    }

    /// [`raised`](Self::raised), or `deadline` passing (on the tokio clock
    /// of the runtime the task runs on); true if raised.
    pub async fn raised_by(&self, deadline: Instant) -> bool {
        tokio::select! {
            biased;
            () = self.raised() => true,
            () = tokio::time::sleep_until(deadline.into()) => false,
        }
    }

    /// Waits until the flag is raised or `deadline` passes; lowers it.
    /// Returns true if it was raised.
    pub fn wait_until(&self, deadline: Instant) -> bool {
        let mut state = self.lock();
        while !state.raised {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            state.waiters += 1;
            state = self
                .condvar
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
            state.waiters -= 1;
        }
        state.raised = false;
        true
    }

    /// Waits up to `timeout`.
    pub fn wait_for(&self, timeout: Duration) -> bool {
        self.wait_until(Instant::now() + timeout)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_notify_before_the_wait_is_not_lost() {
        let signal = Signal::default();
        signal.notify();
        assert!(signal.wait_for(Duration::from_millis(1)));
        assert!(
            !signal.wait_for(Duration::from_millis(1)),
            "lowered once seen"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_task_is_woken_by_every_notify_whether_asleep_or_not() {
        let signal = Arc::new(Signal::default());
        let rounds = 1000;
        let waiter = {
            let signal = signal.clone();
            tokio::spawn(async move {
                for _ in 0..rounds {
                    assert!(
                        signal
                            .raised_by(Instant::now() + Duration::from_secs(10))
                            .await,
                        "a notify was lost"
                    );
                }
            })
        };
        let notifier = tokio::task::spawn_blocking(move || {
            for _ in 0..rounds {
                signal.notify();
                while signal.lock().raised {
                    std::thread::yield_now();
                }
            }
        });
        notifier.await.unwrap();
        waiter.await.expect("the task saw every round");
    }

    #[tokio::test]
    async fn a_notify_before_the_await_is_not_lost() {
        let signal = Signal::default();
        signal.notify();
        signal.raised().await;
        assert!(!signal.raised_by(Instant::now()).await, "lowered once seen");
    }

    #[test]
    fn a_waiter_is_woken_by_every_notify_whether_asleep_or_not() {
        let signal = Arc::new(Signal::default());
        let rounds = 1000;
        let waiter = {
            let signal = signal.clone();
            std::thread::spawn(move || {
                for _ in 0..rounds {
                    assert!(
                        signal.wait_for(Duration::from_secs(10)),
                        "a notify was lost"
                    );
                }
            })
        };
        for _ in 0..rounds {
            signal.notify();
            // The next notify only once this one was seen, so each round
            // needs its own wake-up (the waiter often sleeps in between).
            while signal.lock().raised {
                std::thread::yield_now();
            }
        }
        waiter.join().expect("the waiter saw every round");
    }
}
