//! The `cluster` capability (0.6.0): which cluster the call under way is
//! about, and targeting another one of the plugin's clusters for the rest of
//! the call.
//!
//! - **Grant.** Every plugin that imports it has it: it names only clusters
//!   the plugin is already delivered notifications from (where the operator
//!   runs it, `plugins.<name>.clusters`). Targeting a cluster grants
//!   nothing: each look-up, request and Event is still checked against the
//!   plugin's grants for the cluster it reaches (a grant that names no
//!   cluster covers the default one alone).
//! - **Semantics.** `current` is the notification's cluster until the
//!   plugin targets another; `target` lasts until the call ends (the
//!   runtime sets the notification's cluster afresh before every call).
//!   Outside a handler call (`manifest`, admission) the call is about the
//!   default cluster.
//! - **Dry-run, replay.** No difference; replay delivers every recorded
//!   event as the default cluster's.

use super::CallCluster;
use super::cache::CacheScope;
use crate::cluster::ClusterName;
use crate::wit::v0_6::herald::plugin0_6_0::cluster;
use std::sync::Arc;
use wasmtime::component::{HasData, Linker};

/// What the `cluster` import reaches: the clusters the plugin's
/// subscriptions are bound in, and the call's cluster.
pub struct ClusterHost<'a> {
    /// The plugin's cache window, which knows its clusters.
    pub scope: &'a CacheScope,
    /// The call's cluster and target.
    pub call: &'a mut CallCluster,
}

impl ClusterHost<'_> {
    /// The plugin's cluster called `name`: `Some(None)` for the default
    /// one, `None` if the plugin is not delivered notifications from it.
    fn known(&self, name: &str) -> Option<Option<ClusterName>> {
        let default = self.scope.default_cluster();
        self.scope.clusters().into_iter().find(|cluster| {
            cluster
                .as_ref()
                .map_or(default.as_str(), ClusterName::as_str)
                == name
        })
    }
}

impl cluster::Host for ClusterHost<'_> {
    fn current(&mut self) -> String {
        match self.call.target() {
            Some(name) => name.as_str().to_owned(),
            None => self.scope.default_cluster(),
        }
    }

    fn names(&mut self) -> Vec<String> {
        let default = self.scope.default_cluster();
        let mut names: Vec<String> = self
            .scope
            .clusters()
            .into_iter()
            .map(|c| c.map_or_else(|| default.clone(), |c| c.as_str().to_owned()))
            .collect();
        names.sort();
        names
    }

    fn target(&mut self, name: Option<String>) -> Result<(), String> {
        let Some(name) = name else {
            self.call.reset();
            return Ok(());
        };
        match self.known(&name) {
            Some(cluster) => {
                self.call.retarget(cluster);
                Ok(())
            }
            None => Err(format!(
                "this plugin is not delivered notifications from a cluster named {name:?}: it \
                 may target only its own clusters ({})",
                self.names().join(", ")
            )),
        }
    }
}

/// The `cluster` capability, as the list in `capability/mod.rs` names it.
#[derive(Debug)]
pub struct Cluster;

impl super::factor::Capability for Cluster {
    const ABOUT: super::factor::About = super::factor::About {
        name: "cluster",
        wit: "`cluster` (0.6.0)",
        acts: super::factor::Acts::InsideHost,
    };
    type Stats = ();
    type Plugin = Arc<CacheScope>;
    type Instance = ();

    fn prepare(setup: &super::Setup<'_>) -> Self::Plugin {
        setup.cache.clone()
    }

    fn instantiate(_: &Self::Plugin) {}

    fn host<'a>(
        scope: &'a Self::Plugin,
        _: &'a mut (),
        call: super::CallScope<'a>,
    ) -> ClusterHost<'a> {
        ClusterHost {
            scope,
            call: call.cluster,
        }
    }

    /// Links `cluster` (0.6.0 and later).
    fn add_to_linker<T: super::View + 'static>(
        linker: &mut Linker<T>,
        reach: fn(&mut T) -> ClusterHost<'_>,
    ) -> wasmtime::Result<()> {
        cluster::add_to_linker::<T, Cluster>(linker, reach)
    }
}

impl HasData for Cluster {
    type Data<'a> = ClusterHost<'a>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gvk::Gvk;
    use crate::store::{ObjectReader, Store};
    use cluster::Host;

    #[test]
    fn a_plugin_targets_only_its_own_clusters_and_the_target_ends_with_the_call() {
        let scope = CacheScope::new(Vec::new());
        let west = ClusterName::parse("name", "west").unwrap();
        let pods = Gvk::new("", "v1", "Pod");
        let store = || Arc::new(Store::new()) as Arc<dyn ObjectReader>;
        scope.bind_clusters(
            Some(ClusterName::parse("name", "east").unwrap()),
            vec![
                (None, pods.clone(), store()),
                (Some(west.clone()), pods, store()),
            ],
        );
        let mut call = CallCluster::of_event(Some(west.clone()));
        let mut host = ClusterHost {
            scope: &scope,
            call: &mut call,
        };
        assert_eq!(host.current(), "west");
        assert_eq!(host.names(), ["east", "west"]);
        host.target(Some("east".into())).unwrap();
        assert_eq!(host.current(), "east");
        let refused = host.target(Some("north\n".into())).unwrap_err();
        assert!(
            refused.contains("\"north\\n\"") && refused.contains("east, west"),
            "{refused}"
        );
        assert_eq!(host.current(), "east", "a refused target changes nothing");
        host.target(None).unwrap();
        assert_eq!(host.current(), "west");
        assert_eq!(call.target(), Some(&west));
        // The runtime starts every call afresh.
        call.retarget(None);
        let call = CallCluster::of_event(Some(west.clone()));
        assert_eq!(call.target(), Some(&west));
    }
}
