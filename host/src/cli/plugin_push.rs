//! `herald plugin push FILE.wasm REF`: publishes a plugin as an OCI
//! artifact (the CNCF Wasm layout, see [`crate::oci`]), after checking it is
//! a plugin Herald loads.

use super::fail;
use crate::capability::Grants;
use crate::oci::{ComponentInfo, PluginArtifact, Registry, RegistryOptions};
use crate::plugin::{EngineSettings, LoadOptions, LoadedPlugin, PluginEngine};
use clap::Args;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `plugin push`.
#[derive(Debug, Args)]
pub struct PushArgs {
    /// The plugin's `.wasm` component file.
    pub file: PathBuf,
    /// Where to publish it: `[oci://]registry/repository:tag`.
    pub reference: String,
    /// Talk plain HTTP to the registry (a registry on loopback or a lab
    /// network), not HTTPS.
    #[arg(long)]
    pub plain_http: bool,
    /// A Docker `config.json` with credentials for the registry; default:
    /// `$DOCKER_CONFIG/config.json` or `~/.docker/config.json` if present.
    #[arg(long)]
    pub docker_config: Option<PathBuf>,
    /// Largest plugin file accepted, in bytes.
    #[arg(long, default_value_t = crate::plugin::DEFAULT_MAX_FILE_BYTES)]
    pub max_file_bytes: u64,
}

/// Checks the plugin, lays it out and pushes it; prints the reference
/// pinned by digest, the one to put in `pluginSources` for a fixed version.
pub fn push(args: PushArgs) -> ExitCode {
    let bytes = match std::fs::read(&args.file) {
        Ok(bytes) => bytes,
        Err(e) => return fail(format_args!("{}: cannot read: {e}", args.file.display())),
    };
    let settings = EngineSettings {
        max_file_bytes: args.max_file_bytes,
        ..EngineSettings::default()
    };
    let engine = match PluginEngine::new(settings) {
        Ok(engine) => engine,
        Err(e) => return fail(e),
    };
    let options = LoadOptions {
        grants: Grants::all_declared(),
        ..LoadOptions::default()
    };
    let plugin = match LoadedPlugin::load(&engine, &bytes, options) {
        Ok(plugin) => plugin,
        Err(e) => return fail(format_args!("{}: not pushed: {e}", args.file.display())),
    };
    let info = component_info(&engine, &plugin);
    let manifest = plugin.manifest();
    let annotations = BTreeMap::from([
        (
            "org.opencontainers.image.title".to_owned(),
            manifest.name.clone(),
        ),
        (
            "org.opencontainers.image.version".to_owned(),
            manifest.version.clone(),
        ),
    ]);
    let created = crate::units::time::format(std::time::SystemTime::now());
    let artifact = PluginArtifact::new(bytes, info, created, annotations);
    let options = RegistryOptions {
        plain_http: args.plain_http,
        docker_config: args
            .docker_config
            .clone()
            .or_else(crate::oci::default_docker_config),
        ..RegistryOptions::default()
    };
    let registry = match Registry::new(&args.reference, &options) {
        Ok(registry) => registry,
        Err(e) => return fail(e),
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => return fail(format_args!("cannot start the async runtime: {e}")),
    };
    match runtime.block_on(registry.push(&artifact)) {
        Ok(pushed) => {
            let reference = registry.reference();
            let repository = format!("{}/{}", reference.registry(), reference.repository());
            println!(
                "pushed {} {} to {}",
                manifest.name, manifest.version, args.reference
            );
            println!("  manifest  {}", pushed.manifest_digest);
            println!("  layer     {} (the file's sha256)", pushed.layer_digest);
            println!("  pinned    {repository}@{}", pushed.manifest_digest);
            ExitCode::SUCCESS
        }
        Err(e) => fail(format_args!("{}: not pushed: {e}", args.reference)),
    }
}

/// The component's imported and exported interfaces, and its world.
fn component_info(engine: &PluginEngine, plugin: &LoadedPlugin) -> ComponentInfo {
    let ty = plugin.component().component_type();
    let names = |items: Box<dyn Iterator<Item = String> + '_>| {
        let mut names: Vec<String> = items.collect();
        names.sort();
        names
    };
    ComponentInfo {
        imports: names(Box::new(
            ty.imports(engine.engine()).map(|(n, _)| n.to_owned()),
        )),
        exports: names(Box::new(
            ty.exports(engine.engine()).map(|(n, _)| n.to_owned()),
        )),
        target: Some(plugin.world()),
    }
}
