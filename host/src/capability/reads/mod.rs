//! Reads: which kinds, in which namespaces, a plugin may read. A plugin
//! reads when it subscribes to a kind (its notifications and its cache and
//! index look-ups, which stay within its subscriptions), and when it gets an
//! object from the API server through `kube`. Every read is checked here,
//! against the operator's grant: a subscription it does not cover refuses
//! the plugin at load, naming the grant to add; a `kube` get it does not
//! cover is refused with `not-granted` before anything is sent.
//!
//! - **Grant.** `plugins.<name>.grants.reads` lists [`ReadRule`]s (a kind,
//!   or `*` for every kind of a group, or every group; and the namespaces,
//!   `*` for all namespaces and cluster-scoped objects), as Kubewarden's
//!   context-aware policies list the resources a policy may read, approved
//!   by the operator.
//! - **Default.** So that dropping a plugin in stays easy, the host-wide
//!   [`ReadPolicy`] (`reads` in the configuration) makes kinds readable by
//!   every plugin without a grant of its own: by default every kind (`*`)
//!   but the sensitive ones. An operator who wants every read approved sets
//!   `reads.defaultReadable: []`.
//! - **Sensitive kinds** are never readable by default, whatever
//!   `defaultReadable` says, nor through a `*` rule: only a rule naming the
//!   kind grants them. Secrets always are; the operator adds others
//!   (`reads.sensitive`). A plugin granted a sensitive read must be pinned
//!   or signed to load (`crate::reload`'s identity rule).
//! - **Dry-run.** No difference: a read has no effect outside the host.
//! - **RBAC.** The host's service account lists and watches what plugins
//!   subscribe to and gets what they get (`herald plugin rbac`); the grant
//!   decides which plugin sees what of it.

pub mod rbac;

use crate::cluster::{ClusterName, Clusters, DEFAULT_CLUSTER};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::fmt;

/// The namespace pattern meaning every namespace and cluster-scoped objects
/// (in read grants, write rules and Events grants alike).
pub const ALL_NAMESPACES: &str = "*";

/// One read the operator grants a plugin: a kind (or every kind) of a group
/// (or of every group), in some namespaces.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ReadRule {
    /// The kind's API group (empty for the core group), or `*` for every
    /// group.
    #[serde(default)]
    pub group: String,
    /// The kind, or `*` for every kind that is not sensitive.
    pub kind: String,
    /// The namespaces, or `*` for every namespace and cluster-scoped
    /// objects.
    pub namespaces: BTreeSet<String>,
    /// The clusters: left out for the default cluster alone, `*` for every
    /// cluster, or names.
    #[serde(default, skip_serializing_if = "Clusters::is_default_only")]
    pub clusters: Clusters,
}

impl ReadRule {
    /// Checks the rule is well formed; the error names the field at fault.
    pub fn validate(&self) -> Result<(), String> {
        use herald_grammar::name::{Rule, check};
        if self.group != "*" {
            check("group", &self.group, Rule::Group).map_err(|e| e.to_string())?;
        }
        if self.kind != "*" {
            check("kind", &self.kind, Rule::Kind).map_err(|e| e.to_string())?;
        }
        if self.namespaces.is_empty() {
            return Err("namespaces: list them, or \"*\" for every namespace".into());
        }
        for namespace in &self.namespaces {
            if namespace != ALL_NAMESPACES {
                check("namespaces", namespace, Rule::Dns1123Label).map_err(|e| e.to_string())?;
            }
        }
        self.clusters.validate("clusters")
    }

    /// Whether the rule covers `read`, whose namespace has been dropped if
    /// its kind is cluster-scoped ([`Read::scoped`]): only `*` covers a
    /// cluster-scoped kind, never a rule naming namespaces.
    fn covers(&self, read: &Read<'_>, sensitive: bool, default_cluster: &str) -> bool {
        self.clusters.covers(read.cluster, default_cluster)
            && self.covers_kind(read, sensitive)
            && (self.namespaces.contains(ALL_NAMESPACES)
                || read
                    .namespace
                    .is_some_and(|ns| self.namespaces.contains(ns)))
    }

    fn covers_kind(&self, read: &Read<'_>, sensitive: bool) -> bool {
        if sensitive {
            self.kind == read.kind && self.group == read.group
        } else {
            (self.kind == "*" || self.kind == read.kind)
                && (self.group == "*" || self.group == read.group)
        }
    }
}

/// A kind, or every kind, as `reads.defaultReadable` and `reads.sensitive`
/// name them: `*`, `Kind` (core group), `group/Kind` or `group/*`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct KindPattern {
    /// The group, `*` for any.
    pub group: String,
    /// The kind, `*` for any.
    pub kind: String,
}

impl KindPattern {
    /// Parses `*`, `Kind`, `group/Kind` or `group/*`; the error names the
    /// group or kind at fault.
    pub fn parse(text: &str) -> Result<Self, herald_grammar::name::Invalid> {
        use herald_grammar::name::{Rule, check};
        let (group, kind) = match text {
            "*" => ("*", "*"),
            _ => text.rsplit_once('/').unwrap_or(("", text)),
        };
        if group != "*" {
            check("group", group, Rule::Group)?;
        }
        if kind != "*" {
            check("kind", kind, Rule::Kind)?;
        }
        Ok(KindPattern {
            group: group.to_owned(),
            kind: kind.to_owned(),
        })
    }

    fn matches(&self, group: &str, kind: &str) -> bool {
        (self.group == "*" || self.group == group) && (self.kind == "*" || self.kind == kind)
    }
}

impl fmt::Display for KindPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.group.as_str(), self.kind.as_str()) {
            ("*", "*") => f.write_str("*"),
            ("", kind) => f.write_str(kind),
            (group, kind) => write!(f, "{group}/{kind}"),
        }
    }
}

impl<'de> Deserialize<'de> for KindPattern {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        KindPattern::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl Serialize for KindPattern {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// The kinds that are sensitive whatever the configuration says: Secrets.
pub const ALWAYS_SENSITIVE: &[(&str, &str)] = &[("", "Secret")];

/// `reads`: the host-wide read policy.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct ReadPolicy {
    /// Kinds every plugin may read, in every namespace, without a grant of
    /// its own (sensitive kinds excepted). Default: `["*"]`.
    pub default_readable: Vec<KindPattern>,
    /// Kinds readable only through a grant naming them, beyond the Secrets
    /// that always are, e.g. `bitnami.com/SealedSecret`.
    pub sensitive: Vec<KindPattern>,
    /// The default cluster's name (`source.name`), as a grant's `clusters`
    /// may name it; `None`: [`DEFAULT_CLUSTER`]. What is readable by default
    /// is readable in the default cluster alone.
    #[serde(skip)]
    pub default_cluster: Option<ClusterName>,
}

impl Default for ReadPolicy {
    fn default() -> Self {
        ReadPolicy {
            default_readable: vec![KindPattern {
                group: "*".into(),
                kind: "*".into(),
            }],
            sensitive: Vec::new(),
            default_cluster: None,
        }
    }
}

impl ReadPolicy {
    /// The default cluster's name.
    pub fn default_cluster_name(&self) -> &str {
        self.default_cluster
            .as_ref()
            .map_or(DEFAULT_CLUSTER, ClusterName::as_str)
    }

    /// True when `group`/`kind` is sensitive: a Secret, or configured so.
    pub fn is_sensitive(&self, group: &str, kind: &str) -> bool {
        ALWAYS_SENSITIVE
            .iter()
            .any(|(g, k)| *g == group && *k == kind)
            || self.sensitive.iter().any(|p| p.matches(group, kind))
    }

    fn default_allows(&self, group: &str, kind: &str) -> bool {
        !self.is_sensitive(group, kind)
            && self
                .default_readable
                .iter()
                .any(|pattern| pattern.matches(group, kind))
    }
}

/// One read, as the check sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Read<'a> {
    /// The kind's group.
    pub group: &'a str,
    /// The kind.
    pub kind: &'a str,
    /// The namespace; `None` for every namespace or a cluster-scoped kind.
    pub namespace: Option<&'a str>,
    /// The cluster; `None` for the default one.
    pub cluster: Option<&'a ClusterName>,
}

impl<'a> Read<'a> {
    /// The read as the informer and the API server see it: for a kind known
    /// to be cluster-scoped, a namespace narrows nothing (the informer drops
    /// it, the collection's path has none), so it is dropped here too,
    /// before any check, and only a rule with namespaces `*` covers the read.
    /// A custom kind's scope is known only once discovery names its
    /// resource: the daemon refuses a namespace on a cluster-scoped one then.
    pub fn scoped(self) -> Self {
        if self.namespace.is_some() && self.is_cluster_scoped() {
            Read {
                namespace: None,
                ..self
            }
        } else {
            self
        }
    }

    /// True when its kind is a built-in kind known to be cluster-scoped.
    pub fn is_cluster_scoped(&self) -> bool {
        crate::discovery::builtin::is_cluster_scoped(self.group, self.kind)
    }
}

impl fmt::Display for Read<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.group {
            "" => write!(f, "{}", self.kind)?,
            group => write!(f, "{group}/{}", self.kind)?,
        }
        match self.namespace {
            Some(namespace) => write!(f, " in namespace {namespace:?}")?,
            None => f.write_str(" in every namespace (or cluster-scoped)")?,
        }
        match self.cluster {
            Some(cluster) => write!(f, " of cluster {:?}", cluster.as_str()),
            None => Ok(()),
        }
    }
}

/// What one plugin may read: the host's policy and the operator's grant.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reads {
    /// The host-wide default and sensitive kinds.
    pub policy: ReadPolicy,
    /// The plugin's own read grant.
    pub granted: Vec<ReadRule>,
}

/// How a read is allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Allowed {
    /// Readable by every plugin (`reads.defaultReadable`).
    ByDefault,
    /// The plugin's `grants.reads` covers it.
    Granted,
}

/// One read of a plugin and how it is allowed, as `/plugins`, the
/// dashboard and `herald plugin check` show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadView {
    /// `group/kind`, or the kind alone for the core group.
    pub kind: String,
    /// The namespace; `None` for every namespace (or a cluster-scoped kind).
    pub namespace: Option<String>,
    /// How it is allowed; `None` when nothing allows it.
    pub allowed: Option<Allowed>,
    /// A sensitive kind: only a grant naming it allows it.
    pub sensitive: bool,
}

impl fmt::Display for ReadView {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.kind)?;
        match &self.namespace {
            Some(namespace) => write!(f, " in namespace {namespace}")?,
            None => f.write_str(" in every namespace (or cluster-scoped)")?,
        }
        f.write_str(match (self.allowed, self.sensitive) {
            (Some(Allowed::ByDefault), _) => " (readable by default)",
            (Some(Allowed::Granted), _) => " (granted)",
            (None, true) => " (sensitive: needs a read grant naming it)",
            (None, false) => " (needs a read grant)",
        })
    }
}

impl Reads {
    /// `read`, and how it is allowed.
    pub fn view(&self, read: &Read<'_>) -> ReadView {
        let read = &read.scoped();
        ReadView {
            kind: match read.group {
                "" => read.kind.to_owned(),
                group => format!("{group}/{}", read.kind),
            },
            namespace: read.namespace.map(str::to_owned),
            allowed: self.allows(read),
            sensitive: self.policy.is_sensitive(read.group, read.kind),
        }
    }

    /// Whether `read` is allowed, and how; `None` when it is not.
    pub fn allows(&self, read: &Read<'_>) -> Option<Allowed> {
        let read = &read.scoped();
        let sensitive = self.policy.is_sensitive(read.group, read.kind);
        let default_cluster = self.policy.default_cluster_name();
        if self
            .granted
            .iter()
            .any(|rule| rule.covers(read, sensitive, default_cluster))
        {
            return Some(Allowed::Granted);
        }
        (read.cluster.is_none() && self.policy.default_allows(read.group, read.kind))
            .then_some(Allowed::ByDefault)
    }

    /// True when the plugin's grant covers a sensitive kind.
    pub fn grants_sensitive(&self) -> bool {
        self.granted
            .iter()
            .any(|rule| rule.kind != "*" && self.policy.is_sensitive(&rule.group, &rule.kind))
    }

    /// The refusal of `read` for `plugin`: what is missing and where to
    /// grant it.
    pub fn refusal(&self, plugin: &str, read: &Read<'_>) -> String {
        let sensitive = self.policy.is_sensitive(read.group, read.kind);
        if let Some(cluster) = read.cluster {
            return format!(
                "plugin {plugin:?} may not read {read}: only a read grant naming the cluster \
                 covers another cluster than the default one; the operator grants it in \
                 plugins.{plugin}.grants.reads (with clusters: [{cluster}], or [\"*\"])"
            );
        }
        let why = if sensitive {
            "a sensitive kind, readable only through a grant naming it"
        } else {
            "not readable by default on this host (reads.defaultReadable)"
        };
        if read.is_cluster_scoped() {
            let kind = read.kind;
            let named = self
                .granted
                .iter()
                .filter(|rule| rule.covers_kind(read, sensitive))
                .flat_map(|rule| &rule.namespaces)
                .map(|ns| format!("{ns:?}"))
                .collect::<Vec<_>>();
            let granted = match named.as_slice() {
                [] => String::new(),
                names => format!(
                    " (its grant names namespaces {}, which never cover a cluster-scoped kind)",
                    names.join(", ")
                ),
            };
            let read = read.scoped();
            return format!(
                "plugin {plugin:?} may not read {read}: {why}; {kind} is cluster-scoped, so a \
                 namespace never narrows it and only a read rule with namespaces [\"*\"] grants \
                 it{granted}; the operator grants it in plugins.{plugin}.grants.reads"
            );
        }
        format!(
            "plugin {plugin:?} may not read {read}: {why}; the operator grants it in \
             plugins.{plugin}.grants.reads"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(group: &str, kind: &str, namespaces: &[&str]) -> ReadRule {
        ReadRule {
            group: group.into(),
            kind: kind.into(),
            namespaces: namespaces.iter().map(|n| n.to_string()).collect(),
            clusters: Clusters::default(),
        }
    }

    fn read<'a>(group: &'a str, kind: &'a str, namespace: Option<&'a str>) -> Read<'a> {
        Read {
            group,
            kind,
            namespace,
            cluster: None,
        }
    }

    #[test]
    fn another_cluster_is_readable_only_through_a_grant_naming_it() {
        let west = ClusterName::parse("name", "west").unwrap();
        let in_west = |kind| Read {
            cluster: Some(&west),
            ..read("", kind, Some("shop"))
        };
        let mut reads = Reads::default();
        assert_eq!(
            reads.allows(&read("", "Pod", Some("shop"))),
            Some(Allowed::ByDefault)
        );
        assert_eq!(
            reads.allows(&in_west("Pod")),
            None,
            "defaults cover the default cluster"
        );
        let refusal = reads.refusal("fanout", &in_west("Pod"));
        assert!(
            refusal.contains("of cluster \"west\"") && refusal.contains("clusters: [west]"),
            "{refusal}"
        );
        reads.granted = vec![ReadRule {
            clusters: Clusters(["west".to_owned()].into()),
            ..rule("", "Pod", &["*"])
        }];
        assert_eq!(reads.allows(&in_west("Pod")), Some(Allowed::Granted));
        assert_eq!(reads.allows(&in_west("ConfigMap")), None);
        // A rule naming only west does not grant the default cluster more.
        assert_eq!(
            reads.allows(&read("", "Pod", Some("shop"))),
            Some(Allowed::ByDefault)
        );
        reads.policy.default_readable.clear();
        assert_eq!(reads.allows(&read("", "Pod", Some("shop"))), None);
        // The default cluster is named by its own name.
        reads.policy.default_cluster = Some(ClusterName::parse("name", "east").unwrap());
        reads.granted[0].clusters = Clusters(["east".to_owned()].into());
        assert_eq!(
            reads.allows(&read("", "Pod", Some("shop"))),
            Some(Allowed::Granted)
        );
        assert_eq!(reads.allows(&in_west("Pod")), None);
    }

    #[test]
    fn a_read_is_shown_with_how_it_is_allowed() {
        let reads = Reads {
            granted: vec![rule("", "Secret", &["team-a"])],
            ..Reads::default()
        };
        let shown = |group, kind, namespace| reads.view(&read(group, kind, namespace)).to_string();
        assert_eq!(
            shown("apps", "Deployment", None),
            "apps/Deployment in every namespace (or cluster-scoped) (readable by default)"
        );
        assert_eq!(
            shown("", "Secret", Some("team-a")),
            "Secret in namespace team-a (granted)"
        );
        assert_eq!(
            shown("", "Secret", Some("team-b")),
            "Secret in namespace team-b (sensitive: needs a read grant naming it)"
        );
        let strict = Reads {
            policy: ReadPolicy {
                default_readable: Vec::new(),
                ..ReadPolicy::default()
            },
            granted: Vec::new(),
        };
        assert_eq!(
            strict.view(&read("", "Pod", None)).to_string(),
            "Pod in every namespace (or cluster-scoped) (needs a read grant)"
        );
    }

    #[test]
    fn ordinary_kinds_are_readable_by_default_and_secrets_never() {
        let reads = Reads::default();
        assert_eq!(
            reads.allows(&read("", "Pod", None)),
            Some(Allowed::ByDefault)
        );
        assert_eq!(reads.allows(&read("", "Secret", None)), None);
        assert_eq!(reads.allows(&read("", "Secret", Some("team-a"))), None);
        let everything = Reads {
            granted: vec![rule("*", "*", &["*"])],
            ..Reads::default()
        };
        assert_eq!(
            everything.allows(&read("", "Secret", None)),
            None,
            "a wildcard rule never grants a sensitive kind"
        );
        let secrets = Reads {
            granted: vec![rule("", "Secret", &["team-a"])],
            ..Reads::default()
        };
        assert_eq!(
            secrets.allows(&read("", "Secret", Some("team-a"))),
            Some(Allowed::Granted)
        );
        assert_eq!(secrets.allows(&read("", "Secret", Some("team-b"))), None);
        assert_eq!(secrets.allows(&read("", "Secret", None)), None);
        assert!(secrets.grants_sensitive());
        assert!(!everything.grants_sensitive());
    }

    #[test]
    fn an_operator_can_require_a_grant_for_every_read_and_mark_more_kinds_sensitive() {
        let policy: ReadPolicy = serde_yaml::from_str(
            "defaultReadable: [apps/*, ConfigMap]\nsensitive: [bitnami.com/SealedSecret]\n",
        )
        .unwrap();
        let reads = Reads {
            policy,
            granted: vec![rule("", "Pod", &["team-a"])],
        };
        assert_eq!(
            reads.allows(&read("apps", "Deployment", None)),
            Some(Allowed::ByDefault)
        );
        assert_eq!(
            reads.allows(&read("", "ConfigMap", Some("x"))),
            Some(Allowed::ByDefault)
        );
        assert_eq!(reads.allows(&read("", "Pod", None)), None);
        assert_eq!(
            reads.allows(&read("", "Pod", Some("team-a"))),
            Some(Allowed::Granted)
        );
        assert!(reads.policy.is_sensitive("bitnami.com", "SealedSecret"));
        let refusal = reads.refusal("p", &read("", "Pod", None));
        assert!(refusal.contains("plugins.p.grants.reads"), "{refusal}");
        assert!(KindPattern::parse("apps/v1/Deployment").is_err());
        assert!(KindPattern::parse("Pod\n").is_err());
    }

    #[test]
    fn a_rule_naming_namespaces_never_covers_a_cluster_scoped_kind() {
        // Issue 38: a grant for namespace `allowed` let a plugin read every
        // Namespace "in allowed": the informer and the API path drop the
        // namespace of a cluster-scoped kind, the check did not.
        let strict = ReadPolicy {
            default_readable: Vec::new(),
            ..ReadPolicy::default()
        };
        for granted in [
            rule("", "Namespace", &["allowed"]),
            rule("*", "*", &["allowed"]),
            rule("", "*", &["allowed", "other"]),
        ] {
            let reads = Reads {
                policy: strict.clone(),
                granted: vec![granted.clone(), rule("", "Pod", &["allowed"])],
            };
            for (group, kind) in [
                ("", "Namespace"),
                ("", "Node"),
                ("rbac.authorization.k8s.io", "ClusterRole"),
            ] {
                for namespace in [Some("allowed"), None] {
                    if granted.group != "*" && granted.group != group {
                        continue;
                    }
                    assert_eq!(
                        reads.allows(&read(group, kind, namespace)),
                        None,
                        "{granted:?} must not cover {group}/{kind} in {namespace:?}"
                    );
                }
            }
            assert_eq!(
                reads.allows(&read("", "Pod", Some("allowed"))),
                Some(Allowed::Granted),
                "a namespaced kind in the namespace is still covered"
            );
        }
        let reads = Reads {
            policy: strict,
            granted: vec![rule("", "Namespace", &["allowed"])],
        };
        let refusal = reads.refusal("snoop", &read("", "Namespace", Some("allowed")));
        assert!(refusal.contains("plugin \"snoop\""), "{refusal}");
        assert!(refusal.contains("Namespace is cluster-scoped"), "{refusal}");
        assert!(refusal.contains("plugins.snoop.grants.reads"), "{refusal}");
        assert!(refusal.contains("namespaces \"allowed\""), "{refusal}");
        assert_eq!(
            reads
                .view(&read("", "Namespace", Some("allowed")))
                .to_string(),
            "Namespace in every namespace (or cluster-scoped) (needs a read grant)",
            "shown as what it reads"
        );
        let everywhere = Reads {
            granted: vec![rule("", "Namespace", &["*"])],
            ..reads
        };
        assert_eq!(
            everywhere.allows(&read("", "Namespace", None)),
            Some(Allowed::Granted)
        );
        assert_eq!(
            Reads::default().allows(&read("", "Node", Some("x"))),
            Some(Allowed::ByDefault),
            "the host's default covers every namespace and cluster-scoped kinds"
        );
    }

    #[test]
    fn rules_are_checked_by_the_grammar_of_their_fields() {
        assert!(rule("", "Pod", &["*"]).validate().is_ok());
        assert!(rule("*", "*", &["team-a"]).validate().is_ok());
        assert!(rule("", "Pod", &[]).validate().is_err());
        assert!(rule("", "Pod/status", &["*"]).validate().is_err());
        assert!(rule("", "Pod", &["Team_A"]).validate().is_err());
    }
}
