//! Object name validation, as the real API server applies it; the rules
//! themselves are `herald_grammar::name`'s, shared with the host.

use herald_grammar::name::{Rule, object_name_rule};

/// Checks an object name of the resource `plural` in `group` against its
/// rule; returns the problem text of an Invalid error, in the API server's
/// words.
pub(crate) fn check_name(name: &str, group: &str, plural: &str) -> Result<(), String> {
    let rule = object_name_rule(group, plural);
    if rule.allows(name) {
        return Ok(());
    }
    Err(match rule {
        Rule::PathSegment => {
            format!(
                "Invalid value: {name:?}: may not be '.' or '..' and may not contain '/' or '%'"
            )
        }
        Rule::Dns1123Label => format!(
            "Invalid value: {name:?}: a lowercase RFC 1123 label must consist of lower case \
             alphanumeric characters or '-', and must start and end with an alphanumeric character \
             (e.g. 'my-name',  or '123-abc', regex used for validation is \
             '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
        ),
        Rule::Dns1035Label => format!(
            "Invalid value: {name:?}: a DNS-1035 label must consist of lower case alphanumeric \
             characters or '-', start with an alphabetic character, and end with an alphanumeric \
             character (e.g. 'my-name',  or 'abc-123', regex used for validation is \
             '[a-z]([-a-z0-9]*[a-z0-9])?')"
        ),
        _ => format!(
            "Invalid value: {name:?}: a lowercase RFC 1123 subdomain must consist of lower case \
             alphanumeric characters, '-' or '.', and must start and end with an alphanumeric \
             character (e.g. 'example.com', regex used for validation is \
             '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_rule_of_their_resource() {
        assert!(check_name("ok", "", "namespaces").is_ok());
        assert!(check_name("a.b", "", "namespaces").is_err());
        assert!(check_name("a.b", "", "configmaps").is_ok());
        assert!(check_name("1web", "", "services").is_err());
        assert!(check_name("system:discovery", "", "configmaps").is_err());
        assert!(
            check_name(
                "system:discovery",
                "rbac.authorization.k8s.io",
                "clusterroles"
            )
            .is_ok()
        );
        assert!(check_name("a/b", "rbac.authorization.k8s.io", "roles").is_err());
        assert!(check_name("..", "rbac.authorization.k8s.io", "roles").is_err());
    }
}
