//! The operations endpoints on one listen address: `/metrics` (OpenMetrics
//! when the scraper asks for it, else the Prometheus text format 0.0.4; see
//! [`Format::negotiate`](crate::telemetry::Format::negotiate)), `/healthz` (the process serves), `/readyz` (informers synced and
//! every plugin through its initial list; false while shutting down),
//! `/plugins` (status JSON), and the live [dashboard] at `/` with its
//! snapshot (`/api/dashboard`) and event stream (`/events/stream`). Every
//! endpoint is read-only: methods other than GET and HEAD are refused.

pub mod dashboard;
pub mod metrics;

use crate::capability::log::RecentLogs;
use crate::daemon::{AbandonedWorker, Daemon, PluginStatus};
use crate::readiness::{Hold, HoldKind, Readiness};
use crate::reload::{FileStatus, FileStatuses};
use bytes::Bytes;
use dashboard::Replica;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use hyper::{Method, Request, Response, StatusCode};
use prometheus_client::registry::Registry;
use serde::Serialize;
use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Shared state of the endpoints.
pub struct OpsState {
    /// The running plugins.
    pub daemon: Arc<Daemon>,
    /// Metrics.
    pub registry: Registry,
    /// Plugin files.
    pub files: Arc<FileStatuses>,
    /// Set once the plugin directory's initial load is done: until then
    /// the daemon is not ready, whatever its (few) plugins say.
    pub loaded: AtomicBool,
    /// Set first on shutdown, so readiness drops before anything stops.
    pub shutting_down: AtomicBool,
    /// Plugins' recent log lines, for the dashboard.
    pub logs: Option<Arc<RecentLogs>>,
    /// Who this replica is, for the dashboard.
    pub replica: Replica,
    /// Who owns which plugin, under sharding.
    pub sharding: Option<Arc<crate::shard::ShardView>>,
}

/// A response body: whole, or streamed.
pub type Body = BoxBody<Bytes, Infallible>;

impl std::fmt::Debug for OpsState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpsState")
            .field("daemon", &self.daemon)
            .finish()
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PluginsReport {
    ready: bool,
    plugins: Vec<PluginStatus>,
    files: BTreeMap<String, FileStatus>,
    /// Workers that did not stop in time, most recent last.
    abandoned_workers: Vec<AbandonedWorker>,
}

impl OpsState {
    /// True when the daemon is ready: the plugin directory loaded, every
    /// informer synced, every plugin through its initial list, and not
    /// shutting down.
    pub fn ready(&self) -> bool {
        self.readiness().ready
    }

    /// What holds readiness, named (see [`Daemon::readiness`]): shutting
    /// down, or the plugin directory still loading, come first.
    pub fn readiness(&self) -> Readiness {
        let replica = |why: &str| Hold {
            kind: HoldKind::Replica,
            name: String::new(),
            why: why.to_owned(),
            failure: None,
        };
        if self.shutting_down.load(Ordering::Acquire) {
            return Readiness::new(vec![replica("shutting down")], Vec::new());
        }
        let mut readiness = self.daemon.readiness();
        if !self.loaded.load(Ordering::Acquire) {
            readiness
                .holding
                .insert(0, replica("loading the plugin directory"));
            readiness.ready = false;
        }
        readiness
    }

    /// Every running plugin's status, with its owner under sharding.
    pub fn plugin_status(&self) -> Vec<PluginStatus> {
        let mut plugins = self.daemon.status();
        if let Some(view) = &self.sharding {
            for plugin in &mut plugins {
                plugin.owner = view.owner(&plugin.name);
            }
        }
        plugins
    }

    fn respond(&self, method: &Method, path: &str, accept: Option<&str>) -> Response<Body> {
        let text = |status: StatusCode, body: String, content_type: &'static str| {
            Response::builder()
                .status(status)
                .header("content-type", content_type)
                .body(Full::new(Bytes::from(body)).boxed())
                .expect("valid response")
        };
        let asset = |body: &'static str, content_type: &'static str| {
            Response::builder()
                .header("content-type", content_type)
                .header("cache-control", "no-cache")
                .header("x-content-type-options", "nosniff")
                .header(
                    "content-security-policy",
                    dashboard::CONTENT_SECURITY_POLICY,
                )
                .body(Full::new(Bytes::from_static(body.as_bytes())).boxed())
                .expect("valid response")
        };
        if method != Method::GET && method != Method::HEAD {
            let mut response = text(
                StatusCode::METHOD_NOT_ALLOWED,
                "read-only: only GET and HEAD\n".into(),
                "text/plain",
            );
            response.headers_mut().insert(
                "allow",
                hyper::header::HeaderValue::from_static("GET, HEAD"),
            );
            return response;
        }
        match path {
            "/" | "/index.html" => asset(dashboard::INDEX_HTML, "text/html; charset=utf-8"),
            "/dashboard.js" => asset(dashboard::DASHBOARD_JS, "text/javascript; charset=utf-8"),
            "/dashboard.css" => asset(dashboard::DASHBOARD_CSS, "text/css; charset=utf-8"),
            "/api/dashboard" => text(
                StatusCode::OK,
                serde_json::to_string(&self.snapshot()).expect("the snapshot serializes"),
                "application/json",
            ),
            "/events/stream" => self.event_stream(),
            "/metrics" => {
                let format = crate::telemetry::Format::negotiate(accept);
                let mut response = text(
                    StatusCode::OK,
                    crate::telemetry::encode_as(&self.registry, format),
                    format.content_type(),
                );
                response
                    .headers_mut()
                    .insert("vary", hyper::header::HeaderValue::from_static("Accept"));
                response
            }
            "/healthz" | "/livez" => text(StatusCode::OK, "ok\n".into(), "text/plain"),
            "/readyz" => {
                let readiness = self.readiness();
                let status = if readiness.ready {
                    StatusCode::OK
                } else {
                    StatusCode::SERVICE_UNAVAILABLE
                };
                text(
                    status,
                    readiness.text(self.daemon.forbidden_informers()),
                    "text/plain; charset=utf-8",
                )
            }
            "/plugins" => {
                let report = PluginsReport {
                    ready: self.ready(),
                    plugins: self.plugin_status(),
                    files: self
                        .files
                        .snapshot()
                        .into_iter()
                        .map(|(path, status)| (path.display().to_string(), status))
                        .collect(),
                    abandoned_workers: self.daemon.abandoned_workers().0,
                };
                text(
                    StatusCode::OK,
                    serde_json::to_string_pretty(&report).expect("status serializes"),
                    "application/json",
                )
            }
            _ => text(
                StatusCode::NOT_FOUND,
                "not found: try / (the dashboard), /metrics, /healthz, /readyz or /plugins\n"
                    .into(),
                "text/plain",
            ),
        }
    }
}

impl OpsState {
    /// `/events/stream`: the delivery feed as server-sent events, or 503
    /// when the feed has all the watchers it takes.
    fn event_stream(&self) -> Response<Body> {
        let refuse = |why: String| {
            Response::builder()
                .status(StatusCode::SERVICE_UNAVAILABLE)
                .header("content-type", "text/plain")
                .header("retry-after", "10")
                .body(Full::new(Bytes::from(why + "\n")).boxed())
                .expect("valid response")
        };
        let Some(feed) = self.daemon.feed() else {
            return refuse("this daemon has no delivery feed".into());
        };
        let watcher = match feed.watch() {
            Ok(watcher) => watcher,
            Err(err) => return refuse(err.to_string()),
        };
        let frames = futures::StreamExt::map(dashboard::event_stream(watcher), |bytes| {
            Ok::<_, Infallible>(Frame::data(bytes))
        });
        Response::builder()
            .header("content-type", "text/event-stream")
            .header("cache-control", "no-cache")
            .header("x-content-type-options", "nosniff")
            .body(BodyExt::boxed(StreamBody::new(frames)))
            .expect("valid response")
    }
}

/// Serves the endpoints on `listener` until the task is dropped.
pub async fn serve(listener: tokio::net::TcpListener, state: Arc<OpsState>) {
    loop {
        let stream = crate::accept::next(&listener, "ops").await;
        let state = state.clone();
        tokio::spawn(async move {
            let service =
                hyper::service::service_fn(move |request: Request<hyper::body::Incoming>| {
                    let state = state.clone();
                    async move {
                        let accept = request
                            .headers()
                            .get(hyper::header::ACCEPT)
                            .and_then(|value| value.to_str().ok());
                        Ok::<_, Infallible>(state.respond(
                            request.method(),
                            request.uri().path(),
                            accept,
                        ))
                    }
                });
            let io = hyper_util::rt::TokioIo::new(stream);
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, service)
                .await;
        });
    }
}

/// How often [`log_readiness`] looks.
const READINESS_CHECK: std::time::Duration = std::time::Duration::from_secs(1);

/// Logs readiness whenever what holds it changes (which informers and
/// plugins, and why, counts aside): `not ready` with every cause, as a
/// warning while the API server refuses a request; `ready` once nothing
/// holds it. Runs until the task is dropped.
pub async fn log_readiness(state: Arc<OpsState>) {
    let mut last: Option<(bool, Vec<String>)> = None;
    let mut ticks = tokio::time::interval(READINESS_CHECK);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let readiness = state.readiness();
        // Counts (queued notifications, waits) change every second; what
        // holds readiness, and why, is what the log follows.
        let shape: Vec<String> = readiness
            .holding
            .iter()
            .chain(&readiness.not_holding)
            .map(|hold| hold.line().replace(|c: char| c.is_ascii_digit(), ""))
            .collect();
        let now = (readiness.ready, shape);
        if last.as_ref() == Some(&now) {
            continue;
        }
        let refused = readiness.holding.iter().any(|hold| hold.failure.is_some());
        if readiness.ready && readiness.not_holding.is_empty() {
            tracing::info!("ready");
        } else if readiness.ready {
            let waiting: Vec<String> = readiness.not_holding.iter().map(Hold::line).collect();
            tracing::warn!(
                "ready, while these wait without holding readiness (readiness.forbiddenInformers: {}): {}",
                state.daemon.forbidden_informers().as_str(),
                waiting.join("; ")
            );
        } else if refused {
            tracing::warn!("not ready: {}", readiness.summary());
        } else {
            tracing::info!("not ready: {}", readiness.summary());
        }
        last = Some(now);
    }
}

/// The listen address could not be bound.
#[derive(Debug, thiserror::Error)]
#[error("cannot listen on {address} (listen): {reason}")]
pub struct BindError {
    /// The address at fault.
    pub address: SocketAddr,
    /// What the system said.
    #[source]
    pub reason: std::io::Error,
}

/// Binds the listen address, naming it in the error.
pub async fn bind(address: SocketAddr) -> Result<tokio::net::TcpListener, BindError> {
    tokio::net::TcpListener::bind(address)
        .await
        .map_err(|reason| BindError { address, reason })
}
