//! Blind writes: a write to a kind the plugin may not read (a Secret under
//! a write grant alone, or any kind under `reads.defaultReadable: []`).
//!
//! A write grant is not a read grant, and the API server does not know the
//! difference: asked to, it copies a field into another it validates and
//! quotes the value back in its refusal, tells a JSON Patch `test` whether a
//! guessed value is right, and a real kube-apiserver's patch handler can
//! quote the whole patched object in an error. So, for a blind write:
//!
//! - **What may be sent.** The operations that read the object are refused
//!   before anything is sent ([`check`]): JSON Patch `copy`, `move` and
//!   `test`; strategic merge patch's `$setElementOrder` directives (the
//!   server compares them with the live list); and a server-side apply
//!   without `force`, whose conflicts appear exactly when a field's value
//!   differs from the one another manager set. A JSON Patch is sent as the
//!   host read it (re-encoded), never as the plugin's bytes, so the server
//!   cannot read operations the host did not see.
//! - **What comes back.** Nothing the server wrote ([`withhold`]): an error
//!   keeps its variant, HTTP code, reason, retry time and each cause's
//!   reason and field path, and its messages are replaced by the host's;
//!   a success answers with a receipt naming the object, never its content
//!   (`access.rs`). The audit line, the metrics and the dry-run report (field
//!   paths only, as for a sensitive kind) see the same reduced answer.
//!
//! What stays possible: that a write succeeds, and a refusal's reason and
//! field path, say something of the object's state (whether a key exists
//! for a `remove`, its size against a limit, whether a list already holds an
//! element the plugin names). Values are never quoted.

use super::request::{Cause, KubeError, Operation, PatchType, Target};
use serde_json::Value;

/// The JSON Patch operations that only write what the patch holds.
const WRITING_OPS: [&str; 3] = ["add", "remove", "replace"];

/// The strategic merge patch directive that compares a patch's list with
/// the object's.
const SET_ELEMENT_ORDER: &str = "$setElementOrder/";

/// Checks a blind write before it is sent and returns the operation to
/// send: the plugin's, or its JSON Patch re-encoded as the host read it.
/// A refusal is `invalid`, naming the field of the operation at fault.
pub(crate) fn check(operation: Operation, unreadable: &str) -> Result<Operation, KubeError> {
    match operation {
        Operation::Patch {
            patch_type: PatchType::Json,
            body,
        } => json_patch(&body, unreadable).map(|body| Operation::Patch {
            patch_type: PatchType::Json,
            body,
        }),
        Operation::Patch {
            patch_type: PatchType::Strategic,
            body,
        } => {
            if let Ok(patch) = serde_json::from_str::<Value>(&body)
                && let Some(path) = directive_path(&patch, "body")
            {
                return Err(refused(
                    path,
                    format!(
                        "a $setElementOrder directive compares the patch with the object, which \
                         {unreadable}; nothing was sent"
                    ),
                ));
            }
            Ok(Operation::Patch {
                patch_type: PatchType::Strategic,
                body,
            })
        }
        Operation::Apply { force: false, .. } => Err(refused(
            "force".into(),
            format!(
                "an apply without force conflicts exactly where a value differs from another \
                 manager's, which {unreadable}: apply with force; nothing was sent"
            ),
        )),
        other => Ok(other),
    }
}

/// A JSON Patch for a blind write: a list of objects whose `op` only
/// writes, re-encoded.
fn json_patch(body: &str, unreadable: &str) -> Result<String, KubeError> {
    let not_a_patch = || {
        refused(
            "body".into(),
            "a JSON patch must be a list of operations, each an object with a string \"op\"; \
             nothing was sent"
                .into(),
        )
    };
    let Ok(Value::Array(ops)) = serde_json::from_str::<Value>(body) else {
        return Err(not_a_patch());
    };
    for (index, op) in ops.iter().enumerate() {
        let Some(name) = op.get("op").and_then(Value::as_str) else {
            return Err(not_a_patch());
        };
        if !WRITING_OPS.contains(&name) {
            return Err(refused(
                format!("body[{index}].op"),
                format!(
                    "JSON patch operation {name:?} reads the object, which {unreadable}; only \
                     add, remove and replace may be sent; nothing was sent"
                ),
            ));
        }
    }
    Ok(Value::Array(ops).to_string())
}

/// The path of the first `$setElementOrder/…` key in `value`, if any.
fn directive_path(value: &Value, at: &str) -> Option<String> {
    match value {
        Value::Object(members) => members.iter().find_map(|(key, member)| {
            if key.starts_with(SET_ELEMENT_ORDER) {
                Some(format!("{at}.{key}"))
            } else {
                directive_path(member, &format!("{at}.{key}"))
            }
        }),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(index, item)| directive_path(item, &format!("{at}[{index}]"))),
        _ => None,
    }
}

fn refused(field: String, message: String) -> KubeError {
    KubeError::Invalid {
        message: message.clone(),
        causes: vec![Cause {
            reason: "FieldValueNotSupported".into(),
            message,
            field,
        }],
    }
}

/// The error of a blind write as the plugin, the audit line and the
/// dry-run report may see it: the variant, code, reason, retry time and
/// each cause's reason and field path are kept; every message is the
/// host's, saying what was withheld and why. A reason or field path that
/// is not made of the characters such names use is withheld too.
pub(crate) fn withhold(error: KubeError, verb: &str, target: &Target, why: &str) -> KubeError {
    let message = |what: &str| {
        format!(
            "the API server answered the {verb} of {target} with {what}; its message is \
             withheld: {why}"
        )
    };
    match error {
        KubeError::NotGranted(_) => KubeError::NotGranted(message("not-granted")),
        KubeError::NotFound(_) => KubeError::NotFound(message("not-found")),
        KubeError::AlreadyExists(_) => KubeError::AlreadyExists(message("already-exists")),
        KubeError::Conflict(_) => KubeError::Conflict(message("conflict")),
        KubeError::Invalid { causes, .. } => KubeError::Invalid {
            message: message("invalid"),
            causes: causes
                .into_iter()
                .map(|cause| Cause {
                    reason: reason(&cause.reason),
                    message: "withheld".into(),
                    field: field_path(&cause.field),
                })
                .collect(),
        },
        KubeError::Forbidden(_) => KubeError::Forbidden(message("forbidden")),
        KubeError::TooManyRequests { retry_after, .. } => KubeError::TooManyRequests {
            message: message("too-many-requests"),
            retry_after,
        },
        KubeError::Timeout(_) => KubeError::Timeout(message("timeout")),
        KubeError::Unavailable(_) => KubeError::Unavailable(message("unavailable")),
        KubeError::Failed {
            code, reason: r, ..
        } => KubeError::Failed {
            code,
            reason: reason(&r),
            message: message(&format!("HTTP {code}")),
        },
    }
}

/// A status or cause reason, kept if it is a word such as `FieldValueInvalid`.
fn reason(reason: &str) -> String {
    let word =
        !reason.is_empty() && reason.len() <= 64 && reason.bytes().all(|b| b.is_ascii_alphabetic());
    if word {
        reason.to_owned()
    } else {
        "withheld".into()
    }
}

/// A cause's field path (`data[password]`, `spec.containers[0].image`,
/// `.metadata.labels.app`), kept if it has the characters of one.
fn field_path(field: &str) -> String {
    let path = field.len() <= 256
        && field
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-/[]".contains(&b));
    if path {
        field.to_owned()
    } else {
        "withheld".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gvk::Gvk;

    const WHY: &str = "plugin \"p\" may not read v1/Secret";

    fn secret() -> Target {
        Target {
            gvk: Gvk::new("", "v1", "Secret"),
            namespace: Some("team".into()),
            name: "db".into(),
            subresource: None,
        }
    }

    fn json_patch_of(body: Value) -> Operation {
        Operation::Patch {
            patch_type: PatchType::Json,
            body: body.to_string(),
        }
    }

    fn refused_field(result: Result<Operation, KubeError>) -> String {
        match result {
            Err(KubeError::Invalid { causes, .. }) => causes[0].field.clone(),
            other => panic!("not refused as invalid: {other:?}"),
        }
    }

    #[test]
    fn json_patch_operations_that_read_are_refused_before_anything_is_sent() {
        for op in ["copy", "move", "test"] {
            let patch = serde_json::json!([
                {"op": "add", "path": "/metadata/labels/a", "value": "b"},
                {"op": op, "from": "/data/password", "path": "/metadata/labels/x", "value": "g"},
            ]);
            assert_eq!(
                refused_field(check(json_patch_of(patch), WHY)),
                "body[1].op",
                "{op}"
            );
        }
        for not_a_patch in [
            serde_json::json!({"op": "add"}),
            serde_json::json!([{"path": "/a"}]),
            serde_json::json!([{"op": 1}]),
        ] {
            assert_eq!(
                refused_field(check(json_patch_of(not_a_patch), WHY)),
                "body"
            );
        }
    }

    #[test]
    fn a_json_patch_is_sent_as_the_host_read_it() {
        // Two "op" members: whichever one a server took, it is the one the
        // host checked, since the host sends its own encoding.
        let body = r#"[{"op":"copy","op":"add","path":"/data/a","value":"eA=="}]"#;
        let sent = check(
            Operation::Patch {
                patch_type: PatchType::Json,
                body: body.into(),
            },
            WHY,
        )
        .unwrap();
        assert_eq!(
            sent.body().unwrap(),
            r#"[{"op":"add","path":"/data/a","value":"eA=="}]"#
        );
    }

    #[test]
    fn applies_without_force_and_element_order_directives_are_refused() {
        let apply = |force| Operation::Apply {
            body: "{}".into(),
            force,
        };
        assert_eq!(refused_field(check(apply(false), WHY)), "force");
        assert!(check(apply(true), WHY).is_ok());
        let strategic = |body: Value| Operation::Patch {
            patch_type: PatchType::Strategic,
            body: body.to_string(),
        };
        let ordered = serde_json::json!({"spec": {"$setElementOrder/containers": [{"name": "a"}]}});
        assert_eq!(
            refused_field(check(strategic(ordered), WHY)),
            "body.spec.$setElementOrder/containers"
        );
        let plain = serde_json::json!({"metadata": {"labels": {"a": "b"}}});
        assert!(check(strategic(plain), WHY).is_ok());
        assert!(check(json_patch_of(serde_json::json!([])), WHY).is_ok());
    }

    #[test]
    fn a_withheld_error_keeps_its_shape_and_none_of_the_servers_words() {
        let quoted = KubeError::Invalid {
            message: "Secret \"db\" is invalid: metadata.labels: Invalid value: \"hunter2\"".into(),
            causes: vec![
                Cause {
                    reason: "FieldValueInvalid".into(),
                    message: "Invalid value: \"hunter2\"".into(),
                    field: "metadata.labels".into(),
                },
                Cause {
                    reason: "hunter2 reason".into(),
                    message: "hunter2".into(),
                    field: "data[hunter2 \"x\"]".into(),
                },
            ],
        };
        let withheld = withhold(quoted, "patch", &secret(), WHY);
        assert!(!format!("{withheld:?}").contains("hunter2"), "{withheld:?}");
        let KubeError::Invalid { causes, message } = &withheld else {
            panic!("the variant is kept: {withheld:?}");
        };
        assert!(
            message.contains("withheld") && message.contains(WHY),
            "{message}"
        );
        assert_eq!(causes[0].reason, "FieldValueInvalid");
        assert_eq!(causes[0].field, "metadata.labels");
        assert_eq!(causes[1].field, "withheld");
        let every_variant = [
            KubeError::NotGranted("hunter2".into()),
            KubeError::NotFound("hunter2".into()),
            KubeError::AlreadyExists("hunter2".into()),
            KubeError::Conflict("hunter2".into()),
            KubeError::Forbidden("hunter2".into()),
            KubeError::TooManyRequests {
                message: "hunter2".into(),
                retry_after: Some(std::time::Duration::from_secs(3)),
            },
            KubeError::Timeout("hunter2".into()),
            KubeError::Unavailable("hunter2".into()),
            KubeError::Failed {
                code: 500,
                reason: "InternalError".into(),
                message: "hunter2".into(),
            },
        ];
        for error in every_variant {
            let outcome = error.outcome();
            let withheld = withhold(error, "patch", &secret(), WHY);
            assert_eq!(withheld.outcome(), outcome);
            assert!(!format!("{withheld:?}").contains("hunter2"), "{withheld:?}");
        }
    }
}
