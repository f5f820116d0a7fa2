//! The call deadline: one bound on a call into a plugin, however the call
//! spends its time: running wasm, or waiting in a host call (a WASI clock or
//! `poll`, a write to stdout, one of Herald's imports, I/O to come).
//!
//! # Mechanism
//!
//! Calls are made with wasmtime's async API, on the plugin's own thread: the
//! guest runs on a fiber, and every host function that waits (WASI's clocks
//! and `poll` among them) is a future the fiber suspends on. [`run_until`]
//! drives such a call on the calling thread and gives up when the deadline
//! passes, two ways:
//!
//! - **In wasm**, epoch interruption traps the guest once the engine's epoch
//!   passes the deadline (the ticker advances it every
//!   [`EPOCH_TICK`](super::EPOCH_TICK)): the fault comes at most two ticks
//!   after the deadline.
//! - **In a host call**, the call's future is dropped when a timer on the
//!   host I/O runtime fires at the deadline. Dropping it unwinds the fiber
//!   (wasmtime resumes it with an error, which traps the guest), so nothing
//!   of the call outlives it. The fault comes within the timer's resolution
//!   (1 ms) plus the thread's wake-up.
//!
//! A call that never waits (the common case: a handler that decodes an
//! object and returns) completes on its first poll, so it arms no timer and
//! pays only the fiber switch.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Instant;
use tokio::runtime::{Handle, Runtime};

/// The tokio runtime that plugins' host calls wait on: timers of WASI clocks,
/// `poll`, and the I/O of capabilities. Its own small thread pool, so a
/// plugin's host calls never compete with the daemon's watches and endpoints.
pub(crate) struct HostIo {
    runtime: Option<Runtime>,
}

impl HostIo {
    /// Starts the runtime (one thread: host calls only wait on it; the
    /// plugins' own threads drive their calls).
    pub(crate) fn new() -> std::io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("herald-plugin-io")
            .enable_all()
            .build()?;
        Ok(HostIo {
            runtime: Some(runtime),
        })
    }

    /// A handle to the runtime.
    pub(crate) fn handle(&self) -> &Handle {
        self.runtime
            .as_ref()
            .expect("the host I/O runtime lives as long as the engine")
            .handle()
    }
}

impl Drop for HostIo {
    fn drop(&mut self) {
        // Dropping a runtime blocks, which panics inside async code; the
        // engine may well be dropped there (by a test, at shutdown).
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// The deadline passed before the call finished; the call was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DeadlinePassed;

/// Drives `call` on this thread until it completes or `deadline` passes,
/// with `io` as the runtime its host calls wait on. Blocks the thread: call
/// it from a plugin's worker (or another thread that may block), never from
/// an async task.
pub(crate) fn run_until<F: Future>(
    io: &Handle,
    deadline: Instant,
    call: F,
) -> Result<F::Output, DeadlinePassed> {
    let _runtime = io.enter();
    let mut call = pin!(call);
    THREAD_WAKER.with(|waker| {
        let mut cx = Context::from_waker(waker);
        if let Poll::Ready(output) = call.as_mut().poll(&mut cx) {
            return Ok(output);
        }
        // The call waits in a host call: from now on the timer bounds it.
        let mut timer = pin!(tokio::time::sleep_until(deadline.into()));
        loop {
            if timer.as_mut().poll(&mut cx).is_ready() {
                return Err(DeadlinePassed);
            }
            std::thread::park();
            if let Poll::Ready(output) = call.as_mut().poll(&mut cx) {
                return Ok(output);
            }
        }
    })
}

/// Wakes a thread parked in [`run_until`].
struct ThreadWaker(std::thread::Thread);

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

thread_local! {
    /// This thread's waker, made once: a call allocates nothing for it.
    static THREAD_WAKER: Waker = Waker::from(Arc::new(ThreadWaker(std::thread::current())));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_call_that_never_waits_completes_without_a_timer() {
        let io = HostIo::new().unwrap();
        let out = run_until(io.handle(), Instant::now(), async { 7 });
        assert_eq!(out, Ok(7));
    }

    #[test]
    fn a_call_that_waits_past_its_deadline_is_dropped_at_the_deadline() {
        let io = HostIo::new().unwrap();
        let started = Instant::now();
        let deadline = started + Duration::from_millis(20);
        let dropped = Arc::new(std::sync::atomic::AtomicBool::new(false));
        struct SetOnDrop(Arc<std::sync::atomic::AtomicBool>);
        impl Drop for SetOnDrop {
            fn drop(&mut self) {
                self.0.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
        let guard = SetOnDrop(dropped.clone());
        let out = run_until(io.handle(), deadline, async move {
            let _guard = guard;
            tokio::time::sleep(Duration::from_secs(3600)).await;
        });
        assert_eq!(out, Err(DeadlinePassed));
        assert!(Instant::now() >= deadline);
        assert!(dropped.load(std::sync::atomic::Ordering::SeqCst));
        // "Never returns" bound, not a timing assertion.
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn a_call_that_waits_and_finishes_in_time_returns_its_output() {
        let io = HostIo::new().unwrap();
        let deadline = Instant::now() + Duration::from_secs(3600);
        let out = run_until(io.handle(), deadline, async {
            tokio::time::sleep(Duration::from_millis(5)).await;
            "done"
        });
        assert_eq!(out, Ok("done"));
    }
}
