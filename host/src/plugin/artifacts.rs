//! The compiled-artifact cache: components compiled once and kept on disk,
//! keyed by the plugin file's sha256 and the engine's compatibility hash, so
//! a restart or a reload of a known file skips compilation.
//!
//! An entry is `MAGIC`, the sha256 of the payload, then the payload that
//! [`Component::serialize`] produced. An entry that is short, has the wrong
//! magic or checksum, or that wasmtime refuses, is deleted and the component
//! compiled again: a cache entry is never trusted without its checksum.
//! Entries are written to a temporary file and renamed into place, so a crash
//! never leaves a half-written entry under a real name.
//!
//! The cache directory holds native code the host will run: it must be
//! writable by Herald alone (see SECURITY.md).

use super::engine::{PluginEngine, one_line};
use super::error::LoadError;
use sha2::{Digest, Sha256};
use std::hash::{Hash, Hasher};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use wasmtime::component::Component;

/// The first bytes of every entry: format version 1.
const MAGIC: &[u8; 8] = b"HRLDART1";
const CHECKSUM_BYTES: usize = 32;

/// How a component was obtained.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompileOutcome {
    /// Loaded from the cache: no compilation.
    CacheHit,
    /// Compiled, taking this long (no cache, or no entry yet).
    Compiled(Duration),
    /// The cache entry was unusable and was discarded; compiled anew.
    Recompiled {
        /// How long compiling took.
        took: Duration,
        /// Why the entry was discarded.
        discarded: String,
    },
}

impl CompileOutcome {
    /// Time spent compiling (zero on a cache hit).
    pub fn compile_time(&self) -> Duration {
        match self {
            CompileOutcome::CacheHit => Duration::ZERO,
            CompileOutcome::Compiled(took) | CompileOutcome::Recompiled { took, .. } => *took,
        }
    }
}

/// The cache directory could not be used.
#[derive(Debug, thiserror::Error)]
#[error("compiled-artifact cache {dir}: {source}")]
pub struct ArtifactCacheError {
    dir: PathBuf,
    source: std::io::Error,
}

/// A compiled-artifact entry that cannot be written or used. wasmtime's
/// own errors are kept as their one-line text (with the root cause), as
/// they are logged.
#[derive(Debug, thiserror::Error)]
pub(crate) enum EntryError {
    /// wasmtime could not serialize the component.
    #[error("{0}")]
    Serialize(String),
    /// The entry could not be written or renamed into place.
    #[error("{0}")]
    Write(#[source] std::io::Error),
    /// The file does not start with Herald's magic.
    #[error("not a Herald artifact (bad magic)")]
    BadMagic,
    /// Shorter than its checksum.
    #[error("truncated entry")]
    Truncated,
    /// The payload does not hash to its checksum.
    #[error("checksum mismatch")]
    Checksum,
    /// wasmtime refused the payload (another version or configuration).
    #[error("refused by wasmtime: {0}")]
    Refused(String),
}

/// Compiled components on disk, for one engine configuration.
#[derive(Debug, Clone)]
pub struct ArtifactCache {
    dir: PathBuf,
    engine_key: String,
    max_bytes: u64,
}

/// Default cap on the cache's entries: 384 MiB, under the 512 MiB volume
/// `deploy/` gives it, with room for an entry being written.
pub const DEFAULT_ARTIFACT_CACHE_BYTES: u64 = 384 << 20;

impl ArtifactCache {
    /// Opens (creating it if needed) the cache in `dir` for `engine`.
    pub fn open(dir: &Path, engine: &PluginEngine) -> Result<Self, ArtifactCacheError> {
        std::fs::create_dir_all(dir).map_err(|source| ArtifactCacheError {
            dir: dir.to_owned(),
            source,
        })?;
        Ok(ArtifactCache {
            dir: dir.to_owned(),
            engine_key: engine_key(engine),
            max_bytes: DEFAULT_ARTIFACT_CACHE_BYTES,
        })
    }

    /// The same cache, keeping at most `max_bytes` of entries.
    pub fn with_max_bytes(self, max_bytes: u64) -> Self {
        ArtifactCache { max_bytes, ..self }
    }

    /// Removes the least recently used entries (by modification time, which
    /// a hit refreshes) until the entries fit the cap; `keep` stays whatever
    /// its age. Returns how many went.
    pub fn evict(&self, keep: &Path) -> usize {
        let Ok(listing) = std::fs::read_dir(&self.dir) else {
            return 0;
        };
        let mut entries: Vec<(std::time::SystemTime, u64, PathBuf)> = listing
            .filter_map(Result::ok)
            .filter(|e| e.path().extension().is_some_and(|x| x == "cwasm"))
            .filter_map(|e| {
                let meta = e.metadata().ok()?;
                Some((meta.modified().ok()?, meta.len(), e.path()))
            })
            .collect();
        let mut total: u64 = entries.iter().map(|(_, len, _)| len).sum();
        entries.sort();
        let mut removed = 0;
        for (_, len, path) in entries {
            if total <= self.max_bytes {
                break;
            }
            if path == keep {
                continue;
            }
            if std::fs::remove_file(&path).is_ok() {
                tracing::info!(entry = %path.display(), "compiled-artifact cache over pluginFiles.artifactCache.maxSize: removed its least recently used entry");
                total = total.saturating_sub(len);
                removed += 1;
            }
        }
        removed
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the entry for a file with sha256 `digest` lives.
    pub fn entry_path(&self, digest: &str) -> PathBuf {
        self.dir.join(format!("{digest}-{}.cwasm", self.engine_key))
    }

    /// The compiled component of `bytes` (whose sha256 is `digest`): from
    /// the cache if a sound entry exists, else compiled and stored. Failing
    /// to store is logged, not fatal: the component is still returned.
    pub fn load_or_compile(
        &self,
        engine: &PluginEngine,
        bytes: &[u8],
        digest: &str,
    ) -> Result<(Component, CompileOutcome), LoadError> {
        let path = self.entry_path(digest);
        let discarded = match std::fs::read(&path) {
            Ok(entry) => match open_entry(engine, &entry) {
                Ok(component) => {
                    // Recently used: the last to be evicted.
                    let _ = std::fs::File::options()
                        .write(true)
                        .open(&path)
                        .and_then(|f| f.set_modified(std::time::SystemTime::now()));
                    return Ok((component, CompileOutcome::CacheHit));
                }
                Err(reason) => {
                    tracing::warn!(entry = %path.display(), "discarding a corrupt compiled-artifact cache entry and recompiling: {reason}");
                    let _ = std::fs::remove_file(&path);
                    Some(reason.to_string())
                }
            },
            Err(err) if err.kind() == ErrorKind::NotFound => None,
            Err(err) => Some(format!("cannot read the entry: {err}")),
        };
        let started = Instant::now();
        let component = super::compiler::compile(engine, bytes, Some(&path))?;
        let took = started.elapsed();
        self.evict(&path);
        let outcome = match discarded {
            None => CompileOutcome::Compiled(took),
            Some(discarded) => CompileOutcome::Recompiled { took, discarded },
        };
        Ok((component, outcome))
    }
}

/// Writes `component` as an entry at `path`: through a unique temporary name
/// and a rename, so `path` never holds half an entry.
pub(crate) fn write_entry(path: &Path, component: &Component) -> Result<(), EntryError> {
    let payload = component
        .serialize()
        .map_err(|e| EntryError::Serialize(one_line(&e)))?;
    let mut entry = Vec::with_capacity(MAGIC.len() + CHECKSUM_BYTES + payload.len());
    entry.extend_from_slice(MAGIC);
    entry.extend_from_slice(&Sha256::digest(&payload));
    entry.extend_from_slice(&payload);
    let temporary = unique_sibling(path, "tmp");
    std::fs::write(&temporary, &entry).map_err(EntryError::Write)?;
    std::fs::rename(&temporary, path).map_err(|e| {
        let _ = std::fs::remove_file(&temporary);
        EntryError::Write(e)
    })
}

/// A path beside `path` that no other write of this process uses: two loads
/// of one file may store at the same time.
pub(crate) fn unique_sibling(path: &Path, what: &str) -> PathBuf {
    static WRITES: AtomicU64 = AtomicU64::new(0);
    path.with_extension(format!(
        "{what}-{}-{}",
        std::process::id(),
        WRITES.fetch_add(1, Ordering::Relaxed)
    ))
}

/// Checks an entry's framing and checksum, then hands the payload to wasmtime.
pub(crate) fn open_entry(engine: &PluginEngine, entry: &[u8]) -> Result<Component, EntryError> {
    let Some(rest) = entry.strip_prefix(MAGIC.as_slice()) else {
        return Err(EntryError::BadMagic);
    };
    if rest.len() < CHECKSUM_BYTES {
        return Err(EntryError::Truncated);
    }
    let (checksum, payload) = rest.split_at(CHECKSUM_BYTES);
    if Sha256::digest(payload).as_slice() != checksum {
        return Err(EntryError::Checksum);
    }
    #[allow(unsafe_code)]
    // SAFETY: `Component::deserialize` runs the native code it is given, so
    // the bytes must come from `Component::serialize` of a compatible engine.
    // They do: the entry was written by `store` above for this engine's
    // compatibility hash (part of the file name), and the checksum just
    // verified shows it is unchanged since. wasmtime itself still checks the
    // header (version, target, configuration) and refuses a mismatch.
    let component = unsafe { Component::deserialize(engine.engine(), payload) };
    component.map_err(|e| EntryError::Refused(one_line(&e)))
}

/// A short stable name for the engine's configuration: 16 hex digits of the
/// sha256 of wasmtime's compatibility hash.
fn engine_key(engine: &PluginEngine) -> String {
    let mut hasher = Sha256Hasher::default();
    engine
        .engine()
        .precompile_compatibility_hash()
        .hash(&mut hasher);
    hasher.0.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A `Hasher` that feeds everything into sha256, so the key is stable across
/// processes (std's hashers are not promised to be).
#[derive(Default)]
struct Sha256Hasher(Sha256);

impl Hasher for Sha256Hasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    fn finish(&self) -> u64 {
        let digest = self.0.clone().finalize();
        u64::from_le_bytes(digest[..8].try_into().expect("sha256 has 32 bytes"))
    }
}

/// `$XDG_CACHE_HOME`, else `$HOME/.cache`.
pub fn cache_home() -> Option<PathBuf> {
    std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|home| PathBuf::from(home).join(".cache"))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_the_cap_the_least_recently_used_entries_go_first() {
        let dir = crate::scratch::ScratchDir::new("evict").unwrap();
        let engine = PluginEngine::new(Default::default()).unwrap();
        let cache = ArtifactCache::open(&dir, &engine)
            .unwrap()
            .with_max_bytes(250);
        let now = std::time::SystemTime::now();
        // Four entries of 100 bytes, the oldest first; `a`, the one just
        // compiled, stays although it is the oldest.
        for (age, name) in [(40, "a"), (30, "b"), (20, "c"), (10, "d")] {
            let path = dir.join(format!("{name}.cwasm"));
            std::fs::write(&path, [0u8; 100]).unwrap();
            let file = std::fs::File::options().write(true).open(&path).unwrap();
            file.set_modified(now - Duration::from_secs(age)).unwrap();
        }
        std::fs::write(dir.join("notes.txt"), [0u8; 1000]).unwrap();
        assert_eq!(cache.evict(&dir.join("a.cwasm")), 2);
        let mut left: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["a.cwasm", "d.cwasm", "notes.txt"]);
        assert_eq!(cache.evict(&dir.join("a.cwasm")), 0, "under the cap now");
    }

    #[test]
    fn engines_of_one_configuration_share_a_key_of_sixteen_hex_digits() {
        let engine = PluginEngine::new(Default::default()).unwrap();
        let again = PluginEngine::new(Default::default()).unwrap();
        let key = engine_key(&engine);
        assert_eq!(key, engine_key(&again));
        assert_eq!(key.len(), 16);
        assert!(key.bytes().all(|b| b.is_ascii_hexdigit()), "{key}");
    }

    #[test]
    fn entries_with_bad_framing_are_refused_before_wasmtime_sees_them() {
        let engine = PluginEngine::new(Default::default()).unwrap();
        let refuse = |entry: &[u8]| open_entry(&engine, entry).unwrap_err().to_string();
        assert!(refuse(b"garbage").contains("bad magic"));
        assert!(refuse(b"HRLDART1short").contains("truncated"));
        let mut entry = MAGIC.to_vec();
        entry.extend_from_slice(&[0u8; CHECKSUM_BYTES]);
        entry.extend_from_slice(b"payload");
        assert!(refuse(&entry).contains("checksum mismatch"));
        let mut entry = MAGIC.to_vec();
        entry.extend_from_slice(&Sha256::digest(b"payload"));
        entry.extend_from_slice(b"payload");
        assert!(refuse(&entry).contains("refused by wasmtime"));
    }
}
