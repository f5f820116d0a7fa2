//! Host bindings generated from the released versions of the plugin world,
//! one module per version (`wit/<version>/herald.wit`), and the one place
//! `bindgen!` runs.
//!
//! A component is linked against every version's imports and loaded as the
//! version whose handler it exports; [`PluginPre`] and [`Plugin`] hide which
//! one it is from the rest of the runtime, which speaks the newest version's
//! types. Exports are called with wasmtime's async API, so the call deadline
//! bounds host calls that wait as well as wasm ([`deadline`](super::deadline)).

#![allow(missing_docs, unsafe_code)]

pub(crate) mod v0_1;
pub(crate) mod v0_2;
pub(crate) mod v0_3;

use super::host::HostState;
use wasmtime::Store;
use wasmtime::component::{InstancePre, Linker};

/// The event context, the same record in 0.2.0 and 0.3.0 (which imports
/// 0.2.0's handler interface).
pub use v0_2::herald::plugin::types::{EventContext, GroupVersionKind};

/// The manifest as the newest version spells it.
pub(crate) use v0_3::herald::plugin0_3_0::types::Manifest;

/// The versions of the world this host implements, newest first.
pub const WORLD_VERSIONS: &[&str] = &["0.3.0", "0.2.0", "0.1.0"];

/// Adds the imports of every released world version to `linker`.
pub(crate) fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    use wasmtime::component::HasSelf;
    v0_1::Plugin::add_to_linker::<HostState, HasSelf<HostState>>(linker, |state| state)?;
    v0_2::Plugin::add_to_linker::<HostState, HasSelf<HostState>>(linker, |state| state)?;
    v0_3::add_to_linker(linker)
}

/// A component linked and checked against one world version, ready to be
/// instantiated.
pub(crate) enum PluginPre {
    V0_1(v0_1::PluginPre<HostState>),
    V0_2(v0_2::PluginPre<HostState>),
    V0_3(v0_3::PluginPre<HostState>),
}

impl PluginPre {
    /// Checks which world `instance_pre`'s component exports, newest first.
    pub(crate) fn new(instance_pre: InstancePre<HostState>) -> Result<Self, String> {
        let newest = match v0_3::PluginPre::new(instance_pre.clone()) {
            Ok(pre) => return Ok(PluginPre::V0_3(pre)),
            Err(error) => error,
        };
        if let Ok(pre) = v0_2::PluginPre::new(instance_pre.clone()) {
            return Ok(PluginPre::V0_2(pre));
        }
        match v0_1::PluginPre::new(instance_pre) {
            Ok(pre) => Ok(PluginPre::V0_1(pre)),
            Err(_) => Err(format!(
                "{} (this host runs herald:plugin worlds {})",
                super::engine::one_line(&newest),
                WORLD_VERSIONS.join(", ")
            )),
        }
    }

    /// The world version the component was built against.
    pub(crate) fn version(&self) -> &'static str {
        match self {
            PluginPre::V0_1(_) => "0.1.0",
            PluginPre::V0_2(_) => "0.2.0",
            PluginPre::V0_3(_) => "0.3.0",
        }
    }

    /// Instantiates the component in `store`.
    pub(crate) async fn instantiate_async(
        &self,
        store: &mut Store<HostState>,
    ) -> wasmtime::Result<Plugin> {
        Ok(match self {
            PluginPre::V0_1(pre) => Plugin::V0_1(pre.instantiate_async(store).await?),
            PluginPre::V0_2(pre) => Plugin::V0_2(pre.instantiate_async(store).await?),
            PluginPre::V0_3(pre) => Plugin::V0_3(pre.instantiate_async(store).await?),
        })
    }
}

/// A live instance's exports, of whichever world version it was built for.
pub(crate) enum Plugin {
    V0_1(v0_1::Plugin),
    V0_2(v0_2::Plugin),
    V0_3(v0_3::Plugin),
}

/// The handler export a call is for, with its objects.
#[derive(Debug, Clone, Copy)]
pub(crate) enum HandlerCall<'a> {
    Add(&'a str),
    Update(&'a str, &'a str),
    Delete(&'a str),
}

/// What a handler export returns: a trap, or the handler's own result.
type HandlerResult = wasmtime::Result<Result<(), String>>;

impl Plugin {
    /// Calls the `manifest` export, as the newest version's record.
    pub(crate) async fn call_manifest(
        &self,
        store: &mut Store<HostState>,
    ) -> wasmtime::Result<Manifest> {
        match self {
            Plugin::V0_1(plugin) => Ok(v0_2::upgrade_manifest(v0_1::upgrade_manifest(
                plugin.call_manifest(store).await?,
            ))),
            Plugin::V0_2(plugin) => Ok(v0_2::upgrade_manifest(plugin.call_manifest(store).await?)),
            Plugin::V0_3(plugin) => plugin.call_manifest(store).await,
        }
    }

    /// Calls the handler export `call` is for.
    pub(crate) async fn call_handler(
        &self,
        store: &mut Store<HostState>,
        ctx: &EventContext,
        call: HandlerCall<'_>,
    ) -> HandlerResult {
        /// The call on one version's handler, with that version's context.
        macro_rules! dispatch {
            ($handler:expr, $ctx:expr) => {
                match call {
                    HandlerCall::Add(obj) => $handler.call_on_add(store, $ctx, obj).await,
                    HandlerCall::Update(old, new) => {
                        $handler.call_on_update(store, $ctx, old, new).await
                    }
                    HandlerCall::Delete(obj) => $handler.call_on_delete(store, $ctx, obj).await,
                }
            };
        }
        match self {
            Plugin::V0_1(plugin) => {
                let ctx = v0_1::event_context(ctx);
                dispatch!(plugin.herald_plugin_handler(), &ctx)
            }
            Plugin::V0_2(plugin) => dispatch!(plugin.herald_plugin_handler(), ctx),
            Plugin::V0_3(plugin) => dispatch!(plugin.herald_plugin0_2_0_handler(), ctx),
        }
    }
}

/// Implements the imports every world version shares (`log`, `cache`,
/// `config`) for one version's generated traits, by delegating to
/// [`HostState`]'s version-neutral methods.
macro_rules! shared_imports {
    ($version:ident) => {
        use super::super::host::HostState;
        use $version::herald::plugin::{cache, config, log, types};

        impl types::Host for HostState {}

        impl log::Host for HostState {
            fn log(&mut self, level: log::Level, message: String) {
                use super::super::logging::LogLevel;
                let level = match level {
                    log::Level::Trace => LogLevel::Trace,
                    log::Level::Debug => LogLevel::Debug,
                    log::Level::Info => LogLevel::Info,
                    log::Level::Warn => LogLevel::Warn,
                    log::Level::Error => LogLevel::Error,
                };
                self.plugin_log(level, &message);
            }
        }

        impl cache::Host for HostState {
            fn get(
                &mut self,
                kind: types::GroupVersionKind,
                namespace: Option<String>,
                name: String,
            ) -> wasmtime::Result<Result<Option<String>, cache::CacheError>> {
                let gvk = crate::gvk::Gvk::new(kind.group, kind.version, kind.kind);
                Ok(self
                    .cache_get(&gvk, namespace.as_deref(), &name)?
                    .map_err(cache_error))
            }

            fn list(
                &mut self,
                kind: types::GroupVersionKind,
                namespace: Option<String>,
                label_selector: Option<String>,
            ) -> wasmtime::Result<Result<Vec<String>, cache::CacheError>> {
                let gvk = crate::gvk::Gvk::new(kind.group, kind.version, kind.kind);
                Ok(self
                    .cache_list(&gvk, namespace.as_deref(), label_selector.as_deref())?
                    .map_err(cache_error))
            }
        }

        fn cache_error(err: super::super::lookup::LookupError) -> cache::CacheError {
            use super::super::lookup::LookupError;
            match err {
                LookupError::NotSubscribed(gvk) => {
                    cache::CacheError::NotSubscribed(types::GroupVersionKind {
                        group: gvk.group,
                        version: gvk.version,
                        kind: gvk.kind,
                    })
                }
                LookupError::InvalidSelector(reason) => cache::CacheError::InvalidSelector(reason),
                // `get` and `list` name no index; `index.lookup` has its own error.
                LookupError::UnknownIndex(_) => cache::CacheError::InvalidSelector(err.to_string()),
            }
        }

        impl config::Host for HostState {
            fn get(&mut self) -> Option<String> {
                self.plugin_config()
            }
        }
    };
}

use shared_imports;
