//! Admission webhooks (`admissionregistration.k8s.io/v1`), called as kube-apiserver calls
//! them, so that a real admission server can be tested end to end against this server.
//!
//! **What is called, and in what order.** The `MutatingWebhookConfiguration`s and
//! `ValidatingWebhookConfiguration`s stored in the server are read at the start of every
//! write (a change applies to the next request; nothing is cached). Every create, update,
//! patch (server-side apply included) and delete, and every write to a `/status`
//! subresource, goes through:
//!
//! 1. the mutating webhooks, ordered by configuration name and then by their place in
//!    their configuration, one after the other, each sent the object as the previous one
//!    left it (kube-apiserver's order);
//! 2. the server's own checks and finishing (name generation, uid, immutable fields, kind
//!    rules), which a mutated object passes like any other;
//! 3. the validating webhooks, all called at once (as on the real server); when several
//!    refuse, the first in configuration order is returned (the real server returns
//!    whichever answered first);
//! 4. the store, unless the object changed since step 1, in which case the write starts
//!    over (as an update whose object changed under it is retried by the real server).
//!
//! A webhook is called when one of its rules matches (operation, group, version,
//! resource or `resource/subresource`, scope; see [`matching`]), its `namespaceSelector`
//! selects the namespace's labels, and its `objectSelector` the old or new object's.
//! Webhook configurations themselves are never subject to webhooks.
//!
//! **Answers.** A denial is returned with the webhook's status (see [`review::denial`]); a
//! call that fails (unreachable, timed out after `timeoutSeconds`, not TLS-verifiable, a
//! bad answer, a uid not echoed) is a `500` `failed calling webhook "<name>": …` under
//! `failurePolicy: Fail` and is skipped under `Ignore`; `warnings` reach the client as
//! `Warning: 299 - "…"` headers, on success and on refusal alike; a mutating webhook's
//! JSONPatch is applied ([`patch`]).
//!
//! **Left out.** `reinvocationPolicy: IfNeeded` is accepted but no webhook is called twice;
//! `matchConditions` (CEL) are refused when a configuration is written; `v1beta1` reviews
//! are never sent (a webhook whose `admissionReviewVersions` lacks `v1` fails to be
//! called); `CONNECT` never happens (the server serves no connect subresource); objects
//! deleted by a cascade (a namespace's contents, an owner's dependents) are not admitted;
//! `sideEffects` other than `None`/`NoneOnDryRun` cannot be stored (as `v1` refuses them),
//! so the dry-run refusal of such a webhook (kept, as the real server keeps it for
//! configurations carried over from `v1beta1`) is reached only in unit tests;
//! `auditAnnotations` are dropped (there is no audit log).

mod client;
pub(crate) mod config;
pub(crate) mod matching;
mod patch;
pub(crate) mod review;
mod services;
pub(crate) mod write;

use bytes::Bytes;
use serde_json::{Map, Value};
use tokio::task::JoinSet;

use self::config::{FailurePolicy, Webhook};
use self::matching::{Attributes, Operation};
use self::patch::PatchError;
use crate::status::ApiError;
use crate::storage::Store;

pub use services::WebhookServices;
pub(crate) use write::Admission;

/// The webhooks a request may call, as stored when it started.
#[derive(Debug, Default)]
pub(crate) struct Chain {
    mutating: Vec<Webhook>,
    validating: Vec<Webhook>,
}

impl Chain {
    /// The webhooks of every stored configuration, ordered by configuration name, then by
    /// their place in it. A stored configuration that does not read (which a write could
    /// not have stored) is skipped with a warning in the log.
    pub fn load(store: &Store) -> Chain {
        let mut chain = Chain::default();
        for (plural, mutating) in [(config::MUTATING, true), (config::VALIDATING, false)] {
            // Listed in key order: cluster-scoped, so by name.
            for configuration in store.objects_of(config::GROUP, plural) {
                match config::webhooks(&configuration, mutating) {
                    Ok(hooks) if mutating => chain.mutating.extend(hooks),
                    Ok(hooks) => chain.validating.extend(hooks),
                    Err(causes) => tracing::warn!(
                        configuration = crate::object::name(&configuration).unwrap_or_default(),
                        ?causes,
                        "a stored webhook configuration is invalid; its webhooks are not called"
                    ),
                }
            }
        }
        chain
    }

    /// Whether there is no webhook at all.
    pub fn is_empty(&self) -> bool {
        self.mutating.is_empty() && self.validating.is_empty()
    }
}

/// One request passing through the webhooks.
pub(crate) struct Request<'a> {
    /// What it is.
    pub attrs: Attributes,
    /// The objects (for namespaces' labels).
    pub store: &'a Store,
    /// Where service references lead.
    pub services: &'a WebhookServices,
}

/// Why a webhook gave no answer.
#[derive(Debug)]
enum CallError {
    /// Refused before any call, whatever the failure policy (a dry run it cannot take).
    Refused(ApiError),
    /// The call failed: the cause after `failed calling webhook "<name>": `.
    Failed(String),
}

/// The error of a failed call under `failurePolicy: Fail`; nothing under `Ignore`.
fn failed(hook: &Webhook, cause: &str) -> Result<(), ApiError> {
    match hook.failure_policy {
        FailurePolicy::Ignore => {
            tracing::warn!(
                configuration = %hook.configuration,
                webhook = %hook.name,
                %cause,
                "failed calling webhook, failing open"
            );
            Ok(())
        }
        FailurePolicy::Fail => Err(ApiError::internal(format!(
            "failed calling webhook {:?}: {cause}",
            hook.name
        ))),
    }
}

/// `obj` as at `version` of the request's resource (only `apiVersion` differs between the
/// versions of one resource here).
fn at_version(obj: &Value, attrs: &Attributes, version: &str) -> Value {
    let mut obj = obj.clone();
    if version != attrs.version && obj.is_object() {
        obj["apiVersion"] = Value::String(if attrs.group.is_empty() {
            version.to_string()
        } else {
            format!("{}/{version}", attrs.group)
        });
    }
    obj
}

impl Request<'_> {
    /// The labels of the request's namespace: a Namespace's own (as written) when it is
    /// the object created or updated, else the stored namespace's; a missing namespace is
    /// `404`, as on the real server.
    fn namespace_labels(
        &self,
        object: Option<&Value>,
    ) -> Result<Option<Map<String, Value>>, ApiError> {
        let attrs = &self.attrs;
        if attrs.is_namespace()
            && attrs.subresource.is_empty()
            && matches!(attrs.operation, Operation::Create | Operation::Update)
        {
            return Ok(object.and_then(crate::object::labels).cloned());
        }
        let namespace = self
            .store
            .namespace_object(&attrs.namespace)
            .ok_or_else(|| ApiError::not_found_in("", "namespaces", &attrs.namespace))?;
        Ok(crate::object::labels(&namespace).cloned())
    }

    /// The version to call `hook` at, if it is to be called.
    fn should_call(
        &self,
        hook: &Webhook,
        object: Option<&Value>,
        old: Option<&Value>,
    ) -> Result<Option<String>, ApiError> {
        let Some(version) = matching::invocation_version(hook, &self.attrs) else {
            return Ok(None);
        };
        if matching::namespace_selector_applies(hook, &self.attrs) {
            let labels = self.namespace_labels(object)?;
            if !matching::namespace_selected(hook, labels.as_ref()) {
                return Ok(None);
            }
        }
        if !matching::object_selected(&hook.object_selector, object, old) {
            return Ok(None);
        }
        Ok(Some(version))
    }

    /// The review to send `hook` (and its uid), or why it is not sent.
    fn prepare(
        &self,
        hook: &Webhook,
        version: &str,
        object: Option<&Value>,
        old: Option<&Value>,
    ) -> Result<(String, Bytes), CallError> {
        if self.attrs.dry_run && !hook.allows_dry_run() {
            return Err(CallError::Refused(ApiError::bad_request(format!(
                "admission webhook {:?} does not support dry run",
                hook.name
            ))));
        }
        if !hook.review_versions.iter().any(|v| v == "v1") {
            return Err(CallError::Failed(
                "could not create admission objects: webhook does not accept known \
                 AdmissionReview versions (this server sends v1 only)"
                    .into(),
            ));
        }
        let uid = crate::object::new_uid();
        let review = review::request(&uid, &self.attrs, version, object, old);
        let body = serde_json::to_vec(&review).expect("JSON values serialize");
        Ok((uid, Bytes::from(body)))
    }

    /// Run the mutating webhooks over `object` (`None` for a delete); returns the object
    /// as the last of them left it.
    pub async fn mutate(
        &self,
        chain: &Chain,
        mut object: Option<Value>,
        old: Option<&Value>,
        warnings: &mut Vec<String>,
    ) -> Result<Option<Value>, ApiError> {
        for hook in &chain.mutating {
            let Some(version) = self.should_call(hook, object.as_ref(), old)? else {
                continue;
            };
            let shown = object
                .as_ref()
                .map(|o| at_version(o, &self.attrs, &version));
            let old_shown = old.map(|o| at_version(o, &self.attrs, &version));
            let answer = match self.prepare(hook, &version, shown.as_ref(), old_shown.as_ref()) {
                Ok((uid, body)) => call(hook.clone(), self.services.clone(), uid, body, true).await,
                Err(e) => Err(e),
            };
            let answer = match answer {
                Ok(answer) => answer,
                Err(CallError::Refused(e)) => return Err(e),
                Err(CallError::Failed(cause)) => {
                    failed(hook, &cause)?;
                    continue;
                }
            };
            warnings.extend(answer.warnings);
            if !answer.allowed {
                return Err(review::denial(&hook.name, answer.status.as_ref()));
            }
            let Some(ops) = answer.patch.filter(|p| !patch::is_empty(p)) else {
                continue;
            };
            let Some(current) = shown else {
                return Err(ApiError::internal(format!(
                    "admission webhook {:?} attempted to modify the object, which is not \
                     supported for this operation",
                    hook.name
                )));
            };
            match patch::apply(&hook.name, &current, &ops) {
                Ok(patched) => {
                    object = Some(at_version(&patched, &self.attrs, &self.attrs.version));
                }
                Err(PatchError::Undecodable(cause)) => failed(hook, &cause)?,
                Err(PatchError::Refused(e)) => return Err(e),
            }
        }
        Ok(object)
    }

    /// Run the validating webhooks, all at once, over the finished `object` (`None` for a
    /// delete).
    pub async fn validate(
        &self,
        chain: &Chain,
        object: Option<&Value>,
        old: Option<&Value>,
        warnings: &mut Vec<String>,
    ) -> Result<(), ApiError> {
        let mut answers: Vec<Option<Result<review::Response, CallError>>> = Vec::new();
        let mut calls = JoinSet::new();
        for (i, hook) in chain.validating.iter().enumerate() {
            answers.push(None);
            let Some(version) = self.should_call(hook, object, old)? else {
                continue;
            };
            let shown = object.map(|o| at_version(o, &self.attrs, &version));
            let old_shown = old.map(|o| at_version(o, &self.attrs, &version));
            match self.prepare(hook, &version, shown.as_ref(), old_shown.as_ref()) {
                Ok((uid, body)) => {
                    let (hook, services) = (hook.clone(), self.services.clone());
                    calls.spawn(async move { (i, call(hook, services, uid, body, false).await) });
                }
                Err(e) => answers[i] = Some(Err(e)),
            }
        }
        while let Some(joined) = calls.join_next().await {
            match joined {
                Ok((i, answer)) => answers[i] = Some(answer),
                Err(e) => tracing::error!(error = %e, "a webhook call's task failed"),
            }
        }
        let mut refusal = None;
        for (hook, answer) in chain.validating.iter().zip(answers) {
            let outcome = match answer {
                None => Ok(()),
                Some(Ok(answer)) => {
                    warnings.extend(answer.warnings);
                    if answer.allowed {
                        Ok(())
                    } else {
                        Err(review::denial(&hook.name, answer.status.as_ref()))
                    }
                }
                Some(Err(CallError::Refused(e))) => Err(e),
                Some(Err(CallError::Failed(cause))) => failed(hook, &cause),
            };
            if let Err(e) = outcome {
                refusal.get_or_insert(e);
            }
        }
        refusal.map_or(Ok(()), Err)
    }
}

/// Send a prepared review and check the answer.
async fn call(
    hook: Webhook,
    services: WebhookServices,
    uid: String,
    body: Bytes,
    mutating: bool,
) -> Result<review::Response, CallError> {
    let answer = client::post(&hook, &services, body)
        .await
        .map_err(|e| CallError::Failed(format!("failed to call webhook: {e}")))?;
    review::verify(&uid, mutating, &answer)
        .map_err(|e| CallError::Failed(format!("received invalid webhook response: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A webhook whose `sideEffects` is neither `None` nor `NoneOnDryRun` (which only a
    /// configuration carried over from `v1beta1` can have): a dry run refuses it before
    /// any call, with the real server's message, whatever its failure policy.
    #[test]
    fn a_dry_run_refuses_a_webhook_with_side_effects_before_calling_it() {
        let cfg = json!({"metadata": {"name": "c"}, "webhooks": [{
            "name": "effects.herald.example",
            // Nothing listens on port 1: a call would fail, not be refused.
            "clientConfig": {"url": "https://127.0.0.1:1/"},
            "rules": [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}],
            "sideEffects": "None", "admissionReviewVersions": ["v1"], "failurePolicy": "Ignore",
        }]});
        let mut hook = config::webhooks(&cfg, false).unwrap().remove(0);
        hook.side_effects = "Some".into();
        let store = Store::new(10);
        let services = WebhookServices::new();
        let attrs = |dry_run| Attributes {
            operation: Operation::Create,
            group: String::new(),
            version: "v1".into(),
            resource: "configmaps".into(),
            subresource: String::new(),
            kind: "ConfigMap".into(),
            namespace: "default".into(),
            name: "x".into(),
            served_versions: vec!["v1".into()],
            dry_run,
            options: Value::Null,
        };
        let request = Request {
            attrs: attrs(true),
            store: &store,
            services: &services,
        };
        match request.prepare(&hook, "v1", Some(&json!({})), None) {
            Err(CallError::Refused(e)) => {
                assert_eq!((e.code, &*e.reason), (400, "BadRequest"));
                assert_eq!(
                    e.message,
                    r#"admission webhook "effects.herald.example" does not support dry run"#
                );
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
        let request = Request {
            attrs: attrs(false),
            ..request
        };
        assert!(request.prepare(&hook, "v1", Some(&json!({})), None).is_ok());
    }
}
