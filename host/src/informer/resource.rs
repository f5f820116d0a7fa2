//! What an informer watches: a resolved resource plus scope and selectors.

use crate::cluster::ClusterName;
use crate::discovery::ResolvedResource;
use crate::subscription::Subscription;
use std::fmt;

/// Identity of an informer: one watch and one cache per distinct key, shared
/// by every subscription with the same key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct InformerKey {
    /// The resource.
    pub resource: ResolvedResource,
    /// One namespace, or all.
    pub namespace: Option<String>,
    /// Label selector.
    pub label_selector: Option<String>,
    /// Field selector.
    pub field_selector: Option<String>,
    /// The cluster; `None` for the default one (see [`crate::cluster`]).
    pub cluster: Option<ClusterName>,
}

impl InformerKey {
    /// The key for `subscription` once its kind is resolved to `resource`.
    /// Selectors are keyed by meaning (`app=web` and `app == web` are one
    /// informer), in the canonical form the watch then sends.
    pub fn for_subscription(resource: ResolvedResource, subscription: &Subscription) -> Self {
        let namespace = subscription
            .namespace
            .clone()
            .filter(|_| resource.namespaced);
        InformerKey {
            resource,
            namespace,
            label_selector: subscription.canonical_label_selector(),
            field_selector: subscription.canonical_field_selector(),
            cluster: None,
        }
    }

    /// The same key in `cluster` (`None`: the default cluster).
    pub fn in_cluster(self, cluster: Option<ClusterName>) -> Self {
        InformerKey { cluster, ..self }
    }
}

impl fmt::Display for InformerKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.resource.plural)?;
        if !self.resource.gvk.group.is_empty() {
            write!(f, ".{}", self.resource.gvk.group)?;
        }
        if let Some(ns) = &self.namespace {
            write!(f, " in {ns}")?
        }
        if let Some(labels) = &self.label_selector {
            write!(f, " labels({labels})")?;
        }
        if let Some(fields) = &self.field_selector {
            write!(f, " fields({fields})")?;
        }
        if let Some(cluster) = &self.cluster {
            write!(f, " in cluster {cluster}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gvk::Gvk;

    #[test]
    fn selectors_that_mean_the_same_share_one_informer() {
        use crate::plugin::{Delivery, Subscription};
        let pods = ResolvedResource {
            gvk: Gvk::new("", "v1", "Pod"),
            plural: "pods".into(),
            namespaced: true,
        };
        let subscription = |labels: &str, fields: Option<&str>| Subscription {
            kind: pods.gvk.clone(),
            namespace: None,
            label_selector: Some(labels.into()),
            field_selector: fields.map(str::to_owned),
            resync_period: None,
            delivery: Delivery::EveryEvent,
        };
        let key = |labels: &str, fields: Option<&str>| {
            InformerKey::for_subscription(pods.clone(), &subscription(labels, fields))
        };
        let one = key("app=web,tier in (b,a)", Some("spec.nodeName=n1"));
        assert_eq!(
            one,
            key("tier in (a, b, a), app == web", Some("spec.nodeName==n1"))
        );
        assert_eq!(one.label_selector.as_deref(), Some("app=web,tier in (a,b)"));
        assert_ne!(one, key("app=api,tier in (a,b)", Some("spec.nodeName=n1")));
        assert_eq!(
            key("", None).label_selector,
            None,
            "an empty selector selects all"
        );
    }
}
