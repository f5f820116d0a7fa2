//! The `admission.k8s.io/v1` `AdmissionReview`: the request a webhook is sent, the checks
//! of its answer (kube-apiserver's `webhook/request/admissionreview.go`,
//! `VerifyAdmissionResponse`) and the `Status` a denial becomes
//! (`webhook/errors/statuserror.go`, `ToStatusErr`).

use base64::Engine;
use serde_json::{Value, json};

use super::matching::Attributes;
use crate::status::ApiError;

/// The user every request of this server is made as (it has no authentication).
pub(crate) const USER: &str = "system:admin";
/// That user's groups.
pub(crate) const GROUPS: [&str; 2] = ["system:masters", "system:authenticated"];

/// The `AdmissionReview` sent for a request, invoked at `version` (the request's own, or
/// another through `matchPolicy: Equivalent`). `object` and `old` are at that version.
pub(crate) fn request(
    uid: &str,
    attrs: &Attributes,
    version: &str,
    object: Option<&Value>,
    old: Option<&Value>,
) -> Value {
    let mut request = json!({
        "uid": uid,
        "kind": {"group": attrs.group, "version": version, "kind": attrs.kind},
        "resource": {"group": attrs.group, "version": version, "resource": attrs.resource},
        "requestKind": {"group": attrs.group, "version": attrs.version, "kind": attrs.kind},
        "requestResource": {"group": attrs.group, "version": attrs.version, "resource": attrs.resource},
        "name": attrs.name,
        "namespace": attrs.namespace,
        "operation": attrs.operation.as_str(),
        "userInfo": {"username": USER, "groups": GROUPS},
        "object": object.cloned().unwrap_or(Value::Null),
        "oldObject": old.cloned().unwrap_or(Value::Null),
        "dryRun": attrs.dry_run,
        "options": attrs.options,
    });
    // Go leaves out empty strings of `omitempty` fields.
    for key in ["name", "namespace"] {
        if request[key] == "" {
            request.as_object_mut().map(|r| r.remove(key));
        }
    }
    if !attrs.subresource.is_empty() {
        request["subResource"] = json!(attrs.subresource);
        request["requestSubResource"] = json!(attrs.subresource);
    }
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": request,
    })
}

/// A webhook's answer, checked.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Response {
    /// `allowed`.
    pub allowed: bool,
    /// The decoded `patch` of a mutating webhook (its type is `JSONPatch`).
    pub patch: Option<Vec<u8>>,
    /// `status`: why it denied.
    pub status: Option<Value>,
    /// `warnings`, to be returned to the client.
    pub warnings: Vec<String>,
}

/// Check an answer as kube-apiserver checks it: the review's kind, its `response`, the
/// `uid` echoed, and a patch only from a mutating webhook, of type `JSONPatch`. The error
/// is the cause after `received invalid webhook response: `.
pub(crate) fn verify(uid: &str, mutating: bool, body: &[u8]) -> Result<Response, String> {
    let review: Value = serde_json::from_slice(body)
        .map_err(|e| format!("the answer is not an AdmissionReview: {e}"))?;
    let response = &review["response"];
    if !response.is_object() {
        return Err("webhook response was absent".into());
    }
    let got = response["uid"].as_str().unwrap_or_default();
    if got != uid {
        return Err(format!("expected response.uid={uid:?}, got {got:?}"));
    }
    let (api_version, kind) = (
        review["apiVersion"].as_str().unwrap_or_default(),
        review["kind"].as_str().unwrap_or_default(),
    );
    if (api_version, kind) != ("admission.k8s.io/v1", "AdmissionReview") {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        return Err(format!(
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got \
             {group}/{version}, Kind={kind}"
        ));
    }
    let patch = match &response["patch"] {
        Value::Null => None,
        Value::String(b64) if b64.is_empty() => None,
        Value::String(b64) => Some(
            base64::engine::general_purpose::STANDARD
                .decode(b64)
                .map_err(|e| format!("response.patch is not base64: {e}"))?,
        ),
        _ => return Err("response.patch is not base64 bytes".into()),
    };
    let patch_type = &response["patchType"];
    if mutating {
        match (&patch, patch_type) {
            (Some(_), Value::Null) => {
                return Err("webhook returned response.patch but not response.patchType".into());
            }
            (None, Value::String(_)) => {
                return Err("webhook returned response.patchType but not response.patch".into());
            }
            (_, Value::String(t)) if t.is_empty() => {
                return Err(format!(
                    "webhook returned invalid response.patchType of {t:?}"
                ));
            }
            (Some(_), Value::String(t)) if t != "JSONPatch" => {
                return Err(format!("unsupported patch type {t:?}"));
            }
            _ => {}
        }
    } else {
        if patch.is_some() {
            return Err("validating webhook may not return response.patch".into());
        }
        if !patch_type.is_null() {
            return Err("validating webhook may not return response.patchType".into());
        }
    }
    let warnings = response["warnings"]
        .as_array()
        .map(|w| {
            w.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    Ok(Response {
        allowed: response["allowed"] == true,
        patch,
        status: response.get("status").filter(|s| s.is_object()).cloned(),
        warnings,
    })
}

/// The error a denial is returned as. Matched to `ToStatusErr` as merged in
/// kubernetes/kubernetes#77022 and unchanged since: the webhook's `status` is returned with
/// its reason and details, a code below 400 (or none) becomes `400`, and the message reads
/// `admission webhook "<name>" denied the request: <message>` (the reason when there is no
/// message, `… denied the request without explanation` when neither). A webhook that
/// means "forbidden" says `code: 403` itself, as controller-runtime's `Denied` does.
pub(crate) fn denial(webhook: &str, status: Option<&Value>) -> ApiError {
    let empty = Value::Null;
    let status = status.unwrap_or(&empty);
    let code = status["code"]
        .as_u64()
        .filter(|c| (400..600).contains(c))
        .unwrap_or(400) as u16;
    let reason = status["reason"].as_str().unwrap_or_default().to_string();
    let denied_by = format!("admission webhook {webhook:?} denied the request");
    let message = match status["message"].as_str().filter(|m| !m.is_empty()) {
        Some(m) => format!("{denied_by}: {m}"),
        None if !reason.is_empty() => format!("{denied_by}: {reason}"),
        None => format!("{denied_by} without explanation"),
    };
    let details = status.get("details").filter(|d| d.is_object()).cloned();
    ApiError::from_webhook(code, reason, message, details)
}

/// A `Warning` header value for `text`, as the real server writes one: code 299, no agent,
/// the text quoted with `"` and `\` escaped (control characters dropped).
pub(crate) fn warning_header(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 10);
    quoted.push_str("299 - \"");
    for c in text.chars() {
        match c {
            '"' | '\\' => {
                quoted.push('\\');
                quoted.push(c);
            }
            c if c.is_control() => {}
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::matching::Operation;

    fn answer(response: Value) -> Vec<u8> {
        serde_json::to_vec(&json!({
            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response
        }))
        .unwrap()
    }

    #[test]
    fn the_uid_must_be_echoed() {
        let err = verify(
            "abc",
            false,
            &answer(json!({"uid": "xyz", "allowed": true})),
        );
        assert_eq!(
            err.unwrap_err(),
            r#"expected response.uid="abc", got "xyz""#
        );
    }

    #[test]
    fn a_validating_webhook_may_not_patch_and_a_mutating_one_must_name_the_type() {
        let patch = base64::engine::general_purpose::STANDARD.encode("[]");
        let body = answer(json!({"uid": "u", "allowed": true, "patch": patch}));
        assert_eq!(
            verify("u", false, &body).unwrap_err(),
            "validating webhook may not return response.patch"
        );
        assert_eq!(
            verify("u", true, &body).unwrap_err(),
            "webhook returned response.patch but not response.patchType"
        );
        let body = answer(
            json!({"uid": "u", "allowed": true, "patch": patch, "patchType": "JSONPatch",
                   "warnings": ["careful"]}),
        );
        let response = verify("u", true, &body).unwrap();
        assert_eq!(response.patch.as_deref(), Some(&b"[]"[..]));
        assert_eq!(response.warnings, ["careful"]);
    }

    #[test]
    fn the_review_kind_is_checked() {
        let body = serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "Status",
            "response": {"uid": "u", "allowed": true}}))
        .unwrap();
        assert!(
            verify("u", false, &body)
                .unwrap_err()
                .starts_with("expected webhook response of admission.k8s.io/v1")
        );
    }

    #[test]
    fn a_denial_keeps_the_webhooks_code_and_raises_codes_below_400() {
        let err = denial(
            "deny.herald.example",
            Some(&json!({"code": 403, "reason": "Forbidden", "message": "no"})),
        );
        assert_eq!((err.code, &*err.reason), (403, "Forbidden"));
        assert_eq!(
            err.message,
            r#"admission webhook "deny.herald.example" denied the request: no"#
        );
        let err = denial("d.h.e", Some(&json!({"code": 200})));
        assert_eq!(err.code, 400);
        assert_eq!(
            err.message,
            r#"admission webhook "d.h.e" denied the request without explanation"#
        );
        let err = denial("d.h.e", Some(&json!({"reason": "NotAllowed"})));
        assert_eq!(
            err.message,
            r#"admission webhook "d.h.e" denied the request: NotAllowed"#
        );
    }

    #[test]
    fn warnings_are_quoted_as_http_warning_values() {
        assert_eq!(warning_header(r#"a "b" \c"#), r#"299 - "a \"b\" \\c""#);
    }

    #[test]
    fn the_request_names_its_subresource_and_leaves_out_an_empty_name() {
        let attrs = Attributes {
            operation: Operation::Create,
            group: String::new(),
            version: "v1".into(),
            resource: "pods".into(),
            subresource: "status".into(),
            kind: "Pod".into(),
            namespace: "shop".into(),
            name: String::new(),
            served_versions: vec!["v1".into()],
            dry_run: true,
            options: json!({"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}),
        };
        let review = request("u1", &attrs, "v1", Some(&json!({"kind": "Pod"})), None);
        let r = &review["request"];
        assert_eq!(r["subResource"], "status");
        assert_eq!(r["requestSubResource"], "status");
        assert!(r.get("name").is_none());
        assert_eq!(r["oldObject"], Value::Null);
        assert_eq!(r["dryRun"], true);
        assert_eq!(r["userInfo"]["username"], USER);
    }
}
