//! A listener's buffer: unbounded and in order (every-event), or one pending
//! notification per key (coalesced), so a slow plugin never blocks the informer.

use super::notification::Notification;
use std::collections::{HashMap, VecDeque};

/// An entry taken from a queue.
#[derive(Debug, Clone)]
pub enum Item {
    /// A notification to deliver.
    Notify(Notification),
    /// Everything before this was the listener's initial list.
    Synced,
}

/// The buffer of one listener.
#[derive(Debug)]
pub enum Queue {
    /// Every notification, in order, in a growing ring (client-go's buffer).
    EveryEvent(VecDeque<Item>),
    /// At most one pending notification per key, merged; bounded by the number of keys.
    Coalesced(CoalescedQueue),
}

/// The coalescing buffer: keys in order of their first pending notification.
#[derive(Debug, Default)]
pub struct CoalescedQueue {
    order: VecDeque<Slot>,
    /// Pending notification per key; `None` when merges cancelled it out
    /// (the key keeps its slot, so the order never holds a key twice).
    pending: HashMap<String, Option<Notification>>,
    live: usize,
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

    /// Adds a notification.
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
            Queue::Coalesced(queue) => queue.order.push_back(Slot::Synced),
        }
    }

    /// Takes the next entry.
    pub fn pop(&mut self) -> Option<Item> {
        match self {
            Queue::EveryEvent(items) => items.pop_front(),
            Queue::Coalesced(queue) => queue.pop(),
        }
    }

    /// Notifications waiting.
    pub fn depth(&self) -> usize {
        match self {
            Queue::EveryEvent(items) => items
                .iter()
                .filter(|i| matches!(i, Item::Notify(_)))
                .count(),
            Queue::Coalesced(queue) => queue.live,
        }
    }

    /// Entries held, including markers and cancelled slots (for bounds checks).
    pub fn slots(&self) -> usize {
        match self {
            Queue::EveryEvent(items) => items.len(),
            Queue::Coalesced(queue) => queue.order.len(),
        }
    }
}

impl CoalescedQueue {
    fn push(&mut self, notification: Notification) {
        let key = notification.object().key();
        match self.pending.get_mut(&key) {
            Some(slot) => {
                let merged = match slot.take() {
                    Some(pending) => {
                        self.live -= 1;
                        pending.coalesce(notification)
                    }
                    None => Some(notification),
                };
                self.live += usize::from(merged.is_some());
                *slot = merged;
            }
            None => {
                self.pending.insert(key.clone(), Some(notification));
                self.order.push_back(Slot::Key(key));
                self.live += 1;
            }
        }
    }

    fn pop(&mut self) -> Option<Item> {
        while let Some(slot) = self.order.pop_front() {
            match slot {
                Slot::Synced => return Some(Item::Synced),
                Slot::Key(key) => {
                    if let Some(Some(notification)) = self.pending.remove(&key) {
                        self.live -= 1;
                        return Some(Item::Notify(notification));
                    }
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{CachedObject, Transform};
    use std::sync::Arc;

    fn obj(name: &str, rv: u32) -> Arc<CachedObject> {
        let json = format!(
            r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}","namespace":"n","resourceVersion":"{rv}"}}}}"#
        );
        Arc::new(CachedObject::from_json(&json, "v1", "Pod", Transform::default()).unwrap())
    }

    #[test]
    fn every_event_keeps_order_and_markers() {
        let mut queue = Queue::every_event();
        queue.push(Notification::Add {
            object: obj("a", 1),
            initial: true,
        });
        queue.push_synced();
        queue.push(Notification::Delete {
            object: obj("a", 2),
            final_state_unknown: false,
        });
        assert_eq!(queue.depth(), 2);
        assert!(matches!(
            queue.pop(),
            Some(Item::Notify(Notification::Add { .. }))
        ));
        assert!(matches!(queue.pop(), Some(Item::Synced)));
        assert!(matches!(
            queue.pop(),
            Some(Item::Notify(Notification::Delete { .. }))
        ));
        assert!(queue.pop().is_none());
    }

    #[test]
    fn coalesced_buffer_is_bounded_by_keys_under_any_churn() {
        let mut queue = Queue::coalesced();
        for round in 0..10_000u32 {
            let name = format!("k{}", round % 7);
            queue.push(Notification::Add {
                object: obj(&name, round),
                initial: false,
            });
            queue.push(Notification::Update {
                old: obj(&name, round),
                new: obj(&name, round + 1),
                resync: false,
            });
            if round % 3 == 0 {
                queue.push(Notification::Delete {
                    object: obj(&name, round + 2),
                    final_state_unknown: false,
                });
            }
            assert!(queue.slots() <= 7, "round {round}: {} slots", queue.slots());
        }
        let mut seen = Vec::new();
        while let Some(Item::Notify(n)) = queue.pop() {
            seen.push(n.object().key());
        }
        assert!(seen.len() <= 7);
        assert_eq!(queue.depth(), 0);
    }

    #[test]
    fn coalesced_keeps_first_pending_position_and_merges() {
        let mut queue = Queue::coalesced();
        queue.push(Notification::Add {
            object: obj("a", 1),
            initial: true,
        });
        queue.push(Notification::Add {
            object: obj("b", 2),
            initial: true,
        });
        queue.push_synced();
        queue.push(Notification::Update {
            old: obj("a", 1),
            new: obj("a", 3),
            resync: false,
        });
        let Some(Item::Notify(Notification::Add {
            object,
            initial: true,
        })) = queue.pop()
        else {
            panic!("a first")
        };
        assert_eq!((object.name(), object.resource_version()), ("a", "3"));
        assert!(matches!(
            queue.pop(),
            Some(Item::Notify(Notification::Add { .. }))
        ));
        assert!(matches!(queue.pop(), Some(Item::Synced)));
        assert!(queue.pop().is_none());
    }
}
