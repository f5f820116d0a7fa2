//! Server-side apply: merging an apply configuration into the live object under field
//! ownership, with conflicts, forced takeover and removal of fields a manager stopped applying.
//!
//! Maps merge key by key, lists keyed by a well-known merge key (containers by name, …)
//! merge element by element, `metadata.finalizers` merges as a set, every other list is
//! replaced whole (and owned whole). Conflicts are detected on the leaves of the
//! configuration: a leaf another manager owns whose live value differs from the applied one.

use serde_json::Value;

use crate::managed_fields::{self, Elem, FieldSet, Operation, Writer};
use crate::status::ApiError;

/// The manager owning the fields of an untracked object at its first apply.
pub(crate) const BEFORE_FIRST_APPLY: &str = "before-first-apply";

/// One conflict: who owns the field (as described in messages) and the field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Conflict {
    /// `conflict with "manager" using v1`.
    pub owner: String,
    /// `.spec.replicas`.
    pub field: String,
}

/// Apply `config` to `live` (which carries its `managedFields`) as `writer`; returns the new
/// object with its `managedFields` updated, or a 409 Conflict naming every conflicting field
/// unless `force`, which takes the fields from their owners.
pub(crate) fn apply(
    live: &Value,
    config: &Value,
    writer: &Writer<'_>,
    force: bool,
) -> Result<Value, ApiError> {
    let applied = FieldSet::of(config, writer.scope);
    let mut entries = managed_fields::entries(live);
    if live["metadata"].get("managedFields").is_none() {
        // An object nobody's writes were tracked for (seeded): as the real server, its
        // fields so far belong to "before-first-apply".
        entries.push(managed_fields::Entry {
            manager: BEFORE_FIRST_APPLY.into(),
            operation: Operation::Update,
            api_version: writer.api_version.to_string(),
            time: crate::object::now_rfc3339(),
            subresource: None,
            fields: FieldSet::of(live, writer.scope),
        });
    }
    let is_mine = |e: &managed_fields::Entry| {
        e.manager == writer.manager
            && e.operation == Operation::Apply
            && e.subresource.as_deref() == subresource(writer)
    };
    let mut conflicts: Vec<(usize, Vec<Elem>)> = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        if is_mine(e) {
            continue;
        }
        for p in applied.0.iter().filter(|p| applied.is_leaf(p)) {
            if !e.fields.contains(p) {
                continue;
            }
            let now = managed_fields::value_at(live, p);
            if now.is_some() && now != managed_fields::value_at(config, p) {
                conflicts.push((i, p.clone()));
            }
        }
    }
    if !conflicts.is_empty() {
        if !force {
            let list = conflicts
                .iter()
                .map(|(i, p)| Conflict {
                    owner: entries[*i].describe(),
                    field: managed_fields::display(p),
                })
                .collect();
            return Err(ApiError::apply_conflict(list));
        }
        for (i, p) in &conflicts {
            entries[*i].fields.0.remove(p);
        }
    }
    let previous = entries
        .iter()
        .find(|e| is_mine(e))
        .map(|e| e.fields.clone())
        .unwrap_or_default();
    let mut new = live.clone();
    for p in &previous.minus(&applied).0 {
        let owned_elsewhere = entries.iter().any(|e| !is_mine(e) && e.fields.covers(p));
        if !owned_elsewhere && !applied.covers(p) {
            managed_fields::remove_at(&mut new, p);
        }
    }
    let mut merged_config = config.clone();
    if let Some(meta) = merged_config
        .get_mut("metadata")
        .and_then(Value::as_object_mut)
    {
        meta.remove("managedFields");
    }
    merge(&mut new, &merged_config, &mut Vec::new());
    managed_fields::put_entry(&mut entries, writer, Operation::Apply, applied);
    entries.retain(|e| !e.fields.is_empty());
    managed_fields::set_entries(&mut new, &entries);
    Ok(new)
}

/// Merge an apply configuration into an object: maps key by key, keyed lists element by
/// element, set lists (`metadata.finalizers`) as a union, anything else replaced; `null`s
/// in the configuration set nothing.
fn merge(live: &mut Value, config: &Value, path: &mut Vec<Elem>) {
    match config {
        Value::Null => {}
        Value::Object(cm) => {
            if !live.is_object() {
                *live = Value::Object(serde_json::Map::new());
            }
            let lm = live.as_object_mut().expect("made a map");
            for (k, v) in cm {
                if v.is_null() {
                    continue;
                }
                path.push(format!("f:{k}"));
                let slot = lm.entry(k.clone()).or_insert(Value::Null);
                if slot.is_null() {
                    *slot = strip_nulls(v);
                } else {
                    merge(slot, v, path);
                }
                path.pop();
            }
        }
        Value::Array(items) => {
            let field = path
                .last()
                .and_then(|e| e.strip_prefix("f:"))
                .unwrap_or_default()
                .to_string();
            match live {
                Value::Array(existing) if managed_fields::is_set_list(path, items) => {
                    for item in items {
                        if !existing.contains(item) {
                            existing.push(item.clone());
                        }
                    }
                }
                Value::Array(existing) => match managed_fields::list_key(&field, items) {
                    Some(key) if existing.iter().all(|e| e.get(key).is_some()) => {
                        for item in items {
                            match existing.iter_mut().find(|e| e.get(key) == item.get(key)) {
                                Some(e) => merge(e, item, &mut Vec::new()),
                                None => existing.push(strip_nulls(item)),
                            }
                        }
                    }
                    _ => *live = strip_nulls(config),
                },
                _ => *live = strip_nulls(config),
            }
        }
        other => *live = other.clone(),
    }
}

fn strip_nulls(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), strip_nulls(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(strip_nulls).collect()),
        other => other.clone(),
    }
}

fn subresource(writer: &Writer<'_>) -> Option<&'static str> {
    match writer.scope {
        managed_fields::Scope::Status => Some("status"),
        managed_fields::Scope::Main { .. } => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::managed_fields::Scope;
    use serde_json::json;

    fn writer(manager: &str) -> Writer<'_> {
        Writer {
            manager,
            api_version: "v1",
            scope: Scope::Main {
                status_separate: false,
            },
        }
    }

    #[test]
    fn untracked_fields_belong_to_before_first_apply() {
        let seeded = json!({"metadata": {"name": "c"}, "data": {"x": "1"}});
        let err = apply(&seeded, &json!({"data": {"x": "2"}}), &writer("a"), false).unwrap_err();
        assert_eq!(
            err.message,
            "Apply failed with 1 conflict: conflict with \"before-first-apply\" using v1: .data.x"
        );
        let shared = apply(&seeded, &json!({"data": {"x": "1"}}), &writer("a"), false).unwrap();
        let names: Vec<String> = managed_fields::entries(&shared)
            .into_iter()
            .map(|e| e.manager)
            .collect();
        assert_eq!(names, ["before-first-apply", "a"]);
    }

    #[test]
    fn conflicts_force_and_removal() {
        let base = json!({"metadata": {"name": "c"}, "data": {}});
        let a = apply(
            &base,
            &json!({"metadata": {"name": "c"}, "data": {"x": "1", "y": "1"}}),
            &writer("a"),
            false,
        )
        .unwrap();
        let err = apply(&a, &json!({"data": {"x": "2"}}), &writer("b"), false).unwrap_err();
        assert_eq!(err.code, 409);
        assert_eq!(
            err.message,
            "Apply failed with 1 conflict: conflict with \"a\": .data.x"
        );
        // The same value is shared ownership, not a conflict.
        let shared = apply(&a, &json!({"data": {"x": "1"}}), &writer("b"), false).unwrap();
        // a stops applying x and y: y goes, x stays (b owns it too).
        let dropped = apply(
            &shared,
            &json!({"metadata": {"labels": {"l": "v"}}}),
            &writer("a"),
            false,
        )
        .unwrap();
        assert_eq!(dropped["data"], json!({"x": "1"}));
        let forced = apply(&a, &json!({"data": {"x": "2"}}), &writer("b"), true).unwrap();
        assert_eq!(forced["data"]["x"], "2");
        let owners = managed_fields::entries(&forced);
        let a_fields = &owners.iter().find(|e| e.manager == "a").unwrap().fields;
        assert!(!a_fields.contains(&["f:data".to_string(), "f:x".to_string()]));
    }
}
