//! The plugins' worker pool: a small tokio runtime whose threads run every
//! plugin's dispatch task (its wasm calls) and on which every host call a
//! plugin makes waits (WASI clocks and `poll`, Kubernetes writes, HTTP).
//!
//! A plugin is a task, not a thread: a thousand idle plugins cost a thousand
//! parked tasks, and one wake-up of a plugin drains every listener it has.
//! A plugin waiting in a host call is a suspended future and holds no
//! thread. The pool is its own runtime, so plugins never compete with the
//! daemon's watches and endpoints for threads. The scheduling policy, and
//! why a busy plugin cannot starve the others, is in
//! [`crate::dispatch`]'s worker module.

use futures::task::AtomicWaker;
use serde::Deserialize;
use std::future::{Future, poll_fn};
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Wake, Waker};
use tokio::runtime::{Handle, Runtime};

/// The pool's threads when none are configured: one per CPU.
pub fn default_workers() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

/// The runtime plugins run on. Dropping it stops its threads without
/// waiting for tasks still running (they are plugins past their deadline,
/// abandoned).
pub(crate) struct WorkerPool {
    runtime: Option<Runtime>,
    demand: Arc<Demand>,
}

impl WorkerPool {
    /// Starts `workers` threads (at least one).
    pub(crate) fn new(workers: usize) -> std::io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers.max(1))
            .thread_name("herald-plugins")
            .enable_all()
            .build()?;
        Ok(WorkerPool {
            runtime: Some(runtime),
            demand: Arc::new(Demand::new(workers.max(1))),
        })
    }

    /// How many plugins' tasks want the pool's threads now.
    pub(crate) fn demand(&self) -> &Arc<Demand> {
        &self.demand
    }

    /// A handle to the runtime: spawn plugins' tasks on it, or enter it to
    /// drive a call on a thread of one's own.
    pub(crate) fn handle(&self) -> &Handle {
        self.runtime
            .as_ref()
            .expect("the worker pool lives as long as the engine")
            .handle()
    }
}

impl Drop for WorkerPool {
    fn drop(&mut self) {
        // Dropping a runtime blocks, which panics inside async code; the
        // engine may well be dropped there (by a test, at shutdown).
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// How many plugins' tasks are busy (running, or woken and waiting for a
/// thread) against how many threads the pool has: a task whose slice is
/// used up yields its thread only when others may be waiting for one. A
/// yield is not free: the pool wakes another thread, which may take the
/// task over, and the plugin's instance then runs on a core whose caches do
/// not hold it (at a yield every 1,024 no-op deliveries, the host's own
/// cost per delivery rose by a fifth in B1).
///
/// A task is counted from its spawn ([`Demand::busy`]) until it goes idle
/// ([`idle`]), and again from the moment it is woken, whatever wakes it
/// (a push, a timer, a stop), not from when it next runs: a woken task
/// starved of threads is counted.
#[derive(Debug)]
pub struct Demand {
    busy: AtomicUsize,
    threads: usize,
}

impl Demand {
    /// Demand on a pool of `threads`.
    pub fn new(threads: usize) -> Self {
        Demand {
            busy: AtomicUsize::new(0),
            threads,
        }
    }

    /// Counts a task as busy until the guard is dropped.
    pub fn busy(self: &Arc<Self>) -> Busy {
        self.busy.fetch_add(1, Ordering::Relaxed);
        Busy {
            demand: self.clone(),
        }
    }

    /// True when more tasks are busy than the pool has threads: one of
    /// them may be waiting for a thread. (A task waiting inside a call
    /// counts as busy, so this errs towards yielding.)
    pub fn contended(&self) -> bool {
        self.busy.load(Ordering::Relaxed) > self.threads
    }
}

/// A task counted busy by [`Demand::busy`], until dropped.
#[derive(Debug)]
pub struct Busy {
    demand: Arc<Demand>,
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.demand.busy.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Awaits `wait` with the task counted idle: `busy` is given up while it
/// waits and taken again the moment anything wakes the task. Returns what
/// `wait` gave and the task's new guard.
pub async fn idle<F: Future>(busy: Busy, wait: F) -> (F::Output, Busy) {
    let waker = Arc::new(IdleWaker {
        demand: busy.demand.clone(),
        woken: Mutex::new(None),
        task: AtomicWaker::new(),
    });
    drop(busy);
    let counting = Waker::from(waker.clone());
    let mut wait = pin!(wait);
    let output = poll_fn(|cx| {
        waker.task.register(cx.waker());
        // Idle again while polled: a spurious wake-up counted it busy.
        drop(waker.take_woken());
        wait.as_mut().poll(&mut Context::from_waker(&counting))
    })
    .await;
    let busy = waker.take_woken().unwrap_or_else(|| waker.demand.busy());
    (output, busy)
}

/// The waker an idle task's wait is polled with: counts the task busy,
/// then wakes it.
struct IdleWaker {
    demand: Arc<Demand>,
    /// The task's guard, taken when it was woken.
    woken: Mutex<Option<Busy>>,
    task: AtomicWaker,
}

impl IdleWaker {
    fn take_woken(&self) -> Option<Busy> {
        self.woken.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

impl Wake for IdleWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        {
            let mut woken = self.woken.lock().unwrap_or_else(|e| e.into_inner());
            if woken.is_none() {
                *woken = Some(self.demand.busy());
            }
        }
        self.task.wake();
    }
}

/// `dispatch`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct DispatchConfig {
    /// Threads of the worker pool every plugin's calls run on; unset: one
    /// per CPU.
    pub workers: Option<usize>,
}

impl DispatchConfig {
    /// Checks the pool's size; the key at fault is relative to `dispatch`.
    pub fn validate(&self) -> Result<(), crate::yaml::Invalid> {
        match self.workers {
            Some(workers) if !(1..=MAX_WORKERS).contains(&workers) => {
                Err(crate::yaml::Invalid::new(
                    "workers",
                    format!("must be between 1 and {MAX_WORKERS}, not {workers}"),
                ))
            }
            _ => Ok(()),
        }
    }

    /// The pool's threads.
    pub fn workers(&self) -> usize {
        self.workers.unwrap_or_else(default_workers)
    }
}

/// The most `dispatch.workers` may be: more threads than this only adds
/// switching (plugins waiting on I/O hold no thread).
pub const MAX_WORKERS: usize = 1024;

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn count(demand: &Demand) -> usize {
        demand.busy.load(Ordering::Relaxed)
    }

    #[tokio::test]
    async fn an_idle_task_leaves_the_count_and_is_counted_again_as_soon_as_it_is_woken() {
        let demand = Arc::new(Demand::new(1));
        let busy = demand.busy();
        assert_eq!(count(&demand), 1);
        let notify = Arc::new(tokio::sync::Notify::new());
        let waiting = {
            let notify = notify.clone();
            tokio::spawn(async move { idle(busy, notify.notified()).await.1 })
        };
        while count(&demand) != 0 {
            tokio::task::yield_now().await;
        }
        // Woken, not yet run (this current-thread test holds the thread):
        // counted at once.
        notify.notify_one();
        assert_eq!(count(&demand), 1, "counted when woken");
        let busy = waiting.await.unwrap();
        assert_eq!(count(&demand), 1, "one guard, not two");
        drop(busy);
        assert_eq!(count(&demand), 0);

        // A timer's wake-up counts too.
        let busy = demand.busy();
        let timed = tokio::spawn(async move {
            idle(busy, tokio::time::sleep(Duration::from_millis(1)))
                .await
                .1
        });
        drop(timed.await.unwrap());
        assert_eq!(count(&demand), 0);
        assert!(!demand.contended());
    }
}
