//! Waiting for a condition the test cannot be told about: [`eventually`]
//! looks again and again, with a short backoff, until the condition holds
//! or the patience runs out.
//!
//! A test that can wait on a signal (a channel, a `watch`, a log line with a
//! waiter) should: polling is for state that changes without telling anyone,
//! such as what an API server holds or a counter in the host.

use std::fmt::Display;
use std::future::Future;
use std::panic::Location;
use std::time::Duration;
use tokio::time::Instant;

/// How long a test waits for something that should happen at once. Only a
/// safety net: reaching it fails the test, it never decides an outcome.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// The first pause between two looks; each later pause doubles, up to the
/// [`Patience`]'s longest.
const FIRST_PAUSE: Duration = Duration::from_millis(1);

/// The longest pause between two looks, unless the [`Patience`] says
/// otherwise.
const LONGEST_PAUSE: Duration = Duration::from_millis(20);

/// How long [`eventually`] waits, and how often it looks.
///
/// A [`Duration`] converts into the usual patience; a test that times when
/// the condition began to hold shortens the pauses with
/// [`Patience::looking_at_least_every`], since a late look makes the
/// measured time late too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Patience {
    within: Duration,
    longest_pause: Duration,
}

impl Patience {
    /// Waiting up to `within`, with pauses doubling from 1 ms to 20 ms.
    pub const fn new(within: Duration) -> Patience {
        Patience {
            within,
            longest_pause: LONGEST_PAUSE,
        }
    }

    /// The same patience, never pausing longer than `pause` between looks.
    pub const fn looking_at_least_every(self, pause: Duration) -> Patience {
        Patience {
            longest_pause: pause,
            ..self
        }
    }
}

impl From<Duration> for Patience {
    fn from(within: Duration) -> Patience {
        Patience::new(within)
    }
}

/// What one look found: the condition holds (with a value to hand back), or
/// not yet (with what was seen instead, if the look can say).
///
/// `bool` holds when true; `Option<T>` holds when `Some` and hands back the
/// `T`; `Result<T, E>` holds when `Ok`, and its `Err` is what the failure
/// message shows as the last thing seen.
pub trait Outcome {
    /// What [`eventually`] returns once the condition holds.
    type Value;

    /// The value if the condition holds, else what was seen instead.
    fn into_value(self) -> Result<Self::Value, Option<String>>;
}

impl Outcome for bool {
    type Value = ();

    fn into_value(self) -> Result<(), Option<String>> {
        if self { Ok(()) } else { Err(None) }
    }
}

impl<T> Outcome for Option<T> {
    type Value = T;

    fn into_value(self) -> Result<T, Option<String>> {
        self.ok_or(None)
    }
}

impl<T, E: Display> Outcome for Result<T, E> {
    type Value = T;

    fn into_value(self) -> Result<T, Option<String>> {
        self.map_err(|seen| Some(seen.to_string()))
    }
}

/// Looks with `probe` until what it finds holds (see [`Outcome`]), and
/// returns the value it found then.
///
/// Panics once `patience` has run out, saying `what` never happened (so
/// phrase `what` as the awaited fact: "the ConfigMap is cached"), where the
/// wait was, how many looks it took and the last thing the probe reported
/// seeing. A probe that is still running when the patience runs out is
/// abandoned, so a hung request fails the test in time too. A panic inside
/// the probe (an assertion checked on every look) fails the test at once.
///
/// ```no_run
/// # async fn example(cached: impl Fn() -> Vec<String>) {
/// use herald_tests::{PATIENCE, eventually};
/// let names = eventually("the ConfigMap is cached", PATIENCE, async || {
///     let names = cached();
///     if names.iter().any(|n| n == "web") {
///         Ok(names)
///     } else {
///         Err(format!("cached: {names:?}"))
///     }
/// })
/// .await;
/// # }
/// ```
#[track_caller]
pub fn eventually<O: Outcome>(
    what: &str,
    patience: impl Into<Patience>,
    mut probe: impl AsyncFnMut() -> O,
) -> impl Future<Output = O::Value> {
    let caller = Location::caller();
    let patience = patience.into();
    async move {
        let deadline = Instant::now() + patience.within;
        let mut pause = FIRST_PAUSE;
        let mut looks = 0u64;
        let mut last_seen = None;
        loop {
            looks += 1;
            match tokio::time::timeout_at(deadline, probe()).await {
                Ok(outcome) => match outcome.into_value() {
                    Ok(value) => return value,
                    Err(seen) => last_seen = seen.or(last_seen),
                },
                Err(_) => give_up(what, patience, caller, looks, last_seen, true),
            }
            let now = Instant::now();
            if now >= deadline {
                give_up(what, patience, caller, looks, last_seen, false);
            }
            tokio::time::sleep(pause.min(deadline - now)).await;
            pause = (pause * 2).min(patience.longest_pause);
        }
    }
}

/// The panic of an [`eventually`] whose patience ran out.
fn give_up(
    what: &str,
    patience: Patience,
    caller: &Location<'_>,
    looks: u64,
    last_seen: Option<String>,
    probe_hung: bool,
) -> ! {
    let hung = if probe_hung {
        " (the last one was still running)"
    } else {
        ""
    };
    let seen = match last_seen {
        Some(seen) => format!("; last seen: {seen}"),
        None => String::new(),
    };
    panic!(
        "gave up after {:?} and {looks} looks{hung} at {caller}, waiting for: {what}{seen}",
        patience.within
    );
}
