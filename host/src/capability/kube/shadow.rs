//! Shadow mode's report: for a plugin in dry-run, what each write would have
//! changed, as a compact list of field paths with their old and new values
//! (only the paths for a sensitive kind), computed from the object before
//! the write and the server's dry-run answer.

use super::request::{ApiRequest, Operation};
use serde_json::Value;

/// Most changed paths listed in one report line.
const MAX_CHANGES: usize = 20;
/// Longest value shown in a report, in characters.
const MAX_VALUE_CHARS: usize = 80;

/// Fields that change on every write and say nothing about its effect.
const IGNORED: &[&str] = &[
    "metadata.managedFields",
    "metadata.resourceVersion",
    "metadata.generation",
    "metadata.creationTimestamp",
    "metadata.uid",
];

/// Whether a report shows the values of the fields a write changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Values {
    /// `path: old → new`.
    Shown,
    /// `path` only: the kind is sensitive (a Secret), and its values must
    /// not reach a log line.
    Withheld,
}

/// Logs what a dry-run write would have done.
pub fn log_shadow(
    plugin: &str,
    request: &ApiRequest,
    before: Option<&str>,
    after: &str,
    values: Values,
) {
    let verb = request.operation.verb().as_str();
    let target = &request.target;
    let would = match (&request.operation, before) {
        (Operation::Create { .. }, _) => "would create".to_owned(),
        (Operation::Delete(_), _) => "would delete".to_owned(),
        (_, None) => {
            "would write (the object could not be read first, or did not exist)".to_owned()
        }
        (_, Some(before)) => {
            let changed = changes(before, after, values);
            if changed.is_empty() {
                "would change nothing".to_owned()
            } else {
                format!("would change {}", changed.join(", "))
            }
        }
    };
    tracing::info!(
        target: super::super::audit::AUDIT_TARGET,
        plugin,
        verb,
        kind = %target.gvk,
        namespace = target.namespace.as_deref().unwrap_or(""),
        name = request.shown_name(Some(after)),
        mode = "dry-run",
        "{would}"
    );
}

/// The fields that differ between two JSON objects, as `path: old → new`
/// (`∅` for absent) or, with values withheld, `path`, in path order, at
/// most twenty of them.
pub fn changes(before: &str, after: &str, values: Values) -> Vec<String> {
    let (Ok(before), Ok(after)) = (
        serde_json::from_str::<Value>(before),
        serde_json::from_str::<Value>(after),
    ) else {
        return vec!["(not JSON)".into()];
    };
    let mut out = Vec::new();
    walk("", Some(&before), Some(&after), values, &mut out);
    if out.len() > MAX_CHANGES {
        let more = out.len() - MAX_CHANGES;
        out.truncate(MAX_CHANGES);
        out.push(format!("… {more} more"));
    }
    out
}

fn walk(
    path: &str,
    before: Option<&Value>,
    after: Option<&Value>,
    values: Values,
    out: &mut Vec<String>,
) {
    if IGNORED.contains(&path) || before == after {
        return;
    }
    match (before, after) {
        (Some(Value::Object(old)), Some(Value::Object(new))) => {
            let keys: std::collections::BTreeSet<&String> = old.keys().chain(new.keys()).collect();
            for key in keys {
                let child = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                walk(&child, old.get(key), new.get(key), values, out);
            }
        }
        _ => match values {
            Values::Shown => out.push(format!("{path}: {} → {}", shown(before), shown(after))),
            Values::Withheld => out.push(path.to_owned()),
        },
    }
}

fn shown(value: Option<&Value>) -> String {
    let Some(value) = value else {
        return "∅".into();
    };
    let text = value.to_string();
    if text.chars().count() <= MAX_VALUE_CHARS {
        text
    } else {
        let cut: String = text.chars().take(MAX_VALUE_CHARS).collect();
        format!("{cut}…")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_fields_a_write_changes_are_reported() {
        let before = r#"{"metadata":{"name":"web","resourceVersion":"1","labels":{"a":"1"}},"spec":{"replicas":1,"paused":false}}"#;
        let after = r#"{"metadata":{"name":"web","resourceVersion":"2","labels":{"a":"1","b":"2"}},"spec":{"replicas":3}}"#;
        assert_eq!(
            changes(before, after, Values::Shown),
            vec![
                "metadata.labels.b: ∅ → \"2\"",
                "spec.paused: false → ∅",
                "spec.replicas: 1 → 3",
            ]
        );
        assert!(changes(before, before, Values::Shown).is_empty());
        assert_eq!(
            changes(before, after, Values::Withheld),
            vec!["metadata.labels.b", "spec.paused", "spec.replicas"],
            "a sensitive kind's report names the fields, never their values"
        );
    }

    #[test]
    fn long_reports_are_cut() {
        let after: serde_json::Map<String, Value> = (0..30)
            .map(|i| (format!("k{i:02}"), Value::from("x".repeat(200))))
            .collect();
        let report = changes("{}", &Value::Object(after).to_string(), Values::Shown);
        assert_eq!(report.len(), MAX_CHANGES + 1);
        assert_eq!(report.last().unwrap(), "… 10 more");
        assert!(report[0].ends_with('…'));
    }
}
