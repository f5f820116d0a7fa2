//! The `kube` capability: plugins read objects from the API server and
//! create, replace, patch, server-side apply and delete them (or their
//! status), within their declared and granted write rules.
//!
//! - **Grant.** The manifest declares write rules ([`WriteRule`]: verbs ×
//!   group/kind × object or `status` × namespaces); the operator's
//!   `plugins.<name>.grants.writes` must cover each, or the plugin is not
//!   loaded, naming the missing rule ([`missing_grant`]). Every call is
//!   checked against the declared rules before a request is built
//!   (`not-granted` otherwise, nothing sent).
//! - **Bounds.** Calls pass the plugin's token bucket (client-go's, 5/s
//!   burst 10 by default, `plugins.<name>.rateLimit`), shared with its
//!   Events, and get at most 80 % of what is left of the call's deadline.
//!   The client never retries: a 409 or 429 goes back to the plugin. An
//!   answer counts against the instance's memory cap.
//! - **Dry-run.** Every write carries `dryRun=All`: the server validates and
//!   admits it and persists nothing; the host logs what it would have
//!   changed ([`log_shadow`]) and counts it with `mode="dry-run"`. Reads
//!   are sent as they are.
//! - **Audit.** One line per call on `herald::audit` (plugin, verb, kind,
//!   namespace, name, subresource, outcome, mode, latency), and
//!   `herald_plugin_api_requests_total` and its latency histogram
//!   ([`KubeStats`]).
//! - **RBAC.** The host's service account needs each declared verb on the
//!   kind (`herald plugin rbac` adds them; apply needs `patch` and
//!   `create`).
//! - **Replay.** `herald plugin replay` records each call, answers it
//!   offline and prints it (`crate::replay`).
//!
//! The WIT import's host side is [`host`](KubeHost); where a call goes is
//! an [`ApiBackend`]: the cluster ([`ClusterApi`]) or the script of an
//! offline replay.

mod access;
mod blind;
mod cluster;
mod host;
pub mod rbac;
pub mod replay;
mod request;
mod rules;
mod shadow;
mod stats;

pub use access::KubeAccess;
pub use cluster::{ClusterApi, classify, writer_config};
pub use host::KubeHost;
pub(crate) use request::invalid;
pub use request::{
    ApiBackend, ApiRequest, Cause, DeleteOptions, KubeError, Operation, PatchType, Propagation,
    Target,
};
pub use rules::{
    ALL_NAMESPACES, Access, RuleError, STATUS, Verb, WriteRule, missing_grant, permits,
};
pub use shadow::{Values, changes, log_shadow};
pub use stats::KubeStats;

use crate::capability::audit::AUDIT_TARGET;
use std::time::Duration;

/// Writes the audit line of one API call (Events' calls included).
pub(crate) fn audit_line(
    plugin: &str,
    cluster: &str,
    request: &ApiRequest,
    answer: Option<&str>,
    outcome: &'static str,
    latency: Option<Duration>,
    detail: &str,
) {
    let target = &request.target;
    let name = request.shown_name(answer);
    tracing::info!(
        target: AUDIT_TARGET,
        plugin,
        cluster,
        verb = request.operation.verb().as_str(),
        kind = %target.gvk,
        namespace = target.namespace.as_deref().unwrap_or(""),
        name,
        subresource = target.subresource.as_deref().unwrap_or(""),
        outcome,
        mode = crate::capability::audit::mode_label(request.dry_run),
        latency_ms = crate::capability::audit::millis(latency),
        detail,
        "plugin API call"
    );
}

/// The `kube` capability, as the list in `capability/mod.rs` names it.
#[derive(Debug)]
pub struct Kube;

impl super::factor::Capability for Kube {
    const ABOUT: super::factor::About = super::factor::About {
        name: "kube",
        wit: "`kube` (0.2.0)",
        acts: super::factor::Acts::OnCluster,
    };
    type Stats = KubeStats;
    type Plugin = std::sync::Arc<KubeAccess>;
    type Instance = ();

    fn prepare(setup: &super::Setup<'_>) -> Self::Plugin {
        setup.authorized.api.clone()
    }

    fn instantiate(_: &Self::Plugin) {}

    async fn rbac(
        asks: &super::ClusterAsks<'_>,
        resolver: &crate::discovery::KindResolver,
        verbs: &mut super::factor::Verbs,
    ) -> Result<(), crate::discovery::KindError> {
        rbac::write_verbs(
            asks.plugin,
            asks.writes,
            asks.subscriptions,
            resolver,
            verbs,
        )
        .await
    }

    fn host<'a>(
        access: &'a Self::Plugin,
        _: &'a mut (),
        call: super::CallScope<'a>,
    ) -> KubeHost<'a> {
        KubeHost { access, call }
    }

    fn add_to_linker<T: super::View + 'static>(
        linker: &mut wasmtime::component::Linker<T>,
        reach: fn(&mut T) -> KubeHost<'_>,
    ) -> wasmtime::Result<()> {
        host::add_to_linker(linker, reach)
    }
}

impl wasmtime::component::HasData for Kube {
    type Data<'a> = KubeHost<'a>;
}

impl super::factor::Granted for Kube {
    type Grant = Vec<WriteRule>;
    const POWER: &'static str = "Kubernetes writes";
    const DECLARED_AS: Option<&'static str> = None;

    fn by_name() -> Result<Self::Grant, &'static str> {
        Err("Kubernetes writes are granted by rules in grants.writes")
    }

    fn is_granted(grant: &Self::Grant) -> bool {
        !grant.is_empty()
    }

    fn validate(grant: &Self::Grant) -> Result<(), crate::yaml::Invalid> {
        for (index, rule) in grant.iter().enumerate() {
            rule.validate(index)
                .map_err(|e| crate::yaml::Invalid::new(format!("[{index}]"), e.to_string()))?;
        }
        Ok(())
    }

    fn covers(grant: &Self::Grant, declared: &super::Declared<'_>) -> Result<(), String> {
        match missing_grant(declared.writes, grant) {
            Some(missing) => Err(format!(
                "declares writes the operator has not granted: {missing}"
            )),
            None => Ok(()),
        }
    }
}
