//! When a container's crashes happened, as far as the plugin can tell, and
//! how many fell within the window.
//!
//! A Pod's status only says how many times a container restarted
//! (`restartCount`) and when its last run ended
//! (`lastState.terminated.finishedAt`): one timestamp, for the latest crash.
//! Watching the Pod gives one such timestamp per change; the plugin keeps
//! them as *anchors*, each saying "the crashes numbered above `k` happened
//! at or after `t`":
//!
//! - a change showing restart count `r` and finish time `f` anchors
//!   `(r - 1, f)`: crash `r` happened at `f`;
//! - the Pod's `status.startTime` `s` anchors `(0, s)`: every crash came
//!   after the Pod started.
//!
//! The crashes certainly within the window ending at the latest crash are
//! then `restarts - k` for the smallest `k` anchored inside the window.
//! Changes merged by coalesced delivery (a count jumping from 1 to 4) lose
//! the times of the crashes in between, which then only count once an
//! anchor before them is inside the window: the count is never
//! overestimated.

use herald_sdk::k8s_openapi::jiff::{SignedDuration, Timestamp};

/// One container's crashes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Crashes {
    /// The restart count last seen.
    restarts: i32,
    /// When the latest crash happened.
    last: Timestamp,
    /// `(k, t)`: the crashes numbered above `k` happened at or after `t`;
    /// ordered by `t`, none older than the window before `last`.
    anchors: Vec<(i32, Timestamp)>,
}

/// What one observation changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seen {
    /// Nothing new.
    Nothing,
    /// New crashes. `after_quiet` when the previous crash was more than a
    /// window earlier: a new episode.
    Crashed {
        /// The previous crash was more than a window before this one.
        after_quiet: bool,
    },
}

impl Crashes {
    /// The history known from one look at the container: `restarts` (at
    /// least 1) crashes, the latest at `last`, all after `started` (the
    /// Pod's start) when known.
    pub fn first(restarts: i32, last: Timestamp, started: Option<Timestamp>) -> Self {
        let mut anchors = Vec::with_capacity(2);
        if let Some(started) = started.filter(|started| *started <= last) {
            anchors.push((0, started));
        }
        anchors.push((restarts - 1, last));
        Self {
            restarts,
            last,
            anchors,
        }
    }

    /// The restart count last seen.
    pub fn restarts(&self) -> i32 {
        self.restarts
    }

    /// When the latest crash happened.
    pub fn last(&self) -> Timestamp {
        self.last
    }

    /// Takes in a new look: `restarts` now, the latest crash at `finished`
    /// (its `lastState.terminated.finishedAt`) or, when the status does not
    /// say, `now`. A count that went down is a different container (the
    /// caller starts over).
    pub fn observe(
        &mut self,
        restarts: i32,
        finished: Option<Timestamp>,
        now: Timestamp,
        window: SignedDuration,
    ) -> Seen {
        if restarts <= self.restarts {
            return Seen::Nothing;
        }
        // A finish time no later than the crash already known belongs to
        // it (the status has not caught up): the new crash is now.
        let at = finished
            .filter(|finished| *finished > self.last)
            .unwrap_or_else(|| now.max(self.last));
        let after_quiet = at.duration_since(self.last) > window;
        self.anchors.push((restarts - 1, at));
        self.restarts = restarts;
        self.last = at;
        let since = self.window_start(window);
        self.anchors.retain(|(_, t)| *t >= since);
        Seen::Crashed { after_quiet }
    }

    fn window_start(&self, window: SignedDuration) -> Timestamp {
        self.last.checked_sub(window).unwrap_or(Timestamp::MIN)
    }

    /// How many crashes certainly happened within `window` up to the
    /// latest one (at least 1).
    pub fn in_window(&self, window: SignedDuration) -> i32 {
        let since = self.window_start(window);
        let first = self
            .anchors
            .iter()
            .filter(|(_, t)| *t >= since)
            .map(|(k, _)| *k)
            .min()
            .unwrap_or(self.restarts - 1);
        self.restarts - first
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WINDOW: SignedDuration = SignedDuration::from_mins(10);

    fn at(minute: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + minute * 60).unwrap()
    }

    #[test]
    fn crashes_seen_one_by_one_count_within_the_window() {
        let mut crashes = Crashes::first(1, at(0), None);
        assert_eq!(crashes.in_window(WINDOW), 1);
        assert_eq!(
            crashes.observe(2, Some(at(2)), at(2), WINDOW),
            Seen::Crashed { after_quiet: false }
        );
        assert_eq!(
            crashes.observe(3, Some(at(5)), at(5), WINDOW),
            Seen::Crashed { after_quiet: false }
        );
        assert_eq!(crashes.in_window(WINDOW), 3);
        assert_eq!(
            crashes.observe(3, Some(at(5)), at(6), WINDOW),
            Seen::Nothing
        );
        crashes.observe(4, Some(at(11)), at(11), WINDOW);
        assert_eq!(crashes.in_window(WINDOW), 3, "the crash at 0 fell out");
        assert_eq!(crashes.restarts(), 4);
        assert_eq!(crashes.last(), at(11));
    }

    #[test]
    fn spread_out_crashes_never_add_up() {
        let mut crashes = Crashes::first(1, at(0), Some(at(-60)));
        for (count, minute) in [(2, 15), (3, 30), (4, 45)] {
            assert_eq!(
                crashes.observe(count, Some(at(minute)), at(minute), WINDOW),
                Seen::Crashed { after_quiet: true }
            );
            assert_eq!(crashes.in_window(WINDOW), 1);
        }
        assert!(crashes.anchors.len() <= 2, "old anchors are pruned");
    }

    #[test]
    fn the_pods_start_bounds_crashes_seen_all_at_once() {
        // Started at 0, already restarted 4 times by minute 6: all 4 within
        // 10 minutes.
        assert_eq!(Crashes::first(4, at(6), Some(at(0))).in_window(WINDOW), 4);
        // Started an hour earlier: only the latest crash is known in time.
        assert_eq!(Crashes::first(4, at(6), Some(at(-60))).in_window(WINDOW), 1);
        assert_eq!(Crashes::first(4, at(6), None).in_window(WINDOW), 1);
    }

    #[test]
    fn merged_changes_count_once_an_earlier_anchor_is_inside() {
        let mut crashes = Crashes::first(1, at(0), Some(at(-60)));
        // 1 -> 4 in one change: crashes 2 and 3 happened after minute 0.
        crashes.observe(4, Some(at(3)), at(3), WINDOW);
        assert_eq!(crashes.in_window(WINDOW), 4);
        crashes.observe(5, Some(at(12)), at(12), WINDOW);
        // The anchor at 0 fell out; 3 at minute 3 is (3, 3): crashes 4 and 5.
        assert_eq!(crashes.in_window(WINDOW), 2);
    }

    #[test]
    fn a_missing_or_stale_finish_time_means_now() {
        let mut crashes = Crashes::first(1, at(0), None);
        crashes.observe(2, None, at(4), WINDOW);
        assert_eq!(crashes.last(), at(4));
        crashes.observe(3, Some(at(1)), at(7), WINDOW);
        assert_eq!(crashes.last(), at(7));
        assert_eq!(crashes.in_window(WINDOW), 3);
    }
}
