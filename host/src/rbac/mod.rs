//! Least-privilege RBAC derived from what plugins watch: Herald's informers
//! only list and watch, so its ClusterRole grants `list` and `watch` on
//! exactly the resources of the plugins' subscriptions, plus `get` on the
//! discovery endpoints it resolves kinds through. `herald plugin rbac`
//! prints it; `deploy/rbac.yaml` holds the one for the shipped plugins, and
//! a test keeps the two equal.
//!
//! Kinds are turned into resource names by k8s-openapi's metadata for
//! built-in kinds ([`builtin`]) or by the cluster's discovery (any kind, CRDs
//! included); nothing guesses a plural.

pub mod builtin;

use crate::discovery::{ResolveError, Resolver};
use crate::gvk::Gvk;
use crate::plugin::Manifest;
use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use std::collections::{BTreeMap, BTreeSet};

/// The verbs an informer needs on a watched resource.
pub const WATCH_VERBS: [&str; 2] = ["list", "watch"];

/// The discovery endpoints Herald reads (with `get`) to resolve kinds.
pub const DISCOVERY_URLS: [&str; 6] = [
    "/api",
    "/api/*",
    "/apis",
    "/apis/*",
    "/version",
    "/version/",
];

/// A resource Herald must list and watch.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WatchedResource {
    /// API group; empty for the core group.
    pub group: String,
    /// Plural resource name, e.g. `pods`.
    pub resource: String,
}

/// A kind could not be turned into a resource.
#[derive(Debug, thiserror::Error)]
pub enum RbacError {
    /// Not a built-in kind, and no cluster to ask.
    #[error(
        "plugin {plugin}: {gvk} is not a built-in Kubernetes kind known to this Herald (a custom resource, a beta kind or a misspelling): pass --kubeconfig to resolve it through the cluster's discovery"
    )]
    UnknownKind {
        /// The plugin subscribing to it.
        plugin: String,
        /// The kind.
        gvk: Gvk,
    },
    /// Discovery did not find it, or failed.
    #[error("plugin {plugin}: {source}")]
    Discovery {
        /// The plugin subscribing to it.
        plugin: String,
        /// Why.
        source: ResolveError,
    },
}

/// How kinds are resolved to resources.
#[derive(Debug)]
pub enum KindResolver {
    /// k8s-openapi's built-in kinds only (no cluster needed).
    Builtin,
    /// The cluster's discovery: any served kind, CRDs included.
    Discovery(Resolver),
}

impl KindResolver {
    /// The resource of `gvk`, subscribed to by `plugin`.
    pub async fn resolve(&self, plugin: &str, gvk: &Gvk) -> Result<WatchedResource, RbacError> {
        match self {
            KindResolver::Builtin => builtin::lookup(&gvk.group, &gvk.version, &gvk.kind)
                .map(|kind| WatchedResource {
                    group: kind.group.to_owned(),
                    resource: kind.plural.to_owned(),
                })
                .ok_or_else(|| RbacError::UnknownKind {
                    plugin: plugin.to_owned(),
                    gvk: gvk.clone(),
                }),
            KindResolver::Discovery(resolver) => resolver
                .resolve(gvk)
                .await
                .map(|resolved| WatchedResource {
                    group: resolved.gvk.group,
                    resource: resolved.plural,
                })
                .map_err(|source| RbacError::Discovery {
                    plugin: plugin.to_owned(),
                    source,
                }),
        }
    }
}

/// Every resource the plugins with these manifests subscribe to.
pub async fn watched_resources<'a>(
    manifests: impl IntoIterator<Item = &'a Manifest>,
    resolver: &KindResolver,
) -> Result<BTreeSet<WatchedResource>, RbacError> {
    let mut resources = BTreeSet::new();
    for manifest in manifests {
        for subscription in &manifest.subscriptions {
            resources.insert(resolver.resolve(&manifest.name, &subscription.kind).await?);
        }
    }
    Ok(resources)
}

/// The RBAC verbs plugins need on each resource (`plural`, or
/// `plural/status`) for the writes they declare (which the operator's grant
/// covers: a plugin declaring more is not loaded) and the Events they
/// publish.
pub type WriteVerbs = BTreeMap<WatchedResource, BTreeSet<&'static str>>;

/// The verbs plugins need for their declared writes and Events. A rule's
/// kind is resolved at the version the plugin subscribes to it, if it does,
/// else as a built-in kind.
pub async fn write_verbs<'a>(
    manifests: impl IntoIterator<Item = &'a Manifest>,
    resolver: &KindResolver,
) -> Result<WriteVerbs, RbacError> {
    let mut verbs = WriteVerbs::new();
    for manifest in manifests {
        for rule in &manifest.writes {
            let subscribed = manifest
                .subscriptions
                .iter()
                .find(|s| s.kind.group == rule.group && s.kind.kind == rule.kind)
                .map(|s| s.kind.clone());
            let gvk = match subscribed {
                Some(gvk) => gvk,
                None => match builtin::lookup_kind(&rule.group, &rule.kind) {
                    Some(kind) => Gvk::new(kind.group, kind.version, kind.kind),
                    None => {
                        return Err(RbacError::UnknownKind {
                            plugin: manifest.name.clone(),
                            gvk: Gvk::new(&rule.group, "?", &rule.kind),
                        });
                    }
                },
            };
            let mut resource = resolver.resolve(&manifest.name, &gvk).await?;
            if let Some(sub) = &rule.subresource {
                resource.resource = format!("{}/{sub}", resource.resource);
            }
            let entry = verbs.entry(resource).or_default();
            for verb in &rule.verbs {
                entry.extend(verb.rbac_verbs());
            }
        }
        if manifest
            .capabilities
            .iter()
            .any(|c| c == crate::capability::events::CAPABILITY)
        {
            verbs
                .entry(WatchedResource {
                    group: "events.k8s.io".into(),
                    resource: "events".into(),
                })
                .or_default()
                .extend(["create", "patch"]);
        }
    }
    Ok(verbs)
}

/// The rules of the ClusterRole: list and watch on every watched resource
/// (one rule per API group), discovery, then the write verbs, one rule per
/// resource.
pub fn rules_with_writes(
    resources: &BTreeSet<WatchedResource>,
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
pub fn rules(resources: &BTreeSet<WatchedResource>) -> Vec<PolicyRule> {
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
    resources: &BTreeSet<WatchedResource>,
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

    fn watched(group: &str, resource: &str) -> WatchedResource {
        WatchedResource {
            group: group.into(),
            resource: resource.into(),
        }
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

    #[tokio::test]
    async fn builtin_resolution_refuses_a_custom_kind_and_asks_for_a_kubeconfig() {
        let err = KindResolver::Builtin
            .resolve("widgets", &Gvk::new("example.com", "v1", "Widget"))
            .await
            .unwrap_err();
        let message = err.to_string();
        assert!(message.contains("example.com/v1 Widget"), "{message}");
        assert!(message.contains("--kubeconfig"), "{message}");
        let pods = KindResolver::Builtin
            .resolve("p", &Gvk::new("", "v1", "Pod"))
            .await
            .unwrap();
        assert_eq!(pods, watched("", "pods"));
    }
}
