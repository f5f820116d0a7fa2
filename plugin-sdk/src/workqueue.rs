//! The plugin's work queue, which has client-go's semantics: ask for the
//! object being handled to be delivered again later, for a level-triggered
//! re-check ([`requeue_after`]).
//!
//! With [`coalesced`](crate::Subscription::coalesced) delivery, a failed call
//! (an `Err` from the handler) does not hold up other objects: the host
//! retries that object alone, with a delay doubling from 5 ms to 1,000 s per
//! consecutive failure, and a newer change to it is delivered once, at once,
//! with the newest state. With every-event delivery failures are retried in
//! order, blocking the subscription (each event matters there).
//!
//! ```
//! use std::time::Duration;
//! use herald_sdk::k8s_openapi::api::apps::v1::Deployment;
//! use herald_sdk::{Error, Event, Handler, Manifest, Subscription, workqueue};
//!
//! #[derive(Default)]
//! struct DeadlineWatch;
//!
//! impl Handler for DeadlineWatch {
//!     fn manifest() -> Manifest {
//!         Manifest::new("deadline-watch", "0.1.0").subscribe(Subscription::to::<Deployment>().coalesced())
//!     }
//!
//!     fn on_add(&mut self, event: &Event) -> Result<(), Error> {
//!         // Nothing may change before the deadline passes: look again then.
//!         workqueue::requeue_after(Duration::from_secs(600));
//!         Ok(())
//!     }
//! }
//! # herald_sdk::testing::reset();
//! # let mut deployment = Deployment::default();
//! # deployment.metadata.name = Some("web".into());
//! # DeadlineWatch.on_add(&herald_sdk::testing::added(&deployment)).unwrap();
//! # assert_eq!(herald_sdk::testing::requeues(), [Duration::from_secs(600)]);
//! ```

use std::time::Duration;

/// Asks for the object of the call under way to be delivered again after
/// `delay` (millisecond precision; longer than `u64::MAX` milliseconds
/// saturates), once the call returns `Ok`.
///
/// - **The last request of a call wins**: calling it twice in one call
///   leaves only the second delay.
/// - A newer change to the object delivered before then takes its place
///   (the re-delivery would only repeat what the handler has just seen).
/// - A call that returns `Err` is retried with the host's backoff instead;
///   the request is dropped.
/// - **Honoured for coalesced subscriptions** only; for every-event ones the
///   host ignores it with a warning in the plugin's log, since a later
///   re-delivery would break the order of events.
///
/// The re-delivery is an update whose old and new states are the cached
/// object.
pub fn requeue_after(delay: Duration) {
    crate::host::requeue_after(u64::try_from(delay.as_millis()).unwrap_or(u64::MAX));
}

// The tests run against the native stand-in host.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use crate::testing;

    #[test]
    fn requests_are_recorded_in_milliseconds_and_saturate() {
        testing::reset();
        requeue_after(Duration::from_millis(1500));
        requeue_after(Duration::from_micros(2500));
        requeue_after(Duration::MAX);
        assert_eq!(
            testing::take_requeues(),
            [
                Duration::from_millis(1500),
                Duration::from_millis(2),
                Duration::from_millis(u64::MAX)
            ]
        );
        assert!(testing::requeues().is_empty());
    }
}
