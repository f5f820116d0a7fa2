//! The leader-election record kept in a Lease's spec, and the decision an
//! elector takes on what it observed: renew, take over, or wait. Pure
//! functions of the observation and the clocks, so every rule of client-go's
//! `tryAcquireOrRenew` is unit-tested here.

use k8s_openapi::api::coordination::v1::LeaseSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use std::time::Duration;
use tokio::time::Instant;

/// The Lease's spec as this elector last saw it, and when it saw it change,
/// by its own monotonic clock. Expiry is judged from that moment, never from
/// the `renewTime` written by another machine, so clock skew between nodes
/// does not matter (client-go's `observedTime`).
#[derive(Debug, Clone)]
pub(crate) struct Observed {
    /// The spec, as read or written.
    pub spec: LeaseSpec,
    /// When this elector first saw this spec.
    pub since: Instant,
}

impl Observed {
    /// Records `spec` as seen at `now`; the time only moves when the spec
    /// changed, so a holder that stops renewing ages even if we keep reading.
    pub fn update(previous: Option<Observed>, spec: LeaseSpec, now: Instant) -> Observed {
        match previous {
            Some(previous) if previous.spec == spec => previous,
            _ => Observed { spec, since: now },
        }
    }

    /// The holder, if any (an empty string counts as none).
    pub fn holder(&self) -> Option<&str> {
        self.spec
            .holder_identity
            .as_deref()
            .filter(|h| !h.is_empty())
    }

    /// When the holder's claim runs out by our clock: the spec's own
    /// `leaseDurationSeconds` after we saw it change (ours if unset).
    pub fn expires_at(&self, own_duration: Duration) -> Instant {
        let seconds = self
            .spec
            .lease_duration_seconds
            .map(|s| Duration::from_secs(u64::try_from(s).unwrap_or(0)))
            .unwrap_or(own_duration);
        self.since + seconds
    }
}

/// What to do after reading the Lease.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Decision {
    /// Write this spec (renewing our claim or taking over a free or expired
    /// one), conditional on the resourceVersion we read.
    Write(LeaseSpec),
    /// Someone else holds a claim that has not expired: wait.
    HeldBy {
        /// Their identity.
        holder: String,
        /// How long until it expires by our clock, unless they renew.
        expires_in: Duration,
    },
}

/// client-go's rules. We renew when we are the holder, keeping
/// `acquireTime` and `leaseTransitions`; we take over a Lease with no holder
/// or whose holder we have not seen renew for its lease duration, setting
/// `acquireTime` and incrementing `leaseTransitions`; otherwise we wait.
pub(crate) fn decide(
    observed: &Observed,
    identity: &str,
    lease_duration: Duration,
    now: Instant,
    wall_now: Timestamp,
) -> Decision {
    let old = &observed.spec;
    match observed.holder() {
        Some(holder) if holder == identity => Decision::Write(LeaseSpec {
            holder_identity: Some(identity.to_owned()),
            lease_duration_seconds: Some(seconds(lease_duration)),
            renew_time: Some(MicroTime(wall_now)),
            acquire_time: old.acquire_time.clone().or(Some(MicroTime(wall_now))),
            lease_transitions: Some(old.lease_transitions.unwrap_or(0)),
            ..old.clone()
        }),
        Some(holder) if observed.expires_at(lease_duration) > now => Decision::HeldBy {
            holder: holder.to_owned(),
            expires_in: observed.expires_at(lease_duration) - now,
        },
        _ => Decision::Write(LeaseSpec {
            lease_transitions: Some(old.lease_transitions.unwrap_or(0).saturating_add(1)),
            ..claim(identity, lease_duration, wall_now)
        }),
    }
}

/// The spec of a brand-new Lease held by `identity` (no transitions yet).
pub(crate) fn claim(identity: &str, lease_duration: Duration, wall_now: Timestamp) -> LeaseSpec {
    LeaseSpec {
        holder_identity: Some(identity.to_owned()),
        lease_duration_seconds: Some(seconds(lease_duration)),
        acquire_time: Some(MicroTime(wall_now)),
        renew_time: Some(MicroTime(wall_now)),
        lease_transitions: Some(0),
        ..LeaseSpec::default()
    }
}

/// The spec that gives the Lease up: no holder, so any follower may take it
/// at once; the transition count is kept (client-go's release).
pub(crate) fn released(old: &LeaseSpec, wall_now: Timestamp) -> LeaseSpec {
    LeaseSpec {
        holder_identity: None,
        lease_duration_seconds: Some(1),
        acquire_time: None,
        renew_time: Some(MicroTime(wall_now)),
        lease_transitions: old.lease_transitions,
        ..old.clone()
    }
}

fn seconds(duration: Duration) -> i32 {
    i32::try_from(duration.as_secs()).unwrap_or(i32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEASE: Duration = Duration::from_secs(15);

    fn held_by(holder: &str, transitions: i32) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(holder.into()),
            lease_duration_seconds: Some(15),
            acquire_time: Some(MicroTime(Timestamp::UNIX_EPOCH)),
            renew_time: Some(MicroTime(Timestamp::UNIX_EPOCH)),
            lease_transitions: Some(transitions),
            ..LeaseSpec::default()
        }
    }

    fn observed(spec: LeaseSpec, since: Instant) -> Observed {
        Observed { spec, since }
    }

    #[test]
    fn a_valid_claim_of_another_holder_is_respected_until_it_expires_by_our_clock() {
        let seen = Instant::now();
        let o = observed(held_by("b", 3), seen);
        let wall = Timestamp::now();
        let just_before = seen + LEASE - Duration::from_millis(1);
        assert_eq!(
            decide(&o, "a", LEASE, just_before, wall),
            Decision::HeldBy {
                holder: "b".into(),
                expires_in: Duration::from_millis(1)
            }
        );
        let Decision::Write(spec) = decide(&o, "a", LEASE, seen + LEASE, wall) else {
            panic!("an expired claim must be taken over");
        };
        assert_eq!(spec.holder_identity.as_deref(), Some("a"));
        assert_eq!(
            spec.lease_transitions,
            Some(4),
            "a takeover is a transition"
        );
        assert_eq!(spec.acquire_time, Some(MicroTime(wall)));
        assert_eq!(spec.renew_time, Some(MicroTime(wall)));
        assert_eq!(spec.lease_duration_seconds, Some(15));
    }

    #[test]
    fn the_holders_own_lease_duration_decides_expiry_not_ours() {
        let seen = Instant::now();
        let mut spec = held_by("b", 0);
        spec.lease_duration_seconds = Some(60);
        let o = observed(spec, seen);
        assert!(matches!(
            decide(
                &o,
                "a",
                LEASE,
                seen + Duration::from_secs(30),
                Timestamp::now()
            ),
            Decision::HeldBy { .. }
        ));
    }

    #[test]
    fn renewing_keeps_acquire_time_and_transitions() {
        let o = observed(held_by("a", 7), Instant::now());
        let wall = Timestamp::now();
        let Decision::Write(spec) = decide(&o, "a", LEASE, Instant::now(), wall) else {
            panic!("the holder renews");
        };
        assert_eq!(spec.lease_transitions, Some(7));
        assert_eq!(spec.acquire_time, Some(MicroTime(Timestamp::UNIX_EPOCH)));
        assert_eq!(spec.renew_time, Some(MicroTime(wall)));
    }

    #[test]
    fn a_released_lease_is_taken_at_once_and_counts_a_transition() {
        let now = Instant::now();
        let o = observed(released(&held_by("b", 2), Timestamp::now()), now);
        assert_eq!(o.holder(), None);
        let Decision::Write(spec) = decide(&o, "a", LEASE, now, Timestamp::now()) else {
            panic!("a released lease is free");
        };
        assert_eq!(spec.holder_identity.as_deref(), Some("a"));
        assert_eq!(spec.lease_transitions, Some(3));
    }

    #[test]
    fn an_empty_holder_identity_means_free() {
        let now = Instant::now();
        let mut spec = held_by("", 0);
        spec.holder_identity = Some(String::new());
        assert!(matches!(
            decide(&observed(spec, now), "a", LEASE, now, Timestamp::now()),
            Decision::Write(_)
        ));
    }

    #[test]
    fn the_observation_clock_only_moves_when_the_spec_changes() {
        let t0 = Instant::now();
        let first = Observed::update(None, held_by("b", 0), t0);
        let later = t0 + Duration::from_secs(5);
        let same = Observed::update(Some(first), held_by("b", 0), later);
        assert_eq!(
            same.since, t0,
            "re-reading an unchanged spec does not refresh it"
        );
        let mut renewed = held_by("b", 0);
        renewed.renew_time = Some(MicroTime(Timestamp::now()));
        let changed = Observed::update(Some(same), renewed, later);
        assert_eq!(changed.since, later);
    }
}
