//! A live plugin instance: one store, called sequentially, rebuilt from the
//! pre-instantiated component after any fault.

use super::deadline::{DeadlinePassed, block_on, within};
use super::engine::one_line;
use super::error::{CallError, FaultKind};
use super::frame::Frame;
use super::limits::{
    HandleLimitExceeded, InstanceLimiter, MAX_HOST_RESOURCES, MemoryLimitExceeded,
};
use super::loaded::{LoadedPlugin, new_store_with};
use super::state::HostState;
use super::world::{AdmissionAnswer, AdmissionCall, HandlerCall, Plugin};
use crate::capability::{CallCluster, PluginCapabilities};
use crate::cluster::ClusterName;
use crate::wit::abi::EventContext;
use crate::wit::v0_7::exports::herald::plugin0_7_0::delivery::Failure;
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime::Store;
use wasmtime::component::ResourceTableError;

/// What a successful handler call asked of the host beyond its `ok`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Handled {
    /// Deliver the notification again after this delay (the last
    /// `requeue-after` of the call). Honoured by coalesced delivery only.
    pub requeue_after: Option<Duration>,
}

/// How a call delivering a batch failed.
#[derive(Debug)]
pub(crate) struct BatchError {
    /// How many notifications, from the batch's start, the plugin handled
    /// before the one that failed; `None` when that is unknown: the call
    /// faulted (trap, deadline, limit), and the instance that handled
    /// some of them is gone, or the plugin named a notification the batch
    /// does not have.
    pub(crate) handled: Option<usize>,
    /// The failure.
    pub(crate) error: CallError,
}

impl BatchError {
    /// The plugin's own failure of a batch of `count`.
    fn at(failure: Failure, count: usize) -> Self {
        let message = truncate_error(failure.message);
        match usize::try_from(failure.index) {
            Ok(index) if index < count => BatchError {
                handled: Some(index),
                error: CallError::Handler(message),
            },
            _ => BatchError {
                handled: None,
                error: CallError::Handler(format!(
                    "{message} (the plugin said notification {} failed, of a batch of {count})",
                    failure.index
                )),
            },
        }
    }
}

/// Longest handler error message kept; a plugin returning megabytes of error
/// text costs the host no more than this.
pub const MAX_ERROR_BYTES: usize = 4096;

/// One instance of a loaded plugin. Not shared: calls are sequential, made by
/// the plugin's worker. After a trap, deadline or limit hit the instance is
/// discarded and transparently rebuilt before the next call; so is one
/// whose memory has grown towards its cap (`InstanceLimiter::outgrown`),
/// after a call that succeeded.
pub struct PluginInstance {
    plugin: LoadedPlugin,
    /// What its host calls act for: the plugin's context, or its admission
    /// context.
    context: Arc<PluginCapabilities>,
    live: Option<Live>,
    rebuilds: u64,
    retirements: u64,
}

struct Live {
    store: Store<HostState>,
    bindings: Plugin,
}

impl std::fmt::Debug for PluginInstance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginInstance")
            .field("plugin", &self.plugin.manifest().name)
            .field("live", &self.live.is_some())
            .field("rebuilds", &self.rebuilds)
            .field("retirements", &self.retirements)
            .finish()
    }
}

impl PluginInstance {
    /// Instantiates `plugin`.
    pub fn new(plugin: LoadedPlugin) -> Result<Self, CallError> {
        let context = plugin.context().clone();
        let live = block_on(plugin.engine().pool(), instantiate(&plugin, &context))?;
        Ok(PluginInstance {
            plugin,
            context,
            live: Some(live),
            rebuilds: 0,
            retirements: 0,
        })
    }

    /// An instance created on its first call (so a failure to instantiate is
    /// reported, and retried, like any failed call).
    pub fn lazy(plugin: LoadedPlugin) -> Self {
        PluginInstance {
            context: plugin.context().clone(),
            plugin,
            live: None,
            rebuilds: 0,
            retirements: 0,
        }
    }

    /// An instance for admission calls, created on its first call: its host
    /// calls act for the plugin's admission context (reads only). `None`
    /// for a plugin that admits nothing.
    pub fn for_admission(plugin: LoadedPlugin) -> Option<Self> {
        let context = plugin.admission_context()?.clone();
        Some(PluginInstance {
            plugin,
            context,
            live: None,
            rebuilds: 0,
            retirements: 0,
        })
    }

    /// The plugin this is an instance of.
    pub fn plugin(&self) -> &LoadedPlugin {
        &self.plugin
    }

    /// How many times the instance was rebuilt after a fault.
    pub fn rebuilds(&self) -> u64 {
        self.rebuilds
    }

    /// How many times the instance was replaced between two calls because
    /// its memory had grown towards its cap (a leak, before it faults).
    pub fn retirements(&self) -> u64 {
        self.retirements
    }

    /// Drops the live store, returning its memory; the next call makes a
    /// fresh one. True if there was one to drop.
    pub fn reclaim(&mut self) -> bool {
        self.live.take().is_some()
    }

    /// Delivers an add, blocking this thread until the call ends (never
    /// call it from an async task: see `deliver`).
    pub fn on_add(&mut self, ctx: &EventContext, obj: &str) -> Result<Handled, CallError> {
        self.call_blocking(ctx, HandlerCall::Add(obj))
    }

    /// Delivers an update, blocking (as [`on_add`](Self::on_add)).
    pub fn on_update(
        &mut self,
        ctx: &EventContext,
        old: &str,
        new: &str,
    ) -> Result<Handled, CallError> {
        self.call_blocking(ctx, HandlerCall::Update(old, new))
    }

    /// Delivers a delete, blocking (as [`on_add`](Self::on_add)).
    pub fn on_delete(&mut self, ctx: &EventContext, obj: &str) -> Result<Handled, CallError> {
        self.call_blocking(ctx, HandlerCall::Delete(obj))
    }

    fn call_blocking(
        &mut self,
        ctx: &EventContext,
        call: HandlerCall<'_>,
    ) -> Result<Handled, CallError> {
        let pool = self.plugin.engine().pool().clone();
        block_on(&pool, self.deliver(None, ctx, call))
    }

    /// Makes one handler call, bounded by the plugin's call deadline
    /// however it spends its time ([`deadline`](super::deadline)). A
    /// requeue request counts only when the call succeeds; a failed call's
    /// is dropped (its retry follows the failure backoff). Runs as a task of
    /// the worker pool: waiting in a host call, it holds none of its threads.
    /// The notification comes from `cluster` (`None`: the default one), where
    /// the call's look-ups, requests and Events go.
    pub(crate) async fn deliver(
        &mut self,
        cluster: Option<&ClusterName>,
        ctx: &EventContext,
        call: HandlerCall<'_>,
    ) -> Result<Handled, CallError> {
        let deadline = self.plugin.limits().call_deadline;
        let requeue_after = self
            .call(deadline, cluster, async |bindings, store| {
                store.data_mut().take_requeue();
                let outcome = bindings.call_handler(store, ctx, call).await;
                let requeue_after = store.data_mut().take_requeue();
                outcome.map(|answer| answer.map(|()| requeue_after))
            })
            .await?;
        Ok(Handled { requeue_after })
    }

    /// Delivers several notifications in one call, bounded by one call
    /// deadline: `write` puts the `count` notifications into the frame
    /// (told whether the plugin asked for old states). Only a plugin whose
    /// [`max_batch`](super::Manifest::max_batch) is above 1 is asked.
    /// A requeue request is returned as for one notification, for the
    /// caller to count.
    pub(crate) async fn deliver_batch(
        &mut self,
        cluster: Option<&ClusterName>,
        count: usize,
        write: impl FnOnce(&mut Frame, bool) + Send,
    ) -> Result<Handled, BatchError> {
        let deadline = self.plugin.limits().call_deadline;
        let answer = self
            .call(deadline, cluster, async |bindings, store| {
                store.data_mut().take_requeue();
                let delivered = bindings.call_deliver(store, write).await;
                let requeue_after = store.data_mut().take_requeue();
                delivered.map(|answer| Ok(answer.map(|()| Handled { requeue_after })))
            })
            .await;
        match answer {
            Ok(Ok(handled)) => Ok(handled),
            Ok(Err(failure)) => Err(BatchError::at(failure, count)),
            Err(error) => Err(BatchError {
                handled: None,
                error,
            }),
        }
    }

    /// Makes one admission call, bounded by `deadline` (what the review's
    /// timeout leaves, at most the plugin's call deadline). An instance made
    /// by [`Self::for_admission`] has no side effects: its writes, Events and
    /// HTTP are refused.
    pub async fn admit(
        &mut self,
        call: AdmissionCall<'_>,
        deadline: Duration,
    ) -> Result<AdmissionAnswer, CallError> {
        let deadline = deadline.min(self.plugin.limits().call_deadline);
        self.call(deadline, None, async |bindings, store| {
            bindings.call_admission(store, call).await
        })
        .await
    }

    /// Makes one call of an export through `call`, bounded by `deadline`
    /// however it spends its time. Instantiating a fresh instance first
    /// (after a fault) has a deadline of its own. After a trap, a deadline
    /// or a limit hit the instance is dropped, to be rebuilt by the next
    /// call; after a call that returned, it is dropped too if it has
    /// outgrown its memory (counted in `retirements`, not `rebuilds`).
    async fn call<R>(
        &mut self,
        deadline: Duration,
        cluster: Option<&ClusterName>,
        call: impl AsyncFnOnce(&Plugin, &mut Store<HostState>) -> wasmtime::Result<Result<R, String>>,
    ) -> Result<R, CallError> {
        let live = match &mut self.live {
            Some(live) => live,
            None => self
                .live
                .insert(instantiate(&self.plugin, &self.context).await?),
        };
        let ends = Instant::now() + deadline;
        live.store.set_epoch_deadline(1);
        live.store.data_mut().deadline = Some(ends);
        live.store.data_mut().cluster = CallCluster::of_event(cluster.cloned());
        let outcome = within(ends, call(&live.bindings, &mut live.store)).await;
        live.store.data().finish_output();
        // What the call leaves behind in the host must fit in the cap too:
        // a plugin keeping host resources across calls ends here.
        let held = match &outcome {
            Ok(Ok(_)) => live.store.data_mut().charge_host_resources_after_call(),
            _ => Ok(()),
        };
        let limiter = &live.store.data().limiter;
        let ended = match (outcome, held) {
            (Ok(Ok(_)), Err(over)) => Err(classify_in(&over, limiter, deadline)),
            (Ok(Ok(Ok(answer))), Ok(())) => Ok(Ok(answer)),
            (Ok(Ok(Err(message))), Ok(())) => Ok(Err(CallError::Handler(truncate_error(message)))),
            (Ok(Err(trap)), _) => Err(classify_in(&trap, limiter, deadline)),
            (Err(DeadlinePassed), _) => Err(CallError::deadline(deadline)),
        };
        match ended {
            // The call returned (the plugin's answer or its own error): the
            // instance goes on, unless its memory has grown towards its cap.
            Ok(answer) => {
                if let Some(outgrown) = live.store.data_mut().limiter.outgrown() {
                    tracing::info!(plugin = %self.plugin.name(), "{outgrown}");
                    self.live = None;
                    self.retirements += 1;
                }
                answer
            }
            Err(trap) => {
                self.live = None;
                self.rebuilds += 1;
                Err(trap)
            }
        }
    }
}

/// A fresh instance of `plugin` whose host calls act for `context`, its
/// start-up code bounded by the call deadline.
async fn instantiate(
    plugin: &LoadedPlugin,
    context: &Arc<PluginCapabilities>,
) -> Result<Live, CallError> {
    let mut store = new_store_with(plugin.engine(), context.clone(), plugin.limits());
    let deadline = plugin.limits().call_deadline;
    let instantiated = within(
        Instant::now() + deadline,
        plugin.pre().instantiate_async(&mut store),
    )
    .await;
    let bindings = match instantiated {
        Ok(Ok(bindings)) => bindings,
        Ok(Err(error)) => return Err(CallError::Instantiate(one_line(&error))),
        Err(DeadlinePassed) => {
            return Err(CallError::Instantiate(
                CallError::deadline(deadline).to_string(),
            ));
        }
    };
    Ok(Live { store, bindings })
}

/// Sorts a trap of an instance whose limiter is `limiter` into the kind of
/// fault it is: a limit the limiter recorded wins over whatever error the
/// host call that noticed it ended with.
fn classify_in(
    error: &wasmtime::Error,
    limiter: &InstanceLimiter,
    deadline: std::time::Duration,
) -> CallError {
    match limiter.exceeded_limit() {
        Some(hit) => CallError::Fault {
            kind: FaultKind::MemoryLimit,
            detail: hit.to_string(),
        },
        None => classify(error, limiter.memory_limit_hit, deadline),
    }
}

/// Sorts a trap into the kind of fault it is. A full resource table is the
/// handle cap ([`MAX_HOST_RESOURCES`]), reported as a memory-limit fault.
pub(crate) fn classify(
    error: &wasmtime::Error,
    memory_limit_hit: bool,
    deadline: std::time::Duration,
) -> CallError {
    if !memory_limit_hit
        && matches!(
            error.downcast_ref::<ResourceTableError>(),
            Some(ResourceTableError::Full)
        )
    {
        return CallError::Fault {
            kind: FaultKind::MemoryLimit,
            detail: HandleLimitExceeded {
                limit: MAX_HOST_RESOURCES,
            }
            .to_string(),
        };
    }
    if memory_limit_hit || error.downcast_ref::<MemoryLimitExceeded>().is_some() {
        let detail = match error.downcast_ref::<MemoryLimitExceeded>() {
            Some(hit) => hit.to_string(),
            None => one_line(error),
        };
        return CallError::Fault {
            kind: FaultKind::MemoryLimit,
            detail,
        };
    }
    let kind = match error.downcast_ref::<wasmtime::Trap>() {
        Some(wasmtime::Trap::Interrupt) => return CallError::deadline(deadline),
        Some(wasmtime::Trap::StackOverflow) => FaultKind::StackOverflow,
        Some(wasmtime::Trap::UnreachableCodeReached) => FaultKind::Panic,
        _ => FaultKind::Trap,
    };
    CallError::Fault {
        kind,
        detail: one_line(error),
    }
}

fn truncate_error(mut message: String) -> String {
    if message.len() > MAX_ERROR_BYTES {
        let total = message.len();
        let mut end = MAX_ERROR_BYTES;
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        message.truncate(end);
        message.push_str(&format!("…[truncated, {total} bytes in all]"));
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure(index: u32) -> Failure {
        Failure {
            index,
            message: "bad pod".into(),
        }
    }

    #[test]
    fn a_batch_failure_is_trusted_only_inside_the_batch() {
        let inside = BatchError::at(failure(2), 3);
        assert_eq!(inside.handled, Some(2));
        assert!(matches!(&inside.error, CallError::Handler(m) if m == "bad pod"));
        // An index the batch does not have is no position: the host
        // delivers the batch again one notification at a time.
        for index in [3, u32::MAX] {
            let outside = BatchError::at(failure(index), 3);
            assert_eq!(outside.handled, None);
            assert!(
                matches!(&outside.error, CallError::Handler(m)
                    if m.contains(&format!("notification {index} failed, of a batch of 3"))),
                "{:?}",
                outside.error
            );
        }
    }
}
