//! The plugin runtime: one wasmtime engine, components compiled once and
//! pre-instantiated, one long-lived sandboxed instance per plugin, and the
//! store state through which each capability serves its imports
//! ([`crate::capability`]).
//!
//! # Isolation
//!
//! Each instance gets a WASI p2 context that denies files, environment,
//! arguments, sockets and stdin; its stdout and stderr become log lines tagged
//! with the plugin's name. Every call has a deadline (epoch interruption) and
//! every instance a memory cap. A trap, deadline or limit hit comes back as a
//! typed [`CallError::Fault`] and the instance is rebuilt from its
//! pre-instantiated component before the next call; nothing a plugin does can
//! crash the host.

mod artifacts;
mod compiler;
mod deadline;
mod engine;
mod error;
mod frame;
mod instance;
mod limits;
mod loaded;
mod manifest;
pub mod metrics;
mod pool;
mod state;
mod world;

pub use crate::wit::WORLD_VERSIONS;
pub use crate::wit::abi::{EventContext, GroupVersionKind};
pub use artifacts::{
    ArtifactCache, ArtifactCacheError, CompileOutcome, DEFAULT_ARTIFACT_CACHE_BYTES, cache_home,
};
pub use compiler::{CompileReport, Compiler, DEFAULT_COMPILE_TIMEOUT, compile_artifact};
pub use engine::{
    DEFAULT_MAX_FILE_BYTES, EPOCH_TICK, EngineError, EngineSettings, PluginEngine, check_header,
};
pub use error::{CallError, FaultKind, LoadError};
pub(crate) use frame::{Change, Frame};
pub(crate) use instance::BatchError;
pub use instance::{Handled, MAX_ERROR_BYTES, PluginInstance};
pub use limits::{
    DEFAULT_CALL_DEADLINE, DEFAULT_MEMORY_BYTES, HandleLimitExceeded, IdlePolicy, LimitError,
    LimitPolicy, LimitValues, Limits, LimitsConfig, MAX_HOST_RESOURCES, MemoryLimitExceeded,
    PluginLimits,
};
pub use loaded::{Identified, LoadOptions, LoadedPlugin, digest, revision};
pub use manifest::{
    Delivery, MAX_RESYNC, MAX_SUBSCRIPTIONS, MIN_RESYNC, Manifest, ManifestError, RequestedLimits,
    Subscription, is_plugin_name,
};
pub use pool::{Busy, Demand, DispatchConfig, MAX_WORKERS, default_workers, idle};
pub(crate) use world::HandlerCall;
pub use world::{AdmissionAnswer, AdmissionCall};
