//! What a listener receives: add, update or delete of a cached object.

use crate::store::CachedObject;
use std::sync::Arc;

/// One notification, carrying shared references to cached objects (never copies).
#[derive(Debug, Clone)]
pub enum Notification {
    /// An object was first seen.
    Add {
        /// The object.
        object: Arc<CachedObject>,
        /// Part of an initial list (first list, or the snapshot of a late join).
        initial: bool,
    },
    /// An object changed (or is re-delivered unchanged on resync).
    Update {
        /// The state before.
        old: Arc<CachedObject>,
        /// The state now.
        new: Arc<CachedObject>,
        /// A resync: old and new are the same state, delivered again (by
        /// the periodic resync, or by a relist that found the object
        /// unchanged) to listeners that have a resync period.
        resync: bool,
    },
    /// An object was deleted.
    Delete {
        /// Its last known state.
        object: Arc<CachedObject>,
        /// Inferred from a relist: the real final state is unknown.
        final_state_unknown: bool,
    },
}

impl Notification {
    /// The object the notification is about (the new state for updates).
    pub fn object(&self) -> &Arc<CachedObject> {
        match self {
            Notification::Add { object, .. } | Notification::Delete { object, .. } => object,
            Notification::Update { new, .. } => new,
        }
    }

    /// `add`, `update` or `delete`.
    pub fn kind(&self) -> &'static str {
        match self {
            Notification::Add { .. } => "add",
            Notification::Update { .. } => "update",
            Notification::Delete { .. } => "delete",
        }
    }

    /// The notification delivered again after its handler asked for it
    /// (requeue-after): the same, except that it is no longer part of an
    /// initial list (the plugin has handled that already).
    pub fn redelivered(self) -> Notification {
        match self {
            Notification::Add { object, .. } => Notification::Add {
                object,
                initial: false,
            },
            other => other,
        }
    }

    /// Merges a newer notification for the same key into this pending one, as
    /// coalesced delivery does. Merging never erases a change: the result
    /// always carries the newest state, so a key that changed while queued
    /// is delivered at least once. An add followed by a delete is a delete
    /// (carrying the last known state), even though the plugin never saw the
    /// add: the level is "absent" and a controller must hear it to repair
    /// what it owns. A delete followed by an add is an update whose old and
    /// new states may belong to different objects (a re-creation: compare
    /// their uids).
    pub fn coalesce(self, newer: Notification) -> Notification {
        use Notification::{Add, Delete, Update};
        match (self, newer) {
            (Add { initial, .. }, Update { new, .. }) => Add {
                object: new,
                initial,
            },
            (
                Update {
                    old, resync: r1, ..
                },
                Update {
                    new, resync: r2, ..
                },
            ) => Update {
                old,
                new,
                resync: r1 && r2,
            },
            (Delete { object: old, .. }, Add { object: new, .. }) => Update {
                old,
                new,
                resync: false,
            },
            // Add or update then delete, and the pairs an informer does not
            // produce (an add after an add or an update, an update or a
            // delete after a delete): the newer one, which holds the newest
            // state.
            (_, newer) => newer,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Transform;

    fn obj(rv: u32) -> Arc<CachedObject> {
        let json = format!(
            r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"a","namespace":"n","resourceVersion":"{rv}"}}}}"#
        );
        Arc::new(CachedObject::from_json(&json, "v1", "Pod", Transform::default()).unwrap())
    }

    fn describe(n: Notification) -> String {
        match n {
            Notification::Add { object, initial } => {
                format!("add {} initial={initial}", object.resource_version())
            }
            Notification::Update { old, new, resync } => format!(
                "update {}->{} resync={resync}",
                old.resource_version(),
                new.resource_version()
            ),
            Notification::Delete {
                object,
                final_state_unknown,
            } => format!(
                "delete {} unknown={final_state_unknown}",
                object.resource_version()
            ),
        }
    }

    /// Every pair of the merge table: the result always holds the newer
    /// notification's state (the newest), so no change is erased.
    #[test]
    fn coalescing_merges_every_pair_and_erases_nothing() {
        let add = |rv, initial| Notification::Add {
            object: obj(rv),
            initial,
        };
        let update = |old, new, resync| Notification::Update {
            old: obj(old),
            new: obj(new),
            resync,
        };
        let delete = |rv, unknown| Notification::Delete {
            object: obj(rv),
            final_state_unknown: unknown,
        };
        let table = [
            (add(1, true), update(1, 2, false), "add 2 initial=true"),
            (add(1, false), delete(2, false), "delete 2 unknown=false"),
            (add(1, true), delete(2, true), "delete 2 unknown=true"),
            (add(1, false), add(2, false), "add 2 initial=false"),
            (
                update(1, 2, false),
                update(2, 3, false),
                "update 1->3 resync=false",
            ),
            (
                update(1, 1, true),
                update(1, 1, true),
                "update 1->1 resync=true",
            ),
            (
                update(1, 1, true),
                update(1, 2, false),
                "update 1->2 resync=false",
            ),
            (
                update(1, 2, false),
                delete(3, true),
                "delete 3 unknown=true",
            ),
            (update(1, 2, false), add(3, false), "add 3 initial=false"),
            (delete(3, false), add(4, false), "update 3->4 resync=false"),
            (delete(3, false), delete(4, true), "delete 4 unknown=true"),
            (
                delete(3, false),
                update(3, 4, false),
                "update 3->4 resync=false",
            ),
        ];
        for (pending, newer, merged) in table {
            let newest = newer.object().resource_version().to_string();
            let what = format!("{} + {}", pending.kind(), newer.kind());
            let result = pending.coalesce(newer);
            assert_eq!(
                result.object().resource_version(),
                newest,
                "{what}: the newest state"
            );
            assert_eq!(describe(result), merged, "{what}");
        }
    }
}
