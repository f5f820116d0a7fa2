//! `GroupVersionKind`: how the ABI names a Kubernetes kind.

use std::fmt;

use k8s_openapi::Resource;

use crate::bindings::herald::plugin0_2_0::types as wit;

/// A Kubernetes group, version and kind, e.g. `apps`/`v1`/`Deployment`. The
/// core group is the empty string.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupVersionKind {
    /// The API group; empty for the core group (Pods, Services, ...).
    pub group: String,
    /// The API version within the group, e.g. `v1`.
    pub version: String,
    /// The kind, e.g. `Deployment`.
    pub kind: String,
}

impl GroupVersionKind {
    /// A kind named by strings, e.g. for a CustomResourceDefinition:
    /// `GroupVersionKind::new("example.com", "v1", "Widget")`.
    pub fn new(
        group: impl Into<String>,
        version: impl Into<String>,
        kind: impl Into<String>,
    ) -> Self {
        Self {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
        }
    }

    /// The kind of a `k8s-openapi` type, e.g. `GroupVersionKind::of::<Pod>()`.
    pub fn of<K: Resource>() -> Self {
        Self::new(K::GROUP, K::VERSION, K::KIND)
    }

    /// Whether this is the kind of the `k8s-openapi` type `K`; useful in a
    /// plugin that subscribes to several kinds.
    pub fn is<K: Resource>(&self) -> bool {
        self.group == K::GROUP && self.version == K::VERSION && self.kind == K::KIND
    }

    /// The `apiVersion` string: `group/version`, or `version` for the core
    /// group.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    pub(crate) fn from_wit(kind: wit::GroupVersionKind) -> Self {
        Self {
            group: kind.group,
            version: kind.version,
            kind: kind.kind,
        }
    }

    pub(crate) fn to_wit(&self) -> wit::GroupVersionKind {
        wit::GroupVersionKind {
            group: self.group.clone(),
            version: self.version.clone(),
            kind: self.kind.clone(),
        }
    }
}

/// Formats as `apiVersion/Kind`: `v1/Pod`, `apps/v1/Deployment`.
impl fmt::Display for GroupVersionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.group.is_empty() {
            write!(f, "{}/", self.group)?;
        }
        write!(f, "{}/{}", self.version, self.kind)
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::Pod;

    use super::*;

    #[test]
    fn kinds_come_from_k8s_openapi_types() {
        assert_eq!(
            GroupVersionKind::of::<Pod>(),
            GroupVersionKind::new("", "v1", "Pod")
        );
        assert_eq!(
            GroupVersionKind::of::<Deployment>(),
            GroupVersionKind::new("apps", "v1", "Deployment")
        );
        assert!(GroupVersionKind::of::<Pod>().is::<Pod>());
        assert!(!GroupVersionKind::of::<Pod>().is::<Deployment>());
    }

    #[test]
    fn api_version_and_display_omit_the_core_group() {
        let pod = GroupVersionKind::of::<Pod>();
        let deployment = GroupVersionKind::of::<Deployment>();
        assert_eq!(pod.api_version(), "v1");
        assert_eq!(deployment.api_version(), "apps/v1");
        assert_eq!(pod.to_string(), "v1/Pod");
        assert_eq!(deployment.to_string(), "apps/v1/Deployment");
    }

    #[test]
    fn wit_round_trip() {
        let kind = GroupVersionKind::new("example.com", "v1alpha1", "Widget");
        assert_eq!(GroupVersionKind::from_wit(kind.to_wit()), kind);
    }
}
