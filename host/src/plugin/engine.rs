//! The one wasmtime [`Engine`] of the process, its linker, the epoch ticker
//! that enforces call deadlines, and compilation of plugin files.

use super::compiler::Compiler;
use super::error::LoadError;
use super::pool::{WorkerPool, default_workers};
use super::state::HostState;
use super::world::PluginPre;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use wasmtime::component::{Component, Linker};
use wasmtime::{Config, Engine};

/// How often the epoch advances; call deadlines are enforced to this precision.
pub const EPOCH_TICK: Duration = Duration::from_millis(5);

/// Default maximum size of a plugin file.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// Settings of the engine shared by every plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineSettings {
    /// Largest `.wasm` file accepted.
    pub max_file_bytes: u64,
    /// Largest wasm stack of one call, in bytes.
    pub max_wasm_stack: usize,
    /// Where plugins are compiled.
    pub compiler: Compiler,
    /// Threads of the worker pool that runs every plugin's calls.
    pub workers: usize,
}

impl Default for EngineSettings {
    fn default() -> Self {
        EngineSettings {
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            max_wasm_stack: 1024 * 1024,
            compiler: Compiler::InProcess,
            workers: default_workers(),
        }
    }
}

impl EngineSettings {
    /// The arguments that give a `herald compile-artifact` child the same
    /// engine (so the same compatibility hash).
    pub fn child_args(&self) -> Vec<String> {
        vec![
            "--max-file-bytes".into(),
            self.max_file_bytes.to_string(),
            "--max-wasm-stack".into(),
            self.max_wasm_stack.to_string(),
        ]
    }
}

/// The engine every plugin is compiled and run with.
///
/// Calls into plugins run as tasks of the engine's worker pool
/// (`plugin/pool.rs`), never on the daemon's async runtime, through
/// wasmtime's async API so that host calls which wait (clocks, `poll`, I/O)
/// wait on the pool without holding its threads, and the call deadline
/// bounds them too (`plugin/deadline.rs`). Running wasm is pre-empted, and
/// stopped at its deadline, by epoch interruption: a ticker thread advances
/// the epoch every [`EPOCH_TICK`].
#[derive(Clone)]
pub struct PluginEngine {
    inner: Arc<EngineInner>,
}

struct EngineInner {
    engine: Engine,
    linker: Linker<HostState>,
    settings: EngineSettings,
    ticker_stop: Arc<AtomicBool>,
    pool: WorkerPool,
}

impl Drop for EngineInner {
    fn drop(&mut self) {
        self.ticker_stop.store(true, Ordering::Relaxed);
    }
}

/// The engine could not be created.
#[derive(Debug, thiserror::Error)]
#[error("cannot set up the WebAssembly engine: {0}")]
pub struct EngineError(String);

impl PluginEngine {
    /// Creates the engine, its linker (WASI p2, sandboxed, plus Herald's
    /// imports) and starts the epoch ticker.
    pub fn new(settings: EngineSettings) -> Result<Self, EngineError> {
        let mut config = Config::new();
        config.epoch_interruption(true);
        config.max_wasm_stack(settings.max_wasm_stack);
        config.wasm_component_model(true);
        // One function at a time: the peak memory of compiling a plugin of
        // 800 KB falls from about 800 to 620 MB, and compiling leaves the
        // other cores to the plugins' workers (the speed-up of parallel
        // compilation was nil on a busy two-core machine).
        config.parallel_compilation(false);
        let engine = Engine::new(&config).map_err(|e| EngineError(e.to_string()))?;

        let mut linker = Linker::<HostState>::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)
            .map_err(|e| EngineError(e.to_string()))?;
        crate::capability::add_to_linker(&mut linker).map_err(|e| EngineError(e.to_string()))?;

        let pool = WorkerPool::new(settings.workers)
            .map_err(|e| EngineError(format!("cannot start the plugins' worker pool: {e}")))?;
        let ticker_stop = Arc::new(AtomicBool::new(false));
        spawn_epoch_ticker(engine.weak(), ticker_stop.clone());
        Ok(PluginEngine {
            inner: Arc::new(EngineInner {
                engine,
                linker,
                settings,
                ticker_stop,
                pool,
            }),
        })
    }

    /// The wasmtime engine.
    pub fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    /// The engine settings.
    pub fn settings(&self) -> &EngineSettings {
        &self.inner.settings
    }

    /// The worker pool: the runtime plugins' calls run on and their host
    /// calls wait on.
    pub(crate) fn pool(&self) -> &tokio::runtime::Handle {
        self.inner.pool.handle()
    }

    /// How many plugins' tasks want the pool's threads.
    pub(crate) fn demand(&self) -> &Arc<super::pool::Demand> {
        self.inner.pool.demand()
    }

    /// Checks that `bytes` look like a component, then compiles it. Slow
    /// (milliseconds to seconds): never call it on a dispatch path.
    pub fn compile(&self, bytes: &[u8]) -> Result<Component, LoadError> {
        check_header(bytes, self.inner.settings.max_file_bytes)?;
        Component::new(&self.inner.engine, bytes).map_err(|e| LoadError::Compile(one_line(&e)))
    }

    /// Links a compiled component against the host's imports and checks it
    /// exports the plugin world.
    pub(crate) fn pre_instantiate(&self, component: &Component) -> Result<PluginPre, LoadError> {
        let instance_pre = self
            .inner
            .linker
            .instantiate_pre(component)
            .map_err(|e| LoadError::WrongWorld(one_line(&e)))?;
        PluginPre::new(instance_pre)
    }
}

impl std::fmt::Debug for PluginEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginEngine")
            .field("settings", &self.inner.settings)
            .finish()
    }
}

fn spawn_epoch_ticker(engine: wasmtime::EngineWeak, stop: Arc<AtomicBool>) {
    std::thread::Builder::new()
        .name("herald-epoch".into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(EPOCH_TICK);
                match engine.upgrade() {
                    Some(engine) => engine.increment_epoch(),
                    None => break,
                }
            }
        })
        .expect("spawning the epoch ticker thread");
}

/// Rejects files that cannot be a component before handing them to the compiler,
/// so each gets a precise message.
pub fn check_header(bytes: &[u8], max_file_bytes: u64) -> Result<(), LoadError> {
    const MAGIC: &[u8; 4] = b"\0asm";
    const CORE_VERSION: [u8; 4] = [1, 0, 0, 0];
    if bytes.is_empty() {
        return Err(LoadError::Empty);
    }
    if bytes.len() as u64 > max_file_bytes {
        return Err(LoadError::TooLarge {
            size: bytes.len() as u64,
            max: max_file_bytes,
        });
    }
    if !bytes.starts_with(&MAGIC[..bytes.len().min(4)]) {
        return Err(LoadError::NotWasm);
    }
    if bytes.len() < 8 {
        return Err(LoadError::Truncated(bytes.len()));
    }
    if bytes[4..8] == CORE_VERSION {
        return Err(LoadError::CoreModule);
    }
    Ok(())
}

/// A wasmtime error as one line: the message and its root cause.
pub(crate) fn one_line(err: &wasmtime::Error) -> String {
    let mut text = err.to_string();
    let root = err.root_cause().to_string();
    if !text.contains(&root) {
        text.push_str(": ");
        text.push_str(&root);
    }
    text.replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_classified_before_compiling() {
        let max = 1024;
        assert!(matches!(check_header(b"", max), Err(LoadError::Empty)));
        assert!(matches!(
            check_header(b"\0as", max),
            Err(LoadError::Truncated(3))
        ));
        assert!(matches!(
            check_header(b"\0asm\x01", max),
            Err(LoadError::Truncated(5))
        ));
        assert!(matches!(
            check_header(b"MZ\x90\0 not wasm", max),
            Err(LoadError::NotWasm)
        ));
        assert!(matches!(
            check_header(b"\0asm\x01\0\0\0", max),
            Err(LoadError::CoreModule)
        ));
        assert!(check_header(b"\0asm\x0d\0\x01\0", max).is_ok());
        assert!(matches!(
            check_header(&[0u8; 2048], max),
            Err(LoadError::TooLarge {
                size: 2048,
                max: 1024
            })
        ));
    }
}
