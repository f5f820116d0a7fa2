//! Content validation of specific kinds, as the real API server checks them: NetworkPolicy
//! `policyTypes`, ResourceQuota quantities, and webhook configurations (their checks live
//! with admission, in `admission/config.rs`).

use serde_json::Value;

use crate::registry::ResourceType;
use crate::status::ApiError;

/// One invalid field: `(field, reason, message)`.
type Cause = (String, &'static str, String);

/// Check `obj` of type `rt`; `Ok` for kinds without content rules.
pub(crate) fn check(rt: &ResourceType, obj: &Value) -> Result<(), ApiError> {
    let name = crate::object::name(obj).unwrap_or_default();
    let causes = match (rt.id.group.as_str(), rt.id.plural.as_str()) {
        ("networking.k8s.io", "networkpolicies") => network_policy(obj),
        ("", "resourcequotas") => resource_quota(obj)?,
        (crate::admission::config::GROUP, plural)
            if crate::admission::config::is_configuration(&rt.id.group, plural) =>
        {
            crate::admission::config::check(obj, plural == crate::admission::config::MUTATING)
        }
        _ => return Ok(()),
    };
    if causes.is_empty() {
        return Ok(());
    }
    Err(ApiError::invalid_causes(
        &rt.kind,
        &rt.id.group,
        name,
        &causes,
    ))
}

fn network_policy(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let Some(types) = obj["spec"]["policyTypes"].as_array() else {
        return causes;
    };
    for (i, t) in types.iter().enumerate() {
        let s = t.as_str().unwrap_or_default();
        if s != "Ingress" && s != "Egress" {
            causes.push((
                format!("spec.policyTypes[{i}]"),
                "FieldValueNotSupported",
                format!("Unsupported value: \"{s}\": supported values: \"Egress\", \"Ingress\""),
            ));
        }
    }
    if types.len() > 2 {
        causes.push((
            "spec.policyTypes".into(),
            "FieldValueInvalid",
            format!(
                "Invalid value: {}: may not specify more than two policyTypes",
                Value::Array(types.clone())
            ),
        ));
    }
    causes
}

/// The regular expression a quantity must match, as the real server quotes it.
const QUANTITY_REGEX: &str = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$";

/// Whether `s` is a Kubernetes quantity (`100m`, `1.5Gi`, `2e3`, `-1`).
pub(crate) fn is_quantity(s: &str) -> bool {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    let number_end = body
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(body.len());
    let (number, suffix) = body.split_at(number_end);
    if number.is_empty()
        || number.matches('.').count() > 1
        || !number.chars().any(|c| c.is_ascii_digit())
    {
        return false;
    }
    let binary = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    let decimal = ["", "n", "u", "m", "k", "M", "G", "T", "P", "E"];
    if binary.contains(&suffix) || decimal.contains(&suffix) {
        return true;
    }
    let Some(exp) = suffix.strip_prefix(['e', 'E']) else {
        return false;
    };
    let digits = exp.strip_prefix(['+', '-']).unwrap_or(exp);
    !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit())
}

fn resource_quota(obj: &Value) -> Result<Vec<Cause>, ApiError> {
    let mut causes = Vec::new();
    for (field, map) in [
        ("spec.hard", &obj["spec"]["hard"]),
        ("status.hard", &obj["status"]["hard"]),
        ("status.used", &obj["status"]["used"]),
    ] {
        let Some(map) = map.as_object() else { continue };
        for (resource, q) in map {
            let text = match q {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                other => other.to_string(),
            };
            if !is_quantity(&text) {
                // Not even decodable: the real server fails while decoding the body.
                return Err(ApiError::bad_request(format!(
                    "ResourceQuota in version \"v1\" cannot be handled as a ResourceQuota: \
                     quantities must match the regular expression '{QUANTITY_REGEX}'"
                )));
            }
            let negative = text.starts_with('-') && text.chars().any(|c| ('1'..='9').contains(&c));
            if negative {
                causes.push((
                    format!("{field}[{resource}]"),
                    "FieldValueInvalid",
                    format!("Invalid value: \"{text}\": must be greater than or equal to 0"),
                ));
            }
        }
    }
    Ok(causes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_parse_like_the_real_servers() {
        for ok in ["1", "100m", "1.5Gi", "2e3", "-1", "0.5", "10Ki", "1E-3"] {
            assert!(is_quantity(ok), "{ok}");
        }
        for bad in ["", "abc", "1.2.3", "1Zi", "1e", "--1", "."] {
            assert!(!is_quantity(bad), "{bad}");
        }
    }
}
