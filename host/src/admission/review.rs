//! AdmissionReview v1 as the API server sends it and as Herald answers:
//! the request read without copying its objects (they reach the plugin as
//! the JSON text the server wrote), checked field by field, and the
//! response written.

use crate::gvk::Gvk;
use crate::webhook::Operation;
use crate::wit::v0_2::herald::plugin::types::GroupVersionKind;
use crate::wit::v0_5::exports::herald::plugin0_5_0::admission as abi;
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::collections::BTreeMap;

/// The `apiVersion` of the reviews Herald reads and writes.
pub const API_VERSION: &str = "admission.k8s.io/v1";
/// The `kind` of a review.
pub const KIND: &str = "AdmissionReview";

/// Why a request body is not a review Herald can answer; the HTTP answer
/// is 400 with this message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReviewError {
    /// Not JSON, or not the shape of an AdmissionReview.
    #[error("the body is not an AdmissionReview: {0}")]
    Malformed(String),
    /// Another version or kind.
    #[error(
        "the body is a {kind} of {api_version}, not an AdmissionReview of admission.k8s.io/v1 (set admissionReviewVersions: [v1])"
    )]
    Version {
        /// Its `apiVersion`.
        api_version: String,
        /// Its `kind`.
        kind: String,
    },
    /// No `request`.
    #[error("the AdmissionReview has no request")]
    NoRequest,
    /// A field that is missing or breaks its rule.
    #[error("request.{field} {problem}")]
    Field {
        /// The field.
        field: &'static str,
        /// What is wrong with it.
        problem: String,
    },
}

/// A review as the API server wrote it, its objects left as text.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Wire<'a> {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    /// Read once the version is known to be v1.
    #[serde(borrow)]
    request: Option<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireRequest<'a> {
    #[serde(default)]
    uid: String,
    kind: WireGvk,
    resource: WireGvr,
    #[serde(default)]
    sub_resource: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    namespace: String,
    #[serde(default)]
    operation: String,
    #[serde(default)]
    user_info: WireUser,
    #[serde(borrow, default)]
    object: Option<&'a RawValue>,
    #[serde(borrow, default)]
    old_object: Option<&'a RawValue>,
    #[serde(default)]
    dry_run: Option<bool>,
    #[serde(borrow, default)]
    options: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct WireGvk {
    #[serde(default)]
    group: String,
    #[serde(default)]
    version: String,
    #[serde(default)]
    kind: String,
}

#[derive(Deserialize)]
struct WireGvr {
    #[serde(default)]
    resource: String,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct WireUser {
    username: String,
    uid: String,
    groups: Vec<String>,
    extra: BTreeMap<String, Vec<String>>,
}

/// One review, checked: what the plugin is asked, and what the host
/// routes and answers by.
#[derive(Debug, Clone)]
pub struct Review {
    /// The review as the plugin receives it.
    pub call: abi::Review,
    /// Its kind.
    pub kind: Gvk,
    /// Its operation.
    pub operation: Operation,
}

impl Review {
    /// Reads a request body.
    pub fn parse(body: &[u8]) -> Result<Self, ReviewError> {
        let wire: Wire<'_> = serde_json::from_slice(body)
            .map_err(|e| ReviewError::Malformed(crate::text::escape_controls(&e.to_string())))?;
        if wire.api_version != API_VERSION || wire.kind != KIND {
            return Err(ReviewError::Version {
                api_version: crate::text::escape_controls(&wire.api_version),
                kind: crate::text::escape_controls(&wire.kind),
            });
        }
        let request = wire.request.ok_or(ReviewError::NoRequest)?;
        let request: WireRequest<'_> = serde_json::from_str(request.get()).map_err(|e| {
            ReviewError::Malformed(crate::text::escape_controls(&format!("request: {e}")))
        })?;
        if request.uid.is_empty() || request.uid.len() > 128 {
            return Err(field("uid", "must be 1 to 128 characters"));
        }
        let operation = Operation::parse(&request.operation).ok_or_else(|| {
            field(
                "operation",
                format!(
                    "{:?} is not CREATE, UPDATE, DELETE or CONNECT",
                    crate::text::escape_controls(&request.operation)
                ),
            )
        })?;
        let kind = Gvk::new(request.kind.group, request.kind.version, request.kind.kind);
        kind.check("request.kind")
            .map_err(|e| field("kind", e.to_string()))?;
        let object = request.object.map(|raw| raw.get().to_owned());
        let old_object = request.old_object.map(|raw| raw.get().to_owned());
        match operation {
            Operation::Create | Operation::Connect if object.is_none() => {
                return Err(field("object", "is missing"));
            }
            Operation::Update if object.is_none() || old_object.is_none() => {
                return Err(field(
                    "object",
                    "and oldObject are both needed on an UPDATE",
                ));
            }
            _ => {}
        }
        let call = abi::Review {
            uid: request.uid,
            kind: GroupVersionKind {
                group: kind.group.clone(),
                version: kind.version.clone(),
                kind: kind.kind.clone(),
            },
            resource: request.resource.resource,
            subresource: request.sub_resource,
            name: request.name,
            namespace: request.namespace,
            operation: operation.to_abi(),
            user_info: abi::UserInfo {
                username: request.user_info.username,
                uid: request.user_info.uid,
                groups: request.user_info.groups,
                extra: request.user_info.extra.into_iter().collect(),
            },
            object,
            old_object,
            dry_run: request.dry_run.unwrap_or(false),
            options: request
                .options
                .map(|raw| raw.get().to_owned())
                .filter(|text| text != "null"),
        };
        Ok(Review {
            call,
            kind,
            operation,
        })
    }

    /// The subresource written, `None` for the object itself.
    pub fn subresource(&self) -> Option<&str> {
        Some(self.call.subresource.as_str()).filter(|s| !s.is_empty())
    }

    /// The object the decision is about: the new state, or the old one on a
    /// delete.
    pub fn object(&self) -> Option<&str> {
        self.call
            .object
            .as_deref()
            .or(self.call.old_object.as_deref())
    }
}

fn field(field: &'static str, problem: impl Into<String>) -> ReviewError {
    ReviewError::Field {
        field,
        problem: problem.into(),
    }
}

/// What Herald answers a review.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Response {
    /// Whether the write may go ahead.
    pub allowed: bool,
    /// The HTTP status code of a refusal.
    pub code: u16,
    /// Why it was refused.
    pub message: String,
    /// Warnings the user's client prints.
    pub warnings: Vec<String>,
    /// A JSON Patch to apply, as JSON text.
    pub patch: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WireOut<'a> {
    api_version: &'static str,
    kind: &'static str,
    response: WireResponse<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WireResponse<'a> {
    uid: &'a str,
    allowed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<WireStatus<'a>>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    warnings: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    patch_type: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    patch: Option<String>,
}

#[derive(Serialize)]
struct WireStatus<'a> {
    status: &'static str,
    code: u16,
    reason: &'static str,
    message: &'a str,
}

impl Response {
    /// The AdmissionReview answering the review `uid`, as JSON.
    pub fn to_json(&self, uid: &str) -> Vec<u8> {
        let status = (!self.allowed).then(|| WireStatus {
            status: "Failure",
            code: self.code,
            reason: reason(self.code),
            message: &self.message,
        });
        let out = WireOut {
            api_version: API_VERSION,
            kind: KIND,
            response: WireResponse {
                uid,
                allowed: self.allowed,
                status,
                warnings: &self.warnings,
                patch_type: self.patch.as_ref().map(|_| "JSONPatch"),
                patch: self
                    .patch
                    .as_ref()
                    .map(|patch| base64::engine::general_purpose::STANDARD.encode(patch)),
            },
        };
        serde_json::to_vec(&out).expect("a review answer serializes")
    }
}

/// The `reason` Kubernetes gives a status code.
fn reason(code: u16) -> &'static str {
    match code {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        409 => "Conflict",
        422 => "Invalid",
        429 => "TooManyRequests",
        500 => "InternalError",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn review(request: serde_json::Value) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "apiVersion": API_VERSION,
            "kind": KIND,
            "request": request,
        }))
        .unwrap()
    }

    fn create_pod() -> serde_json::Value {
        serde_json::json!({
            "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
            "name": "web",
            "namespace": "default",
            "operation": "CREATE",
            "userInfo": {"username": "alice", "groups": ["dev"], "extra": {"scopes": ["a"]}},
            "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"}},
            "oldObject": null,
            "dryRun": false,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}
        })
    }

    #[test]
    fn a_review_reaches_the_plugin_with_its_object_as_the_server_wrote_it() {
        let parsed = Review::parse(&review(create_pod())).unwrap();
        assert_eq!(parsed.kind, Gvk::new("", "v1", "Pod"));
        assert_eq!(parsed.operation, Operation::Create);
        assert_eq!(
            parsed.call.object.as_deref(),
            Some(r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"}}"#)
        );
        assert_eq!(parsed.call.old_object, None);
        assert_eq!(parsed.call.user_info.username, "alice");
        assert_eq!(
            parsed.call.user_info.extra,
            vec![("scopes".into(), vec!["a".into()])]
        );
        assert_eq!(parsed.call.resource, "pods");
        assert!(parsed.subresource().is_none());
        assert!(parsed.call.options.unwrap().contains("CreateOptions"));
    }

    #[test]
    fn bad_reviews_are_refused_naming_what_is_wrong() {
        let refuse = |body: &[u8]| Review::parse(body).unwrap_err().to_string();
        assert!(refuse(b"{").contains("not an AdmissionReview"));
        assert!(refuse(b"[]").contains("not an AdmissionReview"));
        let v1beta1 = br#"{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview"}"#;
        assert!(refuse(v1beta1).contains("admissionReviewVersions: [v1]"));
        let empty = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#;
        assert_eq!(refuse(empty), "the AdmissionReview has no request");
        let mut no_uid = create_pod();
        no_uid["uid"] = "".into();
        assert!(refuse(&review(no_uid)).contains("request.uid"));
        let mut bad_op = create_pod();
        bad_op["operation"] = "PATCH\u{1b}[31m".into();
        let message = refuse(&review(bad_op));
        assert!(message.contains("request.operation") && !message.contains('\u{1b}'));
        let mut no_object = create_pod();
        no_object["object"] = serde_json::Value::Null;
        assert!(refuse(&review(no_object)).contains("request.object is missing"));
        let mut update = create_pod();
        update["operation"] = "UPDATE".into();
        assert!(refuse(&review(update)).contains("oldObject"));
        let mut bad_kind = create_pod();
        bad_kind["kind"]["kind"] = "Pod/../x".into();
        assert!(refuse(&review(bad_kind)).contains("request.kind"));
    }

    #[test]
    fn a_refusal_carries_its_status_and_a_patch_is_base64_json_patch() {
        let denied = Response {
            allowed: false,
            code: 403,
            message: "image evil.example.com/x:1 is not allowed".into(),
            warnings: vec!["w".into()],
            patch: None,
        };
        let json: serde_json::Value = serde_json::from_slice(&denied.to_json("u1")).unwrap();
        assert_eq!(json["apiVersion"], API_VERSION);
        assert_eq!(json["response"]["uid"], "u1");
        assert_eq!(json["response"]["allowed"], false);
        assert_eq!(json["response"]["status"]["code"], 403);
        assert_eq!(json["response"]["status"]["reason"], "Forbidden");
        assert_eq!(json["response"]["warnings"][0], "w");
        let patched = Response {
            allowed: true,
            patch: Some(r#"[{"op":"add","path":"/metadata/labels","value":{}}]"#.into()),
            ..Response::default()
        };
        let json: serde_json::Value = serde_json::from_slice(&patched.to_json("u2")).unwrap();
        assert!(json["response"].get("status").is_none());
        assert_eq!(json["response"]["patchType"], "JSONPatch");
        let patch = base64::engine::general_purpose::STANDARD
            .decode(json["response"]["patch"].as_str().unwrap())
            .unwrap();
        assert!(
            String::from_utf8(patch)
                .unwrap()
                .starts_with(r#"[{"op":"add""#)
        );
    }
}
