//! Process-wide counters of plugin loading, exported by
//! [`LoaderCollector`](super::metrics::LoaderCollector).

use std::sync::atomic::AtomicU64;

/// Process-wide counters of plugin loading.
#[derive(Debug, Default)]
pub struct LoaderStats {
    /// Plugins loaded or swapped in.
    pub reloads: AtomicU64,
    /// Plugins unloaded because their file was removed.
    pub unloads: AtomicU64,
    /// Files that failed to load.
    pub load_errors: AtomicU64,
    /// Compilations done (cache misses).
    pub compiles: AtomicU64,
    /// Total compile time, in microseconds.
    pub compile_micros: AtomicU64,
    /// Loads served from the compiled-artifact cache.
    pub cache_hits: AtomicU64,
    /// Plugin source attempts that pulled a new version.
    pub source_pulls: AtomicU64,
    /// Plugin source attempts that found the version already pulled.
    pub source_unchanged: AtomicU64,
    /// Plugin source attempts that failed (registry down, refused, bad content).
    pub source_errors: AtomicU64,
}
