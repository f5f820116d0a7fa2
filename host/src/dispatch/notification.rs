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
        /// A periodic resync (old and new are the same state).
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
    /// coalesced delivery does. `None` means the two cancel out (an add
    /// followed by a delete before the plugin saw either).
    pub fn coalesce(self, newer: Notification) -> Option<Notification> {
        use Notification::{Add, Delete, Update};
        Some(match (self, newer) {
            (Add { initial, .. }, Update { new, .. }) => Add {
                object: new,
                initial,
            },
            (Add { .. }, Delete { .. }) => return None,
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
            (Update { .. }, delete @ Delete { .. }) => delete,
            (Delete { object: old, .. }, Add { object: new, .. }) => Update {
                old,
                new,
                resync: false,
            },
            (_, newer) => newer,
        })
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

    fn describe(n: Option<Notification>) -> String {
        match n {
            None => "nothing".into(),
            Some(Notification::Add { object, initial }) => {
                format!("add {} initial={initial}", object.resource_version())
            }
            Some(Notification::Update { old, new, resync }) => format!(
                "update {}->{} resync={resync}",
                old.resource_version(),
                new.resource_version()
            ),
            Some(Notification::Delete {
                object,
                final_state_unknown,
            }) => format!(
                "delete {} unknown={final_state_unknown}",
                object.resource_version()
            ),
        }
    }

    #[test]
    fn coalescing_follows_the_merge_table() {
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
        assert_eq!(
            describe(add(1, true).coalesce(update(1, 2, false))),
            "add 2 initial=true"
        );
        assert_eq!(
            describe(update(1, 2, false).coalesce(update(2, 3, false))),
            "update 1->3 resync=false"
        );
        assert_eq!(
            describe(update(1, 1, true).coalesce(update(1, 1, true))),
            "update 1->1 resync=true"
        );
        assert_eq!(
            describe(add(1, false).coalesce(delete(2, false))),
            "nothing"
        );
        assert_eq!(
            describe(update(1, 2, false).coalesce(delete(3, true))),
            "delete 3 unknown=true"
        );
        assert_eq!(
            describe(delete(3, false).coalesce(add(4, false))),
            "update 3->4 resync=false"
        );
    }
}
