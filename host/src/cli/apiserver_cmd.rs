//! `herald apiserver`: the embedded Kubernetes API server on its own, so
//! people can point kubectl at it. A development and test aid: production
//! Herald watches a real cluster.

use super::fail;
use crate::service::wait_for_signal;
use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Arguments of `herald apiserver`.
#[derive(Debug, Args)]
pub struct ApiServerArgs {
    /// Address to listen on (port 0 takes any free port; the kubeconfig says which).
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,
    /// A directory (or file) of YAML manifests to load at start; repeatable.
    #[arg(long)]
    pub seed: Vec<PathBuf>,
    /// Where to write a kubeconfig for kubectl and kube clients.
    #[arg(long, default_value = "herald-apiserver.kubeconfig")]
    pub kubeconfig_out: PathBuf,
    /// Keep the objects in this directory, so a restart finds them again
    /// (the seed is then ignored).
    #[arg(long)]
    pub persist: Option<PathBuf>,
    /// Change events kept for watches to resume from; a watch from an older
    /// resourceVersion gets 410 Gone.
    #[arg(long, default_value_t = 10_000)]
    pub history: usize,
    /// Run the demo's churn generator too (Pods and Deployments created,
    /// scaled and deleted in the namespaces `shop` and `payments` of
    /// `--seed examples/cluster`),
    /// one change every interval, e.g. 500ms.
    #[arg(long, value_parser = crate::units::duration::parse)]
    pub churn_interval: Option<Duration>,
}

/// Runs the embedded API server until Ctrl-C or SIGTERM.
pub fn run(args: ApiServerArgs) -> ExitCode {
    crate::logging::init(&crate::logging::LogConfig::default());
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(err) => return fail(format_args!("cannot start the async runtime: {err}")),
    };
    runtime.block_on(serve(args))
}

async fn serve(args: ApiServerArgs) -> ExitCode {
    let config = herald_apiserver::ApiServerConfig {
        listen: args.listen,
        seed_dirs: args.seed,
        persist_dir: args.persist,
        history_window: args.history,
        ..herald_apiserver::ApiServerConfig::default()
    };
    let server = match herald_apiserver::start(config).await {
        Ok(server) => server,
        Err(err) => return fail(format_args!("embedded API server: {err}")),
    };
    if let Err(err) = server.write_kubeconfig(&args.kubeconfig_out) {
        return fail(format_args!("{}: {err}", args.kubeconfig_out.display()));
    }
    let kubeconfig = args.kubeconfig_out.display();
    crate::demo::say(&format!(
        "Embedded Kubernetes API server (development only) at {}\n  \
         kubectl       kubectl --kubeconfig {kubeconfig} get pods -A\n  \
         herald        herald run --kubeconfig {kubeconfig} --plugins DIR\n  \
         stop          Ctrl-C",
        server.url()
    ));
    let churn = match args.churn_interval {
        Some(interval) => match churn(&server.url(), interval) {
            Ok(churn) => Some(churn),
            Err(err) => return fail(format_args!("churn generator: {err}")),
        },
        None => None,
    };
    wait_for_signal().await;
    if let Some(churn) = churn {
        churn.abort();
    }
    server.shutdown().await;
    ExitCode::SUCCESS
}

/// Why the churn generator could not start.
#[derive(Debug, thiserror::Error)]
enum ChurnError {
    /// The server's URL (held here) does not parse.
    #[error("bad URL {url}: {reason}")]
    Url {
        /// The URL.
        url: String,
        /// Why.
        #[source]
        reason: http::uri::InvalidUri,
    },
    /// No client could be made for it.
    #[error(transparent)]
    Client(#[from] kube::Error),
}

/// Starts the demo's churn generator against the server at `url`.
fn churn(url: &str, interval: Duration) -> Result<tokio::task::JoinHandle<()>, ChurnError> {
    let url: http::Uri = url.parse().map_err(|reason| ChurnError::Url {
        url: url.to_owned(),
        reason,
    })?;
    let client = kube::Client::try_from(kube::Config::new(url))?;
    crate::demo::say(&format!(
        "  churn         one change every {interval:?} in shop and payments"
    ));
    Ok(crate::demo::churn::Churn::spawn_on_example_cluster(
        client, interval,
    ))
}
