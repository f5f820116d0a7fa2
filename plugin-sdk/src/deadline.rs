//! How long the call under way has left before its deadline (world 0.4.0).
//!
//! The host ends a call that passes its deadline with a `deadline` fault
//! (the instance is rebuilt and the notification retried), and bounds every
//! host call by it: a Kubernetes or HTTP request gets at most 80 % of what
//! is left. A handler that has more than one slow thing to do asks first:
//!
//! ```
//! use std::time::Duration;
//! use herald_sdk::k8s_openapi::api::core::v1::Pod;
//! use herald_sdk::{Error, Event, Handler, Manifest, Subscription, deadline, workqueue};
//!
//! #[derive(Default)]
//! struct Batch;
//!
//! impl Handler for Batch {
//!     fn manifest() -> Manifest {
//!         Manifest::new("batch", "0.1.0").subscribe(Subscription::to::<Pod>().coalesced())
//!     }
//!
//!     fn on_add(&mut self, event: &Event) -> Result<(), Error> {
//!         if deadline::remaining() < Duration::from_millis(200) {
//!             // Not enough time for the webhook: come back to it.
//!             workqueue::requeue_after(Duration::from_secs(1));
//!             return Ok(());
//!         }
//!         // … the slow call …
//!         Ok(())
//!     }
//! }
//! # herald_sdk::testing::reset();
//! # herald_sdk::testing::set_deadline_remaining(Duration::from_millis(50));
//! # let mut pod = Pod::default();
//! # pod.metadata.name = Some("web".into());
//! # Batch.on_add(&herald_sdk::testing::added(&pod)).unwrap();
//! # assert_eq!(herald_sdk::testing::requeues(), [Duration::from_secs(1)]);
//! ```

use std::time::Duration;

/// What is left of the call under way before its deadline, to the
/// millisecond (rounded down); zero once it has passed. In the test host, a
/// second unless [`testing::set_deadline_remaining`](crate::testing::set_deadline_remaining)
/// says otherwise.
pub fn remaining() -> Duration {
    Duration::from_millis(crate::host::deadline_remaining_ms())
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use crate::testing;

    #[test]
    fn the_test_host_answers_a_second_unless_told_otherwise() {
        testing::reset();
        assert_eq!(remaining(), Duration::from_secs(1));
        testing::set_deadline_remaining(Duration::from_millis(1500));
        assert_eq!(remaining(), Duration::from_millis(1500));
        testing::reset();
        assert_eq!(remaining(), Duration::from_secs(1));
    }
}
