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
        })
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
