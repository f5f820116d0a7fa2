//! Kubernetes group/version/kind identities, as plugins name what they watch.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A group, version and kind, e.g. `apps/v1 Deployment`; the core group is "".
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Gvk {
    /// API group; empty for the core group.
    pub group: String,
    /// API version within the group, e.g. `v1`.
    pub version: String,
    /// Kind, e.g. `Pod`.
    pub kind: String,
}

impl Gvk {
    /// Builds a GVK from its parts.
    pub fn new(
        group: impl Into<String>,
        version: impl Into<String>,
        kind: impl Into<String>,
    ) -> Self {
        Gvk {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
        }
    }

    /// Parses an object's `apiVersion` (`v1` or `apps/v1`) and `kind`.
    pub fn from_api_version(api_version: &str, kind: &str) -> Self {
        match api_version.split_once('/') {
            Some((group, version)) => Gvk::new(group, version, kind),
            None => Gvk::new("", api_version, kind),
        }
    }

    /// Checks the group, version and kind against their grammars (an API
    /// group, an RFC 1035 label, a kind), naming `field.group`,
    /// `field.version` or `field.kind` in the refusal.
    pub fn check(&self, field: &str) -> Result<(), herald_grammar::name::Invalid> {
        use herald_grammar::name::{Rule, check};
        check(&format!("{field}.group"), &self.group, Rule::Group)?;
        check(
            &format!("{field}.version"),
            &self.version,
            Rule::Dns1035Label,
        )?;
        check(&format!("{field}.kind"), &self.kind, Rule::Kind)
    }

    /// The `apiVersion` string: `v1` for the core group, `group/version` otherwise.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

impl fmt::Display for Gvk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.api_version(), self.kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_version_round_trips_for_core_and_named_groups() {
        let core = Gvk::from_api_version("v1", "Pod");
        assert_eq!(core, Gvk::new("", "v1", "Pod"));
        assert_eq!(core.api_version(), "v1");
        let apps = Gvk::from_api_version("apps/v1", "Deployment");
        assert_eq!(apps.group, "apps");
        assert_eq!(apps.api_version(), "apps/v1");
        assert_eq!(apps.to_string(), "apps/v1 Deployment");
    }
}
