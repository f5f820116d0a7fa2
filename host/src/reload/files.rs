//! `pluginFiles`: what the plugin directory accepts (size, allow-list,
//! sidecar grants), how long a compile may take, and the artifact cache.

use serde::Deserialize;
use std::path::PathBuf;
use std::time::Duration;

/// `pluginFiles`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct PluginFilesConfig {
    /// Largest plugin file accepted.
    #[serde(with = "crate::units::quantity")]
    pub max_size: u64,
    /// If set, only files whose sha256 (lowercase hex) is listed are loaded.
    pub allowed_sha256: Option<Vec<String>>,
    /// The compiled-artifact cache.
    pub artifact_cache: ArtifactCacheConfig,
    /// How long compiling one plugin may take (in its child process).
    #[serde(with = "crate::units::duration")]
    pub compile_timeout: Duration,
    /// Whether a plugin's sidecar may grant it capabilities and writes (for
    /// what its `plugins.<name>` entry leaves unset). Off by default, so
    /// whoever can write the plugin directory cannot grant authority; turn
    /// it on when the directory is the operator's alone (e.g. a ConfigMap
    /// the operator manages).
    pub sidecar_grants: bool,
    /// Public keys (PEM, ECDSA P-256, as `cosign generate-key-pair` writes
    /// `cosign.pub`) whose signature (`<file>.sig`, as `cosign sign-blob`
    /// writes it) lets a plugin granted writes, HTTP, Events or a sensitive
    /// read load without a sha256 pin (see [`super::trust`]).
    pub public_keys: Vec<PathBuf>,
}

/// `pluginFiles.artifactCache`: compiled plugins kept on disk, so restarts
/// and reloads of known files skip compilation.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct ArtifactCacheConfig {
    /// Use the cache.
    pub enabled: bool,
    /// Its directory; unset: `$XDG_CACHE_HOME/herald/artifacts`, else
    /// `$HOME/.cache/herald/artifacts` (none if neither is set).
    pub dir: Option<PathBuf>,
    /// Most bytes of entries kept: past it, the least recently used entries
    /// go after each compile (a Python or JavaScript plugin's entry is about
    /// 35 MiB, a Rust one's well under 1 MiB).
    #[serde(with = "crate::units::quantity")]
    pub max_size: u64,
}

impl Default for ArtifactCacheConfig {
    fn default() -> Self {
        ArtifactCacheConfig {
            enabled: true,
            dir: None,
            max_size: crate::plugin::DEFAULT_ARTIFACT_CACHE_BYTES,
        }
    }
}

impl ArtifactCacheConfig {
    /// The directory to use, if the cache is enabled and one is known.
    pub fn directory(&self) -> Option<PathBuf> {
        if !self.enabled {
            return None;
        }
        if let Some(dir) = &self.dir {
            return Some(dir.clone());
        }
        Some(
            crate::plugin::cache_home()?
                .join("herald")
                .join("artifacts"),
        )
    }
}

impl Default for PluginFilesConfig {
    fn default() -> Self {
        PluginFilesConfig {
            max_size: crate::plugin::DEFAULT_MAX_FILE_BYTES,
            allowed_sha256: None,
            artifact_cache: ArtifactCacheConfig::default(),
            compile_timeout: crate::plugin::DEFAULT_COMPILE_TIMEOUT,
            sidecar_grants: false,
            public_keys: Vec::new(),
        }
    }
}

impl PluginFilesConfig {
    /// Checks the bounds and the allow-list; the key at fault is relative
    /// to `pluginFiles`.
    pub fn validate(&self) -> Result<(), crate::yaml::Invalid> {
        if self.compile_timeout < Duration::from_secs(1) {
            return Err(crate::yaml::Invalid::new(
                "compileTimeout",
                "must be at least 1s: large plugins take seconds to compile",
            ));
        }
        if self.max_size == 0 {
            return Err(crate::yaml::Invalid::new("maxSize", "must be above zero"));
        }
        if let Some(allowed) = &self.allowed_sha256 {
            super::settings::check_digests("allowedSha256", allowed)?;
        }
        for (index, path) in self.public_keys.iter().enumerate() {
            super::trust::read_public_key(path).map_err(|problem| {
                crate::yaml::Invalid::new(format!("publicKeys[{index}]"), problem.to_string())
            })?;
        }
        Ok(())
    }
}
