//! `herald plugin build [DIR] [-o OUT]`: the plugin in a source directory
//! built into a component ([`crate::build`] does the work).

use super::fail;
use crate::build::{Options, WORLD, build};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `plugin build`.
#[derive(Debug, Args)]
pub struct BuildArgs {
    /// The plugin's source directory (for Go, the one holding `go.mod` and
    /// the main package).
    #[arg(default_value = ".")]
    pub dir: PathBuf,
    /// Where to write the component; default: `<DIR>/<DIR's name>.wasm`.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// Keep the function names (Go: no `-ldflags=-s`), so that a trap's
    /// backtrace names the Go functions it went through; 2 % larger.
    #[arg(long)]
    pub keep_names: bool,
}

/// Runs `plugin build`.
pub fn run(args: BuildArgs) -> ExitCode {
    let options = Options {
        keep_names: args.keep_names,
    };
    match build(&args.dir, args.output.as_deref(), options) {
        Ok(built) => {
            println!(
                "built {} ({} bytes, against {WORLD}): go build {:.1} s ({}), componentize {:.1} s",
                built.output.display(),
                built.bytes,
                built.go_build.as_secs_f64(),
                built.go_version,
                built.componentize.as_secs_f64(),
            );
            ExitCode::SUCCESS
        }
        Err(err) => fail(err),
    }
}
