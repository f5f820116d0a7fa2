//! Resource types the server serves: the built-in list and those defined by CRDs.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

/// Identity of a stored resource, independent of the version it is served at.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct ResourceId {
    /// API group (`""` for core).
    pub group: String,
    /// Plural resource name (`pods`).
    pub plural: String,
}

/// One served resource type.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ResourceType {
    /// Group and plural name.
    pub id: ResourceId,
    /// Served versions, preferred first.
    pub versions: Vec<String>,
    /// The version objects are stored at.
    pub storage_version: String,
    /// Kind (`Pod`).
    pub kind: String,
    /// List kind (`PodList`).
    pub list_kind: String,
    /// Singular name (`pod`).
    pub singular: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Short names (`po`).
    pub short_names: Vec<String>,
    /// Categories (`all`).
    pub categories: Vec<String>,
    /// Whether the `/status` subresource is served.
    pub has_status: bool,
    /// Name of the CRD defining this type, for custom resources.
    pub crd: Option<String>,
    /// The type whose storage this one is a view of (`events.k8s.io` Events are core Events).
    pub stored_as: Option<ResourceId>,
}

/// The verbs every resource supports.
pub(crate) const VERBS: [&str; 8] = [
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

impl ResourceType {
    /// `apiVersion` for `version` of this type (`v1`, `apps/v1`).
    pub fn api_version(&self, version: &str) -> String {
        if self.id.group.is_empty() {
            version.to_string()
        } else {
            format!("{}/{version}", self.id.group)
        }
    }

    /// `plural` or `plural.group`.
    pub fn qualified(&self) -> String {
        crate::status::qualified(&self.id.group, &self.id.plural)
    }

    /// Whether `version` is served.
    pub fn serves(&self, version: &str) -> bool {
        self.versions.iter().any(|v| v == version)
    }
}

struct Builtin {
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    kind: &'static str,
    namespaced: bool,
    short: &'static [&'static str],
    all: bool,
    status: bool,
}

const BUILTINS: &[Builtin] = &[
    Builtin {
        group: "",
        version: "v1",
        plural: "namespaces",
        kind: "Namespace",
        namespaced: false,
        short: &["ns"],
        all: false,
        status: true,
    },
    Builtin {
        group: "",
        version: "v1",
        plural: "pods",
        kind: "Pod",
        namespaced: true,
        short: &["po"],
        all: true,
        status: true,
    },
    Builtin {
        group: "",
        version: "v1",
        plural: "configmaps",
        kind: "ConfigMap",
        namespaced: true,
        short: &["cm"],
        all: false,
        status: false,
    },
    Builtin {
        group: "",
        version: "v1",
        plural: "secrets",
        kind: "Secret",
        namespaced: true,
        short: &[],
        all: false,
        status: false,
    },
    Builtin {
        group: "",
        version: "v1",
        plural: "services",
        kind: "Service",
        namespaced: true,
        short: &["svc"],
        all: true,
        status: true,
    },
    Builtin {
        group: "",
        version: "v1",
        plural: "serviceaccounts",
        kind: "ServiceAccount",
        namespaced: true,
        short: &["sa"],
        all: false,
        status: false,
    },
    Builtin {
        group: "",
        version: "v1",
        plural: "events",
        kind: "Event",
        namespaced: true,
        short: &["ev"],
        all: false,
        status: false,
    },
    Builtin {
        group: "",
        version: "v1",
        plural: "resourcequotas",
        kind: "ResourceQuota",
        namespaced: true,
        short: &["quota"],
        all: false,
        status: true,
    },
    Builtin {
        group: "",
        version: "v1",
        plural: "nodes",
        kind: "Node",
        namespaced: false,
        short: &["no"],
        all: false,
        status: true,
    },
    Builtin {
        group: "apps",
        version: "v1",
        plural: "deployments",
        kind: "Deployment",
        namespaced: true,
        short: &["deploy"],
        all: true,
        status: true,
    },
    Builtin {
        group: "apps",
        version: "v1",
        plural: "replicasets",
        kind: "ReplicaSet",
        namespaced: true,
        short: &["rs"],
        all: true,
        status: true,
    },
    Builtin {
        group: "apps",
        version: "v1",
        plural: "statefulsets",
        kind: "StatefulSet",
        namespaced: true,
        short: &["sts"],
        all: true,
        status: true,
    },
    Builtin {
        group: "apps",
        version: "v1",
        plural: "daemonsets",
        kind: "DaemonSet",
        namespaced: true,
        short: &["ds"],
        all: true,
        status: true,
    },
    Builtin {
        group: "batch",
        version: "v1",
        plural: "jobs",
        kind: "Job",
        namespaced: true,
        short: &[],
        all: true,
        status: true,
    },
    Builtin {
        group: "batch",
        version: "v1",
        plural: "cronjobs",
        kind: "CronJob",
        namespaced: true,
        short: &["cj"],
        all: true,
        status: true,
    },
    Builtin {
        group: "networking.k8s.io",
        version: "v1",
        plural: "networkpolicies",
        kind: "NetworkPolicy",
        namespaced: true,
        short: &["netpol"],
        all: false,
        status: false,
    },
    Builtin {
        group: "events.k8s.io",
        version: "v1",
        plural: "events",
        kind: "Event",
        namespaced: true,
        short: &["ev"],
        all: false,
        status: false,
    },
    Builtin {
        group: "coordination.k8s.io",
        version: "v1",
        plural: "leases",
        kind: "Lease",
        namespaced: true,
        short: &[],
        all: false,
        status: false,
    },
    Builtin {
        group: "rbac.authorization.k8s.io",
        version: "v1",
        plural: "roles",
        kind: "Role",
        namespaced: true,
        short: &[],
        all: false,
        status: false,
    },
    Builtin {
        group: "rbac.authorization.k8s.io",
        version: "v1",
        plural: "rolebindings",
        kind: "RoleBinding",
        namespaced: true,
        short: &[],
        all: false,
        status: false,
    },
    Builtin {
        group: "rbac.authorization.k8s.io",
        version: "v1",
        plural: "clusterroles",
        kind: "ClusterRole",
        namespaced: false,
        short: &[],
        all: false,
        status: false,
    },
    Builtin {
        group: "rbac.authorization.k8s.io",
        version: "v1",
        plural: "clusterrolebindings",
        kind: "ClusterRoleBinding",
        namespaced: false,
        short: &[],
        all: false,
        status: false,
    },
    Builtin {
        group: "admissionregistration.k8s.io",
        version: "v1",
        plural: "mutatingwebhookconfigurations",
        kind: "MutatingWebhookConfiguration",
        namespaced: false,
        short: &[],
        all: false,
        status: false,
    },
    Builtin {
        group: "admissionregistration.k8s.io",
        version: "v1",
        plural: "validatingwebhookconfigurations",
        kind: "ValidatingWebhookConfiguration",
        namespaced: false,
        short: &[],
        all: false,
        status: false,
    },
    Builtin {
        group: "apiextensions.k8s.io",
        version: "v1",
        plural: "customresourcedefinitions",
        kind: "CustomResourceDefinition",
        namespaced: false,
        short: &["crd", "crds"],
        all: false,
        status: true,
    },
];

/// The group of CustomResourceDefinitions.
pub(crate) const CRD_GROUP: &str = "apiextensions.k8s.io";
/// The plural name of CustomResourceDefinitions.
pub(crate) const CRD_PLURAL: &str = "customresourcedefinitions";

/// A served API group with its versions, preferred first.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct GroupInfo {
    /// Group name.
    pub name: String,
    /// Versions, preferred first.
    pub versions: Vec<String>,
}

/// All resource types currently served.
#[derive(Debug, Clone)]
pub(crate) struct Registry {
    builtin: Vec<Arc<ResourceType>>,
    custom: BTreeMap<String, Arc<ResourceType>>,
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

impl Registry {
    /// A registry with the built-in types only.
    pub fn new() -> Self {
        let builtin = BUILTINS
            .iter()
            .map(|b| {
                Arc::new(ResourceType {
                    id: ResourceId {
                        group: b.group.to_string(),
                        plural: b.plural.to_string(),
                    },
                    versions: vec![b.version.to_string()],
                    storage_version: b.version.to_string(),
                    kind: b.kind.to_string(),
                    list_kind: format!("{}List", b.kind),
                    singular: b.kind.to_lowercase(),
                    namespaced: b.namespaced,
                    short_names: b.short.iter().map(|s| s.to_string()).collect(),
                    categories: if b.all {
                        vec!["all".to_string()]
                    } else {
                        vec![]
                    },
                    has_status: b.status,
                    crd: None,
                    stored_as: (b.group == crate::events::GROUP).then(|| ResourceId {
                        group: String::new(),
                        plural: "events".into(),
                    }),
                })
            })
            .collect();
        Registry {
            builtin,
            custom: BTreeMap::new(),
        }
    }

    /// Every served type, built-in first.
    pub fn all(&self) -> impl Iterator<Item = &Arc<ResourceType>> {
        self.builtin.iter().chain(self.custom.values())
    }

    /// The type served at `group/version` under `plural`.
    pub fn lookup(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceType>> {
        self.all()
            .find(|rt| rt.id.group == group && rt.id.plural == plural && rt.serves(version))
            .cloned()
    }

    /// The type of kind `kind` served at `group/version`.
    pub fn lookup_kind(&self, group: &str, version: &str, kind: &str) -> Option<Arc<ResourceType>> {
        self.all()
            .find(|rt| rt.id.group == group && rt.kind == kind && rt.serves(version))
            .cloned()
    }

    /// The type with identity `id`, at whatever version.
    pub fn by_id(&self, id: &ResourceId) -> Option<Arc<ResourceType>> {
        self.all().find(|rt| &rt.id == id).cloned()
    }

    /// Types served at `group/version`.
    pub fn in_group_version(&self, group: &str, version: &str) -> Vec<Arc<ResourceType>> {
        self.all()
            .filter(|rt| rt.id.group == group && rt.serves(version))
            .cloned()
            .collect()
    }

    /// Named (non-core) groups with their versions, preferred version first.
    pub fn groups(&self) -> Vec<GroupInfo> {
        let mut groups: Vec<GroupInfo> = Vec::new();
        for rt in self.all().filter(|rt| !rt.id.group.is_empty()) {
            let entry = match groups.iter_mut().position(|g| g.name == rt.id.group) {
                Some(i) => &mut groups[i],
                None => {
                    groups.push(GroupInfo {
                        name: rt.id.group.clone(),
                        versions: Vec::new(),
                    });
                    groups.last_mut().expect("just pushed")
                }
            };
            for v in &rt.versions {
                if !entry.versions.contains(v) {
                    entry.versions.push(v.clone());
                }
            }
        }
        for g in &mut groups {
            g.versions.sort_by(|a, b| compare_versions(a, b));
        }
        groups
    }

    /// Serve the resource a CRD defines (replacing an earlier definition by the same CRD).
    pub fn register_crd(&mut self, rt: ResourceType) -> Arc<ResourceType> {
        let name = rt.crd.clone().unwrap_or_default();
        let rt = Arc::new(rt);
        self.custom.insert(name, rt.clone());
        rt
    }

    /// Stop serving the resource a CRD defined.
    pub fn unregister_crd(&mut self, crd_name: &str) -> Option<Arc<ResourceType>> {
        self.custom.remove(crd_name)
    }

    /// Whether `id` is already served by something other than the CRD `crd_name`.
    pub fn is_taken(&self, id: &ResourceId, crd_name: &str) -> bool {
        self.all()
            .any(|rt| &rt.id == id && rt.crd.as_deref() != Some(crd_name))
    }
}

/// Parse a CustomResourceDefinition into the type it serves, or say what is wrong with it.
///
/// Errors are `(field, problem)` pairs for a 422 Invalid.
pub(crate) fn crd_resource_type(crd: &Value) -> Result<ResourceType, (String, String)> {
    let err = |field: &str, problem: &str| Err((field.to_string(), problem.to_string()));
    let spec = &crd["spec"];
    let Some(group) = spec["group"].as_str().filter(|g| !g.is_empty()) else {
        return err("spec.group", "Required value");
    };
    let names = &spec["names"];
    let Some(plural) = names["plural"].as_str().filter(|p| !p.is_empty()) else {
        return err("spec.names.plural", "Required value");
    };
    let Some(kind) = names["kind"].as_str().filter(|k| !k.is_empty()) else {
        return err("spec.names.kind", "Required value");
    };
    let expected = format!("{plural}.{group}");
    let name = crd["metadata"]["name"].as_str().unwrap_or_default();
    if name != expected {
        return err(
            "metadata.name",
            &format!("Invalid value: \"{name}\": must be spec.names.plural+\".\"+spec.group"),
        );
    }
    let namespaced = match spec["scope"].as_str() {
        Some("Namespaced") => true,
        Some("Cluster") => false,
        _ => {
            return err(
                "spec.scope",
                "Unsupported value: supported values: \"Cluster\", \"Namespaced\"",
            );
        }
    };
    let Some(versions) = spec["versions"].as_array().filter(|v| !v.is_empty()) else {
        return err(
            "spec.versions",
            "Required value: must have exactly one version marked as storage version",
        );
    };
    let mut served = Vec::new();
    let mut storage = None;
    let mut has_status = false;
    for v in versions {
        let Some(vname) = v["name"].as_str().filter(|n| !n.is_empty()) else {
            return err("spec.versions[].name", "Required value");
        };
        if v["served"].as_bool().unwrap_or(false) {
            served.push(vname.to_string());
        }
        if v["storage"].as_bool().unwrap_or(false) {
            if storage.is_some() {
                return err(
                    "spec.versions",
                    "Invalid value: must have exactly one version marked as storage version",
                );
            }
            storage = Some(vname.to_string());
        }
        if v["subresources"]["status"].is_object() {
            has_status = true;
        }
    }
    let Some(storage) = storage else {
        return err(
            "spec.versions",
            "Invalid value: must have exactly one version marked as storage version",
        );
    };
    served.sort_by(|a, b| compare_versions(a, b));
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    Ok(ResourceType {
        id: ResourceId {
            group: group.to_string(),
            plural: plural.to_string(),
        },
        versions: served,
        storage_version: storage,
        kind: kind.to_string(),
        list_kind: names["listKind"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| format!("{kind}List")),
        singular: names["singular"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| kind.to_lowercase()),
        namespaced,
        short_names: strings(&names["shortNames"]),
        categories: strings(&names["categories"]),
        has_status,
        crd: Some(name.to_string()),
        stored_as: None,
    })
}

/// Order Kubernetes version strings by priority: GA before beta before alpha, newer first;
/// versions that do not look like Kubernetes versions come last, alphabetically.
pub(crate) fn compare_versions(a: &str, b: &str) -> Ordering {
    fn key(v: &str) -> Option<(u8, u64, u64)> {
        let rest = v.strip_prefix('v')?;
        let digits_end = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let major: u64 = rest[..digits_end].parse().ok()?;
        let tail = &rest[digits_end..];
        if tail.is_empty() {
            return Some((3, major, 0));
        }
        let (class, num) = if let Some(n) = tail.strip_prefix("beta") {
            (2, n)
        } else if let Some(n) = tail.strip_prefix("alpha") {
            (1, n)
        } else {
            return None;
        };
        let minor: u64 = if num.is_empty() { 0 } else { num.parse().ok()? };
        Some((class, major, minor))
    }
    match (key(a), key(b)) {
        (Some(ka), Some(kb)) => kb.cmp(&ka),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn versions_sort_ga_then_beta_then_alpha_newest_first() {
        let mut v = vec!["v1alpha1", "foo", "v1beta1", "v2", "v1", "v1beta2", "v10"];
        v.sort_by(|a, b| compare_versions(a, b));
        assert_eq!(
            v,
            vec!["v10", "v2", "v1", "v1beta2", "v1beta1", "v1alpha1", "foo"]
        );
    }

    #[test]
    fn crd_with_mismatched_name_is_rejected() {
        let crd = json!({
            "metadata": {"name": "wrong"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": "widgets", "kind": "Widget"},
                     "versions": [{"name": "v1", "served": true, "storage": true}]}
        });
        let (field, _) = crd_resource_type(&crd).unwrap_err();
        assert_eq!(field, "metadata.name");
    }

    #[test]
    fn crd_serves_every_served_version_preferred_first() {
        let crd = json!({
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Cluster",
                     "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"]},
                     "versions": [
                        {"name": "v1beta1", "served": true, "storage": false},
                        {"name": "v1", "served": true, "storage": true, "subresources": {"status": {}}},
                        {"name": "v1alpha1", "served": false, "storage": false}]}
        });
        let rt = crd_resource_type(&crd).unwrap();
        assert_eq!(rt.versions, vec!["v1", "v1beta1"]);
        assert_eq!(rt.storage_version, "v1");
        assert!(!rt.namespaced);
        assert!(rt.has_status);
        assert_eq!(rt.list_kind, "WidgetList");
        assert_eq!(rt.singular, "widget");
        assert_eq!(rt.short_names, vec!["wd"]);
    }
}
