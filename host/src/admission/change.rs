//! What a mutating plugin changes, made a JSON Patch the API server can
//! apply: a patch the plugin wrote is parsed and tried on the object, a
//! changed object is compared with the original; either way the result may
//! not change what the object is (its kind, name, namespace or uid).

use crate::wit::v0_5::exports::herald::plugin0_5_0::admission::Change;
use serde_json::Value;

/// The longest patch a plugin may answer with (the API server holds whole
/// requests to about 3 MiB).
pub const MAX_PATCH_BYTES: usize = 1024 * 1024;

/// Why a plugin's change was refused; answered by its failure policy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChangeError {
    /// A patch that is not a JSON Patch.
    #[error("its change is not a JSON Patch (RFC 6902): {0}")]
    NotAPatch(String),
    /// A changed object that is not JSON.
    #[error("its changed object is not JSON: {0}")]
    NotAnObject(String),
    /// A patch that does not apply to the object.
    #[error("its JSON Patch does not apply to the object: {0}")]
    DoesNotApply(String),
    /// A change to what the object is.
    #[error("its change alters the object's {0}, which admission may not change")]
    Identity(&'static str),
    /// A change with no object to change (a delete).
    #[error("it changes an object on a {0}, which has none to change")]
    NoObject(&'static str),
    /// Too large a patch.
    #[error("its patch is {0} bytes, more than the {MAX_PATCH_BYTES} allowed")]
    TooLarge(usize),
}

/// The JSON Patch that makes `change` to `object` (JSON text), or `None`
/// when it changes nothing. `operation` names the review's operation in a
/// refusal.
pub fn patch_of(
    change: Change,
    object: Option<&str>,
    operation: &'static str,
) -> Result<Option<String>, ChangeError> {
    let text = match &change {
        Change::None => return Ok(None),
        Change::JsonPatch(text) | Change::Object(text) => text,
    };
    if text.len() > MAX_PATCH_BYTES {
        return Err(ChangeError::TooLarge(text.len()));
    }
    let Some(object) = object else {
        return Err(ChangeError::NoObject(operation));
    };
    let original: Value =
        serde_json::from_str(object).map_err(|e| ChangeError::NotAnObject(e.to_string()))?;
    let (patch, changed) = match change {
        Change::None => unreachable!("returned above"),
        Change::JsonPatch(text) => {
            let patch: json_patch::Patch = serde_json::from_str(&text).map_err(|e| {
                ChangeError::NotAPatch(crate::text::escape_controls(&e.to_string()))
            })?;
            let mut changed = original.clone();
            json_patch::patch(&mut changed, &patch).map_err(|e| {
                ChangeError::DoesNotApply(crate::text::escape_controls(&e.to_string()))
            })?;
            (patch, changed)
        }
        Change::Object(text) => {
            let changed: Value =
                serde_json::from_str(&text).map_err(|e| ChangeError::NotAnObject(e.to_string()))?;
            (json_patch::diff(&original, &changed), changed)
        }
    };
    check_identity(&original, &changed)?;
    if patch.0.is_empty() {
        return Ok(None);
    }
    let text = serde_json::to_string(&patch).expect("a patch serializes");
    if text.len() > MAX_PATCH_BYTES {
        return Err(ChangeError::TooLarge(text.len()));
    }
    Ok(Some(text))
}

/// Refuses a change of the object's kind, name, namespace or uid.
fn check_identity(original: &Value, changed: &Value) -> Result<(), ChangeError> {
    const FIELDS: [(&str, &str); 5] = [
        ("/apiVersion", "apiVersion"),
        ("/kind", "kind"),
        ("/metadata/name", "name"),
        ("/metadata/namespace", "namespace"),
        ("/metadata/uid", "uid"),
    ];
    if !changed.is_object() {
        return Err(ChangeError::Identity(
            "whole shape (it is no longer an object)",
        ));
    }
    for (pointer, name) in FIELDS {
        if original.pointer(pointer) != changed.pointer(pointer) {
            return Err(ChangeError::Identity(name));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const POD: &str = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"default"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}"#;

    #[test]
    fn a_json_patch_is_checked_on_the_object_and_sent_as_parsed() {
        let patch = r#"[{"op":"add","path":"/metadata/labels","value":{"team":"a"}}]"#;
        let sent = patch_of(Change::JsonPatch(patch.into()), Some(POD), "CREATE")
            .unwrap()
            .unwrap();
        let sent: Value = serde_json::from_str(&sent).unwrap();
        assert_eq!(sent, serde_json::from_str::<Value>(patch).unwrap());
    }

    #[test]
    fn a_changed_object_becomes_the_patch_that_makes_it() {
        let mut changed: Value = serde_json::from_str(POD).unwrap();
        changed["spec"]["containers"][0]["imagePullPolicy"] = "Always".into();
        let patch = patch_of(Change::Object(changed.to_string()), Some(POD), "CREATE")
            .unwrap()
            .unwrap();
        let patch: json_patch::Patch = serde_json::from_str(&patch).unwrap();
        let mut applied: Value = serde_json::from_str(POD).unwrap();
        json_patch::patch(&mut applied, &patch).unwrap();
        assert_eq!(applied, changed);
        assert_eq!(
            patch_of(Change::Object(POD.into()), Some(POD), "CREATE"),
            Ok(None),
            "the same object is no change"
        );
    }

    #[test]
    fn changes_that_break_the_rules_are_refused() {
        let refuse = |change: Change, object: Option<&str>| {
            patch_of(change, object, "DELETE").unwrap_err().to_string()
        };
        assert!(refuse(Change::JsonPatch("{}".into()), Some(POD)).contains("not a JSON Patch"));
        let missing = r#"[{"op":"replace","path":"/spec/nope/x","value":1}]"#;
        assert!(refuse(Change::JsonPatch(missing.into()), Some(POD)).contains("does not apply"));
        let rename = r#"[{"op":"replace","path":"/metadata/name","value":"other"}]"#;
        assert!(refuse(Change::JsonPatch(rename.into()), Some(POD)).contains("object's name"));
        let move_ns = r#"[{"op":"remove","path":"/metadata/namespace"}]"#;
        assert!(refuse(Change::JsonPatch(move_ns.into()), Some(POD)).contains("namespace"));
        let mut kind: Value = serde_json::from_str(POD).unwrap();
        kind["kind"] = "Secret".into();
        assert!(refuse(Change::Object(kind.to_string()), Some(POD)).contains("object's kind"));
        assert!(refuse(Change::Object("[1]".into()), Some(POD)).contains("no longer an object"));
        assert!(refuse(Change::Object("{".into()), Some(POD)).contains("not JSON"));
        let add = r#"[{"op":"add","path":"/x","value":1}]"#;
        assert!(refuse(Change::JsonPatch(add.into()), None).contains("on a DELETE"));
        let huge = format!(
            r#"[{{"op":"add","path":"/x","value":"{}"}}]"#,
            "a".repeat(MAX_PATCH_BYTES)
        );
        assert!(refuse(Change::JsonPatch(huge), Some(POD)).contains("more than"));
    }
}
