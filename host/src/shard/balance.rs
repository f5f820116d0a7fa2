//! Which plugins this replica should take and which it should give up,
//! from one observation of every Lease: a pure function, unit-tested here.
//!
//! The policy, balanced by count and stable:
//!
//! - Each live member has a target: `floor(plugins / members)`, plus one
//!   for the `plugins mod members` members that hold the most now (ties
//!   broken by identity), so every replica computes the same targets from
//!   the same observation, the targets differ by at most one, and reaching
//!   them moves as few plugins as possible. Seven plugins over three
//!   replicas settle at 3/2/2, never 3/3/1.
//! - A replica under its target takes free plugins (no holder, or a holder
//!   whose claim expired by its own clock) up to its target.
//! - A replica over its target gives up the excess, but only when some live
//!   member holds at least two fewer plugins than it does: a move must make
//!   the spread smaller, so nothing moves once no two replicas differ by
//!   more than one.
//! - A plugin left free for a whole lease duration is taken by anyone, over
//!   its share if need be (replicas whose views of the membership disagree
//!   for a while must not leave a plugin undispatched).
//! - Among candidates, each replica prefers plugins by rendezvous hashing
//!   (highest `hash(plugin, replica)` first), so replicas taking at the same
//!   time mostly reach for different Leases, and gives up its least
//!   preferred ones first.

use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};

/// Who holds one plugin's Lease, as this replica sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Holding {
    /// This replica.
    Mine,
    /// Another replica, with a claim valid by our clock.
    Other(String),
    /// Nobody (no holder, or an expired claim).
    Free {
        /// Free for at least a lease duration.
        orphaned: bool,
    },
}

/// One observation: who is alive and who holds what.
#[derive(Debug, Clone)]
pub struct View {
    /// This replica's identity.
    pub me: String,
    /// Identities of the live members, this replica included.
    pub members: BTreeSet<String>,
    /// Every plugin this replica runs, with its holder.
    pub plugins: BTreeMap<String, Holding>,
}

/// What to do about it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Free plugins to try to acquire, most preferred first.
    pub acquire: Vec<String>,
    /// Held plugins to give up.
    pub release: Vec<String>,
}

impl View {
    /// `ceil(plugins / live members)`, the most any replica should hold.
    pub fn share(&self) -> usize {
        let members = self.members.len().max(1);
        self.plugins.len().div_ceil(members)
    }

    /// Each live member's target (see the module docs).
    pub fn targets(&self) -> BTreeMap<&str, usize> {
        let loads = self.loads();
        let members = self.members.len().max(1);
        let (floor, extra) = (self.plugins.len() / members, self.plugins.len() % members);
        let mut ranked: Vec<(&str, usize)> = loads.into_iter().collect();
        // Most held first, then by identity: the same order on every replica.
        ranked.sort_by(|(a, load_a), (b, load_b)| load_b.cmp(load_a).then(a.cmp(b)));
        ranked
            .into_iter()
            .enumerate()
            .map(|(rank, (member, _))| (member, floor + usize::from(rank < extra)))
            .collect()
    }

    /// How many plugins each live member holds (zero for those holding none).
    pub fn loads(&self) -> BTreeMap<&str, usize> {
        let mut loads: BTreeMap<&str, usize> =
            self.members.iter().map(|m| (m.as_str(), 0)).collect();
        for holding in self.plugins.values() {
            let holder = match holding {
                Holding::Mine => self.me.as_str(),
                Holding::Other(other) => other.as_str(),
                Holding::Free { .. } => continue,
            };
            if let Some(load) = loads.get_mut(holder) {
                *load += 1;
            }
        }
        loads
    }
}

/// The plan for `view` (see the module docs).
pub fn plan(view: &View) -> Plan {
    let target = view
        .targets()
        .get(view.me.as_str())
        .copied()
        // Not a member yet (its own Lease not seen): the share, at most.
        .unwrap_or_else(|| view.share());
    let mine: Vec<&String> = view
        .plugins
        .iter()
        .filter(|(_, h)| **h == Holding::Mine)
        .map(|(name, _)| name)
        .collect();
    let loads = view.loads();
    let lightest = loads
        .iter()
        .filter(|(member, _)| **member != view.me)
        .map(|(_, load)| *load)
        .min();
    let mut plan = Plan::default();
    if mine.len() > target && lightest.is_some_and(|light| light + 1 < mine.len()) {
        let mut by_preference = mine.clone();
        by_preference.sort_by_key(|name| preference(name, &view.me));
        plan.release = by_preference
            .into_iter()
            .take(mine.len() - target)
            .cloned()
            .collect();
    }
    let mut free: Vec<(&String, bool)> = view
        .plugins
        .iter()
        .filter_map(|(name, h)| match h {
            Holding::Free { orphaned } => Some((name, *orphaned)),
            _ => None,
        })
        .collect();
    free.sort_by_key(|(name, _)| std::cmp::Reverse(preference(name, &view.me)));
    let mut room = target.saturating_sub(mine.len());
    for (name, orphaned) in free {
        if room > 0 || orphaned {
            room = room.saturating_sub(1);
            plan.acquire.push(name.clone());
        }
    }
    plan
}

/// Rendezvous score of `plugin` for `member`.
fn preference(plugin: &str, member: &str) -> u64 {
    let digest = Sha256::new()
        .chain_update(plugin.as_bytes())
        .chain_update([0])
        .chain_update(member.as_bytes())
        .finalize();
    u64::from_be_bytes(digest[..8].try_into().expect("8 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(me: &str, members: &[&str], plugins: &[(&str, Holding)]) -> View {
        View {
            me: me.into(),
            members: members.iter().map(|m| (*m).to_owned()).collect(),
            plugins: plugins
                .iter()
                .map(|(n, h)| ((*n).to_owned(), h.clone()))
                .collect(),
        }
    }

    fn other(id: &str) -> Holding {
        Holding::Other(id.into())
    }

    const FREE: Holding = Holding::Free { orphaned: false };

    #[test]
    fn a_lone_replica_takes_every_free_plugin() {
        let v = view("a", &["a"], &[("p1", FREE), ("p2", FREE), ("p3", FREE)]);
        let plan = plan(&v);
        assert_eq!(plan.acquire.len(), 3);
        assert!(plan.release.is_empty());
    }

    #[test]
    fn a_newcomer_takes_its_share_and_the_loaded_replicas_give_up_only_their_excess() {
        let names = ["p1", "p2", "p3", "p4", "p5", "p6"];
        // a and b hold three each; c just joined.
        let as_seen_by = |me: &str| {
            let plugins: Vec<(&str, Holding)> = names
                .iter()
                .enumerate()
                .map(|(i, n)| {
                    let holder = if i < 3 { "a" } else { "b" };
                    let h = if holder == me {
                        Holding::Mine
                    } else {
                        other(holder)
                    };
                    (*n, h)
                })
                .collect();
            view(me, &["a", "b", "c"], &plugins)
        };
        let a = plan(&as_seen_by("a"));
        let b = plan(&as_seen_by("b"));
        assert_eq!((a.release.len(), b.release.len()), (1, 1));
        assert!(a.acquire.is_empty() && b.acquire.is_empty());
        // Once released, c takes both and a and b take nothing.
        let after: Vec<(&str, Holding)> = names
            .iter()
            .map(|n| {
                let h = if a.release.contains(&(*n).to_owned())
                    || b.release.contains(&(*n).to_owned())
                {
                    FREE
                } else if n < &"p4" {
                    other("a")
                } else {
                    other("b")
                };
                (*n, h)
            })
            .collect();
        let c = plan(&view("c", &["a", "b", "c"], &after));
        assert_eq!(c.acquire.len(), 2);
    }

    /// Plays rounds of every member's plan over `holders` (plugin →
    /// member, `None` for free) until nothing changes; returns the loads
    /// and how many plugins changed hands.
    fn settle(
        members: &[&str],
        holders: &mut BTreeMap<String, Option<String>>,
    ) -> (Vec<usize>, usize) {
        let mut moves = 0;
        for _ in 0..20 {
            let mut changed = false;
            for me in members {
                let plugins: Vec<(String, Holding)> = holders
                    .iter()
                    .map(|(name, holder)| {
                        let holding = match holder {
                            Some(h) if h == me => Holding::Mine,
                            Some(h) => other(h),
                            None => FREE,
                        };
                        (name.clone(), holding)
                    })
                    .collect();
                let plugins: Vec<(&str, Holding)> = plugins
                    .iter()
                    .map(|(n, h)| (n.as_str(), h.clone()))
                    .collect();
                let plan = plan(&view(me, members, &plugins));
                for name in plan.release {
                    holders.insert(name, None);
                    moves += 1;
                    changed = true;
                }
                for name in plan.acquire {
                    holders.insert(name, Some((*me).to_owned()));
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        let loads = members
            .iter()
            .map(|m| {
                holders
                    .values()
                    .filter(|h| h.as_deref() == Some(*m))
                    .count()
            })
            .collect();
        (loads, moves)
    }

    #[test]
    fn seven_plugins_over_three_replicas_settle_at_three_two_two_with_one_move() {
        // Issue 33: 3/1/3 used to be left as it was (each at most the share).
        let mut holders: BTreeMap<String, Option<String>> = (1..=7)
            .map(|i| {
                let holder = match i {
                    1..=3 => "a",
                    4..=6 => "c",
                    _ => "b",
                };
                (format!("p{i}"), Some(holder.to_owned()))
            })
            .collect();
        let (loads, moves) = settle(&["a", "b", "c"], &mut holders);
        assert_eq!(moves, 1, "one plugin moves: {loads:?}");
        let mut sorted = loads.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, [2, 2, 3], "{loads:?}");
        // And from nothing held, and after a member leaves, the spread is
        // at most one.
        for (members, plugins) in [
            (&["a", "b", "c"][..], 7),
            (&["a", "b"][..], 7),
            (&["a", "b", "c", "d"][..], 10),
        ] {
            let mut holders: BTreeMap<String, Option<String>> =
                (0..plugins).map(|i| (format!("p{i}"), None)).collect();
            let (loads, _) = settle(members, &mut holders);
            let (min, max) = (loads.iter().min().unwrap(), loads.iter().max().unwrap());
            assert!(max - min <= 1, "{members:?}: {loads:?}");
            assert_eq!(loads.iter().sum::<usize>(), plugins);
        }
    }

    #[test]
    fn nothing_moves_when_the_spread_is_at_most_one() {
        // 3, 2, 2 of seven: stable, whoever holds the three.
        for (first, second, third) in [("a", "b", "c"), ("c", "a", "b"), ("b", "c", "a")] {
            let v = |me: &str| {
                let holder = |h: &str| if h == me { Holding::Mine } else { other(h) };
                view(
                    me,
                    &["a", "b", "c"],
                    &[
                        ("p1", holder(first)),
                        ("p2", holder(first)),
                        ("p3", holder(first)),
                        ("p4", holder(second)),
                        ("p5", holder(second)),
                        ("p6", holder(third)),
                        ("p7", holder(third)),
                    ],
                )
            };
            for me in ["a", "b", "c"] {
                assert_eq!(plan(&v(me)), Plan::default(), "{me} with {first} at 3");
            }
        }
        // 2, 2, 2: stable.
        let v = view(
            "a",
            &["a", "b", "c"],
            &[
                ("p1", Holding::Mine),
                ("p2", Holding::Mine),
                ("p3", other("b")),
                ("p4", other("b")),
                ("p5", other("c")),
                ("p6", other("c")),
            ],
        );
        assert_eq!(plan(&v), Plan::default());
    }

    #[test]
    fn a_replica_takes_free_plugins_up_to_its_share_and_orphans_beyond_it() {
        // share = ceil(4 / 2) = 2, one held: one slot for two free plugins.
        let v = view(
            "a",
            &["a", "b"],
            &[
                ("p1", Holding::Mine),
                ("p2", FREE),
                ("p3", other("b")),
                ("p4", FREE),
            ],
        );
        assert_eq!(plan(&v).acquire.len(), 1);
        // At its share, a leaves a free plugin to others until it has been
        // free for a lease duration.
        let at_share = |p4: Holding| {
            view(
                "a",
                &["a", "b"],
                &[
                    ("p1", Holding::Mine),
                    ("p2", Holding::Mine),
                    ("p3", other("b")),
                    ("p4", p4),
                ],
            )
        };
        assert!(plan(&at_share(FREE)).acquire.is_empty());
        assert_eq!(
            plan(&at_share(Holding::Free { orphaned: true })).acquire,
            ["p4"]
        );
    }

    #[test]
    fn an_over_share_replica_keeps_its_plugins_when_nobody_could_take_them() {
        // a at 4 and b at 3 of 7 (share 4): moving one would not shrink
        // the spread, so nothing moves.
        let v = view(
            "a",
            &["a", "b"],
            &[
                ("p1", Holding::Mine),
                ("p2", Holding::Mine),
                ("p3", Holding::Mine),
                ("p4", Holding::Mine),
                ("p5", other("b")),
                ("p6", other("b")),
                ("p7", other("b")),
            ],
        );
        assert_eq!(plan(&v), Plan::default());
    }

    #[test]
    fn a_dead_members_plugins_are_shared_once_it_has_left_the_membership() {
        // c died: its plugins are free and it is no longer a member.
        let v = view(
            "a",
            &["a", "b"],
            &[
                ("p1", Holding::Mine),
                ("p2", Holding::Mine),
                ("p3", other("b")),
                ("p4", other("b")),
                ("p5", FREE),
                ("p6", FREE),
            ],
        );
        assert_eq!(plan(&v).acquire.len(), 1, "share is 3");
    }

    #[test]
    fn preferences_spread_the_first_picks_of_replicas() {
        let names: Vec<String> = (0..12).map(|i| format!("plugin-{i}")).collect();
        let firsts: BTreeSet<String> = ["a", "b", "c"]
            .iter()
            .map(|me| {
                let plugins: Vec<(&str, Holding)> =
                    names.iter().map(|n| (n.as_str(), FREE)).collect();
                plan(&view(me, &["a", "b", "c"], &plugins)).acquire[0].clone()
            })
            .collect();
        assert!(
            firsts.len() > 1,
            "all three reach for the same plugin first"
        );
    }
}
