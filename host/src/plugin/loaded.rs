//! A plugin that has been compiled, linked, asked for its manifest and
//! validated: ready to be instantiated by its worker.

use super::artifacts::{ArtifactCache, CompileOutcome};
use super::bindings::PluginPre;
use super::engine::{PluginEngine, check_header, one_line};
use super::error::{CallError, LoadError};
use super::host::{HostState, PluginContext};
use super::instance::classify;
use super::limits::{LimitError, LimitPolicy, Limits};
use super::logging::{LogRate, LogSink, PluginLogger, TracingSink};
use super::lookup::CacheScope;
use super::manifest::{Manifest, ManifestError, RequestedLimits};
use sha2::{Digest, Sha256};
use std::sync::Arc;
use wasmtime::component::Component;

/// Capabilities this host can grant. Version 0.1.0 of the world defines no
/// import that acts on the cluster, so there are none yet; a plugin asking for
/// any capability is refused with a message saying so.
pub const KNOWN_CAPABILITIES: &[&str] = &[];

/// What the operator decides about one plugin when it is loaded.
#[derive(Clone)]
pub struct LoadOptions {
    /// The plugin's configuration (JSON text) for its `config` import.
    pub config: Option<String>,
    /// Where its log lines go.
    pub sink: Arc<dyn LogSink>,
    /// Its log rate limit.
    pub log_rate: LogRate,
    /// Defaults and maxima for its limits.
    pub policy: LimitPolicy,
    /// Operator overrides of its limits (within the maxima).
    pub overrides: RequestedLimits,
    /// Capabilities the operator granted it.
    pub grants: Vec<String>,
    /// If set, only files with one of these sha256 digests (lowercase hex) load.
    pub allowed_digests: Option<Arc<[String]>>,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            config: None,
            sink: Arc::new(TracingSink),
            log_rate: LogRate::default(),
            policy: LimitPolicy::default(),
            overrides: RequestedLimits::default(),
            grants: Vec::new(),
            allowed_digests: None,
        }
    }
}

impl std::fmt::Debug for LoadOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadOptions")
            .field("config", &self.config)
            .field("policy", &self.policy)
            .field("overrides", &self.overrides)
            .field("grants", &self.grants)
            .finish()
    }
}

/// A compiled, validated plugin. Cheap to clone; instances are made from it.
#[derive(Clone)]
pub struct LoadedPlugin {
    inner: Arc<Inner>,
}

struct Inner {
    engine: PluginEngine,
    component: Component,
    pre: PluginPre<HostState>,
    manifest: Manifest,
    limits: Limits,
    context: Arc<PluginContext>,
    digest: String,
}

impl std::fmt::Debug for LoadedPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedPlugin")
            .field("name", &self.inner.manifest.name)
            .field("version", &self.inner.manifest.version)
            .field("digest", &self.inner.digest)
            .finish()
    }
}

/// The sha256 of a plugin file, as lowercase hex.
pub fn digest(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The short form of a file digest used to tell versions apart in logs and
/// status: its first 12 hex digits.
pub fn revision(digest: &str) -> &str {
    &digest[..digest.len().min(12)]
}

impl LoadedPlugin {
    /// Compiles `bytes` and loads the result. Slow: run it off the dispatch path.
    pub fn load(
        engine: &PluginEngine,
        bytes: &[u8],
        options: LoadOptions,
    ) -> Result<Self, LoadError> {
        Self::load_cached(engine, None, bytes, options).map(|(plugin, _)| plugin)
    }

    /// Loads `bytes`, taking the compiled component from `cache` when it has
    /// it (and storing it there when not). Says how the component was
    /// obtained. Slow on a miss: run it off the dispatch path.
    pub fn load_cached(
        engine: &PluginEngine,
        cache: Option<&ArtifactCache>,
        bytes: &[u8],
        options: LoadOptions,
    ) -> Result<(Self, CompileOutcome), LoadError> {
        let digest = digest(bytes);
        if let Some(allowed) = &options.allowed_digests
            && !allowed.contains(&digest)
        {
            return Err(LoadError::NotAllowed(digest));
        }
        let (component, outcome) = match cache {
            Some(cache) => {
                check_header(bytes, engine.settings().max_file_bytes)?;
                cache.load_or_compile(engine, bytes, &digest)?
            }
            None => {
                let started = std::time::Instant::now();
                let component = super::compiler::compile(engine, bytes, None)?;
                (component, CompileOutcome::Compiled(started.elapsed()))
            }
        };
        let plugin = Self::from_component(engine, component, digest, options)?;
        Ok((plugin, outcome))
    }

    /// Loads an already compiled component whose file had sha256 `digest`.
    pub fn from_component(
        engine: &PluginEngine,
        component: Component,
        digest: String,
        options: LoadOptions,
    ) -> Result<Self, LoadError> {
        let pre = engine.pre_instantiate(&component)?;
        let manifest = read_manifest(engine, &pre, &options)?;
        let limits = options
            .policy
            .resolve(manifest.limits, options.overrides)
            .map_err(|e| limit_error(&manifest, e))?;
        check_capabilities(&manifest, &options.grants)?;
        let logger = Arc::new(PluginLogger::new(
            manifest.name.as_str().into(),
            revision(&digest).into(),
            options.sink.clone(),
            options.log_rate,
        ));
        let context = Arc::new(PluginContext {
            logger,
            cache: Arc::new(CacheScope::default()),
            config: options.config,
        });
        Ok(LoadedPlugin {
            inner: Arc::new(Inner {
                engine: engine.clone(),
                component,
                pre,
                manifest,
                limits,
                context,
                digest,
            }),
        })
    }

    /// The validated manifest.
    pub fn manifest(&self) -> &Manifest {
        &self.inner.manifest
    }

    /// The plugin's name (from its manifest).
    pub fn name(&self) -> &str {
        &self.inner.manifest.name
    }

    /// The limits its instances run under.
    pub fn limits(&self) -> Limits {
        self.inner.limits
    }

    /// sha256 of the file it was loaded from.
    pub fn digest(&self) -> &str {
        &self.inner.digest
    }

    /// The short digest ([`revision`]) its log lines carry.
    pub fn revision(&self) -> &str {
        revision(&self.inner.digest)
    }

    /// The compiled component (for the artifact cache).
    pub fn component(&self) -> &Component {
        &self.inner.component
    }

    /// Its logger, cache scope and configuration.
    pub fn context(&self) -> &Arc<PluginContext> {
        &self.inner.context
    }

    /// Its cache look-up scope, to bind to informer stores.
    pub fn cache_scope(&self) -> &Arc<CacheScope> {
        &self.inner.context.cache
    }

    pub(crate) fn engine(&self) -> &PluginEngine {
        &self.inner.engine
    }

    pub(crate) fn pre(&self) -> &PluginPre<HostState> {
        &self.inner.pre
    }
}

/// Asks a throw-away instance for the manifest, under the default limits.
fn read_manifest(
    engine: &PluginEngine,
    pre: &PluginPre<HostState>,
    options: &LoadOptions,
) -> Result<Manifest, LoadError> {
    let logger = Arc::new(PluginLogger::new(
        "(loading)".into(),
        "-".into(),
        options.sink.clone(),
        options.log_rate,
    ));
    let context = Arc::new(PluginContext {
        logger,
        cache: Arc::new(CacheScope::default()),
        config: options.config.clone(),
    });
    let mut store = new_store_with(engine, context, options.policy.default);
    let bindings = pre
        .instantiate(&mut store)
        .map_err(|e| CallError::Instantiate(one_line(&e)))?;
    store.set_epoch_deadline(PluginEngine::deadline_ticks(
        options.policy.default.call_deadline,
    ));
    let raw = bindings.call_manifest(&mut store).map_err(|trap| {
        let memory_hit = store.data().limiter.memory_limit_hit;
        classify(&trap, memory_hit, options.policy.default.call_deadline)
    })?;
    store.data().finish_output();
    Ok(Manifest::from_guest(raw)?)
}

/// A store for one instance, limited by `limits`, with deadline traps armed.
pub(crate) fn new_store_with(
    engine: &PluginEngine,
    context: Arc<PluginContext>,
    limits: Limits,
) -> wasmtime::Store<HostState> {
    let limiter = super::limits::InstanceLimiter::new(&limits);
    let mut store = wasmtime::Store::new(engine.engine(), HostState::new(context, limiter));
    store.limiter(|state| &mut state.limiter);
    store.epoch_deadline_trap();
    // Instantiation runs guest code (start functions) too: give it the call deadline.
    store.set_epoch_deadline(PluginEngine::deadline_ticks(limits.call_deadline));
    store
}

fn limit_error(manifest: &Manifest, err: LimitError) -> LoadError {
    LoadError::Manifest(ManifestError::Limit {
        plugin: manifest.name.clone(),
        reason: err.to_string(),
    })
}

fn check_capabilities(manifest: &Manifest, grants: &[String]) -> Result<(), LoadError> {
    for capability in &manifest.capabilities {
        if !KNOWN_CAPABILITIES.contains(&capability.as_str()) {
            return Err(LoadError::Manifest(ManifestError::UnknownCapability(
                capability.clone(),
            )));
        }
        if !grants.contains(capability) {
            return Err(LoadError::Manifest(ManifestError::NotGranted {
                plugin: manifest.name.clone(),
                capability: capability.clone(),
            }));
        }
    }
    Ok(())
}
