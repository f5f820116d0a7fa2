//! Kinds to the resources RBAC names, resolved without a cluster
//! (k8s-openapi's built-in kinds, [`super::builtin`]) or through its
//! discovery (any served kind, CRDs included); nothing guesses a plural.

use super::{ResolveError, Resolver, builtin};
use crate::gvk::Gvk;

/// An API group and one of its resources, as RBAC rules name them
/// (`pods`, or a subresource such as `deployments/status`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GroupResource {
    /// API group; empty for the core group.
    pub group: String,
    /// Plural resource name, e.g. `pods`, optionally `/subresource`.
    pub resource: String,
}

impl GroupResource {
    /// `resource` of `group`.
    pub fn new(group: &str, resource: &str) -> Self {
        GroupResource {
            group: group.to_owned(),
            resource: resource.to_owned(),
        }
    }
}

/// A plugin's kind could not be turned into a resource.
#[derive(Debug, thiserror::Error)]
pub enum KindError {
    /// Not a built-in kind, and no cluster to ask.
    #[error(
        "plugin {plugin}: {gvk} is not a built-in Kubernetes kind known to this Herald (a custom resource, a beta kind or a misspelling): pass --kubeconfig to resolve it through the cluster's discovery"
    )]
    UnknownKind {
        /// The plugin naming it.
        plugin: String,
        /// The kind.
        gvk: Gvk,
    },
    /// Discovery did not find it, or failed.
    #[error("plugin {plugin}: {source}")]
    Discovery {
        /// The plugin naming it.
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
    /// The resource of `gvk`, named by `plugin`.
    pub async fn resolve(&self, plugin: &str, gvk: &Gvk) -> Result<GroupResource, KindError> {
        match self {
            KindResolver::Builtin => builtin::lookup(&gvk.group, &gvk.version, &gvk.kind)
                .map(|kind| GroupResource::new(kind.group, kind.plural))
                .ok_or_else(|| KindError::UnknownKind {
                    plugin: plugin.to_owned(),
                    gvk: gvk.clone(),
                }),
            KindResolver::Discovery(resolver) => resolver
                .resolve(gvk)
                .await
                .map(|resolved| GroupResource {
                    group: resolved.gvk.group,
                    resource: resolved.plural,
                })
                .map_err(|source| KindError::Discovery {
                    plugin: plugin.to_owned(),
                    source,
                }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(pods, GroupResource::new("", "pods"));
    }
}
