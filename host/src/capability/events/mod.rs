//! The `events` capability: plugins record Kubernetes Events
//! (`events.k8s.io/v1`) about objects, reported as `herald.dev/<plugin>`.
//!
//! As client-go's event recorder does:
//!
//! - **Series.** An Event identical to one recorded less than
//!   [`SERIES_WINDOW`] ago (same regarding and related objects, type,
//!   reason and action; the note may differ, as in client-go's `getKey`) is
//!   not recorded again: the first Event's `series` is patched with the new
//!   count and `lastObservedTime`.
//! - **Flood limit.** Events about one object (and reason) pass a token
//!   bucket of [`SPAM_BURST`] refilled one per [`SPAM_REFILL`] (client-go's
//!   `EventSourceObjectSpamFilter`); the rest are dropped and counted.
//!
//! Events go through the plugin's rate limit and deadline like any API call,
//! and in dry-run mode are sent with `dryRun=All` (nothing persists, and no
//! series is kept).

mod host;
pub mod rbac;
pub mod replay;
mod stats;

pub use host::EventsHost;
pub use stats::EventStats;

use super::Mode;
use super::kube::{
    ALL_NAMESPACES, ApiRequest, KubeAccess, KubeError, Operation, PatchType, Target,
};
use super::rate::{RateLimit, TokenBucket};
use super::reads::Read;
use crate::cluster::{ClusterName, Clusters};
use crate::gvk::Gvk;
use serde_json::json;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// The capability's name in manifests and grants.
pub const CAPABILITY: &str = "events";
/// How long a series stays open after its last occurrence (client-go: 6 min).
pub const SERIES_WINDOW: Duration = Duration::from_secs(6 * 60);
/// Events about one object allowed at once (client-go: 25).
pub const SPAM_BURST: u32 = 25;
/// One more Event about that object is allowed per this (client-go: 5 min).
pub const SPAM_REFILL: Duration = Duration::from_secs(5 * 60);
/// Longest reason or action (Kubernetes' validation: 128).
const MAX_WORD: usize = 128;
/// Longest note kept, in bytes once escaped (Kubernetes' validation:
/// 1 KiB); longer ones are cut, between characters and escapes.
const MAX_NOTE: usize = 1024;
/// Most series and flood buckets remembered per plugin; the oldest go first.
const MAX_TRACKED: usize = 4096;

/// `plugins.<name>.grants.events`: Events granted to one plugin (also
/// granted by listing `events` in `grants.capabilities`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct EventsGrant {
    /// Namespaces the plugin may record Events in about objects its read
    /// grant does not cover; `*` for every namespace. Empty (the default):
    /// only Events about objects it may read.
    pub namespaces: std::collections::BTreeSet<String>,
    /// The clusters `namespaces` applies in: left out for the default
    /// cluster alone, `*` for every cluster, or names. Elsewhere an Event
    /// needs the read of what it is about in that cluster.
    pub clusters: Clusters,
}

/// What one loaded plugin may do through `events`, and its Event state:
/// open series and flood buckets. Shared by all its instances.
#[derive(Debug)]
pub struct EventsAccess {
    /// The grant, when the manifest declares `events` and the operator
    /// granted it.
    grant: Option<EventsGrant>,
    /// Where its Events are sent: the plugin's API access, whose rate limit
    /// and deadline they share with its `kube` calls.
    kube: Arc<KubeAccess>,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    series: HashMap<String, Series>,
    floods: HashMap<String, TokenBucket>,
}

#[derive(Debug, Clone)]
struct Series {
    /// The stored Event's namespace and name.
    namespace: String,
    name: String,
    count: u32,
    last: Instant,
}

/// What became of one published Event (the `outcome` of its metric).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Published {
    /// A new Event was written.
    Created,
    /// An open series' count was raised.
    Series,
    /// The flood limit dropped it.
    Dropped,
}

impl Published {
    /// The `outcome` label: in dry-run, what *would* have been done (no
    /// Event persists, and no series is kept).
    fn label(self, mode: Mode) -> &'static str {
        match (self, mode) {
            (Published::Created, Mode::Enforce) => "created",
            (Published::Created, Mode::DryRun) => "would-create",
            (Published::Series, _) => "series",
            (Published::Dropped, _) => "dropped",
        }
    }
}

/// One Event, host-side.
#[derive(Debug, Clone)]
pub struct EventRecord {
    /// What it is about.
    pub regarding: ObjectRef,
    /// A second object, if any.
    pub related: Option<ObjectRef>,
    /// `Normal` or `Warning`.
    pub event_type: &'static str,
    /// Why.
    pub reason: String,
    /// What was done.
    pub action: String,
    /// Description.
    pub note: String,
    /// The cluster it is recorded in (the call's); `None` for the default
    /// one.
    pub cluster: Option<ClusterName>,
}

/// A reference to an object.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ObjectRef {
    /// Its kind.
    pub gvk: Gvk,
    /// Its namespace.
    pub namespace: Option<String>,
    /// Its name.
    pub name: String,
    /// Its UID.
    pub uid: Option<String>,
    /// Its resourceVersion.
    pub resource_version: Option<String>,
}

impl ObjectRef {
    /// Checks each identifier by the rule of its field (`field.kind.group`,
    /// `field.namespace`, `field.name`, …), before anything is written.
    fn check(&self, field: &str) -> Result<(), KubeError> {
        use herald_grammar::name::{Rule, check};
        let refused = super::kube::invalid;
        self.gvk.check(&format!("{field}.kind")).map_err(refused)?;
        if let Some(namespace) = &self.namespace {
            check(&format!("{field}.namespace"), namespace, Rule::Dns1123Label).map_err(refused)?;
        }
        check(&format!("{field}.name"), &self.name, Rule::PathSegment).map_err(refused)?;
        for (key, value) in [
            ("uid", &self.uid),
            ("resource-version", &self.resource_version),
        ] {
            if let Some(value) = value
                && (value.len() > 128 || value.chars().any(crate::text::is_unsafe))
            {
                return Err(KubeError::Invalid {
                    message: format!(
                        "{field}.{key} {:?} is not a {key} (at most 128 characters, no control \
                         characters)",
                        crate::text::escape_controls(value)
                    ),
                    causes: vec![super::kube::Cause {
                        reason: "FieldValueInvalid".into(),
                        message: format!("not a {key}"),
                        field: format!("{field}.{key}"),
                    }],
                });
            }
        }
        Ok(())
    }

    /// The read this reference stands for: the plugin must be allowed to
    /// see the object it records an Event about.
    fn read<'a>(&'a self, cluster: Option<&'a ClusterName>) -> Read<'a> {
        Read {
            group: &self.gvk.group,
            kind: &self.gvk.kind,
            namespace: self.namespace.as_deref(),
            cluster,
        }
    }

    fn to_json(&self) -> serde_json::Value {
        let mut value = json!({
            "apiVersion": self.gvk.api_version(),
            "kind": self.gvk.kind,
            "name": self.name,
        });
        if let Some(ns) = &self.namespace {
            value["namespace"] = json!(ns);
        }
        if let Some(uid) = &self.uid {
            value["uid"] = json!(uid);
        }
        if let Some(rv) = &self.resource_version {
            value["resourceVersion"] = json!(rv);
        }
        value
    }

    /// The identity of the object, not of its version.
    fn key(&self) -> String {
        format!(
            "{}|{}|{}|{}",
            self.gvk,
            self.namespace.as_deref().unwrap_or(""),
            self.name,
            self.uid.as_deref().unwrap_or("")
        )
    }
}

impl EventRecord {
    fn check(&self) -> Result<(), KubeError> {
        let invalid = |field: &str, message: String| KubeError::Invalid {
            message: format!("event {field}: {message}"),
            causes: vec![super::kube::Cause {
                reason: "FieldValueInvalid".into(),
                message,
                field: field.into(),
            }],
        };
        for (field, value) in [("reason", &self.reason), ("action", &self.action)] {
            if !is_machine_word(value) {
                return Err(invalid(
                    field,
                    format!(
                        "{} is not UpperCamelCase: a capital ASCII letter, then ASCII letters \
                         and digits, 1 to {MAX_WORD} characters in all (e.g. DisallowedImage)",
                        shown(value)
                    ),
                ));
            }
        }
        if self.regarding.name.is_empty() || self.regarding.gvk.kind.is_empty() {
            return Err(invalid("regarding", "needs a kind and a name".into()));
        }
        self.regarding.check("regarding")?;
        if let Some(related) = &self.related {
            related.check("related")?;
        }
        Ok(())
    }

    /// client-go's series key: everything but the note.
    fn series_key(&self) -> String {
        format!(
            "{}#{}#{}#{}#{}#{}",
            self.cluster.as_ref().map_or("", ClusterName::as_str),
            self.regarding.key(),
            self.related
                .as_ref()
                .map(ObjectRef::key)
                .unwrap_or_default(),
            self.event_type,
            self.reason,
            self.action
        )
    }

    fn flood_key(&self) -> String {
        format!(
            "{}#{}#{}",
            self.cluster.as_ref().map_or("", ClusterName::as_str),
            self.regarding.key(),
            self.reason
        )
    }
}

impl EventsAccess {
    /// The Events of the plugin `authorized` describes: none unless it
    /// declares `events` and is granted them (the offline tools' grant:
    /// about anything, in every namespace), sent through its API access.
    pub fn for_plugin(authorized: &super::Authorized) -> Self {
        let grant = if !authorized.declares(CAPABILITY) {
            None
        } else if authorized.grants.all_declared {
            Some(EventsGrant {
                namespaces: [super::kube::ALL_NAMESPACES.to_owned()].into(),
                clusters: Clusters([crate::cluster::ALL_CLUSTERS.to_owned()].into()),
            })
        } else {
            authorized.grants.events.clone()
        };
        EventsAccess::new(grant, authorized.api.clone())
    }

    /// The Events of the plugin `kube` is the access of, under `grant` (when
    /// the plugin declared `events` and the operator granted it).
    pub fn new(grant: Option<EventsGrant>, kube: Arc<KubeAccess>) -> Self {
        EventsAccess {
            grant,
            kube,
            state: Mutex::default(),
        }
    }

    /// True when the plugin may record Events at all (it declared
    /// `events` and the operator granted it).
    pub fn is_granted(&self) -> bool {
        self.grant.is_some()
    }

    fn plugin(&self) -> &str {
        self.kube.plugin()
    }

    fn mode(&self) -> Mode {
        self.kube.mode()
    }

    fn stats(&self) -> Option<&super::ActionStats> {
        self.kube.access().map(|access| &*access.stats)
    }

    /// Publishes `event` for the plugin: granted, flood-limited, merged into
    /// an open series, sent within `deadline`.
    pub async fn publish(
        &self,
        mut event: EventRecord,
        deadline: Option<Instant>,
    ) -> Result<Published, KubeError> {
        let outcome = self.publish_checked(&mut event, deadline).await;
        if let Some(stats) = self.stats() {
            let label = match &outcome {
                Ok(published) => published.label(self.mode()),
                Err(error) => error.outcome(),
            };
            stats.events.record(self.plugin(), label);
        }
        outcome
    }

    async fn publish_checked(
        &self,
        event: &mut EventRecord,
        deadline: Option<Instant>,
    ) -> Result<Published, KubeError> {
        let Some(grant) = &self.grant else {
            return Err(KubeError::NotGranted(format!(
                "plugin {:?} was not granted the {CAPABILITY:?} capability: declare it in the \
                 manifest and have the operator grant it",
                self.plugin()
            )));
        };
        event.check()?;
        self.check_reach(grant, event)?;
        event.note = stored_note(&event.note);
        let now = Instant::now();
        let open = {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            let flood = state.floods.entry(event.flood_key()).or_insert_with(|| {
                TokenBucket::new(RateLimit {
                    qps: 1.0 / SPAM_REFILL.as_secs_f64(),
                    burst: SPAM_BURST,
                })
            });
            if flood.reserve(now, Duration::ZERO).is_err() {
                return Ok(Published::Dropped);
            }
            let open = state
                .series
                .get(&event.series_key())
                .filter(|series| now.duration_since(series.last) < SERIES_WINDOW)
                .cloned();
            forget_oldest(&mut state, now);
            open
        };
        if self.mode() == Mode::Enforce
            && let Some(series) = open
        {
            match self
                .raise_series(&series, event.cluster.as_ref(), deadline)
                .await
            {
                Ok(()) => {
                    self.remember(event, series.namespace, series.name, series.count + 1, now);
                    return Ok(Published::Series);
                }
                // Gone (expired, or deleted by someone): start a new one.
                Err(KubeError::NotFound(_)) => {}
                Err(error) => return Err(error),
            }
        }
        let (namespace, body) = self.new_event(event);
        let name = body["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let request = self.event_request(
            &namespace,
            "",
            Operation::Create {
                body: body.to_string(),
            },
            event.cluster.as_ref(),
        );
        let sent = self.kube.send(request.clone(), deadline).await;
        self.audit_event(&request, &sent);
        sent.map_err(|(error, _)| error)?;
        if self.mode() == Mode::Enforce {
            self.remember(event, namespace, name, 1, now);
        }
        Ok(Published::Created)
    }

    /// An Event lives in the namespace of the object it is about (`default`
    /// for a cluster-scoped one, as client-go does), and says things about
    /// it and about the related object: the plugin must be allowed to read
    /// both ([`crate::capability::reads`]), unless its events grant names
    /// the Event's namespace. A plugin cannot write Events into
    /// `kube-system` about objects it cannot see.
    /// Each object an Event names (the one it is about, the related one)
    /// must be readable by the plugin, or namespaced in a namespace the
    /// Events grant names (`*` covers every object). A grant naming
    /// `default`, where an Event about a cluster-scoped object lives,
    /// covers no cluster-scoped object: only a read of it does.
    fn check_reach(&self, grant: &EventsGrant, event: &EventRecord) -> Result<(), KubeError> {
        let reads = self.kube.reads();
        let cluster = event.cluster.as_ref();
        let granted_cluster = grant
            .clusters
            .covers(cluster, reads.policy.default_cluster_name());
        for (field, object) in std::iter::once(("regarding", &event.regarding))
            .chain(event.related.as_ref().map(|related| ("related", related)))
        {
            let in_granted_namespace = granted_cluster
                && (grant.namespaces.contains(ALL_NAMESPACES)
                    || object
                        .namespace
                        .as_deref()
                        .is_some_and(|namespace| grant.namespaces.contains(namespace)));
            if !in_granted_namespace && reads.allows(&object.read(cluster)).is_none() {
                let instead = match object.namespace.as_deref() {
                    Some(namespace) => format!(
                        "or namespace {namespace:?} in plugins.{}.grants.events.namespaces",
                        self.plugin()
                    ),
                    None => "(a grant of Events by namespace covers no cluster-scoped object)"
                        .to_owned(),
                };
                return Err(KubeError::NotGranted(format!(
                    "{field}: {}; an Event about it needs that read, {instead}",
                    reads.refusal(self.plugin(), &object.read(cluster)),
                )));
            }
        }
        Ok(())
    }

    async fn raise_series(
        &self,
        series: &Series,
        cluster: Option<&ClusterName>,
        deadline: Option<Instant>,
    ) -> Result<(), KubeError> {
        let patch = json!({
            "series": {
                "count": series.count + 1,
                "lastObservedTime": crate::units::time::format_micros(SystemTime::now()),
            }
        });
        let request = self.event_request(
            &series.namespace,
            &series.name,
            Operation::Patch {
                patch_type: PatchType::Merge,
                body: patch.to_string(),
            },
            cluster,
        );
        let sent = self.kube.send(request.clone(), deadline).await;
        self.audit_event(&request, &sent);
        sent.map(|_| ()).map_err(|(error, _)| error)
    }

    fn remember(
        &self,
        event: &EventRecord,
        namespace: String,
        name: String,
        count: u32,
        now: Instant,
    ) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.series.insert(
            event.series_key(),
            Series {
                namespace,
                name,
                count,
                last: now,
            },
        );
    }

    /// The Event object for a first occurrence, and its namespace (the
    /// regarding object's, or `default` for cluster-scoped ones, as
    /// client-go does).
    fn new_event(&self, event: &EventRecord) -> (String, serde_json::Value) {
        let namespace = event
            .regarding
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into());
        let now = SystemTime::now();
        let nanos = now
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let mut body = json!({
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {
                "name": format!("{}.{nanos:x}", event.regarding.name),
                "namespace": namespace,
            },
            "eventTime": crate::units::time::format_micros(now),
            "reportingController": format!("herald.dev/{}", self.plugin()),
            "reportingInstance": reporting_instance(self.plugin()),
            "action": event.action,
            "reason": event.reason,
            "note": event.note,
            "type": event.event_type,
            "regarding": event.regarding.to_json(),
        });
        if let Some(related) = &event.related {
            body["related"] = related.to_json();
        }
        (namespace, body)
    }

    fn event_request(
        &self,
        namespace: &str,
        name: &str,
        operation: Operation,
        cluster: Option<&ClusterName>,
    ) -> ApiRequest {
        ApiRequest {
            target: Target {
                gvk: Gvk::new("events.k8s.io", "v1", "Event"),
                namespace: Some(namespace.to_owned()),
                name: name.to_owned(),
                subresource: None,
            },
            operation,
            dry_run: self.mode() == Mode::DryRun,
            field_manager: self.kube.field_manager(),
            cluster: cluster.cloned(),
        }
    }

    fn audit_event(&self, request: &ApiRequest, sent: &Result<String, (KubeError, bool)>) {
        let reached = match sent {
            Ok(_) => true,
            Err((_, sent)) => *sent,
        };
        let answer = sent.clone().map_err(|(error, _)| error);
        self.kube.audit(request, &answer, None, reached);
    }
}

/// True for a reason or an action: a machine identifier in Kubernetes'
/// convention, UpperCamelCase: `[A-Z][A-Za-z0-9]*`, 1 to 128 bytes. Nothing else is stored, so `kubectl describe` and every other
/// reader of the Event print these fields as they are.
pub fn is_machine_word(word: &str) -> bool {
    let mut bytes = word.bytes();
    word.len() <= MAX_WORD
        && bytes.next().is_some_and(|b| b.is_ascii_uppercase())
        && bytes.all(|b| b.is_ascii_alphanumeric())
}

/// A note as the Event stores it. A note is human text, printed by
/// `kubectl describe` in a table and by every other reader of Events: each
/// unsafe character ([`crate::text::is_unsafe`]: control characters, `DEL`,
/// C1, line and paragraph separators, bidirectional and invisible marks)
/// becomes its visible escape, so no note can hold a terminal escape
/// sequence, a hyperlink, text reordered or hidden, or a line break. Line
/// breaks and tabs are escaped too (`\n`, `\t`): in `kubectl describe`'s
/// table a line break would start what reads as another row (another
/// Event, from another reporter), and a tab moves the columns. The note is
/// then cut to 1 KiB counting the escapes, between characters and escapes.
fn stored_note(note: &str) -> String {
    crate::text::escape_controls_within(note, MAX_NOTE).0
}

/// A refused value as a message shows it: cut short, quoted, escaped.
fn shown(value: &str) -> String {
    const MAX: usize = 64;
    let cut: String = value.chars().take(MAX).collect();
    let more = if cut.len() < value.len() { "…" } else { "" };
    format!("{}{more}", crate::text::quote(&cut))
}

/// Drops the state of series closed long ago, and the oldest entries when
/// there are too many, so a plugin cannot grow the host's memory through it.
fn forget_oldest(state: &mut State, now: Instant) {
    state
        .series
        .retain(|_, series| now.duration_since(series.last) < SERIES_WINDOW);
    if state.series.len() > MAX_TRACKED {
        state.series.clear();
    }
    if state.floods.len() > MAX_TRACKED {
        state.floods.clear();
    }
}

/// `reportingInstance`: the plugin on this host (the pod's name in a cluster).
fn reporting_instance(plugin: &str) -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "herald".into());
    let instance = format!("{plugin}-{host}");
    instance.chars().take(128).collect()
}

/// The `events` capability, as the list in `capability/mod.rs` names it.
#[derive(Debug)]
pub struct Events;

impl super::factor::Capability for Events {
    const ABOUT: super::factor::About = super::factor::About {
        name: "events",
        wit: "`events` (0.2.0)",
        acts: super::factor::Acts::OnCluster,
    };
    type Stats = EventStats;
    type Plugin = Arc<EventsAccess>;
    type Instance = ();

    fn prepare(setup: &super::Setup<'_>) -> Self::Plugin {
        Arc::new(EventsAccess::for_plugin(setup.authorized))
    }

    fn instantiate(_: &Self::Plugin) {}

    async fn rbac(
        asks: &super::ClusterAsks<'_>,
        _: &crate::discovery::KindResolver,
        verbs: &mut super::factor::Verbs,
    ) -> Result<(), crate::discovery::KindError> {
        rbac::event_verbs(asks.capabilities, verbs);
        Ok(())
    }

    fn replay_about(kind: &str, body: Option<&str>) -> Option<String> {
        replay::about(kind, body)
    }

    fn host<'a>(
        access: &'a Self::Plugin,
        _: &'a mut (),
        call: super::CallScope<'a>,
    ) -> EventsHost<'a> {
        EventsHost {
            access,
            deadline: call.deadline,
            cluster: call.cluster.target().cloned(),
        }
    }

    fn add_to_linker<T: super::View + 'static>(
        linker: &mut wasmtime::component::Linker<T>,
        reach: fn(&mut T) -> EventsHost<'_>,
    ) -> wasmtime::Result<()> {
        host::add_to_linker(linker, reach)
    }
}

impl wasmtime::component::HasData for Events {
    type Data<'a> = EventsHost<'a>;
}

impl super::factor::Granted for Events {
    type Grant = Option<EventsGrant>;
    const POWER: &'static str = "Events";
    const DECLARED_AS: Option<&'static str> = Some(CAPABILITY);

    /// Named alone, `events` grants Events about what the plugin may read.
    fn by_name() -> Result<Self::Grant, &'static str> {
        Ok(Some(EventsGrant::default()))
    }

    fn is_granted(grant: &Self::Grant) -> bool {
        grant.is_some()
    }

    fn validate(grant: &Self::Grant) -> Result<(), crate::yaml::Invalid> {
        if let Some(grant) = grant {
            grant
                .clusters
                .validate("clusters")
                .map_err(|e| crate::yaml::Invalid::new("clusters", e))?;
        }
        for namespace in grant.iter().flat_map(|g| &g.namespaces) {
            if namespace != ALL_NAMESPACES && !herald_grammar::name::is_dns1123_label(namespace) {
                return Err(crate::yaml::Invalid::new(
                    "namespaces",
                    format!("{namespace:?} is not a namespace name or \"*\""),
                ));
            }
        }
        Ok(())
    }

    fn covers(grant: &Self::Grant, declared: &super::Declared<'_>) -> Result<(), String> {
        if declared.declares(CAPABILITY) && grant.is_none() {
            return Err(format!(
                "requests capability {CAPABILITY:?}, which the operator has not granted"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(reason: &str, action: &str) -> EventRecord {
        EventRecord {
            regarding: ObjectRef {
                gvk: Gvk::new("", "v1", "ConfigMap"),
                namespace: Some("shop".into()),
                name: "cm".into(),
                uid: None,
                resource_version: None,
            },
            related: None,
            event_type: "Normal",
            reason: reason.into(),
            action: action.into(),
            note: String::new(),
            cluster: None,
        }
    }

    #[test]
    fn reasons_and_actions_are_upper_camel_case_identifiers_or_refused() {
        event("DisallowedImage", "Flagged").check().unwrap();
        event("R", "A1b2").check().unwrap();
        event(&format!("A{}", "b".repeat(127)), "A")
            .check()
            .unwrap();
        let hostile = crate::text::tests::hostile_text();
        for bad in [
            "",
            "lowercase",
            "1Digit",
            "Two Words",
            "Dashed-Word",
            "Under_score",
            "Ünicode",
            "Bidi\u{202e}txe",
            "Line\u{2028}Break",
            "Csi\u{9b}31m",
            "Nul\0",
            "Del\u{7f}",
            "Esc\u{1b}[2J",
            hostile.as_str(),
            &format!("A{}", "b".repeat(128)),
        ] {
            for (field, record) in [("reason", event(bad, "Ok")), ("action", event("Ok", bad))] {
                let error = record.check().expect_err(bad);
                let KubeError::Invalid { message, causes } = &error else {
                    panic!("{error:?}");
                };
                assert!(
                    message.starts_with(&format!("event {field}: "))
                        && message.contains("UpperCamelCase"),
                    "{message}"
                );
                assert!(!message.chars().any(crate::text::is_unsafe), "{message:?}");
                assert_eq!(causes[0].field, field);
            }
        }
    }

    #[test]
    fn a_note_is_stored_with_visible_escapes_and_cut_between_them() {
        for (c, escape) in crate::text::tests::HOSTILE {
            assert_eq!(stored_note(&format!("a{c}b")), format!("a{escape}b"));
        }
        let note = stored_note(&crate::text::tests::hostile_text());
        assert!(!note.chars().any(crate::text::is_unsafe), "{note}");
        // 1,020 letters then an ESC: its escape (6 bytes) would pass 1 KiB,
        // so the note ends before it rather than in the middle of it.
        let long = format!("{}\u{1b}[2J", "x".repeat(MAX_NOTE - 4));
        assert_eq!(stored_note(&long), "x".repeat(MAX_NOTE - 4));
        let long = format!("{}\u{1b}", "x".repeat(MAX_NOTE - 6));
        assert_eq!(
            stored_note(&long),
            format!("{}\\u{{1b}}", "x".repeat(MAX_NOTE - 6))
        );
        assert_eq!(stored_note(&"é".repeat(MAX_NOTE)).len(), MAX_NOTE);
        assert_eq!(stored_note("plain note"), "plain note");
    }
}
