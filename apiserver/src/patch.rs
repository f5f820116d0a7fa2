//! Patch formats: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and a strategic merge
//! patch that merges the well-known keyed lists (containers by name, ports by port, …).

use serde_json::{Map, Value};

/// The patch formats the server accepts, by request `Content-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PatchType {
    /// `application/merge-patch+json`.
    Merge,
    /// `application/json-patch+json`.
    Json,
    /// `application/strategic-merge-patch+json`.
    Strategic,
    /// `application/apply-patch+yaml` (server-side apply, done as create-or-merge).
    Apply,
}

impl PatchType {
    /// The patch type for a `Content-Type` header value (parameters ignored).
    pub fn from_content_type(content_type: &str) -> Option<Self> {
        let media = content_type.split(';').next().unwrap_or("").trim();
        match media {
            "application/merge-patch+json" => Some(PatchType::Merge),
            "application/json-patch+json" => Some(PatchType::Json),
            "application/strategic-merge-patch+json" => Some(PatchType::Strategic),
            "application/apply-patch+yaml" | "application/apply-patch+json" => {
                Some(PatchType::Apply)
            }
            _ => None,
        }
    }
}

/// Apply an RFC 7386 JSON merge patch.
pub(crate) fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch_map) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let target_map = target.as_object_mut().expect("made a map");
    for (k, v) in patch_map {
        if v.is_null() {
            target_map.remove(k);
        } else {
            merge_patch(target_map.entry(k.clone()).or_insert(Value::Null), v);
        }
    }
}

fn parse_pointer(pointer: &str) -> Result<Vec<String>, String> {
    if pointer.is_empty() {
        return Ok(vec![]);
    }
    let Some(rest) = pointer.strip_prefix('/') else {
        return Err(format!("invalid JSON pointer {pointer:?}"));
    };
    Ok(rest
        .split('/')
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect())
}

fn array_index(token: &str, len: usize, allow_end: bool) -> Result<usize, String> {
    if allow_end && token == "-" {
        return Ok(len);
    }
    let i: usize = token
        .parse()
        .map_err(|_| format!("invalid array index {token:?}"))?;
    let max = if allow_end {
        len
    } else {
        len.saturating_sub(1)
    };
    if i > max || (!allow_end && len == 0) {
        return Err(format!("array index {i} out of bounds"));
    }
    Ok(i)
}

fn resolve<'a>(root: &'a Value, path: &[String]) -> Result<&'a Value, String> {
    let mut cur = root;
    for token in path {
        cur = match cur {
            Value::Object(m) => m
                .get(token)
                .ok_or_else(|| format!("missing path element {token:?}"))?,
            Value::Array(a) => &a[array_index(token, a.len(), false)?],
            _ => return Err(format!("cannot descend into a scalar at {token:?}")),
        };
    }
    Ok(cur)
}

fn resolve_mut<'a>(root: &'a mut Value, path: &[String]) -> Result<&'a mut Value, String> {
    let mut cur = root;
    for token in path {
        cur = match cur {
            Value::Object(m) => m
                .get_mut(token)
                .ok_or_else(|| format!("missing path element {token:?}"))?,
            Value::Array(a) => {
                let i = array_index(token, a.len(), false)?;
                &mut a[i]
            }
            _ => return Err(format!("cannot descend into a scalar at {token:?}")),
        };
    }
    Ok(cur)
}

fn add(root: &mut Value, path: &[String], value: Value) -> Result<(), String> {
    let Some((last, parent)) = path.split_last() else {
        *root = value;
        return Ok(());
    };
    match resolve_mut(root, parent)? {
        Value::Object(m) => {
            m.insert(last.clone(), value);
        }
        Value::Array(a) => {
            let i = array_index(last, a.len(), true)?;
            a.insert(i, value);
        }
        _ => return Err("cannot add to a scalar".into()),
    }
    Ok(())
}

fn remove(root: &mut Value, path: &[String]) -> Result<Value, String> {
    let Some((last, parent)) = path.split_last() else {
        return Err("cannot remove the whole document".into());
    };
    match resolve_mut(root, parent)? {
        Value::Object(m) => m
            .remove(last)
            .ok_or_else(|| format!("missing path element {last:?}")),
        Value::Array(a) => {
            let i = array_index(last, a.len(), false)?;
            Ok(a.remove(i))
        }
        _ => Err("cannot remove from a scalar".into()),
    }
}

/// Apply an RFC 6902 JSON patch (a list of operations), all or nothing.
pub(crate) fn json_patch(target: &mut Value, ops: &Value) -> Result<(), String> {
    let Some(ops) = ops.as_array() else {
        return Err("a JSON patch must be a list of operations".into());
    };
    let mut doc = target.clone();
    for op in ops {
        let kind = op["op"].as_str().ok_or("operation without \"op\"")?;
        let path = parse_pointer(op["path"].as_str().ok_or("operation without \"path\"")?)?;
        let value = || -> Result<Value, String> {
            op.get("value")
                .cloned()
                .ok_or_else(|| format!("\"{kind}\" operation without \"value\""))
        };
        let from = || -> Result<Vec<String>, String> {
            parse_pointer(op["from"].as_str().ok_or("operation without \"from\"")?)
        };
        match kind {
            "add" => add(&mut doc, &path, value()?)?,
            "remove" => {
                remove(&mut doc, &path)?;
            }
            "replace" => {
                let v = value()?;
                *resolve_mut(&mut doc, &path)? = v;
            }
            "move" => {
                let v = remove(&mut doc, &from()?)?;
                add(&mut doc, &path, v)?;
            }
            "copy" => {
                let v = resolve(&doc, &from()?)?.clone();
                add(&mut doc, &path, v)?;
            }
            "test" => {
                if resolve(&doc, &path)? != &value()? {
                    return Err(format!(
                        "test operation failed at {}",
                        op["path"].as_str().unwrap_or("")
                    ));
                }
            }
            other => return Err(format!("unknown JSON patch operation {other:?}")),
        }
    }
    *target = doc;
    Ok(())
}

/// The merge key of the well-known keyed lists, by field name.
pub(crate) fn merge_key(field: &str, items: &[Value]) -> Option<&'static str> {
    Some(match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "volumes"
        | "env"
        | "imagePullSecrets"
        | "resourceClaims" => "name",
        "volumeMounts" => "mountPath",
        "volumeDevices" => "devicePath",
        "ownerReferences" => "uid",
        "conditions" => "type",
        "hostAliases" => "ip",
        "topologySpreadConstraints" => "topologyKey",
        "ports" => {
            if items.iter().any(|i| i.get("containerPort").is_some()) {
                "containerPort"
            } else {
                "port"
            }
        }
        _ => return None,
    })
}

fn is_directive(key: &str) -> bool {
    key.starts_with('$')
}

/// A copy of a patch value with strategic-merge directives removed.
fn strip_directives(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !is_directive(k))
                .map(|(k, v)| (k.clone(), strip_directives(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(strip_directives).collect()),
        other => other.clone(),
    }
}

/// Apply a strategic merge patch: a JSON merge patch in which the well-known keyed lists merge
/// element-wise by key and the `$patch`, `$retainKeys`, `$setElementOrder/…` and
/// `$deleteFromPrimitiveList/…` directives are honoured.
pub(crate) fn strategic_merge(target: &mut Value, patch: &Value) {
    let Value::Object(patch_map) = patch else {
        *target = strip_directives(patch);
        return;
    };
    if patch_map.get("$patch").and_then(Value::as_str) == Some("replace") {
        *target = strip_directives(patch);
        return;
    }
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let target_map = target.as_object_mut().expect("made a map");
    for (k, v) in patch_map {
        if let Some(field) = k.strip_prefix("$deleteFromPrimitiveList/") {
            if let (Some(Value::Array(list)), Some(remove)) =
                (target_map.get_mut(field), v.as_array())
            {
                list.retain(|x| !remove.contains(x));
            }
            continue;
        }
        if is_directive(k) {
            continue;
        }
        match v {
            Value::Null => {
                target_map.remove(k);
            }
            Value::Object(inner)
                if inner.get("$patch").and_then(Value::as_str) == Some("delete") =>
            {
                target_map.remove(k);
            }
            Value::Object(_) => {
                strategic_merge(target_map.entry(k.clone()).or_insert(Value::Null), v);
            }
            Value::Array(items) => match (merge_key(k, items), target_map.get_mut(k)) {
                (Some(key), Some(Value::Array(existing))) => merge_keyed_list(existing, items, key),
                _ => {
                    target_map.insert(k.clone(), strip_directives(v));
                }
            },
            other => {
                target_map.insert(k.clone(), other.clone());
            }
        }
    }
    if let Some(Value::Array(retain)) = patch_map.get("$retainKeys") {
        target_map.retain(|k, _| retain.iter().any(|r| r.as_str() == Some(k.as_str())));
    }
}

fn merge_keyed_list(existing: &mut Vec<Value>, items: &[Value], key: &str) {
    if items
        .iter()
        .any(|i| i.get("$patch").and_then(Value::as_str) == Some("replace"))
    {
        *existing = items
            .iter()
            .filter(|i| i.get("$patch").is_none())
            .map(strip_directives)
            .collect();
        return;
    }
    for item in items {
        let Some(kv) = item.get(key) else {
            existing.push(strip_directives(item));
            continue;
        };
        let pos = existing.iter().position(|e| e.get(key) == Some(kv));
        let delete = item.get("$patch").and_then(Value::as_str) == Some("delete");
        match (pos, delete) {
            (Some(i), true) => {
                existing.remove(i);
            }
            (None, true) => {}
            (Some(i), false) => strategic_merge(&mut existing[i], item),
            (None, false) => existing.push(strip_directives(item)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_patch_follows_rfc_7386() {
        let mut doc = json!({"a": "b", "c": {"d": "e", "f": "g"}, "l": [1, 2]});
        merge_patch(&mut doc, &json!({"a": "z", "c": {"f": null}, "l": [3]}));
        assert_eq!(doc, json!({"a": "z", "c": {"d": "e"}, "l": [3]}));
    }

    #[test]
    fn json_patch_applies_every_operation() {
        let mut doc = json!({"metadata": {"labels": {"a": "1"}}, "list": [1, 2, 3]});
        json_patch(
            &mut doc,
            &json!([
                {"op": "add", "path": "/metadata/labels/b~1c", "value": "2"},
                {"op": "remove", "path": "/metadata/labels/a"},
                {"op": "replace", "path": "/list/0", "value": 10},
                {"op": "add", "path": "/list/-", "value": 4},
                {"op": "copy", "from": "/list/0", "path": "/copied"},
                {"op": "move", "from": "/copied", "path": "/moved"},
                {"op": "test", "path": "/moved", "value": 10}
            ]),
        )
        .unwrap();
        assert_eq!(
            doc,
            json!({"metadata": {"labels": {"b/c": "2"}}, "list": [10, 2, 3, 4], "moved": 10})
        );
    }

    #[test]
    fn failed_json_patch_leaves_the_document_unchanged() {
        let mut doc = json!({"a": 1});
        let err = json_patch(
            &mut doc,
            &json!([{"op": "replace", "path": "/a", "value": 2}, {"op": "test", "path": "/a", "value": 3}]),
        );
        assert!(err.is_err());
        assert_eq!(doc, json!({"a": 1}));
        assert!(json_patch(&mut doc, &json!([{"op": "remove", "path": "/nope"}])).is_err());
        assert!(json_patch(&mut doc, &json!({"op": "add"})).is_err());
    }

    #[test]
    fn strategic_merge_merges_containers_by_name() {
        let mut doc = json!({"spec": {"containers": [
            {"name": "app", "image": "app:1", "ports": [{"containerPort": 80}]},
            {"name": "sidecar", "image": "side:1"}
        ]}});
        strategic_merge(
            &mut doc,
            &json!({"spec": {
                "$setElementOrder/containers": [{"name": "app"}, {"name": "sidecar"}],
                "containers": [{"name": "app", "image": "app:2"}, {"name": "sidecar", "$patch": "delete"}]
            }}),
        );
        assert_eq!(
            doc,
            json!({"spec": {"containers": [
                {"name": "app", "image": "app:2", "ports": [{"containerPort": 80}]}
            ]}})
        );
    }

    #[test]
    fn strategic_merge_replaces_unkeyed_lists_and_deletes_nulls() {
        let mut doc =
            json!({"spec": {"args": ["a", "b"], "x": 1}, "metadata": {"finalizers": ["f1", "f2"]}});
        strategic_merge(
            &mut doc,
            &json!({"spec": {"args": ["c"], "x": null}, "metadata": {"$deleteFromPrimitiveList/finalizers": ["f1"]}}),
        );
        assert_eq!(
            doc,
            json!({"spec": {"args": ["c"]}, "metadata": {"finalizers": ["f2"]}})
        );
    }

    #[test]
    fn patch_types_come_from_content_types() {
        assert_eq!(
            PatchType::from_content_type("application/merge-patch+json; charset=utf-8"),
            Some(PatchType::Merge)
        );
        assert_eq!(
            PatchType::from_content_type("application/apply-patch+yaml"),
            Some(PatchType::Apply)
        );
        assert_eq!(PatchType::from_content_type("text/plain"), None);
    }
}
