//! Seeding from manifests: directories of YAML/JSON files, multi-document, `kind: List` items
//! expanded, applied namespaces first, then CRDs, then everything else.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::error::Error;
use crate::storage::Store;

/// Every manifest file under `dir` (recursively), sorted by path.
fn manifest_files(dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d).map_err(|e| Error::io(&d, e))?;
        for entry in entries {
            let path = entry.map_err(|e| Error::io(&d, e))?.path();
            if path.is_dir() {
                stack.push(path);
            } else if matches!(
                path.extension().and_then(|e| e.to_str()),
                Some("yaml" | "yml" | "json")
            ) {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

/// Parse one manifest file's documents, expanding `kind: List`.
pub(crate) fn parse_manifests(path: &Path, text: &str) -> Result<Vec<Value>, Error> {
    let mut out = Vec::new();
    for doc in serde_yaml::Deserializer::from_str(text) {
        let value = Value::deserialize(doc).map_err(|e| Error::Seed {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        expand(value, &mut out);
    }
    Ok(out)
}

fn expand(value: Value, out: &mut Vec<Value>) {
    match value {
        Value::Null => {}
        Value::Object(ref m)
            if m.get("kind").and_then(Value::as_str) == Some("List")
                || m.get("kind")
                    .and_then(Value::as_str)
                    .is_some_and(|k| k.ends_with("List"))
                    && m.get("items").is_some_and(Value::is_array) =>
        {
            if let Some(Value::Array(items)) = value.get("items").cloned() {
                for item in items {
                    expand(item, out);
                }
            }
        }
        other => out.push(other),
    }
}

fn rank(obj: &Value) -> u8 {
    match (obj["apiVersion"].as_str(), obj["kind"].as_str()) {
        (Some("v1"), Some("Namespace")) => 0,
        (Some("apiextensions.k8s.io/v1"), Some("CustomResourceDefinition")) => 1,
        _ => 2,
    }
}

/// Load every manifest in `dirs` into `store`; returns how many objects were created.
pub(crate) fn seed(store: &Store, dirs: &[PathBuf]) -> Result<usize, Error> {
    let mut objects: Vec<(PathBuf, Value)> = Vec::new();
    for dir in dirs {
        let files = if dir.is_file() {
            vec![dir.clone()]
        } else {
            manifest_files(dir)?
        };
        for file in files {
            let text = std::fs::read_to_string(&file).map_err(|e| Error::io(&file, e))?;
            for obj in parse_manifests(&file, &text)? {
                objects.push((file.clone(), obj));
            }
        }
    }
    objects.sort_by_key(|(_, o)| rank(o));
    let mut created = 0;
    for (path, obj) in objects {
        match store.create_manifest(obj) {
            Ok(_) => created += 1,
            // The well-known namespaces exist already; a manifest may list them too.
            Err(e) if e.reason == "AlreadyExists" => {}
            Err(e) => {
                return Err(Error::Seed {
                    path,
                    message: e.message,
                });
            }
        }
    }
    Ok(created)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multi_document_files_and_lists_are_expanded() {
        let text = "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n---\n\
                    apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: x}\n\
                    - apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: y}\n";
        let docs = parse_manifests(Path::new("t.yaml"), text).unwrap();
        let kinds: Vec<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
        assert_eq!(kinds, vec!["Namespace", "ConfigMap", "ConfigMap"]);
    }

    #[test]
    fn namespaces_and_crds_sort_first() {
        let mut objs = [
            serde_json::json!({"apiVersion": "v1", "kind": "Pod"}),
            serde_json::json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition"}),
            serde_json::json!({"apiVersion": "v1", "kind": "Namespace"}),
        ];
        objs.sort_by_key(rank);
        assert_eq!(objs[0]["kind"], "Namespace");
        assert_eq!(objs[1]["kind"], "CustomResourceDefinition");
    }
}
