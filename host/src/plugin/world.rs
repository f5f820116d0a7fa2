//! Which world a component was built against, and calls to its exports.
//!
//! A component is linked against every version's imports and loaded as the
//! version whose exports it has; [`PluginPre`] and [`Plugin`] hide which
//! one it is from the rest of the runtime, which speaks the newest
//! version's records. 0.4.0 exports what 0.3.0 does (it only adds an
//! import), so a component with 0.3.0's exports is called through them and
//! reported as 0.4.0 when it imports a 0.4.0 interface; 0.5.0 adds one
//! export, `admission`, looked up on its own beside 0.3.0's (a component
//! that has it is a 0.5.0 plugin, called through 0.3.0's exports for the
//! rest). 0.6.0 adds the `cluster` import only: a component importing it is
//! reported as 0.6.0, and is the one kind of plugin that runs beyond the
//! default cluster. Exports are called
//! with wasmtime's async API, so the call deadline bounds host calls that
//! wait as well as wasm ([`deadline`](super::deadline)).

use super::LoadError;
use super::state::HostState;
use crate::wit::abi::{EventContext, Manifest};
use crate::wit::v0_5::exports::herald::plugin0_5_0::admission;
use crate::wit::{PACKAGE, WORLD_VERSIONS, v0_1, v0_2, v0_3};
use wasmtime::Store;
use wasmtime::component::InstancePre;

/// The `admission` interface's name among a component's exports.
const ADMISSION_EXPORT: &str = "herald:plugin/admission@0.5.0";

/// A component linked and checked against one world version, ready to be
/// instantiated.
pub(crate) struct PluginPre {
    exports: Exports,
    version: &'static str,
}

enum Exports {
    V0_1(v0_1::PluginPre<HostState>),
    V0_2(v0_2::PluginPre<HostState>),
    V0_3(v0_3::PluginPre<HostState>),
    /// 0.3.0's exports and 0.5.0's `admission`.
    V0_5(v0_3::PluginPre<HostState>, admission::GuestIndices),
}

impl PluginPre {
    /// Checks which world `instance_pre`'s component exports, newest first;
    /// [`LoadError::WrongWorld`] when it exports none.
    pub(crate) fn new(instance_pre: InstancePre<HostState>) -> Result<Self, LoadError> {
        let interfaces = format!("{PACKAGE}/");
        let imports = |version: &str| {
            instance_pre
                .component()
                .component_type()
                .imports(instance_pre.component().engine())
                .any(|(name, _)| name.starts_with(&interfaces) && name.ends_with(version))
        };
        let newest = match v0_3::PluginPre::new(instance_pre.clone()) {
            Ok(pre) if exports_admission(&instance_pre) => {
                let indices = admission::GuestIndices::new(&instance_pre)
                    .map_err(|e| LoadError::WrongWorld(super::engine::one_line(&e)))?;
                return Ok(PluginPre {
                    exports: Exports::V0_5(pre, indices),
                    version: if imports("@0.6.0") { "0.6.0" } else { "0.5.0" },
                });
            }
            Ok(pre) => {
                return Ok(PluginPre {
                    exports: Exports::V0_3(pre),
                    version: if imports("@0.6.0") {
                        "0.6.0"
                    } else if imports("@0.4.0") {
                        "0.4.0"
                    } else {
                        "0.3.0"
                    },
                });
            }
            Err(error) => error,
        };
        if let Ok(pre) = v0_2::PluginPre::new(instance_pre.clone()) {
            return Ok(PluginPre {
                exports: Exports::V0_2(pre),
                version: "0.2.0",
            });
        }
        match v0_1::PluginPre::new(instance_pre) {
            Ok(pre) => Ok(PluginPre {
                exports: Exports::V0_1(pre),
                version: "0.1.0",
            }),
            Err(_) => Err(LoadError::WrongWorld(format!(
                "{} (this host runs {PACKAGE} worlds {})",
                super::engine::one_line(&newest),
                WORLD_VERSIONS.join(", ")
            ))),
        }
    }

    /// The world version the component was built against.
    pub(crate) fn version(&self) -> &'static str {
        self.version
    }

    /// Whether the component imports `cluster` (0.6.0): only such a plugin
    /// can tell clusters apart, so only it runs beyond the default one.
    pub(crate) fn knows_clusters(&self) -> bool {
        self.version == "0.6.0"
    }

    /// Instantiates the component in `store`.
    pub(crate) async fn instantiate_async(
        &self,
        store: &mut Store<HostState>,
    ) -> wasmtime::Result<Plugin> {
        Ok(match &self.exports {
            Exports::V0_1(pre) => Plugin::V0_1(pre.instantiate_async(store).await?),
            Exports::V0_2(pre) => Plugin::V0_2(pre.instantiate_async(store).await?),
            Exports::V0_3(pre) => Plugin::V0_3(pre.instantiate_async(store).await?),
            Exports::V0_5(pre, indices) => {
                let instance = pre.instance_pre().instantiate_async(&mut *store).await?;
                let plugin = v0_3::Plugin::new(&mut *store, &instance)?;
                Plugin::V0_5(plugin, indices.load(&mut *store, &instance)?)
            }
        })
    }
}

/// True when the component exports 0.5.0's `admission` interface.
fn exports_admission(instance_pre: &InstancePre<HostState>) -> bool {
    instance_pre
        .component()
        .get_export_index(None, ADMISSION_EXPORT)
        .is_some()
}

/// A live instance's exports, of whichever world version it was built for.
pub(crate) enum Plugin {
    V0_1(v0_1::Plugin),
    V0_2(v0_2::Plugin),
    V0_3(v0_3::Plugin),
    V0_5(v0_3::Plugin, admission::Guest),
}

/// The admission export a call is for, with its review.
#[derive(Debug, Clone, Copy)]
pub enum AdmissionCall<'a> {
    /// `validate`.
    Validate(&'a admission::Review),
    /// `mutate`.
    Mutate(&'a admission::Review),
}

/// What an admission export answers: a verdict, and a change when the call
/// was a mutate.
#[derive(Debug, Clone)]
pub struct AdmissionAnswer {
    /// The decision.
    pub verdict: admission::Verdict,
    /// What a mutate changes (`none` for a validate).
    pub change: admission::Change,
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
            Plugin::V0_1(plugin) => Ok(from_v0_2(from_v0_1(plugin.call_manifest(store).await?))),
            Plugin::V0_2(plugin) => Ok(from_v0_2(plugin.call_manifest(store).await?)),
            Plugin::V0_3(plugin) | Plugin::V0_5(plugin, _) => plugin.call_manifest(store).await,
        }
    }

    /// Calls `admission.declare`: what the plugin admits, `None` for a
    /// plugin built for a world without admission.
    pub(crate) async fn call_declare(
        &self,
        store: &mut Store<HostState>,
    ) -> wasmtime::Result<Option<admission::Webhooks>> {
        match self {
            Plugin::V0_5(_, guest) => guest.call_declare(store).await.map(Some),
            _ => Ok(None),
        }
    }

    /// Calls the admission export `call` is for; a plugin without one
    /// cannot be asked (the host routes reviews only to plugins that
    /// declared webhooks), and answering would be a guess: a trap.
    pub(crate) async fn call_admission(
        &self,
        store: &mut Store<HostState>,
        call: AdmissionCall<'_>,
    ) -> wasmtime::Result<Result<AdmissionAnswer, String>> {
        let Plugin::V0_5(_, guest) = self else {
            return Err(wasmtime::format_err!(
                "the plugin exports no admission interface"
            ));
        };
        Ok(match call {
            AdmissionCall::Validate(review) => {
                guest
                    .call_validate(store, review)
                    .await?
                    .map(|verdict| AdmissionAnswer {
                        verdict,
                        change: admission::Change::None,
                    })
            }
            AdmissionCall::Mutate(review) => {
                guest
                    .call_mutate(store, review)
                    .await?
                    .map(|m| AdmissionAnswer {
                        verdict: m.verdict,
                        change: m.change,
                    })
            }
        })
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
                let ctx = to_v0_1(ctx);
                dispatch!(plugin.herald_plugin_handler(), &ctx)
            }
            Plugin::V0_2(plugin) => dispatch!(plugin.herald_plugin_handler(), ctx),
            Plugin::V0_3(plugin) | Plugin::V0_5(plugin, _) => {
                dispatch!(plugin.herald_plugin0_2_0_handler(), ctx)
            }
        }
    }
}

/// A 0.1.0 manifest as the 0.2.0 record: it declares no writes.
fn from_v0_1(raw: v0_1::herald::plugin::types::Manifest) -> v0_2::herald::plugin::types::Manifest {
    use v0_1::herald::plugin::types as old;
    use v0_2::herald::plugin::types as new;
    new::Manifest {
        name: raw.name,
        version: raw.version,
        subscriptions: raw
            .subscriptions
            .into_iter()
            .map(|sub| new::Subscription {
                kind: new::GroupVersionKind {
                    group: sub.kind.group,
                    version: sub.kind.version,
                    kind: sub.kind.kind,
                },
                namespace: sub.namespace,
                label_selector: sub.label_selector,
                field_selector: sub.field_selector,
                resync_period_ms: sub.resync_period_ms,
                delivery: match sub.delivery {
                    old::DeliveryMode::EveryEvent => new::DeliveryMode::EveryEvent,
                    old::DeliveryMode::Coalesced => new::DeliveryMode::Coalesced,
                },
            })
            .collect(),
        limits: new::Limits {
            call_deadline_ms: raw.limits.call_deadline_ms,
            memory_bytes: raw.limits.memory_bytes,
        },
        capabilities: raw.capabilities,
        writes: Vec::new(),
    }
}

/// A 0.2.0 manifest as the newest record: it defines no metrics and no
/// indexes.
fn from_v0_2(raw: v0_2::herald::plugin::types::Manifest) -> Manifest {
    Manifest {
        name: raw.name,
        version: raw.version,
        subscriptions: raw.subscriptions,
        limits: raw.limits,
        capabilities: raw.capabilities,
        writes: raw.writes,
        metrics: Vec::new(),
        indexes: Vec::new(),
    }
}

/// The event context as 0.1.0 spells it (the same fields).
fn to_v0_1(ctx: &EventContext) -> v0_1::herald::plugin::types::EventContext {
    use v0_1::herald::plugin::types as old;
    old::EventContext {
        kind: old::GroupVersionKind {
            group: ctx.kind.group.clone(),
            version: ctx.kind.version.clone(),
            kind: ctx.kind.kind.clone(),
        },
        resource: ctx.resource.clone(),
        key: ctx.key.clone(),
        resource_version: ctx.resource_version.clone(),
        is_initial_list: ctx.is_initial_list,
        is_resync: ctx.is_resync,
        final_state_unknown: ctx.final_state_unknown,
    }
}
