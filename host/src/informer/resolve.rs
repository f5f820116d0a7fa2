//! Resolves a subscription's group/version/kind to its REST resource through
//! API discovery (CRDs included).

use super::resource::ResolvedResource;
use crate::gvk::Gvk;
use kube::discovery::Scope;
use std::collections::HashMap;
use std::sync::Mutex;

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
