//! Host bindings generated from `wit/herald.wit`: the only place `bindgen!` runs.
//!
//! Exports are called with wasmtime's async API, so the call deadline bounds
//! host calls that wait as well as wasm ([`deadline`](super::deadline)).
//! Cache look-ups may trap: an answer larger than the instance's remaining
//! memory is a memory-limit fault, refused before the host copies it.

#![allow(missing_docs, unsafe_code)]

wasmtime::component::bindgen!({
    path: "../wit",
    world: "herald:plugin/plugin",
    imports: { "herald:plugin/cache": trappable },
    exports: { default: async },
});

pub use self::herald::plugin::types::{EventContext, GroupVersionKind};
