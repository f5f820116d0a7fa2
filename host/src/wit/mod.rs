//! The plugin ABI as Rust types and traits: `bindgen!` over every released
//! version of the world (`wit/<version>/herald.wit`), one module each, and
//! nothing else. The host side of each import is its capability's
//! ([`crate::capability`]); the exports are called by the runtime
//! ([`crate::plugin`]). This is the one place `bindgen!` runs.
//!
//! A newer version imports the interfaces of older ones from their released
//! packages instead of copying them, and is bound here `with:` the older
//! version's generated modules, so an interface has one Rust trait however
//! many worlds import it: 0.3.0 reuses 0.2.0's `log`, `cache`, `config`,
//! `kube`, `events`, `types` and `handler`; 0.4.0 reuses those and 0.3.0's
//! `metrics`, `workqueue`, `index` and manifest, and adds `deadline`; 0.5.0
//! reuses all of 0.4.0 and adds the `admission` export; 0.6.0 reuses all of
//! 0.5.0 and adds the `cluster` import; 0.7.0 reuses 0.6.0's imports and
//! exports `delivery` in place of `handler`.

#![allow(missing_docs, unsafe_code)]

/// `herald:plugin@0.1.0`: logging, cache look-ups, configuration.
pub mod v0_1 {
    wasmtime::component::bindgen!({
        path: "../wit/0.1.0",
        world: "herald:plugin/plugin",
        imports: { "herald:plugin/cache": trappable },
        exports: { default: async },
    });
}

/// `herald:plugin@0.2.0`: 0.1.0's imports, Kubernetes calls (`kube`) and
/// Events (`events`); write rules in the manifest.
pub mod v0_2 {
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
}

/// `herald:plugin@0.3.0`: 0.2.0's interfaces plus metrics, the workqueue,
/// index look-ups and `wasi:http`; the manifest gains metric and index
/// definitions.
pub mod v0_3 {
    wasmtime::component::bindgen!({
        path: "../wit/0.3.0",
        world: "herald:plugin/plugin@0.3.0",
        // A look-up too large for the plugin's memory traps, as `cache` does.
        imports: { "herald:plugin/index": trappable },
        exports: { default: async },
        with: {
            "herald:plugin/types@0.2.0": super::v0_2::herald::plugin::types,
            "herald:plugin/log@0.2.0": super::v0_2::herald::plugin::log,
            "herald:plugin/cache@0.2.0": super::v0_2::herald::plugin::cache,
            "herald:plugin/config@0.2.0": super::v0_2::herald::plugin::config,
            "herald:plugin/kube@0.2.0": super::v0_2::herald::plugin::kube,
            "herald:plugin/events@0.2.0": super::v0_2::herald::plugin::events,
            "wasi:http": wasmtime_wasi_http::p2::bindings::http,
            "wasi:io": wasmtime_wasi::p2::bindings::io,
            "wasi:clocks": wasmtime_wasi::p2::bindings::clocks,
        },
    });
}

/// `herald:plugin@0.4.0`: 0.3.0 plus `deadline`. Its exports are 0.3.0's, so
/// the runtime calls a 0.4.0 component through [`v0_3`]'s exports.
pub mod v0_4 {
    wasmtime::component::bindgen!({
        path: "../wit/0.4.0",
        world: "herald:plugin/plugin@0.4.0",
        exports: { default: async },
        with: {
            "herald:plugin/types@0.2.0": super::v0_2::herald::plugin::types,
            "herald:plugin/log@0.2.0": super::v0_2::herald::plugin::log,
            "herald:plugin/cache@0.2.0": super::v0_2::herald::plugin::cache,
            "herald:plugin/config@0.2.0": super::v0_2::herald::plugin::config,
            "herald:plugin/kube@0.2.0": super::v0_2::herald::plugin::kube,
            "herald:plugin/events@0.2.0": super::v0_2::herald::plugin::events,
            "herald:plugin/types@0.3.0": super::v0_3::herald::plugin0_3_0::types,
            "herald:plugin/metrics@0.3.0": super::v0_3::herald::plugin0_3_0::metrics,
            "herald:plugin/workqueue@0.3.0": super::v0_3::herald::plugin0_3_0::workqueue,
            "herald:plugin/index@0.3.0": super::v0_3::herald::plugin0_3_0::index,
            "wasi:http": wasmtime_wasi_http::p2::bindings::http,
            "wasi:io": wasmtime_wasi::p2::bindings::io,
            "wasi:clocks": wasmtime_wasi::p2::bindings::clocks,
        },
    });
}

/// `herald:plugin@0.5.0`: 0.4.0 plus the `admission` export. Its other
/// exports are 0.3.0's, so the runtime calls them through [`v0_3`]'s and
/// only `admission` through this module's.
pub mod v0_5 {
    wasmtime::component::bindgen!({
        path: "../wit/0.5.0",
        world: "herald:plugin/plugin@0.5.0",
        exports: { default: async },
        with: {
            "herald:plugin/types@0.2.0": super::v0_2::herald::plugin::types,
            "herald:plugin/log@0.2.0": super::v0_2::herald::plugin::log,
            "herald:plugin/cache@0.2.0": super::v0_2::herald::plugin::cache,
            "herald:plugin/config@0.2.0": super::v0_2::herald::plugin::config,
            "herald:plugin/kube@0.2.0": super::v0_2::herald::plugin::kube,
            "herald:plugin/events@0.2.0": super::v0_2::herald::plugin::events,
            "herald:plugin/types@0.3.0": super::v0_3::herald::plugin0_3_0::types,
            "herald:plugin/metrics@0.3.0": super::v0_3::herald::plugin0_3_0::metrics,
            "herald:plugin/workqueue@0.3.0": super::v0_3::herald::plugin0_3_0::workqueue,
            "herald:plugin/index@0.3.0": super::v0_3::herald::plugin0_3_0::index,
            "herald:plugin/deadline@0.4.0": super::v0_4::herald::plugin0_4_0::deadline,
            "wasi:http": wasmtime_wasi_http::p2::bindings::http,
            "wasi:io": wasmtime_wasi::p2::bindings::io,
            "wasi:clocks": wasmtime_wasi::p2::bindings::clocks,
        },
    });
}

/// `herald:plugin@0.6.0`: 0.5.0 plus the `cluster` import. Its exports are
/// 0.5.0's (through [`v0_3`] and [`v0_5`]).
pub mod v0_6 {
    wasmtime::component::bindgen!({
        path: "../wit/0.6.0",
        world: "herald:plugin/plugin@0.6.0",
        exports: { default: async },
        with: {
            "herald:plugin/types@0.2.0": super::v0_2::herald::plugin::types,
            "herald:plugin/log@0.2.0": super::v0_2::herald::plugin::log,
            "herald:plugin/cache@0.2.0": super::v0_2::herald::plugin::cache,
            "herald:plugin/config@0.2.0": super::v0_2::herald::plugin::config,
            "herald:plugin/kube@0.2.0": super::v0_2::herald::plugin::kube,
            "herald:plugin/events@0.2.0": super::v0_2::herald::plugin::events,
            "herald:plugin/types@0.3.0": super::v0_3::herald::plugin0_3_0::types,
            "herald:plugin/metrics@0.3.0": super::v0_3::herald::plugin0_3_0::metrics,
            "herald:plugin/workqueue@0.3.0": super::v0_3::herald::plugin0_3_0::workqueue,
            "herald:plugin/index@0.3.0": super::v0_3::herald::plugin0_3_0::index,
            "herald:plugin/deadline@0.4.0": super::v0_4::herald::plugin0_4_0::deadline,
            "wasi:http": wasmtime_wasi_http::p2::bindings::http,
            "wasi:io": wasmtime_wasi::p2::bindings::io,
            "wasi:clocks": wasmtime_wasi::p2::bindings::clocks,
        },
    });
}

/// `herald:plugin@0.7.0`: 0.6.0's imports, manifest and admission, and
/// notifications as frames of bytes through `delivery` instead of
/// `handler`.
pub mod v0_7 {
    wasmtime::component::bindgen!({
        path: "../wit/0.7.0",
        world: "herald:plugin/plugin@0.7.0",
        exports: { default: async },
        with: {
            "herald:plugin/types@0.2.0": super::v0_2::herald::plugin::types,
            "herald:plugin/log@0.2.0": super::v0_2::herald::plugin::log,
            "herald:plugin/cache@0.2.0": super::v0_2::herald::plugin::cache,
            "herald:plugin/config@0.2.0": super::v0_2::herald::plugin::config,
            "herald:plugin/kube@0.2.0": super::v0_2::herald::plugin::kube,
            "herald:plugin/events@0.2.0": super::v0_2::herald::plugin::events,
            "herald:plugin/types@0.3.0": super::v0_3::herald::plugin0_3_0::types,
            "herald:plugin/metrics@0.3.0": super::v0_3::herald::plugin0_3_0::metrics,
            "herald:plugin/workqueue@0.3.0": super::v0_3::herald::plugin0_3_0::workqueue,
            "herald:plugin/index@0.3.0": super::v0_3::herald::plugin0_3_0::index,
            "herald:plugin/deadline@0.4.0": super::v0_4::herald::plugin0_4_0::deadline,
            "herald:plugin/cluster@0.6.0": super::v0_6::herald::plugin0_6_0::cluster,
            "wasi:http": wasmtime_wasi_http::p2::bindings::http,
            "wasi:io": wasmtime_wasi::p2::bindings::io,
            "wasi:clocks": wasmtime_wasi::p2::bindings::clocks,
        },
    });
}

/// The versions of the world this host implements, newest first.
pub const WORLD_VERSIONS: &[&str] = &[
    "0.7.0", "0.6.0", "0.5.0", "0.4.0", "0.3.0", "0.2.0", "0.1.0",
];

/// The WIT package of the plugin world and of its interfaces.
pub const PACKAGE: &str = "herald:plugin";

/// The newest plugin world this host runs, as WIT names it: the world
/// [`v0_7`] binds (whose `bindgen!` needs the name written out), the one
/// the Rust SDK builds against and `herald version` prints.
pub const WORLD: &str = "herald:plugin/plugin@0.7.0";

/// The plugin world of `version`, as WIT names it:
/// `herald:plugin/plugin@0.2.0`.
pub fn world(version: &str) -> String {
    format!("{PACKAGE}/plugin@{version}")
}

/// The records of the newest world as plugins hand them over: what a
/// plugin's `manifest` export returns before the runtime validates it, and
/// the event context of a handler call. Public so that tools outside the
/// runtime (the fuzz targets, tests) can build a guest's manifest without a
/// guest.
pub mod abi {
    pub use super::v0_2::herald::plugin::types::{
        DeliveryMode, EventContext, GroupVersionKind, Limits, Subscription, Verb, WriteRule,
    };
    pub use super::v0_3::herald::plugin0_3_0::types::{
        IndexBy, IndexDefinition, Manifest, MetricDefinition, MetricKind,
    };
}

#[cfg(test)]
mod tests {
    use super::{WORLD, WORLD_VERSIONS, world};

    #[test]
    fn the_newest_world_is_the_one_the_newest_wit_declares() {
        assert_eq!(WORLD, world(WORLD_VERSIONS[0]));
        let wit = include_str!("../../../wit/0.7.0/herald.wit");
        let declared = |keyword: &str| {
            wit.lines()
                .find_map(|line| line.strip_prefix(keyword))
                .map(|rest| rest.trim_end_matches([';', '{', ' ']))
                .unwrap_or_else(|| panic!("wit/0.7.0/herald.wit declares no {keyword}"))
        };
        let (package, version) = declared("package ").split_once('@').unwrap();
        assert_eq!(WORLD, format!("{package}/{}@{version}", declared("world ")));
    }
}
