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
//! reported as 0.6.0, and is (with 0.7.0's) the one kind of plugin that
//! runs beyond the default cluster. 0.7.0 exports `delivery` instead of
//! `handler`: its notifications go as frames of bytes ([`frame`](super::frame)),
//! with the options the instance asked for when it was made. Exports are
//! called with wasmtime's async API, so the call deadline bounds host calls
//! that wait as well as wasm ([`deadline`](super::deadline)).

use super::LoadError;
use super::frame::{Change, Frame};
use super::state::HostState;
use crate::wit::abi::{EventContext, Manifest};
use crate::wit::v0_5::exports::herald::plugin0_5_0::admission;
use crate::wit::v0_7::exports::herald::plugin0_7_0::delivery;
use crate::wit::{PACKAGE, WORLD_VERSIONS, v0_1, v0_2, v0_3, v0_7};
use std::sync::Mutex;
use wasmtime::Store;
use wasmtime::component::InstancePre;

/// The `admission` interface's name among a component's exports.
const ADMISSION_EXPORT: &str = "herald:plugin/admission@0.5.0";

/// The `delivery` interface's name among a component's exports.
const DELIVERY_EXPORT: &str = "herald:plugin/delivery@0.7.0";

/// The `cluster` interface's name among a component's imports.
const CLUSTER_IMPORT: &str = "herald:plugin/cluster@0.6.0";

/// A component linked and checked against one world version, ready to be
/// instantiated.
pub(crate) struct PluginPre {
    exports: Exports,
    version: &'static str,
    knows_clusters: bool,
}

enum Exports {
    /// 0.7.0's exports: `delivery` in place of `handler`, and 0.5.0's
    /// `admission` (called through [`v0_5`](crate::wit::v0_5)'s types).
    V0_7(v0_7::PluginPre<HostState>, admission::GuestIndices),
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
        let knows_clusters = instance_pre
            .component()
            .component_type()
            .imports(instance_pre.component().engine())
            .any(|(name, _)| name == CLUSTER_IMPORT);
        let pre = |exports, version| PluginPre {
            exports,
            version,
            knows_clusters,
        };
        let wrong = |e: wasmtime::Error| LoadError::WrongWorld(super::engine::one_line(&e));
        if has_export(&instance_pre, DELIVERY_EXPORT) {
            let indices = admission::GuestIndices::new(&instance_pre).map_err(wrong)?;
            let p = v0_7::PluginPre::new(instance_pre).map_err(wrong)?;
            return Ok(pre(Exports::V0_7(p, indices), "0.7.0"));
        }
        let newest = match v0_3::PluginPre::new(instance_pre.clone()) {
            Ok(p) if has_export(&instance_pre, ADMISSION_EXPORT) => {
                let indices = admission::GuestIndices::new(&instance_pre).map_err(wrong)?;
                let version = if imports("@0.6.0") { "0.6.0" } else { "0.5.0" };
                return Ok(pre(Exports::V0_5(p, indices), version));
            }
            Ok(p) => {
                let version = if imports("@0.6.0") {
                    "0.6.0"
                } else if imports("@0.4.0") {
                    "0.4.0"
                } else {
                    "0.3.0"
                };
                return Ok(pre(Exports::V0_3(p), version));
            }
            Err(error) => error,
        };
        if let Ok(p) = v0_2::PluginPre::new(instance_pre.clone()) {
            return Ok(pre(Exports::V0_2(p), "0.2.0"));
        }
        match v0_1::PluginPre::new(instance_pre) {
            Ok(p) => Ok(pre(Exports::V0_1(p), "0.1.0")),
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
        self.knows_clusters
    }

    /// Instantiates the component in `store`.
    pub(crate) async fn instantiate_async(
        &self,
        store: &mut Store<HostState>,
    ) -> wasmtime::Result<Plugin> {
        Ok(match &self.exports {
            Exports::V0_7(pre, indices) => {
                let instance = pre.instance_pre().instantiate_async(&mut *store).await?;
                let plugin = v0_7::Plugin::new(&mut *store, &instance)?;
                let admission = indices.load(&mut *store, &instance)?;
                let options = plugin
                    .herald_plugin0_7_0_delivery()
                    .call_options(&mut *store)
                    .await?;
                if options.max_batch == 0 {
                    return Err(wasmtime::format_err!(
                        "the plugin's delivery options ask for batches of at most 0 notifications (max-batch must be at least 1)"
                    ));
                }
                Plugin::V0_7(
                    Box::new(plugin),
                    admission,
                    Deliveries {
                        options,
                        buffer: Mutex::default(),
                    },
                )
            }
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

/// A 0.7.0 instance's deliveries: the options it asked for, and the
/// buffer its frames are written in, reused from call to call.
pub(crate) struct Deliveries {
    options: delivery::DeliveryOptions,
    buffer: Mutex<Vec<u8>>,
}

/// The largest frame buffer an instance keeps between calls; a frame
/// larger than this (a huge object) is written in a buffer of its own.
const KEPT_FRAME_BYTES: usize = 64 << 10;

/// The buffer, whatever a panic elsewhere left in it (a buffer is cleared
/// before every use).
fn lock(buffer: &Mutex<Vec<u8>>) -> std::sync::MutexGuard<'_, Vec<u8>> {
    buffer
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// True when the component exports the interface `name`.
fn has_export(instance_pre: &InstancePre<HostState>, name: &str) -> bool {
    instance_pre
        .component()
        .get_export_index(None, name)
        .is_some()
}

/// A live instance's exports, of whichever world version it was built for.
pub(crate) enum Plugin {
    /// With 0.5.0's `admission` and the instance's deliveries.
    V0_7(Box<v0_7::Plugin>, admission::Guest, Deliveries),
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
            Plugin::V0_7(plugin, ..) => plugin.call_manifest(store).await,
        }
    }

    /// Calls `admission.declare`: what the plugin admits, `None` for a
    /// plugin built for a world without admission.
    pub(crate) async fn call_declare(
        &self,
        store: &mut Store<HostState>,
    ) -> wasmtime::Result<Option<admission::Webhooks>> {
        match self {
            Plugin::V0_5(_, guest) | Plugin::V0_7(_, guest, _) => {
                guest.call_declare(store).await.map(Some)
            }
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
        let guest = match self {
            Plugin::V0_5(_, guest) | Plugin::V0_7(_, guest, _) => guest,
            _ => {
                return Err(wasmtime::format_err!(
                    "the plugin exports no admission interface"
                ));
            }
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
            Plugin::V0_7(..) => {
                let change = match call {
                    HandlerCall::Add(object) => Change::Added(object),
                    HandlerCall::Update(old, new) => Change::Updated { old, new },
                    HandlerCall::Delete(object) => Change::Deleted(object),
                };
                let delivered = self
                    .call_deliver(store, |frame, old_state| frame.push(ctx, change, old_state))
                    .await?;
                Ok(delivered.map_err(|failure| failure.message))
            }
        }
    }

    /// The most notifications one call may carry: what a 0.7.0 instance
    /// asked for, 1 for an older world's, whose handler takes one
    /// notification per call.
    pub(crate) fn max_batch(&self) -> u32 {
        match self {
            Plugin::V0_7(_, _, deliveries) => deliveries.options.max_batch,
            _ => 1,
        }
    }

    /// Calls a 0.7.0 plugin's `deliver` with the frame `write` fills (told
    /// whether the plugin asked for old states), in the buffer the instance
    /// keeps. An older world's plugin has no `delivery` export, and the
    /// host hands it more than one notification only through
    /// [`Self::call_handler`]: asked here, it traps.
    pub(crate) async fn call_deliver(
        &self,
        store: &mut Store<HostState>,
        write: impl FnOnce(&mut Frame, bool),
    ) -> wasmtime::Result<Result<(), delivery::Failure>> {
        let Plugin::V0_7(plugin, _, deliveries) = self else {
            return Err(wasmtime::format_err!(
                "the plugin exports no delivery interface (it was built for world 0.6.0 or older)"
            ));
        };
        let mut frame = Frame::reusing(std::mem::take(&mut *lock(&deliveries.buffer)));
        write(&mut frame, deliveries.options.old_state);
        let delivered = plugin
            .herald_plugin0_7_0_delivery()
            .call_deliver(store, frame.bytes())
            .await;
        *lock(&deliveries.buffer) = frame.into_buffer(KEPT_FRAME_BYTES);
        delivered
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
