//! Host bindings generated from `wit/herald.wit`: the only place `bindgen!` runs.

#![allow(missing_docs, unsafe_code)]

wasmtime::component::bindgen!({
    path: "../wit",
    world: "herald:plugin/plugin",
});

pub use self::herald::plugin::types::{EventContext, GroupVersionKind};
