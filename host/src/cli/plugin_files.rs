//! Plugin files as the one-shot commands read them: the engine they load
//! with, the files' bytes, their manifests with everything they declare
//! granted, and what resolves their kinds to resources. Shared by `plugin
//! check`, `replay`, `rbac` and `webhooks`.

use super::fail;
use crate::capability::Grants;
use crate::plugin::{
    ArtifactCache, EngineSettings, LoadOptions, LoadedPlugin, Manifest, PluginEngine,
};
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The engine of a one-shot command, with a worker pool of one thread: a
/// plugin's calls are made one at a time anyway, and with one thread what
/// its concurrent host calls do (replay's scripted HTTP answers, handed out
/// in the order requests arrive) happens in the same order at every run.
pub(super) fn engine(settings: EngineSettings) -> Result<PluginEngine, ExitCode> {
    PluginEngine::new(EngineSettings {
        workers: 1,
        ..settings
    })
    .map_err(fail)
}

pub(super) fn read(path: &Path) -> Result<Vec<u8>, ExitCode> {
    std::fs::read(path).map_err(|e| fail(format_args!("{}: cannot read: {e}", path.display())))
}

/// The manifests of the plugin `files`, loaded with everything they
/// declare granted (what they ask for, not what an operator gives them)
/// and, when `config` names the daemon's configuration file, each with the
/// configuration its entry there gives it (`plugins.<name>.config`), as the
/// daemon loads it: a plugin may subscribe, write or admit according to
/// its configuration.
pub(super) fn manifests_of(
    files: &[PathBuf],
    config: Option<&Path>,
) -> Result<Vec<Manifest>, ExitCode> {
    let config = config
        .map(crate::config::Config::load)
        .transpose()
        .map_err(fail)?;
    let engine = engine(EngineSettings::default())?;
    let mut manifests = Vec::new();
    for file in files {
        let bytes = read(file)?;
        let at_fault =
            |err: crate::plugin::LoadError| fail(format_args!("{}: {err}", file.display()));
        // Its name, read without configuration, then the rest with the
        // configuration keyed to it, as the daemon loads it (a name that
        // changes with it is refused the same way).
        let (identified, _) =
            LoadedPlugin::identify(&engine, None, &bytes, &LoadOptions::default())
                .map_err(at_fault)?;
        let config = config
            .as_ref()
            .and_then(|c| c.plugins.get(identified.name()))
            .and_then(|entry| entry.config.as_ref())
            .map(ToString::to_string);
        let options = LoadOptions {
            grants: Grants::all_declared(),
            config,
            ..LoadOptions::default()
        };
        let plugin = identified.configure(options).map_err(at_fault)?;
        manifests.push(plugin.manifest().clone());
    }
    Ok(manifests)
}

/// What resolves kinds to resources: k8s-openapi's built-in kinds, or the
/// discovery of the cluster `kubeconfig` (and `context`) names.
pub(super) async fn kind_resolver(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
) -> Result<crate::discovery::KindResolver, crate::source::SourceError> {
    let Some(path) = kubeconfig else {
        return Ok(crate::discovery::KindResolver::Builtin);
    };
    let source = crate::source::Source::Kubeconfig {
        path: Some(path.to_owned()),
        context: context.map(str::to_owned),
    };
    let connection = source.connect().await?;
    Ok(crate::discovery::KindResolver::Discovery(
        crate::discovery::Resolver::new(connection.client),
    ))
}

/// The compiled-artifact cache of a one-shot command: the daemon's (the
/// same default directory), so a file checked or replayed once, or already
/// loaded by a daemon of this user, is not compiled again.
#[derive(Debug, Args)]
pub struct CacheArgs {
    /// The cache's directory (default: `$XDG_CACHE_HOME/herald/artifacts`,
    /// else `$HOME/.cache/herald/artifacts`, as the daemon's
    /// `pluginFiles.artifactCache.dir`).
    #[arg(long, value_name = "DIR")]
    pub artifact_cache: Option<PathBuf>,
    /// Compile every time; use no cache.
    #[arg(long, conflicts_with = "artifact_cache")]
    pub no_artifact_cache: bool,
}

impl CacheArgs {
    /// The cache, if there is to be one and it opens; one that does not
    /// open is said on stderr, and the command compiles instead.
    pub(super) fn open(&self, engine: &PluginEngine) -> Option<ArtifactCache> {
        let config = crate::reload::ArtifactCacheConfig {
            enabled: !self.no_artifact_cache,
            dir: self.artifact_cache.clone(),
            ..Default::default()
        };
        let dir = config.directory()?;
        match ArtifactCache::open(&dir, engine) {
            Ok(cache) => Some(cache.with_max_bytes(config.max_size)),
            Err(err) => {
                eprintln!("note: {err}: compiling without the artifact cache");
                None
            }
        }
    }
}
