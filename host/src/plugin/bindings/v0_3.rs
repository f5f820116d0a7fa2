//! `herald:plugin@0.3.0`: 0.2.0's interfaces, imported from the 0.2.0
//! package unchanged (and so bound here to [`v0_2`](super::v0_2)'s types and
//! host side), plus plugin metrics (`metrics`), the workqueue
//! (`workqueue`), index look-ups (`index`) and outbound HTTP
//! (`wasi:http/outgoing-handler`, whose host side is wasmtime-wasi-http's,
//! its requests sent through [`capability::http`](crate::capability::http)).
//! The manifest gains the metric and index definitions.

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

use self::herald::plugin0_3_0::{index, metrics, types, workqueue};
use super::super::host::{HostState, MetricUpdate};
use super::super::lookup::LookupError;

impl types::Host for HostState {}

impl metrics::Host for HostState {
    fn add(&mut self, name: String, label_values: Vec<String>, value: f64) {
        self.metric_update(MetricUpdate::Add, &name, &label_values, value);
    }

    fn set(&mut self, name: String, label_values: Vec<String>, value: f64) {
        self.metric_update(MetricUpdate::Set, &name, &label_values, value);
    }

    fn observe(&mut self, name: String, label_values: Vec<String>, value: f64) {
        self.metric_update(MetricUpdate::Observe, &name, &label_values, value);
    }
}

impl index::Host for HostState {
    fn lookup(
        &mut self,
        name: String,
        value: String,
        namespace: Option<String>,
    ) -> wasmtime::Result<Result<Vec<String>, index::IndexError>> {
        Ok(self
            .cache_by_index(&name, &value, namespace.as_deref())?
            .map_err(|err| match err {
                LookupError::UnknownIndex(name) => index::IndexError::UnknownIndex(name),
                // A declared index names a subscribed kind, and no selector.
                other => index::IndexError::UnknownIndex(other.to_string()),
            }))
    }
}

impl workqueue::Host for HostState {
    fn requeue_after(&mut self, delay_ms: u64) {
        self.request_requeue(std::time::Duration::from_millis(delay_ms));
    }
}

/// Adds 0.3.0's own imports to `linker`: the 0.2.0 interfaces it imports
/// are linked by 0.2.0, and `wasi:http`'s types and outgoing handler by
/// wasmtime-wasi-http.
pub(crate) fn add_to_linker(
    linker: &mut wasmtime::component::Linker<HostState>,
) -> wasmtime::Result<()> {
    use wasmtime::component::HasSelf;
    metrics::add_to_linker::<HostState, HasSelf<HostState>>(linker, |state| state)?;
    workqueue::add_to_linker::<HostState, HasSelf<HostState>>(linker, |state| state)?;
    index::add_to_linker::<HostState, HasSelf<HostState>>(linker, |state| state)?;
    types::add_to_linker::<HostState, HasSelf<HostState>>(linker, |state| state)?;
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(linker)
}
