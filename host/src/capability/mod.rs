//! What a plugin may do, one capability per folder, each holding its grant
//! (typed, with its validation), its state for each plugin and each
//! instance, its host side (the WIT interface it implements, on that state
//! and the call under way; no capability names the runtime's types), what
//! dry-run means for it, its audit record and counters, what `herald plugin
//! replay` shows of its calls (`replay.rs`), the RBAC it needs (`rbac.rs`),
//! and its tests:
//!
//! | capability | WIT (from) | grant | acts outside the host |
//! |---|---|---|---|
//! | [`log`] | `log` (0.1.0) | every plugin | no |
//! | [`config`] | `config` (0.1.0) | every plugin (its own) | no |
//! | [`cache`] | `cache` (0.1.0), `index` (0.3.0) | its subscriptions | no |
//! | [`workqueue`] | `workqueue` (0.3.0) | every plugin | no |
//! | [`metrics`] | `metrics` (0.3.0) | every plugin (its own) | no |
//! | [`deadline`] | `deadline` (0.4.0) | every plugin | no |
//! | [`cluster`] | `cluster` (0.6.0) | every plugin (its own clusters) | no |
//! | [`kube`] | `kube` (0.2.0) | `grants.writes` | yes: API calls |
//! | [`events`] | `events` (0.2.0) | `grants.events` | yes: Events |
//! | [`http`] | `wasi:http` (0.3.0) | `grants.http` | yes: HTTP requests |
//!
//! Every capability is denied unless granted, checked on every call,
//! audited and bounded by the call's deadline ([`CallScope`]); those that
//! act outside the host have no effect there in dry-run ([`Mode`]).
//!
//! Each capability is a [`Capability`] (and, if the operator grants it, a
//! [`Granted`]) named once in the list below (`capabilities!`, in
//! `factor.rs`), which generates from it the state the runtime stores
//! ([`PluginCapabilities`], [`InstanceCapabilities`], handed out through
//! [`Store`]), [`add_to_linker`] (every capability, every world version,
//! each import reaching its own state), [`ActionStats`] (the counters, one
//! field each), [`Grants`] and [`GrantConfig`] (one typed grant each, its
//! validation, the trust rule's powers), [`known_capabilities`],
//! [`rbac_verbs`] and [`replay_about`]; [`Grants::authorize`] checks what
//! a plugin declares against what the operator granted when it loads.
//! ARCHITECTURE.md walks through adding one.

pub mod audit;
pub mod cache;
mod call;
pub mod cluster;
pub mod config;
pub mod deadline;
pub mod events;
mod factor;
mod grants;
pub mod http;
pub mod kube;
pub mod log;
pub mod metrics;
mod mode;
pub mod rate;
pub mod reads;
pub mod workqueue;

pub use audit::{AuditLog, AuditStats};
pub use call::{AnswerBudget, CallCluster, CallScope, REQUEST_SHARE, request_budget};
pub use factor::{About, Acts, Capability, Granted, Stats, Verbs};
pub use grants::{Authorized, Declared, NotGranted};
pub use mode::{AdmissionMode, Mode};

use factor::capabilities;
use std::sync::Arc;
use wasmtime::component::{HasData, Linker};

capabilities! {
    every_plugin {
        log: log::Log,
        config: config::Config,
        cache: cache::Cache,
        workqueue: workqueue::Workqueue,
        metrics: metrics::Metrics,
        deadline: deadline::Deadline,
        cluster: cluster::Cluster,
    }
    granted {
        kube / writes: kube::Kube,
        events / events: events::Events,
        http / http: http::Http => wasmtime_wasi_http::WasiHttpView,
    }
}

impl ActionStats {
    /// API calls of `plugin` with `verb` that ended in `outcome`, in either mode.
    pub fn requests(&self, plugin: &str, verb: &str, outcome: &str) -> u64 {
        self.kube.requests(plugin, verb, outcome)
    }

    /// Rate-limit waits of `plugin` and calls it refused.
    pub fn throttling(&self, plugin: &str) -> (u64, u64) {
        self.kube.throttling(plugin)
    }

    /// Events of `plugin` that ended in `outcome`.
    pub fn events(&self, plugin: &str, outcome: &str) -> u64 {
        self.events.count(plugin, outcome)
    }

    /// Audit lines of `plugin` its rate limit suppressed.
    pub fn audit_suppressed(&self, plugin: &str) -> u64 {
        self.audit.suppressed(plugin)
    }
}

/// What the runtime builds for each plugin it loads, from which every
/// capability takes what its per-plugin state needs
/// ([`Capability::prepare`]). Defined here, beside the list, as the
/// vocabulary the capabilities share: each capability's folder names it,
/// and it names what some of them provide.
#[derive(Debug, Clone, Copy)]
pub struct Setup<'a> {
    /// The plugin's logger (rate-limited, tagged with its name).
    pub logger: &'a Arc<log::PluginLogger>,
    /// Its window on the shared cache.
    pub cache: &'a Arc<cache::CacheScope>,
    /// The operator's configuration for it, as JSON text.
    pub config: Option<&'a str>,
    /// The metrics its manifest defines.
    pub metrics: &'a metrics::PluginMetrics,
    /// What the operator granted it, checked against what it declares.
    pub authorized: &'a Authorized,
}

/// What one plugin's manifest asks of the cluster, as `herald plugin rbac`
/// reads it ([`Capability::rbac`]).
#[derive(Debug, Clone, Copy)]
pub struct ClusterAsks<'a> {
    /// The plugin's name.
    pub plugin: &'a str,
    /// The capabilities it declares.
    pub capabilities: &'a [String],
    /// Its write rules.
    pub writes: &'a [kube::WriteRule],
    /// What it subscribes to (a write rule's kind is resolved at the
    /// version the plugin subscribes to it, if it does).
    pub subscriptions: &'a [crate::subscription::Subscription],
}

/// The Prometheus collector of an [`ActionStats`]: each capability's
/// families, in the list's order, then the audit's.
#[derive(Debug)]
pub struct ActionStatsCollector(pub Arc<ActionStats>);

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

#[cfg(test)]
mod tests {
    use super::{ABOUT, Acts};

    /// The text of `path`, relative to the host crate.
    fn read(path: &str) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    #[test]
    fn every_capability_is_documented_and_those_that_act_have_rbac_and_replay() {
        let table = read("src/capability/mod.rs");
        let architecture = read("../ARCHITECTURE.md");
        let security = read("../SECURITY.md");
        let replay = read("src/replay/intents.rs");
        let layers = architecture
            .lines()
            .find(|line| line.trim_start().starts_with("3  capability/{"))
            .expect("ARCHITECTURE.md's layer table lists the capability folders");
        let names: std::collections::BTreeSet<_> = ABOUT.iter().map(|a| a.name).collect();
        assert_eq!(
            names.len(),
            ABOUT.len(),
            "the list names each capability once"
        );
        for about in ABOUT {
            let name = about.name;
            assert!(
                table.contains(&format!("| [`{name}`] | {} |", about.wit)),
                "capability/mod.rs's table has no row for {name} ({})",
                about.wit
            );
            assert!(
                layers.contains(&format!("{{{name},")) || layers.contains(&format!(",{name},")),
                "ARCHITECTURE.md's layer table does not list capability/{name}"
            );
            let folder = format!("src/capability/{name}");
            if about.acts == Acts::InsideHost {
                continue;
            }
            let exists = |file: &str| {
                std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join(&folder)
                    .join(file)
                    .exists()
            };
            let own = read(&format!("{folder}/mod.rs"));
            assert!(
                security.contains(&format!("capability/{name}/")),
                "{name} acts outside the host: SECURITY.md must say where it is enforced"
            );
            assert!(
                exists("replay.rs")
                    && (own.contains("fn replay_about(")
                        || replay.contains(&format!("{name}::replay"))),
                "{name} acts outside the host: replay must show its calls \
                 ({folder}/replay.rs, through its `replay_about` hook, or, for a \
                 backend of its own, in replay/intents.rs)"
            );
            if about.acts == Acts::OnCluster {
                assert!(
                    exists("rbac.rs") && own.contains("fn rbac("),
                    "{name} acts on the cluster: it needs RBAC rules \
                     ({folder}/rbac.rs, through its `rbac` hook)"
                );
            }
        }
    }
}
