//! `herald run`: the daemon.

use super::fail;
use crate::config::{Config, LogFormat, SourceKind};
use crate::daemon::Daemon;
use crate::informer::{Informers, ReflectorConfig};
use crate::loader::{FileError, load_file, plugin_files};
use crate::metrics::LoaderStats;
use crate::ops::{self, FileStatuses, OpsState};
use crate::plugin::{EngineSettings, PluginEngine, TracingSink};
use crate::source::Source;
use crate::store::Transform;
use clap::Args;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Arguments of `herald run`. Each flag overrides the same setting of the
/// configuration file.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Configuration file (see docs/config.md); defaults apply without one.
    #[arg(long, short)]
    pub config: Option<PathBuf>,
    /// Directory of plugin `.wasm` files [config: pluginDir].
    #[arg(long)]
    pub plugins: Option<PathBuf>,
    /// Kubeconfig file of the cluster to watch [config: source.kubeconfig].
    #[arg(long, conflicts_with_all = ["in_cluster", "embedded"])]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context [config: source.context].
    #[arg(long, conflicts_with_all = ["in_cluster", "embedded"])]
    pub context: Option<String>,
    /// Use the pod's service account [config: source.kind: in-cluster].
    #[arg(long, conflicts_with = "embedded")]
    pub in_cluster: bool,
    /// Use the embedded API server, a development stand-in for a cluster
    /// [config: source.kind: embedded].
    #[arg(long)]
    pub embedded: bool,
    /// With --embedded: a directory of YAML manifests to load at start [config: source.seed].
    #[arg(long, requires = "embedded")]
    pub seed: Vec<PathBuf>,
    /// With --embedded: write a kubeconfig for kubectl here [config: source.kubeconfigOut].
    #[arg(long, requires = "embedded")]
    pub kubeconfig_out: Option<PathBuf>,
    /// Address of /metrics, /healthz, /readyz and /plugins [config: listen].
    #[arg(long)]
    pub listen: Option<SocketAddr>,
    /// Log format: human or json [config: log.format].
    #[arg(long, value_parser = parse_log_format)]
    pub log_format: Option<LogFormat>,
    /// How long queues may drain after SIGTERM, e.g. 10s [config: shutdown.gracePeriod].
    #[arg(long, value_parser = crate::duration_serde::parse)]
    pub grace_period: Option<Duration>,
}

fn parse_log_format(text: &str) -> Result<LogFormat, String> {
    match text {
        "human" => Ok(LogFormat::Human),
        "json" => Ok(LogFormat::Json),
        other => Err(format!("{other:?} is not a log format: use human or json")),
    }
}

impl RunArgs {
    /// The configuration file (or defaults) with the flags applied.
    pub fn resolve(&self) -> Result<Config, crate::config::ConfigError> {
        let mut config = match &self.config {
            Some(path) => Config::load(path)?,
            None => Config::default(),
        };
        if let Some(dir) = &self.plugins {
            config.plugin_dir = dir.clone();
        }
        if self.embedded {
            config.source.kind = SourceKind::Embedded;
            config.source.kubeconfig = None;
            config.source.context = None;
        } else if self.in_cluster {
            config.source.kind = SourceKind::InCluster;
            config.source.kubeconfig = None;
            config.source.context = None;
        } else if self.kubeconfig.is_some() || self.context.is_some() {
            config.source.kind = SourceKind::Kubeconfig;
            config.source.kubeconfig = self.kubeconfig.clone().or(config.source.kubeconfig);
            config.source.context = self.context.clone().or(config.source.context);
        }
        if !self.seed.is_empty() {
            config.source.seed = self.seed.clone();
        }
        if let Some(path) = &self.kubeconfig_out {
            config.source.kubeconfig_out = Some(path.clone());
        }
        if let Some(listen) = self.listen {
            config.listen = listen;
        }
        if let Some(format) = self.log_format {
            config.log.format = format;
        }
        if let Some(grace) = self.grace_period {
            config.shutdown.grace_period = grace;
        }
        config
            .validate()
            .map_err(|(key, problem)| crate::config::ConfigError {
                source_name: "flags".into(),
                key,
                problem,
            })?;
        Ok(config)
    }
}

/// The source a configuration names.
pub fn source_of(config: &Config) -> Source {
    let source = &config.source;
    match source.kind {
        SourceKind::Auto => Source::Auto,
        SourceKind::Kubeconfig => Source::Kubeconfig {
            path: source.kubeconfig.clone(),
            context: source.context.clone(),
        },
        SourceKind::InCluster => Source::InCluster,
        SourceKind::Embedded => Source::Embedded {
            seed: source.seed.clone(),
            kubeconfig_out: source.kubeconfig_out.clone(),
        },
    }
}

/// Runs the daemon until Ctrl-C or SIGTERM.
pub fn run(args: RunArgs) -> ExitCode {
    let config = match args.resolve() {
        Ok(config) => config,
        Err(err) => return fail(err),
    };
    super::init_logging(&config.log);
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(err) => return fail(format_args!("cannot start the async runtime: {err}")),
    };
    runtime.block_on(serve(config))
}

async fn serve(config: Config) -> ExitCode {
    let connection = match source_of(&config).connect().await {
        Ok(connection) => connection,
        Err(err) => return fail(err),
    };
    tracing::info!("watching the {}", connection.description);
    let settings = EngineSettings {
        max_file_bytes: config.plugin_files.max_size,
        ..EngineSettings::default()
    };
    let engine = match PluginEngine::new(settings) {
        Ok(engine) => engine,
        Err(err) => return fail(err),
    };
    let reflector = ReflectorConfig {
        transform: Transform {
            strip_managed_fields: config.cache.strip_managed_fields,
        },
        ..ReflectorConfig::default()
    };
    let informers = Arc::new(Informers::new(connection.client.clone(), reflector));
    let daemon = Arc::new(Daemon::new(informers, config.retry_policy()));
    let listener = match ops::bind(config.listen).await {
        Ok(listener) => listener,
        Err(err) => return fail(err),
    };
    let loader_stats = Arc::new(LoaderStats::default());
    let ops = Arc::new(OpsState {
        daemon: daemon.clone(),
        registry: crate::metrics::registry(daemon.clone(), loader_stats.clone()),
        files: Arc::new(FileStatuses::default()),
        shutting_down: AtomicBool::new(false),
    });
    let address = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    tracing::info!("endpoints: http://{address}/metrics /healthz /readyz /plugins");
    tokio::spawn(ops::serve(listener, ops.clone()));
    let config = Arc::new(config);
    start_plugins(&engine, &config, &daemon, &ops, &loader_stats).await;

    wait_for_signal().await;
    shut_down(&ops, &daemon, config.shutdown.grace_period).await;
    drop(connection);
    ExitCode::SUCCESS
}

/// Graceful shutdown: readiness drops first, then watches stop and queues
/// drain until the grace period ends. A second signal exits at once.
pub(crate) async fn shut_down(ops: &OpsState, daemon: &Arc<Daemon>, grace: Duration) {
    ops.shutting_down.store(true, Ordering::Release);
    tracing::info!(
        ?grace,
        "shutting down: readiness dropped, stopping watches and draining queues (signal again to exit now)"
    );
    tokio::spawn(async {
        wait_for_signal().await;
        tracing::warn!("second signal: exiting now");
        std::process::exit(130);
    });
    let deadline = Instant::now() + grace;
    let stopping = daemon.clone();
    let _ = tokio::task::spawn_blocking(move || stopping.shutdown(deadline)).await;
    tracing::info!("shutdown complete");
}

/// Loads and starts every plugin file of the plugin directory; a file that
/// fails is logged (naming the file and the reason) and the rest go on.
async fn start_plugins(
    engine: &PluginEngine,
    config: &Arc<Config>,
    daemon: &Daemon,
    ops: &OpsState,
    stats: &LoaderStats,
) {
    let files = match plugin_files(&config.plugin_dir) {
        Ok(files) => files,
        Err(err) => {
            tracing::error!(dir = %config.plugin_dir.display(), "cannot read the plugin directory: {err}");
            return;
        }
    };
    let mut names: std::collections::HashMap<String, PathBuf> = std::collections::HashMap::new();
    for file in files {
        let stem = stem(&file);
        if config.is_disabled(&stem) {
            tracing::info!(file = %file.display(), "plugin disabled by configuration (plugins.{stem}.disabled)");
            continue;
        }
        let (engine, options, path) = (
            engine.clone(),
            config.load_options(&stem, Arc::new(TracingSink)),
            file.clone(),
        );
        let loaded =
            match tokio::task::spawn_blocking(move || load_file(&engine, &path, options)).await {
                Ok(loaded) => loaded,
                Err(err) => {
                    tracing::error!(file = %file.display(), "plugin load panicked: {err}");
                    continue;
                }
            };
        let failed = |message: String| {
            tracing::error!("plugin not loaded: {message}");
            stats.load_errors.fetch_add(1, Ordering::Relaxed);
            ops.files.failed(file.clone(), message);
        };
        let plugin = match loaded {
            Ok(plugin) => plugin,
            Err(err) => {
                failed(err.to_string());
                continue;
            }
        };
        if let Some(other) = names.get(plugin.name()) {
            failed(
                FileError::DuplicateName {
                    file: file.clone(),
                    name: plugin.name().to_owned(),
                    other: other.clone(),
                }
                .to_string(),
            );
            continue;
        }
        names.insert(plugin.name().to_owned(), file.clone());
        let (name, digest) = (plugin.name().to_owned(), plugin.digest().to_owned());
        match daemon.start(plugin).await {
            Ok(()) => {
                tracing::info!(plugin = %name, file = %file.display(), "plugin loaded");
                stats.reloads.fetch_add(1, Ordering::Relaxed);
                ops.files.loaded(file.clone(), &name, &digest);
            }
            Err(err) => failed(format!("{}: {err}", file.display())),
        }
    }
    if daemon.names().is_empty() {
        tracing::warn!(dir = %config.plugin_dir.display(), "no plugin is running; add .wasm files to the plugin directory");
    }
}

/// A plugin file's name without `.wasm`.
pub fn stem(file: &Path) -> String {
    file.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Resolves on Ctrl-C or SIGTERM.
pub(crate) async fn wait_for_signal() {
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
