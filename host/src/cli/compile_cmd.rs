//! `herald compile-artifact`: compiles one plugin file into a compiled
//! artifact. Hidden: the daemon runs it as a child process (see
//! `plugin::compiler`), so the compiler's memory goes back to the system
//! when it exits.

use crate::plugin::{CompileReport, Compiler, EngineSettings, compile_artifact};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `herald compile-artifact`.
#[derive(Debug, Args)]
pub struct CompileArgs {
    /// Largest plugin file accepted, in bytes (as the daemon's engine).
    #[arg(long)]
    pub max_file_bytes: u64,
    /// Largest wasm stack of one call, in bytes (as the daemon's engine).
    #[arg(long)]
    pub max_wasm_stack: usize,
    /// The plugin file.
    pub input: PathBuf,
    /// Where to write the artifact entry.
    pub output: PathBuf,
}

/// Compiles; prints the report (one JSON line, which the daemon reads) and
/// exits with 0 only when the artifact is written.
pub fn run(args: CompileArgs) -> ExitCode {
    let settings = EngineSettings {
        max_file_bytes: args.max_file_bytes,
        max_wasm_stack: args.max_wasm_stack,
        compiler: Compiler::InProcess,
        // It compiles and exits: no plugin runs in it.
        workers: 1,
    };
    let report = compile_artifact(settings, &args.input, &args.output);
    println!(
        "{}",
        serde_json::to_string(&report).expect("a report serializes")
    );
    match report {
        CompileReport::Compiled => ExitCode::SUCCESS,
        CompileReport::Rejected { .. } | CompileReport::Failed { .. } => ExitCode::FAILURE,
    }
}
