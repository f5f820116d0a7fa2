//! Kubernetes `Status` error objects with the reasons and codes the real API server uses.

use std::borrow::Cow;

use serde_json::{Value, json};

use crate::registry::ResourceType;

/// An API error, rendered to clients as a `kind: Status` object.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ApiError {
    /// HTTP status code.
    pub code: u16,
    /// Machine-readable reason (`NotFound`, `Conflict`, …; a webhook's denial carries its
    /// own).
    pub reason: Cow<'static, str>,
    /// Human-readable message.
    pub message: String,
    /// `details` object, if any.
    pub details: Option<Value>,
}

impl ApiError {
    fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason: Cow::Borrowed(reason),
            message: message.into(),
            details: None,
        }
    }

    /// The `Status` an admission webhook denied a request with, as the real server returns
    /// it: the webhook's code, reason and details, with the message given.
    pub fn from_webhook(
        code: u16,
        reason: String,
        message: String,
        details: Option<Value>,
    ) -> Self {
        ApiError {
            code,
            reason: Cow::Owned(reason),
            message,
            details,
        }
    }

    fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// `404 NotFound` for a named object of a resource.
    pub fn not_found(rt: &ResourceType, name: &str) -> Self {
        Self::not_found_in(&rt.id.group, &rt.id.plural, name)
    }

    /// `404 NotFound` for a named object given its group and plural resource name.
    pub fn not_found_in(group: &str, plural: &str, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", qualified(group, plural)),
        )
        .with_details(json!({"name": name, "group": group, "kind": plural}))
    }

    /// `404 NotFound` for a path that names nothing the server serves.
    pub fn unknown_path() -> Self {
        Self::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
        .with_details(json!({}))
    }

    /// `409 AlreadyExists`.
    pub fn already_exists(rt: &ResourceType, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", rt.qualified()),
        )
        .with_details(json!({"name": name, "group": rt.id.group, "kind": rt.id.plural}))
    }

    /// `409 Conflict` for a stale `resourceVersion` (or failed precondition).
    pub fn conflict(rt: &ResourceType, name: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; \
                 please apply your changes to the latest version and try again",
                rt.qualified()
            ),
        )
        .with_details(json!({"name": name, "group": rt.id.group, "kind": rt.id.plural}))
    }

    /// `409 Conflict` for a failed delete precondition, saying which.
    pub fn precondition_failed(
        rt: &ResourceType,
        name: &str,
        what: &str,
        wanted: &str,
        actual: &str,
    ) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": Precondition failed: \
                 {what} in precondition: {wanted}, {what} in object meta: {actual}",
                rt.qualified()
            ),
        )
        .with_details(json!({"name": name, "group": rt.id.group, "kind": rt.id.plural}))
    }

    /// `422 Invalid` with one cause on `field`.
    pub fn invalid(rt: &ResourceType, name: &str, field: &str, problem: &str) -> Self {
        Self::invalid_kind(&rt.kind, &rt.id.group, name, field, problem)
    }

    /// `422 Invalid` for a kind given by name; the cause's reason follows from the problem
    /// text (`Required value…` is `FieldValueRequired`, and so on).
    pub fn invalid_kind(kind: &str, group: &str, name: &str, field: &str, problem: &str) -> Self {
        let reason = cause_reason(problem);
        Self::invalid_causes(
            kind,
            group,
            name,
            &[(field.to_string(), reason, problem.to_string())],
        )
    }

    /// `409 Conflict` of a server-side apply: fields other managers own with other values.
    pub fn apply_conflict(conflicts: Vec<crate::apply::Conflict>) -> Self {
        let message = if let [only] = conflicts.as_slice() {
            format!(
                "Apply failed with 1 conflict: {}: {}",
                only.owner, only.field
            )
        } else {
            let mut owners: Vec<&str> = Vec::new();
            for c in &conflicts {
                if !owners.contains(&c.owner.as_str()) {
                    owners.push(&c.owner);
                }
            }
            let groups: Vec<String> = owners
                .iter()
                .map(|o| {
                    let fields: Vec<String> = conflicts
                        .iter()
                        .filter(|c| c.owner == *o)
                        .map(|c| format!("- {}", c.field))
                        .collect();
                    let plural = o.replacen("conflict with", "conflicts with", 1);
                    format!("{plural}:\n{}", fields.join("\n"))
                })
                .collect();
            format!(
                "Apply failed with {} conflicts: {}",
                conflicts.len(),
                groups.join("\n")
            )
        };
        let causes: Vec<Value> = conflicts
            .iter()
            .map(
                |c| json!({"reason": "FieldManagerConflict", "message": c.owner, "field": c.field}),
            )
            .collect();
        // The real server's apply conflicts carry only the causes in their details.
        Self::new(409, "Conflict", message).with_details(json!({"causes": causes}))
    }

    /// `422 Invalid` with several causes, each `(field, reason, problem)` (reasons such as
    /// `FieldValueRequired`, `FieldValueInvalid`, `FieldValueNotSupported`).
    pub fn invalid_causes(
        kind: &str,
        group: &str,
        name: &str,
        causes: &[(String, &'static str, String)],
    ) -> Self {
        let qualified_kind = if group.is_empty() {
            kind.to_string()
        } else {
            format!("{kind}.{group}")
        };
        let parts: Vec<String> = causes.iter().map(|(f, _, p)| format!("{f}: {p}")).collect();
        let summary = if parts.len() == 1 {
            parts[0].clone()
        } else {
            format!("[{}]", parts.join(", "))
        };
        Self::new(
            422,
            "Invalid",
            format!("{qualified_kind} \"{name}\" is invalid: {summary}"),
        )
        .with_details(json!({
            "name": name,
            "group": group,
            "kind": kind,
            "causes": causes.iter().map(|(f, r, p)| json!({"reason": r, "message": p, "field": f})).collect::<Vec<_>>(),
        }))
    }

    /// `400 BadRequest`.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// `410 Expired` (a too old resource version or continue token).
    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    /// `405 MethodNotAllowed`.
    pub fn method_not_allowed() -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )
        .with_details(json!({}))
    }

    /// `405 MethodNotAllowed` for a `verb` on a custom resource whose CRD is
    /// being deleted, in kube-apiserver's words.
    pub fn crd_terminating(verb: &str) -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            format!("{verb} not allowed while custom resource definition is terminating"),
        )
        .with_details(json!({}))
    }

    /// `415 UnsupportedMediaType`.
    pub fn unsupported_media_type(content_type: &str) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format ({content_type}) - accepted \
                 media types include: application/json, application/yaml, \
                 application/json-patch+json, application/merge-patch+json, \
                 application/apply-patch+yaml, application/strategic-merge-patch+json"
            ),
        )
    }

    /// `406 NotAcceptable` as go-restful refuses a built-in kind's request none of whose
    /// `Accept` types its route `produces`.
    pub fn not_acceptable_route(produces: &[String]) -> Self {
        Self::new(
            406,
            "NotAcceptable",
            format!(
                "406: Not Acceptable\n\nAvailable representations: {}",
                produces.join(", ")
            ),
        )
        .with_details(json!({}))
    }

    /// `406 NotAcceptable` of the content negotiation: no type in the request's `Accept` is
    /// one of `accepted`.
    pub fn not_acceptable(accepted: &[String]) -> Self {
        Self::new(
            406,
            "NotAcceptable",
            format!(
                "only the following media types are accepted: {}",
                accepted.join(", ")
            ),
        )
    }

    /// Append a hint to the message.
    pub fn with_hint(mut self, hint: &str) -> Self {
        self.message = format!("{}; {hint}", self.message);
        self
    }

    /// `504 Timeout` for a resource version newer than the server has.
    pub fn too_large_resource_version(requested: u64, current: u64) -> Self {
        Self::new(
            504,
            "Timeout",
            format!("Too large resource version: {requested}, current: {current}"),
        )
        .with_details(json!({"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}], "retryAfterSeconds": 1}))
    }

    /// `403 Forbidden` as kube-apiserver's authorizer answers a user
    /// without the RBAC rule: `user` may not `verb` `resource` (plural) of
    /// `group`, in `namespace` or at the cluster scope.
    pub fn forbidden(
        user: &str,
        verb: &str,
        resource: &str,
        group: &str,
        namespace: Option<&str>,
    ) -> Self {
        let qualified = if group.is_empty() {
            resource.to_owned()
        } else {
            format!("{resource}.{group}")
        };
        let scope = match namespace {
            Some(namespace) => format!("in the namespace \"{namespace}\""),
            None => "at the cluster scope".to_owned(),
        };
        Self::new(
            403,
            "Forbidden",
            format!(
                "{qualified} is forbidden: User \"{user}\" cannot {verb} resource \"{resource}\" \
                 in API group \"{group}\" {scope}"
            ),
        )
        .with_details(json!({"group": group, "kind": resource}))
    }

    /// `429 TooManyRequests`, retry after `seconds`.
    pub fn too_many_requests(seconds: u32) -> Self {
        Self::new(
            429,
            "TooManyRequests",
            "Too many requests, please try again later.",
        )
        .with_details(json!({"retryAfterSeconds": seconds}))
    }

    /// `500 InternalError`.
    pub fn internal(message: impl Into<String>) -> Self {
        let message = message.into();
        Self::new(
            500,
            "InternalError",
            format!("Internal error occurred: {message}"),
        )
        .with_details(json!({"causes": [{"message": message}]}))
    }

    /// The `Status` object for this error.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(details) = &self.details {
            status["details"] = omit_empty(details.clone());
        }
        status
    }
}

/// `StatusDetails` as Go writes them: every field, and every field of a cause, is
/// `omitempty` (a core kind's details have no `group`, as kube-apiserver's show).
fn omit_empty(mut details: Value) -> Value {
    fn prune(map: &mut serde_json::Map<String, Value>) {
        map.retain(|_, v| match v {
            Value::String(s) => !s.is_empty(),
            Value::Number(n) => n.as_i64() != Some(0),
            Value::Array(a) => !a.is_empty(),
            _ => true,
        });
    }
    if let Some(map) = details.as_object_mut() {
        prune(map);
        if let Some(Value::Array(causes)) = map.get_mut("causes") {
            for cause in causes.iter_mut().filter_map(Value::as_object_mut) {
                prune(cause);
            }
        }
    }
    details
}

/// The `StatusCause` reason of a field error, from its text as the real server words it.
pub(crate) fn cause_reason(problem: &str) -> &'static str {
    const REASONS: &[(&str, &str)] = &[
        ("Required value", "FieldValueRequired"),
        ("Unsupported value", "FieldValueNotSupported"),
        ("Forbidden", "FieldValueForbidden"),
        ("Too long", "FieldValueTooLong"),
        ("Too many", "FieldValueTooMany"),
        ("Duplicate value", "FieldValueDuplicate"),
        ("Not found", "FieldValueNotFound"),
    ];
    REASONS
        .iter()
        .find(|(prefix, _)| problem.starts_with(prefix))
        .map_or("FieldValueInvalid", |(_, reason)| reason)
}

/// `plural` or `plural.group`, as the real server prints resources in messages.
pub(crate) fn qualified(group: &str, plural: &str) -> String {
    if group.is_empty() {
        plural.to_string()
    } else {
        format!("{plural}.{group}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_status_has_the_real_servers_shape() {
        let status = ApiError::not_found_in("apps", "deployments", "web").to_status();
        assert_eq!(status["kind"], "Status");
        assert_eq!(status["status"], "Failure");
        assert_eq!(status["code"], 404);
        assert_eq!(status["reason"], "NotFound");
        assert_eq!(status["message"], "deployments.apps \"web\" not found");
        assert_eq!(status["details"]["group"], "apps");
        assert_eq!(status["details"]["kind"], "deployments");
        assert_eq!(status["details"]["name"], "web");
    }

    #[test]
    fn empty_details_are_left_out_as_go_leaves_them_out() {
        let status = ApiError::not_found_in("", "configmaps", "missing").to_status();
        assert_eq!(
            status["details"],
            json!({"name": "missing", "kind": "configmaps"})
        );
        assert_eq!(ApiError::unknown_path().to_status()["details"], json!({}));
    }
}
