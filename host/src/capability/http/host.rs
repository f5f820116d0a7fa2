//! `wasi:http/outgoing-handler` (0.3.0 and later): wasmtime-wasi-http's host
//! side, every request sent through the plugin's [`Egress`] policy.

use super::{Egress, EgressHooks};
use http::HeaderMap;
use std::any::Any;
use std::sync::Arc;
use std::time::Instant;
use wasmtime::component::{Linker, ResourceTable};
use wasmtime_wasi_http::p2::body::HostOutgoingBody;
use wasmtime_wasi_http::p2::types::{
    HostFutureIncomingResponse, HostIncomingResponse, HostOutgoingRequest, HostOutgoingResponse,
};
use wasmtime_wasi_http::{FieldMap, WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

/// Size of one chunk a plugin writes into an outgoing body.
pub(crate) const OUTGOING_BODY_CHUNK: usize = 64 * 1024;
/// Chunks an outgoing body buffers beyond the one being written.
pub(crate) const OUTGOING_BODY_CHUNKS: usize = 1;
/// The most an outgoing body holds in the host until it is sent or dropped:
/// its channel holds one chunk more than it buffers.
pub const OUTGOING_BODY_HELD: usize = (OUTGOING_BODY_CHUNKS + 1) * OUTGOING_BODY_CHUNK;
/// What one handle in a resource table costs the host beyond its contents:
/// the table's entry, the boxed object, its stream or channel ends.
pub const RESOURCE_ENTRY_BYTES: usize = 256;

/// Bytes the host holds for the resources in `table`, an instance's: a
/// fixed [`RESOURCE_ENTRY_BYTES`] per handle, plus what a `wasi:http`
/// resource holds (header names and values of fields, requests and
/// responses; a request's authority and path; [`OUTGOING_BODY_HELD`] for
/// each outgoing body, and again for the request or response it belongs
/// to). Headers shared between handles count once per handle. Linear in
/// the number of handles, which [`MAX_HOST_RESOURCES`] bounds.
///
/// [`MAX_HOST_RESOURCES`]: crate::plugin::MAX_HOST_RESOURCES
pub fn held_bytes(table: &mut ResourceTable) -> Held {
    table.iter_mut().fold(Held::default(), |held, entry| Held {
        handles: held.handles + 1,
        bytes: held
            .bytes
            .saturating_add(RESOURCE_ENTRY_BYTES)
            .saturating_add(contents(entry)),
    })
}

/// What an instance's resource table holds: [`held_bytes`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Held {
    /// Live handles.
    pub handles: usize,
    /// Bytes the host holds for them.
    pub bytes: usize,
}

/// What one resource holds beyond its entry.
fn contents(entry: &(dyn Any + Send)) -> usize {
    let body = |held: bool| if held { OUTGOING_BODY_HELD } else { 0 };
    let text = |s: &Option<String>| s.as_ref().map_or(0, String::len);
    if let Some(fields) = entry.downcast_ref::<FieldMap>() {
        header_bytes(fields)
    } else if let Some(request) = entry.downcast_ref::<HostOutgoingRequest>() {
        header_bytes(&request.headers)
            + text(&request.authority)
            + text(&request.path_with_query)
            + body(request.body.is_some())
    } else if let Some(response) = entry.downcast_ref::<HostOutgoingResponse>() {
        header_bytes(&response.headers) + body(response.body.is_some())
    } else if let Some(response) = entry.downcast_ref::<HostIncomingResponse>() {
        header_bytes(&response.headers)
    } else if let Some(future) = entry.downcast_ref::<HostFutureIncomingResponse>() {
        match future {
            HostFutureIncomingResponse::Ready(Ok((response, _))) => {
                header_bytes(response.headers())
            }
            _ => 0,
        }
    } else if entry.is::<HostOutgoingBody>() {
        OUTGOING_BODY_HELD
    } else {
        0
    }
}

/// Bytes of the names and values in `headers`, counted as wasmtime-wasi-http
/// counts them against its per-fields limit.
fn header_bytes(headers: &HeaderMap) -> usize {
    let names: usize = headers
        .keys()
        .map(|name| name.as_str().len() + size_of::<http::HeaderName>())
        .sum();
    let values: usize = headers
        .values()
        .map(|value| value.len() + size_of::<http::HeaderValue>())
        .sum();
    names + values
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use http::{HeaderName, HeaderValue};

    #[test]
    fn held_bytes_count_every_handle_and_the_headers_and_bodies_behind_it() {
        let mut table = ResourceTable::new();
        assert_eq!(held_bytes(&mut table), Held::default());
        // A handle wasi:http knows nothing about costs its entry.
        table.push(()).unwrap();
        assert_eq!(held_bytes(&mut table).bytes, RESOURCE_ENTRY_BYTES);
        // Fields cost their names and values.
        let mut fields = FieldMap::new_mutable(1 << 20);
        let value = HeaderValue::from_bytes(&[b'v'; 10_000]).unwrap();
        for i in 0..5 {
            let name = HeaderName::from_bytes(format!("x-hoard-{i}").as_bytes()).unwrap();
            fields.append_raw(name, value.clone()).unwrap();
        }
        let fields_bytes = header_bytes(&fields);
        assert!(fields_bytes >= 50_000, "{fields_bytes}");
        let handle = table.push(fields).unwrap();
        assert_eq!(
            held_bytes(&mut table),
            Held {
                handles: 2,
                bytes: 2 * RESOURCE_ENTRY_BYTES + fields_bytes
            }
        );
        // A request keeps them, and its authority and path.
        let headers = table.delete(handle).unwrap();
        table
            .push(HostOutgoingRequest {
                method: wasmtime_wasi_http::p2::bindings::http::types::Method::Get,
                scheme: None,
                authority: Some("a".repeat(1000)),
                path_with_query: Some("p".repeat(2000)),
                headers,
                body: None,
            })
            .unwrap();
        assert_eq!(
            held_bytes(&mut table).bytes,
            2 * RESOURCE_ENTRY_BYTES + fields_bytes + 3000
        );
    }
}
