//! The `herald` command line: parses arguments and calls the library.

#[cfg(feature = "embedded")]
mod apiserver_cmd;
mod compile_cmd;
#[cfg(feature = "embedded")]
mod demo_cmd;
mod pipe;
pub mod plugin_build;
mod plugin_cmd;
mod plugin_files;
mod plugin_new;
mod plugin_push;
mod plugin_replay;
mod plugin_webhooks;
pub(crate) mod run_cmd;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Herald: Kubernetes shared informers dispatching into sandboxed WebAssembly plugins.
#[derive(Debug, Parser)]
#[command(name = "herald", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Work with plugin files: validate one, or replay recorded events into it.
    #[command(subcommand)]
    Plugin(plugin_cmd::PluginCommand),
    /// Run the daemon: load the plugin directory, watch the cluster, dispatch.
    Run(run_cmd::RunArgs),
    /// See Herald work with no cluster: the embedded API server, sample
    /// objects, the example plugins and a churn generator.
    #[cfg(feature = "embedded")]
    Demo(demo_cmd::DemoArgs),
    /// Run the embedded Kubernetes API server alone (development only), for
    /// kubectl and for `herald run --kubeconfig`.
    #[cfg(feature = "embedded")]
    Apiserver(apiserver_cmd::ApiServerArgs),
    /// Print the version of Herald and of the plugin world it implements.
    Version,
    /// Compile one plugin file into a compiled artifact (run by the daemon
    /// as a child process).
    #[command(hide = true)]
    CompileArtifact(compile_cmd::CompileArgs),
}

impl Command {
    /// True for the commands that print for a reader (a person, or a pipe
    /// into `head`) and then end. The servers (`run`, `demo`, `apiserver`)
    /// keep ignoring `SIGPIPE`: a peer that hangs up while a socket is
    /// written with `writev` (as hyper writes) must fail that write, not
    /// end the process; the demo ends quietly on its own when its reader
    /// goes (`demo::say`).
    fn prints_for_a_reader(&self) -> bool {
        match self {
            Command::Plugin(_) | Command::Version => true,
            #[cfg(feature = "embedded")]
            Command::Demo(_) | Command::Apiserver(_) => false,
            Command::Run(_) | Command::CompileArtifact(_) => false,
        }
    }
}

/// Runs the command line; returns the process exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    if cli.command.prints_for_a_reader() {
        pipe::end_quietly_when_the_reader_goes();
    }
    match cli.command {
        Command::Plugin(command) => plugin_cmd::run(command),
        Command::Run(args) => run_cmd::run(args),
        #[cfg(feature = "embedded")]
        Command::Demo(args) => demo_cmd::run(args),
        #[cfg(feature = "embedded")]
        Command::Apiserver(args) => apiserver_cmd::run(args),
        Command::CompileArtifact(args) => compile_cmd::run(args),
        Command::Version => {
            println!(
                "herald {} (plugin world {})",
                env!("CARGO_PKG_VERSION"),
                crate::wit::WORLD
            );
            ExitCode::SUCCESS
        }
    }
}

/// Prints a one-line error naming what is at fault and returns the failure code.
pub(crate) fn fail(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(1)
}
