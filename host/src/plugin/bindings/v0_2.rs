//! `herald:plugin@0.2.0`: 0.1.0's imports plus Kubernetes writes (`kube`)
//! and Events (`events`), whose host sides live in
//! [`capability`](crate::capability); write rules in the manifest.

wasmtime::component::bindgen!({
    path: "../wit/0.2.0",
    world: "herald:plugin/plugin",
    imports: {
        "herald:plugin/cache": trappable,
        "herald:plugin/kube": async | trappable,
        "herald:plugin/events": async,
    },
    exports: { default: async },
});

super::shared_imports!(self);

/// A 0.2.0 manifest as the 0.3.0 record: it defines no metrics and no
/// indexes.
pub(crate) fn upgrade_manifest(raw: types::Manifest) -> super::Manifest {
    super::Manifest {
        name: raw.name,
        version: raw.version,
        subscriptions: raw.subscriptions,
        limits: raw.limits,
        capabilities: raw.capabilities,
        writes: raw.writes,
        metrics: Vec::new(),
        indexes: Vec::new(),
    }
}
