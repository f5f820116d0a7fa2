//! Time slices: a busy plugin gives its pool thread back to the others after
//! [`SLICE_CALLS`] deliveries or one epoch tick.

use crate::plugin::{Demand, EPOCH_TICK};
use std::time::Instant;

/// Deliveries a plugin's task makes before it yields its thread to the
/// pool's other tasks (sooner if one [`EPOCH_TICK`] has passed). A yield
/// costs the pool a wake-up of another thread and may move the task: at 64
/// the host's own cost per no-op delivery rose by a fifth (B1.a1); at 1024
/// a no-op plugin yields about every 2 ms, so time ends most slices.
pub const SLICE_CALLS: u32 = 1024;

/// One turn of a plugin's task on a pool thread: it ends after
/// [`SLICE_CALLS`] deliveries or one [`EPOCH_TICK`], whichever is first.
pub(super) struct Slice {
    started: Instant,
    calls: u32,
}

impl Slice {
    pub(super) fn new() -> Self {
        Slice {
            started: Instant::now(),
            calls: 0,
        }
    }

    /// Counts a delivery; true once the slice is used up.
    fn spent(&mut self) -> bool {
        self.calls += 1;
        self.calls >= SLICE_CALLS || self.started.elapsed() >= EPOCH_TICK
    }

    /// Counts a delivery; once the slice is used up, yields the thread if
    /// other plugins may want it, and starts the next slice.
    pub(super) async fn delivered(&mut self, demand: &Demand) {
        if self.spent() {
            if demand.contended() {
                tokio::task::yield_now().await;
            }
            *self = Slice::new();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::state::RunMode;
    use super::super::testing::{Script, current_thread, listener, run_on, threaded_on};
    use super::*;
    use crate::dispatch::queue::tests::add;
    use crate::plugin::Delivery;
    use std::sync::atomic::Ordering;
    use std::sync::{Arc, mpsc};
    use std::time::Duration;

    /// The pool at its smallest, one thread, shared by three plugins: one
    /// with a deep backlog (five slices), one whose call waits forever (as in a host
    /// call), one with a single notification. The busy one gives the thread
    /// up after one slice, the waiting one holds none, and the third one's
    /// notification is delivered before the busy one's second slice.
    #[test]
    fn a_busy_plugin_yields_the_thread_after_a_slice_and_a_waiting_one_holds_none() {
        let runtime = current_thread();
        let demand = Arc::new(Demand::new(1));
        let (report, calls) = mpsc::channel();
        let plugin = |keys: Vec<String>, stuck: &[&str]| {
            let dispatch = threaded_on(Duration::from_millis(5), demand.clone());
            let pods = listener(&dispatch, Delivery::Coalesced);
            for key in keys {
                pods.push(add(&key, 1, false));
            }
            let script = Script {
                stuck: stuck.iter().map(|k| (*k).to_owned()).collect(),
                report: Some(report.clone()),
                ..Script::default()
            };
            let task = run_on(&runtime, &dispatch, script);
            (dispatch, pods, task)
        };
        let backlog = 5 * u64::from(SLICE_CALLS);
        let busy = plugin((0..backlog).map(|i| format!("busy-{i}")).collect(), &[]);
        let waiting = plugin(vec!["stuck".into()], &["n/stuck"]);
        let quiet = plugin(vec!["quiet".into()], &[]);

        runtime.block_on(async {
            while quiet.1.stats.delivered.load(Ordering::Acquire) == 0 {
                tokio::task::yield_now().await;
            }
        });
        let seen: Vec<String> = calls.try_iter().collect();
        let quiet_at = seen.iter().position(|c| c == "add n/quiet@1").unwrap();
        let busy_before = seen[..quiet_at]
            .iter()
            .filter(|c| c.contains("busy"))
            .count();
        assert!(
            busy_before <= SLICE_CALLS as usize,
            "the busy plugin made {busy_before} calls before the quiet one had its turn"
        );
        assert!(seen[..quiet_at].contains(&"add n/stuck@1".to_owned()));
        assert_eq!(
            waiting.1.stats.delivered.load(Ordering::Relaxed)
                + waiting.1.stats.failed.load(Ordering::Relaxed),
            0,
            "the waiting call is still under way"
        );

        // The busy plugin goes on to the end of its backlog meanwhile.
        runtime.block_on(async {
            while busy.1.stats.delivered.load(Ordering::Acquire) < backlog {
                tokio::task::yield_now().await;
            }
        });
        for (dispatch, _, task) in [busy, waiting, quiet] {
            dispatch.set_mode(RunMode::Stopping);
            drop(task);
        }
    }

    /// One thread, two plugins: one with a deep backlog, one idle. A push
    /// to the idle one during the busy one's slice (made from inside a
    /// call, so on the pool's only thread) counts it as wanting the thread
    /// at once, so the busy one yields at the end of that slice, not at the
    /// end of its backlog.
    #[test]
    fn a_plugin_woken_while_another_is_busy_is_served_at_the_end_of_its_slice() {
        let runtime = current_thread();
        let demand = Arc::new(Demand::new(1));
        let (report, calls) = mpsc::channel();
        let busy = threaded_on(Duration::from_millis(5), demand.clone());
        let quiet = threaded_on(Duration::from_millis(5), demand.clone());
        let busy_pods = listener(&busy, Delivery::Coalesced);
        let quiet_pods = listener(&quiet, Delivery::Coalesced);
        let backlog = 10 * u64::from(SLICE_CALLS);
        for i in 0..backlog {
            busy_pods.push(add(&format!("busy-{i}"), 1, false));
        }
        let push_at = "n/busy-1500";
        let busy_script = Script {
            report: Some(report.clone()),
            hook: Some((
                push_at.to_owned(),
                Box::new(move || quiet_pods.push(add("quiet", 1, false))),
            )),
            ..Script::default()
        };
        let quiet_script = Script {
            report: Some(report),
            ..Script::default()
        };
        let tasks = [
            (busy.clone(), run_on(&runtime, &busy, busy_script)),
            (quiet.clone(), run_on(&runtime, &quiet, quiet_script)),
        ];
        runtime.block_on(async {
            while busy_pods.stats.delivered.load(Ordering::Acquire) < backlog {
                tokio::task::yield_now().await;
            }
        });
        let seen: Vec<String> = calls.try_iter().collect();
        let pushed = seen.iter().position(|c| c.contains(push_at)).unwrap();
        let served = seen.iter().position(|c| c == "add n/quiet@1").unwrap();
        assert!(
            served > pushed && served - pushed <= SLICE_CALLS as usize,
            "pushed during call {pushed}, served at call {served} (slice: {SLICE_CALLS})"
        );
        for (dispatch, task) in tasks {
            dispatch.set_mode(RunMode::Stopping);
            drop(task);
        }
    }
}
