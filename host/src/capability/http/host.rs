//! `wasi:http/outgoing-handler` (0.3.0 and later): wasmtime-wasi-http's host
//! side, every request sent through the plugin's [`Egress`] policy.

use super::{Egress, EgressHooks};
use std::sync::Arc;
use std::time::Instant;
use wasmtime::component::{Linker, ResourceTable};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

/// One instance's `wasi:http` state: wasmtime-wasi-http's context and the
/// hooks that send its requests through the plugin's egress policy.
pub struct HttpInstance {
    ctx: WasiHttpCtx,
    hooks: EgressHooks,
}

impl HttpInstance {
    /// The state of a new instance of the plugin whose egress is `egress`.
    pub fn new(egress: &Arc<Egress>) -> Self {
        HttpInstance {
            ctx: WasiHttpCtx::new(),
            hooks: egress.hooks(),
        }
    }

    /// The view `wasi:http` works through, its requests bounded by
    /// `deadline` (the call under way's); `table` is the store's resources.
    pub fn view<'a>(
        &'a mut self,
        table: &'a mut ResourceTable,
        deadline: Option<Instant>,
    ) -> WasiHttpCtxView<'a> {
        self.hooks.set_deadline(deadline);
        WasiHttpCtxView {
            ctx: &mut self.ctx,
            table,
            hooks: &mut self.hooks,
        }
    }
}

/// Links `wasi:http`'s types and outgoing handler (0.3.0 and later).
pub fn add_to_linker<T: WasiHttpView + 'static>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(linker)
}
