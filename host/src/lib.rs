//! Herald runs Kubernetes shared informers and dispatches every notification
//! (add, update, delete) into sandboxed WebAssembly plugins.
//!
//! The crate is a library with a thin binary (`herald`) on top. Its modules:
//!
//! - [`informer`]: shared informers: list/watch, the store, distribution.
//! - [`plugin`]: the wasmtime runtime: engine, sandbox, limits, instances.
//! - [`dispatch`]: listeners' buffers and the plugin workers that drain them.
//! - [`store`]: the shared cache of objects, as JSON held once.
//! - [`daemon`]: the running plugins, wired to their informers.
//! - [`reload`]: the plugin directory, followed: load, swap, unload.
//! - [`service`]: the whole daemon, started from a configuration.
//! - [`leader`]: leader election on a Lease, for running several replicas.
//! - [`rbac`]: the least-privilege ClusterRole derived from what plugins watch.
//! - [`replay`]: feed recorded events to a plugin offline.
//! - [`build`]: a plugin built from its source directory (Go).
//! - [`cli`]: the command-line interface.
//!
//! See `ARCHITECTURE.md` at the repository root for how the parts fit.

pub mod accept;
pub mod admission;
pub mod api_path;
pub mod build;
pub mod capability;
pub mod cli;
pub mod cluster;
pub mod config;
pub mod daemon;
#[cfg(feature = "embedded")]
pub mod demo;
pub mod discovery;
pub mod dispatch;
pub mod fleet;
pub mod gvk;
pub mod informer;
pub mod leader;
pub mod logging;
pub mod oci;
pub mod ops;
pub mod plugin;
pub mod rbac;
pub mod readiness;
pub mod reload;
pub mod replay;
pub mod scratch;
pub mod selector;
pub mod service;
pub mod shard;
pub mod source;
pub mod store;
pub mod subscription;
pub mod telemetry;
pub mod text;
pub mod throttle;
pub mod units;
pub mod webhook;
pub mod wit;
pub mod yaml;
