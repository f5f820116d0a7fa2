//! The `http` capability: plugins send outbound HTTP requests through the
//! standard `wasi:http/outgoing-handler`, to the origins the operator
//! granted them, and the host sends them itself.
//!
//! # The policy
//!
//! Every check is made in the host before a connection is made, and a
//! refused request is an HTTP error value for the guest (never a trap),
//! logged at `warn` on the `herald::audit` target and counted:
//!
//! 1. **Grant.** A plugin whose manifest declares `http` and whose
//!    operator grant has a `grants.http` section ([`HttpGrant`]) may send
//!    requests; any other plugin's requests are refused with
//!    `HTTP-request-denied` before any name look-up.
//! 2. **Origin.** The request's scheme (`http` or `https`), host and port
//!    must match one of the grant's `allowedOrigins` ([`Origin`]), else
//!    `HTTP-request-denied`. The host never follows redirects (nor does
//!    `wasi:http`): a plugin that follows one makes a new request, checked
//!    again.
//! 3. **Address.** The host name is resolved once, by the host; every
//!    address is checked ([`address`]: loopback, link-local, metadata and
//!    unspecified addresses are refused unless the matched origin names them)
//!    and the connection goes to a checked address: no second resolution,
//!    so no DNS rebinding. A refused address is `destination-IP-prohibited`.
//! 4. **Time.** Connecting (look-up, TCP, TLS) is bounded by
//!    `connectTimeout` (`connection-timeout`); the whole request, response
//!    body included, by `timeout` and by 80 % of what is left of the handler
//!    call's deadline, whichever ends first (`HTTP-response-timeout`). A
//!    plugin's own `request-options` may shorten the connect and first-byte
//!    timeouts, never lengthen them; `between-bytes-timeout` is not used.
//! 5. **Size.** A response whose `Content-Length` is above
//!    `maxResponseSize` is refused when its headers arrive; any other body is
//!    passed on frame by frame and cut with `HTTP-response-body-size` when it
//!    passes the cap: the host never buffers a body.
//! 6. **Concurrency.** At most `maxConcurrent` requests of the plugin are in
//!    flight across its instances; a request waits for a slot within its
//!    time budget (then `connection-limit-reached`). The slot is held from
//!    before the look-up until the response body ends or is dropped, or the
//!    request's deadline passes.
//!
//! Every request ends with one audit line (plugin, method, URL without its
//! query, outcome, status, bytes, duration) and is counted in
//! `herald_plugin_http_requests_total{plugin,outcome}` and
//! `herald_plugin_http_request_duration_seconds{plugin}`.

pub mod address;
mod grant;

pub use grant::{
    DEFAULT_CONNECT_TIMEOUT, DEFAULT_MAX_CONCURRENT, DEFAULT_MAX_RESPONSE_SIZE, DEFAULT_TIMEOUT,
    Host, HttpGrant, Origin, Scheme, Target,
};

/// The capability's name in manifests and grants.
pub const CAPABILITY: &str = "http";
