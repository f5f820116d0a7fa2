//! Field ownership: field sets in the `FieldsV1` format and the `metadata.managedFields`
//! entries that record which manager set which fields, by `Apply` or `Update`.
//!
//! A field set is a set of paths. A path is a list of `FieldsV1` elements: `f:<name>` for a
//! map key, `k:{"name":"app"}` for an element of a list keyed by a merge key (containers by
//! name, ports by port, … the lists [`crate::patch::merge_key`] knows) and `v:<json>` for a
//! value of a primitive list (parsed, never produced: primitive lists are owned atomically).
//! Every other list is atomic: the list is one leaf. A path is a member either as a leaf
//! (`{}` in `FieldsV1`) or, when it also has members below it, as `".": {}` (produced for
//! keyed list elements and for the well-known string maps such as labels and annotations).

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use crate::patch::merge_key;

/// One path element, as spelled in `FieldsV1` (`f:spec`, `k:{"name":"a"}`, `v:"x"`).
pub(crate) type Elem = String;
/// A path of elements from the object's root.
pub(crate) type Path = Vec<Elem>;

/// A set of field paths.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FieldSet(pub BTreeSet<Path>);

/// Which part of an object a write addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// The main resource; `.status` is excluded when the kind has a status subresource.
    Main {
        /// Whether `.status` belongs to the status subresource.
        status_separate: bool,
    },
    /// The `/status` subresource: only `.status`.
    Status,
}

impl Scope {
    /// The `subresource` field of entries written in this scope.
    fn subresource(self) -> Option<&'static str> {
        match self {
            Scope::Status => Some("status"),
            Scope::Main { .. } => None,
        }
    }

    fn admits(self, path: &[Elem]) -> bool {
        let in_status = path.first().is_some_and(|e| e == "f:status");
        match self {
            Scope::Status => in_status,
            Scope::Main { status_separate } => !(status_separate && in_status),
        }
    }
}

/// Metadata fields the server owns; never in a field set.
const SERVER_METADATA: &[&str] = &[
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
];

/// String maps whose entries are owned one by one and which are members themselves (`.`).
const GRANULAR_MAPS: &[&str] = &[
    "labels",
    "annotations",
    "data",
    "binaryData",
    "stringData",
    "matchLabels",
    "nodeSelector",
    "hard",
];

/// Whether the list at `path` is a set of primitive values (`metadata.finalizers`), whose
/// values are owned one by one as `v:` elements.
pub(crate) fn is_set_list(path: &[Elem], items: &[Value]) -> bool {
    path == ["f:metadata", "f:finalizers"]
        && items
            .iter()
            .all(|i| i.is_string() || i.is_number() || i.is_boolean())
}

/// The `k:` element for a keyed list item.
fn key_elem(key: &str, item: &Value) -> Option<Elem> {
    let v = item.get(key)?;
    if !(v.is_string() || v.is_number()) {
        return None;
    }
    let mut m = Map::new();
    m.insert(key.to_string(), v.clone());
    Some(format!("k:{}", Value::Object(m)))
}

/// The merge key of a list field, if every item carries it.
pub(crate) fn list_key(field: &str, items: &[Value]) -> Option<&'static str> {
    let key = merge_key(field, items)?;
    items
        .iter()
        .all(|i| key_elem(key, i).is_some())
        .then_some(key)
}

impl FieldSet {
    /// The fields an object (or an apply configuration) sets, within `scope`.
    pub fn of(obj: &Value, scope: Scope) -> Self {
        let mut set = BTreeSet::new();
        if let Some(map) = obj.as_object() {
            for (k, v) in map {
                if k == "apiVersion" || k == "kind" || v.is_null() {
                    continue;
                }
                let path = vec![format!("f:{k}")];
                if !scope.admits(&path) {
                    continue;
                }
                if k == "metadata" {
                    if let Some(meta) = v.as_object() {
                        for (mk, mv) in meta {
                            if SERVER_METADATA.contains(&mk.as_str()) || mv.is_null() {
                                continue;
                            }
                            walk(
                                mk,
                                mv,
                                vec!["f:metadata".into(), format!("f:{mk}")],
                                &mut set,
                            );
                        }
                    }
                    continue;
                }
                walk(k, v, path, &mut set);
            }
        }
        FieldSet(set)
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `path` is a member.
    pub fn contains(&self, path: &[Elem]) -> bool {
        self.0.contains(path)
    }

    /// Whether `path` or anything below it is a member.
    pub fn covers(&self, path: &[Elem]) -> bool {
        self.0
            .range(path.to_vec()..)
            .next()
            .is_some_and(|p| p.starts_with(path))
    }

    /// Whether `path` is a member with nothing below it.
    pub fn is_leaf(&self, path: &[Elem]) -> bool {
        let mut after = self.0.range(path.to_vec()..);
        after.next().is_some_and(|p| p.as_slice() == path)
            && after.next().is_none_or(|p| !p.starts_with(path))
    }

    /// Members of `self` not in `other`.
    pub fn minus(&self, other: &FieldSet) -> FieldSet {
        FieldSet(self.0.difference(&other.0).cloned().collect())
    }

    /// The set in `FieldsV1` form.
    pub fn to_fields_v1(&self) -> Value {
        let mut root = Map::new();
        for path in &self.0 {
            let mut node = &mut root;
            for elem in path {
                node = node
                    .entry(elem.clone())
                    .or_insert_with(|| Value::Object(Map::new()))
                    .as_object_mut()
                    .expect("built as maps");
            }
        }
        // A member with members below it is marked by ".".
        for path in &self.0 {
            if self.covers_strictly(path) {
                let mut node = &mut root;
                for elem in path {
                    node = node[elem].as_object_mut().expect("built as maps");
                }
                node.insert(".".into(), json!({}));
            }
        }
        Value::Object(root)
    }

    fn covers_strictly(&self, path: &[Elem]) -> bool {
        self.0
            .range(path.to_vec()..)
            .nth(1)
            .is_some_and(|p| p.starts_with(path))
    }

    /// Parse a `FieldsV1` value.
    pub fn from_fields_v1(v: &Value) -> Self {
        fn go(v: &Value, path: &mut Path, out: &mut BTreeSet<Path>) {
            let Some(m) = v.as_object() else { return };
            if m.is_empty() && !path.is_empty() {
                out.insert(path.clone());
                return;
            }
            for (k, child) in m {
                if k == "." {
                    out.insert(path.clone());
                    continue;
                }
                path.push(k.clone());
                go(child, path, out);
                path.pop();
            }
        }
        let mut out = BTreeSet::new();
        go(v, &mut Vec::new(), &mut out);
        FieldSet(out)
    }
}

fn walk(field: &str, v: &Value, path: Path, set: &mut BTreeSet<Path>) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            if GRANULAR_MAPS.contains(&field) {
                set.insert(path.clone());
            }
            for (k, child) in m {
                if child.is_null() {
                    continue;
                }
                let mut p = path.clone();
                p.push(format!("f:{k}"));
                walk(k, child, p, set);
            }
        }
        // An empty map sets nothing (and owns nothing).
        Value::Object(_) => {}
        Value::Array(items) if is_set_list(&path, items) => {
            for item in items {
                let mut p = path.clone();
                p.push(format!("v:{item}"));
                set.insert(p);
            }
        }
        Value::Array(items) => match list_key(field, items) {
            Some(key) => {
                for item in items {
                    let mut p = path.clone();
                    p.push(key_elem(key, item).expect("checked by list_key"));
                    set.insert(p.clone());
                    if let Some(m) = item.as_object() {
                        for (k, child) in m {
                            if child.is_null() {
                                continue;
                            }
                            let mut cp = p.clone();
                            cp.push(format!("f:{k}"));
                            walk(k, child, cp, set);
                        }
                    }
                }
            }
            None => {
                set.insert(path);
            }
        },
        _ => {
            set.insert(path);
        }
    }
}

/// The value at `path` in `obj`, if present.
pub(crate) fn value_at<'a>(obj: &'a Value, path: &[Elem]) -> Option<&'a Value> {
    let mut cur = obj;
    for elem in path {
        cur = step(cur, elem)?;
    }
    Some(cur)
}

fn parse_key(elem: &str) -> Option<Map<String, Value>> {
    serde_json::from_str::<Value>(elem.strip_prefix("k:")?)
        .ok()?
        .as_object()
        .cloned()
}

fn item_matches(item: &Value, key: &Map<String, Value>) -> bool {
    key.iter().all(|(k, v)| item.get(k) == Some(v))
}

fn step<'a>(cur: &'a Value, elem: &str) -> Option<&'a Value> {
    if let Some(name) = elem.strip_prefix("f:") {
        return cur.get(name);
    }
    let items = cur.as_array()?;
    if let Some(key) = parse_key(elem) {
        return items.iter().find(|i| item_matches(i, &key));
    }
    let wanted: Value = serde_json::from_str(elem.strip_prefix("v:")?).ok()?;
    items.iter().find(|i| **i == wanted)
}

/// Remove the field at `path` from `obj`, if present.
pub(crate) fn remove_at(obj: &mut Value, path: &[Elem]) {
    let Some((last, parent)) = path.split_last() else {
        return;
    };
    let mut cur = obj;
    for elem in parent {
        let next = if let Some(name) = elem.strip_prefix("f:") {
            cur.get_mut(name)
        } else if let (Some(items), Some(key)) = (cur.as_array_mut(), parse_key(elem)) {
            items.iter_mut().find(|i| item_matches(i, &key))
        } else {
            None
        };
        match next {
            Some(n) => cur = n,
            None => return,
        }
    }
    if let Some(name) = last.strip_prefix("f:") {
        if let Some(m) = cur.as_object_mut() {
            m.remove(name);
        }
    } else if let Some(items) = cur.as_array_mut() {
        if let Some(key) = parse_key(last) {
            items.retain(|i| !item_matches(i, &key));
        } else if let Some(v) = last
            .strip_prefix("v:")
            .and_then(|s| serde_json::from_str::<Value>(s).ok())
        {
            items.retain(|i| *i != v);
        }
    }
}

/// A path as the API server prints it in conflicts (`.spec.replicas`,
/// `.spec.containers[name="app"].image`).
pub(crate) fn display(path: &[Elem]) -> String {
    let mut out = String::new();
    for elem in path {
        if let Some(name) = elem.strip_prefix("f:") {
            out.push('.');
            out.push_str(name);
        } else if let Some(key) = parse_key(elem) {
            let parts: Vec<String> = key.iter().map(|(k, v)| format!("{k}={v}")).collect();
            out.push_str(&format!("[{}]", parts.join(",")));
        } else if let Some(v) = elem.strip_prefix("v:") {
            out.push_str(&format!("[={v}]"));
        }
    }
    out
}

/// The operation an entry records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operation {
    /// Server-side apply.
    Apply,
    /// Create, update or a non-apply patch.
    Update,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// One `metadata.managedFields` entry.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    /// The manager's name.
    pub manager: String,
    /// `Apply` or `Update`.
    pub operation: Operation,
    /// The API version the manager wrote with.
    pub api_version: String,
    /// When the entry last changed.
    pub time: String,
    /// `status` for entries of the status subresource.
    pub subresource: Option<String>,
    /// The fields owned.
    pub fields: FieldSet,
}

impl Entry {
    fn same_owner(&self, manager: &str, op: Operation, scope: Scope) -> bool {
        self.manager == manager
            && self.operation == op
            && self.subresource.as_deref() == scope.subresource()
    }

    fn to_json(&self) -> Value {
        let mut v = json!({
            "manager": self.manager,
            "operation": self.operation.as_str(),
            "apiVersion": self.api_version,
            "time": self.time,
            "fieldsType": "FieldsV1",
            "fieldsV1": self.fields.to_fields_v1(),
        });
        if let Some(s) = &self.subresource {
            v["subresource"] = json!(s);
        }
        v
    }

    fn from_json(v: &Value) -> Option<Entry> {
        Some(Entry {
            manager: v["manager"].as_str().unwrap_or_default().to_string(),
            operation: match v["operation"].as_str()? {
                "Apply" => Operation::Apply,
                _ => Operation::Update,
            },
            api_version: v["apiVersion"].as_str().unwrap_or_default().to_string(),
            time: v["time"].as_str().unwrap_or_default().to_string(),
            subresource: v["subresource"]
                .as_str()
                .filter(|s| !s.is_empty())
                .map(str::to_string),
            fields: FieldSet::from_fields_v1(&v["fieldsV1"]),
        })
    }

    /// How a conflict with this manager is described.
    pub fn describe(&self) -> String {
        let mut s = format!("conflict with {:?}", self.manager);
        if let Some(sub) = &self.subresource {
            s.push_str(&format!(" with subresource {sub:?}"));
        }
        if self.operation == Operation::Update {
            s.push_str(&format!(" using {}", self.api_version));
        }
        s
    }
}

/// The entries of an object's `metadata.managedFields`.
pub(crate) fn entries(obj: &Value) -> Vec<Entry> {
    obj["metadata"]["managedFields"]
        .as_array()
        .map(|a| a.iter().filter_map(Entry::from_json).collect())
        .unwrap_or_default()
}

/// Write `entries` to the object's `metadata.managedFields` (removed when empty).
pub(crate) fn set_entries(obj: &mut Value, entries: &[Entry]) {
    let meta = crate::object::meta_mut(obj);
    let kept: Vec<Value> = entries
        .iter()
        .filter(|e| !e.fields.is_empty())
        .map(Entry::to_json)
        .collect();
    if kept.is_empty() {
        meta.remove("managedFields");
    } else {
        meta.insert("managedFields".into(), Value::Array(kept));
    }
}

/// Who writes, how and where: what an entry needs beyond its fields.
#[derive(Debug, Clone)]
pub(crate) struct Writer<'a> {
    /// The manager's name.
    pub manager: &'a str,
    /// The API version of the request.
    pub api_version: &'a str,
    /// The part of the object written.
    pub scope: Scope,
}

/// Set (replace) the fields of `writer`'s entry of operation `op`, creating it if needed.
pub(crate) fn put_entry(
    entries: &mut Vec<Entry>,
    writer: &Writer<'_>,
    op: Operation,
    fields: FieldSet,
) {
    let now = crate::object::now_rfc3339();
    match entries
        .iter_mut()
        .find(|e| e.same_owner(writer.manager, op, writer.scope))
    {
        Some(e) => {
            if e.fields != fields || e.api_version != writer.api_version {
                e.time = now;
            }
            e.fields = fields;
            e.api_version = writer.api_version.to_string();
        }
        None => entries.push(Entry {
            manager: writer.manager.to_string(),
            operation: op,
            api_version: writer.api_version.to_string(),
            time: now,
            subresource: writer.scope.subresource().map(str::to_string),
            fields,
        }),
    }
}

/// Record a non-apply write that turned `old` (`Null` for a create) into `new`: the writer's
/// `Update` entry gains the fields it set or changed, which every other entry loses; fields
/// the write removed leave every entry. Returns `new`'s entries.
pub(crate) fn record_update(old: &Value, new: &Value, writer: &Writer<'_>) -> Vec<Entry> {
    let mut list = entries(old);
    let before = FieldSet::of(old, writer.scope);
    let after = FieldSet::of(new, writer.scope);
    let changed: BTreeSet<Path> = after
        .0
        .iter()
        .filter(|p| {
            !before.contains(p) || (after.is_leaf(p) && value_at(old, p) != value_at(new, p))
        })
        .cloned()
        .collect();
    let removed = before.minus(&after);
    for e in &mut list {
        let mine = e.same_owner(writer.manager, Operation::Update, writer.scope);
        e.fields
            .0
            .retain(|p| !removed.contains(p) && (mine || !changed.contains(p)));
    }
    if !changed.is_empty() {
        let mut fields = list
            .iter()
            .find(|e| e.same_owner(writer.manager, Operation::Update, writer.scope))
            .map(|e| e.fields.clone())
            .unwrap_or_default();
        fields.0.extend(changed);
        put_entry(&mut list, writer, Operation::Update, fields);
    }
    list.retain(|e| !e.fields.is_empty());
    list
}

#[cfg(test)]
mod tests {
    use super::*;

    fn main() -> Scope {
        Scope::Main {
            status_separate: true,
        }
    }

    #[test]
    fn field_sets_use_the_fields_v1_format() {
        let obj = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "app", "image": "nginx"}], "args": ["a"]},
            "status": {"phase": "Running"}
        });
        let set = FieldSet::of(&obj, main());
        assert_eq!(
            set.to_fields_v1(),
            json!({
                "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                "f:spec": {
                    "f:args": {},
                    "f:containers": {"k:{\"name\":\"app\"}": {".": {}, "f:image": {}, "f:name": {}}}
                }
            })
        );
        assert_eq!(FieldSet::from_fields_v1(&set.to_fields_v1()), set);
        let status = FieldSet::of(&obj, Scope::Status);
        assert_eq!(status.to_fields_v1(), json!({"f:status": {"f:phase": {}}}));
    }

    #[test]
    fn paths_resolve_remove_and_display() {
        let mut obj = json!({"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b"}]}});
        let path: Path = vec![
            "f:spec".into(),
            "f:containers".into(),
            "k:{\"name\":\"a\"}".into(),
            "f:image".into(),
        ];
        assert_eq!(value_at(&obj, &path), Some(&json!("x")));
        assert_eq!(display(&path), ".spec.containers[name=\"a\"].image");
        remove_at(&mut obj, &path[..3]);
        assert_eq!(obj, json!({"spec": {"containers": [{"name": "b"}]}}));
    }

    #[test]
    fn updates_take_changed_fields_from_other_managers() {
        let w = |m| Writer {
            manager: m,
            api_version: "v1",
            scope: main(),
        };
        let a = json!({"metadata": {"labels": {"x": "1", "y": "1"}}});
        let mut created = a.clone();
        set_entries(&mut created, &record_update(&Value::Null, &a, &w("one")));
        let b = json!({"metadata": {"labels": {"x": "2"}}});
        let list = record_update(&created, &b, &w("two"));
        let one = list.iter().find(|e| e.manager == "one").unwrap();
        let two = list.iter().find(|e| e.manager == "two").unwrap();
        assert_eq!(
            one.fields.to_fields_v1(),
            json!({"f:metadata": {"f:labels": {}}})
        );
        assert_eq!(
            two.fields.to_fields_v1(),
            json!({"f:metadata": {"f:labels": {"f:x": {}}}})
        );
    }
}
