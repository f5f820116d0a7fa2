//! The `workqueue` capability (0.3.0): a handler asks for the notification
//! it is handling to be delivered again after a delay (client-go's
//! `AddAfter`), a level-triggered re-check.
//!
//! - **Grant.** Every plugin has it: a request only schedules the plugin's
//!   own work, within its own queue.
//! - **Semantics.** The last request of a call wins, and counts only if the
//!   call succeeds ([`Requeue::take`] after each call). Coalesced
//!   subscriptions honour it (`crate::dispatch`'s worker, capped at
//!   `MAX_REQUEUE_DELAY`); every-event ones ignore it with one warning,
//!   since a later delivery would break their order.
//! - **Dry-run.** No difference: the queue is the host's.
//! - **Replay.** `herald plugin replay` shows each request under the event
//!   that made it.

use crate::wit::v0_3::herald::plugin0_3_0::workqueue;
use std::time::Duration;
use wasmtime::component::{HasData, Linker};

/// One instance's requeue request for the call under way.
#[derive(Debug, Default)]
pub struct Requeue {
    after: Option<Duration>,
}

impl Requeue {
    /// Takes the call's request, leaving none (before and after each call).
    pub fn take(&mut self) -> Option<Duration> {
        self.after.take()
    }
}

/// What the `workqueue` import reaches: the instance's request.
pub struct WorkqueueHost<'a> {
    /// The request of the call under way.
    pub requeue: &'a mut Requeue,
}

impl workqueue::Host for WorkqueueHost<'_> {
    fn requeue_after(&mut self, delay_ms: u64) {
        self.requeue.after = Some(Duration::from_millis(delay_ms));
    }
}

/// The `workqueue` capability, as the list in `capability/mod.rs` names it.
#[derive(Debug)]
pub struct Workqueue;

impl super::factor::Capability for Workqueue {
    const ABOUT: super::factor::About = super::factor::About {
        name: "workqueue",
        wit: "`workqueue` (0.3.0)",
        acts: super::factor::Acts::InsideHost,
    };
    type Stats = ();
    type Plugin = ();
    /// The instance's request for the call under way.
    type Instance = Requeue;

    fn prepare(_: &super::Setup<'_>) {}

    fn instantiate(_: &()) -> Requeue {
        Requeue::default()
    }

    fn host<'a>(_: &'a (), requeue: &'a mut Requeue, _: super::CallScope<'a>) -> WorkqueueHost<'a> {
        WorkqueueHost { requeue }
    }

    /// Links `workqueue` (0.3.0 and later).
    fn add_to_linker<T: super::View + 'static>(
        linker: &mut Linker<T>,
        reach: fn(&mut T) -> WorkqueueHost<'_>,
    ) -> wasmtime::Result<()> {
        workqueue::add_to_linker::<T, Workqueue>(linker, reach)
    }
}

impl HasData for Workqueue {
    type Data<'a> = WorkqueueHost<'a>;
}
