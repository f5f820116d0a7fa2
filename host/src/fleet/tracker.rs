//! What a provider found, brought into the fleet: the clusters it names
//! added (or replaced when their kubeconfig changed), those it no longer
//! names removed, and each problem logged once per content, naming where it
//! was found, the cluster and the cause. A cluster whose source turns bad
//! keeps its previous connection, so nothing cached is lost.

use super::Fleet;
use crate::cluster::{ClusterLabels, ClusterName};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// One cluster a provider found, or why what it found is not one.
pub(super) enum Found {
    /// A cluster: its name, where it was found (a file, a Secret) and its
    /// kubeconfig.
    Cluster {
        /// Its name.
        name: ClusterName,
        /// Where it was found, for messages.
        origin: String,
        /// Its kubeconfig (YAML or JSON).
        kubeconfig: String,
        /// Its labels (a cluster Secret's own).
        labels: ClusterLabels,
    },
    /// Something that cannot be used: where it was found, the cluster it
    /// names if any (which then keeps its previous connection), and why.
    Problem {
        /// Where.
        origin: String,
        /// The cluster it names, if known.
        name: Option<ClusterName>,
        /// Why, as the log says it.
        problem: String,
    },
}

impl Found {
    /// The cluster `name` found at `origin` with `labels`, or, when its
    /// kubeconfig could not be had, the problem naming both.
    pub(super) fn named(
        name: ClusterName,
        origin: String,
        kubeconfig: Result<String, String>,
        labels: ClusterLabels,
    ) -> Self {
        match kubeconfig {
            Ok(kubeconfig) => Found::Cluster {
                name,
                origin,
                kubeconfig,
                labels,
            },
            Err(reason) => Found::Problem {
                problem: format!("cluster {name}: {origin}: {reason}"),
                origin,
                name: Some(name),
            },
        }
    }
}

/// The clusters one provider added, and the problems it logged.
pub(super) struct Tracker {
    fleet: Arc<Fleet>,
    /// Names the configuration already has (refused).
    reserved: BTreeSet<String>,
    /// What the log calls the provider (`clusterDirectory`).
    provider: &'static str,
    /// The clusters added, with the sha256 of the kubeconfig used.
    known: BTreeMap<ClusterName, String>,
    /// The last problem logged for each origin.
    reported: BTreeMap<String, String>,
}

impl Tracker {
    /// A tracker adding to `fleet`, refusing `reserved` names.
    pub(super) fn new(
        fleet: Arc<Fleet>,
        reserved: BTreeSet<String>,
        provider: &'static str,
    ) -> Self {
        Tracker {
            fleet,
            reserved,
            provider,
            known: BTreeMap::new(),
            reported: BTreeMap::new(),
        }
    }

    /// Brings the fleet in line with everything the provider found now.
    pub(super) async fn apply(&mut self, found: Vec<Found>) {
        let mut seen: BTreeMap<ClusterName, String> = BTreeMap::new();
        let mut problems = BTreeSet::new();
        for item in found {
            let (origin, name, problem) = match item {
                Found::Problem {
                    origin,
                    name,
                    problem,
                } => (origin, name, problem),
                Found::Cluster {
                    name,
                    origin,
                    kubeconfig,
                    labels,
                } => match self
                    .cluster(&name, &origin, &kubeconfig, labels, &seen)
                    .await
                {
                    Ok(()) => {
                        seen.insert(name, origin.clone());
                        self.reported.remove(&origin);
                        continue;
                    }
                    Err((name, problem)) => (origin, name, problem),
                },
            };
            let keeps = match &name {
                Some(name) if self.known.contains_key(name) => {
                    // A bad source keeps its cluster's previous connection.
                    seen.entry(name.clone()).or_insert_with(|| origin.clone());
                    "; its previous kubeconfig stays in use"
                }
                Some(_) => "; the cluster is left out",
                None => "",
            };
            let message = format!("{}: {problem}{keeps}", self.provider);
            if self.reported.get(&origin) != Some(&message) {
                tracing::error!("{message}");
                self.reported.insert(origin.clone(), message);
            }
            problems.insert(origin);
        }
        self.reported.retain(|origin, _| problems.contains(origin));
        let gone: Vec<ClusterName> = self
            .known
            .keys()
            .filter(|name| !seen.contains_key(*name))
            .cloned()
            .collect();
        for name in gone {
            self.known.remove(&name);
            self.fleet.remove(&name).await;
        }
    }

    /// Adds (or keeps, with `labels`) the cluster `name`; the cluster
    /// named, if it is to keep its connection, and the problem otherwise.
    async fn cluster(
        &mut self,
        name: &ClusterName,
        origin: &str,
        kubeconfig: &str,
        labels: ClusterLabels,
        seen: &BTreeMap<ClusterName, String>,
    ) -> Result<(), (Option<ClusterName>, String)> {
        if self.reserved.contains(name.as_str()) {
            return Err((
                None,
                format!(
                    "{origin}: cluster {name} is named by the configuration already (source.name \
                     or clusters[].name): each cluster once"
                ),
            ));
        }
        if let Some(first) = seen.get(name) {
            return Err((
                None,
                format!("{origin}: cluster {name} is named by {first} already: each cluster once"),
            ));
        }
        let digest = crate::plugin::digest(kubeconfig.as_bytes());
        if self.known.get(name) == Some(&digest) {
            self.fleet.relabel(name, labels).await;
            return Ok(());
        }
        match crate::source::connect_kubeconfig(kubeconfig, None, origin).await {
            Ok(connection) => {
                self.fleet.add(name.clone(), connection, labels).await;
                self.known.insert(name.clone(), digest);
                Ok(())
            }
            Err(error) => Err((Some(name.clone()), format!("cluster {name}: {error}"))),
        }
    }
}
