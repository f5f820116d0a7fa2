//! A listener's buffer: unbounded and in order (every-event), or client-go's
//! rate-limited work queue (coalesced): one pending notification per key,
//! merged, each key made to wait after its failures (per-key exponential
//! backoff) or when its handler asked to see it again later, while the other
//! keys flow. Either way a slow plugin never blocks the informer.
//!
//! The coalesced queue takes the time as an argument (`now`) instead of
//! reading the clock, so what it does is a function of its inputs: the
//! worker passes [`Instant::now`], tests pass made-up instants and never wait.

use crate::informer::Notification;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::time::{Duration, Instant};

/// An entry taken from a queue.
#[derive(Debug, Clone)]
pub enum Item {
    /// A notification to deliver.
    Notify(Notification),
    /// Everything before this was the listener's initial list (for a
    /// coalesced queue: and every key of it was handled or given up on).
    Synced,
}

/// client-go's `ItemExponentialFailureRateLimiter` for coalesced delivery:
/// a key that failed `n` times waits `base_delay · 2^(n-1)`, capped at
/// `max_delay`, before its next attempt; its count is forgotten when it
/// succeeds. Unlike a plain client-go controller, a key is given up on after
/// `max_retries` retries (see [`KeyBackoff::default`] for why).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyBackoff {
    /// Wait after a key's first failure; doubles with each further one.
    pub base_delay: Duration,
    /// The longest wait.
    pub max_delay: Duration,
    /// Retries after a key's first failed attempt before its notification is
    /// skipped (and recorded, as in every-event delivery).
    pub max_retries: u32,
}

impl Default for KeyBackoff {
    /// client-go's delays (`DefaultItemBasedRateLimiter`: 5 ms doubling to
    /// 1000 s) and 15 retries: the last wait is 5 ms · 2^14 ≈ 82 s and a key
    /// that never succeeds is given up on about 164 s (the sum of the waits)
    /// after its first failure. That rides out what transient failures
    /// usually are (an API server restarting, a conflict, a dependency being
    /// rolled), while a key that can never succeed stops costing calls, is
    /// recorded like every other skip, and holds readiness (when it is part of
    /// the initial list) for under three minutes rather than forever.
    fn default() -> Self {
        KeyBackoff {
            base_delay: Duration::from_millis(5),
            max_delay: Duration::from_secs(1000),
            max_retries: 15,
        }
    }
}

impl KeyBackoff {
    /// The wait after a key's `failures`-th consecutive failure (1-based).
    pub fn delay(&self, failures: u32) -> Duration {
        exponential(self.base_delay, self.max_delay, failures.saturating_sub(1))
    }
}

/// `base · 2^doublings`, capped at `max` (without overflowing on the way).
pub(crate) fn exponential(base: Duration, max: Duration, doublings: u32) -> Duration {
    let nanos = 1u128
        .checked_shl(doublings)
        .and_then(|factor| base.as_nanos().checked_mul(factor));
    match nanos {
        Some(nanos) if nanos < max.as_nanos() => {
            // Below `max`, so it fits a Duration.
            Duration::new(
                (nanos / 1_000_000_000) as u64,
                (nanos % 1_000_000_000) as u32,
            )
        }
        _ => max,
    }
}

/// `now + delay`, or a year from now if that does not fit an `Instant`.
pub(crate) fn later(now: Instant, delay: Duration) -> Instant {
    now.checked_add(delay)
        .unwrap_or_else(|| now + Duration::from_secs(365 * 24 * 60 * 60))
}

/// What became of a failed notification handed back to a coalesced queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// It waits `delay` (its key's backoff) before its next attempt.
    Backoff {
        /// Consecutive failures of its key, this one included.
        failures: u32,
        /// How long it waits.
        delay: Duration,
    },
    /// A newer notification for the key arrived during the call: the two
    /// were merged and are ready at once (the failure is still counted).
    Merged {
        /// Consecutive failures of its key, this one included.
        failures: u32,
    },
    /// Its key failed more than [`KeyBackoff::max_retries`] retries allow:
    /// it is dropped and the key's count forgotten.
    GiveUp {
        /// Attempts made.
        failures: u32,
    },
}

/// The buffer of one listener.
#[derive(Debug)]
pub enum Queue {
    /// Every notification, in order, in a growing ring (client-go's buffer).
    EveryEvent(VecDeque<Item>),
    /// At most one pending notification per key, merged, with per-key
    /// delays; bounded by the number of keys.
    Coalesced(CoalescedQueue),
}

/// The coalescing work queue.
///
/// A key is in exactly one place: *ready* (in `ready`, in the order it
/// became ready), *waiting* (in `waiting`, not before an instant), or *in
/// flight* (handed out by [`Queue::pop`] and not yet handed back). Every
/// structure is therefore bounded by the number of keys: under any churn it
/// holds at most one slot per key, plus the end-of-initial-list marker.
#[derive(Debug, Default)]
pub struct CoalescedQueue {
    /// Ready keys in the order they became ready, and the end-of-initial-list
    /// marker where it was pushed.
    ready: VecDeque<Slot>,
    /// Every ready or waiting key's entry.
    entries: HashMap<String, Entry>,
    /// Waiting keys, by the instant they become ready.
    waiting: BTreeSet<(Instant, String)>,
    /// Consecutive failures per key since its last success (the rate
    /// limiter's memory; client-go's `Forget` is removing a key from it).
    failures: HashMap<String, u32>,
    /// The key in flight, and whether its notification had been handled
    /// before (a requeued one).
    in_flight: Option<(String, bool)>,
    /// The marker reached the head while initial-list keys were pending: it
    /// is handed out once none is.
    synced_held: bool,
    /// Entries holding a notification (ready or waiting).
    live: usize,
    /// Entries holding a notification of the initial list not yet handled.
    initial: usize,
}

#[derive(Debug)]
struct Entry {
    /// The pending notification, merged with every newer one.
    notification: Notification,
    /// Waiting: not ready before this instant.
    not_before: Option<Instant>,
    /// The notification was handled already and is here again because the
    /// handler asked for it (requeue-after): a newer notification replaces
    /// it rather than merging with it.
    handled: bool,
}

#[derive(Debug)]
enum Slot {
    Key(String),
    Synced,
}

impl Queue {
    /// An empty every-event queue.
    pub fn every_event() -> Self {
        Queue::EveryEvent(VecDeque::new())
    }

    /// An empty coalescing queue.
    pub fn coalesced() -> Self {
        Queue::Coalesced(CoalescedQueue::default())
    }

    /// Adds a notification. In a coalesced queue it merges with the key's
    /// pending one, and a key waiting (backoff or requeue) becomes ready at
    /// once.
    pub fn push(&mut self, notification: Notification) {
        match self {
            Queue::EveryEvent(items) => items.push_back(Item::Notify(notification)),
            Queue::Coalesced(queue) => queue.push(notification),
        }
    }

    /// Marks the end of the initial list.
    pub fn push_synced(&mut self) {
        match self {
            Queue::EveryEvent(items) => items.push_back(Item::Synced),
            Queue::Coalesced(queue) => queue.ready.push_back(Slot::Synced),
        }
    }

    /// Takes the next entry ready at `now`. In a coalesced queue the key is
    /// then in flight until handed back ([`CoalescedQueue::failed`],
    /// [`CoalescedQueue::handled`]) or the next pop.
    pub fn pop(&mut self, now: Instant) -> Option<Item> {
        match self {
            Queue::EveryEvent(items) => items.pop_front(),
            Queue::Coalesced(queue) => queue.pop(now),
        }
    }

    /// When the first waiting entry becomes ready, if any waits.
    pub fn next_ready_at(&self) -> Option<Instant> {
        match self {
            Queue::EveryEvent(_) => None,
            Queue::Coalesced(queue) => queue.waiting.first().map(|(at, _)| *at),
        }
    }

    /// Notifications held, ready or waiting.
    pub fn depth(&self) -> usize {
        match self {
            Queue::EveryEvent(items) => items
                .iter()
                .filter(|i| matches!(i, Item::Notify(_)))
                .count(),
            Queue::Coalesced(queue) => queue.live,
        }
    }

    /// Notifications waiting for their instant (failure backoff or
    /// requeue-after); always 0 in every-event delivery.
    pub fn delayed(&self) -> usize {
        match self {
            Queue::EveryEvent(_) => 0,
            Queue::Coalesced(queue) => queue.waiting.len(),
        }
    }

    /// Entries held, including the end-of-initial-list marker (for bounds
    /// checks).
    pub fn slots(&self) -> usize {
        match self {
            Queue::EveryEvent(items) => items.len(),
            Queue::Coalesced(queue) => {
                queue.ready.len() + queue.waiting.len() + usize::from(queue.synced_held)
            }
        }
    }

    /// The coalescing queue, if this is one.
    pub fn as_coalesced(&mut self) -> Option<&mut CoalescedQueue> {
        match self {
            Queue::EveryEvent(_) => None,
            Queue::Coalesced(queue) => Some(queue),
        }
    }
}

impl CoalescedQueue {
    /// Counts `notification` in (`sign` 1) or out (`sign` -1) of the queue.
    fn count(&mut self, notification: &Notification, sign: isize) {
        self.live = self.live.wrapping_add_signed(sign);
        if matches!(notification, Notification::Add { initial: true, .. }) {
            self.initial = self.initial.wrapping_add_signed(sign);
        }
    }

    /// Sets `key`'s entry to `notification`, ready at once, creating it if
    /// needed; a waiting entry leaves `waiting`.
    fn put_ready(&mut self, key: String, notification: Notification, handled: bool) {
        self.count(&notification, 1);
        match self.entries.get_mut(&key) {
            Some(entry) => {
                let old = std::mem::replace(&mut entry.notification, notification);
                let waited = entry.not_before.take();
                entry.handled = handled;
                self.count(&old, -1);
                if let Some(at) = waited {
                    self.waiting.remove(&(at, key.clone()));
                    self.ready.push_back(Slot::Key(key));
                }
            }
            None => {
                self.entries.insert(
                    key.clone(),
                    Entry {
                        notification,
                        not_before: None,
                        handled,
                    },
                );
                self.ready.push_back(Slot::Key(key));
            }
        }
    }

    /// Makes `key` (not in the queue) wait with `notification` until `at`.
    fn put_waiting(&mut self, key: String, notification: Notification, at: Instant, handled: bool) {
        self.count(&notification, 1);
        self.waiting.insert((at, key.clone()));
        self.entries.insert(
            key,
            Entry {
                notification,
                not_before: Some(at),
                handled,
            },
        );
    }

    fn push(&mut self, notification: Notification) {
        let key = notification.object().key();
        let merged = match self.entries.get(&key) {
            // Not handled yet: merged with what is pending.
            Some(entry) if !entry.handled => entry.notification.clone().coalesce(notification),
            // New, or handled already (a requeue): the newer notification
            // says what changed since, and replaces it.
            _ => notification,
        };
        self.put_ready(key, merged, false);
    }

    /// Moves the keys whose instant has come to the back of `ready`.
    fn promote(&mut self, now: Instant) {
        while let Some((at, _)) = self.waiting.first()
            && *at <= now
        {
            let (_, key) = self.waiting.pop_first().expect("just seen");
            if let Some(entry) = self.entries.get_mut(&key) {
                entry.not_before = None;
            }
            self.ready.push_back(Slot::Key(key));
        }
    }

    fn pop(&mut self, now: Instant) -> Option<Item> {
        self.in_flight = None;
        self.promote(now);
        if self.synced_held && self.initial == 0 {
            self.synced_held = false;
            return Some(Item::Synced);
        }
        while let Some(slot) = self.ready.pop_front() {
            match slot {
                Slot::Synced if self.initial == 0 => return Some(Item::Synced),
                // Initial-list keys are waiting for a retry: readiness waits
                // for them, other keys do not.
                Slot::Synced => self.synced_held = true,
                Slot::Key(key) => {
                    // Every ready slot has its entry: entries leave only here.
                    let Some(entry) = self.entries.remove(&key) else {
                        continue;
                    };
                    self.count(&entry.notification, -1);
                    self.in_flight = Some((key, entry.handled));
                    return Some(Item::Notify(entry.notification));
                }
            }
        }
        None
    }

    /// Whether `key` is the key in flight whose notification was handled
    /// before (it is then no longer in flight).
    fn take_in_flight(&mut self, key: &str) -> bool {
        match self.in_flight.take() {
            Some((in_flight, handled)) if in_flight == key => handled,
            other => {
                self.in_flight = other;
                false
            }
        }
    }

    /// Hands back a notification whose call failed (client-go's
    /// `AddRateLimited`, or `Forget` once `backoff` gives up on it).
    pub fn failed(
        &mut self,
        notification: Notification,
        now: Instant,
        backoff: &KeyBackoff,
    ) -> Retry {
        let key = notification.object().key();
        let handled = self.take_in_flight(&key);
        let count = self.failures.entry(key.clone()).or_insert(0);
        *count = count.saturating_add(1);
        let failures = *count;
        if failures > backoff.max_retries {
            self.failures.remove(&key);
            return Retry::GiveUp { failures };
        }
        match self.entries.get(&key) {
            Some(entry) => {
                // A newer notification came during the call; it is ready.
                // A requeued notification was handled once already: the
                // newer one stands alone.
                if !handled {
                    let merged = notification.coalesce(entry.notification.clone());
                    self.put_ready(key, merged, false);
                }
                Retry::Merged { failures }
            }
            None => {
                let delay = backoff.delay(failures);
                self.put_waiting(key, notification, later(now, delay), handled);
                Retry::Backoff { failures, delay }
            }
        }
    }

    /// Hands back a notification whose call succeeded: its key's failures
    /// are forgotten (client-go's `Forget`), and with `requeue_at` the
    /// notification waits until then to be delivered again, no longer as
    /// part of the initial list (client-go's `AddAfter`) — unless a newer
    /// notification for the key came during the call, which is then
    /// delivered at once instead. Returns the failures forgotten.
    pub fn handled(&mut self, notification: Notification, requeue_at: Option<Instant>) -> u32 {
        let key = notification.object().key();
        self.take_in_flight(&key);
        let failures = self.failures.remove(&key).unwrap_or(0);
        if let Some(at) = requeue_at
            && !self.entries.contains_key(&key)
        {
            self.put_waiting(key, notification.redelivered(), at, true);
        }
        failures
    }

    /// Consecutive failures of `key` since its last success.
    pub fn failures(&self, key: &str) -> u32 {
        self.failures.get(key).copied().unwrap_or(0)
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::store::{CachedObject, Transform};
    use std::collections::HashMap;
    use std::sync::Arc;

    /// A Pod `n/name` at resourceVersion `rv`; `add` and `update` are the
    /// worker's tests' builders too.
    fn obj(name: &str, rv: u32) -> Arc<CachedObject> {
        let json = format!(
            r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}","namespace":"n","resourceVersion":"{rv}"}}}}"#
        );
        Arc::new(CachedObject::from_json(&json, "v1", "Pod", Transform::default()).unwrap())
    }

    pub(in crate::dispatch) fn add(name: &str, rv: u32, initial: bool) -> Notification {
        Notification::Add {
            object: obj(name, rv),
            initial,
        }
    }

    pub(in crate::dispatch) fn update(name: &str, old: u32, new: u32) -> Notification {
        Notification::Update {
            old: obj(name, old),
            new: obj(name, new),
            resync: false,
        }
    }

    fn delete(name: &str, rv: u32) -> Notification {
        Notification::Delete {
            object: obj(name, rv),
            final_state_unknown: false,
        }
    }

    /// `kind name@rv [initial]`, or `synced`.
    fn describe(item: Item) -> String {
        match item {
            Item::Synced => "synced".into(),
            Item::Notify(n) => {
                let object = n.object();
                let initial = matches!(n, Notification::Add { initial: true, .. });
                format!(
                    "{} {}@{}{}",
                    n.kind(),
                    object.name(),
                    object.resource_version(),
                    if initial { " initial" } else { "" }
                )
            }
        }
    }

    /// Everything ready at `now`, described.
    fn drain(queue: &mut Queue, now: Instant) -> Vec<String> {
        std::iter::from_fn(|| queue.pop(now))
            .map(describe)
            .collect()
    }

    /// Pops the next ready notification, which must be there.
    fn pop(queue: &mut Queue, now: Instant) -> Notification {
        match queue.pop(now) {
            Some(Item::Notify(n)) => n,
            other => panic!("expected a notification, got {:?}", other.map(describe)),
        }
    }

    fn coalesced(queue: &mut Queue) -> &mut CoalescedQueue {
        queue.as_coalesced().expect("a coalesced queue")
    }

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn every_event_keeps_order_and_markers() {
        let mut queue = Queue::every_event();
        let now = Instant::now();
        queue.push(add("a", 1, true));
        queue.push_synced();
        queue.push(delete("a", 2));
        assert_eq!(queue.depth(), 2);
        assert_eq!(queue.delayed(), 0);
        assert_eq!(queue.next_ready_at(), None);
        assert!(queue.as_coalesced().is_none());
        assert_eq!(
            drain(&mut queue, now),
            ["add a@1 initial", "synced", "delete a@2"]
        );
    }

    #[test]
    fn coalesced_buffer_is_bounded_by_keys_under_any_churn() {
        let mut queue = Queue::coalesced();
        let backoff = KeyBackoff::default();
        let start = Instant::now();
        for round in 0..10_000u32 {
            let now = start + MS * round;
            let name = format!("k{}", round % 7);
            queue.push(add(&name, round, false));
            queue.push(update(&name, round, round + 1));
            if round % 3 == 0 {
                queue.push(delete(&name, round + 2));
            }
            // Some keys fail, some ask to be delivered again, some succeed.
            if let Some(Item::Notify(n)) = queue.pop(now) {
                let q = coalesced(&mut queue);
                match round % 4 {
                    0 => {
                        q.failed(n, now, &backoff);
                    }
                    1 => {
                        q.handled(n, Some(now + MS * 50));
                    }
                    _ => {
                        q.handled(n, None);
                    }
                }
            }
            assert!(queue.slots() <= 7, "round {round}: {} slots", queue.slots());
            let q = coalesced(&mut queue);
            assert!(
                q.entries.len() <= 7 && q.failures.len() <= 7,
                "round {round}"
            );
        }
        let later = start + Duration::from_secs(10_000);
        let seen = drain(&mut queue, later);
        assert!(seen.len() <= 7, "{seen:?}");
        assert_eq!((queue.depth(), queue.delayed()), (0, 0));
    }

    /// Random pushes, calls that fail, succeed or ask for a requeue, with
    /// pushes arriving during calls and time moving on: the queue stays
    /// bounded by keys, each key's handled states never go back, and once
    /// calls stop failing the plugin's view converges to the server's.
    #[test]
    fn random_churn_with_failures_and_requeues_converges_to_the_newest_state() {
        const KEYS: u64 = 5;
        for seed in 1..=50u64 {
            let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            let mut random = move |below: u64| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state % below
            };
            let backoff = KeyBackoff {
                max_retries: u32::MAX,
                ..KeyBackoff::default()
            };
            let mut queue = Queue::coalesced();
            let mut now = Instant::now();
            let mut rv = 0u32;
            // What the API server holds, and what the plugin has handled.
            let mut server: HashMap<String, u32> = HashMap::new();
            let mut seen: HashMap<String, u32> = HashMap::new();
            let mut in_flight: Option<Notification> = None;
            let handle = |n: &Notification, seen: &mut HashMap<String, u32>| {
                let object = n.object();
                let key = object.key();
                let version: u32 = object.resource_version().parse().unwrap();
                let last = seen.get(&key).copied().unwrap_or(0);
                assert!(version >= last, "seed {seed}: {key} went back to {version}");
                match n {
                    Notification::Delete { .. } => seen.remove(&key),
                    _ => seen.insert(key, version),
                };
            };
            for _ in 0..3000 {
                match random(3) {
                    0 => {
                        let name = format!("k{}", random(KEYS));
                        let key = format!("n/{name}");
                        rv += 1;
                        let n = match server.get(&key).copied() {
                            None => add(&name, rv, false),
                            Some(old) if random(3) == 0 => {
                                server.remove(&key);
                                delete(&name, old)
                            }
                            Some(old) => update(&name, old, rv),
                        };
                        if !matches!(n, Notification::Delete { .. }) {
                            server.insert(key, rv);
                        }
                        queue.push(n);
                    }
                    1 if in_flight.is_none() => {
                        if let Some(Item::Notify(n)) = queue.pop(now) {
                            in_flight = Some(n);
                        }
                    }
                    _ => {
                        if let Some(n) = in_flight.take() {
                            let q = coalesced(&mut queue);
                            match random(4) {
                                0 => {
                                    q.failed(n, now, &backoff);
                                }
                                1 => {
                                    handle(&n, &mut seen);
                                    q.handled(n, Some(now + MS * random(50) as u32));
                                }
                                _ => {
                                    handle(&n, &mut seen);
                                    q.handled(n, None);
                                }
                            }
                        }
                    }
                }
                now += MS * random(10) as u32;
                assert!(queue.slots() <= KEYS as usize, "seed {seed}");
            }
            // Calls stop failing and asking for more.
            if let Some(n) = in_flight.take() {
                handle(&n, &mut seen);
                coalesced(&mut queue).handled(n, None);
            }
            while queue.depth() > 0 {
                now += Duration::from_secs(2000);
                while let Some(item) = queue.pop(now) {
                    if let Item::Notify(n) = item {
                        handle(&n, &mut seen);
                        coalesced(&mut queue).handled(n, None);
                    }
                }
            }
            assert_eq!(seen, server, "seed {seed}");
            assert_eq!(queue.slots(), 0, "seed {seed}");
        }
    }

    #[test]
    fn coalesced_keeps_first_pending_position_and_merges() {
        let mut queue = Queue::coalesced();
        let now = Instant::now();
        queue.push(add("a", 1, true));
        queue.push(add("b", 2, true));
        queue.push_synced();
        queue.push(update("a", 1, 3));
        assert_eq!(
            drain(&mut queue, now),
            ["add a@3 initial", "add b@2 initial", "synced"]
        );
    }

    #[test]
    fn a_keys_backoff_doubles_from_5ms_to_the_cap_and_resets_on_success() {
        let backoff = KeyBackoff::default();
        let delays: Vec<u128> = (1..=5).map(|n| backoff.delay(n).as_millis()).collect();
        assert_eq!(delays, [5, 10, 20, 40, 80]);
        assert_eq!(backoff.delay(15), Duration::from_millis(5 << 14));
        assert_eq!(backoff.delay(18), Duration::from_millis(5 << 17), "655 s");
        assert_eq!(backoff.delay(19), Duration::from_secs(1000), "capped");
        assert_eq!(backoff.delay(u32::MAX), Duration::from_secs(1000));

        // The same sequence through the queue: each failure waits longer.
        let backoff = KeyBackoff {
            max_retries: 100,
            ..KeyBackoff::default()
        };
        let mut queue = Queue::coalesced();
        let mut now = Instant::now();
        queue.push(add("a", 1, false));
        let mut waits = Vec::new();
        for _ in 0..20 {
            let n = pop(&mut queue, now);
            let Retry::Backoff { delay, .. } = coalesced(&mut queue).failed(n, now, &backoff)
            else {
                panic!("waits")
            };
            waits.push(delay.as_millis());
            assert!(queue.pop(now + delay - MS).is_none(), "not ready early");
            assert_eq!(queue.next_ready_at(), Some(now + delay));
            now += delay;
        }
        assert_eq!(&waits[..4], [5, 10, 20, 40]);
        assert_eq!(waits[19], 1_000_000, "capped at 1000 s");
        let n = pop(&mut queue, now);
        assert_eq!(coalesced(&mut queue).handled(n, None), 20, "forgotten");
        assert_eq!(coalesced(&mut queue).failures("n/a"), 0);
        queue.push(update("a", 1, 2));
        let n = pop(&mut queue, now);
        assert_eq!(
            coalesced(&mut queue).failed(n, now, &backoff),
            Retry::Backoff {
                failures: 1,
                delay: 5 * MS
            },
            "after a success the backoff starts over"
        );
    }

    #[test]
    fn a_failing_key_does_not_hold_up_the_others() {
        let backoff = KeyBackoff::default();
        let mut queue = Queue::coalesced();
        let now = Instant::now();
        for name in ["a", "b", "c"] {
            queue.push(add(name, 1, false));
        }
        let a = pop(&mut queue, now);
        assert_eq!(a.object().name(), "a");
        coalesced(&mut queue).failed(a, now, &backoff);
        // b and c are delivered while a waits; then nothing is ready.
        assert_eq!(drain(&mut queue, now), ["add b@1", "add c@1"]);
        assert_eq!((queue.depth(), queue.delayed()), (1, 1));
        // A key pushed meanwhile flows too.
        queue.push(add("d", 1, false));
        assert_eq!(drain(&mut queue, now + MS), ["add d@1"]);
        assert_eq!(drain(&mut queue, now + 5 * MS), ["add a@1"]);
    }

    #[test]
    fn a_key_is_given_up_on_after_max_retries_and_its_count_forgotten() {
        let backoff = KeyBackoff {
            max_retries: 2,
            ..KeyBackoff::default()
        };
        let mut queue = Queue::coalesced();
        let mut now = Instant::now();
        queue.push(add("a", 1, false));
        let mut outcomes = Vec::new();
        loop {
            now += Duration::from_secs(1);
            let n = pop(&mut queue, now);
            let retry = coalesced(&mut queue).failed(n, now, &backoff);
            outcomes.push(retry);
            if matches!(retry, Retry::GiveUp { .. }) {
                break;
            }
        }
        assert_eq!(
            outcomes,
            [
                Retry::Backoff {
                    failures: 1,
                    delay: 5 * MS
                },
                Retry::Backoff {
                    failures: 2,
                    delay: 10 * MS
                },
                Retry::GiveUp { failures: 3 },
            ]
        );
        assert_eq!((queue.depth(), queue.slots()), (0, 0));
        assert_eq!(coalesced(&mut queue).failures("n/a"), 0);
    }

    #[test]
    fn a_newer_notification_merges_into_a_waiting_one_and_is_ready_at_once() {
        let backoff = KeyBackoff::default();
        let mut queue = Queue::coalesced();
        let now = Instant::now();
        queue.push(add("a", 1, false));
        let n = pop(&mut queue, now);
        coalesced(&mut queue).failed(n, now, &backoff);
        let n = pop(&mut queue, now + 5 * MS);
        coalesced(&mut queue).failed(n, now + 5 * MS, &backoff);
        assert_eq!(queue.next_ready_at(), Some(now + 15 * MS));
        queue.push(update("a", 1, 2));
        queue.push(update("a", 2, 3));
        assert_eq!((queue.depth(), queue.delayed()), (1, 0));
        assert_eq!(queue.next_ready_at(), None);
        // Ready before its backoff ends, once, with the newest state, still
        // the add the plugin never handled.
        assert_eq!(drain(&mut queue, now + 6 * MS), ["add a@3"]);
        // The count was not reset by the new event: only a success does that.
        assert_eq!(coalesced(&mut queue).failures("n/a"), 2);
        assert!(queue.pop(now + Duration::from_secs(2000)).is_none());
    }

    #[test]
    fn a_newer_notification_during_a_failed_call_is_merged_and_ready_at_once() {
        let backoff = KeyBackoff::default();
        let mut queue = Queue::coalesced();
        let now = Instant::now();
        queue.push(add("a", 1, false));
        let n = pop(&mut queue, now);
        queue.push(update("a", 1, 2));
        assert_eq!(
            coalesced(&mut queue).failed(n, now, &backoff),
            Retry::Merged { failures: 1 }
        );
        assert_eq!(drain(&mut queue, now), ["add a@2"]);
    }

    #[test]
    fn an_add_then_a_delete_while_queued_is_delivered_as_the_delete() {
        // The two must not cancel out: a controller that created
        // the object must hear that it is gone to put it back.
        let mut queue = Queue::coalesced();
        let now = Instant::now();
        queue.push(add("a", 1, false));
        queue.push(delete("a", 2));
        assert_eq!(queue.depth(), 1);
        assert_eq!(drain(&mut queue, now), ["delete a@2"]);
    }

    #[test]
    fn a_waiting_add_followed_by_a_delete_delivers_the_delete_at_once() {
        let backoff = KeyBackoff::default();
        let mut queue = Queue::coalesced();
        let now = Instant::now();
        queue.push(add("a", 1, false));
        let n = pop(&mut queue, now);
        coalesced(&mut queue).failed(n, now, &backoff);
        queue.push(delete("a", 2));
        assert_eq!((queue.depth(), queue.delayed()), (1, 0));
        let n = pop(&mut queue, now);
        assert_eq!(describe(Item::Notify(n.clone())), "delete a@2");
        assert_eq!(coalesced(&mut queue).handled(n, None), 1, "forgotten");
        assert_eq!(queue.slots(), 0);
        assert!(queue.pop(now + Duration::from_secs(1)).is_none());
    }

    #[test]
    fn requeue_after_is_not_ready_before_its_delay_and_is_ready_after() {
        let mut queue = Queue::coalesced();
        let now = Instant::now();
        queue.push(add("a", 1, true));
        queue.push_synced();
        let n = pop(&mut queue, now);
        assert_eq!(
            coalesced(&mut queue).handled(n, Some(now + 30 * MS)),
            0,
            "no failures"
        );
        // The handled initial key does not hold the marker.
        assert_eq!(drain(&mut queue, now), ["synced"]);
        assert_eq!((queue.depth(), queue.delayed()), (1, 1));
        assert_eq!(queue.next_ready_at(), Some(now + 30 * MS));
        assert!(queue.pop(now + 29 * MS).is_none());
        assert_eq!(
            drain(&mut queue, now + 30 * MS),
            ["add a@1"],
            "the same notification again, no longer part of the initial list"
        );
    }

    #[test]
    fn a_newer_notification_replaces_a_requeued_one_and_is_ready_at_once() {
        let mut queue = Queue::coalesced();
        let now = Instant::now();
        queue.push(add("a", 1, false));
        let n = pop(&mut queue, now);
        coalesced(&mut queue).handled(n, Some(now + Duration::from_secs(60)));
        queue.push(delete("a", 2));
        // The plugin handled the add: it sees the delete, and only once.
        assert_eq!(drain(&mut queue, now), ["delete a@2"]);
        assert!(queue.pop(now + Duration::from_secs(61)).is_none());

        queue.push(add("b", 1, false));
        let n = pop(&mut queue, now);
        coalesced(&mut queue).handled(n, Some(now + Duration::from_secs(60)));
        queue.push(update("b", 1, 2));
        queue.push(update("b", 2, 3));
        let n = pop(&mut queue, now);
        assert!(
            matches!(&n, Notification::Update { old, new, .. }
                if old.resource_version() == "1" && new.resource_version() == "3"),
            "{n:?}"
        );
        assert!(queue.pop(now + Duration::from_secs(61)).is_none());
    }

    #[test]
    fn a_failed_redelivery_of_a_requeued_notification_leaves_a_newer_one_as_it_is() {
        let backoff = KeyBackoff::default();
        let mut queue = Queue::coalesced();
        let now = Instant::now();
        queue.push(add("a", 1, false));
        let n = pop(&mut queue, now);
        coalesced(&mut queue).handled(n, Some(now + 30 * MS));
        let again = pop(&mut queue, now + 30 * MS);
        queue.push(delete("a", 2));
        assert_eq!(
            coalesced(&mut queue).failed(again, now + 30 * MS, &backoff),
            Retry::Merged { failures: 1 }
        );
        // The plugin handled the add once: the delete must reach it.
        assert_eq!(drain(&mut queue, now + 30 * MS), ["delete a@2"]);
    }

    #[test]
    fn a_requeue_with_a_newer_notification_pending_delivers_that_one_at_once() {
        let mut queue = Queue::coalesced();
        let now = Instant::now();
        queue.push(add("a", 1, false));
        let n = pop(&mut queue, now);
        queue.push(update("a", 1, 2));
        coalesced(&mut queue).handled(n, Some(now + Duration::from_secs(60)));
        assert_eq!(drain(&mut queue, now), ["update a@2"]);
        assert!(queue.pop(now + Duration::from_secs(61)).is_none());
    }

    #[test]
    fn the_synced_marker_waits_for_initial_keys_in_backoff_while_live_keys_flow() {
        let backoff = KeyBackoff::default();
        let mut queue = Queue::coalesced();
        let now = Instant::now();
        queue.push(add("a", 1, true));
        queue.push(add("b", 1, true));
        queue.push_synced();
        queue.push(add("c", 2, false));
        let a = pop(&mut queue, now);
        coalesced(&mut queue).failed(a, now, &backoff);
        let b = pop(&mut queue, now);
        coalesced(&mut queue).handled(b, None);
        // a (initial) waits: the marker is held, c flows past it.
        assert_eq!(drain(&mut queue, now), ["add c@2"]);
        assert_eq!(queue.slots(), 2, "a waiting, the marker held");
        let a = pop(&mut queue, now + 5 * MS);
        assert_eq!(describe(Item::Notify(a.clone())), "add a@1 initial");
        coalesced(&mut queue).handled(a, None);
        assert_eq!(drain(&mut queue, now + 5 * MS), ["synced"]);
        assert_eq!(queue.slots(), 0);
    }

    #[test]
    fn the_synced_marker_passes_once_an_initial_key_is_given_up_on() {
        let backoff = KeyBackoff {
            max_retries: 1,
            ..KeyBackoff::default()
        };
        let mut queue = Queue::coalesced();
        let now = Instant::now();
        queue.push(add("a", 1, true));
        queue.push_synced();
        let a = pop(&mut queue, now);
        coalesced(&mut queue).failed(a, now, &backoff);
        assert!(queue.pop(now).is_none(), "the marker waits for a");
        let a = pop(&mut queue, now + 5 * MS);
        assert_eq!(
            coalesced(&mut queue).failed(a, now + 5 * MS, &backoff),
            Retry::GiveUp { failures: 2 }
        );
        assert_eq!(drain(&mut queue, now + 5 * MS), ["synced"]);
    }

    #[test]
    fn the_synced_marker_passes_once_a_waiting_initial_key_is_deleted() {
        let backoff = KeyBackoff::default();
        let mut queue = Queue::coalesced();
        let now = Instant::now();
        queue.push(add("a", 1, true));
        queue.push_synced();
        let a = pop(&mut queue, now);
        coalesced(&mut queue).failed(a, now, &backoff);
        assert!(queue.pop(now).is_none());
        queue.push(delete("a", 2));
        // The delete is no longer part of the initial list: the marker
        // passes, then the delete is delivered.
        assert_eq!(drain(&mut queue, now), ["synced", "delete a@2"]);
    }

    #[test]
    fn a_key_readied_by_a_push_keeps_the_marker_until_delivered() {
        let backoff = KeyBackoff::default();
        let mut queue = Queue::coalesced();
        let now = Instant::now();
        queue.push(add("a", 1, true));
        queue.push_synced();
        let a = pop(&mut queue, now);
        coalesced(&mut queue).failed(a, now, &backoff);
        // Ready again (behind the marker), still the unhandled initial add.
        queue.push(update("a", 1, 2));
        let a = pop(&mut queue, now);
        assert_eq!(describe(Item::Notify(a.clone())), "add a@2 initial");
        coalesced(&mut queue).failed(a, now, &backoff);
        assert!(queue.pop(now).is_none(), "the marker waits for a again");
        let a = pop(&mut queue, now + 10 * MS);
        coalesced(&mut queue).handled(a, None);
        assert_eq!(drain(&mut queue, now + 10 * MS), ["synced"]);
    }
}
