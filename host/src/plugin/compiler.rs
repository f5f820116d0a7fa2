//! Where plugins are compiled: in this process, or in a child process.
//!
//! Compiling a plugin is the one thing the host does that needs a lot of
//! memory. Cranelift's register allocation of the very large functions that
//! serde generates for k8s-openapi types peaks at around 600–800 MB for a
//! plugin of 800 KB (measured with this engine's settings), and the
//! allocator keeps most of it mapped after the compile is over: a daemon
//! that compiled three such plugins sat at 1.4 GB. Compiled in a child
//! process instead, that memory goes back to the system when the child
//! exits, and the daemon only ever maps the compiled artifact (about 3 MB).
//! A compiler that crashes, or a file made to make it run away, costs the
//! child, not the daemon; the child also has a time limit.
//!
//! The child is the `herald` binary itself (`herald compile-artifact`, a
//! hidden subcommand): same engine settings, so the same compatibility hash.
//! It writes a compiled-artifact entry (the cache's format, checksummed),
//! which the parent verifies and loads like a cache hit, and reports how it
//! went as one JSON line on its stdout ([`CompileReport`]).

use super::artifacts::{open_entry, unique_sibling, write_entry};
use super::engine::{EngineSettings, PluginEngine, check_header};
use super::error::LoadError;
use serde::{Deserialize, Serialize};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;
use wasmtime::component::Component;

/// Default time limit of a compilation in a child process.
pub const DEFAULT_COMPILE_TIMEOUT: Duration = Duration::from_secs(120);

/// Where plugins are compiled.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Compiler {
    /// In this process: for short-lived commands and for tests.
    #[default]
    InProcess,
    /// In a child process running `program compile-artifact …` (the daemon).
    Subprocess {
        /// The `herald` binary.
        program: PathBuf,
        /// The child is killed, and the file refused, after this long.
        timeout: Duration,
    },
}

/// What the child compiler reports, as one JSON line on its stdout:
/// `{"outcome":"compiled"}`, `{"outcome":"rejected","reason":"…"}` (the
/// file is not a plugin this engine can compile), or
/// `{"outcome":"failed","reason":"…"}` (the child could not do its work).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum CompileReport {
    /// The artifact entry is written.
    Compiled,
    /// The file was refused; `reason` says why.
    Rejected {
        /// Why, for the operator.
        reason: String,
    },
    /// The child could not read the file or write the artifact.
    Failed {
        /// Why, for the operator.
        reason: String,
    },
}

/// Compiles `bytes` for `engine`, leaving the compiled artifact at `keep`
/// (a cache entry) when one is given.
pub(crate) fn compile(
    engine: &PluginEngine,
    bytes: &[u8],
    keep: Option<&Path>,
) -> Result<Component, LoadError> {
    let settings = engine.settings();
    match &settings.compiler {
        Compiler::InProcess => {
            let component = engine.compile(bytes)?;
            if let Some(path) = keep
                && let Err(err) = write_entry(path, &component)
            {
                tracing::warn!(entry = %path.display(), "cannot store the compiled artifact (the next load compiles again): {err}");
            }
            Ok(component)
        }
        Compiler::Subprocess { program, timeout } => {
            check_header(bytes, settings.max_file_bytes)?;
            let scratch = std::env::temp_dir().join("herald-artifact");
            let entry = keep.map_or_else(|| unique_sibling(&scratch, "cwasm"), Path::to_owned);
            let input = unique_sibling(&entry, "input");
            std::fs::write(&input, bytes).map_err(|e| {
                LoadError::Compiler(format!("cannot hand the file to the compiler: {e}"))
            })?;
            let compiled = run_child(program, *timeout, settings, &input, &entry);
            let _ = std::fs::remove_file(&input);
            compiled?;
            let artifact = std::fs::read(&entry);
            if keep.is_none() {
                let _ = std::fs::remove_file(&entry);
            }
            let artifact = artifact.map_err(|e| {
                LoadError::Compiler(format!("cannot read the compiled artifact: {e}"))
            })?;
            open_entry(engine, &artifact).map_err(|reason| {
                LoadError::Compiler(format!(
                    "the compiler process wrote an unusable artifact: {reason}"
                ))
            })
        }
    }
}

/// Runs `program compile-artifact` on `input`, writing `output`.
fn run_child(
    program: &Path,
    timeout: Duration,
    settings: &EngineSettings,
    input: &Path,
    output: &Path,
) -> Result<(), LoadError> {
    let mut child = Command::new(program)
        .arg("compile-artifact")
        .args(settings.child_args())
        .arg(input)
        .arg(output)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            LoadError::Compiler(format!(
                "cannot start {} compile-artifact: {e}",
                program.display()
            ))
        })?;
    // Its output ends when it exits: read it on a thread, so the wait can
    // have a time limit.
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let mut stderr = child.stderr.take().expect("stderr is piped");
    let (done, finished) = std::sync::mpsc::channel();
    // Each pipe on a thread of its own: a child filling one while the
    // other is read would otherwise wait forever.
    let diagnostics = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let reader = std::thread::spawn(move || {
        let mut report = String::new();
        let _ = stdout.read_to_string(&mut report);
        let diagnostics = diagnostics.join().unwrap_or_default();
        let _ = done.send(());
        (report, diagnostics)
    });
    if finished.recv_timeout(timeout).is_err() {
        let _ = child.kill();
        let _ = child.wait();
        let _ = reader.join();
        return Err(LoadError::Compiler(format!(
            "compiling took longer than {} s (pluginFiles.compileTimeout) and was stopped",
            timeout.as_secs()
        )));
    }
    let (report, diagnostics) = reader.join().unwrap_or_default();
    let status = child
        .wait()
        .map_err(|e| LoadError::Compiler(format!("waiting for the compiler: {e}")))?;
    let report = report
        .lines()
        .rev()
        .find_map(|line| serde_json::from_str::<CompileReport>(line).ok());
    match (report, status.code()) {
        (Some(CompileReport::Compiled), Some(0)) => Ok(()),
        // The child refused the file: its reason is the whole story.
        (Some(CompileReport::Rejected { reason }), _) => Err(LoadError::Rejected(reason)),
        (Some(CompileReport::Failed { reason }), _) => Err(LoadError::Compiler(reason)),
        (_, None) => Err(LoadError::Compiler(format!(
            "the compiler process was killed ({status}); out of memory?"
        ))),
        (_, Some(code)) => {
            let said = diagnostics
                .lines()
                .rev()
                .find(|line| !line.trim().is_empty())
                .map(|line| format!(": {}", crate::text::escape_controls(line.trim())))
                .unwrap_or_default();
            Err(LoadError::Compiler(format!(
                "the compiler process exited with {code} without a report{said}"
            )))
        }
    }
}

/// The child's side (`herald compile-artifact`): compiles `input` with an
/// engine of `settings` and writes the artifact entry `output`; what
/// happened is its report.
pub fn compile_artifact(settings: EngineSettings, input: &Path, output: &Path) -> CompileReport {
    let failed = |reason: String| CompileReport::Failed { reason };
    let engine = match PluginEngine::new(EngineSettings {
        compiler: Compiler::InProcess,
        ..settings
    }) {
        Ok(engine) => engine,
        Err(err) => return failed(err.to_string()),
    };
    let bytes = match std::fs::read(input) {
        Ok(bytes) => bytes,
        Err(err) => return failed(format!("{}: cannot read: {err}", input.display())),
    };
    let component = match engine.compile(&bytes) {
        Ok(component) => component,
        Err(err) => {
            return CompileReport::Rejected {
                reason: err.to_string(),
            };
        }
    };
    match write_entry(output, &component) {
        Ok(()) => CompileReport::Compiled,
        Err(err) => failed(format!("{}: cannot write: {err}", output.display())),
    }
}
