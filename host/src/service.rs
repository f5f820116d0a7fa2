//! The daemon as a whole: engine, shared informers, running plugins, the
//! followed plugin directory and the operations endpoints, started from a
//! configuration and a cluster client, and shut down gracefully. Both
//! `herald run` and `herald demo` are this plus a source and a signal.

use crate::config::Config;
use crate::daemon::Daemon;
use crate::informer::{Informers, ReflectorConfig};
use crate::metrics::LoaderStats;
use crate::ops::{self, OpsState};
use crate::plugin::{ArtifactCache, EngineError, EngineSettings, LogSink, PluginEngine};
use crate::reload::{
    DEFAULT_RESCAN_INTERVAL, FileStatuses, PluginDirectory, ReloadError, ReloadSetup, SettleTiming,
};
use crate::store::Transform;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;

/// The daemon could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// The WebAssembly engine could not be created.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The plugin directory cannot be followed.
    #[error(transparent)]
    Reload(#[from] ReloadError),
    /// The endpoints' listener has no address.
    #[error("listen: {0}")]
    Listen(std::io::Error),
}

/// A running daemon.
pub struct Service {
    daemon: Arc<Daemon>,
    ops: Arc<OpsState>,
    directory: PluginDirectory,
    address: SocketAddr,
    endpoints: JoinHandle<()>,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service")
            .field("address", &self.address)
            .field("plugins", &self.daemon.names())
            .finish()
    }
}

impl Service {
    /// Starts everything: the endpoints on `listener`, then the plugins of
    /// the plugin directory (returning once they are loaded), which the
    /// service then keeps following. Plugins log into `sink`.
    pub async fn start(
        config: Arc<Config>,
        client: kube::Client,
        sink: Arc<dyn LogSink>,
        listener: tokio::net::TcpListener,
    ) -> Result<Self, ServiceError> {
        let engine = PluginEngine::new(EngineSettings {
            max_file_bytes: config.plugin_files.max_size,
            ..EngineSettings::default()
        })?;
        let reflector = ReflectorConfig {
            transform: Transform {
                strip_managed_fields: config.cache.strip_managed_fields,
            },
            ..ReflectorConfig::default()
        };
        let informers = Arc::new(Informers::new(client, reflector));
        let daemon = Arc::new(Daemon::new(informers, config.retry_policy()));
        let stats = Arc::new(LoaderStats::default());
        let files = Arc::new(FileStatuses::default());
        let ops = Arc::new(OpsState {
            daemon: daemon.clone(),
            registry: crate::metrics::registry(daemon.clone(), stats.clone()),
            files: files.clone(),
            loaded: AtomicBool::new(false),
            shutting_down: AtomicBool::new(false),
        });
        let address = listener.local_addr().map_err(ServiceError::Listen)?;
        let endpoints = tokio::spawn(ops::serve(listener, ops.clone()));
        tracing::info!("endpoints: http://{address}/metrics /healthz /readyz /plugins");
        let directory = PluginDirectory::start(ReloadSetup {
            dir: config.plugin_dir.clone(),
            cache: open_artifact_cache(&config, &engine),
            config,
            engine,
            sink,
            daemon: daemon.clone(),
            files,
            stats,
            timing: SettleTiming::default(),
            rescan_interval: DEFAULT_RESCAN_INTERVAL,
        })
        .await?;
        ops.loaded.store(true, Ordering::Release);
        Ok(Service {
            daemon,
            ops,
            directory,
            address,
            endpoints,
        })
    }

    /// The running plugins.
    pub fn daemon(&self) -> &Arc<Daemon> {
        &self.daemon
    }

    /// The endpoints' state.
    pub fn ops(&self) -> &Arc<OpsState> {
        &self.ops
    }

    /// The followed plugin directory.
    pub fn directory(&self) -> &PluginDirectory {
        &self.directory
    }

    /// Where the endpoints listen.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Graceful shutdown: readiness drops first, the plugin directory is no
    /// longer followed, the watches stop and the plugins' queues drain until
    /// `grace` has passed; what is left then is dropped.
    pub async fn shutdown(self, grace: Duration) {
        let deadline = Instant::now() + grace;
        self.ops.shutting_down.store(true, Ordering::Release);
        tracing::info!(
            ?grace,
            "shutting down: readiness dropped, stopping watches and draining queues"
        );
        self.directory.stop().await;
        let daemon = self.daemon.clone();
        let _ = tokio::task::spawn_blocking(move || daemon.shutdown(deadline)).await;
        self.endpoints.abort();
        tracing::info!("shutdown complete");
    }
}

/// The compiled-artifact cache the configuration asks for, if it can be
/// opened; without it every load compiles (said in the log).
fn open_artifact_cache(config: &Config, engine: &PluginEngine) -> Option<ArtifactCache> {
    let Some(dir) = config.plugin_files.artifact_cache.directory() else {
        tracing::info!(
            "compiled-artifact cache off (pluginFiles.artifactCache): every load compiles"
        );
        return None;
    };
    match ArtifactCache::open(&dir, engine) {
        Ok(cache) => {
            tracing::info!(dir = %dir.display(), "compiled-artifact cache");
            Some(cache)
        }
        Err(err) => {
            tracing::warn!(
                "{err}: continuing without it, every load compiles (pluginFiles.artifactCache.dir)"
            );
            None
        }
    }
}
