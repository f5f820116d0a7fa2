//! The plugin's configuration, every field optional:
//!
//! ```json
//! {"namespaceSelector": "team",
//!  "networkPolicy": {"name": "herald-default-deny"},
//!  "resourceQuota": {"name": "herald-default-quota",
//!                    "hard": {"pods": "20", "requests.cpu": "4", "requests.memory": "8Gi"}},
//!  "excludeNamespaces": ["kube-system", "kube-public", "kube-node-lease"],
//!  "defaultLabels": {"cost-center": "unassigned"}}
//! ```
//!
//! The values shown are the defaults, except `namespaceSelector`, which
//! defaults to none (every namespace), and `defaultLabels`, which defaults
//! to none (no admission webhook).

use std::collections::BTreeMap;

use serde::Deserialize;

/// The configuration; [`Default`] is the documented defaults, also used
/// without a configuration.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Settings {
    /// A label selector choosing the namespaces (`team`, `env in (prod)`);
    /// `None`: every namespace.
    #[serde(default)]
    pub namespace_selector: Option<String>,
    /// The NetworkPolicy.
    #[serde(default)]
    pub network_policy: NetworkPolicySettings,
    /// The ResourceQuota.
    #[serde(default)]
    pub resource_quota: ResourceQuotaSettings,
    /// Namespaces never given defaults, whatever their labels.
    #[serde(default = "default_excluded")]
    pub exclude_namespaces: Vec<String>,
    /// Labels a Namespace is given as it is created, where it sets none of
    /// its own (a mutating admission webhook); empty: no webhook.
    #[serde(default)]
    pub default_labels: BTreeMap<String, String>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            namespace_selector: None,
            network_policy: NetworkPolicySettings::default(),
            resource_quota: ResourceQuotaSettings::default(),
            exclude_namespaces: default_excluded(),
            default_labels: BTreeMap::new(),
        }
    }
}

impl Settings {
    /// Whether `namespace` is excluded.
    pub fn excludes(&self, namespace: &str) -> bool {
        self.exclude_namespaces
            .iter()
            .any(|excluded| excluded == namespace)
    }
}

/// The default-deny NetworkPolicy.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NetworkPolicySettings {
    /// Its name in every namespace (default `herald-default-deny`).
    #[serde(default = "default_policy_name")]
    pub name: String,
}

impl Default for NetworkPolicySettings {
    fn default() -> Self {
        Self {
            name: default_policy_name(),
        }
    }
}

/// The ResourceQuota.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceQuotaSettings {
    /// Its name in every namespace (default `herald-default-quota`).
    #[serde(default = "default_quota_name")]
    pub name: String,
    /// Its `spec.hard` limits, as Kubernetes quantities (default: 20 pods,
    /// 4 CPUs and 8Gi of memory requested). Write them in canonical form
    /// (`4`, not `4000m`), as the API server stores them, or every
    /// comparison sees a drift.
    #[serde(default = "default_hard")]
    pub hard: BTreeMap<String, String>,
}

impl Default for ResourceQuotaSettings {
    fn default() -> Self {
        Self {
            name: default_quota_name(),
            hard: default_hard(),
        }
    }
}

fn default_excluded() -> Vec<String> {
    ["kube-system", "kube-public", "kube-node-lease"]
        .map(str::to_owned)
        .to_vec()
}

fn default_policy_name() -> String {
    "herald-default-deny".to_owned()
}

fn default_quota_name() -> String {
    "herald-default-quota".to_owned()
}

fn default_hard() -> BTreeMap<String, String> {
    [
        ("pods", "20"),
        ("requests.cpu", "4"),
        ("requests.memory", "8Gi"),
    ]
    .map(|(resource, value)| (resource.to_owned(), value.to_owned()))
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_configuration_takes_the_documented_defaults() {
        let settings: Settings = herald_sdk::serde_json::from_str("{}").unwrap();
        assert_eq!(settings.namespace_selector, None);
        assert_eq!(settings.network_policy.name, "herald-default-deny");
        assert_eq!(settings.resource_quota.name, "herald-default-quota");
        assert_eq!(settings.resource_quota.hard["requests.memory"], "8Gi");
        assert_eq!(settings.resource_quota.hard.len(), 3);
        assert!(settings.excludes("kube-node-lease"));
        assert!(!settings.excludes("default"));
        assert_eq!(settings, Settings::default());
    }

    #[test]
    fn the_documented_example_parses_and_unknown_keys_do_not() {
        let settings: Settings = herald_sdk::serde_json::from_str(
            r#"{"namespaceSelector": "team", "networkPolicy": {"name": "deny"},
                "resourceQuota": {"name": "quota", "hard": {"pods": "5"}},
                "excludeNamespaces": []}"#,
        )
        .unwrap();
        assert_eq!(settings.namespace_selector.as_deref(), Some("team"));
        assert_eq!(settings.network_policy.name, "deny");
        assert_eq!(settings.resource_quota.hard.len(), 1);
        assert!(!settings.excludes("kube-system"));
        assert!(herald_sdk::serde_json::from_str::<Settings>(r#"{"selector": "x"}"#).is_err());
    }
}
