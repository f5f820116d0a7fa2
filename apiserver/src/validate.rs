//! Object name validation (RFC 1123 labels and subdomains), as the real API server applies it.

/// Whether `s` is a lowercase RFC 1123 label (at most 63 characters of `[a-z0-9-]`,
/// starting and ending with an alphanumeric).
pub(crate) fn is_dns1123_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && s.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// Whether `s` is a lowercase RFC 1123 subdomain (dot-separated labels, at most 253 characters).
pub(crate) fn is_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty() && s.len() <= 253 && s.split('.').all(is_dns1123_label)
}

/// What a resource's object names must look like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NameRule {
    /// An RFC 1123 label (namespaces, services).
    Label,
    /// An RFC 1123 subdomain (most resources).
    Subdomain,
    /// Any path segment: not `.` or `..`, no `/` or `%` (RBAC objects, whose
    /// names such as `system:discovery` hold colons).
    PathSegment,
}

impl NameRule {
    /// The rule of the resource `plural` in `group`.
    pub(crate) fn of(group: &str, plural: &str) -> NameRule {
        match (group, plural) {
            ("", "namespaces" | "services") => NameRule::Label,
            ("rbac.authorization.k8s.io", _) => NameRule::PathSegment,
            _ => NameRule::Subdomain,
        }
    }
}

/// Check an object name against its resource's rule; returns the problem
/// text for an Invalid error.
pub(crate) fn check_name(name: &str, rule: NameRule) -> Result<(), String> {
    if rule == NameRule::PathSegment {
        if name.is_empty() || name == "." || name == ".." || name.contains(['/', '%']) {
            return Err(format!(
                "Invalid value: \"{name}\": may not be '.' or '..' and may not contain '/' or '%'"
            ));
        }
        return Ok(());
    }
    if rule == NameRule::Label {
        if is_dns1123_label(name) {
            return Ok(());
        }
        return Err(format!(
            "Invalid value: \"{name}\": a lowercase RFC 1123 label must consist of lower case \
             alphanumeric characters or '-', and must start and end with an alphanumeric character \
             (e.g. 'my-name',  or '123-abc', regex used for validation is \
             '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
        ));
    }
    if is_dns1123_subdomain(name) {
        return Ok(());
    }
    Err(format!(
        "Invalid value: \"{name}\": a lowercase RFC 1123 subdomain must consist of lower case \
         alphanumeric characters, '-' or '.', and must start and end with an alphanumeric \
         character (e.g. 'example.com', regex used for validation is \
         '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_subdomains_follow_rfc_1123() {
        assert!(is_dns1123_label("web-1"));
        assert!(!is_dns1123_label("web.1"));
        assert!(!is_dns1123_label("-web"));
        assert!(!is_dns1123_label("Web"));
        assert!(!is_dns1123_label(&"a".repeat(64)));
        assert!(is_dns1123_subdomain("widgets.example.com"));
        assert!(!is_dns1123_subdomain("widgets..example"));
        assert!(!is_dns1123_subdomain("under_score"));
        assert!(check_name("ok", NameRule::Label).is_ok());
        assert!(check_name("a.b", NameRule::Label).is_err());
        assert!(check_name("a.b", NameRule::Subdomain).is_ok());
        assert!(check_name("system:discovery", NameRule::Subdomain).is_err());
        assert!(check_name("system:discovery", NameRule::PathSegment).is_ok());
        assert!(check_name("a/b", NameRule::PathSegment).is_err());
        assert!(check_name("..", NameRule::PathSegment).is_err());
        assert_eq!(
            NameRule::of("rbac.authorization.k8s.io", "clusterroles"),
            NameRule::PathSegment
        );
        assert_eq!(NameRule::of("", "services"), NameRule::Label);
    }
}
