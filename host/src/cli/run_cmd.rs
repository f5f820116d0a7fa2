//! `herald run`: the daemon.

use super::fail;
use crate::capability::log::TracingSink;
use crate::config::Config;
use crate::logging::LogFormat;
use crate::ops;
use crate::service::{Service, exit_on_second_signal, wait_for_signal};
use crate::source::Source;
use crate::source::SourceKind;
use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

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
    /// Address of the dashboard (/), /metrics, /healthz, /readyz and /plugins
    /// [config: listen].
    #[arg(long)]
    pub listen: Option<SocketAddr>,
    /// Log format: human or json [config: log.format].
    #[arg(long, value_parser = parse_log_format)]
    pub log_format: Option<LogFormat>,
    /// How long queues may drain after SIGTERM, e.g. 10s [config: shutdown.gracePeriod].
    #[arg(long, value_parser = crate::units::duration::parse)]
    pub grace_period: Option<Duration>,
}

/// A `--log-format` other than `human` or `json` (held here).
#[derive(Debug, thiserror::Error)]
#[error("{0:?} is not a log format: use human or json")]
struct UnknownLogFormat(String);

fn parse_log_format(text: &str) -> Result<LogFormat, UnknownLogFormat> {
    match text {
        "human" => Ok(LogFormat::Human),
        "json" => Ok(LogFormat::Json),
        other => Err(UnknownLogFormat(other.to_owned())),
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
        config.validate().map_err(|e| e.in_source("flags"))?;
        Ok(config)
    }
}

/// The source a configuration names.
pub fn source_of(config: &Config) -> Source {
    config.source.source()
}

/// Runs the daemon until Ctrl-C or SIGTERM.
pub fn run(args: RunArgs) -> ExitCode {
    let config = match args.resolve() {
        Ok(config) => config,
        Err(err) => return fail(err),
    };
    crate::logging::init(&config.log);
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(err) => return fail(format_args!("cannot start the async runtime: {err}")),
    };
    let code = runtime.block_on(serve(config));
    // Whatever blocking work is still under way (a plugin compiling for a
    // reload, say) must not hold the exit: shutdown is already bounded.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    code
}

async fn serve(config: Config) -> ExitCode {
    let connection = match source_of(&config).connect().await {
        Ok(connection) => connection,
        Err(err) => return fail(err),
    };
    tracing::info!(cluster = %config.default_cluster_name(), "watching the {}", connection.description);
    let others = crate::source::connect_others(&config.clusters).await;
    let fleet = crate::source::FleetClients {
        home: connection.clients(),
        others: others
            .iter()
            .map(|(name, connection)| (name.clone(), connection.clients()))
            .collect(),
    };
    let listener = match ops::bind(config.listen).await {
        Ok(listener) => listener,
        Err(err) => return fail(err),
    };
    let grace = config.shutdown.grace_period;
    let compiler = crate::service::daemon_compiler(&config);
    let service = match Service::start(
        Arc::new(config),
        fleet,
        Arc::new(TracingSink),
        listener,
        compiler,
    )
    .await
    {
        Ok(service) => service,
        Err(err) => return fail(err),
    };
    wait_for_signal().await;
    exit_on_second_signal();
    service.shutdown(grace).await;
    drop(connection);
    drop(others);
    ExitCode::SUCCESS
}
