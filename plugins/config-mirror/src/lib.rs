//! `config-mirror`: a controller written with the SDK's reconcile API
//! ([`herald_sdk::reconcile`]), the shape controller-runtime and kube-rs
//! authors know. A `ConfigMirror` (`herald.example.com/v1`, the CRD in
//! `examples/controllers/config-mirror.yaml`) names a ConfigMap in its own
//! namespace (`spec.source`) and the namespaces to copy it into
//! (`spec.targets`); the controller keeps a copy of the source's data in
//! each, of the mirror's name, applied server-side with the plugin's field
//! manager.
//!
//! - **Watches.** A change of a source ConfigMap reconciles every mirror of
//!   it ([`Controller::watches`], mapped through the cache).
//! - **Finalizer.** Copies live in other namespaces, where owner references
//!   cannot reach, so a finalizer (`herald.example.com/config-mirror`)
//!   deletes them before the mirror goes ([`finalizer`]).
//! - **Status.** A `Ready` condition (`True`/`Synced`, or
//!   `False`/`SourceMissing`) with the mirror's `observedGeneration`,
//!   written only when it changes ([`set_condition`]), so the status write
//!   it makes does not bring another.

use herald_sdk::k8s_openapi::api::core::v1::ConfigMap;
use herald_sdk::k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta, Time};
use herald_sdk::k8s_openapi::{self, NamespaceResourceScope};
use herald_sdk::kube::{Api, DeleteParams};
use herald_sdk::reconcile::{
    Action, Controller, FinalizerEvent, Reconciler, Request, finalizer, set_condition,
};
use herald_sdk::serde_json::json;
use herald_sdk::view::ObjectView;
use herald_sdk::{Error, Manifest, Verb, WriteRule, cache};
use serde::{Deserialize, Serialize};

/// The finalizer that deletes a mirror's copies.
pub const FINALIZER: &str = "herald.example.com/config-mirror";

/// A ConfigMirror, as the CRD defines it.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct ConfigMirror {
    /// Its metadata.
    pub metadata: ObjectMeta,
    /// What to copy, and where.
    pub spec: MirrorSpec,
    /// What the controller observed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<MirrorStatus>,
}

/// `spec`: the source ConfigMap and the target namespaces.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct MirrorSpec {
    /// The ConfigMap in the mirror's namespace to copy.
    pub source: String,
    /// The namespaces to copy it into.
    #[serde(default)]
    pub targets: Vec<String>,
}

/// `status`: the controller's conditions.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MirrorStatus {
    /// `Ready`.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

impl k8s_openapi::Resource for ConfigMirror {
    const API_VERSION: &'static str = "herald.example.com/v1";
    const GROUP: &'static str = "herald.example.com";
    const KIND: &'static str = "ConfigMirror";
    const VERSION: &'static str = "v1";
    const URL_PATH_SEGMENT: &'static str = "configmirrors";
    type Scope = NamespaceResourceScope;
}

impl k8s_openapi::Metadata for ConfigMirror {
    type Ty = ObjectMeta;

    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// The controller; it keeps no state between reconciles.
#[derive(Default)]
pub struct ConfigMirrors;

/// The mirrors of `config_map`: those in its namespace whose source it is.
fn mirrors_of(config_map: &ObjectView<'_>) -> Vec<Request> {
    let namespace = config_map.metadata().namespace();
    let name = config_map.metadata().name();
    cache::list::<ConfigMirror>(namespace, None)
        .unwrap_or_default()
        .into_iter()
        .filter(|mirror| mirror.spec.source == name)
        .filter_map(|mirror| mirror.metadata.name)
        .map(|mirror| Request::new(namespace, mirror))
        .collect()
}

impl Reconciler for ConfigMirrors {
    type Object = ConfigMirror;

    fn controller() -> Controller {
        let manifest = Manifest::new("config-mirror", env!("CARGO_PKG_VERSION"))
            .write(
                WriteRule::new::<ConfigMap>()
                    .verbs([Verb::Apply, Verb::Delete])
                    .all_namespaces(),
            )
            .write(
                WriteRule::new::<ConfigMirror>()
                    .verb(Verb::Patch)
                    .all_namespaces(),
            )
            .write(
                WriteRule::new::<ConfigMirror>()
                    .verb(Verb::Apply)
                    .status()
                    .all_namespaces(),
            );
        Controller::new::<ConfigMirror>(manifest).watches::<ConfigMap>(mirrors_of)
    }

    fn reconcile(
        &mut self,
        _request: &Request,
        mirror: Option<ConfigMirror>,
    ) -> Result<Action, Error> {
        let Some(mirror) = mirror else {
            // Gone: its finalizer saw its copies deleted first.
            return Ok(Action::await_change());
        };
        finalizer(mirror, FINALIZER, |event| match event {
            FinalizerEvent::Apply(mirror) => copy(&mirror),
            FinalizerEvent::Cleanup(mirror) => delete_copies(&mirror),
        })
    }
}

/// The namespace and name of `mirror`.
fn identity(mirror: &ConfigMirror) -> Result<(&str, &str), Error> {
    match (&mirror.metadata.namespace, &mirror.metadata.name) {
        (Some(namespace), Some(name)) => Ok((namespace, name)),
        _ => Err(Error::new("a ConfigMirror without a namespace or name")),
    }
}

/// Copies the source into every target, then records the outcome in the
/// `Ready` condition.
fn copy(mirror: &ConfigMirror) -> Result<Action, Error> {
    let (namespace, name) = identity(mirror)?;
    let source = cache::get::<ConfigMap>(Some(namespace), &mirror.spec.source)
        .map_err(|e| Error::msg(e).context("reading the source ConfigMap"))?;
    let (status, reason, message) = match source {
        None => (
            "False",
            "SourceMissing",
            format!(
                "ConfigMap {namespace}/{} does not exist",
                mirror.spec.source
            ),
        ),
        Some(source) => {
            for target in &mirror.spec.targets {
                let copy = json!({
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {
                        "name": name,
                        "namespace": target,
                        "labels": {"herald.example.com/mirror-of": format!("{namespace}.{name}")},
                    },
                    "data": source.data.clone().unwrap_or_default(),
                });
                Api::<ConfigMap>::namespaced(target.as_str())
                    .apply(name, &copy, true)
                    .map_err(|e| Error::msg(e).context(format_args!("copying into {target}")))?;
            }
            herald_sdk::info!(
                "copied {namespace}/{} into {}",
                mirror.spec.source,
                mirror.spec.targets.join(", ")
            );
            (
                "True",
                "Synced",
                format!(
                    "ConfigMap {namespace}/{} copied into {} namespaces",
                    mirror.spec.source,
                    mirror.spec.targets.len()
                ),
            )
        }
    };
    let mut conditions = mirror
        .status
        .as_ref()
        .map(|s| s.conditions.clone())
        .unwrap_or_default();
    let ready = Condition {
        type_: "Ready".into(),
        status: status.into(),
        reason: reason.into(),
        message,
        observed_generation: mirror.metadata.generation,
        last_transition_time: now()?,
    };
    if set_condition(&mut conditions, ready) {
        let status = json!({
            "apiVersion": "herald.example.com/v1",
            "kind": "ConfigMirror",
            "metadata": {"name": name, "namespace": namespace},
            "status": {"conditions": conditions},
        });
        Api::<ConfigMirror>::namespaced(namespace)
            .apply_status(name, &status, true)
            .map_err(|e| Error::msg(e).context("writing the status"))?;
    }
    Ok(Action::await_change())
}

/// Now, to the second (as Kubernetes writes condition times).
fn now() -> Result<Time, Error> {
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_err(Error::msg)?;
    let seconds = i64::try_from(since_epoch.as_secs()).map_err(Error::msg)?;
    k8s_openapi::jiff::Timestamp::new(seconds, 0)
        .map(Time)
        .map_err(Error::msg)
}

/// Deletes every copy; one already gone is fine.
fn delete_copies(mirror: &ConfigMirror) -> Result<Action, Error> {
    let (_, name) = identity(mirror)?;
    for target in &mirror.spec.targets {
        match Api::<ConfigMap>::namespaced(target.as_str()).delete(name, &DeleteParams::default()) {
            Ok(()) => {}
            Err(e) if e.is_not_found() => {}
            Err(e) => {
                return Err(Error::msg(e).context(format_args!("deleting the copy in {target}")));
            }
        }
    }
    herald_sdk::info!("deleted the copies of {name}");
    Ok(Action::await_change())
}

herald_sdk::export_reconciler!(ConfigMirrors);
