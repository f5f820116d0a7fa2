//! Kubernetes objects and event contexts for the tests.

use herald::plugin::{EventContext, GroupVersionKind};
use serde_json::{Value, json};

/// A minimal Pod.
pub fn pod(namespace: &str, name: &str, resource_version: u64) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": format!("uid-{namespace}-{name}"),
            "resourceVersion": resource_version.to_string(),
            "labels": {"app": name}
        },
        "spec": {"containers": [{"name": "main", "image": "docker.io/library/nginx:1.27"}]},
        "status": {"phase": "Pending"}
    })
}

/// The context the host would pass for `object`.
pub fn context(object: &Value) -> EventContext {
    let namespace = object["metadata"]["namespace"].as_str().unwrap_or_default();
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    EventContext {
        kind: GroupVersionKind {
            group: String::new(),
            version: "v1".into(),
            kind: "Pod".into(),
        },
        resource: "pods".into(),
        key: format!("{namespace}/{name}"),
        resource_version: object["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or_default()
            .into(),
        is_initial_list: false,
        is_resync: false,
        final_state_unknown: false,
    }
}
