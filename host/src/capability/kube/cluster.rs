//! The backend that talks to the cluster: plugins' calls become HTTP
//! requests through the host's kube client (a client of its own that never
//! retries: a 409 or 429 goes back to the plugin, which decides), their
//! kinds resolved through discovery, and the server's `Status` answers
//! sorted into the typed errors a handler acts on.

use super::request::{ApiBackend, ApiRequest, Cause, KubeError, Operation, Propagation};
use crate::api_path::{ApiPath, Query};
use crate::cluster::ClusterName;
use crate::discovery::{ResolveError, Resolver};
use futures::future::BoxFuture;
use herald_grammar::name::{check, object_name_rule};
use http_body_util::BodyExt;
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// The clusters, as plugins reach them: the default one, and any other the
/// daemon watches, each through its own client and discovery; a request
/// goes to the cluster it names.
#[derive(Clone)]
pub struct ClusterApi {
    inner: Arc<Inner>,
    others: Arc<RwLock<BTreeMap<ClusterName, Arc<Inner>>>>,
}

struct Inner {
    client: kube::Client,
    resolver: Resolver,
}

impl std::fmt::Debug for ClusterApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterApi").finish_non_exhaustive()
    }
}

impl ClusterApi {
    /// Sends plugins' calls through `client`, which should not retry on its
    /// own (see [`writer_config`]).
    pub fn new(client: kube::Client) -> Self {
        ClusterApi {
            inner: Arc::new(Inner::new(client)),
            others: Arc::default(),
        }
    }

    /// Forgets the cluster `name`: requests naming it answer `unavailable`.
    pub fn remove_cluster(&self, name: &ClusterName) {
        self.others
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(name);
    }

    /// Sends the requests naming the cluster `name` through `client` (which
    /// should not retry on its own either), from now on.
    pub fn add_cluster(&self, name: ClusterName, client: kube::Client) {
        self.others
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(name, Arc::new(Inner::new(client)));
    }
}

/// `config` for the client of plugins' calls: kube's default retry of 429,
/// 503 and 504 turned off, so the plugin sees what the server said.
pub fn writer_config(mut config: kube::Config) -> kube::Config {
    config.default_retry = false;
    config
}

impl ApiBackend for ClusterApi {
    fn send(&self, request: ApiRequest) -> BoxFuture<'static, Result<String, KubeError>> {
        let inner = match &request.cluster {
            None => Some(self.inner.clone()),
            Some(name) => self
                .others
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .get(name)
                .cloned(),
        };
        Box::pin(async move {
            match inner {
                Some(inner) => inner.send(request).await,
                None => Err(KubeError::Unavailable(format!(
                    "no cluster named {:?} is configured",
                    request.cluster.as_ref().map_or("", ClusterName::as_str)
                ))),
            }
        })
    }
}

impl Inner {
    fn new(client: kube::Client) -> Self {
        Inner {
            resolver: Resolver::new(client.clone()),
            client,
        }
    }

    async fn send(&self, request: ApiRequest) -> Result<String, KubeError> {
        let resource =
            self.resolver
                .resolve(&request.target.gvk)
                .await
                .map_err(|err| match err {
                    ResolveError::UnknownKind(_) => KubeError::NotFound(err.to_string()),
                    ResolveError::Discovery { .. } => KubeError::Unavailable(err.to_string()),
                })?;
        let target = &request.target;
        if resource.namespaced != target.namespace.is_some() {
            return Err(KubeError::Failed {
                code: 400,
                reason: "BadRequest".into(),
                message: if resource.namespaced {
                    format!("{} is namespaced: give a namespace", target.gvk)
                } else {
                    format!("{} is cluster-scoped: give no namespace", target.gvk)
                },
            });
        }
        let collection = resource.path(target.namespace.as_deref());
        let path = match request.operation {
            Operation::Create { .. } => collection,
            _ => {
                // The name, checked by the rule of its resource now that
                // discovery has named the resource.
                let rule = object_name_rule(&resource.gvk.group, &resource.plural);
                check("target.name", &target.name, rule).map_err(super::request::invalid)?;
                let object = collection.object(&target.name);
                match &target.subresource {
                    Some(subresource) => object.subresource(subresource),
                    None => object,
                }
            }
        };
        let http_request = build(&request, path).map_err(|e| KubeError::Failed {
            code: 400,
            reason: "BadRequest".into(),
            message: e.to_string(),
        })?;
        let response = self
            .client
            .send(http_request)
            .await
            .map_err(|e| KubeError::Unavailable(e.to_string()))?;
        let status = response.status();
        let retry_after = response
            .headers()
            .get(http::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| KubeError::Unavailable(format!("reading the answer: {e}")))?
            .to_bytes();
        let text = String::from_utf8_lossy(&body).into_owned();
        if status.is_success() {
            Ok(text)
        } else {
            Err(classify(status.as_u16(), &text, retry_after))
        }
    }
}

/// The HTTP request for `request` at `path`. The query is the host's alone:
/// `dryRun` for a plugin in dry-run, the plugin's own field manager, and
/// `force` for a forced apply; nothing of it comes from the plugin.
fn build(
    request: &ApiRequest,
    path: ApiPath,
) -> Result<http::Request<kube::client::Body>, http::Error> {
    let mut query = Query::new();
    if request.dry_run && request.operation.writes() {
        query = query.pair("dryRun", "All");
    }
    if matches!(
        request.operation,
        Operation::Create { .. }
            | Operation::Replace { .. }
            | Operation::Patch { .. }
            | Operation::Apply { .. }
    ) {
        query = query.pair("fieldManager", &request.field_manager);
    }
    if let Operation::Apply { force: true, .. } = request.operation {
        query = query.pair("force", "true");
    }
    let builder = http::Request::builder().uri(query.with_path(&path));
    let json = "application/json";
    let (builder, body) = match &request.operation {
        Operation::Get => (builder.method(http::Method::GET), Vec::new()),
        Operation::Create { body } => (
            builder
                .method(http::Method::POST)
                .header(http::header::CONTENT_TYPE, json),
            body.clone().into_bytes(),
        ),
        Operation::Replace { body } => (
            builder
                .method(http::Method::PUT)
                .header(http::header::CONTENT_TYPE, json),
            body.clone().into_bytes(),
        ),
        Operation::Patch { patch_type, body } => (
            builder
                .method(http::Method::PATCH)
                .header(http::header::CONTENT_TYPE, patch_type.content_type()),
            body.clone().into_bytes(),
        ),
        Operation::Apply { body, .. } => (
            builder
                .method(http::Method::PATCH)
                .header(http::header::CONTENT_TYPE, "application/apply-patch+yaml"),
            body.clone().into_bytes(),
        ),
        Operation::Delete(options) => {
            let mut delete = serde_json::json!({
                "kind": "DeleteOptions",
                "apiVersion": "v1",
            });
            if options.uid.is_some() || options.resource_version.is_some() {
                delete["preconditions"] = serde_json::json!({
                    "uid": options.uid,
                    "resourceVersion": options.resource_version,
                });
            }
            if let Some(propagation) = options.propagation {
                delete["propagationPolicy"] = serde_json::json!(match propagation {
                    Propagation::Orphan => "Orphan",
                    Propagation::Background => "Background",
                    Propagation::Foreground => "Foreground",
                });
            }
            if request.dry_run {
                delete["dryRun"] = serde_json::json!(["All"]);
            }
            (
                builder
                    .method(http::Method::DELETE)
                    .header(http::header::CONTENT_TYPE, json),
                delete.to_string().into_bytes(),
            )
        }
    };
    builder
        .header(http::header::ACCEPT, json)
        .body(kube::client::Body::from(body))
}

/// Sorts a refusal into the error a handler acts on, by HTTP status and the
/// `Status` reason (client-go's `apierrors.Is…` rules).
pub fn classify(code: u16, body: &str, retry_after: Option<Duration>) -> KubeError {
    let status: kube::core::Status = serde_json::from_str(body)
        .unwrap_or_else(|_| kube::core::Status::failure(body.trim(), "").with_code(code));
    let message = if status.message.is_empty() {
        format!("HTTP {code}")
    } else {
        status.message.clone()
    };
    let reason = status.reason.as_str();
    match (code, reason) {
        (404, _) | (_, "NotFound") => KubeError::NotFound(message),
        (409, "AlreadyExists") | (_, "AlreadyExists") => KubeError::AlreadyExists(message),
        (409, _) | (_, "Conflict") => KubeError::Conflict(message),
        (422, _) | (_, "Invalid") => KubeError::Invalid {
            message,
            causes: status
                .details
                .map(|details| {
                    details
                        .causes
                        .into_iter()
                        .map(|cause| Cause {
                            reason: cause.reason,
                            message: cause.message,
                            field: cause.field,
                        })
                        .collect()
                })
                .unwrap_or_default(),
        },
        (403, _) | (_, "Forbidden") => KubeError::Forbidden(message),
        (429, _) | (_, "TooManyRequests") => KubeError::TooManyRequests {
            message: format!("the API server: {message}"),
            retry_after: retry_after.or_else(|| {
                status
                    .details
                    .as_ref()
                    .map(|d| Duration::from_secs(u64::from(d.retry_after_seconds)))
                    .filter(|d| !d.is_zero())
            }),
        },
        (504, _) | (_, "Timeout") => KubeError::Timeout(message),
        (500..=599, _) | (_, "ServiceUnavailable") | (_, "InternalError") => {
            KubeError::Unavailable(message)
        }
        _ => KubeError::Failed {
            code,
            reason: status.reason,
            message,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_become_the_errors_client_go_would_name() {
        let conflict = r#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"the object has been modified","reason":"Conflict","code":409}"#;
        assert!(
            matches!(classify(409, conflict, None), KubeError::Conflict(m) if m.contains("modified"))
        );
        let exists = r#"{"kind":"Status","status":"Failure","message":"configmaps \"a\" already exists","reason":"AlreadyExists","code":409}"#;
        assert!(matches!(
            classify(409, exists, None),
            KubeError::AlreadyExists(_)
        ));
        let invalid = r#"{"kind":"Status","status":"Failure","message":"bad","reason":"Invalid","code":422,
            "details":{"causes":[{"reason":"FieldValueRequired","message":"Required value","field":"spec.containers"}]}}"#;
        match classify(422, invalid, None) {
            KubeError::Invalid { causes, .. } => assert_eq!(causes[0].field, "spec.containers"),
            other => panic!("{other:?}"),
        }
        let throttled = r#"{"kind":"Status","status":"Failure","message":"slow down","reason":"TooManyRequests","code":429,"details":{"retryAfterSeconds":3}}"#;
        assert_eq!(
            classify(429, throttled, None),
            KubeError::TooManyRequests {
                message: "the API server: slow down".into(),
                retry_after: Some(Duration::from_secs(3)),
            }
        );
        assert!(
            matches!(classify(503, "upstream down", None), KubeError::Unavailable(m) if m == "upstream down")
        );
        assert!(matches!(classify(404, "", None), KubeError::NotFound(_)));
        assert!(matches!(classify(403, "{}", None), KubeError::Forbidden(_)));
        assert!(matches!(classify(504, "{}", None), KubeError::Timeout(_)));
        assert!(matches!(
            classify(415, "{}", None),
            KubeError::Failed { code: 415, .. }
        ));
    }
}
