//! The operations endpoints on one listen address: `/metrics` (Prometheus
//! text), `/healthz` (the process serves), `/readyz` (informers synced and
//! every plugin through its initial list; false while shutting down) and
//! `/plugins` (status JSON).

use crate::daemon::{AbandonedWorker, Daemon, PluginStatus};
use crate::reload::{FileStatus, FileStatuses};
use bytes::Bytes;
use http_body_util::Full;
use hyper::{Request, Response, StatusCode};
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
}

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
        !self.shutting_down.load(Ordering::Acquire)
            && self.loaded.load(Ordering::Acquire)
            && self.daemon.ready()
    }

    fn respond(&self, path: &str) -> Response<Full<Bytes>> {
        let text = |status: StatusCode, body: String, content_type: &'static str| {
            Response::builder()
                .status(status)
                .header("content-type", content_type)
                .body(Full::new(Bytes::from(body)))
                .expect("valid response")
        };
        match path {
            "/metrics" => text(
                StatusCode::OK,
                crate::metrics::encode(&self.registry),
                "text/plain; version=0.0.4; charset=utf-8",
            ),
            "/healthz" | "/livez" => text(StatusCode::OK, "ok\n".into(), "text/plain"),
            "/readyz" => {
                if self.ready() {
                    text(StatusCode::OK, "ready\n".into(), "text/plain")
                } else if self.shutting_down.load(Ordering::Acquire) {
                    text(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "shutting down\n".into(),
                        "text/plain",
                    )
                } else {
                    text(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "not ready: loading plugins, informers syncing or plugins handling their initial lists\n"
                            .into(),
                        "text/plain",
                    )
                }
            }
            "/plugins" => {
                let report = PluginsReport {
                    ready: self.ready(),
                    plugins: self.daemon.status(),
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
                "not found: try /metrics, /healthz, /readyz or /plugins\n".into(),
                "text/plain",
            ),
        }
    }
}

/// Serves the endpoints on `listener` until the task is dropped.
pub async fn serve(listener: tokio::net::TcpListener, state: Arc<OpsState>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let state = state.clone();
        tokio::spawn(async move {
            let service =
                hyper::service::service_fn(move |request: Request<hyper::body::Incoming>| {
                    let state = state.clone();
                    async move { Ok::<_, Infallible>(state.respond(request.uri().path())) }
                });
            let io = hyper_util::rt::TokioIo::new(stream);
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, service)
                .await;
        });
    }
}

/// Binds the listen address, naming it in the error.
pub async fn bind(address: SocketAddr) -> Result<tokio::net::TcpListener, String> {
    tokio::net::TcpListener::bind(address)
        .await
        .map_err(|e| format!("cannot listen on {address} (listen): {e}"))
}
