//! Write rules: what a plugin declares it will do through the Kubernetes
//! API, what the operator grants it, and the check of one call against them.
//!
//! A rule is verbs × one kind (by group and kind, as Kubernetes RBAC scopes
//! by resource) × the object or its `status` subresource × namespaces. The
//! plugin's manifest declares rules; the operator's grant must cover each of
//! them or the plugin is not loaded; every call is then checked against the
//! declared rules (never wider than the grant) before a request is built.

use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::fmt;

/// A Kubernetes API verb a plugin may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verb {
    /// Read one object from the API server.
    Get,
    /// Create an object.
    Create,
    /// Replace an object (Kubernetes' `update`).
    Update,
    /// Patch an object (merge, JSON or strategic merge patch).
    Patch,
    /// Server-side apply: a patch that may create, so RBAC needs `patch`
    /// and `create` for it.
    Apply,
    /// Delete an object.
    Delete,
}

impl Verb {
    /// Every verb, in order.
    pub const ALL: [Verb; 6] = [
        Verb::Get,
        Verb::Create,
        Verb::Update,
        Verb::Patch,
        Verb::Apply,
        Verb::Delete,
    ];

    /// The verb as written in rules and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Apply => "apply",
            Verb::Delete => "delete",
        }
    }

    /// The Kubernetes RBAC verbs the host's service account needs for it.
    pub fn rbac_verbs(self) -> &'static [&'static str] {
        match self {
            Verb::Get => &["get"],
            Verb::Create => &["create"],
            Verb::Update => &["update"],
            Verb::Patch => &["patch"],
            Verb::Apply => &["patch", "create"],
            Verb::Delete => &["delete"],
        }
    }
}

impl fmt::Display for Verb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The only subresource plugins may write.
pub const STATUS: &str = "status";

pub use crate::capability::reads::ALL_NAMESPACES;
use crate::cluster::{ClusterName, Clusters};

/// One write rule, as declared in a manifest or granted in configuration.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WriteRule {
    /// The verbs allowed.
    pub verbs: BTreeSet<Verb>,
    /// The kind's API group; empty for the core group.
    #[serde(default)]
    pub group: String,
    /// The kind, e.g. `NetworkPolicy`.
    pub kind: String,
    /// `None` for the object itself, `Some("status")` for its status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subresource: Option<String>,
    /// Namespaces, or `*` for every namespace and cluster-scoped objects.
    pub namespaces: BTreeSet<String>,
    /// In a grant, the clusters it covers: left out for the default cluster
    /// alone, `*` for every cluster, or names. A manifest's rules name none
    /// (what a plugin does is the same wherever it runs).
    #[serde(default, skip_serializing_if = "Clusters::is_default_only")]
    pub clusters: Clusters,
}

/// A rule that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    /// No verbs.
    #[error(
        "write rule for {0}: no verbs: list at least one of get, create, update, patch, apply, delete"
    )]
    NoVerbs(String),
    /// No kind.
    #[error("write rule #{0}: no kind")]
    NoKind(usize),
    /// No namespaces.
    #[error("write rule for {0}: no namespaces: list them, or \"*\" for every namespace")]
    NoNamespaces(String),
    /// A namespace that is neither `*` nor a valid name.
    #[error("write rule for {rule}: namespace {namespace:?} is not a namespace name or \"*\"")]
    BadNamespace {
        /// The rule's kind.
        rule: String,
        /// The namespace as given.
        namespace: String,
    },
    /// A verb a subresource does not have.
    #[error(
        "write rule for {rule}: a status subresource cannot be {verb}d: use get, update, patch or apply"
    )]
    SubresourceVerb {
        /// The rule's kind and subresource.
        rule: String,
        /// The verb.
        verb: Verb,
    },
    /// A group or kind that breaks its grammar.
    #[error("write rule #{index}: {reason}")]
    Identifier {
        /// Position of the rule.
        index: usize,
        /// The field, value and rule at fault.
        reason: String,
    },
    /// A cluster that is neither `*` nor a valid name.
    #[error("write rule for {rule}: {reason}")]
    BadCluster {
        /// The rule's kind.
        rule: String,
        /// The cluster at fault.
        reason: String,
    },
    /// A subresource other than `status`.
    #[error(
        "write rule for {rule}: subresource {subresource:?} is not supported (only \"status\")"
    )]
    Subresource {
        /// The rule's kind.
        rule: String,
        /// The subresource as given.
        subresource: String,
    },
}

impl WriteRule {
    /// `group/Kind` (or `Kind` for the core group), with `/status` when the
    /// rule is for the status subresource: how messages name the rule's kind.
    pub fn resource_name(&self) -> String {
        let kind = match self.group.as_str() {
            "" => self.kind.clone(),
            group => format!("{group}/{}", self.kind),
        };
        match &self.subresource {
            Some(sub) => format!("{kind}/{sub}"),
            None => kind,
        }
    }

    /// Checks the rule is well formed; `index` is its position, for messages.
    pub fn validate(&self, index: usize) -> Result<(), RuleError> {
        if self.kind.is_empty() {
            return Err(RuleError::NoKind(index));
        }
        {
            use herald_grammar::name::{Rule, check};
            check("group", &self.group, Rule::Group)
                .and_then(|()| check("kind", &self.kind, Rule::Kind))
                .map_err(|refused| RuleError::Identifier {
                    index,
                    reason: refused.to_string(),
                })?;
        }
        let name = self.resource_name();
        if self.verbs.is_empty() {
            return Err(RuleError::NoVerbs(name));
        }
        if self.namespaces.is_empty() {
            return Err(RuleError::NoNamespaces(name));
        }
        if let Some(namespace) = self
            .namespaces
            .iter()
            .find(|ns| ns.as_str() != ALL_NAMESPACES && !crate::text::is_dns_label(ns))
        {
            return Err(RuleError::BadNamespace {
                rule: name,
                namespace: namespace.clone(),
            });
        }
        if let Err(reason) = self.clusters.validate("clusters") {
            return Err(RuleError::BadCluster { rule: name, reason });
        }
        if let Some(sub) = &self.subresource
            && sub != STATUS
        {
            return Err(RuleError::Subresource {
                rule: name,
                subresource: sub.clone(),
            });
        }
        if self.subresource.is_some()
            && let Some(verb) = self
                .verbs
                .iter()
                .find(|v| matches!(v, Verb::Create | Verb::Delete))
        {
            return Err(RuleError::SubresourceVerb {
                rule: name,
                verb: *verb,
            });
        }
        Ok(())
    }

    fn same_resource(&self, group: &str, kind: &str, subresource: Option<&str>) -> bool {
        self.group == group && self.kind == kind && self.subresource.as_deref() == subresource
    }

    fn covers_namespace(&self, namespace: Option<&str>) -> bool {
        self.namespaces.contains(ALL_NAMESPACES)
            || namespace.is_some_and(|ns| self.namespaces.contains(ns))
    }
}

/// One call, as the grant check sees it.
#[derive(Debug, Clone, Copy)]
pub struct Access<'a> {
    /// The verb.
    pub verb: Verb,
    /// The kind's group.
    pub group: &'a str,
    /// The kind.
    pub kind: &'a str,
    /// The subresource, if any.
    pub subresource: Option<&'a str>,
    /// The object's namespace; `None` when cluster-scoped.
    pub namespace: Option<&'a str>,
}

impl fmt::Display for Access<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let group = if self.group.is_empty() {
            String::new()
        } else {
            format!("{}/", self.group)
        };
        write!(f, "{} {group}{}", self.verb, self.kind)?;
        if let Some(sub) = self.subresource {
            write!(f, "/{sub}")?;
        }
        match self.namespace {
            Some(ns) => write!(f, " in namespace {ns:?}"),
            None => write!(f, " (cluster-scoped)"),
        }
    }
}

/// True when some rule of `rules` allows `access` in `cluster` (`None`: the
/// default cluster, named `default_cluster`).
pub fn permits_in(
    rules: &[WriteRule],
    access: &Access<'_>,
    cluster: Option<&ClusterName>,
    default_cluster: &str,
) -> bool {
    rules.iter().any(|rule| {
        rule.clusters.covers(cluster, default_cluster)
            && permits(std::slice::from_ref(rule), access)
    })
}

/// True when some rule of `rules` allows `access`.
pub fn permits(rules: &[WriteRule], access: &Access<'_>) -> bool {
    rules.iter().any(|rule| {
        rule.same_resource(access.group, access.kind, access.subresource)
            && rule.verbs.contains(&access.verb)
            && rule.covers_namespace(access.namespace)
    })
}

/// The first part of the `declared` rules that no rule of `granted` covers,
/// as a message naming the missing grant; `None` when all are covered.
///
/// Coverage is checked verb by verb and namespace by namespace: a declared
/// namespace `*` needs a granted `*`; a named one is covered by `*` or the
/// same name, possibly spread across several granted rules.
pub fn missing_grant(declared: &[WriteRule], granted: &[WriteRule]) -> Option<String> {
    for rule in declared {
        for verb in &rule.verbs {
            for namespace in &rule.namespaces {
                let covered = granted.iter().any(|grant| {
                    grant.same_resource(&rule.group, &rule.kind, rule.subresource.as_deref())
                        && grant.verbs.contains(verb)
                        && (grant.namespaces.contains(ALL_NAMESPACES)
                            || grant.namespaces.contains(namespace))
                });
                if !covered {
                    let where_ = if namespace == ALL_NAMESPACES {
                        "in every namespace (\"*\")".to_owned()
                    } else {
                        format!("in namespace {namespace:?}")
                    };
                    return Some(format!("{verb} {} {where_}", rule.resource_name()));
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(verbs: &[Verb], group: &str, kind: &str, namespaces: &[&str]) -> WriteRule {
        WriteRule {
            verbs: verbs.iter().copied().collect(),
            group: group.into(),
            kind: kind.into(),
            subresource: None,
            namespaces: namespaces.iter().map(|ns| ns.to_string()).collect(),
            clusters: Default::default(),
        }
    }

    fn access<'a>(verb: Verb, kind: &'a str, namespace: Option<&'a str>) -> Access<'a> {
        Access {
            verb,
            group: "networking.k8s.io",
            kind,
            subresource: None,
            namespace,
        }
    }

    #[test]
    fn a_grant_covers_another_cluster_only_when_it_names_it() {
        let west = ClusterName::parse("name", "west").unwrap();
        let home = rule(&[Verb::Apply], "networking.k8s.io", "NetworkPolicy", &["*"]);
        let everywhere = WriteRule {
            clusters: Clusters(["*".to_owned()].into()),
            ..home.clone()
        };
        let apply = access(Verb::Apply, "NetworkPolicy", Some("shop"));
        assert!(permits_in(
            std::slice::from_ref(&home),
            &apply,
            None,
            "default"
        ));
        assert!(!permits_in(
            std::slice::from_ref(&home),
            &apply,
            Some(&west),
            "default"
        ));
        assert!(permits_in(
            std::slice::from_ref(&everywhere),
            &apply,
            Some(&west),
            "default"
        ));
        let only_west = WriteRule {
            clusters: Clusters(["west".to_owned()].into()),
            ..home
        };
        assert!(permits_in(
            std::slice::from_ref(&only_west),
            &apply,
            Some(&west),
            "default"
        ));
        assert!(!permits_in(&[only_west], &apply, None, "default"));
    }

    #[test]
    fn a_call_is_permitted_only_by_a_rule_with_its_verb_kind_and_namespace() {
        let rules = [rule(
            &[Verb::Get, Verb::Apply],
            "networking.k8s.io",
            "NetworkPolicy",
            &["team-a"],
        )];
        assert!(permits(
            &rules,
            &access(Verb::Apply, "NetworkPolicy", Some("team-a"))
        ));
        assert!(!permits(
            &rules,
            &access(Verb::Delete, "NetworkPolicy", Some("team-a"))
        ));
        assert!(!permits(
            &rules,
            &access(Verb::Apply, "NetworkPolicy", Some("team-b"))
        ));
        assert!(!permits(
            &rules,
            &access(Verb::Apply, "NetworkPolicy", None)
        ));
        assert!(!permits(
            &rules,
            &access(Verb::Apply, "Ingress", Some("team-a"))
        ));
        let status = Access {
            subresource: Some(STATUS),
            ..access(Verb::Apply, "NetworkPolicy", Some("team-a"))
        };
        assert!(!permits(&rules, &status), "status is a grant of its own");
        let everywhere = [rule(&[Verb::Get], "", "Namespace", &["*"])];
        let namespace = Access {
            group: "",
            ..access(Verb::Get, "Namespace", None)
        };
        assert!(permits(&everywhere, &namespace));
    }

    #[test]
    fn a_declaration_wider_than_the_grant_names_what_is_missing() {
        let declared = [rule(
            &[Verb::Get, Verb::Apply],
            "networking.k8s.io",
            "NetworkPolicy",
            &["*"],
        )];
        let narrow = [rule(
            &[Verb::Get, Verb::Apply],
            "networking.k8s.io",
            "NetworkPolicy",
            &["team-a"],
        )];
        assert_eq!(
            missing_grant(&declared, &narrow).as_deref(),
            Some("get networking.k8s.io/NetworkPolicy in every namespace (\"*\")")
        );
        let read_only = [rule(
            &[Verb::Get],
            "networking.k8s.io",
            "NetworkPolicy",
            &["*"],
        )];
        assert_eq!(
            missing_grant(&declared, &read_only).as_deref(),
            Some("apply networking.k8s.io/NetworkPolicy in every namespace (\"*\")")
        );
        let split = [
            rule(&[Verb::Get], "networking.k8s.io", "NetworkPolicy", &["*"]),
            rule(
                &[Verb::Apply, Verb::Delete],
                "networking.k8s.io",
                "NetworkPolicy",
                &["*"],
            ),
        ];
        assert_eq!(missing_grant(&declared, &split), None);
        assert_eq!(missing_grant(&[], &[]), None);
    }

    #[test]
    fn malformed_rules_are_refused_with_the_reason() {
        let mut bad = rule(&[Verb::Get], "", "Pod", &["default"]);
        assert_eq!(bad.validate(0), Ok(()));
        bad.namespaces.insert("Not_A_Namespace".into());
        assert!(matches!(
            bad.validate(0),
            Err(RuleError::BadNamespace { .. })
        ));
        let mut bad = rule(&[], "", "Pod", &["*"]);
        assert!(matches!(bad.validate(0), Err(RuleError::NoVerbs(_))));
        bad.verbs.insert(Verb::Patch);
        bad.subresource = Some("scale".into());
        assert!(matches!(
            bad.validate(0),
            Err(RuleError::Subresource { .. })
        ));
        bad.subresource = Some(STATUS.into());
        assert_eq!(bad.validate(0), Ok(()));
        bad.verbs.insert(Verb::Delete);
        assert!(matches!(
            bad.validate(0),
            Err(RuleError::SubresourceVerb {
                verb: Verb::Delete,
                ..
            })
        ));
        let unnamespaced = rule(&[Verb::Get], "", "Pod", &[]);
        assert!(matches!(
            unnamespaced.validate(0),
            Err(RuleError::NoNamespaces(_))
        ));
    }

    #[test]
    fn rules_read_from_yaml_as_operators_write_them() {
        let rule: WriteRule = serde_yaml::from_str(
            "verbs: [get, apply]\ngroup: networking.k8s.io\nkind: NetworkPolicy\nnamespaces: ['*']\n",
        )
        .unwrap();
        assert_eq!(rule.verbs, [Verb::Get, Verb::Apply].into_iter().collect());
        assert!(rule.namespaces.contains("*"));
        let unknown = serde_yaml::from_str::<WriteRule>(
            "verbs: [get]\nkind: Pod\nnamespaces: ['*']\nresource: pods\n",
        );
        assert!(unknown.is_err());
    }
}
