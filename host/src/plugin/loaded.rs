//! A plugin that has been compiled, linked, asked for its manifest and
//! validated: ready to be instantiated by its worker.

use super::artifacts::{ArtifactCache, CompileOutcome};
use super::deadline::{DeadlinePassed, run_until};
use super::engine::{PluginEngine, check_header, one_line};
use super::error::{CallError, LoadError};
use super::instance::classify;
use super::limits::{IdlePolicy, LimitError, LimitPolicy, Limits};
use super::manifest::{Manifest, ManifestError, RequestedLimits};
use super::state::{HostState, granted_nothing};
use super::world::PluginPre;
use crate::capability::cache::CacheScope;
use crate::capability::log::{LogRate, LogSink, PluginLogger, TracingSink};
use crate::capability::metrics::{DEFAULT_MAX_SERIES, MetricDefinition, PluginMetricsRegistry};
use crate::capability::{ClusterAccess, Declared, Grants, PluginCapabilities, Setup};
use sha2::{Digest, Sha256};
use std::sync::Arc;
use std::time::Instant;
use wasmtime::component::Component;

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
    /// What the operator granted it: capabilities, write rules, mode, rate.
    pub grants: Grants,
    /// How its calls reach the cluster; `None` offline (every call then
    /// answers `unavailable`).
    pub access: Option<ClusterAccess>,
    /// If set, only files with one of these sha256 digests (lowercase hex) load.
    pub allowed_digests: Option<Arc<[String]>>,
    /// The host-wide registry its metrics are registered with (the
    /// daemon's, [`Daemon::plugin_metrics`](crate::daemon::Daemon::plugin_metrics));
    /// `None`: a registry of its own, exported nowhere (the offline tools:
    /// its definitions are still checked).
    pub metrics: Option<PluginMetricsRegistry>,
    /// Most series its metrics may have together.
    pub max_metric_series: usize,
    /// When its idle instance is dropped.
    pub idle: IdlePolicy,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            config: None,
            sink: Arc::new(TracingSink),
            log_rate: LogRate::default(),
            policy: LimitPolicy::default(),
            overrides: RequestedLimits::default(),
            grants: Grants::default(),
            access: None,
            allowed_digests: None,
            metrics: None,
            max_metric_series: DEFAULT_MAX_SERIES,
            idle: IdlePolicy::default(),
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
            .field("max_metric_series", &self.max_metric_series)
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
    pre: PluginPre,
    manifest: Manifest,
    limits: Limits,
    idle: IdlePolicy,
    context: Arc<PluginCapabilities>,
    /// The context of its admission calls (reads only); `None` when it
    /// admits nothing.
    admission_context: Option<Arc<PluginCapabilities>>,
    /// Whether its admission decisions are enforced or audited.
    admission_mode: crate::capability::AdmissionMode,
    /// Where the operator runs it.
    clusters: crate::cluster::Clusters,
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
        let (component, digest, outcome) = compile_cached(engine, cache, bytes, &options)?;
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
        let manifest = read_manifest(engine, &pre, &options, options.config.clone())?;
        build(engine.clone(), component, pre, manifest, digest, options)
    }

    /// Compiles `bytes` (or takes them from `cache`) and asks the plugin who
    /// it is, giving it no configuration: the first half of a load whose
    /// configuration and grants are keyed by the plugin's identity (see
    /// [`Identified::configure`]). `options` supplies the limit policy, log
    /// sink and allow-list; its per-plugin settings are not used.
    pub fn identify(
        engine: &PluginEngine,
        cache: Option<&ArtifactCache>,
        bytes: &[u8],
        options: &LoadOptions,
    ) -> Result<(Identified, CompileOutcome), LoadError> {
        let (component, digest, outcome) = compile_cached(engine, cache, bytes, options)?;
        let pre = engine.pre_instantiate(&component)?;
        let manifest = read_manifest(engine, &pre, options, None)?;
        let identified = Identified {
            engine: engine.clone(),
            component,
            pre,
            manifest,
            digest,
        };
        Ok((identified, outcome))
    }

    /// The world the plugin was built against, e.g. `herald:plugin/plugin@0.2.0`.
    pub fn world(&self) -> String {
        crate::wit::world(self.inner.pre.version())
    }

    /// Whether it imports `cluster` (world 0.6.0), and so may run beyond the
    /// default cluster.
    pub fn knows_clusters(&self) -> bool {
        self.inner.pre.knows_clusters()
    }

    /// Where the operator runs it (`plugins.<name>.clusters`).
    pub fn clusters(&self) -> &crate::cluster::Clusters {
        &self.inner.clusters
    }

    /// Its Kubernetes API access: its declared (and granted) rules, mode
    /// and rate limit.
    pub fn kube(&self) -> &Arc<crate::capability::kube::KubeAccess> {
        &self.inner.context.kube
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

    /// When its idle instance is dropped.
    pub fn idle_policy(&self) -> IdlePolicy {
        self.inner.idle
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
    pub fn context(&self) -> &Arc<PluginCapabilities> {
        &self.inner.context
    }

    /// What its admission calls act for: its reads, no side effects; `None`
    /// when it admits nothing.
    pub fn admission_context(&self) -> Option<&Arc<PluginCapabilities>> {
        self.inner.admission_context.as_ref()
    }

    /// Whether `other` is this very version (the same load, not only the
    /// same file).
    pub fn same_version(&self, other: &LoadedPlugin) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Whether its admission decisions are enforced or audited
    /// (`plugins.<name>.admission`).
    pub fn admission_mode(&self) -> crate::capability::AdmissionMode {
        self.inner.admission_mode
    }

    /// Its cache look-up scope, to bind to informer stores.
    pub fn cache_scope(&self) -> &Arc<CacheScope> {
        &self.inner.context.cache
    }

    pub(crate) fn engine(&self) -> &PluginEngine {
        &self.inner.engine
    }

    pub(crate) fn pre(&self) -> &PluginPre {
        &self.inner.pre
    }
}

/// Asks a throw-away instance for the manifest, under the default limits,
/// handing it `config` (none while the plugin's identity is not yet known).
fn read_manifest(
    engine: &PluginEngine,
    pre: &PluginPre,
    options: &LoadOptions,
    config: Option<String>,
) -> Result<Manifest, LoadError> {
    let logger = Arc::new(PluginLogger::new(
        "(loading)".into(),
        "-".into(),
        options.sink.clone(),
        options.log_rate,
    ));
    let context = granted_nothing(logger, config.as_deref());
    let limits = options.policy.default;
    let mut store = new_store_with(engine, context, limits);
    let deadline = Instant::now() + limits.call_deadline;
    store.data_mut().deadline = Some(deadline);
    let outcome = run_until(engine.pool(), deadline, async {
        let bindings = pre
            .instantiate_async(&mut store)
            .await
            .map_err(|e| CallError::Instantiate(one_line(&e)))?;
        let manifest = match bindings.call_manifest(&mut store).await {
            Ok(manifest) => manifest,
            Err(trap) => return Ok(Err(trap)),
        };
        let max_batch = bindings.max_batch();
        Ok::<_, CallError>(
            bindings
                .call_declare(&mut store)
                .await
                .map(|declared| (manifest, declared, max_batch)),
        )
    });
    let (raw, declared, max_batch) = match outcome {
        Ok(Ok(Ok(answers))) => answers,
        Ok(Ok(Err(trap))) => {
            let memory_hit = store.data().limiter.memory_limit_hit;
            return Err(classify(&trap, memory_hit, limits.call_deadline).into());
        }
        Ok(Err(instantiate)) => return Err(instantiate.into()),
        Err(DeadlinePassed) => return Err(CallError::deadline(limits.call_deadline).into()),
    };
    store.data().finish_output();
    Ok(Manifest {
        max_batch,
        ..Manifest::from_guest(raw, declared)?
    })
}

/// Compiles `bytes`, or takes the component from `cache`, once the file's
/// digest has passed the operator's allow-list.
fn compile_cached(
    engine: &PluginEngine,
    cache: Option<&ArtifactCache>,
    bytes: &[u8],
    options: &LoadOptions,
) -> Result<(Component, String, CompileOutcome), LoadError> {
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
            let started = Instant::now();
            let component = super::compiler::compile(engine, bytes, None)?;
            (component, CompileOutcome::Compiled(started.elapsed()))
        }
    };
    Ok((component, digest, outcome))
}

/// The loaded plugin from its validated manifest: limits resolved, grants
/// checked, configuration and logger attached.
fn build(
    engine: PluginEngine,
    component: Component,
    pre: PluginPre,
    manifest: Manifest,
    digest: String,
    options: LoadOptions,
) -> Result<LoadedPlugin, LoadError> {
    let limits = options
        .policy
        .resolve(manifest.limits, options.overrides)
        .map_err(|e| limit_error(&manifest, e))?;
    let clusters = &options.grants.clusters;
    if !clusters.is_default_only() && !pre.knows_clusters() {
        return Err(LoadError::ClustersUnknown {
            plugin: manifest.name.clone(),
            clusters: clusters.to_string(),
            world: pre.version(),
        });
    }
    let reads = manifest.reads();
    let declared = Declared {
        plugin: &manifest.name,
        capabilities: &manifest.capabilities,
        writes: &manifest.writes,
        reads: &reads,
    };
    let audit = Arc::new(crate::capability::AuditLog::new(
        &manifest.name,
        options.log_rate,
        options
            .access
            .as_ref()
            .map(|access| access.stats.audit.clone()),
    ));
    let authorized = options
        .grants
        .authorize(declared, options.access.clone(), audit.clone())
        .map_err(|e| LoadError::Manifest(ManifestError::NotGranted(e)))?;
    // Checked and made here, exported once the daemon starts this version.
    let metrics = options
        .metrics
        .clone()
        .unwrap_or_default()
        .register(
            &manifest.name,
            metric_definitions(&manifest),
            options.max_metric_series,
        )
        // As text: `ManifestError` is `Eq`, and a refused bucket bound is an `f64`.
        .map_err(|e| LoadError::Manifest(ManifestError::Metrics(e.to_string())))?;
    let logger = Arc::new(PluginLogger::new(
        manifest.name.as_str().into(),
        revision(&digest).into(),
        options.sink.clone(),
        options.log_rate,
    ));
    let cache = Arc::new(CacheScope::new(manifest.indexes.clone()));
    let admission_context = match &manifest.admission {
        Some(_) => {
            let reads_only = options
                .grants
                .authorize_reads_only(
                    declared,
                    options.access.clone(),
                    audit.clone(),
                    ADMISSION_HAS_NO_SIDE_EFFECTS,
                )
                .map_err(|e| LoadError::Manifest(ManifestError::NotGranted(e)))?;
            Some(Arc::new(PluginCapabilities::prepare(&Setup {
                logger: &logger,
                cache: &cache,
                config: options.config.as_deref(),
                metrics: &metrics,
                authorized: &reads_only,
            })))
        }
        None => None,
    };
    let context = Arc::new(PluginCapabilities::prepare(&Setup {
        logger: &logger,
        cache: &cache,
        config: options.config.as_deref(),
        metrics: &metrics,
        authorized: &authorized,
    }));
    Ok(LoadedPlugin {
        inner: Arc::new(Inner {
            engine,
            component,
            pre,
            manifest,
            limits,
            idle: options.idle,
            context,
            admission_context,
            admission_mode: options.grants.admission,
            clusters: options.grants.clusters.clone(),
            digest,
        }),
    })
}

/// The metrics `manifest` defines: its `metrics` since world 0.3.0, none
/// for an older plugin (whose manifest the runtime reads with no metrics).
fn metric_definitions(manifest: &Manifest) -> &[MetricDefinition] {
    &manifest.metrics
}

/// Why an admission call's writes, Events and HTTP are refused.
const ADMISSION_HAS_NO_SIDE_EFFECTS: &str = "an admission call has no side effects (a review may be a \
     dry run, and the API server may ask more than once): write from a handler instead";

/// A plugin compiled and asked who it is, without its configuration: see
/// [`LoadedPlugin::identify`].
pub struct Identified {
    engine: PluginEngine,
    component: Component,
    pre: PluginPre,
    manifest: Manifest,
    digest: String,
}

impl std::fmt::Debug for Identified {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Identified")
            .field("name", &self.manifest.name)
            .field("digest", &self.digest)
            .finish()
    }
}

impl Identified {
    /// The name the plugin gives itself: its identity.
    pub fn name(&self) -> &str {
        &self.manifest.name
    }

    /// sha256 of its file.
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// Finishes the load with the settings the operator keyed to this
    /// identity. A plugin given configuration is asked for its manifest again
    /// with it (a manifest may depend on configuration), and refused if it
    /// then gives itself another name.
    pub fn configure(self, options: LoadOptions) -> Result<LoadedPlugin, LoadError> {
        let manifest = match &options.config {
            None => self.manifest,
            Some(config) => {
                let configured =
                    read_manifest(&self.engine, &self.pre, &options, Some(config.clone()))?;
                if configured.name != self.manifest.name {
                    return Err(LoadError::IdentityChanged {
                        announced: self.manifest.name,
                        configured: configured.name,
                    });
                }
                configured
            }
        };
        build(
            self.engine,
            self.component,
            self.pre,
            manifest,
            self.digest,
            options,
        )
    }
}

/// A store for one instance, limited by `limits`, with deadline traps armed.
pub(crate) fn new_store_with(
    engine: &PluginEngine,
    context: Arc<PluginCapabilities>,
    limits: Limits,
) -> wasmtime::Store<HostState> {
    let limiter = super::limits::InstanceLimiter::new(&limits);
    let mut store = wasmtime::Store::new(engine.engine(), HostState::new(context, limiter));
    store.limiter(|state| &mut state.limiter);
    // At every epoch tick in wasm: past the call's deadline, trap; before
    // it, yield the pool's thread to other plugins and carry on after them.
    store.epoch_deadline_callback(|store| match store.data().deadline {
        Some(ends) if Instant::now() >= ends => Err(wasmtime::Trap::Interrupt.into()),
        _ => Ok(wasmtime::UpdateDeadline::Yield(1)),
    });
    store.set_epoch_deadline(1);
    // Instantiation runs guest code (start functions) too: give it the call deadline.
    store.data_mut().deadline = Some(Instant::now() + limits.call_deadline);
    store
}

fn limit_error(manifest: &Manifest, err: LimitError) -> LoadError {
    LoadError::Manifest(ManifestError::Limit {
        plugin: manifest.name.clone(),
        reason: err.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capability::log::MemorySink;
    use std::time::Duration;

    /// Two core instances, each with a memory of 40 pages (2.5 MiB).
    const TWO_MEMORIES: &str = r#"(component
        (core module $a (memory (export "m") 40))
        (core module $b (memory (export "m") 40))
        (core instance (instantiate $a))
        (core instance (instantiate $b))
    )"#;

    /// Instantiates `component` under a memory cap of `cap` bytes; returns
    /// the error, if any, and whether the cap was recorded as hit.
    fn instantiate_with_cap(
        engine: &PluginEngine,
        component: &Component,
        cap: u64,
    ) -> (Option<wasmtime::Error>, bool) {
        let context = granted_nothing(
            Arc::new(PluginLogger::new(
                "two-memories".into(),
                "-".into(),
                Arc::new(MemorySink::default()),
                LogRate::default(),
            )),
            None,
        );
        let limits = Limits {
            call_deadline: Duration::from_secs(5),
            memory_bytes: cap,
        };
        let mut store = new_store_with(engine, context, limits);
        let linker = wasmtime::component::Linker::<HostState>::new(engine.engine());
        let deadline = Instant::now() + limits.call_deadline;
        let result = run_until(
            engine.pool(),
            deadline,
            linker.instantiate_async(&mut store, component),
        )
        .expect("instantiation does not wait");
        (result.err(), store.data().limiter.memory_limit_hit)
    }

    #[test]
    fn the_memory_cap_is_one_cap_across_all_memories_of_an_instance() {
        let engine = PluginEngine::new(Default::default()).unwrap();
        let component = Component::new(engine.engine(), TWO_MEMORIES).unwrap();
        let (error, hit) = instantiate_with_cap(&engine, &component, 8 << 20);
        assert!(error.is_none() && !hit, "5 MiB fit in 8 MiB: {error:?}");
        // Each memory alone fits in 4 MiB; both together do not.
        let (error, hit) = instantiate_with_cap(&engine, &component, 4 << 20);
        let error = error.expect("5 MiB do not fit in 4 MiB");
        assert!(hit);
        assert!(
            error
                .downcast_ref::<super::super::limits::MemoryLimitExceeded>()
                .is_some()
                || format!("{error:?}").contains("memory limit"),
            "{error:?}"
        );
    }
}
