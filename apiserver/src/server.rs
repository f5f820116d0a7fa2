//! Binding, serving, restarting and shutting down the HTTP server.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

use crate::admission::{Admission, WebhookServices};
use crate::api::{self, Shared};
use crate::error::Error;
use crate::faults::{FaultState, Faults};
use crate::kubeconfig;
use crate::persist;
use crate::seed;
use crate::storage::Store;

/// How to run the server.
#[derive(Debug, Clone)]
pub struct ApiServerConfig {
    /// Address to listen on; port 0 lets the OS choose. Default `127.0.0.1:0`.
    pub listen: SocketAddr,
    /// Directories (or single files) of YAML/JSON manifests to load at start. Ignored when
    /// `persist_dir` already holds a snapshot.
    pub seed_dirs: Vec<PathBuf>,
    /// Directory to keep a snapshot of all objects and the resource version counter in,
    /// written shortly after every change and at shutdown, loaded at start.
    pub persist_dir: Option<PathBuf>,
    /// How many change events are retained for watches resuming from an older resource
    /// version; older resumes get 410 Gone. Default 10 000.
    pub history_window: usize,
    /// Interval between BOOKMARK events on watches that allow them. Default 1 s.
    pub bookmark_interval: Duration,
    /// Serve streaming lists (`sendInitialEvents=true`), as Kubernetes does
    /// with its `WatchList` feature on (the default since 1.34). Off, such a
    /// watch is refused with 422, as a server with the feature off refuses
    /// it. Default on.
    pub watch_list: bool,
    /// Answer get, list and watch (and writes and errors) of built-in kinds in Kubernetes
    /// protobuf when the request's `Accept` prefers it, as kube-apiserver does (custom
    /// resources stay JSON). Off, every answer is JSON and an `Accept` naming only protobuf
    /// is `406`, as from a server without protobuf. Default on, unless the environment
    /// variable [`ENCODING_VARIABLE`] says `json`.
    pub protobuf: bool,
    /// Where admission webhooks' `clientConfig.service` references lead (the server has no
    /// cluster network). Webhooks given by URL need nothing here. Default: no service.
    pub webhook_services: WebhookServices,
}

/// The environment variable that sets [`ApiServerConfig::protobuf`]'s default: `json` turns
/// protobuf answers off for every server started with the default configuration (the test
/// suite's, and the embedded server of a `herald` the suite runs, which inherits it);
/// `protobuf` or unset leaves them on. Any other value is refused, naming it.
pub const ENCODING_VARIABLE: &str = "HERALD_TEST_API_ENCODING";

/// Whether protobuf answers are on by default, from [`ENCODING_VARIABLE`].
///
/// # Panics
///
/// When the variable holds anything but `protobuf`, `json` or nothing: a run meant to be
/// JSON-only must not go on over protobuf because of a typo.
fn protobuf_by_default() -> bool {
    protobuf_unless_json(std::env::var(ENCODING_VARIABLE))
}

/// [`protobuf_by_default`] for the variable's `value`.
fn protobuf_unless_json(value: Result<String, std::env::VarError>) -> bool {
    match value {
        Err(std::env::VarError::NotPresent) => true,
        Ok(value) if value.is_empty() || value == "protobuf" => true,
        Ok(value) if value == "json" => false,
        Ok(other) => {
            panic!("{ENCODING_VARIABLE} is {other:?}; it takes `protobuf` (the default) or `json`")
        }
        Err(std::env::VarError::NotUnicode(other)) => panic!(
            "{ENCODING_VARIABLE} is {other:?}, not Unicode; it takes `protobuf` (the default) or \
             `json`"
        ),
    }
}

impl Default for ApiServerConfig {
    fn default() -> Self {
        ApiServerConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            seed_dirs: Vec::new(),
            persist_dir: None,
            history_window: 10_000,
            bookmark_interval: Duration::from_secs(1),
            watch_list: true,
            protobuf: protobuf_by_default(),
            webhook_services: WebhookServices::new(),
        }
    }
}

/// A running server. Dropping it stops serving (without waiting); prefer
/// [`shutdown`](ApiServer::shutdown), which also writes the final snapshot.
#[derive(Debug)]
pub struct ApiServer {
    addr: SocketAddr,
    config: ApiServerConfig,
    store: Arc<Store>,
    faults: Arc<FaultState>,
    stop_serving: watch::Sender<bool>,
    serving: Option<JoinHandle<()>>,
    stop_persisting: watch::Sender<bool>,
    persisting: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("resource_version", &self.current_rv())
            .finish()
    }
}

/// Build the store (from a snapshot or seeds), bind and start serving in a background task.
pub async fn start(config: ApiServerConfig) -> Result<ApiServer, Error> {
    let store = Arc::new(Store::new(config.history_window));
    let restored = match &config.persist_dir {
        Some(dir) => persist::load(dir, &store)?,
        None => false,
    };
    store.ensure_default_namespaces();
    if !restored {
        seed::seed(&store, &config.seed_dirs)?;
    }
    let (stop_persisting, stop_rx) = watch::channel(false);
    let persisting = config
        .persist_dir
        .clone()
        .map(|dir| persist::spawn(dir, store.clone(), stop_rx));
    if let Some(dir) = &config.persist_dir {
        persist::write(dir, &store)?;
    }
    let listen = config.listen;
    serve(
        config,
        listen,
        store,
        Arc::new(FaultState::new()),
        stop_persisting,
        persisting,
    )
    .await
}

async fn serve(
    config: ApiServerConfig,
    listen: SocketAddr,
    store: Arc<Store>,
    faults: Arc<FaultState>,
    stop_persisting: watch::Sender<bool>,
    persisting: Option<JoinHandle<()>>,
) -> Result<ApiServer, Error> {
    let listener = TcpListener::bind(listen)
        .await
        .map_err(|source| Error::Bind {
            addr: listen,
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| Error::Bind {
        addr: listen,
        source,
    })?;
    let shared = Arc::new(Shared {
        store: store.clone(),
        faults: faults.clone(),
        bookmark_interval: config.bookmark_interval,
        watch_list: config.watch_list,
        protobuf: config.protobuf,
        addr,
        admission: Admission::new(config.webhook_services.clone()),
    });
    let (stop_serving, stop_rx) = watch::channel(false);
    let serving = tokio::spawn(accept_loop(listener, shared, stop_rx));
    tracing::info!(%addr, "embedded Kubernetes API server listening");
    Ok(ApiServer {
        addr,
        config,
        store,
        faults,
        stop_serving,
        serving: Some(serving),
        stop_persisting,
        persisting,
    })
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            _ = crate::server::stopped(&mut stop) => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    let shared = shared.clone();
                    connections.spawn(async move {
                        let service = service_fn(move |req| {
                            let shared = shared.clone();
                            async move { Ok::<_, Infallible>(api::handle(shared, req).await) }
                        });
                        let _ = http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    });
                }
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    drop(listener);
    connections.shutdown().await;
}

/// Resolves once `stop` turns true (or its sender is gone).
pub(crate) async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

impl ApiServer {
    /// The base URL, `http://ADDR`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The address the server listens on (with the port the OS chose).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// A kubeconfig (YAML) for this server: cluster, credential-less user and current context
    /// all named `herald`.
    pub fn kubeconfig_yaml(&self) -> String {
        kubeconfig::kubeconfig_yaml(&self.url())
    }

    /// Write [`kubeconfig_yaml`](ApiServer::kubeconfig_yaml) to `path`.
    pub fn write_kubeconfig(&self, path: &Path) -> Result<(), Error> {
        std::fs::write(path, self.kubeconfig_yaml()).map_err(|e| Error::io(path, e))
    }

    /// A handle for injecting faults.
    pub fn faults(&self) -> Faults {
        Faults {
            state: self.faults.clone(),
            store: self.store.clone(),
        }
    }

    /// The current global resource version (the one the next list would report).
    pub fn current_resource_version(&self) -> u64 {
        self.store.current_rv()
    }

    async fn stop_serving(&mut self) {
        self.stop_serving.send_replace(true);
        if let Some(task) = self.serving.take() {
            let _ = task.await;
        }
        self.faults.kill_watches();
    }

    /// Stop serving (closing every connection and watch) and serve the same objects again on
    /// `listen` (`None`: the same address). Resource versions, history and faults carry over.
    pub async fn restart(mut self, listen: Option<SocketAddr>) -> Result<ApiServer, Error> {
        self.stop_serving().await;
        let listen = listen.unwrap_or(self.addr);
        let (unused_tx, _) = watch::channel(false);
        let stop_persisting = std::mem::replace(&mut self.stop_persisting, unused_tx);
        let persisting = self.persisting.take();
        serve(
            self.config.clone(),
            listen,
            self.store.clone(),
            self.faults.clone(),
            stop_persisting,
            persisting,
        )
        .await
    }

    /// Stop serving, close every connection and watch, and write the final snapshot if
    /// persisting.
    pub async fn shutdown(mut self) {
        self.stop_serving().await;
        self.stop_persisting.send_replace(true);
        if let Some(task) = self.persisting.take() {
            let _ = task.await;
        }
    }
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        self.stop_serving.send_replace(true);
        self.stop_persisting.send_replace(true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::env::VarError;

    #[test]
    fn the_encoding_variable_turns_protobuf_off_only_when_it_says_json() {
        assert!(protobuf_unless_json(Err(VarError::NotPresent)));
        assert!(protobuf_unless_json(Ok(String::new())));
        assert!(protobuf_unless_json(Ok("protobuf".into())));
        assert!(!protobuf_unless_json(Ok("json".into())));
    }

    #[test]
    #[should_panic(expected = "HERALD_TEST_API_ENCODING is \"JSON\"; it takes `protobuf`")]
    fn any_other_value_is_refused_naming_it() {
        protobuf_unless_json(Ok("JSON".into()));
    }
}
