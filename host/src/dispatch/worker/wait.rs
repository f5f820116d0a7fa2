//! Waiting without polling: a worker with nothing ready sleeps until a
//! push, a ready key or a stop, and drops its instance once idle long enough.

use super::call::Calls;
use super::state::{Dispatch, RunMode};
use crate::plugin::{Busy, idle};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

impl Dispatch {
    /// Waits, counted idle, until something is pushed or `ready_at`
    /// passes. Should the idle policy's time pass first, drops the
    /// instance, then goes on waiting.
    pub(super) async fn wait(
        &self,
        calls: &mut impl Calls,
        busy: Busy,
        ready_at: Option<Instant>,
    ) -> Busy {
        let mut busy = busy;
        // An idle time past the clock's range is never reached.
        let reclaim_at = self
            .idle
            .reclaim_after
            .and_then(|after| Instant::now().checked_add(after));
        if let Some(reclaim_at) = reclaim_at
            && ready_at.is_none_or(|ready| ready > reclaim_at)
        {
            let (raised, woken) = idle(busy, self.signal.raised_by(reclaim_at)).await;
            if raised {
                return woken;
            }
            if calls.reclaim() {
                self.reclaimed.fetch_add(1, Ordering::Relaxed);
            }
            busy = woken;
        }
        match ready_at {
            Some(ready_at) => idle(busy, self.signal.raised_by(ready_at)).await.1,
            None => idle(busy, self.signal.raised()).await.1,
        }
    }

    /// Sleeps for `delay` unless the worker is told to stop; false if it was.
    pub(super) async fn pause(&self, delay: Duration) -> bool {
        let until = Instant::now() + delay;
        while self.mode() != RunMode::Stopping {
            if !self.mode_changed.raised_by(until).await {
                return true;
            }
        }
        false
    }

    /// How many times the idle instance was dropped.
    pub(super) fn instances_reclaimed(&self) -> u64 {
        self.reclaimed.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::super::retry::RetryPolicy;
    use super::super::scheduler::Cursor;
    use super::super::state::RunMode;
    use super::super::testing::{
        MS, ManualClock, NEVER, Script, current_thread, dispatch_with, listener, settle, spawn,
        threaded,
    };
    use crate::dispatch::queue::tests::add;
    use crate::plugin::Delivery;
    use std::collections::HashSet;
    use std::sync::atomic::Ordering;
    use std::time::{Duration, Instant};

    #[test]
    fn an_idle_instance_is_dropped_after_the_idle_time_and_not_while_work_keeps_coming() {
        let clock = ManualClock::new();
        let mut dispatch = dispatch_with(RetryPolicy::default(), &clock);
        dispatch.idle.reclaim_after = Some(MS);
        let pods = listener(&dispatch, Delivery::EveryEvent);
        let mut script = Script::default();
        let reclaims = script.reclaims.clone();
        let mut cursor = Cursor::default();
        pods.push(add("a", 1, false));
        assert_eq!(settle(&dispatch, &mut script, &mut cursor).0, ["add n/a@1"]);
        assert!(script.live);
        let runtime = current_thread();

        // Work already waiting: the wait ends at once, nothing dropped.
        pods.push(add("a", 2, false));
        runtime.block_on(dispatch.wait(&mut script, dispatch.demand.busy(), None));
        assert_eq!((count32(&reclaims), dispatch.instances_reclaimed()), (0, 0));
        assert_eq!(settle(&dispatch, &mut script, &mut cursor).0, ["add n/a@2"]);

        // Idle past the idle time: the instance is dropped, then the wait
        // goes on until work comes (pushed once the drop is seen).
        let idle_until_reclaimed = |script: &mut Script, rv: u32| {
            let before = count32(&reclaims);
            runtime.block_on(async {
                let push = async {
                    while count32(&reclaims) == before {
                        tokio::time::sleep(MS).await;
                    }
                    pods.push(add("a", rv, false));
                };
                tokio::join!(dispatch.wait(script, dispatch.demand.busy(), None), push);
            });
        };
        idle_until_reclaimed(&mut script, 3);
        assert_eq!((count32(&reclaims), dispatch.instances_reclaimed()), (1, 1));
        assert!(!script.live, "dropped while idle");
        assert_eq!(settle(&dispatch, &mut script, &mut cursor).0, ["add n/a@3"]);
        assert!(script.live, "the next delivery made a fresh one");

        // Nothing live to drop: asked, but not counted as a reclaim.
        script.live = false;
        idle_until_reclaimed(&mut script, 4);
        assert_eq!((count32(&reclaims), dispatch.instances_reclaimed()), (2, 1));
    }

    fn count32(counter: &std::sync::atomic::AtomicU32) -> u32 {
        counter.load(Ordering::Relaxed)
    }

    fn failing(key: &str) -> Script {
        Script {
            failing: HashSet::from([key.to_owned()]),
            ..Script::default()
        }
    }

    #[test]
    fn the_thread_sleeps_until_a_waiting_key_is_ready_then_retries_it() {
        let dispatch = threaded(Duration::from_millis(100));
        let pods = listener(&dispatch, Delivery::Coalesced);
        pods.push(add("a", 1, false));
        let started = Instant::now();
        let (thread, calls) = spawn(dispatch.clone(), failing("n/a"));
        assert_eq!(calls.recv_timeout(NEVER).unwrap(), "add n/a@1");
        assert_eq!(calls.recv_timeout(NEVER).unwrap(), "add n/a@1");
        assert!(
            started.elapsed() >= Duration::from_millis(100),
            "retried before its backoff: {:?}",
            started.elapsed()
        );
        dispatch.set_mode(RunMode::Stopping);
        thread.join().unwrap();
    }

    #[test]
    fn a_push_wakes_the_thread_while_a_key_waits_out_a_long_backoff() {
        let dispatch = threaded(Duration::from_secs(1000));
        let pods = listener(&dispatch, Delivery::Coalesced);
        pods.push(add("a", 1, false));
        let (thread, calls) = spawn(dispatch.clone(), failing("n/a"));
        assert_eq!(calls.recv_timeout(NEVER).unwrap(), "add n/a@1");
        pods.push(add("b", 1, false));
        assert_eq!(calls.recv_timeout(NEVER).unwrap(), "add n/b@1");
        assert_eq!(pods.delayed(), 1, "a still waits");
        dispatch.set_mode(RunMode::Stopping);
        thread.join().unwrap();
    }
}
