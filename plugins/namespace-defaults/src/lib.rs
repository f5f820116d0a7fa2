//! `namespace-defaults`: gives every selected namespace a default-deny
//! NetworkPolicy and a ResourceQuota, by server-side apply, and repairs them
//! when they drift or are deleted.
//!
//! At the door, with `defaultLabels` set, it also gives each Namespace
//! created the labels it lacks (a mutating admission webhook: a default
//! filled in before the object exists).
//!
//! Level-triggered: whatever the notification (a Namespace added or
//! changed, one of its two objects added, changed or deleted), the plugin
//! compares what it observed with what it wants and applies only on a
//! difference, so a notification that changes nothing writes nothing.

pub mod settings;

use herald_sdk::admission::{AdmissionReview, AdmissionRule, FailurePolicy, Mutation, Webhook};
use herald_sdk::k8s_openapi::api::core::v1::{Namespace, ResourceQuota};
use herald_sdk::k8s_openapi::api::networking::v1::NetworkPolicy;
use herald_sdk::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use herald_sdk::k8s_openapi::{Metadata, NamespaceResourceScope, Resource};
use herald_sdk::kube::{Api, KubeError};
use herald_sdk::serde_json::{Value, json};
use herald_sdk::{
    Error, Event, Handler, Manifest, Subscription, Update, Verb, WriteRule, cache, config,
};

pub use crate::settings::Settings;

/// The label marking the objects this plugin manages.
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "herald.namespace-defaults");

/// Applies and repairs the defaults.
#[derive(Default)]
pub struct NamespaceDefaults {
    /// The operator's settings, read on the first notification.
    settings: Option<Settings>,
}

/// Why an object is being applied: the log line's `reason=`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Why {
    /// A selected Namespace was added or changed, and the object is missing
    /// or differs.
    Namespace,
    /// The object changed away from what the plugin wants.
    Drifted,
    /// The object was deleted.
    Deleted,
}

impl Why {
    fn as_str(self) -> &'static str {
        match self {
            Self::Namespace => "namespace",
            Self::Drifted => "drifted",
            Self::Deleted => "deleted",
        }
    }
}

/// One of the two objects the plugin owns in each namespace.
trait Owned:
    Resource<Scope = NamespaceResourceScope>
    + Metadata<Ty = ObjectMeta>
    + serde::Serialize
    + serde::de::DeserializeOwned
    + Sized
{
    /// Its name in every namespace.
    fn name(settings: &Settings) -> &str;

    /// The object to apply in `namespace`: only the fields the plugin owns.
    fn desired(settings: &Settings, namespace: &str) -> Value;

    /// Whether the fields the plugin owns are as it wants them (the
    /// managed-by label included).
    fn matches(&self, settings: &Settings) -> bool;
}

fn labelled(
    metadata: &herald_sdk::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> bool {
    metadata
        .labels
        .as_ref()
        .and_then(|labels| labels.get(MANAGED_BY.0))
        .is_some_and(|value| value == MANAGED_BY.1)
}

fn metadata(name: &str, namespace: &str) -> Value {
    json!({"name": name, "namespace": namespace, "labels": {MANAGED_BY.0: MANAGED_BY.1}})
}

impl Owned for NetworkPolicy {
    fn name(settings: &Settings) -> &str {
        &settings.network_policy.name
    }

    /// Selects every Pod and allows nothing, in and out. The rule lists are
    /// applied empty so the plugin owns them (they are atomic lists): a rule
    /// someone adds is drift, and the forced apply removes it.
    fn desired(settings: &Settings, namespace: &str) -> Value {
        json!({
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": metadata(Self::name(settings), namespace),
            "spec": {
                "podSelector": {},
                "policyTypes": ["Ingress", "Egress"],
                "ingress": [],
                "egress": [],
            },
        })
    }

    fn matches(&self, _settings: &Settings) -> bool {
        let Some(spec) = &self.spec else {
            return false;
        };
        let selects_all = spec.pod_selector.as_ref().is_none_or(|selector| {
            selector
                .match_labels
                .as_ref()
                .is_none_or(|labels| labels.is_empty())
                && selector
                    .match_expressions
                    .as_ref()
                    .is_none_or(|expressions| expressions.is_empty())
        });
        let mut types: Vec<&str> = spec
            .policy_types
            .iter()
            .flatten()
            .map(String::as_str)
            .collect();
        types.sort_unstable();
        labelled(&self.metadata)
            && selects_all
            && types == ["Egress", "Ingress"]
            && spec.ingress.as_ref().is_none_or(Vec::is_empty)
            && spec.egress.as_ref().is_none_or(Vec::is_empty)
    }
}

impl Owned for ResourceQuota {
    fn name(settings: &Settings) -> &str {
        &settings.resource_quota.name
    }

    fn desired(settings: &Settings, namespace: &str) -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": metadata(Self::name(settings), namespace),
            "spec": {"hard": settings.resource_quota.hard},
        })
    }

    /// Each configured limit is set to its configured value; limits others
    /// added are theirs and left alone.
    fn matches(&self, settings: &Settings) -> bool {
        let hard = self.spec.as_ref().and_then(|spec| spec.hard.as_ref());
        labelled(&self.metadata)
            && settings
                .resource_quota
                .hard
                .iter()
                .all(|(resource, value)| {
                    hard.and_then(|hard| hard.get(resource))
                        .is_some_and(|quantity| quantity.0 == *value)
                })
    }
}

/// Whether a Namespace is being deleted: nothing new may be created in it.
fn terminating(namespace: &Namespace) -> bool {
    namespace.metadata.deletion_timestamp.is_some()
        || namespace
            .status
            .as_ref()
            .and_then(|status| status.phase.as_deref())
            == Some("Terminating")
}

impl NamespaceDefaults {
    fn settings(&mut self) -> Result<Settings, Error> {
        if self.settings.is_none() {
            self.settings = Some(config::get::<Settings>()?.unwrap_or_default());
        }
        Ok(self.settings.clone().unwrap_or_default())
    }

    /// Whether `namespace` should have the defaults: selected (the host's
    /// cache only shows Namespaces matching the subscription's selector), not
    /// excluded, and not being deleted. Decided from the cache.
    fn wanted(settings: &Settings, namespace: &str) -> Result<bool, Error> {
        if settings.excludes(namespace) {
            return Ok(false);
        }
        let cached: Option<Namespace> = cache::get(None, namespace)?;
        Ok(cached.is_some_and(|namespace| !terminating(&namespace)))
    }

    /// Makes `K` in `namespace` what the plugin wants, given the state
    /// observed (`None`: not seen in the cache, so read it from the API
    /// server first; a notification's state otherwise).
    fn ensure<K: Owned>(
        settings: &Settings,
        namespace: &str,
        observed: Option<Option<K>>,
        why: Why,
    ) -> Result<(), Error> {
        let api = Api::<K>::namespaced(namespace);
        let name = K::name(settings);
        let observed = match observed {
            Some(observed) => observed,
            None => match cache::get::<K>(Some(namespace), name)? {
                Some(cached) => Some(cached),
                // Not cached (yet, or the informer has not synced): ask the
                // server rather than write blindly.
                None => match api.get(name) {
                    Ok(current) => Some(current),
                    Err(error) if error.is_not_found() => None,
                    Err(error) => return Self::failed::<K>(namespace, name, why, error),
                },
            },
        };
        if observed.is_some_and(|object| object.matches(settings)) {
            herald_sdk::debug!("unchanged kind={} object={namespace}/{name}", K::KIND);
            return Ok(());
        }
        match api.apply(name, &K::desired(settings, namespace), true) {
            Ok(applied) => {
                herald_sdk::info!(
                    "applied kind={} object={namespace}/{name} reason={} resourceVersion={}",
                    K::KIND,
                    why.as_str(),
                    applied
                        .metadata()
                        .resource_version
                        .as_deref()
                        .unwrap_or("-")
                );
                Ok(())
            }
            Err(error) => Self::failed::<K>(namespace, name, why, error),
        }
    }

    /// Logs a failed call. A retryable failure is returned, so the host
    /// retries the notification with backoff; the others (not granted,
    /// forbidden, invalid, a namespace being deleted) would fail again, so
    /// the notification is done.
    fn failed<K: Owned>(
        namespace: &str,
        name: &str,
        why: Why,
        error: KubeError,
    ) -> Result<(), Error> {
        herald_sdk::warn!(
            "failed kind={} object={namespace}/{name} reason={} outcome={} detail={}",
            K::KIND,
            why.as_str(),
            error.outcome(),
            error
                .message()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        );
        if error.is_retryable() {
            Err(Error::from(error).context(format_args!("applying {} {namespace}/{name}", K::KIND)))
        } else {
            Ok(())
        }
    }

    fn namespace_changed(&mut self, namespace: &Namespace) -> Result<(), Error> {
        let settings = self.settings()?;
        let name = namespace.metadata.name.as_deref().unwrap_or_default();
        if settings.excludes(name) || terminating(namespace) {
            return Ok(());
        }
        let policy = Self::ensure::<NetworkPolicy>(&settings, name, None, Why::Namespace);
        let quota = Self::ensure::<ResourceQuota>(&settings, name, None, Why::Namespace);
        policy.and(quota)
    }

    /// An owned object was added or changed: repair it if it drifted.
    fn owned_changed<K: Owned>(&mut self, object: K) -> Result<(), Error> {
        let settings = self.settings()?;
        let namespace = object.metadata().namespace.clone().unwrap_or_default();
        if object.metadata().name.as_deref() != Some(K::name(&settings))
            || !Self::wanted(&settings, &namespace)?
        {
            return Ok(());
        }
        Self::ensure(&settings, &namespace, Some(Some(object)), Why::Drifted)
    }

    /// An owned object was deleted: put it back.
    fn owned_deleted<K: Owned>(&mut self, object: K) -> Result<(), Error> {
        let settings = self.settings()?;
        let namespace = object.metadata().namespace.clone().unwrap_or_default();
        if object.metadata().name.as_deref() != Some(K::name(&settings))
            || !Self::wanted(&settings, &namespace)?
        {
            return Ok(());
        }
        Self::ensure::<K>(&settings, &namespace, Some(None), Why::Deleted)
    }
}

impl Handler for NamespaceDefaults {
    fn manifest() -> Manifest {
        // A configuration that does not decode is reported by the first
        // notification; the manifest falls back to the defaults.
        let settings: Settings = config::get().ok().flatten().unwrap_or_default();
        let mut namespaces = Subscription::to::<Namespace>().coalesced();
        if let Some(selector) = &settings.namespace_selector {
            namespaces = namespaces.labels(selector);
        }
        let manifest = Manifest::new("namespace-defaults", env!("CARGO_PKG_VERSION"));
        // A Namespace must be creatable while Herald is away: the default
        // labels are a convenience, so a failure lets it through.
        let manifest = if settings.default_labels.is_empty() {
            manifest
        } else {
            manifest.mutating(
                Webhook::new()
                    .rule(AdmissionRule::to::<Namespace>().create())
                    .failure_policy(FailurePolicy::Ignore),
            )
        };
        manifest
            .subscribe(namespaces)
            .subscribe(
                Subscription::to::<NetworkPolicy>()
                    .fields(format!("metadata.name={}", settings.network_policy.name))
                    .coalesced(),
            )
            .subscribe(
                Subscription::to::<ResourceQuota>()
                    .fields(format!("metadata.name={}", settings.resource_quota.name))
                    .coalesced(),
            )
            .write(
                WriteRule::new::<NetworkPolicy>()
                    .verbs([Verb::Get, Verb::Apply])
                    .all_namespaces(),
            )
            .write(
                WriteRule::new::<ResourceQuota>()
                    .verbs([Verb::Get, Verb::Apply])
                    .all_namespaces(),
            )
    }

    fn mutate(&mut self, review: &AdmissionReview) -> Result<Mutation, Error> {
        let settings = self.settings()?;
        let mut namespace: Namespace = review.object()?;
        let name = namespace.metadata.name.clone().unwrap_or_default();
        if settings.excludes(&name) {
            return Ok(Mutation::none());
        }
        let labels = namespace.metadata.labels.get_or_insert_default();
        let mut filled = Vec::new();
        for (key, value) in &settings.default_labels {
            if !labels.contains_key(key) {
                labels.insert(key.clone(), value.clone());
                filled.push(format!("{key}={value}"));
            }
        }
        if filled.is_empty() {
            return Ok(Mutation::none());
        }
        herald_sdk::info!("defaulted namespace={name} labels={}", filled.join(","));
        Mutation::object(&namespace)
    }

    fn on_add(&mut self, event: &Event) -> Result<(), Error> {
        if event.kind().is::<Namespace>() {
            self.namespace_changed(&event.object()?)
        } else if event.kind().is::<NetworkPolicy>() {
            self.owned_changed::<NetworkPolicy>(event.object()?)
        } else if event.kind().is::<ResourceQuota>() {
            self.owned_changed::<ResourceQuota>(event.object()?)
        } else {
            Ok(())
        }
    }

    fn on_update(&mut self, event: &Update) -> Result<(), Error> {
        if event.kind().is::<Namespace>() {
            self.namespace_changed(&event.new()?)
        } else if event.kind().is::<NetworkPolicy>() {
            self.owned_changed::<NetworkPolicy>(event.new()?)
        } else if event.kind().is::<ResourceQuota>() {
            self.owned_changed::<ResourceQuota>(event.new()?)
        } else {
            Ok(())
        }
    }

    fn on_delete(&mut self, event: &Event) -> Result<(), Error> {
        if event.kind().is::<NetworkPolicy>() {
            self.owned_deleted::<NetworkPolicy>(event.object()?)
        } else if event.kind().is::<ResourceQuota>() {
            self.owned_deleted::<ResourceQuota>(event.object()?)
        } else {
            // A Namespace going away takes its objects with it.
            Ok(())
        }
    }
}

herald_sdk::export_plugin!(NamespaceDefaults);

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests;
