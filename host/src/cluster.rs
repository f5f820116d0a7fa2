//! Which cluster: the names a daemon watching several clusters gives them,
//! and the sets of clusters a plugin's reach and its grants name.
//!
//! The cluster `source` names is the *default* cluster: everything that names
//! no cluster is about it (a plugin's subscriptions, a grant without
//! `clusters`, a plugin built for a world older than 0.6.0), so a daemon with
//! one cluster reads and behaves exactly as before clusters existed. Inside
//! the host the default cluster is `None` and every other one
//! `Some(ClusterName)`; its own name (`source.name`, `default` unless given)
//! is what plugins and operators see.

use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

/// The name of the default cluster when `source.name` gives none.
pub const DEFAULT_CLUSTER: &str = "default";

/// In a set of clusters: every cluster the daemon watches.
pub const ALL_CLUSTERS: &str = "*";

/// A cluster's labels (`source.labels`, `clusters[].labels`, a cluster
/// Secret's labels), which a plugin's `clusters` may select by.
pub type ClusterLabels = std::collections::BTreeMap<String, String>;

/// The label selector an entry of a set of clusters is, if it is one: an
/// entry with an operator (`=`, `!=`, `in (…)`, `notin (…)`) selects the
/// clusters whose labels match; `*` and names do not (a bare key, which a
/// selector would read as "has this label", is taken for a name, so that a
/// mistyped name is refused rather than read as a selector).
pub fn selector_entry(
    entry: &str,
) -> Option<Result<crate::selector::LabelSelector, crate::selector::SelectorError>> {
    entry
        .contains(['=', '!', '('])
        .then(|| crate::selector::LabelSelector::parse(entry))
}

/// A cluster's name: a DNS label (RFC 1123), as it appears in metrics
/// labels, log lines and the plugin's `cluster` import.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ClusterName(Arc<str>);

impl Serialize for ClusterName {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl ClusterName {
    /// `name`, if it is a DNS label; the error names `field`.
    pub fn parse(field: &str, name: &str) -> Result<Self, String> {
        use herald_grammar::name::{Rule, check};
        check(field, name, Rule::Dns1123Label).map_err(|e| e.to_string())?;
        Ok(ClusterName(name.into()))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ClusterName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for ClusterName {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        ClusterName::parse("name", &text).map_err(serde::de::Error::custom)
    }
}

/// The clusters a grant rule covers (its `clusters` key): empty for the
/// default cluster alone, `*` for every cluster, or names (the default
/// cluster among them only if named).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Clusters(pub BTreeSet<String>);

impl Clusters {
    /// True for the default cluster alone (the key left out).
    pub fn is_default_only(&self) -> bool {
        self.0.is_empty()
    }

    /// Checks every entry is `*` or a DNS label; the error names `field`.
    pub fn validate(&self, field: &str) -> Result<(), String> {
        for name in &self.0 {
            if name != ALL_CLUSTERS {
                ClusterName::parse(field, name)?;
            }
        }
        Ok(())
    }

    /// Checks every entry of a plugin's `clusters` is `*`, a DNS label or a
    /// label selector (see [`selector_entry`]); the error names `field`.
    pub fn validate_reach(&self, field: &str) -> Result<(), String> {
        for entry in &self.0 {
            match selector_entry(entry) {
                Some(Ok(_)) => {}
                Some(Err(error)) => {
                    return Err(format!(
                        "{field} {entry:?} is not a label selector over clusters' labels: {error}"
                    ));
                }
                None if entry == ALL_CLUSTERS => {}
                None => {
                    ClusterName::parse(field, entry)?;
                }
            }
        }
        Ok(())
    }

    /// Whether the set covers `cluster` (`None`: the default cluster, named
    /// `default_name`, which a set names only by that name).
    pub fn covers(&self, cluster: Option<&ClusterName>, default_name: &str) -> bool {
        match cluster {
            None => {
                self.0.is_empty() || self.0.contains(ALL_CLUSTERS) || self.0.contains(default_name)
            }
            Some(name) => self.0.contains(ALL_CLUSTERS) || self.0.contains(name.as_str()),
        }
    }

    /// Whether the set covers `cluster`, whose labels are `labels`: as
    /// [`covers`](Self::covers) does by name, or by an entry that is a
    /// label selector (see [`selector_entry`]) its labels match. Only a
    /// plugin's `clusters` take selectors; grants name clusters.
    pub fn covers_labelled(
        &self,
        cluster: Option<&ClusterName>,
        default_name: &str,
        labels: &ClusterLabels,
    ) -> bool {
        self.covers(cluster, default_name)
            || self.0.iter().any(|entry| {
                matches!(selector_entry(entry), Some(Ok(selector)) if selector.matches(labels))
            })
    }

    /// Whether every cluster `other` covers, this set covers too.
    pub fn includes(&self, other: &Clusters) -> bool {
        if self.0.contains(ALL_CLUSTERS) {
            return true;
        }
        if other.0.contains(ALL_CLUSTERS) {
            return false;
        }
        if other.0.is_empty() {
            return self.0.is_empty();
        }
        other.0.iter().all(|name| self.0.contains(name))
    }
}

impl fmt::Display for Clusters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("the default cluster");
        }
        if self.0.contains(ALL_CLUSTERS) {
            return f.write_str("every cluster");
        }
        let names: Vec<&str> = self.0.iter().map(String::as_str).collect();
        write!(f, "clusters {}", names.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(names: &[&str]) -> Clusters {
        Clusters(names.iter().map(|n| n.to_string()).collect())
    }

    #[test]
    fn a_set_left_out_covers_the_default_cluster_alone() {
        let west = ClusterName::parse("name", "west").unwrap();
        let west = Some(&west);
        // The default cluster is `None`, named "east" here.
        assert!(set(&[]).covers(None, "east"));
        assert!(!set(&[]).covers(west, "east"));
        assert!(set(&["*"]).covers(west, "east") && set(&["*"]).covers(None, "east"));
        assert!(set(&["west"]).covers(west, "east"));
        assert!(
            !set(&["west"]).covers(None, "east"),
            "the default is covered only if named"
        );
        assert!(set(&["east"]).covers(None, "east"));
    }

    #[test]
    fn a_selector_entry_covers_the_clusters_whose_labels_match() {
        let west = ClusterName::parse("name", "west").unwrap();
        let edge: ClusterLabels = [("tier".into(), "edge".into())].into();
        let core: ClusterLabels = [("tier".into(), "core".into())].into();
        let by_tier = set(&["tier=edge"]);
        assert!(by_tier.covers_labelled(Some(&west), "east", &edge));
        assert!(!by_tier.covers_labelled(Some(&west), "east", &core));
        assert!(
            by_tier.covers_labelled(None, "east", &edge),
            "the default cluster too, by its labels"
        );
        assert!(!by_tier.covers_labelled(None, "east", &ClusterLabels::new()));
        assert!(set(&["tier in (edge,core)"]).covers_labelled(Some(&west), "east", &core));
        assert!(set(&["tier!=edge"]).covers_labelled(Some(&west), "east", &core));
        // Names still cover by name; a bare word is a name, never "has label".
        assert!(set(&["west"]).covers_labelled(Some(&west), "east", &ClusterLabels::new()));
        assert!(selector_entry("tier").is_none());
        assert!(matches!(selector_entry("=edge"), Some(Err(_))));
    }

    #[test]
    fn inclusion_follows_coverage() {
        assert!(set(&["*"]).includes(&set(&["west"])));
        assert!(!set(&["west"]).includes(&set(&["*"])));
        assert!(set(&["west", "north"]).includes(&set(&["west"])));
        assert!(!set(&["west"]).includes(&set(&[])));
        assert!(set(&[]).includes(&set(&[])));
    }

    #[test]
    fn names_are_dns_labels() {
        assert!(ClusterName::parse("name", "west-1").is_ok());
        for bad in ["", "West", "a.b", "-a", &"a".repeat(64)] {
            let err = ClusterName::parse("clusters[0].name", bad).unwrap_err();
            assert!(err.contains("clusters[0].name"), "{err}");
        }
        assert!(set(&["ok", "*"]).validate("clusters").is_ok());
        assert!(set(&["Nope"]).validate("clusters").is_err());
    }
}
