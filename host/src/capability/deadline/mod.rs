//! The `deadline` capability (0.4.0): how long the call under way has left.
//!
//! - **Grant.** Every plugin has it: it tells a plugin only about its own
//!   call, which it could time itself.
//! - **Semantics.** Milliseconds left before the deadline of the call under
//!   way, rounded down, 0 once it has passed; the deadline is the one the
//!   runtime enforces (`crate::plugin`'s epoch interruption and the call's
//!   future dropped at the deadline), and every host call is bounded by it.
//!   `manifest` has a deadline too (the operator's default).
//! - **Dry-run, replay.** No difference; replay runs calls under the
//!   plugin's deadline as the daemon does.

use crate::wit::v0_4::herald::plugin0_4_0::deadline;
use std::time::Instant;
use wasmtime::component::{HasData, Linker};

/// What the `deadline` import reaches: the deadline of the call under way.
pub struct DeadlineHost {
    /// When the call must end; `None` outside a deadline.
    pub deadline: Option<Instant>,
}

impl deadline::Host for DeadlineHost {
    fn remaining_ms(&mut self) -> u64 {
        remaining_ms(self.deadline, Instant::now())
    }
}

/// Whole milliseconds from `now` to `deadline`; `u64::MAX` without one.
fn remaining_ms(deadline: Option<Instant>, now: Instant) -> u64 {
    match deadline {
        Some(deadline) => {
            u64::try_from(deadline.saturating_duration_since(now).as_millis()).unwrap_or(u64::MAX)
        }
        None => u64::MAX,
    }
}

/// The `deadline` capability, as the list in `capability/mod.rs` names it.
#[derive(Debug)]
pub struct Deadline;

impl super::factor::Capability for Deadline {
    const ABOUT: super::factor::About = super::factor::About {
        name: "deadline",
        wit: "`deadline` (0.4.0)",
        acts: super::factor::Acts::InsideHost,
    };
    type Stats = ();
    type Plugin = ();
    type Instance = ();

    fn prepare(_: &super::Setup<'_>) {}

    fn instantiate(_: &()) {}

    fn host<'a>(_: &'a (), _: &'a mut (), call: super::CallScope<'a>) -> DeadlineHost {
        DeadlineHost {
            deadline: call.deadline,
        }
    }

    /// Links `deadline` (0.4.0 and later).
    fn add_to_linker<T: super::View + 'static>(
        linker: &mut Linker<T>,
        reach: fn(&mut T) -> DeadlineHost,
    ) -> wasmtime::Result<()> {
        deadline::add_to_linker::<T, Deadline>(linker, reach)
    }
}

impl HasData for Deadline {
    type Data<'a> = DeadlineHost;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn what_is_left_is_rounded_down_and_never_negative() {
        let now = Instant::now();
        assert_eq!(
            remaining_ms(Some(now + Duration::from_micros(1999)), now),
            1
        );
        assert_eq!(remaining_ms(Some(now), now), 0);
        assert_eq!(remaining_ms(Some(now), now + Duration::from_secs(1)), 0);
        assert_eq!(remaining_ms(None, now), u64::MAX);
    }
}
