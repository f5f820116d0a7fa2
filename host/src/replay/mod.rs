//! Offline replay: feed recorded events to a plugin, exactly as the daemon
//! would deliver them, and report each result with what the plugin logged;
//! and recorded AdmissionReviews, answered as the daemon would
//! ([`ReviewReplayer`]).

mod events;
mod intents;
mod reviews;

pub use crate::capability::http::replay::{HttpFailure, HttpIntent};
pub use events::{EventParseError, EventType, RecordedEvent, parse_events};
pub use intents::{Intent, ReplayApi, ResponsesError, ScriptedResponse, parse_responses};
pub use reviews::{RecordedReview, ReviewOutcome, ReviewReplayer, ReviewsError, parse_reviews};

use crate::capability::log::{MemorySink, OwnedLogLine};
use crate::capability::metrics::{MetricUpdate, PluginMetrics};
use crate::gvk::Gvk;
use crate::plugin::{
    CallError, Delivery, EventContext, GroupVersionKind, LoadedPlugin, PluginInstance,
};
use crate::store::ObjectReader;
use crate::store::{CachedObject, Store, Transform};
use std::sync::Arc;
use std::time::Duration;

/// The result of delivering one recorded event.
#[derive(Debug, Clone)]
pub struct ReplayOutcome {
    /// Line of the event in its file.
    pub line: usize,
    /// What was delivered.
    pub kind: EventType,
    /// The object's kind.
    pub gvk: Gvk,
    /// The object's key (`namespace/name` or `name`).
    pub key: String,
    /// What happened.
    pub result: DeliveryResult,
    /// What the plugin logged during the call.
    pub logs: Vec<OwnedLogLine>,
    /// The API calls (writes, reads, Events) it made during the call.
    pub intents: Vec<Intent>,
    /// The outbound HTTP requests it made during the call.
    pub http: Vec<HttpIntent>,
    /// The metric updates it made during the call (those the host refused
    /// are in its log, as the daemon logs them).
    pub metrics: Vec<MetricUpdate>,
    /// The handler asked for the notification again after this long, and
    /// how its subscription's delivery treats that.
    pub requeue: Option<(Duration, Delivery)>,
}

/// What happened to one replayed event.
#[derive(Debug, Clone)]
pub enum DeliveryResult {
    /// The handler returned `ok`.
    Ok,
    /// The handler failed or faulted.
    Failed(CallError),
    /// Not delivered: the plugin does not subscribe to this object.
    NotSubscribed,
    /// Not delivered: an update with no `old` and no earlier state of the object.
    NoOldState,
    /// Not delivered: the object cannot be cached (the reason says why).
    BadObject(String),
}

/// Replays events into one instance of a plugin, keeping an in-memory cache
/// (updated before each delivery, as the informer does) for its look-ups.
pub struct Replayer {
    instance: PluginInstance,
    logs: MemorySink,
    metrics: PluginMetrics,
    stores: Vec<Subscribed>,
    api: Option<Arc<ReplayApi>>,
}

/// One subscription's cache in a replay.
struct Subscribed {
    gvk: Gvk,
    namespace: Option<String>,
    delivery: Delivery,
    store: Arc<Store>,
}

impl std::fmt::Debug for Replayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replayer")
            .field("instance", &self.instance)
            .finish()
    }
}

impl Replayer {
    /// Prepares a replay into `plugin`, whose log sink must be `logs`.
    pub fn new(plugin: LoadedPlugin, logs: MemorySink) -> Result<Self, CallError> {
        let stores: Vec<Subscribed> = plugin
            .manifest()
            .subscriptions
            .iter()
            .map(|sub| Subscribed {
                gvk: sub.kind.clone(),
                namespace: sub.namespace.clone(),
                delivery: sub.delivery,
                store: Arc::new(Store::new()),
            })
            .collect();
        plugin.cache_scope().bind(
            stores
                .iter()
                .map(|s| (s.gvk.clone(), s.store.clone() as Arc<dyn ObjectReader>))
                .collect(),
        );
        let metrics = plugin.context().metrics.defined.clone();
        metrics.record_updates();
        let instance = PluginInstance::new(plugin)?;
        Ok(Replayer {
            instance,
            logs,
            metrics,
            stores,
            api: None,
        })
    }

    /// Records the plugin's API calls and outbound HTTP requests into each
    /// outcome, answering reads from the replay's cache: `api` must be the
    /// backend (and offline HTTP answerer) the plugin was loaded with (see
    /// [`ReplayApi`]).
    pub fn record_intents(&mut self, api: Arc<ReplayApi>) {
        api.bind(
            self.stores
                .iter()
                .map(|s| (s.gvk.clone(), s.store.clone()))
                .collect(),
        );
        self.api = Some(api);
    }

    /// Delivers one event, after applying it to the cache as the informer would.
    pub fn deliver(&mut self, event: &RecordedEvent) -> ReplayOutcome {
        let api_version = event
            .object
            .get("apiVersion")
            .and_then(|v| v.as_str())
            .unwrap_or_default();
        let kind = event
            .object
            .get("kind")
            .and_then(|v| v.as_str())
            .unwrap_or_default();
        let gvk = Gvk::from_api_version(api_version, kind);
        let parse = |value: &serde_json::Value| {
            CachedObject::from_json(&value.to_string(), api_version, kind, Transform::default())
        };
        let (object, old) = match (
            parse(&event.object),
            event.old.as_ref().map(parse).transpose(),
        ) {
            (Ok(object), Ok(old)) => (Arc::new(object), old.map(Arc::new)),
            (Err(err), _) | (_, Err(err)) => {
                let outcome = ReplayOutcome {
                    line: event.line,
                    kind: event.kind,
                    gvk,
                    key: String::new(),
                    result: DeliveryResult::BadObject(err.to_string()),
                    logs: Vec::new(),
                    intents: Vec::new(),
                    http: Vec::new(),
                    metrics: Vec::new(),
                    requeue: None,
                };
                return outcome;
            }
        };
        let key = object.key();
        let outcome = |result, logs| ReplayOutcome {
            line: event.line,
            kind: event.kind,
            gvk: gvk.clone(),
            key: key.clone(),
            result,
            logs,
            intents: Vec::new(),
            http: Vec::new(),
            metrics: Vec::new(),
            requeue: None,
        };
        let subscribed = self.stores.iter().find(|s| {
            s.gvk == gvk && (s.namespace.is_none() || s.namespace.as_deref() == object.namespace())
        });
        let Some((store, delivery)) = subscribed.map(|s| (s.store.clone(), s.delivery)) else {
            return outcome(DeliveryResult::NotSubscribed, Vec::new());
        };
        let ctx = EventContext {
            kind: GroupVersionKind {
                group: gvk.group.clone(),
                version: gvk.version.clone(),
                kind: gvk.kind.clone(),
            },
            resource: guess_plural(&gvk.kind),
            key: key.clone(),
            resource_version: object.resource_version().to_owned(),
            is_initial_list: event.initial,
            is_resync: event.resync,
            final_state_unknown: event.final_state_unknown,
        };
        let result = match event.kind {
            EventType::Add => {
                store.upsert(object.clone());
                self.instance.on_add(&ctx, object.json())
            }
            EventType::Update => {
                let previous = store.upsert(object.clone());
                let Some(old) = old.or(previous) else {
                    return outcome(DeliveryResult::NoOldState, Vec::new());
                };
                self.instance.on_update(&ctx, old.json(), object.json())
            }
            EventType::Delete => {
                store.remove(&key);
                self.instance.on_delete(&ctx, object.json())
            }
        };
        let (result, requeue) = match result {
            Ok(handled) => (
                DeliveryResult::Ok,
                handled.requeue_after.map(|after| (after, delivery)),
            ),
            Err(err) => (DeliveryResult::Failed(err), None),
        };
        ReplayOutcome {
            metrics: self.metrics.take_updates(),
            requeue,
            intents: self.api.as_ref().map(|api| api.take()).unwrap_or_default(),
            http: self
                .api
                .as_ref()
                .map(|api| api.take_http())
                .unwrap_or_default(),
            ..outcome(result, self.logs.take())
        }
    }
}

/// The plural resource name of a kind, as kubectl guesses it when discovery is
/// not at hand: `Pod` → `pods`, `Ingress` → `ingresses`, `NetworkPolicy` → `networkpolicies`.
pub fn guess_plural(kind: &str) -> String {
    let lower = kind.to_lowercase();
    if lower.ends_with('s')
        || lower.ends_with("ch")
        || lower.ends_with("sh")
        || lower.ends_with('x')
    {
        format!("{lower}es")
    } else if let Some(stem) = lower
        .strip_suffix('y')
        .filter(|stem| !stem.ends_with(['a', 'e', 'i', 'o', 'u']))
    {
        format!("{stem}ies")
    } else {
        format!("{lower}s")
    }
}

#[cfg(test)]
mod tests {
    use super::guess_plural;

    #[test]
    fn plurals_follow_kubectl_guessing() {
        assert_eq!(guess_plural("Pod"), "pods");
        assert_eq!(guess_plural("Ingress"), "ingresses");
        assert_eq!(guess_plural("NetworkPolicy"), "networkpolicies");
        assert_eq!(guess_plural("Gateway"), "gateways");
    }
}
