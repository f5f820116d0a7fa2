//! Which cluster (world 0.6.0): a daemon may watch several clusters, and
//! the operator says which ones a plugin runs on (`plugins.<name>.clusters`).
//!
//! Every notification comes from one cluster. During its call, cache
//! look-ups, [`kube`](crate::kube) requests and [`events`](crate::events)
//! go to that cluster, so a plugin that only reacts where things happen
//! needs nothing from this module. A plugin that acts across clusters (a
//! copy of a ConfigMap in every cluster, say) reads [`current`] and
//! [`names`], and runs a piece of its call against another cluster with
//! [`within`]. Each look-up, request and Event is still checked against the
//! plugin's grants for the cluster it reaches.
//!
//! A plugin that never calls this module does not import the `cluster`
//! interface, and the host runs it on its default cluster alone: asking for
//! the cluster is what says a plugin can tell clusters apart.
//!
//! ```
//! use herald_sdk::k8s_openapi::api::core::v1::ConfigMap;
//! use herald_sdk::{Error, Event, Handler, Manifest, Subscription, cluster};
//!
//! #[derive(Default)]
//! struct Census;
//!
//! impl Handler for Census {
//!     fn manifest() -> Manifest {
//!         Manifest::new("census", "0.1.0").subscribe(Subscription::to::<ConfigMap>())
//!     }
//!
//!     fn on_add(&mut self, event: &Event) -> Result<(), Error> {
//!         herald_sdk::info!("{} added in cluster {}", event.key(), cluster::current());
//!         Ok(())
//!     }
//! }
//! # herald_sdk::testing::reset();
//! # herald_sdk::testing::set_clusters(["east", "west"]);
//! # herald_sdk::testing::set_cluster("west");
//! # let mut cm = ConfigMap::default();
//! # cm.metadata.name = Some("settings".into());
//! # cm.metadata.namespace = Some("shop".into());
//! # Census.on_add(&herald_sdk::testing::added(&cm)).unwrap();
//! # assert_eq!(herald_sdk::testing::take_messages(), ["shop/settings added in cluster west"]);
//! ```

use crate::Error;

/// The cluster of the call under way (a DNS label such as `west`; the
/// default cluster's configured name, `default` unless the operator names
/// it): the notification's, or the one [`within`] runs against. In the test
/// host, what [`testing::set_cluster`](crate::testing::set_cluster) set.
pub fn current() -> String {
    crate::host::cluster_current()
}

/// The clusters this plugin is delivered notifications from, sorted by
/// name.
pub fn names() -> Vec<String> {
    crate::host::cluster_names()
}

/// Runs `work` with `name` as the cluster of its look-ups, requests and
/// Events, then goes back to the call's cluster (also when `work` fails).
/// `name` must be one of [`names`]; another is refused before `work` runs.
///
/// ```
/// use herald_sdk::k8s_openapi::api::core::v1::ConfigMap;
/// use herald_sdk::{cluster, kube::Api, testing};
///
/// testing::reset();
/// testing::set_clusters(["east", "west"]);
/// testing::set_cluster("east");
/// let configmaps = Api::<ConfigMap>::namespaced("shop");
/// let found = cluster::within("west", || Ok(configmaps.get("settings").is_ok())).unwrap();
/// assert!(!found, "nothing scripted: not found");
/// assert_eq!(testing::writes()[0].cluster, "west");
/// assert_eq!(cluster::current(), "east");
/// assert!(cluster::within("north", || Ok(())).is_err());
/// ```
pub fn within<T>(name: &str, work: impl FnOnce() -> Result<T, Error>) -> Result<T, Error> {
    crate::host::cluster_target(Some(name)).map_err(Error::new)?;
    let outcome = work();
    // Going back to the call's own cluster is never refused.
    let _ = crate::host::cluster_target(None);
    outcome
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use crate::testing;

    #[test]
    fn the_test_host_runs_on_the_default_cluster_unless_told_otherwise() {
        testing::reset();
        assert_eq!(current(), "default");
        assert_eq!(names(), ["default"]);
        testing::set_clusters(["west", "east"]);
        assert_eq!(names(), ["east", "west"], "sorted");
        assert_eq!(current(), "west", "the first given, until set");
        testing::set_cluster("east");
        let seen = within("west", || Ok(current())).unwrap();
        assert_eq!(seen, "west");
        assert_eq!(current(), "east");
        let failed: Result<(), Error> = within("west", || Err(Error::new("no")));
        assert!(failed.is_err());
        assert_eq!(current(), "east", "back even after a failure");
        let refused = within("north", || Ok(())).unwrap_err();
        assert!(refused.message().contains("east, west"), "{refused:?}");
        testing::reset();
    }
}
