//! Resolves a group/version/kind to its REST resource through API
//! discovery (CRDs included): what informers watch and what plugins' calls
//! reach. [`builtin`] knows k8s-openapi's kinds without a cluster, and
//! [`KindResolver`] turns a plugin's kinds into the resources RBAC names.

pub mod builtin;
mod kinds;

pub use kinds::{GroupResource, KindError, KindResolver};

use crate::api_path::ApiPath;
use crate::gvk::Gvk;
use kube::discovery::Scope;
use std::collections::HashMap;
use std::sync::Mutex;

/// A kind resolved through discovery to its REST resource.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ResolvedResource {
    /// Group, version and kind.
    pub gvk: Gvk,
    /// Plural resource name, e.g. `pods`.
    pub plural: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
}

impl ResolvedResource {
    /// The collection's path, across all namespaces or in `namespace`
    /// (ignored for a cluster-scoped resource), its segments encoded.
    pub fn path(&self, namespace: Option<&str>) -> ApiPath {
        ApiPath::collection(
            &self.gvk.group,
            &self.gvk.version,
            namespace.filter(|_| self.namespaced),
            &self.plural,
        )
    }

    /// The collection URL path, as [`path`](Self::path) builds it.
    pub fn url_path(&self, namespace: Option<&str>) -> String {
        self.path(namespace).as_str().to_owned()
    }
}

/// A kind the API server does not serve, or discovery failing.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ResolveError {
    /// Discovery answered, and the kind is not there.
    #[error(
        "the API server does not serve {0} (misspelt kind or version, or a CRD that is not installed)"
    )]
    UnknownKind(Gvk),
    /// Discovery itself failed.
    #[error("discovery of {gvk} failed: {reason}")]
    Discovery {
        /// The kind asked for.
        gvk: Gvk,
        /// The error.
        reason: String,
    },
}

/// Resolves kinds, remembering successes (failures are retried, since a CRD
/// may be installed later).
pub struct Resolver {
    client: kube::Client,
    known: Mutex<HashMap<Gvk, ResolvedResource>>,
}

impl std::fmt::Debug for Resolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resolver").finish_non_exhaustive()
    }
}

impl Resolver {
    /// A resolver using `client`'s discovery endpoints.
    pub fn new(client: kube::Client) -> Self {
        Resolver {
            client,
            known: Mutex::new(HashMap::new()),
        }
    }

    /// The resource serving `gvk`.
    pub async fn resolve(&self, gvk: &Gvk) -> Result<ResolvedResource, ResolveError> {
        if let Some(known) = self
            .known
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(gvk)
        {
            return Ok(known.clone());
        }
        let wanted = kube::core::GroupVersionKind::gvk(&gvk.group, &gvk.version, &gvk.kind);
        let (resource, capabilities) = match kube::discovery::pinned_kind(&self.client, &wanted)
            .await
        {
            Ok(found) => found,
            Err(kube::Error::Discovery(_)) => return Err(ResolveError::UnknownKind(gvk.clone())),
            Err(kube::Error::Api(status)) if status.code == 404 => {
                return Err(ResolveError::UnknownKind(gvk.clone()));
            }
            Err(err) => {
                return Err(ResolveError::Discovery {
                    gvk: gvk.clone(),
                    reason: err.to_string(),
                });
            }
        };
        let resolved = ResolvedResource {
            gvk: gvk.clone(),
            plural: resource.plural,
            namespaced: capabilities.scope == Scope::Namespaced,
        };
        self.known
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(gvk.clone(), resolved.clone());
        Ok(resolved)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_paths_follow_the_api_layout() {
        let pods = ResolvedResource {
            gvk: Gvk::new("", "v1", "Pod"),
            plural: "pods".into(),
            namespaced: true,
        };
        assert_eq!(pods.url_path(None), "/api/v1/pods");
        assert_eq!(pods.url_path(Some("shop")), "/api/v1/namespaces/shop/pods");
        let nodes = ResolvedResource {
            gvk: Gvk::new("", "v1", "Node"),
            plural: "nodes".into(),
            namespaced: false,
        };
        assert_eq!(nodes.url_path(Some("ignored")), "/api/v1/nodes");
        let deployments = ResolvedResource {
            gvk: Gvk::new("apps", "v1", "Deployment"),
            plural: "deployments".into(),
            namespaced: true,
        };
        assert_eq!(
            deployments.url_path(Some("a")),
            "/apis/apps/v1/namespaces/a/deployments"
        );
    }
}
