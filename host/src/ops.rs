//! The operations endpoints on one listen address: `/metrics` (Prometheus
//! text), `/healthz` (the process serves), `/readyz` (informers synced and
//! every plugin through its initial list; false while shutting down) and
//! `/plugins` (status JSON).

use crate::daemon::{Daemon, PluginStatus};
use bytes::Bytes;
use http_body_util::Full;
use hyper::{Request, Response, StatusCode};
use prometheus_client::registry::Registry;
use serde::Serialize;
use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// What the loader knows about one plugin file.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileStatus {
    /// The plugin it provides, once loaded.
    pub plugin: Option<String>,
    /// sha256 of the version running (if any).
    pub sha256: Option<String>,
    /// When that version was loaded.
    #[serde(with = "opt_time")]
    pub loaded_at: Option<SystemTime>,
    /// The last load error (the running version, if any, was kept).
    pub last_error: Option<String>,
    /// When that error happened.
    #[serde(with = "opt_time")]
    pub error_at: Option<SystemTime>,
}

/// Status of every plugin file, kept by the loader.
#[derive(Debug, Default)]
pub struct FileStatuses {
    files: Mutex<BTreeMap<PathBuf, FileStatus>>,
}

impl FileStatuses {
    /// Records a successful load of `file` as `plugin` with `sha256`.
    pub fn loaded(&self, file: PathBuf, plugin: &str, sha256: &str) {
        let mut files = self.files.lock().unwrap_or_else(|e| e.into_inner());
        files.insert(
            file,
            FileStatus {
                plugin: Some(plugin.into()),
                sha256: Some(sha256.into()),
                loaded_at: Some(SystemTime::now()),
                last_error: None,
                error_at: None,
            },
        );
    }

    /// Records a failed load of `file`; what was running keeps running.
    pub fn failed(&self, file: PathBuf, error: String) {
        let mut files = self.files.lock().unwrap_or_else(|e| e.into_inner());
        let entry = files.entry(file).or_insert(FileStatus {
            plugin: None,
            sha256: None,
            loaded_at: None,
            last_error: None,
            error_at: None,
        });
        entry.last_error = Some(error);
        entry.error_at = Some(SystemTime::now());
    }

    /// Forgets a removed file.
    pub fn removed(&self, file: &std::path::Path) {
        self.files
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(file);
    }

    /// Every file's status.
    pub fn snapshot(&self) -> BTreeMap<String, FileStatus> {
        self.files
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(k, v)| (k.display().to_string(), v.clone()))
            .collect()
    }
}

/// Shared state of the endpoints.
pub struct OpsState {
    /// The running plugins.
    pub daemon: Arc<Daemon>,
    /// Metrics.
    pub registry: Registry,
    /// Plugin files.
    pub files: Arc<FileStatuses>,
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
struct PluginsReport {
    ready: bool,
    plugins: Vec<PluginStatus>,
    files: BTreeMap<String, FileStatus>,
}

impl OpsState {
    /// True when the daemon should receive traffic: synced and not stopping.
    pub fn ready(&self) -> bool {
        !self.shutting_down.load(Ordering::Acquire) && self.daemon.ready()
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
                        "not ready: informers syncing or plugins handling their initial lists\n"
                            .into(),
                        "text/plain",
                    )
                }
            }
            "/plugins" => {
                let report = PluginsReport {
                    ready: self.ready(),
                    plugins: self.daemon.status(),
                    files: self.files.snapshot(),
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

mod opt_time {
    use serde::Serializer;
    use std::time::SystemTime;

    pub fn serialize<S: Serializer>(
        time: &Option<SystemTime>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match time {
            Some(time) => serializer.serialize_str(&crate::time_serde::format(*time)),
            None => serializer.serialize_none(),
        }
    }
}
