//! What a plugin may do, one capability per folder, each holding its grant
//! (typed, with its validation), its host side (the WIT interface it
//! implements, through a small view of the store's state that the runtime
//! implements, so no capability names the runtime's types), what dry-run
//! means for it, its audit record and counters, what `herald plugin replay`
//! shows of its calls (`replay.rs`), the RBAC it needs (`rbac.rs`), and its
//! tests:
//!
//! | capability | WIT (from) | grant | acts outside the host |
//! |---|---|---|---|
//! | [`log`] | `log` (0.1.0) | every plugin | no |
//! | [`config`] | `config` (0.1.0) | every plugin (its own) | no |
//! | [`cache`] | `cache` (0.1.0), `index` (0.3.0) | its subscriptions | no |
//! | [`workqueue`] | `workqueue` (0.3.0) | every plugin | no |
//! | [`metrics`] | `metrics` (0.3.0) | every plugin (its own) | no |
//! | [`deadline`] | `deadline` (0.4.0) | every plugin | no |
//! | [`kube`] | `kube` (0.2.0) | `grants.writes` | yes: API calls |
//! | [`events`] | `events` (0.2.0) | `grants.events` | yes: Events |
//! | [`http`] | `wasi:http` (0.3.0) | `grants.http` | yes: HTTP requests |
//!
//! Every capability is denied unless granted, checked on every call,
//! audited and bounded by the call's deadline ([`CallScope`]); those that
//! act outside the host have no effect there in dry-run ([`Mode`]).
//! [`add_to_linker`] links them all into the engine, for every world
//! version; [`Grants::authorize`] checks what a plugin declares against
//! what the operator granted when it loads.
//!
//! Adding a capability: a folder here with its grant, its host side and
//! view, its tests; a line in [`View`] and [`add_to_linker`]; the view's
//! implementation on the runtime's store state; its WIT in a new world
//! version (`wit/`, bound in [`crate::wit`]).

pub mod audit;
pub mod cache;
mod call;
pub mod config;
pub mod deadline;
pub mod events;
mod grants;
pub mod http;
pub mod kube;
pub mod log;
pub mod metrics;
mod mode;
pub mod rate;
pub mod reads;
pub mod workqueue;

pub use audit::{ActionStats, ActionStatsCollector, AuditLog};
pub use call::{AnswerBudget, CallScope, REQUEST_SHARE, request_budget};
pub use grants::{Authorized, Declared, Grants};
pub use mode::Mode;

use std::sync::Arc;
use wasmtime::component::{HasData, Linker};

/// The capabilities a plugin may name in its manifest's `capabilities`.
/// Kubernetes writes are declared by write rules instead; the rest need no
/// declaration.
pub const KNOWN_CAPABILITIES: &[&str] = &[events::CAPABILITY, http::CAPABILITY];

/// How the plugins of one host reach the world outside it, and where what
/// they do is counted: the services the capabilities that act are built on.
#[derive(Debug, Clone)]
pub struct ClusterAccess {
    /// Where Kubernetes calls (and Events) go.
    pub api: Arc<dyn kube::ApiBackend>,
    /// Counters for `/metrics`.
    pub stats: Arc<ActionStats>,
    /// Offline tools only (`herald plugin replay`): answers outbound HTTP
    /// in place of the network, for plugins that declare `http` when
    /// [`Grants::all_declared`] ([`http::Egress::offline`]).
    pub offline_http: Option<Arc<dyn http::OfflineHttp>>,
}

impl ClusterAccess {
    /// Calls go to `api`, counted in fresh stats.
    pub fn new(api: Arc<dyn kube::ApiBackend>) -> Self {
        ClusterAccess {
            api,
            stats: Arc::default(),
            offline_http: None,
        }
    }
}

/// Everything the store's state offers the capabilities: one view each.
pub trait View:
    log::LogView
    + config::ConfigView
    + cache::CacheView
    + workqueue::WorkqueueView
    + metrics::MetricsView
    + deadline::DeadlineView
    + kube::KubeView
    + events::EventsView
    + wasmtime_wasi_http::WasiHttpView
{
}

impl<T> View for T where
    T: log::LogView
        + config::ConfigView
        + cache::CacheView
        + workqueue::WorkqueueView
        + metrics::MetricsView
        + deadline::DeadlineView
        + kube::KubeView
        + events::EventsView
        + wasmtime_wasi_http::WasiHttpView
{
}

/// Links every capability's imports into `linker`, for every world version.
pub fn add_to_linker<T: View + 'static>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    types_to_linker(linker)?;
    log::add_to_linker(linker)?;
    config::add_to_linker(linker)?;
    cache::add_to_linker(linker)?;
    workqueue::add_to_linker(linker)?;
    metrics::add_to_linker(linker)?;
    deadline::add_to_linker(linker)?;
    kube::add_to_linker(linker)?;
    events::add_to_linker(linker)?;
    http::add_to_linker(linker)
}

/// The `types` interfaces, which hold records only.
struct Types;

impl HasData for Types {
    type Data<'a> = Types;
}

impl crate::wit::v0_1::herald::plugin::types::Host for Types {}
impl crate::wit::v0_2::herald::plugin::types::Host for Types {}
impl crate::wit::v0_3::herald::plugin0_3_0::types::Host for Types {}

fn types_to_linker<T: 'static>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    use crate::wit::{v0_1, v0_2, v0_3};
    v0_1::herald::plugin::types::add_to_linker::<T, Types>(linker, |_| Types)?;
    v0_2::herald::plugin::types::add_to_linker::<T, Types>(linker, |_| Types)?;
    v0_3::herald::plugin0_3_0::types::add_to_linker::<T, Types>(linker, |_| Types)
}
