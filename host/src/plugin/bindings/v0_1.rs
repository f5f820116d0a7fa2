//! `herald:plugin@0.1.0`, the first released world: logging, cache look-ups
//! and configuration. Its components keep loading and running unchanged;
//! the runtime speaks 0.2.0, so this module converts the two records that
//! cross the boundary (the manifest out, the event context in).

use super::v0_2::herald::plugin::types as current;

wasmtime::component::bindgen!({
    path: "../wit/0.1.0",
    world: "herald:plugin/plugin",
    imports: { "herald:plugin/cache": trappable },
    exports: { default: async },
});

super::shared_imports!(self);

/// A 0.1.0 manifest as the 0.2.0 record: it declares no writes.
pub(crate) fn upgrade_manifest(raw: types::Manifest) -> current::Manifest {
    current::Manifest {
        name: raw.name,
        version: raw.version,
        subscriptions: raw
            .subscriptions
            .into_iter()
            .map(|sub| current::Subscription {
                kind: current::GroupVersionKind {
                    group: sub.kind.group,
                    version: sub.kind.version,
                    kind: sub.kind.kind,
                },
                namespace: sub.namespace,
                label_selector: sub.label_selector,
                field_selector: sub.field_selector,
                resync_period_ms: sub.resync_period_ms,
                delivery: match sub.delivery {
                    types::DeliveryMode::EveryEvent => current::DeliveryMode::EveryEvent,
                    types::DeliveryMode::Coalesced => current::DeliveryMode::Coalesced,
                },
            })
            .collect(),
        limits: current::Limits {
            call_deadline_ms: raw.limits.call_deadline_ms,
            memory_bytes: raw.limits.memory_bytes,
        },
        capabilities: raw.capabilities,
        writes: Vec::new(),
    }
}

/// The event context as 0.1.0 spells it (the same fields).
pub(crate) fn event_context(ctx: &current::EventContext) -> types::EventContext {
    types::EventContext {
        kind: types::GroupVersionKind {
            group: ctx.kind.group.clone(),
            version: ctx.kind.version.clone(),
            kind: ctx.kind.kind.clone(),
        },
        resource: ctx.resource.clone(),
        key: ctx.key.clone(),
        resource_version: ctx.resource_version.clone(),
        is_initial_list: ctx.is_initial_list,
        is_resync: ctx.is_resync,
        final_state_unknown: ctx.final_state_unknown,
    }
}
