//! An in-process stand-in for the host, for unit-testing plugins on the
//! native target (`cargo test`). Off wasm, the SDK's log, cache, config,
//! [`kube`](crate::kube), [`events`](crate::events),
//! [`metrics`](crate::metrics), [`workqueue`](crate::workqueue) and
//! [`http`](crate::http) calls land here instead of in the host.
//!
//! Metric updates are recorded ([`metric_updates`]) and summed per series
//! ([`metric`], [`metrics`], [`observations`]); [`declare`] makes the test
//! host check them against the manifest's definitions as the host does.
//! Requeue requests are recorded ([`requeues`]). HTTP requests are recorded
//! and answered by [`http`]'s scripted responses.
//!
//! Every `kube` call (reads included) is recorded as a [`KubeCall`]
//! ([`writes`], [`take_writes`]) and every published Event as an
//! [`EventRecord`] ([`events`], [`take_events`]). Calls are answered by
//! the responses scripted with [`respond`] and [`respond_once`]; an
//! unscripted call gets a plain default, never a simulated API server:
//!
//! | call | default answer |
//! |---|---|
//! | get | `NotFound` |
//! | create, replace, apply | the body sent, echoed back (with the `apiVersion`, `kind` and metadata the SDK filled in) |
//! | patch | `{}` (the patch is not applied to anything) |
//! | delete | `Ok(())` |
//! | Event publish | `Ok(())` ([`respond_events`] scripts a failure) |
//!
//! State is per thread (each `#[test]` runs on its own thread); call
//! [`reset`] at the start of a test that reuses a thread.
//!
//! ```
//! use herald_sdk::k8s_openapi::api::core::v1::Pod;
//! use herald_sdk::{testing, Handler};
//!
//! #[derive(Default)]
//! struct Counter(u32);
//!
//! impl Handler for Counter {
//!     fn manifest() -> herald_sdk::Manifest {
//!         herald_sdk::Manifest::new("counter", "1")
//!     }
//!
//!     fn on_add(&mut self, event: &herald_sdk::Event) -> Result<(), herald_sdk::Error> {
//!         self.0 += 1;
//!         herald_sdk::info!("counted key={} total={}", event.key(), self.0);
//!         Ok(())
//!     }
//! }
//!
//! let mut pod = Pod::default();
//! pod.metadata.name = Some("web-0".into());
//! pod.metadata.namespace = Some("shop".into());
//! let mut counter = Counter::default();
//! counter.on_add(&testing::added(&pod)).unwrap();
//! assert_eq!(testing::take_messages(), ["counted key=shop/web-0 total=1"]);
//! ```
//!
//! Scripting the API server and checking what a handler wrote:
//!
//! ```
//! use herald_sdk::k8s_openapi::api::core::v1::ConfigMap;
//! use herald_sdk::kube::{Api, KubeError, Patch, Verb};
//! use herald_sdk::serde_json::json;
//! use herald_sdk::testing;
//!
//! testing::reset();
//! testing::respond(Verb::Get, "shop/settings", Ok(json!({
//!     "apiVersion": "v1", "kind": "ConfigMap",
//!     "metadata": {"name": "settings", "namespace": "shop", "resourceVersion": "7"},
//! })));
//! testing::respond_once(Verb::Patch, "ConfigMap shop/*", Err(KubeError::Conflict("stale".into())));
//!
//! let config_maps = Api::<ConfigMap>::namespaced("shop");
//! assert_eq!(config_maps.get("settings").unwrap().metadata.resource_version.as_deref(), Some("7"));
//! assert!(config_maps.get("other").unwrap_err().is_not_found());
//! let patch = Patch::Merge(json!({"data": {"a": "1"}}));
//! assert!(config_maps.patch("settings", &patch).unwrap_err().is_conflict());
//! assert!(config_maps.patch("settings", &patch).is_ok(), "the conflict was scripted once");
//!
//! let calls = testing::take_writes();
//! assert_eq!(calls.len(), 4);
//! assert_eq!((calls[3].verb, calls[3].target.key()), (Verb::Patch, "shop/settings".to_owned()));
//! assert_eq!(calls[3].body, Some(json!({"data": {"a": "1"}})));
//! ```

use herald_grammar::selector::LabelSelector;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::Resource;
use serde::Serialize;
use serde_json::Value;

use crate::admission::{AdmissionReview, Operation, UserInfo};
pub use crate::events::EventRecord;
use crate::kube::{DeleteParams, KubeError, PatchType, Target, Verb};
use crate::log::Level;
use crate::metrics::{Metric, MetricKind};
pub use crate::metrics::{MetricOp, MetricUpdate};
use crate::{Context, Event, GroupVersionKind, Manifest, Update};

pub mod http;

/// One line a plugin logged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogLine {
    /// Its severity.
    pub level: Level,
    /// Its text.
    pub message: String,
}

/// The default cluster's name in the test host.
const DEFAULT_CLUSTER: &str = "default";

/// Objects of one kind by (namespace, name), holding JSON text.
type Objects = BTreeMap<(Option<String>, String), String>;

#[derive(Default)]
struct TestHost {
    config: Option<String>,
    logs: Vec<LogLine>,
    subscribed: BTreeSet<GroupVersionKind>,
    cache: BTreeMap<GroupVersionKind, Objects>,
    calls: Vec<KubeCall>,
    events: Vec<EventRecord>,
    /// Persistent responses; the last added that matches wins.
    responses: Vec<(Verb, Matcher, Result<Value, KubeError>)>,
    /// One-shot responses, consumed in the order added; checked first.
    once: Vec<(Verb, Matcher, Result<Value, KubeError>)>,
    publish: Option<Result<(), KubeError>>,
    metrics: MetricsHost,
    requeues: Vec<std::time::Duration>,
    /// What `deadline::remaining` answers; `None`: a second.
    remaining: Option<std::time::Duration>,
    /// The clusters the plugin runs on; empty: `default` alone.
    clusters: Vec<String>,
    /// The cluster of the call under way; `None`: the first of `clusters`.
    cluster: Option<String>,
    /// The cluster the plugin targeted, if it did.
    target: Option<String>,
    http: http::Script,
    /// The indexes given to [`declare`].
    indexes: Vec<crate::cache::Index>,
}

/// A metric name and one value per label: one series.
pub type Series = (String, Vec<String>);

/// What the test host keeps of metric updates.
#[derive(Default)]
struct MetricsHost {
    /// Every update made, valid or not.
    updates: Vec<MetricUpdate>,
    /// Counter and gauge values by series, from the accepted updates.
    values: BTreeMap<Series, f64>,
    /// Histogram observations by series, from the accepted updates.
    observations: BTreeMap<Series, Vec<f64>>,
    /// The definitions given to [`declare`]; `None`: nothing checked but
    /// NaN.
    declared: Option<BTreeMap<String, Metric>>,
}

/// How many series a plugin may hold, as the host's default.
const SERIES_LIMIT: usize = 1000;

impl MetricsHost {
    /// Why the host would drop `update`, if it would.
    fn problem(&self, update: &MetricUpdate) -> Option<String> {
        let name = &update.name;
        if update.value.is_nan() {
            return Some(format!("metric {name}: NaN"));
        }
        let declared = self.declared.as_ref()?;
        let Some(metric) = declared.get(name) else {
            return Some(format!("metric {name} is not defined in the manifest"));
        };
        let allowed = match metric.kind {
            MetricKind::Counter => update.op == MetricOp::Add,
            MetricKind::Gauge => matches!(update.op, MetricOp::Add | MetricOp::Set),
            MetricKind::Histogram => update.op == MetricOp::Observe,
        };
        if !allowed {
            return Some(format!(
                "metric {name}: {} on a {}",
                update.op.as_str(),
                metric.kind
            ));
        }
        if update.label_values.len() != metric.label_names.len() {
            return Some(format!(
                "metric {name}: {} label values for {} labels",
                update.label_values.len(),
                metric.label_names.len()
            ));
        }
        if metric.kind == MetricKind::Counter && update.value < 0.0 {
            return Some(format!(
                "metric {name}: a counter cannot go down ({})",
                update.value
            ));
        }
        let series = (name.clone(), update.label_values.clone());
        let known = self.values.contains_key(&series) || self.observations.contains_key(&series);
        if !known && self.values.len() + self.observations.len() >= SERIES_LIMIT {
            return Some(format!(
                "metric {name}: over the limit of {SERIES_LIMIT} series"
            ));
        }
        None
    }
}

/// One call a plugin made through [`kube`](crate::kube), as the test host
/// recorded it.
#[derive(Clone, Debug, PartialEq)]
pub struct KubeCall {
    /// The verb: `Get`, `Create`, `Update` (a replace), `Patch`, `Apply` or
    /// `Delete`.
    pub verb: Verb,
    /// What it was about. For a create: the kind and namespace given, and
    /// the body's `metadata.name` (empty when it only has `generateName`).
    pub target: Target,
    /// The object sent (create, replace, apply) or the patch document
    /// (patch), as JSON; `None` for get and delete.
    pub body: Option<Value>,
    /// A patch's type.
    pub patch_type: Option<PatchType>,
    /// An apply's `force`; `false` for other verbs.
    pub force: bool,
    /// A delete's options.
    pub delete: Option<DeleteParams>,
    /// The cluster it went to (the call's, or the one targeted).
    pub cluster: String,
}

/// Which calls a scripted response answers: by key, optionally by kind and
/// subresource. From a string: `*` (any object), `shop/web` (a key: the
/// object's `namespace/name`, or `name` if cluster-scoped), `shop/*` (`*`
/// matches any run of characters), optionally after a kind name and a space,
/// `NetworkPolicy shop/*`. A string matcher ignores subresources; narrow it
/// with [`Matcher::status`] or [`Matcher::object`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Matcher {
    kind: Option<String>,
    key: String,
    subresource: Option<Option<String>>,
}

impl Matcher {
    /// Every call.
    pub fn any() -> Self {
        Self {
            kind: None,
            key: "*".to_owned(),
            subresource: None,
        }
    }

    /// Only calls about this kind (its `kind` name, e.g. `ConfigMap`).
    pub fn kind(mut self, kind: impl Into<String>) -> Self {
        self.kind = Some(kind.into());
        self
    }

    /// Only calls about the `k8s-openapi` type `K`'s kind.
    pub fn of<K: Resource>(self) -> Self {
        self.kind(K::KIND)
    }

    /// Only calls whose key matches `pattern` (`*` matches any run of
    /// characters).
    pub fn key(mut self, pattern: impl Into<String>) -> Self {
        self.key = pattern.into();
        self
    }

    /// Only calls on the status subresource.
    pub fn status(mut self) -> Self {
        self.subresource = Some(Some("status".to_owned()));
        self
    }

    /// Only calls on the object itself, not a subresource.
    pub fn object(mut self) -> Self {
        self.subresource = Some(None);
        self
    }

    fn matches(&self, target: &Target) -> bool {
        self.kind
            .as_ref()
            .is_none_or(|kind| *kind == target.kind.kind)
            && self
                .subresource
                .as_ref()
                .is_none_or(|subresource| *subresource == target.subresource)
            && glob(&self.key, &target.key())
    }
}

impl From<&str> for Matcher {
    fn from(pattern: &str) -> Self {
        match pattern.trim().split_once(' ') {
            Some((kind, key)) => Self::any().kind(kind).key(key.trim()),
            None => Self::any().key(pattern.trim()),
        }
    }
}

impl From<String> for Matcher {
    fn from(pattern: String) -> Self {
        Self::from(pattern.as_str())
    }
}

/// Whether `text` matches `pattern`, where `*` matches any run of characters.
fn glob(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.ends_with(last)
}

thread_local! {
    static HOST: RefCell<TestHost> = RefCell::default();
}

fn with_host<R>(f: impl FnOnce(&mut TestHost) -> R) -> R {
    HOST.with(|host| f(&mut host.borrow_mut()))
}

/// Forgets this thread's configuration, logs, cache, recorded calls,
/// Events, metric updates, requeues and HTTP requests, declared metrics and
/// scripted responses.
pub fn reset() {
    with_host(|host| *host = TestHost::default());
}

/// Answers every later `verb` call matching `matcher` with `response` (for
/// a delete, any `Ok` means `Ok(())`). When several responses match, the one
/// added last wins; [`respond_once`] responses come first.
pub fn respond(verb: Verb, matcher: impl Into<Matcher>, response: Result<Value, KubeError>) {
    with_host(|host| host.responses.push((verb, matcher.into(), response)));
}

/// Answers the next `verb` call matching `matcher` with `response`, once.
/// One-shot responses are used in the order they were added, before any
/// [`respond`] response: script a conflict, then a success.
pub fn respond_once(verb: Verb, matcher: impl Into<Matcher>, response: Result<Value, KubeError>) {
    with_host(|host| host.once.push((verb, matcher.into(), response)));
}

/// Answers every later Event publish with `result` (by default `Ok(())`).
pub fn respond_events(result: Result<(), KubeError>) {
    with_host(|host| host.publish = Some(result));
}

/// Every `kube` call made since the last [`take_writes`] (reads included),
/// in order, kept.
pub fn writes() -> Vec<KubeCall> {
    with_host(|host| host.calls.clone())
}

/// Every `kube` call made since the last take (reads included), removed.
pub fn take_writes() -> Vec<KubeCall> {
    with_host(|host| std::mem::take(&mut host.calls))
}

/// Every Event published since the last [`take_events`], in order, kept.
pub fn events() -> Vec<EventRecord> {
    with_host(|host| host.events.clone())
}

/// Every Event published since the last take, removed.
pub fn take_events() -> Vec<EventRecord> {
    with_host(|host| std::mem::take(&mut host.events))
}

/// Declares the manifest's subscriptions, metrics and indexes to the test
/// host: from now on the kinds it subscribes to are visible to cache
/// look-ups (empty until [`cache_insert`]),
/// [`cache::by_index`](crate::cache::by_index) looks up its indexes (an
/// index not declared is unknown, as on the host), and it checks every
/// metric update as the host does, and drops (records but does not count)
/// and logs as a warning one the host would drop: a metric not defined, an
/// update of the wrong kind (`set` on a counter, `observe` on a gauge, …),
/// the wrong number of label values, a negative counter increment, NaN, a
/// series over the limit of 1,000.
///
/// # Panics
///
/// When a definition breaks a rule that would stop the host from loading
/// the plugin ([`Metric::problem`]), a name is defined twice, or an index
/// is of a kind the manifest does not subscribe to.
///
/// ```
/// use herald_sdk::metrics::{self, Metric};
/// use herald_sdk::{Manifest, testing};
///
/// testing::reset();
/// testing::declare(&Manifest::new("m", "1").metric(Metric::counter("alerts_total", "Alerts").labels(["namespace"])));
/// metrics::counter("alerts_total").with(&["shop"]).inc();
/// metrics::counter("alerts_total").inc(); // no label value: dropped
/// assert_eq!(testing::metric("alerts_total", &["shop"]), Some(1.0));
/// assert_eq!(testing::metric("alerts_total", &[]), None);
/// assert_eq!(testing::metric_updates().len(), 2);
/// assert_eq!(testing::take_messages(), ["metric update dropped: metric alerts_total: 0 label values for 1 labels"]);
/// ```
pub fn declare(manifest: &Manifest) {
    let mut declared = BTreeMap::new();
    for metric in &manifest.metrics {
        if let Some(problem) = metric.problem() {
            panic!("the host would not load this plugin: {problem}");
        }
        let name = metric.name.clone();
        assert!(
            declared.insert(name.clone(), metric.clone()).is_none(),
            "the host would not load this plugin: metric {name} is defined twice"
        );
    }
    let mut indexes: Vec<crate::cache::Index> = Vec::new();
    for index in &manifest.indexes {
        assert!(
            manifest.subscriptions.iter().any(|s| s.kind == index.kind),
            "the host would not load this plugin: index {:?} is of {}, which it does not subscribe to",
            index.name,
            index.kind
        );
        assert!(
            !indexes.iter().any(|i| i.name == index.name),
            "the host would not load this plugin: index {:?} is declared twice",
            index.name
        );
        indexes.push(index.clone());
    }
    with_host(|host| {
        host.metrics.declared = Some(declared);
        host.indexes = indexes;
        host.subscribed
            .extend(manifest.subscriptions.iter().map(|s| s.kind.clone()));
    });
}

/// Every metric update made since the last [`take_metric_updates`], in
/// order, kept (those dropped as invalid included).
pub fn metric_updates() -> Vec<MetricUpdate> {
    with_host(|host| host.metrics.updates.clone())
}

/// Every metric update made since the last take, removed. The values
/// ([`metric`], [`metrics`], [`observations`]) are kept.
pub fn take_metric_updates() -> Vec<MetricUpdate> {
    with_host(|host| std::mem::take(&mut host.metrics.updates))
}

/// Every counter and gauge series with its value: increments summed, a
/// `set` replacing what was there.
pub fn metrics() -> BTreeMap<Series, f64> {
    with_host(|host| host.metrics.values.clone())
}

/// The value of the counter or gauge series `name{label_values}`, or `None`
/// if it was never updated.
pub fn metric(name: &str, label_values: &[&str]) -> Option<f64> {
    with_host(|host| {
        host.metrics
            .values
            .get(&series(name, label_values))
            .copied()
    })
}

/// The observations made in the histogram series `name{label_values}`, in
/// order.
pub fn observations(name: &str, label_values: &[&str]) -> Vec<f64> {
    with_host(|host| {
        host.metrics
            .observations
            .get(&series(name, label_values))
            .cloned()
            .unwrap_or_default()
    })
}

fn series(name: &str, label_values: &[&str]) -> Series {
    (
        name.to_owned(),
        label_values
            .iter()
            .map(|value| (*value).to_owned())
            .collect(),
    )
}

/// Every [`requeue_after`](crate::workqueue::requeue_after) request since
/// the last [`take_requeues`], in order, kept. The host honours the last
/// one of a call.
pub fn requeues() -> Vec<std::time::Duration> {
    with_host(|host| host.requeues.clone())
}

/// Every requeue request since the last take, removed.
pub fn take_requeues() -> Vec<std::time::Duration> {
    with_host(|host| std::mem::take(&mut host.requeues))
}

/// Sets what [`deadline::remaining`](crate::deadline::remaining) answers
/// from now on (a second until set), to test a handler that shortens its
/// work when time runs out.
pub fn set_deadline_remaining(remaining: std::time::Duration) {
    with_host(|host| host.remaining = Some(remaining));
}

/// The clusters the plugin runs on, as [`cluster::names`](crate::cluster::names)
/// answers (`default` alone until set); the first is the call's cluster
/// until [`set_cluster`] says otherwise.
pub fn set_clusters<S: Into<String>>(names: impl IntoIterator<Item = S>) {
    with_host(|host| host.clusters = names.into_iter().map(Into::into).collect());
}

/// Makes `name` the cluster of the calls that follow, as the host does for
/// each notification (and ends any target the plugin set): what
/// [`cluster::current`](crate::cluster::current) answers, and where the
/// recorded [`KubeCall`]s say they went.
pub fn set_cluster(name: impl Into<String>) {
    with_host(|host| {
        host.cluster = Some(name.into());
        host.target = None;
    });
}

/// Sets the configuration `config::get` returns (JSON text).
pub fn set_config(json: impl Into<String>) {
    with_host(|host| host.config = Some(json.into()));
}

/// Removes the configuration: `config::get` returns `None`.
pub fn clear_config() {
    with_host(|host| host.config = None);
}

/// Every line logged since the last [`take_logs`], removed.
pub fn take_logs() -> Vec<LogLine> {
    with_host(|host| std::mem::take(&mut host.logs))
}

/// The text of every line logged since the last take, removed.
pub fn take_messages() -> Vec<String> {
    take_logs().into_iter().map(|line| line.message).collect()
}

/// Makes `kind` visible to cache look-ups, as subscribing to it would.
/// Kinds never subscribed to fail with `CacheError::NotSubscribed`.
pub fn subscribe(kind: GroupVersionKind) {
    with_host(|host| host.subscribed.insert(kind));
}

/// Puts `object` in the cache (replacing one with the same namespace and
/// name) and subscribes to its kind.
pub fn cache_insert<K: Resource + Serialize>(object: &K) {
    cache_insert_json(GroupVersionKind::of::<K>(), to_json(object));
}

/// Puts an object given as JSON text in the cache under `kind`, keyed by its
/// `metadata.namespace` and `metadata.name`, and subscribes to `kind`.
pub fn cache_insert_json(kind: GroupVersionKind, json: impl Into<String>) {
    let json = json.into();
    let (namespace, name, _) = identity(&json);
    with_host(|host| {
        host.subscribed.insert(kind.clone());
        host.cache
            .entry(kind)
            .or_default()
            .insert((namespace, name), json);
    });
}

/// Removes `namespace/name` of type `K` from the cache.
pub fn cache_remove<K: Resource>(namespace: Option<&str>, name: &str) {
    with_host(|host| {
        if let Some(objects) = host.cache.get_mut(&GroupVersionKind::of::<K>()) {
            objects.remove(&(namespace.map(str::to_owned), name.to_owned()));
        }
    });
}

/// The context the host would send with `object`: its kind, resource, key
/// and resource version; no flags set.
pub fn context_for<K: Resource + Serialize>(object: &K) -> Context {
    context_for_json(
        GroupVersionKind::of::<K>(),
        K::URL_PATH_SEGMENT,
        &to_json(object),
    )
}

/// The context the host would send with an object given as JSON text.
pub fn context_for_json(kind: GroupVersionKind, resource: &str, json: &str) -> Context {
    let (namespace, name, resource_version) = identity(json);
    Context {
        kind,
        resource: resource.to_owned(),
        key: namespace.map_or_else(|| name.clone(), |namespace| format!("{namespace}/{name}")),
        resource_version,
        is_initial_list: false,
        is_resync: false,
        final_state_unknown: false,
    }
}

/// The event `on_add` would receive for `object`.
pub fn added<K: Resource + Serialize>(object: &K) -> Event {
    Event::from_parts(context_for(object), to_json(object))
}

/// The event `on_update` would receive for a change from `old` to `new`.
pub fn updated<K: Resource + Serialize>(old: &K, new: &K) -> Update {
    Update::from_parts(context_for(new), to_json(old), to_json(new))
}

/// The event `on_delete` would receive for `object`.
pub fn deleted<K: Resource + Serialize>(object: &K) -> Event {
    Event::from_parts(context_for(object), to_json(object))
}

/// The review the API server sends when `object` is created, by user
/// `admin` (for [`Handler::validate`](crate::Handler::validate) and
/// [`Handler::mutate`](crate::Handler::mutate)).
pub fn creating<K: Resource + Serialize>(object: &K) -> AdmissionReview {
    review::<K>(Operation::Create, Some(to_json(object)), None)
}

/// The review of an update from `old` to `new`.
pub fn updating<K: Resource + Serialize>(old: &K, new: &K) -> AdmissionReview {
    review::<K>(Operation::Update, Some(to_json(new)), Some(to_json(old)))
}

/// The review of the deletion of `object`.
pub fn deleting<K: Resource + Serialize>(object: &K) -> AdmissionReview {
    review::<K>(Operation::Delete, None, Some(to_json(object)))
}

fn review<K: Resource>(
    operation: Operation,
    object: Option<String>,
    old_object: Option<String>,
) -> AdmissionReview {
    let (namespace, name, _) =
        identity(object.as_deref().or(old_object.as_deref()).unwrap_or("{}"));
    AdmissionReview {
        uid: "00000000-0000-0000-0000-000000000001".into(),
        kind: GroupVersionKind::of::<K>(),
        resource: K::URL_PATH_SEGMENT.into(),
        subresource: String::new(),
        name,
        namespace: namespace.unwrap_or_default(),
        operation,
        user_info: UserInfo {
            username: "admin".into(),
            ..UserInfo::default()
        },
        object_json: object,
        old_object_json: old_object,
        dry_run: false,
        options_json: None,
    }
}

/// The add replaying `object` to a plugin that joined after the informer
/// synced ([`Event::is_initial_list`] set).
pub fn listed<K: Resource + Serialize>(object: &K) -> Event {
    let context = Context {
        is_initial_list: true,
        ..context_for(object)
    };
    Event::from_parts(context, to_json(object))
}

/// The periodic resync update for `object` ([`Update::is_resync`] set, old
/// and new equal).
pub fn resynced<K: Resource + Serialize>(object: &K) -> Update {
    let context = Context {
        is_resync: true,
        ..context_for(object)
    };
    Update::from_parts(context, to_json(object), to_json(object))
}

/// The delete inferred from a relist, `object` being the last known state
/// ([`Event::final_state_unknown`] set).
pub fn vanished<K: Resource + Serialize>(object: &K) -> Event {
    let context = Context {
        final_state_unknown: true,
        ..context_for(object)
    };
    Event::from_parts(context, to_json(object))
}

fn to_json<K: Serialize>(object: &K) -> String {
    serde_json::to_string(object).expect("a Kubernetes object serializes to JSON")
}

/// `metadata.namespace`, `metadata.name` and `metadata.resourceVersion`.
fn identity(json: &str) -> (Option<String>, String, String) {
    let value: Value = serde_json::from_str(json).expect("test objects must be JSON");
    let field = |name: &str| {
        value
            .pointer(&format!("/metadata/{name}"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    (
        field("namespace"),
        field("name").unwrap_or_default(),
        field("resourceVersion").unwrap_or_default(),
    )
}

fn labels_of(json: &str) -> BTreeMap<String, String> {
    let value: Value = serde_json::from_str(json).unwrap_or_default();
    value
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|labels| {
            labels
                .iter()
                .filter_map(|(key, value)| Some((key.clone(), value.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

/// What the SDK calls off wasm in place of the host's imports.
pub(crate) mod host {
    use super::*;
    use crate::cache::CacheError;

    pub(crate) fn log(level: Level, message: &str) {
        with_host(|host| {
            host.logs.push(LogLine {
                level,
                message: message.to_owned(),
            })
        });
    }

    pub(crate) fn config() -> Option<String> {
        with_host(|host| host.config.clone())
    }

    /// Records `call` and answers it: a scripted response, or `default`.
    fn answer(call: KubeCall, default: Result<Value, KubeError>) -> Result<String, KubeError> {
        with_host(|host| {
            let matches = |(verb, matcher, _): &(Verb, Matcher, _)| {
                *verb == call.verb && matcher.matches(&call.target)
            };
            let response = if let Some(at) = host.once.iter().position(matches) {
                host.once.remove(at).2
            } else {
                host.responses
                    .iter()
                    .rev()
                    .find(|response| matches(response))
                    .map_or(default, |(_, _, response)| response.clone())
            };
            host.calls.push(call);
            response.map(|value| value.to_string())
        })
    }

    fn call(verb: Verb, target: &Target) -> KubeCall {
        KubeCall {
            verb,
            target: target.clone(),
            body: None,
            patch_type: None,
            force: false,
            delete: None,
            cluster: cluster_current(),
        }
    }

    pub(crate) fn cluster_current() -> String {
        with_host(|host| {
            host.target
                .clone()
                .or_else(|| host.cluster.clone())
                .or_else(|| host.clusters.first().cloned())
                .unwrap_or_else(|| DEFAULT_CLUSTER.to_owned())
        })
    }

    pub(crate) fn cluster_names() -> Vec<String> {
        with_host(|host| cluster_list(host))
    }

    pub(crate) fn cluster_target(name: Option<&str>) -> Result<(), String> {
        with_host(|host| match name {
            None => {
                host.target = None;
                Ok(())
            }
            Some(name) if cluster_list(host).iter().any(|c| c == name) => {
                host.target = Some(name.to_owned());
                Ok(())
            }
            Some(name) => Err(format!(
                "this plugin is not delivered notifications from a cluster named {name:?}: it \
                 may target only its own clusters ({})",
                cluster_list(host).join(", ")
            )),
        })
    }

    fn cluster_list(host: &TestHost) -> Vec<String> {
        let mut names = if host.clusters.is_empty() {
            vec![DEFAULT_CLUSTER.to_owned()]
        } else {
            host.clusters.clone()
        };
        names.sort();
        names
    }

    fn json(text: &str) -> Value {
        serde_json::from_str(text).expect("the SDK sends JSON")
    }

    pub(crate) fn kube_get(target: &Target) -> Result<String, KubeError> {
        let not_found = Err(KubeError::NotFound(format!(
            "{target} not found (no scripted response)"
        )));
        answer(call(Verb::Get, target), not_found)
    }

    pub(crate) fn kube_create(
        kind: &GroupVersionKind,
        namespace: Option<&str>,
        object: &str,
    ) -> Result<String, KubeError> {
        let body = json(object);
        let target = Target {
            kind: kind.clone(),
            namespace: namespace.map(str::to_owned),
            name: body
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            subresource: None,
        };
        let call = KubeCall {
            body: Some(body.clone()),
            ..call(Verb::Create, &target)
        };
        answer(call, Ok(body))
    }

    pub(crate) fn kube_replace(target: &Target, object: &str) -> Result<String, KubeError> {
        let body = json(object);
        let call = KubeCall {
            body: Some(body.clone()),
            ..call(Verb::Update, target)
        };
        answer(call, Ok(body))
    }

    pub(crate) fn kube_patch(
        target: &Target,
        patch_type: PatchType,
        patch: &str,
    ) -> Result<String, KubeError> {
        let call = KubeCall {
            body: Some(json(patch)),
            patch_type: Some(patch_type),
            ..call(Verb::Patch, target)
        };
        answer(call, Ok(Value::Object(serde_json::Map::new())))
    }

    pub(crate) fn kube_apply(
        target: &Target,
        object: &str,
        force: bool,
    ) -> Result<String, KubeError> {
        let body = json(object);
        let call = KubeCall {
            body: Some(body.clone()),
            force,
            ..call(Verb::Apply, target)
        };
        answer(call, Ok(body))
    }

    pub(crate) fn kube_delete(target: &Target, params: &DeleteParams) -> Result<(), KubeError> {
        let call = KubeCall {
            delete: Some(params.clone()),
            ..call(Verb::Delete, target)
        };
        answer(call, Ok(Value::Null)).map(drop)
    }

    pub(crate) fn metric_update(op: MetricOp, name: &str, label_values: &[&str], value: f64) {
        let update = MetricUpdate {
            op,
            name: name.to_owned(),
            label_values: label_values
                .iter()
                .map(|value| (*value).to_owned())
                .collect(),
            value,
        };
        with_host(|host| {
            if let Some(problem) = host.metrics.problem(&update) {
                host.logs.push(LogLine {
                    level: Level::Warn,
                    message: format!("metric update dropped: {problem}"),
                });
            } else {
                let series = (update.name.clone(), update.label_values.clone());
                match op {
                    MetricOp::Add => *host.metrics.values.entry(series).or_default() += value,
                    MetricOp::Set => {
                        host.metrics.values.insert(series, value);
                    }
                    MetricOp::Observe => host
                        .metrics
                        .observations
                        .entry(series)
                        .or_default()
                        .push(value),
                }
            }
            host.metrics.updates.push(update);
        });
    }

    pub(crate) fn deadline_remaining_ms() -> u64 {
        with_host(|host| {
            let remaining = host.remaining.unwrap_or(std::time::Duration::from_secs(1));
            u64::try_from(remaining.as_millis()).unwrap_or(u64::MAX)
        })
    }

    pub(crate) fn requeue_after(delay_ms: u64) {
        with_host(|host| {
            host.requeues
                .push(std::time::Duration::from_millis(delay_ms))
        });
    }

    pub(crate) fn http_send(
        hop: &crate::http::Hop<'_>,
    ) -> Result<crate::http::Response, crate::http::HttpErrorKind> {
        with_host(|host| host.http.answer(hop))
    }

    pub(crate) fn events_publish(event: &EventRecord) -> Result<(), KubeError> {
        with_host(|host| {
            host.events.push(event.clone());
            host.publish.clone().unwrap_or(Ok(()))
        })
    }

    fn visible(host: &TestHost, kind: &GroupVersionKind) -> Result<(), CacheError> {
        if host.subscribed.contains(kind) {
            Ok(())
        } else {
            Err(CacheError::NotSubscribed(kind.clone()))
        }
    }

    pub(crate) fn cache_get(
        kind: &GroupVersionKind,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<String>, CacheError> {
        with_host(|host| {
            visible(host, kind)?;
            let key = (namespace.map(str::to_owned), name.to_owned());
            Ok(host
                .cache
                .get(kind)
                .and_then(|objects| objects.get(&key))
                .cloned())
        })
    }

    pub(crate) fn cache_by_index(
        name: &str,
        value: &str,
        namespace: Option<&str>,
    ) -> Result<Vec<String>, CacheError> {
        with_host(|host| {
            let index = host.indexes.iter().find(|i| i.name == name).ok_or_else(|| {
                CacheError::UnknownIndex(format!(
                    "{name} (the test host knows the indexes of the manifest given to testing::declare)"
                ))
            })?;
            visible(host, &index.kind)?;
            let objects = host.cache.get(&index.kind).into_iter().flatten();
            let mut found: Vec<(String, String)> = objects
                .filter(|((object_namespace, _), _)| {
                    namespace.is_none() || object_namespace.as_deref() == namespace
                })
                .filter(|(_, json)| index.values(json).iter().any(|v| v == value))
                .map(|((object_namespace, name), json)| {
                    let key = match object_namespace {
                        Some(namespace) => format!("{namespace}/{name}"),
                        None => name.clone(),
                    };
                    (key, json.clone())
                })
                .collect();
            // In key order, as the host's index keeps them.
            found.sort();
            Ok(found.into_iter().map(|(_, json)| json).collect())
        })
    }

    pub(crate) fn cache_list(
        kind: &GroupVersionKind,
        namespace: Option<&str>,
        label_selector: Option<&str>,
    ) -> Result<Vec<String>, CacheError> {
        let selector = LabelSelector::parse(label_selector.unwrap_or_default())
            .map_err(|e| CacheError::InvalidSelector(e.to_string()))?;
        with_host(|host| {
            visible(host, kind)?;
            let objects = host.cache.get(kind).into_iter().flatten();
            Ok(objects
                .filter(|((object_namespace, _), _)| {
                    namespace.is_none() || object_namespace.as_deref() == namespace
                })
                .filter(|(_, json)| selector.matches(&labels_of(json)))
                .map(|(_, json)| json.clone())
                .collect())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(selector: &str, labels: &[(&str, &str)]) -> bool {
        let labels = labels
            .iter()
            .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
            .collect();
        LabelSelector::parse(selector).unwrap().matches(&labels)
    }

    #[test]
    fn the_test_host_reads_selectors_with_the_hosts_grammar() {
        let labels = [("app", "web"), ("tier", "front")];
        assert!(matches("", &labels));
        assert!(matches("app=web", &labels));
        assert!(matches("app==web,tier!=back", &labels));
        assert!(!matches("app=web,tier=back", &labels));
        assert!(matches("tier in (front, back),app notin (db)", &labels));
        assert!(!matches("tier notin (front)", &labels));
        assert!(matches("app,!legacy", &labels));
        assert!(!matches("!app", &labels));
        assert!(LabelSelector::parse("a=b=c").is_err());
        assert!(LabelSelector::parse("a in x").is_err());
        assert!(LabelSelector::parse("a in (x").is_err());
    }

    #[test]
    fn globs_match_runs_of_characters() {
        assert!(glob("*", ""));
        assert!(glob("*", "shop/web"));
        assert!(glob("shop/*", "shop/web"));
        assert!(!glob("shop/*", "blog/web"));
        assert!(glob("*/web", "shop/web"));
        assert!(glob("s*p/w*b", "shop/web"));
        assert!(!glob("shop/web", "shop/web-0"));
        assert!(glob("shop/web", "shop/web"));
        assert!(!glob("a*b*c", "acb"));
    }

    #[test]
    fn matchers_parse_an_optional_kind() {
        let target = |kind: &str, subresource: Option<&str>| Target {
            kind: GroupVersionKind::new("", "v1", kind),
            namespace: Some("shop".into()),
            name: "web".into(),
            subresource: subresource.map(str::to_owned),
        };
        let pod = target("Pod", None);
        assert!(Matcher::from("*").matches(&pod));
        assert!(Matcher::from("Pod shop/*").matches(&pod));
        assert!(!Matcher::from("Service shop/*").matches(&pod));
        assert!(Matcher::from("shop/web").matches(&target("Pod", Some("status"))));
        assert!(
            !Matcher::from("shop/web")
                .object()
                .matches(&target("Pod", Some("status")))
        );
        assert!(
            Matcher::any()
                .status()
                .matches(&target("Pod", Some("status")))
        );
        assert!(!Matcher::any().status().matches(&pod));
    }

    #[test]
    fn contexts_come_from_metadata() {
        let json = r#"{"metadata":{"name":"node-1","resourceVersion":"9"}}"#;
        let context = context_for_json(GroupVersionKind::new("", "v1", "Node"), "nodes", json);
        assert_eq!(context.key, "node-1");
        assert_eq!(context.resource_version, "9");
        assert_eq!(context.resource, "nodes");
        let json = r#"{"metadata":{"name":"web-0","namespace":"shop"}}"#;
        assert_eq!(
            context_for_json(GroupVersionKind::new("", "v1", "Pod"), "pods", json).key,
            "shop/web-0"
        );
    }
}
