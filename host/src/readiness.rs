//! What holds a replica's readiness, named: each informer that has not
//! synced (and the request the API server refused, with its verb and
//! resource), each plugin still waiting for its caches or handling its
//! initial list; and the policies for an informer the API server forbids
//! (`readiness.forbiddenInformers`) and for one of another cluster than the
//! default one that has not synced (`readiness.otherClusters`: unreachable,
//! slow or still listing). [`Daemon::readiness`] builds the report;
//! `/readyz`, the dashboard and the log say it.
//!
//! [`Daemon::readiness`]: crate::daemon::Daemon::readiness

use crate::informer::RequestFailure;
use serde::{Deserialize, Serialize};

/// Whether an informer a policy covers, while it has not synced, holds the
/// replica's readiness: one the API server forbids (a `403` on its list or
/// watch: a missing RBAC rule), or one of another cluster than the default
/// one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HoldPolicy {
    /// It does, as any informer that has not synced: a replica missing a
    /// rule one plugin needs, or a cluster, is not ready, so a rollout that
    /// would bring the gap in stops there and the replicas it replaces go
    /// on.
    #[default]
    HoldReplica,
    /// Only the plugins subscribed to it wait (and say why in `/readyz`,
    /// `/plugins` and the dashboard); the replica is ready once everything
    /// else is. For plugins dropped in at run time, where one plugin's
    /// missing rule should not take every replica out of readiness, and for
    /// fleets, where one cluster down should not either.
    HoldPlugin,
}

/// The policy for forbidden informers (`readiness.forbiddenInformers`).
pub type ForbiddenInformers = HoldPolicy;

impl HoldPolicy {
    /// The value as the configuration writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            HoldPolicy::HoldReplica => "hold-replica",
            HoldPolicy::HoldPlugin => "hold-plugin",
        }
    }
}

/// `readiness`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct ReadinessConfig {
    /// `hold-replica` (the default) or `hold-plugin`.
    pub forbidden_informers: ForbiddenInformers,
    /// What an informer of another cluster than the default one holds
    /// while it has not synced: `hold-replica` (the default) or
    /// `hold-plugin`.
    pub other_clusters: HoldPolicy,
}

/// What holds readiness, or would but for the policy.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Readiness {
    /// Nothing holds it.
    pub ready: bool,
    /// What holds it: the replica's own state first, then informers, then
    /// plugins.
    pub holding: Vec<Hold>,
    /// What waits without holding it: under `hold-plugin`, the forbidden
    /// informers (or those of other clusters) and the plugins subscribed to
    /// them.
    pub not_holding: Vec<Hold>,
}

/// One thing readiness waits for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Hold {
    /// What it is.
    pub kind: HoldKind,
    /// The informer's key or the plugin's name (empty for the replica).
    pub name: String,
    /// Why, in words.
    pub why: String,
    /// The request the API server refused, for an informer that cannot
    /// list or watch, or for a plugin waiting on one.
    pub failure: Option<RequestFailure>,
}

/// What a [`Hold`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HoldKind {
    /// The replica: loading the plugin directory, or shutting down.
    Replica,
    /// A shared informer.
    Informer,
    /// A plugin.
    Plugin,
}

impl Hold {
    /// One line: `informer pods: …`, `plugin web: …`, or the replica's why.
    pub fn line(&self) -> String {
        match self.kind {
            HoldKind::Replica => self.why.clone(),
            HoldKind::Informer => format!("informer {}: {}", self.name, self.why),
            HoldKind::Plugin => format!("plugin {}: {}", self.name, self.why),
        }
    }
}

impl Readiness {
    /// From what holds it and what does not.
    pub fn new(holding: Vec<Hold>, not_holding: Vec<Hold>) -> Self {
        Readiness {
            ready: holding.is_empty(),
            holding,
            not_holding,
        }
    }

    /// `/readyz`'s body: `ready` or `not ready`, then one line per thing
    /// that holds it, then what waits without holding it. Just `ready\n`
    /// when nothing waits.
    pub fn text(&self, policy: ForbiddenInformers) -> String {
        let mut text = String::from(if self.ready { "ready\n" } else { "not ready\n" });
        for hold in &self.holding {
            text.push_str("- ");
            text.push_str(&hold.line());
            text.push('\n');
        }
        if !self.not_holding.is_empty() {
            // Spared by one policy or the other: forbidden informers only
            // under `forbiddenInformers: hold-plugin`.
            text.push_str(match policy {
                HoldPolicy::HoldPlugin => {
                    "not holding readiness (readiness.forbiddenInformers: hold-plugin):\n"
                }
                HoldPolicy::HoldReplica => {
                    "not holding readiness (readiness.otherClusters: hold-plugin):\n"
                }
            });
            for hold in &self.not_holding {
                text.push_str("- ");
                text.push_str(&hold.line());
                text.push('\n');
            }
        }
        text
    }

    /// One line for the log: what holds readiness, `; `-separated.
    pub fn summary(&self) -> String {
        let lines: Vec<String> = self.holding.iter().map(Hold::line).collect();
        lines.join("; ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::SystemTime;

    fn forbidden() -> RequestFailure {
        RequestFailure {
            verb: "list",
            resource: "pods".into(),
            namespace: None,
            code: Some(403),
            reason: "Forbidden".into(),
            message: "pods is forbidden: User \"herald\" cannot list resource \"pods\"".into(),
            at: SystemTime::UNIX_EPOCH,
        }
    }

    #[test]
    fn readyz_names_each_cause_and_what_the_policy_leaves_out() {
        let informer = Hold {
            kind: HoldKind::Informer,
            name: "pods".into(),
            why: forbidden().to_string(),
            failure: Some(forbidden()),
        };
        let plugin = Hold {
            kind: HoldKind::Plugin,
            name: "web".into(),
            why: "handling its initial list (3 notifications queued)".into(),
            failure: None,
        };
        let held = Readiness::new(vec![informer.clone(), plugin.clone()], vec![]);
        assert_eq!(
            held.text(ForbiddenInformers::HoldReplica),
            "not ready\n\
             - informer pods: list pods refused: 403 Forbidden: pods is forbidden: User \"herald\" \
             cannot list resource \"pods\"\n\
             - plugin web: handling its initial list (3 notifications queued)\n"
        );
        let ready = Readiness::new(vec![], vec![informer]);
        assert!(ready.ready);
        assert!(
            ready
                .text(ForbiddenInformers::HoldPlugin)
                .starts_with("ready\nnot holding readiness (readiness.forbiddenInformers: hold-plugin):\n- informer pods: list pods refused: 403")
        );
        assert_eq!(
            Readiness::new(vec![], vec![]).text(ForbiddenInformers::HoldReplica),
            "ready\n"
        );
    }
}
