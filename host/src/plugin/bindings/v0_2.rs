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
