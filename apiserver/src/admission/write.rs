//! The write path with admission: a write is proposed, passed through the mutating
//! webhooks, finished and checked by the server as any write, passed through the
//! validating webhooks, and committed; it starts over when the stored object it replaces
//! changed meanwhile. With no webhook configured (or for webhook configurations
//! themselves) a write is done at once, under the store's lock, as before admission.

use std::sync::Arc;

use serde_json::{Value, json};

use super::matching::{Attributes, Operation};
use super::{Chain, Request, WebhookServices, config};
use crate::status::ApiError;
use crate::storage::{DeleteOptions, ListParams, ListResult, Store, Target, Write, WriteOptions};

/// How many times a write whose object keeps changing under it is tried before `409
/// Conflict`.
const ATTEMPTS: usize = 5;

/// Admission for one server: where service references lead.
#[derive(Debug, Clone, Default)]
pub(crate) struct Admission {
    services: WebhookServices,
}

/// What a write was asked as: its target, subresource and options.
pub(crate) struct Asked<'a> {
    /// The resource, version and namespace.
    pub target: &'a Target,
    /// `status`, for a status write.
    pub subresource: Option<&'a str>,
    /// `dryRun=All`.
    pub dry_run: bool,
}

impl Admission {
    /// Admission calling services at the addresses `services` gives.
    pub fn new(services: WebhookServices) -> Self {
        Admission { services }
    }

    /// The webhooks `target`'s writes go through (none for webhook configurations).
    fn chain(store: &Store, target: &Target) -> Option<Chain> {
        if config::is_configuration(&target.rt.id.group, &target.rt.id.plural) {
            return None;
        }
        Some(Chain::load(store)).filter(|c| !c.is_empty())
    }

    fn request<'a>(
        &'a self,
        store: &'a Store,
        asked: &Asked<'_>,
        operation: Operation,
        name: &str,
        options: Value,
    ) -> Request<'a> {
        let target = asked.target;
        let served = target.view.as_ref().unwrap_or(&target.rt);
        let is_namespace = served.id.group.is_empty() && served.id.plural == "namespaces";
        Request {
            attrs: Attributes {
                operation,
                group: served.id.group.clone(),
                version: target.version.clone(),
                resource: served.id.plural.clone(),
                subresource: asked.subresource.unwrap_or_default().to_string(),
                kind: served.kind.clone(),
                // A Namespace's requests carry its own name as their namespace.
                namespace: if is_namespace {
                    name.to_string()
                } else {
                    target.namespace.clone().unwrap_or_default()
                },
                name: name.to_string(),
                served_versions: served.versions.clone(),
                dry_run: asked.dry_run,
                options,
            },
            store,
            services: &self.services,
        }
    }

    /// A create, update or patch through the webhooks; returns the object as served and
    /// whether it was created.
    pub async fn write(
        &self,
        store: &Store,
        asked: &Asked<'_>,
        write: Write<'_>,
        opts: &WriteOptions,
        warnings: &mut Vec<String>,
    ) -> Result<(Arc<Value>, bool), ApiError> {
        let target = asked.target;
        let Some(chain) = Self::chain(store, target) else {
            return write_now(store, target, write, opts);
        };
        for _ in 0..ATTEMPTS {
            let mut proposal = store.propose(target, write.clone(), opts)?;
            let creating = proposal.existing.is_none();
            let (operation, name) = if creating {
                let name = crate::object::name(&proposal.object).unwrap_or_default();
                (Operation::Create, name.to_string())
            } else {
                let existing = proposal.existing.as_ref().expect("an update replaces one");
                let name = crate::object::name(existing).unwrap_or_default();
                (Operation::Update, name.to_string())
            };
            let request = self.request(store, asked, operation, &name, options(operation, opts));
            let old = proposal.existing.clone().map(|e| target.present(e));
            let shown = target.present(Arc::new(proposal.object.clone()));
            let mutated = request
                .mutate(&chain, Some((*shown).clone()), old.as_deref(), warnings)
                .await?
                .expect("a write's object stays an object");
            if mutated != *shown {
                proposal.object = target.ingest(mutated, creating)?;
            }
            let staged = store.stage(target, proposal, opts)?;
            let finished = target.present(Arc::new(staged.object.clone()));
            request
                .validate(&chain, Some(&finished), old.as_deref(), warnings)
                .await?;
            if let Some(stored) = store.commit(target, staged, opts.dry_run)? {
                return Ok((stored, creating));
            }
        }
        Err(too_busy(target, &write))
    }

    /// A delete through the webhooks (which see the stored object as `oldObject`).
    pub async fn delete(
        &self,
        store: &Store,
        asked: &Asked<'_>,
        name: &str,
        opts: &DeleteOptions,
        warnings: &mut Vec<String>,
    ) -> Result<Arc<Value>, ApiError> {
        let Some(chain) = Self::chain(store, asked.target) else {
            return store.delete(asked.target, name, opts);
        };
        self.delete_one(
            &chain,
            store,
            asked,
            name,
            asked.target,
            name,
            opts,
            warnings,
        )
        .await
    }

    /// Delete `name` of `target` once the webhooks allowed it; the review is of the request
    /// `asked`, which named `asked_name` (none for a delete of a collection).
    #[allow(clippy::too_many_arguments)]
    async fn delete_one(
        &self,
        chain: &Chain,
        store: &Store,
        asked: &Asked<'_>,
        asked_name: &str,
        target: &Target,
        name: &str,
        opts: &DeleteOptions,
        warnings: &mut Vec<String>,
    ) -> Result<Arc<Value>, ApiError> {
        for _ in 0..ATTEMPTS {
            let existing = store.get_stored(target, name)?;
            let options = delete_options(opts);
            let request = self.request(store, asked, Operation::Delete, asked_name, options);
            let old = target.present(existing.clone());
            request.mutate(chain, None, Some(&old), warnings).await?;
            request.validate(chain, None, Some(&old), warnings).await?;
            if let Some(gone) = store.delete_unchanged(target, name, opts, &existing)? {
                return Ok(gone);
            }
        }
        Err(ApiError::conflict(&target.rt, name))
    }

    /// A delete of every object a list with `params` returns, each through the webhooks.
    /// As on the real server, each object's review carries the request's namespace and no
    /// name (a delete of a collection names none).
    pub async fn delete_collection(
        &self,
        store: &Store,
        asked: &Asked<'_>,
        params: &ListParams,
        opts: &DeleteOptions,
        warnings: &mut Vec<String>,
    ) -> Result<ListResult, ApiError> {
        let Some(chain) = Self::chain(store, asked.target) else {
            return store.delete_collection(asked.target, params, opts);
        };
        let all = ListParams {
            label: params.label.clone(),
            field: params.field.clone(),
            ..ListParams::default()
        };
        let listed = store.list(asked.target, &all)?;
        let mut deleted = Vec::new();
        for obj in listed.items {
            let name = crate::object::name(&obj).unwrap_or_default().to_string();
            let namespace = crate::object::namespace(&obj)
                .unwrap_or_default()
                .to_string();
            let target = Target {
                namespace: asked.target.rt.namespaced.then_some(namespace),
                ..asked.target.clone()
            };
            match self
                .delete_one(&chain, store, asked, "", &target, &name, opts, warnings)
                .await
            {
                Ok(gone) => deleted.push(gone),
                Err(e) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        Ok(ListResult {
            rv: store.current_rv(),
            items: deleted,
            continue_token: None,
            remaining: None,
        })
    }
}

/// A write done at once, under the store's lock.
fn write_now(
    store: &Store,
    target: &Target,
    write: Write<'_>,
    opts: &WriteOptions,
) -> Result<(Arc<Value>, bool), ApiError> {
    match write {
        Write::Create(obj) => store.create(target, obj, opts).map(|o| (o, true)),
        Write::Update {
            name,
            body,
            status_only,
        } => store
            .update(target, name, body, status_only, opts)
            .map(|o| (o, false)),
        Write::Patch {
            name,
            kind,
            patch,
            status_only,
        } => store.patch(target, name, kind, patch, status_only, opts),
    }
}

/// The `409` of a write whose object kept changing while its webhooks ran.
fn too_busy(target: &Target, write: &Write<'_>) -> ApiError {
    let name = match write {
        Write::Create(obj) => crate::object::name(obj).unwrap_or_default(),
        Write::Update { name, .. } | Write::Patch { name, .. } => name,
    };
    ApiError::conflict(&target.rt, name)
}

/// The `CreateOptions` or `UpdateOptions` a webhook is sent (a patch's are `UpdateOptions`,
/// or `CreateOptions` when an apply creates, as on the real server).
fn options(operation: Operation, opts: &WriteOptions) -> Value {
    let kind = match operation {
        Operation::Create => "CreateOptions",
        _ => "UpdateOptions",
    };
    let mut options = json!({"kind": kind, "apiVersion": "meta.k8s.io/v1"});
    if opts.dry_run {
        options["dryRun"] = json!(["All"]);
    }
    if let Some(manager) = &opts.field_manager {
        options["fieldManager"] = json!(manager);
    }
    options
}

/// The `DeleteOptions` a webhook is sent.
fn delete_options(opts: &DeleteOptions) -> Value {
    let mut options = json!({"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"});
    if opts.dry_run {
        options["dryRun"] = json!(["All"]);
    }
    if let Some(policy) = &opts.propagation {
        options["propagationPolicy"] = json!(policy);
    }
    let mut preconditions = serde_json::Map::new();
    if let Some(uid) = &opts.precondition_uid {
        preconditions.insert("uid".into(), json!(uid));
    }
    if let Some(rv) = &opts.precondition_rv {
        preconditions.insert("resourceVersion".into(), json!(rv));
    }
    if !preconditions.is_empty() {
        options["preconditions"] = Value::Object(preconditions);
    }
    options
}
