//! The rules of Kubernetes identifiers, each for the field it fills, as the
//! API server applies them (`k8s.io/apimachinery/pkg/util/validation` and
//! `…/api/validation/path`).
//!
//! An identifier a plugin hands the host (a namespace, an object name, a
//! kind) is checked by the rule of its field before it goes anywhere, and a
//! refusal ([`Invalid`]) names the field, the value (escaped) and the rule:
//!
//! ```
//! use herald_grammar::name::{Rule, check};
//!
//! assert!(check("namespace", "team-a", Rule::Dns1123Label).is_ok());
//! let refused = check("name", "web/status", Rule::Dns1123Subdomain).unwrap_err();
//! assert_eq!(
//!     refused.to_string(),
//!     "name \"web/status\" is not a lowercase RFC 1123 subdomain (lowercase letters, digits, \
//!      '-' and '.', starting and ending with a letter or digit, at most 253 characters)"
//! );
//! ```

use std::fmt;

/// One rule an identifier may have to follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rule {
    /// A lowercase RFC 1123 label: 1–63 of `[a-z0-9-]`, alphanumeric at both
    /// ends (namespaces, and most names in labels).
    Dns1123Label,
    /// A lowercase RFC 1123 subdomain: 1–253 characters, `.`-separated
    /// labels of `[a-z0-9-]`, each alphanumeric at both ends (most object
    /// names, API groups).
    Dns1123Subdomain,
    /// An RFC 1035 label: an RFC 1123 label that starts with a letter
    /// (Services' names, API versions, plurals, subresources).
    Dns1035Label,
    /// A path segment: not empty, not `.` or `..`, no `/` or `%` (the names
    /// of RBAC objects, such as `system:discovery`). Control characters are
    /// refused too: no object name needs them.
    PathSegment,
    /// An API group: empty (the core group) or an RFC 1123 subdomain.
    Group,
    /// A kind: 1–63 letters, digits and `-`, starting with a letter and
    /// ending with a letter or digit (`Deployment`; what CRDs allow).
    Kind,
}

impl Rule {
    /// True when `value` follows the rule.
    pub fn allows(self, value: &str) -> bool {
        match self {
            Rule::Dns1123Label => is_dns1123_label(value),
            Rule::Dns1123Subdomain => is_dns1123_subdomain(value),
            Rule::Dns1035Label => is_dns1035_label(value),
            Rule::PathSegment => is_path_segment(value),
            Rule::Group => value.is_empty() || is_dns1123_subdomain(value),
            Rule::Kind => is_kind(value),
        }
    }

    /// What the rule asks for, in words.
    pub fn describe(self) -> &'static str {
        match self {
            Rule::Dns1123Label => {
                "a lowercase RFC 1123 label (lowercase letters, digits and '-', starting and \
                 ending with a letter or digit, at most 63 characters)"
            }
            Rule::Dns1123Subdomain => {
                "a lowercase RFC 1123 subdomain (lowercase letters, digits, '-' and '.', \
                 starting and ending with a letter or digit, at most 253 characters)"
            }
            Rule::Dns1035Label => {
                "an RFC 1035 label (lowercase letters, digits and '-', starting with a letter \
                 and ending with a letter or digit, at most 63 characters)"
            }
            Rule::PathSegment => {
                "a path segment name (not empty, '.' or '..', without '/', '%' or control \
                 characters)"
            }
            Rule::Group => {
                "an API group (empty for the core group, or a lowercase RFC 1123 subdomain)"
            }
            Rule::Kind => {
                "a kind (letters, digits and '-', starting with a letter and ending with a \
                 letter or digit, at most 63 characters)"
            }
        }
    }
}

/// An identifier that breaks the rule of its field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    /// The field it fills, e.g. `namespace` or `target.name`.
    pub field: String,
    /// The value as given.
    pub value: String,
    /// The rule it breaks.
    pub rule: Rule,
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `{:?}` quotes the value and escapes control characters, so a
        // hostile value cannot break the line it is shown on.
        let shown: String = self.value.chars().take(300).collect();
        let cut = if shown.len() < self.value.len() {
            "…"
        } else {
            ""
        };
        write!(
            f,
            "{} {:?}{cut} is not {}",
            self.field,
            shown,
            self.rule.describe()
        )
    }
}

impl std::error::Error for Invalid {}

/// Checks `value`, which fills `field`, against `rule`.
pub fn check(field: &str, value: &str, rule: Rule) -> Result<(), Invalid> {
    if rule.allows(value) {
        Ok(())
    } else {
        Err(Invalid {
            field: field.to_owned(),
            value: value.to_owned(),
            rule,
        })
    }
}

/// The rule object names of the resource `plural` in `group` follow, as the
/// API server validates them: namespaces are RFC 1123 labels, Services RFC
/// 1035 labels, RBAC objects path segments, everything else (custom
/// resources included) RFC 1123 subdomains.
pub fn object_name_rule(group: &str, plural: &str) -> Rule {
    match (group, plural) {
        ("", "namespaces") => Rule::Dns1123Label,
        ("", "services") => Rule::Dns1035Label,
        ("rbac.authorization.k8s.io", _) => Rule::PathSegment,
        _ => Rule::Dns1123Subdomain,
    }
}

/// The same rule as [`object_name_rule`], by kind rather than by plural,
/// for checking a name before discovery has named the resource:
/// `Namespace` (core) is an RFC 1123 label, `Service` (core) an RFC 1035
/// label, the RBAC kinds path segments, every other kind an RFC 1123
/// subdomain.
pub fn object_name_rule_of_kind(group: &str, kind: &str) -> Rule {
    match (group, kind) {
        ("", "Namespace") => Rule::Dns1123Label,
        ("", "Service") => Rule::Dns1035Label,
        ("rbac.authorization.k8s.io", _) => Rule::PathSegment,
        _ => Rule::Dns1123Subdomain,
    }
}

fn is_alphanumeric_lower(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

/// A lowercase RFC 1123 label: `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, at most 63.
pub fn is_dns1123_label(value: &str) -> bool {
    let bytes = value.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 63
        && is_alphanumeric_lower(bytes[0])
        && is_alphanumeric_lower(bytes[bytes.len() - 1])
        && bytes
            .iter()
            .all(|b| is_alphanumeric_lower(*b) || *b == b'-')
}

/// A lowercase RFC 1123 subdomain, as Kubernetes checks it: at most 253
/// characters matching `[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*`
/// (its labels are not limited to 63 characters one by one).
pub fn is_dns1123_subdomain(value: &str) -> bool {
    !value.is_empty()
        && value.len() <= 253
        && value.split('.').all(|label| {
            let bytes = label.as_bytes();
            !bytes.is_empty()
                && is_alphanumeric_lower(bytes[0])
                && is_alphanumeric_lower(bytes[bytes.len() - 1])
                && bytes
                    .iter()
                    .all(|b| is_alphanumeric_lower(*b) || *b == b'-')
        })
}

/// An RFC 1035 label: `[a-z]([-a-z0-9]*[a-z0-9])?`, at most 63.
pub fn is_dns1035_label(value: &str) -> bool {
    is_dns1123_label(value) && value.as_bytes()[0].is_ascii_lowercase()
}

/// A path segment name: not empty, `.` or `..`; no `/`, `%` or control
/// characters.
pub fn is_path_segment(value: &str) -> bool {
    !value.is_empty()
        && value != "."
        && value != ".."
        && !value.contains(['/', '%'])
        && !value.chars().any(char::is_control)
}

/// A kind: `[A-Za-z]([-A-Za-z0-9]*[A-Za-z0-9])?`, at most 63.
pub fn is_kind(value: &str) -> bool {
    let bytes = value.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes[0].is_ascii_alphabetic()
        && bytes[bytes.len() - 1].is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || *b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_subdomains_follow_rfc_1123_as_kubernetes_checks_them() {
        assert!(is_dns1123_label("web-1"));
        assert!(!is_dns1123_label("web.1"));
        assert!(!is_dns1123_label("-web"));
        assert!(!is_dns1123_label("Web"));
        assert!(!is_dns1123_label(&"a".repeat(64)));
        assert!(is_dns1123_subdomain("widgets.example.com"));
        assert!(!is_dns1123_subdomain("widgets..example"));
        assert!(!is_dns1123_subdomain("under_score"));
        assert!(
            is_dns1123_subdomain(&"a".repeat(100)),
            "Kubernetes limits the whole name, not each label"
        );
        assert!(!is_dns1123_subdomain(&"a".repeat(254)));
        assert!(is_dns1035_label("web"));
        assert!(!is_dns1035_label("1web"));
    }

    #[test]
    fn what_reaches_a_url_is_refused_by_every_name_rule_but_the_path_segments_own() {
        for hostile in [
            "web/status",
            "web?fieldManager=x",
            "web#x",
            "web%2Fstatus",
            "..",
            "",
            "web\nx",
        ] {
            for rule in [
                Rule::Dns1123Label,
                Rule::Dns1123Subdomain,
                Rule::Dns1035Label,
            ] {
                assert!(!rule.allows(hostile), "{rule:?} allowed {hostile:?}");
            }
        }
        assert!(Rule::PathSegment.allows("system:discovery"));
        assert!(!Rule::PathSegment.allows("a/b"));
        assert!(!Rule::PathSegment.allows("a%2F"));
        assert!(!Rule::PathSegment.allows(".."));
        assert!(!Rule::PathSegment.allows("a\u{0}b"));
        // Allowed by the API server, and so only encoded by the URL builder.
        assert!(Rule::PathSegment.allows("a?b#c"));
    }

    #[test]
    fn groups_versions_and_kinds_have_their_own_grammars() {
        assert!(Rule::Group.allows(""));
        assert!(Rule::Group.allows("networking.k8s.io"));
        assert!(!Rule::Group.allows("apps/v1"));
        assert!(Rule::Dns1035Label.allows("v1beta1"));
        assert!(!Rule::Dns1035Label.allows("v1/namespaces"));
        assert!(Rule::Kind.allows("NetworkPolicy"));
        assert!(Rule::Kind.allows("My-Kind2"));
        assert!(!Rule::Kind.allows("Pod/status"));
        assert!(!Rule::Kind.allows("2Pod"));
        assert!(!Rule::Kind.allows("Pod-"));
    }

    #[test]
    fn object_names_follow_the_rule_of_their_resource() {
        assert_eq!(object_name_rule("", "namespaces"), Rule::Dns1123Label);
        assert_eq!(object_name_rule("", "services"), Rule::Dns1035Label);
        assert_eq!(
            object_name_rule("rbac.authorization.k8s.io", "clusterroles"),
            Rule::PathSegment
        );
        assert_eq!(object_name_rule("", "configmaps"), Rule::Dns1123Subdomain);
        assert_eq!(
            object_name_rule("example.com", "widgets"),
            Rule::Dns1123Subdomain
        );
        for (group, kind, plural) in [
            ("", "Namespace", "namespaces"),
            ("", "Service", "services"),
            ("rbac.authorization.k8s.io", "ClusterRole", "clusterroles"),
            ("", "ConfigMap", "configmaps"),
            ("apps", "Deployment", "deployments"),
        ] {
            assert_eq!(
                object_name_rule_of_kind(group, kind),
                object_name_rule(group, plural)
            );
        }
    }

    #[test]
    fn a_refusal_names_the_field_the_value_escaped_and_the_rule() {
        let refused = check(
            "target.namespace",
            "kube-system\nplugin=x",
            Rule::Dns1123Label,
        )
        .unwrap_err()
        .to_string();
        assert!(!refused.contains('\n'), "{refused}");
        assert!(refused.starts_with("target.namespace \"kube-system\\nplugin=x\" is not"));
        let long = check("name", &"x".repeat(1000), Rule::Dns1123Subdomain)
            .unwrap_err()
            .to_string();
        assert!(long.len() < 600, "a long value is cut: {}", long.len());
    }
}
