//! The connector: one request of a plugin from a concurrency slot to its
//! response headers, each step bounded in time. The name is resolved once
//! and every address checked ([`super::address`]) before a connection is
//! made, to a checked address only; then TCP, TLS for `https` (rustls with
//! ring, as kube), HTTP/1.1 on hyper's client connection, whose task runs
//! on the current tokio runtime until the response ends or the request's
//! deadline cuts it.

use super::address::{self, Exemption};
use super::body::{CappedBody, CappedRequestBody, Slot};
use super::grant::{Host, Scheme, Target};
use super::stats::{Ledger, Outcome};
use super::tls;
use http_body_util::BodyExt;
use hyper_util::rt::TokioIo;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::Semaphore;
use tokio::time::{Instant, timeout_at};
use wasmtime_wasi_http::{Error, WasiBody};

/// Resolves a host name and port to socket addresses.
pub(super) type Resolver = Arc<
    dyn Fn(&str, u16) -> futures::future::BoxFuture<'static, io::Result<Vec<SocketAddr>>>
        + Send
        + Sync,
>;

/// The system's resolver (`getaddrinfo` on tokio's blocking pool).
pub(super) fn system_resolver() -> Resolver {
    Arc::new(|host, port| {
        let host = host.to_owned();
        Box::pin(async move {
            Ok(tokio::net::lookup_host((host.as_str(), port))
                .await?
                .collect())
        })
    })
}

/// What the policy decided for one request that may be sent.
pub(super) struct Plan {
    pub(super) target: Target,
    pub(super) exemption: Exemption,
    /// When the whole request must be over.
    pub(super) deadline: Instant,
    pub(super) connect_timeout: std::time::Duration,
    /// When the response headers must have come.
    pub(super) first_byte_deadline: Instant,
    pub(super) max_response_size: u64,
    pub(super) max_request_size: u64,
    pub(super) slots: Arc<Semaphore>,
    pub(super) max_concurrent: u32,
    pub(super) resolver: Resolver,
    pub(super) tls: Option<tls::Config>,
}

/// A request that did not get a response: what the guest gets, how it is
/// counted, and why.
pub(super) struct Failure {
    pub(super) outcome: Outcome,
    pub(super) error: Error,
    pub(super) detail: String,
}

impl Failure {
    fn new(outcome: Outcome, error: Error, detail: impl Into<String>) -> Self {
        Failure {
            outcome,
            error,
            detail: detail.into(),
        }
    }
}

/// Sends `request` as `plan` says; `ledger` records it when it ends.
pub(super) async fn send(
    request: http::Request<WasiBody>,
    plan: Plan,
    mut ledger: Ledger,
) -> Result<http::Response<WasiBody>, Error> {
    ledger.attempted = true;
    match exchange(request, &plan, &mut ledger).await {
        Ok((response, slot)) => {
            let (parts, incoming) = response.into_parts();
            let body = CappedBody::new(
                incoming,
                plan.max_response_size,
                plan.deadline,
                slot,
                ledger,
            );
            Ok(http::Response::from_parts(parts, body.boxed_unsync()))
        }
        Err(failure) => {
            ledger.finish(failure.outcome, &failure.detail);
            Err(failure.error)
        }
    }
}

trait Io: AsyncRead + AsyncWrite + Send + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> Io for T {}

async fn exchange(
    request: http::Request<WasiBody>,
    plan: &Plan,
    ledger: &mut Ledger,
) -> Result<(http::Response<hyper::body::Incoming>, Slot), Failure> {
    let permit = timeout_at(plan.deadline, plan.slots.clone().acquire_owned())
        .await
        .map_err(|_| {
            Failure::new(
                Outcome::Timeout,
                Error::ConnectionLimitReached,
                format!(
                    "the plugin's {} concurrent requests (maxConcurrent) stayed busy for the \
                     request's whole time budget",
                    plan.max_concurrent
                ),
            )
        })?
        .expect("the semaphore is never closed");
    let connect_deadline = plan.deadline.min(Instant::now() + plan.connect_timeout);
    let addresses = resolve(plan, connect_deadline).await?;
    for address in &addresses {
        if let Err(special) = address::check(address.ip(), plan.exemption) {
            return Err(Failure::new(
                Outcome::DeniedAddress,
                Error::DestinationIpProhibited,
                format!(
                    "{} resolves to {}, {special}, which no granted origin names",
                    plan.target.host,
                    address.ip()
                ),
            ));
        }
    }
    let stream = connect(&addresses, connect_deadline).await?;
    let stream: Box<dyn Io> = match plan.target.scheme {
        Scheme::Http => Box::new(stream),
        Scheme::Https => Box::new(handshake_tls(plan, stream, connect_deadline).await?),
    };
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| Failure::new(Outcome::Error, Error::Hyper(e), "HTTP/1.1 handshake"))?;
    let slot = Slot::new(permit);
    let connection_slot = slot.clone();
    let deadline = plan.deadline;
    // The connection lives until the response is read (or dropped), or the
    // request's deadline passes; then its socket is closed and its slot
    // given back, whatever the plugin does with the body.
    tokio::spawn(async move {
        let _ = timeout_at(deadline, connection).await;
        connection_slot.release();
    });
    // The request line carries the path and query only (origin form).
    let path = request
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .parse()
        .map_err(|_| {
            Failure::new(
                Outcome::Error,
                Error::HttpRequestUriInvalid,
                "the request's path is not valid",
            )
        })?;
    let head_only = request.method() == http::Method::HEAD;
    let (mut head, body) = request.into_parts();
    head.uri = path;
    let exceeded = Arc::new(AtomicBool::new(false));
    let body = CappedRequestBody::new(body, plan.max_request_size, exceeded.clone()).boxed_unsync();
    let outgoing = http::Request::from_parts(head, body);
    let response = timeout_at(plan.first_byte_deadline, sender.send_request(outgoing))
        .await
        .map_err(|_| {
            Failure::new(
                Outcome::Timeout,
                Error::HttpResponseTimeout,
                "no response headers within the request's time budget",
            )
        })?
        .map_err(|e| {
            if exceeded.load(Ordering::Relaxed) {
                Failure::new(
                    Outcome::RequestTooLarge,
                    Error::HttpRequestBodySize(None),
                    format!(
                        "the request body passed maxRequestSize ({} bytes) and was cut",
                        plan.max_request_size
                    ),
                )
            } else if Instant::now() >= plan.deadline {
                Failure::new(
                    Outcome::Timeout,
                    Error::HttpResponseTimeout,
                    "no response headers within the request's time budget",
                )
            } else {
                let detail = format!("sending the request: {e}");
                Failure::new(Outcome::Error, Error::Hyper(e), detail)
            }
        })?;
    ledger.status = Some(response.status().as_u16());
    if let Some(length) = declared_length(&response, head_only)
        && length > plan.max_response_size
    {
        slot.release();
        return Err(Failure::new(
            Outcome::TooLarge,
            Error::HttpResponseBodySize(Some(length)),
            format!(
                "the response's Content-Length ({length} bytes) is above maxResponseSize ({} \
                 bytes)",
                plan.max_response_size
            ),
        ));
    }
    Ok((response, slot))
}

/// The addresses of the request's host: an address literal as is, a name
/// looked up once.
async fn resolve(plan: &Plan, deadline: Instant) -> Result<Vec<SocketAddr>, Failure> {
    let port = plan.target.port;
    let name = match &plan.target.host {
        Host::Ip(ip) => return Ok(vec![SocketAddr::new(*ip, port)]),
        Host::Name(name) | Host::Wildcard(name) => name,
    };
    let addresses = timeout_at(deadline, (plan.resolver)(name, port))
        .await
        .map_err(|_| {
            Failure::new(
                Outcome::Timeout,
                Error::DnsTimeout,
                format!("looking up {name} took longer than the connect timeout"),
            )
        })?
        .map_err(|e| {
            Failure::new(
                Outcome::Error,
                Error::DnsError {
                    rcode: Some(e.to_string()),
                    info_code: None,
                },
                format!("looking up {name}: {e}"),
            )
        })?;
    if addresses.is_empty() {
        return Err(Failure::new(
            Outcome::Error,
            Error::DestinationNotFound,
            format!("{name} has no address"),
        ));
    }
    Ok(addresses)
}

/// A TCP connection to the first of `addresses` that accepts one.
async fn connect(addresses: &[SocketAddr], deadline: Instant) -> Result<TcpStream, Failure> {
    let attempts = async {
        let mut last = None;
        for address in addresses {
            match TcpStream::connect(*address).await {
                Ok(stream) => return Ok(stream),
                Err(error) => last = Some((address, error)),
            }
        }
        Err(last.expect("there is at least one address"))
    };
    match timeout_at(deadline, attempts).await {
        Err(_) => Err(Failure::new(
            Outcome::Timeout,
            Error::ConnectionTimeout,
            "no connection within the connect timeout",
        )),
        Ok(Err((address, error))) => {
            let detail = format!("connecting to {address}: {error}");
            let error = match error.kind() {
                io::ErrorKind::ConnectionRefused => Error::ConnectionRefused,
                io::ErrorKind::ConnectionReset | io::ErrorKind::ConnectionAborted => {
                    Error::ConnectionTerminated
                }
                io::ErrorKind::HostUnreachable | io::ErrorKind::NetworkUnreachable => {
                    Error::DestinationUnavailable
                }
                _ => Error::Connect(error),
            };
            Err(Failure::new(Outcome::Error, error, detail))
        }
        Ok(Ok(stream)) => {
            // Small requests and their answers should not wait for Nagle.
            let _ = stream.set_nodelay(true);
            Ok(stream)
        }
    }
}

async fn handshake_tls(
    plan: &Plan,
    stream: TcpStream,
    deadline: Instant,
) -> Result<tokio_rustls::client::TlsStream<TcpStream>, Failure> {
    let config = match &plan.tls {
        Some(tls::Config::Ready(config)) => config.clone(),
        Some(tls::Config::Unavailable(why)) => {
            return Err(Failure::new(
                Outcome::Error,
                Error::TlsCertificateError,
                format!("no HTTPS: {why}"),
            ));
        }
        None => {
            return Err(Failure::new(
                Outcome::Error,
                Error::InternalError(Some("no TLS configuration".into())),
                "no TLS configuration for an https origin",
            ));
        }
    };
    let name = match &plan.target.host {
        Host::Ip(ip) => rustls::pki_types::ServerName::IpAddress((*ip).into()),
        Host::Name(name) | Host::Wildcard(name) => {
            rustls::pki_types::ServerName::try_from(name.clone()).map_err(|e| {
                Failure::new(
                    Outcome::Error,
                    Error::TlsProtocolError,
                    format!("{name} is not a TLS server name: {e}"),
                )
            })?
        }
    };
    let connector = tokio_rustls::TlsConnector::from(config);
    match timeout_at(deadline, connector.connect(name, stream)).await {
        Err(_) => Err(Failure::new(
            Outcome::Timeout,
            Error::ConnectionTimeout,
            "no TLS handshake within the connect timeout",
        )),
        Ok(Err(error)) => {
            let detail = format!("TLS handshake: {error}");
            Err(Failure::new(
                Outcome::Error,
                tls::error_code(&error),
                detail,
            ))
        }
        Ok(Ok(stream)) => Ok(stream),
    }
}

/// The body length a response announces, if it has a body at all.
fn declared_length<B>(response: &http::Response<B>, head_only: bool) -> Option<u64> {
    let status = response.status();
    if head_only
        || status.is_informational()
        || status == http::StatusCode::NO_CONTENT
        || status == http::StatusCode::NOT_MODIFIED
    {
        return None;
    }
    response
        .headers()
        .get(http::header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .parse()
        .ok()
}
