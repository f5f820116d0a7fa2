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
//!    before the look-up until the response body ends or is dropped, the
//!    connection closes, or the request's deadline passes (which closes the
//!    connection, so a body the plugin never reads holds no slot past it).
//!
//! Every request ends with one audit line (plugin, method, URL without its
//! query, outcome, status, bytes, duration) and is counted in
//! `herald_plugin_http_requests_total{plugin,outcome}` and
//! `herald_plugin_http_request_duration_seconds{plugin}` ([`EgressStats`]).
//!
//! # Embedding
//!
//! One [`Egress`] per loaded plugin holds its grant,
//! its slots and where it is counted; each instance's store holds an
//! [`EgressHooks`] from [`Egress::hooks`] as its `wasi:http` hooks, and the
//! worker gives it the deadline of each call ([`EgressHooks::set_deadline`]).
//!
//! `herald plugin replay` uses [`Egress::offline`] instead: every request is
//! handed to an [`OfflineHttp`] answerer and never sent ([`offline`]).
//!

pub mod address;
mod body;
mod grant;
mod host;
pub mod offline;
pub mod replay;
mod send;
mod stats;
mod tls;

pub use grant::{
    DEFAULT_CONNECT_TIMEOUT, DEFAULT_MAX_CONCURRENT, DEFAULT_MAX_RESPONSE_SIZE, DEFAULT_TIMEOUT,
    Host, HttpGrant, Origin, Scheme, Target,
};
pub use host::{HttpInstance, OUTGOING_BODY_HELD, RESOURCE_ENTRY_BYTES, held_bytes};
pub use offline::{OfflineHttp, OfflineRequest, OfflineResponse};
pub use stats::{EgressStats, Finished, Outcome};

use send::{Plan, Resolver};
use stats::Ledger;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

/// The capability's name in manifests and grants.
pub const CAPABILITY: &str = "http";

/// Share of the time left in a handler call that a request may use: the
/// rest is the handler's, to act on the answer (or the timeout). As for
/// Kubernetes API calls.
const REQUEST_SHARE: f64 = 0.8;

/// One loaded plugin's outbound HTTP: its grant (if any), its concurrency
/// slots and where its requests are counted. Shared by all its instances.
pub struct Egress {
    plugin: Arc<str>,
    grant: Option<HttpGrant>,
    mode: crate::capability::Mode,
    audit: Arc<crate::capability::AuditLog>,
    slots: Arc<Semaphore>,
    stats: Arc<EgressStats>,
    resolver: Resolver,
    tls: Option<tls::Config>,
    offline: Option<Arc<dyn OfflineHttp>>,
}

impl std::fmt::Debug for Egress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Egress")
            .field("plugin", &self.plugin)
            .field("grant", &self.grant)
            .field("mode", &self.mode)
            .field("offline", &self.offline.is_some())
            .finish_non_exhaustive()
    }
}

impl Egress {
    /// The egress of `plugin` with `grant` (`None`: every request refused),
    /// counted in `stats`. Loads the platform's root certificates, once per
    /// process, if the grant has an `https` origin.
    pub fn new(plugin: &str, grant: Option<HttpGrant>, stats: Arc<EgressStats>) -> Self {
        let tls = grant
            .as_ref()
            .filter(|g| {
                g.allowed_origins
                    .iter()
                    .any(|o| o.scheme() == Scheme::Https)
            })
            .map(|_| tls::platform());
        let slots = grant.as_ref().map_or(1, |g| g.max_concurrent as usize);
        Egress {
            plugin: plugin.into(),
            grant,
            mode: crate::capability::Mode::Enforce,
            audit: Arc::new(crate::capability::AuditLog::new(
                plugin,
                Default::default(),
                None,
            )),
            slots: Arc::new(Semaphore::new(slots)),
            stats,
            resolver: send::system_resolver(),
            tls,
            offline: None,
        }
    }

    /// The egress of `plugin` in an offline tool (`herald plugin replay`):
    /// every request is read and handed to `answerer`, which records and
    /// answers it; nothing is sent, audited or counted ([`offline`]).
    pub fn offline(plugin: &str, answerer: Arc<dyn OfflineHttp>) -> Self {
        Egress {
            offline: Some(answerer),
            ..Self::new(plugin, None, Arc::default())
        }
    }

    /// The egress of the plugin `authorized` describes: its grant, if it
    /// declares `http` (the offline tools' grant: the offline answerer
    /// instead of the network), audited with its other calls, in its mode.
    pub fn for_plugin(authorized: &crate::capability::Authorized) -> Self {
        let declares = authorized.declares(CAPABILITY);
        let access = authorized.access.as_ref();
        let offline = access
            .and_then(|access| access.offline_http.clone())
            .filter(|_| authorized.grants.all_declared && declares);
        let egress = match offline {
            Some(answerer) => Egress::offline(&authorized.plugin, answerer),
            None => Egress::new(
                &authorized.plugin,
                authorized.grants.http.clone().filter(|_| declares),
                access
                    .map(|access| access.stats.http.clone())
                    .unwrap_or_default(),
            )
            .with_audit(authorized.audit.clone()),
        };
        egress.in_mode(authorized.grants.mode)
    }

    /// This egress in `mode`: in dry-run, a request with an unsafe method
    /// is checked as in enforce mode, then not sent ([`Egress`]'s docs).
    pub fn in_mode(mut self, mode: crate::capability::Mode) -> Self {
        self.mode = mode;
        self
    }

    /// This egress writing its audit lines through `audit` (the plugin's,
    /// rate-limited with its other audit lines).
    pub fn with_audit(mut self, audit: Arc<crate::capability::AuditLog>) -> Self {
        self.audit = audit;
        self
    }

    /// The egress of a plugin granted no HTTP: every request refused.
    pub fn denied(plugin: &str) -> Self {
        Self::new(plugin, None, Arc::default())
    }

    /// The plugin's name.
    pub fn plugin(&self) -> &str {
        &self.plugin
    }

    /// Its grant, if it has one.
    pub fn grant(&self) -> Option<&HttpGrant> {
        self.grant.as_ref()
    }

    /// Where its requests are counted.
    pub fn stats(&self) -> &Arc<EgressStats> {
        &self.stats
    }

    /// The `wasi:http` hooks of one instance of the plugin, with no
    /// deadline until [`EgressHooks::set_deadline`] gives one.
    pub fn hooks(self: &Arc<Self>) -> EgressHooks {
        EgressHooks {
            egress: self.clone(),
            deadline: None,
        }
    }

    /// The policy's decision on a request made now within `deadline`: the
    /// plan to send it, or the refusal.
    fn plan(
        &self,
        request: &http::Request<WasiBody>,
        options: Option<RequestOptions>,
        deadline: Option<Instant>,
    ) -> Result<Plan, send::Failure> {
        let denied = |detail: String| send::Failure {
            outcome: Outcome::DeniedOrigin,
            error: Error::HttpRequestDenied,
            detail,
        };
        let plugin = &self.plugin;
        let Some(grant) = &self.grant else {
            return Err(denied(format!(
                "plugin {plugin:?} has no HTTP grant: declare the http capability in its \
                 manifest and have the operator grant origins in plugins.{plugin}.grants.http"
            )));
        };
        let target = Target::of_uri(request.uri())
            .map_err(|why| denied(format!("the request's URL cannot be sent: {why}")))?;
        let Some(origin) = grant.matching(&target) else {
            return Err(denied(format!(
                "{target} is not an allowed origin of plugin {plugin:?} \
                 (plugins.{plugin}.grants.http.allowedOrigins)"
            )));
        };
        let exemption = address::Exemption {
            literal: match origin.host() {
                Host::Ip(ip) => Some(*ip),
                _ => None,
            },
            localhost: origin.names_localhost(),
        };
        if let Some(length) = request
            .headers()
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok())
            && length > grant.max_request_size
        {
            return Err(send::Failure {
                outcome: Outcome::RequestTooLarge,
                error: Error::HttpRequestBodySize(Some(length)),
                detail: format!(
                    "the request's Content-Length ({length} bytes) is above maxRequestSize ({} \
                     bytes) (plugins.{plugin}.grants.http.maxRequestSize)",
                    grant.max_request_size
                ),
            });
        }
        let now = Instant::now();
        let budget = deadline
            .map_or(grant.timeout, |d| {
                d.saturating_duration_since(now).mul_f64(REQUEST_SHARE)
            })
            .min(grant.timeout);
        if budget.is_zero() {
            return Err(send::Failure {
                outcome: Outcome::Timeout,
                error: Error::ConnectionTimeout,
                detail: "no time left in the handler call for a request".into(),
            });
        }
        let shorter =
            |ours: Duration, theirs: Option<Duration>| theirs.map_or(ours, |t| t.min(ours));
        let options = options.unwrap_or_default();
        let deadline = tokio::time::Instant::from_std(now + budget);
        let first_byte = match options.first_byte_timeout {
            Some(timeout) => deadline.min(tokio::time::Instant::from_std(now) + timeout),
            None => deadline,
        };
        Ok(Plan {
            target,
            exemption,
            deadline,
            connect_timeout: shorter(grant.connect_timeout, options.connect_timeout),
            first_byte_deadline: first_byte,
            max_response_size: grant.max_response_size,
            max_request_size: grant.max_request_size,
            slots: self.slots.clone(),
            max_concurrent: grant.max_concurrent,
            resolver: self.resolver.clone(),
            tls: self.tls.clone(),
        })
    }

    /// Resolves names with `resolver` instead of the system's.
    #[cfg(test)]
    fn with_resolver(mut self, resolver: Resolver) -> Self {
        self.resolver = resolver;
        self
    }

    /// Trusts `roots` instead of the platform's.
    #[cfg(test)]
    fn with_roots(mut self, roots: rustls::RootCertStore) -> Self {
        self.tls = Some(tls::with_roots(roots));
        self
    }
}

/// The `wasi:http` hooks of one plugin instance: every request goes through
/// its plugin's [`Egress`] policy, within the current call's deadline.
#[derive(Debug)]
pub struct EgressHooks {
    egress: Arc<Egress>,
    deadline: Option<Instant>,
}

impl EgressHooks {
    /// The deadline of the call under way (`None`: none, so requests are
    /// bounded by the grant's `timeout` alone). Set it before each call.
    pub fn set_deadline(&mut self, deadline: Option<Instant>) {
        self.deadline = deadline;
    }

    /// The plugin's egress.
    pub fn egress(&self) -> &Arc<Egress> {
        &self.egress
    }
}

/// What the connection needs driven after the response: nothing here, as
/// the connection runs on a task of its own.
type Driver = Box<dyn Future<Output = wasmtime_wasi_http::Result<()>> + Send>;

/// A request's answer: the response and its driver, or the error for the
/// guest.
type Exchange =
    Box<dyn Future<Output = wasmtime_wasi_http::Result<(http::Response<WasiBody>, Driver)>> + Send>;

impl WasiHttpHooks for EgressHooks {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _response_done: Driver,
    ) -> Exchange {
        let egress = &self.egress;
        if let Some(answerer) = &egress.offline {
            let answerer = answerer.clone();
            let method = request.method().to_string();
            let mut url = audit_url(request.uri());
            url.truncate(url.find("?…").unwrap_or(url.len()));
            return Box::new(async move {
                let (body, body_size) = offline::read_body(request.into_body()).await?;
                let answer = answerer.answer(OfflineRequest {
                    method,
                    url,
                    body_size,
                    body,
                })?;
                let driver: Driver = Box::new(std::future::ready(Ok(())));
                Ok((offline::response(answer)?, driver))
            });
        }
        let mut ledger = Ledger::new(
            egress.stats.clone(),
            egress.audit.clone(),
            egress.plugin.clone(),
            request.method().to_string(),
            audit_url(request.uri()),
        );
        match egress.plan(&request, options, self.deadline) {
            Err(failure) => {
                ledger.finish(failure.outcome, &failure.detail);
                let refused: wasmtime_wasi_http::Result<(http::Response<WasiBody>, Driver)> =
                    Err(failure.error);
                Box::new(std::future::ready(refused))
            }
            Ok(plan) if egress.mode.is_dry_run() && !is_safe(request.method()) => {
                Box::new(async move {
                    // Nothing leaves the host: the body is read (within the
                    // cap) to say how much would have been sent.
                    match body::drain_request(request.into_body(), plan.max_request_size).await {
                        Ok(size) => {
                            ledger.bytes = size;
                            ledger.finish(
                                Outcome::WouldSend,
                                "dry-run: a request with an unsafe method is not sent",
                            );
                            let driver: Driver = Box::new(std::future::ready(Ok(())));
                            Ok((would_send_response()?, driver))
                        }
                        Err(error) => {
                            ledger.finish(
                                Outcome::RequestTooLarge,
                                "dry-run: the request body passed maxRequestSize",
                            );
                            Err(error)
                        }
                    }
                })
            }
            Ok(plan) => Box::new(async move {
                let response = send::send(request, plan, ledger).await?;
                let driver: Driver = Box::new(std::future::ready(Ok(())));
                Ok((response, driver))
            }),
        }
    }

    /// Bounds what an outgoing body holds in the host before it is sent
    /// (or forever, if it never is) to [`host::OUTGOING_BODY_HELD`], which
    /// [`host::held_bytes`] charges to the instance's memory cap.
    fn p2_outgoing_body_buffer_chunks(&mut self) -> usize {
        host::OUTGOING_BODY_CHUNKS
    }

    /// See [`Self::p2_outgoing_body_buffer_chunks`].
    fn p2_outgoing_body_chunk_size(&mut self) -> usize {
        host::OUTGOING_BODY_CHUNK
    }
}

/// True for the methods RFC 9110 defines as safe to send on a plugin's
/// behalf in dry-run: `GET` and `HEAD` (reads, no effect on the origin).
fn is_safe(method: &http::Method) -> bool {
    method == http::Method::GET || method == http::Method::HEAD
}

/// The answer a plugin in dry-run gets for a request that was not sent:
/// `202 Accepted`, no body, and the header `herald-dry-run: not-sent`.
fn would_send_response() -> wasmtime_wasi_http::Result<http::Response<WasiBody>> {
    use http_body_util::BodyExt;
    let body = http_body_util::Empty::<bytes::Bytes>::new()
        .map_err(|never| match never {})
        .boxed_unsync();
    http::Response::builder()
        .status(http::StatusCode::ACCEPTED)
        .header("herald-dry-run", "not-sent")
        .body(body)
        .map_err(|e| Error::InternalError(Some(format!("dry-run response: {e}"))))
}

/// A request's URL as audit lines show it: without its query, which often
/// carries credentials (a query is shown as `?…`).
fn audit_url(uri: &http::Uri) -> String {
    let mut url = String::new();
    if let Some(scheme) = uri.scheme_str() {
        url.push_str(scheme);
        url.push_str("://");
    }
    if let Some(authority) = uri.authority() {
        let host_and_port = authority.as_str().rsplit('@').next().unwrap_or_default();
        url.push_str(host_and_port);
    }
    url.push_str(uri.path());
    if uri.query().is_some() {
        url.push_str("?…");
    }
    url
}

/// The `http` capability, as the list in `capability/mod.rs` names it.
#[derive(Debug)]
pub struct Http;

impl super::factor::Capability for Http {
    const ABOUT: super::factor::About = super::factor::About {
        name: "http",
        wit: "`wasi:http` (0.3.0)",
        acts: super::factor::Acts::OnNetwork,
    };
    type Stats = std::sync::Arc<EgressStats>;
    type Plugin = Arc<Egress>;
    type Instance = HttpInstance;

    fn prepare(setup: &super::Setup<'_>) -> Self::Plugin {
        Arc::new(Egress::for_plugin(setup.authorized))
    }

    fn instantiate(egress: &Self::Plugin) -> HttpInstance {
        HttpInstance::new(egress)
    }

    /// `wasi:http` reaches the store through `WasiHttpView`, which the
    /// runtime implements ([`HttpInstance::view`]): its resources live in
    /// the table WASI shares, which the runtime owns and counts.
    fn host<'a>(_: &'a Self::Plugin, _: &'a mut HttpInstance, _: super::CallScope<'a>) {}

    fn add_to_linker<T: super::View + 'static>(
        linker: &mut wasmtime::component::Linker<T>,
        _: fn(&mut T),
    ) -> wasmtime::Result<()> {
        host::add_to_linker(linker)
    }
}

impl wasmtime::component::HasData for Http {
    type Data<'a> = ();
}

impl super::factor::Granted for Http {
    type Grant = Option<HttpGrant>;
    const POWER: &'static str = "outbound HTTP";
    const DECLARED_AS: Option<&'static str> = Some(CAPABILITY);

    fn by_name() -> Result<Self::Grant, &'static str> {
        Err(
            "the http capability is granted by grants.http, which lists the allowedOrigins \
             the plugin may reach",
        )
    }

    fn is_granted(grant: &Self::Grant) -> bool {
        grant.is_some()
    }

    fn validate(grant: &Self::Grant) -> Result<(), crate::yaml::Invalid> {
        grant.as_ref().map_or(Ok(()), HttpGrant::validate)
    }

    fn covers(grant: &Self::Grant, declared: &super::Declared<'_>) -> Result<(), String> {
        if declared.declares(CAPABILITY) && grant.is_none() {
            return Err(format!(
                "requests capability {CAPABILITY:?}, which the operator has not granted"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
