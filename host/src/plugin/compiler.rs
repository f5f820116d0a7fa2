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
//! which the parent verifies and loads like a cache hit.

use super::artifacts::{open_entry, unique_sibling, write_entry};
use super::engine::{EngineSettings, PluginEngine, check_header};
use super::error::LoadError;
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
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            LoadError::Compiler(format!(
                "cannot start {} compile-artifact: {e}",
                program.display()
            ))
        })?;
    // Its stderr ends when it exits: read it on a thread, so the wait can
    // have a time limit.
    let mut stderr = child.stderr.take().expect("stderr is piped");
    let (done, finished) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut message = String::new();
        let _ = stderr.read_to_string(&mut message);
        let _ = done.send(());
        message
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
    let message = reader.join().unwrap_or_default();
    let status = child
        .wait()
        .map_err(|e| LoadError::Compiler(format!("waiting for the compiler: {e}")))?;
    if status.success() {
        return Ok(());
    }
    let said = message.lines().rev().find(|l| !l.trim().is_empty());
    Err(
        match (said.and_then(|l| l.strip_prefix("error: ")), status.code()) {
            // The child refused the file: its message is the whole story.
            (Some(reason), Some(_)) => LoadError::Rejected(reason.to_owned()),
            (_, None) => LoadError::Compiler(format!(
                "the compiler process was killed ({status}); out of memory?"
            )),
            (None, Some(code)) => {
                LoadError::Compiler(format!("the compiler process exited with {code}"))
            }
        },
    )
}

/// The child's side (`herald compile-artifact`): compiles `input` with an
/// engine of `settings` and writes the artifact entry `output`.
pub fn compile_artifact(
    settings: EngineSettings,
    input: &Path,
    output: &Path,
) -> Result<(), String> {
    let engine = PluginEngine::new(EngineSettings {
        compiler: Compiler::InProcess,
        ..settings
    })
    .map_err(|e| e.to_string())?;
    let bytes =
        std::fs::read(input).map_err(|e| format!("{}: cannot read: {e}", input.display()))?;
    let component = engine.compile(&bytes).map_err(|e| e.to_string())?;
    write_entry(output, &component).map_err(|e| format!("{}: cannot write: {e}", output.display()))
}
