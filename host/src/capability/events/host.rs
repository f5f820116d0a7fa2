//! The `events` import (0.2.0 and later), on the plugin's [`EventsAccess`].

use super::{EventRecord, EventsAccess, ObjectRef};
use crate::gvk::Gvk;
use crate::wit::v0_2::herald::plugin::events as wit;
use crate::wit::v0_2::herald::plugin::kube as wit_kube;
use std::sync::Arc;
use std::time::Instant;
use wasmtime::component::Linker;

/// What the `events` import reaches: the plugin's Events and the deadline of
/// the call under way.
pub struct EventsHost<'a> {
    /// The plugin's Events.
    pub access: &'a Arc<EventsAccess>,
    /// When the call must end.
    pub deadline: Option<Instant>,
    /// The cluster the call's Events go to; `None` for the default one.
    pub cluster: Option<crate::cluster::ClusterName>,
}

/// Links `events` (0.2.0 and later); `reach`
/// finds what they reach in the store's state.
pub(super) fn add_to_linker<T: Send + 'static>(
    linker: &mut Linker<T>,
    reach: fn(&mut T) -> EventsHost<'_>,
) -> wasmtime::Result<()> {
    wit::add_to_linker::<T, super::Events>(linker, reach)
}

impl From<wit::ObjectReference> for ObjectRef {
    fn from(r: wit::ObjectReference) -> Self {
        ObjectRef {
            gvk: Gvk::new(r.kind.group, r.kind.version, r.kind.kind),
            namespace: r.namespace,
            name: r.name,
            uid: r.uid,
            resource_version: r.resource_version,
        }
    }
}

impl wit::Host for EventsHost<'_> {
    async fn publish(&mut self, event: wit::Event) -> Result<(), wit_kube::KubeError> {
        let record = EventRecord {
            regarding: event.regarding.into(),
            related: event.related.map(Into::into),
            event_type: match event.event_type {
                wit::EventType::Normal => "Normal",
                wit::EventType::Warning => "Warning",
            },
            reason: event.reason,
            action: event.action,
            note: event.note,
            cluster: self.cluster.clone(),
        };
        let access = self.access.clone();
        access
            .publish(record, self.deadline)
            .await
            .map(|_| ())
            .map_err(Into::into)
    }
}
