//! Fault injection for tests: dropped watches, compacted history, latency, failing requests,
//! requests held until released, reads refused as RBAC refuses them.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::watch;

use crate::storage::Store;

/// Shared fault state, consulted by every request.
#[derive(Debug)]
pub(crate) struct FaultState {
    latency_micros: AtomicU64,
    fail_next: AtomicUsize,
    throttle: std::sync::Mutex<Option<(String, usize)>>,
    fail_watches: AtomicBool,
    close_watches: AtomicBool,
    kill: watch::Sender<u64>,
    holds: std::sync::Mutex<Vec<Arc<HoldState>>>,
    forbidden: std::sync::Mutex<Vec<String>>,
}

/// One [`Faults::hold_requests`]: which requests it holds, and its gate.
#[derive(Debug)]
pub(crate) struct HoldState {
    method: String,
    path: String,
    seen: AtomicUsize,
    held: AtomicUsize,
    released: watch::Sender<bool>,
}

impl HoldState {
    /// Waits until the hold is released (at once if it is already).
    pub(crate) async fn wait(&self) {
        self.seen.fetch_add(1, Ordering::SeqCst);
        self.held.fetch_add(1, Ordering::SeqCst);
        // Counted out even when the client gives up and the request is dropped.
        struct Waiting<'a>(&'a AtomicUsize);
        impl Drop for Waiting<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::SeqCst);
            }
        }
        let _waiting = Waiting(&self.held);
        let mut released = self.released.subscribe();
        // The sender lives in `self`: this only ends by the release.
        let _ = released.wait_for(|released| *released).await;
    }
}

impl FaultState {
    /// No faults.
    pub fn new() -> Self {
        FaultState {
            latency_micros: AtomicU64::new(0),
            fail_next: AtomicUsize::new(0),
            throttle: std::sync::Mutex::new(None),
            fail_watches: AtomicBool::new(false),
            close_watches: AtomicBool::new(false),
            kill: watch::Sender::new(0),
            holds: std::sync::Mutex::new(Vec::new()),
            forbidden: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// Whether reads (list, watch) of exactly `path` are refused.
    pub(crate) fn forbids(&self, path: &str) -> bool {
        self.forbidden
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .any(|forbidden| forbidden == path)
    }

    /// The hold a `method` request for exactly `path` must wait on, if any.
    pub(crate) fn hold_for(&self, method: &str, path: &str) -> Option<Arc<HoldState>> {
        self.holds
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .find(|hold| hold.method == method && hold.path == path)
            .cloned()
    }

    fn release(&self, hold: &Arc<HoldState>) {
        self.holds
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|other| !Arc::ptr_eq(other, hold));
        hold.released.send_replace(true);
    }

    /// The latency to add to every response.
    pub fn latency(&self) -> Duration {
        Duration::from_micros(self.latency_micros.load(Ordering::Relaxed))
    }

    /// Whether this request should fail (consumes one of the "fail next N").
    pub fn take_failure(&self) -> bool {
        self.fail_next
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
    }

    /// Whether a request for `path` should be throttled (consumes one of
    /// the "throttle the next N to this path").
    pub fn take_throttle(&self, path: &str) -> bool {
        let mut throttle = self.throttle.lock().unwrap_or_else(|e| e.into_inner());
        match &mut *throttle {
            Some((suffix, left)) if *left > 0 && path.ends_with(suffix.as_str()) => {
                *left -= 1;
                true
            }
            _ => false,
        }
    }

    /// Whether watch requests are being refused.
    pub fn watches_failing(&self) -> bool {
        self.fail_watches.load(Ordering::SeqCst)
    }

    /// Whether new watches end at once.
    pub fn watches_closing(&self) -> bool {
        self.close_watches.load(Ordering::SeqCst)
    }

    /// A receiver that changes whenever open watches must be dropped.
    pub fn kill_signal(&self) -> watch::Receiver<u64> {
        self.kill.subscribe()
    }

    /// How many watch streams are open (each holds a kill-signal receiver).
    pub fn open_watches(&self) -> usize {
        self.kill.receiver_count()
    }

    /// Drop every open watch.
    pub fn kill_watches(&self) {
        self.kill.send_modify(|g| *g += 1);
    }
}

/// A handle to inject faults into a running server. Cheap to clone; stays valid across
/// [`ApiServer::restart`](crate::ApiServer::restart).
#[derive(Clone)]
pub struct Faults {
    pub(crate) state: Arc<FaultState>,
    pub(crate) store: Arc<Store>,
}

impl std::fmt::Debug for Faults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Faults")
            .field("state", &self.state)
            .finish()
    }
}

impl Faults {
    /// Close every open watch stream now, abruptly (no terminating chunk), as a dying
    /// connection or a restarting API server would.
    pub fn drop_watches(&self) {
        self.state.kill_watches();
    }

    /// How many watch streams are open now: lets a test wait until a client
    /// is watching before it drops the watch.
    pub fn open_watches(&self) -> usize {
        self.state.open_watches()
    }

    /// Forget the event history, as an etcd compaction at the current revision: a watch,
    /// continue token or exact list at any older version gets 410 Gone ("too old resource
    /// version"); the current version itself has missed nothing and still resumes. To force
    /// an informer to relist, let it fall behind first: drop its watch, change something,
    /// then compact.
    pub fn compact_history(&self) {
        self.store.compact();
    }

    /// Delay every response by `latency` (zero to stop).
    pub fn set_latency(&self, latency: Duration) {
        let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        self.state.latency_micros.store(micros, Ordering::Relaxed);
    }

    /// While `failing`, answer every new watch request with 500 InternalError
    /// (other requests are served): holds clients off so that tests can
    /// change state while no watch is open.
    pub fn fail_watches(&self, failing: bool) {
        self.state.fail_watches.store(failing, Ordering::SeqCst);
    }

    /// While `closing`, end every new watch at once, cleanly (an empty
    /// stream): a broken proxy or an overloaded server, which a client must
    /// not answer by reconnecting in a tight loop.
    pub fn close_watches(&self, closing: bool) {
        self.state.close_watches.store(closing, Ordering::SeqCst);
    }

    /// Answer the next `n` requests (of any kind) with 500 InternalError.
    pub fn fail_next_requests(&self, n: usize) {
        self.state.fail_next.store(n, Ordering::SeqCst);
    }

    /// Hold every `method` request (`GET`, `PATCH`, ...) for exactly `path`
    /// (no query: a list and a watch of a collection share one) until the
    /// returned [`Hold`] is released or dropped: a slow list, or a write a
    /// client is stuck in, for exactly as long as a test needs, with no
    /// timing involved.
    pub fn hold_requests(&self, method: &str, path: &str) -> Hold {
        let hold = Arc::new(HoldState {
            method: method.to_owned(),
            path: path.to_owned(),
            seen: AtomicUsize::new(0),
            held: AtomicUsize::new(0),
            released: watch::Sender::new(false),
        });
        self.state
            .holds
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(hold.clone());
        Hold {
            hold,
            state: self.state.clone(),
        }
    }

    /// Refuse every `GET` of exactly `path` (a collection: its lists and
    /// its watches) with `403 Forbidden`, worded as kube-apiserver words a
    /// missing RBAC rule (`pods is forbidden: User "…" cannot list resource
    /// "pods" in API group "" at the cluster scope`), until the returned
    /// [`Forbidden`] is dropped.
    pub fn forbid_reads(&self, path: &str) -> Forbidden {
        self.state
            .forbidden
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(path.to_owned());
        Forbidden {
            path: path.to_owned(),
            state: self.state.clone(),
        }
    }

    /// Answer the next `n` requests whose path ends with `suffix` (e.g.
    /// `/configmaps/web`) with 429 TooManyRequests and `Retry-After: 1`, as
    /// API Priority and Fairness does when a client's flow is over its share.
    pub fn throttle_requests_to(&self, suffix: &str, n: usize) {
        *self
            .state
            .throttle
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some((suffix.to_owned(), n));
    }
}

/// Requests held by [`Faults::hold_requests`]; released when dropped.
#[derive(Debug)]
pub struct Hold {
    hold: Arc<HoldState>,
    state: Arc<FaultState>,
}

impl Hold {
    /// Requests that came to the hold so far.
    pub fn seen(&self) -> usize {
        self.hold.seen.load(Ordering::SeqCst)
    }

    /// Requests waiting in it now.
    pub fn held(&self) -> usize {
        self.hold.held.load(Ordering::SeqCst)
    }

    /// Lets the held requests go on, and every later one through.
    pub fn release(self) {
        drop(self);
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        self.state.release(&self.hold);
    }
}

/// Reads refused by [`Faults::forbid_reads`]; allowed again when dropped.
#[derive(Debug)]
pub struct Forbidden {
    path: String,
    state: Arc<FaultState>,
}

impl Drop for Forbidden {
    fn drop(&mut self) {
        let mut forbidden = self
            .state
            .forbidden
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(at) = forbidden.iter().position(|path| *path == self.path) {
            forbidden.remove(at);
        }
    }
}
