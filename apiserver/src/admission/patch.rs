//! A mutating webhook's patch applied: its JSONPatch (RFC 6902: add, remove, replace,
//! move, copy, test) on the object it was sent, and the fields no webhook may change.

use serde_json::Value;

use crate::status::ApiError;

/// Why a patch was not applied.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PatchError {
    /// The patch is not a JSON patch: a failed call, which the failure policy decides
    /// (`received undecodable patch in webhook response: …`, as on the real server).
    Undecodable(String),
    /// The patch does not apply, or changes what it may not: the write is refused whatever
    /// the failure policy, as the real server refuses it.
    Refused(ApiError),
}

/// The identity fields a patch may not change. On a real server a changed `kind` or
/// `apiVersion` fails to decode and a changed name, namespace or uid fails validation
/// later; this server refuses them all here, naming the webhook.
const IDENTITY: [(&str, &str); 5] = [
    ("apiVersion", "/apiVersion"),
    ("kind", "/kind"),
    ("metadata.name", "/metadata/name"),
    ("metadata.namespace", "/metadata/namespace"),
    ("metadata.uid", "/metadata/uid"),
];

/// Whether `patch` is an empty list of operations (which changes nothing, even where
/// there is no object to change).
pub(crate) fn is_empty(patch: &[u8]) -> bool {
    serde_json::from_slice::<Value>(patch).is_ok_and(|p| p.as_array().is_some_and(Vec::is_empty))
}

/// `object` with `webhook`'s JSON patch `patch` applied.
pub(crate) fn apply(webhook: &str, object: &Value, patch: &[u8]) -> Result<Value, PatchError> {
    let ops: Value = serde_json::from_slice(patch).map_err(|e| {
        PatchError::Undecodable(format!(
            "received undecodable patch in webhook response: {e}"
        ))
    })?;
    if !ops.is_array() {
        return Err(PatchError::Undecodable(
            "received undecodable patch in webhook response: a JSON patch is a list of \
             operations"
                .into(),
        ));
    }
    let mut patched = object.clone();
    crate::patch::json_patch(&mut patched, &ops).map_err(|e| {
        PatchError::Refused(ApiError::internal(format!(
            "admission webhook {webhook:?} returned a patch that does not apply: {e}"
        )))
    })?;
    if !patched.is_object() {
        return Err(PatchError::Refused(ApiError::internal(format!(
            "admission webhook {webhook:?} patched the object into a non-object"
        ))));
    }
    for (field, pointer) in IDENTITY {
        let (before, after) = (object.pointer(pointer), patched.pointer(pointer));
        if before != after {
            let show = |v: Option<&Value>| v.map_or("nothing".to_string(), Value::to_string);
            return Err(PatchError::Refused(ApiError::internal(format!(
                "admission webhook {webhook:?} may not change {field} (from {} to {})",
                show(before),
                show(after)
            ))));
        }
    }
    Ok(patched)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod() -> Value {
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "web", "namespace": "shop", "labels": {"a": "1"}},
               "spec": {"containers": [{"name": "c"}]}})
    }

    #[test]
    fn every_rfc_6902_operation_applies() {
        let ops = br#"[
            {"op": "add", "path": "/metadata/labels/b", "value": "2"},
            {"op": "replace", "path": "/metadata/labels/a", "value": "one"},
            {"op": "copy", "from": "/metadata/labels/b", "path": "/metadata/labels/c"},
            {"op": "move", "from": "/metadata/labels/c", "path": "/metadata/labels/d"},
            {"op": "remove", "path": "/metadata/labels/b"},
            {"op": "test", "path": "/metadata/labels/d", "value": "2"},
            {"op": "add", "path": "/spec/containers/-", "value": {"name": "sidecar"}}
        ]"#;
        let patched = apply("m.h.e", &pod(), ops).unwrap();
        assert_eq!(patched["metadata"]["labels"], json!({"a": "one", "d": "2"}));
        assert_eq!(patched["spec"]["containers"][1]["name"], "sidecar");
    }

    #[test]
    fn a_failed_test_refuses_the_write_and_garbage_is_a_failed_call() {
        let failed = apply(
            "m.h.e",
            &pod(),
            br#"[{"op": "test", "path": "/kind", "value": "Service"}]"#,
        );
        assert!(matches!(failed, Err(PatchError::Refused(e)) if e.code == 500));
        assert!(matches!(
            apply("m.h.e", &pod(), b"not json"),
            Err(PatchError::Undecodable(m)) if m.starts_with("received undecodable patch")
        ));
    }

    #[test]
    fn identity_fields_may_not_change() {
        for (path, value) in [
            ("/metadata/name", json!("other")),
            ("/metadata/namespace", json!("elsewhere")),
            ("/kind", json!("Service")),
            ("/apiVersion", json!("v2")),
            ("/metadata/uid", json!("x")),
        ] {
            let op =
                serde_json::to_vec(&json!([{"op": "add", "path": path, "value": value}])).unwrap();
            match apply("m.h.e", &pod(), &op) {
                Err(PatchError::Refused(e)) => {
                    assert!(e.message.contains("may not change"), "{}", e.message)
                }
                other => panic!("{path}: {other:?}"),
            }
        }
    }
}
