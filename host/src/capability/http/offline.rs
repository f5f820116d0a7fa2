//! Outbound HTTP answered offline: for `herald plugin replay`, which shows
//! what a plugin would send and never touches the network. An
//! [`Egress::offline`](super::Egress::offline) hands each request, its body
//! read (up to [`MAX_OFFLINE_BODY`]), to an [`OfflineHttp`] that records it
//! and answers it. Offline requests skip the policy (no grant, origin,
//! address, slot or deadline check: nothing is sent) and are neither
//! audited nor counted: the replay prints each one instead.

use bytes::Bytes;
use http_body_util::BodyExt;
use wasmtime_wasi_http::{Error, WasiBody};

/// The most of a request body an offline answerer is given; the rest is
/// read and dropped (its size is still counted).
pub const MAX_OFFLINE_BODY: usize = 1 << 20;

/// One request a plugin made offline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OfflineRequest {
    /// `GET`, `POST`, …
    pub method: String,
    /// The URL without its query (which often carries credentials).
    pub url: String,
    /// The body's size in bytes.
    pub body_size: u64,
    /// The body, up to [`MAX_OFFLINE_BODY`] bytes.
    pub body: Bytes,
}

impl OfflineRequest {
    /// A request whose whole body is `body`.
    pub fn new(method: &str, url: &str, body: impl Into<Bytes>) -> Self {
        let body = body.into();
        OfflineRequest {
            method: method.to_owned(),
            url: url.to_owned(),
            body_size: body.len() as u64,
            body,
        }
    }
}

/// The answer to an offline request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OfflineResponse {
    /// The status code.
    pub status: u16,
    /// The headers.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Bytes,
}

/// Answers a plugin's outbound requests without sending them.
pub trait OfflineHttp: Send + Sync + std::fmt::Debug {
    /// The answer to `request`: a response or the `wasi:http` error the
    /// plugin gets.
    fn answer(&self, request: OfflineRequest) -> Result<OfflineResponse, Error>;
}

/// Reads `body` to its end, keeping at most [`MAX_OFFLINE_BODY`] bytes:
/// the kept bytes and the full size.
pub(super) async fn read_body(mut body: WasiBody) -> Result<(Bytes, u64), Error> {
    let mut kept = Vec::new();
    let mut size = 0u64;
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame?.into_data() {
            size += data.len() as u64;
            let room = MAX_OFFLINE_BODY.saturating_sub(kept.len());
            kept.extend_from_slice(&data[..data.len().min(room)]);
        }
    }
    Ok((kept.into(), size))
}

/// `answer` as the response a plugin reads.
pub(super) fn response(answer: OfflineResponse) -> Result<http::Response<WasiBody>, Error> {
    let mut builder = http::Response::builder().status(answer.status);
    for (name, value) in &answer.headers {
        builder = builder.header(name, value);
    }
    let body = http_body_util::Full::new(answer.body)
        .map_err(|never| match never {})
        .boxed_unsync();
    builder
        .body(body)
        .map_err(|e| Error::InternalError(Some(format!("offline response: {e}"))))
}
