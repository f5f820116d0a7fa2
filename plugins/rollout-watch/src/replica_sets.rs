//! The ReplicaSets a Deployment owns, looked up in the host's cache by the
//! owner index and split into the new one (current template) and old ones
//! still running.

use herald_sdk::cache::{self, Index};
use herald_sdk::k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};

/// The annotation the Deployment controller numbers revisions with, on both
/// the Deployment and its ReplicaSets.
const REVISION: &str = "deployment.kubernetes.io/revision";

/// The name of the index of ReplicaSets by the UIDs of their owners.
const OWNER_INDEX: &str = "owner";

/// The index [`describe`] looks ReplicaSets up by: kept by the host, so a
/// look-up costs the ReplicaSets found, not a scan of them all.
pub fn owner_index() -> Index {
    Index::by_owner::<ReplicaSet>(OWNER_INDEX)
}

/// Log-ready descriptions: `name:ready/desired`, or `-` for none.
pub struct ReplicaSets {
    /// The ReplicaSet of the current revision.
    pub new: String,
    /// Older ReplicaSets that still have replicas, comma-separated.
    pub old: String,
}

fn revision(annotations: Option<&std::collections::BTreeMap<String, String>>) -> Option<u64> {
    annotations?.get(REVISION)?.parse().ok()
}

fn describe_one(set: &ReplicaSet) -> String {
    let name = set.metadata.name.as_deref().unwrap_or_default();
    let ready = set
        .status
        .as_ref()
        .and_then(|status| status.ready_replicas)
        .unwrap_or_default();
    let desired = set.spec.replicas.unwrap_or(1);
    format!("{name}:{ready}/{desired}")
}

/// Finds `deployment`'s ReplicaSets through the owner index (those owned
/// by its UID, in its namespace). A failed look-up is logged and described
/// as `?`.
pub fn describe(deployment: &Deployment, key: &str) -> ReplicaSets {
    match owned(deployment) {
        Ok(sets) => split(deployment, sets),
        Err(error) => {
            herald_sdk::warn!("failed lookup=replicasets deployment={key} error={error}");
            ReplicaSets {
                new: "?".into(),
                old: "?".into(),
            }
        }
    }
}

fn owned(deployment: &Deployment) -> Result<Vec<ReplicaSet>, cache::CacheError> {
    let namespace = deployment.metadata.namespace.as_deref();
    let uid = deployment.metadata.uid.as_deref().unwrap_or_default();
    cache::by_index(OWNER_INDEX, uid, namespace)
}

/// The new ReplicaSet carries the Deployment's revision (or, failing that,
/// the highest); old ones are listed only while they still have replicas.
fn split(deployment: &Deployment, mut sets: Vec<ReplicaSet>) -> ReplicaSets {
    sets.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let current = revision(deployment.metadata.annotations.as_ref());
    let set_revision = |set: &ReplicaSet| revision(set.metadata.annotations.as_ref());
    let newest = match current {
        Some(current) if sets.iter().any(|set| set_revision(set) == Some(current)) => sets
            .iter()
            .position(|set| set_revision(set) == Some(current)),
        _ => sets
            .iter()
            .enumerate()
            .max_by_key(|(_, set)| set_revision(set))
            .map(|(index, _)| index),
    };
    let new = newest.map(|index| sets.remove(index));
    let running = |set: &&ReplicaSet| {
        let observed = set.status.as_ref().map_or(0, |status| status.replicas);
        set.spec.replicas.unwrap_or_default().max(observed) > 0
    };
    let old: Vec<String> = sets.iter().filter(running).map(describe_one).collect();
    ReplicaSets {
        new: new.as_ref().map_or_else(|| "-".to_owned(), describe_one),
        old: if old.is_empty() {
            "-".to_owned()
        } else {
            old.join(",")
        },
    }
}
