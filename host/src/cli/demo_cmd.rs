//! `herald demo`.

use super::fail;
use crate::demo::{DemoOptions, repository_root};
use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Arguments of `herald demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Stop after this long, e.g. 30s (default: run until Ctrl-C).
    #[arg(long, value_parser = crate::units::duration::parse)]
    pub duration: Option<Duration>,
    /// Load the plugins in this directory instead of building the examples.
    #[arg(long)]
    pub plugins: Option<PathBuf>,
    /// Directory (or file) of YAML manifests to seed the embedded API server
    /// with; repeatable (default: examples/cluster and examples/controllers
    /// of this checkout).
    #[arg(long)]
    pub seed: Vec<PathBuf>,
    /// Address of the dashboard (/), /metrics, /healthz, /readyz and
    /// /plugins (a free port is taken if it is busy).
    #[arg(long, default_value = "127.0.0.1:9090")]
    pub listen: SocketAddr,
    /// Time between two changes of the churn generator, e.g. 500ms.
    #[arg(long, default_value = "700ms", value_parser = crate::units::duration::parse)]
    pub churn_interval: Duration,
}

/// Runs the demo.
pub fn run(args: DemoArgs) -> ExitCode {
    crate::logging::init(&crate::logging::LogConfig {
        level: "warn,herald=info,herald::plugin=off".into(),
        ..Default::default()
    });
    let options = DemoOptions {
        duration: args.duration,
        plugins: args.plugins,
        seed: if args.seed.is_empty() {
            ["cluster", "controllers"]
                .map(|dir| repository_root().join("examples").join(dir))
                .into()
        } else {
            args.seed
        },
        listen: args.listen,
        churn_interval: args.churn_interval,
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(err) => return fail(format_args!("cannot start the async runtime: {err}")),
    };
    match runtime.block_on(crate::demo::run(options)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => fail(err),
    }
}
