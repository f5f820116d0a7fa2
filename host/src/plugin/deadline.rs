//! The call deadline: one bound on a call into a plugin, however the call
//! spends its time: running wasm, or waiting in a host call (a WASI clock or
//! `poll`, a write to stdout, one of Herald's imports, I/O to come).
//!
//! # Mechanism
//!
//! Calls are made with wasmtime's async API, as tasks of the plugins' worker
//! pool ([`WorkerPool`](super::WorkerPool)): the guest runs on a fiber, and
//! every host function that waits (WASI's clocks and `poll` among them) is a
//! future the fiber suspends on, which frees the pool's thread for other
//! plugins. [`within`] runs such a call and gives up when the deadline
//! passes, two ways:
//!
//! - **In wasm**, the store's epoch callback (see
//!   [`new_store_with`](super::loaded)) traps the guest at the first epoch
//!   tick past the deadline (the ticker advances the epoch every
//!   [`EPOCH_TICK`](super::EPOCH_TICK)); before it, at every tick, the
//!   guest yields its thread to the pool's other tasks and is resumed after
//!   them.
//! - **In a host call**, the call's future is dropped when a timer fires at
//!   the deadline. Dropping it unwinds the fiber (wasmtime resumes it with
//!   an error, which traps the guest), so nothing of the call outlives it.
//!   The fault comes within the timer's resolution (1 ms) plus a wake-up.
//!
//! A call that never waits (the common case: a handler that decodes an
//! object and returns) completes on its first poll, so it arms no timer and
//! pays only the fiber switch. [`run_until`] does the same on a thread of
//! its own, blocking it, for callers outside the pool.

use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Instant;
use tokio::runtime::Handle;

/// The deadline passed before the call finished; the call was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DeadlinePassed;

/// Runs `call` until it completes or `deadline` passes, whichever comes
/// first; at the deadline the call is dropped. Must be polled on a tokio
/// runtime (the plugins' worker pool, or [`run_until`]'s thread with the
/// runtime entered). A call that completes on its first poll arms no timer.
pub(crate) async fn within<F: Future>(
    deadline: Instant,
    call: F,
) -> Result<F::Output, DeadlinePassed> {
    let mut call = pin!(call);
    let mut timer: Option<Pin<Box<tokio::time::Sleep>>> = None;
    poll_fn(|cx| {
        if let Poll::Ready(output) = call.as_mut().poll(cx) {
            return Poll::Ready(Ok(output));
        }
        // The call waits in a host call: from now on the timer bounds it.
        let timer =
            timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline.into())));
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(DeadlinePassed)),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}

/// [`within`], blocking this thread until it ends, with `io` as the runtime
/// the call's host calls wait on. For callers outside the worker pool (the
/// replay command, benchmarks): never call it from an async task.
pub(crate) fn run_until<F: Future>(
    io: &Handle,
    deadline: Instant,
    call: F,
) -> Result<F::Output, DeadlinePassed> {
    block_on(io, within(deadline, call))
}

/// Drives `future` to its end on this thread, parking it while the future
/// waits, with `io` entered so the future's timers and I/O run on it.
pub(crate) fn block_on<F: Future>(io: &Handle, future: F) -> F::Output {
    let _runtime = io.enter();
    let mut future = pin!(future);
    THREAD_WAKER.with(|waker| {
        let mut cx = Context::from_waker(waker);
        loop {
            if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
                return output;
            }
            std::thread::park();
        }
    })
}

/// Wakes a thread parked in [`block_on`].
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
    use super::super::pool::WorkerPool;
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_call_that_never_waits_completes_without_a_timer() {
        let io = WorkerPool::new(1).unwrap();
        let out = run_until(io.handle(), Instant::now(), async { 7 });
        assert_eq!(out, Ok(7));
    }

    #[test]
    fn a_call_that_waits_past_its_deadline_is_dropped_at_the_deadline() {
        let io = WorkerPool::new(1).unwrap();
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
        let io = WorkerPool::new(1).unwrap();
        let deadline = Instant::now() + Duration::from_secs(3600);
        let out = run_until(io.handle(), deadline, async {
            tokio::time::sleep(Duration::from_millis(5)).await;
            "done"
        });
        assert_eq!(out, Ok("done"));
    }
}
