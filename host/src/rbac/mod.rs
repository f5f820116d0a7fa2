//! Least-privilege RBAC derived from what plugins declare: `herald plugin
//! rbac` prints the ClusterRole; `deploy/10-rbac.yaml` holds the one for the
//! shipped plugins, and a test keeps the two equal. Reads give `list` and
//! `watch` on every subscribed resource
//! ([`crate::capability::reads::rbac`]); each capability that acts on the
//! cluster contributes its own rules from its folder through its
//! `Capability::rbac` hook (the Kubernetes capability its write rules'
//! verbs, [`crate::capability::kube::rbac`]; Events theirs,
//! [`crate::capability::events::rbac`]); this module adds `get` on the
//! discovery endpoints kinds are resolved through, and assembles the rules.
//!
//! Kinds are turned into resource names by k8s-openapi's metadata for
//! built-in kinds or by the cluster's discovery
//! ([`crate::discovery::KindResolver`]); nothing guesses a plural.

use crate::capability::{self, ClusterAsks, Verbs, reads};
use crate::discovery::{GroupResource, KindError, KindResolver};
use crate::plugin::Manifest;
use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use std::collections::{BTreeMap, BTreeSet};

pub use reads::rbac::WATCH_VERBS;

/// The discovery endpoints Herald reads (with `get`) to resolve kinds.
pub const DISCOVERY_URLS: [&str; 6] = [
    "/api",
    "/api/*",
    "/apis",
    "/apis/*",
    "/version",
    "/version/",
];

/// Every resource the plugins with these manifests subscribe to.
pub async fn watched_resources<'a>(
    manifests: impl IntoIterator<Item = &'a Manifest>,
    resolver: &KindResolver,
) -> Result<BTreeSet<GroupResource>, KindError> {
    let mut resources = BTreeSet::new();
    for manifest in manifests {
        reads::rbac::watched_resources(
            &manifest.name,
            &manifest.subscriptions,
            resolver,
            &mut resources,
        )
        .await?;
    }
    Ok(resources)
}

/// The RBAC verbs plugins need on each resource (`plural`, or
/// `plural/status`) for what they do on the cluster.
pub type WriteVerbs = Verbs;

/// The verbs plugins need for what their capabilities do on the cluster
/// (each capability's own rules: [`capability::rbac_verbs`]).
pub async fn write_verbs<'a>(
    manifests: impl IntoIterator<Item = &'a Manifest>,
    resolver: &KindResolver,
) -> Result<WriteVerbs, KindError> {
    let mut verbs = WriteVerbs::new();
    for manifest in manifests {
        let asks = ClusterAsks {
            plugin: &manifest.name,
            capabilities: &manifest.capabilities,
            writes: &manifest.writes,
            subscriptions: &manifest.subscriptions,
        };
        capability::rbac_verbs(&asks, resolver, &mut verbs).await?;
    }
    Ok(verbs)
}

/// The rules of the ClusterRole: list and watch on every watched resource
/// (one rule per API group), discovery, then the write verbs, one rule per
/// resource.
pub fn rules_with_writes(
    resources: &BTreeSet<GroupResource>,
    writes: &WriteVerbs,
) -> Vec<PolicyRule> {
    let mut rules = rules(resources);
    rules.extend(writes.iter().map(|(resource, verbs)| PolicyRule {
        api_groups: Some(vec![resource.group.clone()]),
        resources: Some(vec![resource.resource.clone()]),
        verbs: verbs.iter().map(|v| (*v).to_owned()).collect(),
        ..PolicyRule::default()
    }));
    rules
}

/// The rules: `list`/`watch` on the resources, one rule per API group
/// (groups and resources sorted), then `get` on the discovery endpoints.
pub fn rules(resources: &BTreeSet<GroupResource>) -> Vec<PolicyRule> {
    let mut by_group: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for watched in resources {
        by_group
            .entry(&watched.group)
            .or_default()
            .push(watched.resource.clone());
    }
    let strings = |items: &[&str]| items.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let mut rules: Vec<PolicyRule> = by_group
        .into_iter()
        .map(|(group, resources)| PolicyRule {
            api_groups: Some(vec![group.to_owned()]),
            resources: Some(resources),
            verbs: strings(&WATCH_VERBS),
            ..PolicyRule::default()
        })
        .collect();
    rules.push(PolicyRule {
        non_resource_urls: Some(strings(&DISCOVERY_URLS)),
        verbs: vec!["get".to_owned()],
        ..PolicyRule::default()
    });
    rules
}

/// The ClusterRole `name` granting [`rules`].
pub fn cluster_role(
    name: &str,
    resources: &BTreeSet<GroupResource>,
    writes: &WriteVerbs,
) -> ClusterRole {
    ClusterRole {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        rules: Some(rules_with_writes(resources, writes)),
        ..ClusterRole::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn watched(group: &str, resource: &str) -> GroupResource {
        GroupResource::new(group, resource)
    }

    #[test]
    fn one_rule_per_group_then_discovery() {
        let resources = BTreeSet::from([
            watched("apps", "replicasets"),
            watched("", "pods"),
            watched("apps", "deployments"),
        ]);
        let rules = rules(&resources);
        assert_eq!(rules.len(), 3);
        assert_eq!(rules[0].api_groups, Some(vec![String::new()]));
        assert_eq!(rules[0].resources, Some(vec!["pods".to_owned()]));
        assert_eq!(rules[0].verbs, ["list", "watch"]);
        assert_eq!(rules[1].api_groups, Some(vec!["apps".to_owned()]));
        assert_eq!(
            rules[1].resources,
            Some(vec!["deployments".to_owned(), "replicasets".to_owned()])
        );
        assert_eq!(rules[2].verbs, ["get"]);
        assert!(rules[2].resources.is_none());
        assert!(
            rules[2]
                .non_resource_urls
                .as_ref()
                .unwrap()
                .contains(&"/apis/*".to_owned())
        );
    }
}
