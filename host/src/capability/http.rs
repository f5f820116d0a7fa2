//! PROVISIONAL until the egress policy lands: every request refused.

use std::sync::Arc;
use std::time::Instant;

/// The per-plugin egress state.
#[derive(Debug, Default)]
pub struct Egress;

/// Hooks refusing every request.
#[derive(Debug)]
pub struct EgressHooks;

impl EgressHooks {
    /// Hooks for `egress`.
    pub fn new(_egress: Option<Arc<Egress>>) -> Self {
        EgressHooks
    }
    /// The call's deadline.
    pub fn set_deadline(&mut self, _deadline: Option<Instant>) {}
}

impl wasmtime_wasi_http::WasiHttpHooks for EgressHooks {
    fn send_request(
        &mut self,
        _request: http::Request<wasmtime_wasi_http::WasiBody>,
        _options: Option<wasmtime_wasi_http::RequestOptions>,
        _fut: Box<dyn Future<Output = Result<(), wasmtime_wasi_http::Error>> + Send>,
    ) -> Box<
        dyn Future<
                Output = wasmtime_wasi_http::Result<(
                    http::Response<wasmtime_wasi_http::WasiBody>,
                    Box<dyn Future<Output = Result<(), wasmtime_wasi_http::Error>> + Send>,
                )>,
            > + Send,
    > {
        Box::new(async { Err(wasmtime_wasi_http::Error::HttpRequestDenied) })
    }
}
