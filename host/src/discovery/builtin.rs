//! Built-in Kubernetes kinds, as k8s-openapi describes them: group, version,
//! kind and plural resource name come from each type's `k8s_openapi::Resource`
//! constants, never from strings written here. Only generally available
//! (`v1`, `v2`) kinds that can be listed and watched are included; anything
//! else (a custom resource, a beta kind) is resolved through discovery.

use k8s_openapi::Resource;

/// One built-in kind and its resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuiltinKind {
    /// API group; empty for the core group.
    pub group: &'static str,
    /// API version.
    pub version: &'static str,
    /// Kind.
    pub kind: &'static str,
    /// Plural resource name (`URL_PATH_SEGMENT`).
    pub plural: &'static str,
    /// Whether its objects live in namespaces (k8s-openapi's `Scope`); a
    /// namespace never narrows a cluster-scoped kind.
    pub namespaced: bool,
}

/// The scope of a k8s-openapi kind, as a value.
pub trait KindScope {
    /// True for a namespaced kind.
    const NAMESPACED: bool;
}

impl KindScope for k8s_openapi::NamespaceResourceScope {
    const NAMESPACED: bool = true;
}

impl KindScope for k8s_openapi::ClusterResourceScope {
    const NAMESPACED: bool = false;
}

impl BuiltinKind {
    /// The kind of the k8s-openapi type `K`.
    pub const fn of<K: Resource>() -> Self
    where
        K::Scope: KindScope,
    {
        BuiltinKind {
            group: K::GROUP,
            version: K::VERSION,
            kind: K::KIND,
            plural: K::URL_PATH_SEGMENT,
            namespaced: <K::Scope as KindScope>::NAMESPACED,
        }
    }
}

macro_rules! kinds {
    ($($path:path,)*) => {
        &[$(BuiltinKind::of::<$path>(),)*]
    };
}

/// Every listable, generally available kind of the k8s-openapi version
/// Herald is built with.
pub const BUILTIN_KINDS: &[BuiltinKind] = {
    use k8s_openapi::*;
    kinds! {
        api::admissionregistration::v1::MutatingAdmissionPolicy,
        api::admissionregistration::v1::MutatingAdmissionPolicyBinding,
        api::admissionregistration::v1::MutatingWebhookConfiguration,
        api::admissionregistration::v1::ValidatingAdmissionPolicy,
        api::admissionregistration::v1::ValidatingAdmissionPolicyBinding,
        api::admissionregistration::v1::ValidatingWebhookConfiguration,
        api::apps::v1::ControllerRevision,
        api::apps::v1::DaemonSet,
        api::apps::v1::Deployment,
        api::apps::v1::ReplicaSet,
        api::apps::v1::StatefulSet,
        api::autoscaling::v1::HorizontalPodAutoscaler,
        api::autoscaling::v2::HorizontalPodAutoscaler,
        api::batch::v1::CronJob,
        api::batch::v1::Job,
        api::certificates::v1::CertificateSigningRequest,
        api::certificates::v1::ClusterTrustBundle,
        api::certificates::v1::PodCertificateRequest,
        api::coordination::v1::Lease,
        api::core::v1::ComponentStatus,
        api::core::v1::ConfigMap,
        api::core::v1::Endpoints,
        api::core::v1::Event,
        api::core::v1::LimitRange,
        api::core::v1::Namespace,
        api::core::v1::Node,
        api::core::v1::PersistentVolume,
        api::core::v1::PersistentVolumeClaim,
        api::core::v1::Pod,
        api::core::v1::PodTemplate,
        api::core::v1::ReplicationController,
        api::core::v1::ResourceQuota,
        api::core::v1::Secret,
        api::core::v1::Service,
        api::core::v1::ServiceAccount,
        api::discovery::v1::EndpointSlice,
        api::events::v1::Event,
        api::flowcontrol::v1::FlowSchema,
        api::flowcontrol::v1::PriorityLevelConfiguration,
        api::networking::v1::Ingress,
        api::networking::v1::IngressClass,
        api::networking::v1::IPAddress,
        api::networking::v1::NetworkPolicy,
        api::networking::v1::ServiceCIDR,
        api::node::v1::RuntimeClass,
        api::policy::v1::PodDisruptionBudget,
        api::rbac::v1::ClusterRole,
        api::rbac::v1::ClusterRoleBinding,
        api::rbac::v1::Role,
        api::rbac::v1::RoleBinding,
        api::resource::v1::DeviceClass,
        api::resource::v1::DeviceTaintRule,
        api::resource::v1::ResourceClaim,
        api::resource::v1::ResourceClaimTemplate,
        api::resource::v1::ResourceSlice,
        api::scheduling::v1::PriorityClass,
        api::storage::v1::CSIDriver,
        api::storage::v1::CSINode,
        api::storage::v1::CSIStorageCapacity,
        api::storage::v1::StorageClass,
        api::storage::v1::VolumeAttachment,
        api::storage::v1::VolumeAttributesClass,
        api::storagemigration::v1::StorageVersionMigration,
        apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
        kube_aggregator::pkg::apis::apiregistration::v1::APIService,
    }
};

/// The built-in kind `group/version/kind`, if k8s-openapi knows it.
pub fn lookup(group: &str, version: &str, kind: &str) -> Option<&'static BuiltinKind> {
    BUILTIN_KINDS
        .iter()
        .find(|k| k.group == group && k.version == version && k.kind == kind)
}

/// The built-in kind `group`/`kind` at any version (write rules name no
/// version; every version of a kind shares its resource name).
pub fn lookup_kind(group: &str, kind: &str) -> Option<&'static BuiltinKind> {
    BUILTIN_KINDS
        .iter()
        .find(|k| k.group == group && k.kind == kind)
}

/// True when `group`/`kind` is a built-in kind known to be cluster-scoped
/// (every version of a kind has the same scope); false for a namespaced
/// kind and for one this table does not know (a custom resource, whose
/// scope only discovery tells).
pub fn is_cluster_scoped(group: &str, kind: &str) -> bool {
    lookup_kind(group, kind).is_some_and(|k| !k.namespaced)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plural_names_come_from_k8s_openapi() {
        assert_eq!(lookup("", "v1", "Pod").unwrap().plural, "pods");
        assert_eq!(lookup("", "v1", "Endpoints").unwrap().plural, "endpoints");
        assert_eq!(
            lookup("networking.k8s.io", "v1", "IngressClass")
                .unwrap()
                .plural,
            "ingressclasses"
        );
        assert_eq!(
            lookup("apps", "v1", "ReplicaSet").unwrap().plural,
            "replicasets"
        );
        assert_eq!(
            lookup("autoscaling", "v2", "HorizontalPodAutoscaler")
                .unwrap()
                .plural,
            "horizontalpodautoscalers"
        );
    }

    #[test]
    fn the_scope_of_each_kind_comes_from_k8s_openapi() {
        for (group, kind) in [
            ("", "Namespace"),
            ("", "Node"),
            ("", "PersistentVolume"),
            ("rbac.authorization.k8s.io", "ClusterRole"),
            ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
            ("apiextensions.k8s.io", "CustomResourceDefinition"),
            ("storage.k8s.io", "StorageClass"),
        ] {
            assert!(is_cluster_scoped(group, kind), "{group}/{kind}");
        }
        for (group, kind) in [
            ("", "Pod"),
            ("", "Secret"),
            ("", "Event"),
            ("rbac.authorization.k8s.io", "Role"),
            ("apps", "Deployment"),
            ("example.com", "Widget"),
        ] {
            assert!(!is_cluster_scoped(group, kind), "{group}/{kind}");
        }
    }

    #[test]
    fn custom_and_misspelt_kinds_are_unknown() {
        assert!(lookup("example.com", "v1", "Widget").is_none());
        assert!(
            lookup("", "v1", "Deployment").is_none(),
            "Deployment is in apps"
        );
        assert!(lookup("apps", "v1beta1", "Deployment").is_none());
    }

    #[test]
    fn every_kind_appears_once() {
        for (i, a) in BUILTIN_KINDS.iter().enumerate() {
            for b in &BUILTIN_KINDS[i + 1..] {
                assert!(
                    (a.group, a.version, a.kind) != (b.group, b.version, b.kind),
                    "{a:?} twice"
                );
            }
        }
    }
}
