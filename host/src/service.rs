//! The daemon as a whole: engine, shared informers, running plugins, the
//! followed plugin directory and the operations endpoints, started from a
//! configuration and a cluster client, and shut down gracefully. Both
//! `herald run` and `herald demo` are this plus a source and a signal.

use crate::admission::AdmissionConfig;
use crate::admission::tls::ServingCert;
use crate::capability::ClusterAccess;
use crate::capability::kube::ClusterApi;
use crate::capability::log::{LogSink, RecentLogs};
use crate::config::Config;
use crate::daemon::Daemon;
use crate::dispatch::Feed;
use crate::fleet::{ClusterDirectory, ClusterSecrets, ConfiguredClusters, Fleet};
use crate::informer::{Informers, ReflectorConfig};
use crate::leader::{Election, LeaderElector, LeaderError};
use crate::ops::dashboard::Replica;
use crate::ops::{self, OpsState};
use crate::plugin::{ArtifactCache, Compiler, EngineError, EngineSettings, PluginEngine};
use crate::reload::LoaderStats;
use crate::reload::{
    DEFAULT_RESCAN_INTERVAL, FileStatuses, PluginDirectory, PluginSources, ReloadError,
    ReloadSetup, SettleTiming, SourcesError, SourcesSetup,
};
use crate::shard::{KnownPlugins, Sharding};
use crate::source::{Clients, FleetClients};

/// How often the cluster directory is read again when nothing says it
/// changed (a change is seen at once).
const CLUSTER_RESCAN_INTERVAL: Duration = Duration::from_secs(5);
use crate::store::Transform;
use base64::Engine as _;
use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::watch;
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
    /// The directory of pulled plugins cannot be prepared.
    #[error(transparent)]
    Sources(#[from] SourcesError),
    /// The endpoints' listener has no address.
    #[error("listen: {0}")]
    Listen(std::io::Error),
    /// Leader election is misconfigured.
    #[error(transparent)]
    Leader(#[from] LeaderError),
    /// A setting cannot be used as it is.
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// Sharding is misconfigured.
    #[error(transparent)]
    Shard(#[from] crate::shard::ShardError),
    /// The admission server could not start.
    #[error("admission: {0}")]
    Admission(String),
    /// The cluster directory cannot be followed.
    #[error(transparent)]
    ClusterDirectory(#[from] crate::fleet::DirectoryError),
}

/// A running daemon.
pub struct Service {
    daemon: Arc<Daemon>,
    ops: Arc<OpsState>,
    directory: PluginDirectory,
    sources: Option<PluginSources>,
    address: SocketAddr,
    endpoints: JoinHandle<()>,
    /// Logs readiness when what holds it changes.
    readiness_log: JoinHandle<()>,
    leadership: Option<Leadership>,
    sharding: Option<Ownership>,
    admission: Option<AdmissionServer>,
    fleet: Arc<Fleet>,
    cluster_directory: Option<ClusterDirectory>,
    cluster_secrets: Option<ClusterSecrets>,
    /// The configuration's clusters' kubeconfig files, followed.
    configured_clusters: Option<ConfiguredClusters>,
}

/// The admission server, when `admission.enabled`.
struct AdmissionServer {
    address: SocketAddr,
    cert: Arc<ServingCert>,
    task: JoinHandle<()>,
}

/// Starts the admission server: its certificate (an error names the file
/// at fault), its port, its task. A development certificate's CA is
/// logged, base64-encoded as a webhook configuration's `caBundle` takes it.
async fn serve_admission(
    config: &AdmissionConfig,
    daemon: &Arc<Daemon>,
) -> Result<AdmissionServer, ServiceError> {
    let cert = Arc::new(
        config
            .serving_cert()
            .map_err(|e| ServiceError::Admission(e.to_string()))?,
    );
    let listener = ops::bind(config.listen)
        .await
        .map_err(|e| ServiceError::Admission(format!("admission.listen: {e}")))?;
    let address = listener.local_addr().map_err(ServiceError::Listen)?;
    let task = tokio::spawn(crate::admission::server::serve(
        listener,
        cert.clone(),
        daemon.admission().clone(),
    ));
    match cert.ca_pem() {
        Some(ca) => tracing::info!(
            ca_bundle = %base64::engine::general_purpose::STANDARD.encode(ca),
            "admission: https://{address}/validate/<plugin> /mutate/<plugin>, with a development certificate for {:?}; its CA is this caBundle",
            config.development_names
        ),
        None => tracing::info!("admission: https://{address}/validate/<plugin> /mutate/<plugin>"),
    }
    Ok(AdmissionServer {
        address,
        cert,
        task,
    })
}

/// This replica's part in sharding: the coordinator and the task that
/// hands the plugins it owns to the daemon.
struct Ownership {
    sharding: Sharding,
    follower: JoinHandle<()>,
}

/// This replica's part in leader election: the election and the task that
/// turns dispatching on and off as leadership comes and goes.
struct Leadership {
    election: Election,
    follower: JoinHandle<()>,
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
    /// service then keeps following. Plugins log into `sink` and are
    /// compiled by `compiler` (the daemon uses a child process).
    pub async fn start(
        config: Arc<Config>,
        clients: impl Into<FleetClients>,
        sink: Arc<dyn LogSink>,
        listener: tokio::net::TcpListener,
        compiler: Compiler,
    ) -> Result<Self, ServiceError> {
        let FleetClients { home, others } = clients.into();
        let Clients { client, writer } = home;
        let api = ClusterApi::new(writer);
        for (name, clients) in &others {
            api.add_cluster(name.clone(), clients.writer.clone());
        }
        let access = ClusterAccess::new(Arc::new(api.clone()));
        let engine = PluginEngine::new(EngineSettings {
            max_file_bytes: config.plugin_files.max_size,
            compiler,
            workers: config.dispatch.workers(),
            ..EngineSettings::default()
        })?;
        let reflector = ReflectorConfig {
            transform: Transform {
                strip_managed_fields: config.cache.strip_managed_fields,
            },
            protobuf: config.cache.protobuf,
            ..ReflectorConfig::default()
        };
        let mut informers = Informers::new(client.clone(), reflector);
        if let Some(name) = &config.source.name {
            informers = informers.with_default_name(name.clone());
        }
        informers.set_labels(None, config.source.labels.clone());
        for (name, clients) in others {
            let labels = config
                .clusters
                .iter()
                .find(|cluster| cluster.name.as_ref() == Some(&name))
                .map(|cluster| cluster.labels.clone())
                .unwrap_or_default();
            informers.set_labels(Some(name.clone()), labels);
            informers.add_cluster(name, clients.client);
        }
        let informers = Arc::new(informers);
        let elected = config.leader_election.enabled;
        let sharded = config.sharding.enabled;
        let daemon = Arc::new(
            if elected {
                // Followers keep warm caches and dispatch nothing.
                Daemon::standby(informers, config.retry_policy())
            } else if sharded {
                // Only the plugins whose Lease this replica holds.
                Daemon::sharded(informers, config.retry_policy())
            } else {
                Daemon::new(informers, config.retry_policy())
            }
            .with_feed(Arc::new(Feed::default()))
            .with_forbidden_informers(config.readiness.forbidden_informers)
            .with_other_clusters(config.readiness.other_clusters),
        );
        let section = if sharded {
            (&config.sharding, "sharding")
        } else {
            (&config.leader_election, "leaderElection")
        };
        let mut replica = Replica {
            identity: section
                .0
                .lease_settings(section.1)
                .ok()
                .map(|settings| settings.identity),
            lease: None,
        };
        let leadership = if elected {
            let settings = config.leader_election.lease_settings("leaderElection")?;
            replica.lease = Some(settings.lease_key());
            tracing::info!(lease = %settings.lease_key(), identity = %settings.identity, "leader election on: dispatching only while holding the Lease");
            let election = LeaderElector::new(client.clone(), settings)?.spawn();
            let follower = tokio::spawn(follow_leadership(election.leadership(), daemon.clone()));
            Some(Leadership { election, follower })
        } else {
            None
        };
        let sharding = if sharded {
            let settings = config.sharding.lease_settings("sharding")?;
            replica.lease = Some(format!("{}/{}-*", settings.namespace, settings.name));
            let (applied, applied_rx) = watch::channel(BTreeSet::new());
            let names = daemon.clone();
            let known: KnownPlugins = Arc::new(move || names.names().into_iter().collect());
            let sharding = Sharding::spawn(client.clone(), settings, known, applied_rx)?;
            let follower =
                tokio::spawn(follow_ownership(sharding.owned(), daemon.clone(), applied));
            Some(Ownership { sharding, follower })
        } else {
            None
        };
        // Plugins' lines go where they went, and their last few are kept
        // for the dashboard.
        let logs = Arc::new(RecentLogs::new(sink));
        let stats = Arc::new(LoaderStats::default());
        let files = Arc::new(FileStatuses::default());
        let ops = Arc::new(OpsState {
            daemon: daemon.clone(),
            registry: crate::ops::metrics::registry(crate::ops::metrics::Sources {
                daemon: daemon.clone(),
                loader: stats.clone(),
                actions: access.stats.clone(),
                sharding: sharding.as_ref().map(|o| o.sharding.view().clone()),
            }),
            files: files.clone(),
            loaded: AtomicBool::new(false),
            shutting_down: AtomicBool::new(false),
            logs: Some(logs.clone()),
            replica,
            sharding: sharding.as_ref().map(|o| o.sharding.view().clone()),
        });
        let address = listener.local_addr().map_err(ServiceError::Listen)?;
        let admission = match config.admission.enabled {
            true => Some(serve_admission(&config.admission, &daemon).await?),
            false => None,
        };
        let endpoints = tokio::spawn(ops::serve(listener, ops.clone()));
        let readiness_log = tokio::spawn(ops::log_readiness(ops.clone()));
        tracing::info!(
            "endpoints: http://{address}/metrics /healthz /readyz /plugins; dashboard: http://{address}/"
        );
        // Plugin sources are pulled (or found in the cache) before the
        // initial load, which then starts them with the directory's files.
        let sources = match config.plugin_source_cache_dir() {
            Some(cache) if !config.plugin_sources.is_empty() => Some(
                PluginSources::start(SourcesSetup {
                    sources: config.plugin_sources.clone(),
                    dir: cache.join("plugins"),
                    max_size: config.plugin_files.max_size,
                    files: files.clone(),
                    stats: stats.clone(),
                })
                .await?,
            ),
            _ => None,
        };
        // The directory's clusters are there before the plugins load.
        let fleet = Arc::new(Fleet::new(daemon.informers().clone(), api, daemon.clone()));
        let reserved: BTreeSet<String> = config.configured_cluster_names().into_iter().collect();
        let configured_clusters =
            ConfiguredClusters::start(&config.clusters, fleet.clone(), CLUSTER_RESCAN_INTERVAL);
        let cluster_secrets = match &config.cluster_secrets {
            Some(secrets) => Some(
                ClusterSecrets::start(
                    client.clone(),
                    secrets.clone(),
                    fleet.clone(),
                    reserved.clone(),
                )
                .await,
            ),
            None => None,
        };
        let cluster_directory = match &config.cluster_directory {
            Some(dir) => Some(
                ClusterDirectory::start(
                    dir.clone(),
                    fleet.clone(),
                    reserved.clone(),
                    CLUSTER_RESCAN_INTERVAL,
                )
                .await?,
            ),
            None => None,
        };
        let directory = PluginDirectory::start(ReloadSetup {
            dir: config.plugin_dir.clone(),
            pulled_dir: sources.as_ref().map(|s| s.dir().to_owned()),
            cache: open_artifact_cache(&config, &engine),
            settings: Arc::new(config.plugin_settings()),
            engine,
            sink: logs,
            daemon: daemon.clone(),
            files,
            stats,
            timing: SettleTiming::default(),
            rescan_interval: DEFAULT_RESCAN_INTERVAL,
            access: Some(access),
        })
        .await?;
        ops.loaded.store(true, Ordering::Release);
        Ok(Service {
            daemon,
            ops,
            directory,
            sources,
            address,
            endpoints,
            readiness_log,
            leadership,
            sharding,
            admission,
            fleet,
            cluster_directory,
            cluster_secrets,
            configured_clusters,
        })
    }

    /// The clusters added and removed at run time.
    pub fn fleet(&self) -> &Arc<Fleet> {
        &self.fleet
    }

    /// Where the admission server listens, when it runs.
    pub fn admission_address(&self) -> Option<SocketAddr> {
        self.admission.as_ref().map(|a| a.address)
    }

    /// The PEM of the CA of the admission server's development certificate,
    /// when it runs with one.
    pub fn admission_ca(&self) -> Option<&str> {
        self.admission.as_ref().and_then(|a| a.cert.ca_pem())
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

    /// True while this replica dispatches to plugins (always, without
    /// leader election).
    pub fn is_leading(&self) -> bool {
        self.daemon.is_dispatching()
    }

    /// Graceful shutdown: readiness drops first, the plugin directory is no
    /// longer followed, the watches stop and the plugins' queues drain until
    /// `grace` has passed; what is left then is dropped. Under leader
    /// election the Lease is released last, once nothing dispatches any more,
    /// so a follower takes over without waiting for it to expire; under
    /// sharding every plugin's Lease and the member Lease likewise.
    pub async fn shutdown(self, grace: Duration) {
        let deadline = Instant::now() + grace;
        self.ops.shutting_down.store(true, Ordering::Release);
        tracing::info!(
            ?grace,
            "shutting down: readiness dropped, stopping watches and draining queues"
        );
        // Each follower ends after the step under way (a pull, a plugin
        // being compiled and started), but never later than the deadline:
        // past it the step is dropped, which aborts it.
        if let Some(sources) = self.sources {
            until_deadline(deadline, "pulling plugin sources", sources.stop()).await;
        }
        if let Some(clusters) = self.cluster_directory {
            until_deadline(deadline, "following the cluster directory", clusters.stop()).await;
        }
        if let Some(clusters) = self.configured_clusters {
            until_deadline(
                deadline,
                "following the configured clusters",
                clusters.stop(),
            )
            .await;
        }
        if let Some(clusters) = self.cluster_secrets {
            until_deadline(deadline, "following the cluster Secrets", clusters.stop()).await;
        }
        until_deadline(deadline, "loading plugins", self.directory.stop()).await;
        if let Some(leadership) = &self.leadership {
            leadership.follower.abort();
        }
        if let Some(ownership) = &self.sharding {
            ownership.follower.abort();
        }
        let daemon = self.daemon.clone();
        let _ = tokio::task::spawn_blocking(move || daemon.shutdown(deadline)).await;
        if let Some(leadership) = self.leadership {
            match leadership.election.release().await {
                Ok(()) => tracing::info!("released the leader Lease"),
                Err(err) => tracing::warn!(
                    "could not release the leader Lease (it expires on its own): {err}"
                ),
            }
        }
        if let Some(ownership) = self.sharding {
            // Nothing dispatches any more: hand every plugin over at once.
            ownership.sharding.release().await;
            tracing::info!("released the sharding Leases");
        }
        // Reviews are answered until the end: the API server keeps sending
        // them until the endpoints forget this replica.
        if let Some(admission) = self.admission {
            admission.task.abort();
        }
        self.endpoints.abort();
        self.readiness_log.abort();
        tracing::info!("shutdown complete");
    }
}

/// Awaits `stop`, one step of the shutdown, until `deadline`; past it the
/// step is dropped (aborting what it waited for) and named in a warning,
/// so the grace period bounds the whole shutdown.
async fn until_deadline(deadline: Instant, step: &str, stop: impl Future<Output = ()>) {
    let deadline = tokio::time::Instant::from_std(deadline);
    if tokio::time::timeout_at(deadline, stop).await.is_err() {
        tracing::warn!(
            step,
            "shutdown abandoned a step still under way at the end of the grace period"
        );
    }
}

/// Turns dispatching on while this replica leads and off when it stops.
async fn follow_leadership(mut leading: watch::Receiver<bool>, daemon: Arc<Daemon>) {
    loop {
        let now = *leading.borrow_and_update();
        if now {
            tracing::info!("became the leader");
        } else if daemon.is_dispatching() {
            tracing::warn!("lost leadership");
        }
        daemon.set_dispatching(now).await;
        if leading.changed().await.is_err() {
            // The election ended: without the Lease, nothing may dispatch.
            daemon.set_dispatching(false).await;
            return;
        }
    }
}

/// Makes the daemon dispatch exactly the plugins this replica owns, and
/// reports each set once applied (a plugin given up is released only then).
async fn follow_ownership(
    mut owned: watch::Receiver<BTreeSet<String>>,
    daemon: Arc<Daemon>,
    applied: watch::Sender<BTreeSet<String>>,
) {
    loop {
        let now = owned.borrow_and_update().clone();
        daemon.set_owned(now.clone()).await;
        applied.send_replace(now);
        if owned.changed().await.is_err() {
            // The coordinator ended: without its Leases, nothing may dispatch.
            daemon.set_owned(BTreeSet::new()).await;
            applied.send_replace(BTreeSet::new());
            return;
        }
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
            let cache = cache.with_max_bytes(config.plugin_files.artifact_cache.max_size);
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

/// How the daemon compiles plugins: in a child process running this very
/// binary, so the compiler's memory is returned when it exits (in process,
/// with a warning, if the binary cannot be found).
pub fn daemon_compiler(config: &crate::config::Config) -> crate::plugin::Compiler {
    match this_binary() {
        Ok(program) => crate::plugin::Compiler::Subprocess {
            program,
            timeout: config.plugin_files.compile_timeout,
        },
        Err(err) => {
            tracing::warn!("cannot find the herald binary ({err}): compiling plugins in process");
            crate::plugin::Compiler::InProcess
        }
    }
}

/// The executable this process runs. On Linux, `/proc/self/exe`: it stays
/// this very executable when its file is replaced (a package upgraded in
/// place) or deleted, so a child compiler always has the daemon's engine
/// and writes artifacts the daemon accepts; elsewhere, the path it was
/// started from.
fn this_binary() -> std::io::Result<std::path::PathBuf> {
    let own = std::path::Path::new("/proc/self/exe");
    if cfg!(target_os = "linux") && own.exists() {
        return Ok(own.to_owned());
    }
    std::env::current_exe()
}

/// After the first signal, a second one exits at once.
pub fn exit_on_second_signal() {
    tracing::info!("signal again to exit without draining");
    tokio::spawn(async {
        wait_for_signal().await;
        tracing::warn!("second signal: exiting now");
        std::process::exit(130);
    });
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn wait_for_signal() {
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(term) => term,
                Err(_) => return std::future::pending().await,
            };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
