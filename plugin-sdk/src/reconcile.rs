//! Controllers as controller-runtime and kube-rs authors write them: one
//! `reconcile` for a primary kind, the objects it owns and the ones it
//! watches mapped to the primary's key, and the result telling the host
//! when to look again.
//!
//! ```no_run
//! use herald_sdk::k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
//! use herald_sdk::reconcile::{Action, Controller, Reconciler, Request};
//! use herald_sdk::{Error, Manifest};
//! use std::time::Duration;
//!
//! #[derive(Default)]
//! struct Rollouts;
//!
//! impl Reconciler for Rollouts {
//!     type Object = Deployment;
//!
//!     fn controller() -> Controller {
//!         Controller::new::<Deployment>(Manifest::new("rollouts", "0.1.0")).owns::<ReplicaSet>()
//!     }
//!
//!     fn reconcile(&mut self, request: &Request, deployment: Option<Deployment>) -> Result<Action, Error> {
//!         let Some(deployment) = deployment else {
//!             return Ok(Action::await_change()); // gone: nothing to do
//!         };
//!         let _ = (request, deployment);
//!         Ok(Action::requeue_after(Duration::from_secs(300)))
//!     }
//! }
//!
//! herald_sdk::export_reconciler!(Rollouts);
//! # fn main() {}
//! ```
//!
//! ## What the host guarantees, and how
//!
//! Every kind the controller names is subscribed with coalesced delivery
//! ([`Subscription::coalesced`]): a burst of changes to one object is one
//! call with its latest state, and the calls of one plugin never overlap,
//! so **one key is never reconciled twice at once**. Each notification is
//! mapped to the primary keys it concerns (its own key for the primary
//! kind; its controller owner for an owned kind, [`Controller::owns`]; what
//! the map returns for a watched kind, [`Controller::watches`]), and each
//! key is reconciled against the cache's current state of the primary
//! object, which is at least as new as the notification: **every change is
//! followed by a reconcile that sees it** (level-based, as
//! controller-runtime's).
//!
//! The result: [`Action::await_change`] is done; [`Action::requeue_after`]
//! asks for the notification again after the delay
//! ([`workqueue::requeue_after`](crate::workqueue::requeue_after): it maps
//! to the same keys again, and a newer change takes its place); an `Err`
//! is retried with the host's per-key exponential backoff (as
//! controller-runtime's rate limiter) and counted as a failure. When one
//! notification maps to several keys, each is reconciled; the shortest
//! requeue wins, and an error retries the notification, so every key it
//! maps to is reconciled again (reconciles are idempotent, as in
//! controller-runtime).
//!
//! Unlike controller-runtime, changes of two different owned objects are
//! two notifications, so they may reconcile their owner twice where
//! controller-runtime's queue would have merged them; each reconcile sees
//! the current state.
//!
//! ## Finalizers and conditions
//!
//! [`finalizer`] runs cleanup before an object goes, as kube-rs's
//! `finalizer` (add on the first reconcile, clean up once
//! `deletionTimestamp` is set, then remove); [`set_condition`] keeps a
//! `metav1.Condition` list as controller-runtime's `meta.SetStatusCondition`
//! (transition time moved only when the status changes).

use crate::kube::{DynamicApi, Patch};
use crate::view::ObjectView;
use crate::{Error, Event, GroupVersionKind, Handler, Manifest, Subscription, Update, cache};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};
use k8s_openapi::{Metadata, NamespaceResourceScope, Resource};
use serde::de::DeserializeOwned;
use std::any::TypeId;
use std::fmt;
use std::time::Duration;

/// What to reconcile: the primary object's namespace and name
/// (controller-runtime's `reconcile.Request`, kube-rs's `ObjectRef`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Request {
    /// Its namespace; `None` for a cluster-scoped kind.
    pub namespace: Option<String>,
    /// Its name.
    pub name: String,
}

impl Request {
    /// The object `name` in `namespace` (`None`: cluster-scoped).
    pub fn new(namespace: Option<&str>, name: impl Into<String>) -> Self {
        Request {
            namespace: namespace.map(str::to_owned),
            name: name.into(),
        }
    }
}

impl fmt::Display for Request {
    /// `namespace/name`, or `name` for a cluster-scoped object.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(namespace) => write!(f, "{namespace}/{}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

/// What a reconcile asks for next (controller-runtime's `ctrl.Result`,
/// kube-rs's `Action`). An error is not an action: return `Err` to be
/// retried with backoff.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Done until something changes.
    AwaitChange,
    /// Look again after this long, even if nothing changes.
    RequeueAfter(Duration),
}

impl Action {
    /// Done until something changes (`ctrl.Result{}`).
    pub fn await_change() -> Self {
        Action::AwaitChange
    }

    /// Look again after `delay` (`ctrl.Result{RequeueAfter: delay}`).
    pub fn requeue_after(delay: Duration) -> Self {
        Action::RequeueAfter(delay)
    }

    /// The sooner of two actions: a requeue beats waiting, the shorter
    /// delay beats the longer.
    fn sooner(self, other: Action) -> Action {
        match (self, other) {
            (Action::RequeueAfter(a), Action::RequeueAfter(b)) => Action::RequeueAfter(a.min(b)),
            (Action::RequeueAfter(a), _) | (_, Action::RequeueAfter(a)) => Action::RequeueAfter(a),
            _ => Action::AwaitChange,
        }
    }
}

/// Maps a watched object to the primary keys it concerns.
pub type MapFn = fn(&ObjectView<'_>) -> Vec<Request>;

/// How a notification of one kind reaches the primary keys.
#[derive(Clone, Copy)]
enum Source {
    /// The primary kind itself: its own key.
    Primary,
    /// An owned kind: its controller owner, if of the primary kind.
    Owned,
    /// A watched kind: what the map returns.
    Watched(MapFn),
}

/// The controller's shape: its primary kind (`For`), the kinds it owns
/// (`Owns`) and the kinds it watches (`Watches`), and the plugin's manifest,
/// to which each is added as a coalesced subscription.
pub struct Controller {
    manifest: Manifest,
    primary: GroupVersionKind,
    primary_namespaced: bool,
    generation_changed: bool,
    sources: Vec<(GroupVersionKind, Source)>,
}

impl fmt::Debug for Controller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Controller")
            .field("primary", &self.primary)
            .field(
                "kinds",
                &self
                    .sources
                    .iter()
                    .map(|(kind, _)| kind)
                    .collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl Controller {
    /// A controller of `K` (`For(&K{})`), for the plugin `manifest`
    /// describes: `K` is subscribed with coalesced delivery.
    pub fn new<K: Resource>(manifest: Manifest) -> Self
    where
        K::Scope: 'static,
    {
        let primary = GroupVersionKind::of::<K>();
        Controller {
            manifest: manifest.subscribe(Subscription::to::<K>().coalesced()),
            primary_namespaced: TypeId::of::<K::Scope>() == TypeId::of::<NamespaceResourceScope>(),
            generation_changed: false,
            sources: vec![(primary.clone(), Source::Primary)],
            primary,
        }
    }

    /// Also reconciles the controller owner of every `O` that changes
    /// (`Owns(&O{})`): the owner reference with `controller: true` whose
    /// kind and group are the primary's. `O` is subscribed, coalesced.
    pub fn owns<O: Resource>(self) -> Self {
        self.source::<O>(Source::Owned)
    }

    /// Also reconciles what `map` returns for every `W` that changes
    /// (`Watches(&W{}, handler.EnqueueRequestsFromMapFunc(map))`). A map
    /// that needs other objects reads them from the cache; an index
    /// ([`cache::by_index`]) keeps it to the objects that match. `W` is
    /// subscribed, coalesced.
    pub fn watches<W: Resource>(self, map: MapFn) -> Self {
        self.source::<W>(Source::Watched(map))
    }

    /// Reconciles the primary kind's updates only when its
    /// `metadata.generation` changed (controller-runtime's
    /// `GenerationChangedPredicate`): a status or metadata change, or a
    /// periodic resync, reconciles nothing. Adds, deletes, requeues, and the
    /// owned and watched kinds' changes still reconcile.
    pub fn generation_changed(mut self) -> Self {
        self.generation_changed = true;
        self
    }

    /// Whether an update of the primary kind from `old` to `new` is one
    /// [`generation_changed`](Self::generation_changed) filters out: the
    /// same generation, and a change of the object (a requeue re-delivers
    /// the same resourceVersion) or a resync.
    fn filters(&self, update: &Update) -> Result<bool, Error> {
        if !self.generation_changed
            || update.context().kind.group != self.primary.group
            || update.context().kind.kind != self.primary.kind
        {
            return Ok(false);
        }
        let (old, new) = (update.old_view()?, update.new_view()?);
        let (old, new) = (old.metadata(), new.metadata());
        Ok(old.generation() == new.generation()
            && (old.resource_version() != new.resource_version() || update.is_resync()))
    }

    fn source<K: Resource>(mut self, source: Source) -> Self {
        self.manifest = self.manifest.subscribe(Subscription::to::<K>().coalesced());
        self.sources.push((GroupVersionKind::of::<K>(), source));
        self
    }

    /// The plugin's manifest, with the controller's subscriptions.
    pub fn manifest(&self) -> Manifest {
        self.manifest.clone()
    }

    /// The primary keys a notification of `kind` about `object` concerns.
    fn requests(&self, kind: &GroupVersionKind, object: &str) -> Result<Vec<Request>, Error> {
        let Some((_, source)) = self
            .sources
            .iter()
            .find(|(k, _)| k.group == kind.group && k.kind == kind.kind)
        else {
            return Err(Error::new(format!(
                "a notification of {kind}, which the controller neither reconciles, owns nor watches"
            )));
        };
        let view = ObjectView::parse(object)?;
        let metadata = view.metadata();
        Ok(match source {
            Source::Primary => vec![Request::new(metadata.namespace(), metadata.name())],
            Source::Owned => metadata
                .controller()
                .filter(|owner| {
                    owner.kind() == self.primary.kind
                        && group_of(owner.api_version()) == self.primary.group
                })
                .map(|owner| {
                    let namespace = metadata.namespace().filter(|_| self.primary_namespaced);
                    Request::new(namespace, owner.name())
                })
                .into_iter()
                .collect(),
            Source::Watched(map) => map(&view),
        })
    }
}

/// The group of an `apiVersion` (`apps/v1` → `apps`, `v1` → the core
/// group, empty).
fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(group, _)| group)
}

/// A controller: the plugin's [`Handler`] is built from it with
/// [`export_reconciler!`](crate::export_reconciler).
///
/// The host creates one value with [`Default`] and keeps it for the life of
/// the instance, as for a [`Handler`].
pub trait Reconciler: Default + 'static {
    /// The primary kind.
    type Object: Resource + DeserializeOwned;

    /// What it reconciles, owns and watches, and the plugin's manifest.
    fn controller() -> Controller;

    /// Brings the world in line with `object`, the cache's current state of
    /// the primary object `request` names (`None`: it is gone). Called
    /// again after every change of it or of what maps to it.
    fn reconcile(
        &mut self,
        request: &Request,
        object: Option<Self::Object>,
    ) -> Result<Action, Error>;
}

/// The [`Handler`] of a [`Reconciler`]: maps each notification to its
/// primary keys and reconciles each.
#[derive(Default)]
pub struct Reconcile<R> {
    reconciler: R,
    controller: Option<Controller>,
}

impl<R: Reconciler> Reconcile<R> {
    /// Reconciles every key the notification of `kind` about `object`
    /// concerns; asks for the soonest requeue any asked for.
    fn notified(&mut self, kind: &GroupVersionKind, object: &str) -> Result<(), Error> {
        let controller = self.controller.get_or_insert_with(R::controller);
        let requests = controller.requests(kind, object)?;
        let primary = controller.primary.clone();
        let mut next = Action::AwaitChange;
        let mut failed = None;
        for request in requests {
            let reconciled =
                match cache::get::<R::Object>(request.namespace.as_deref(), &request.name) {
                    Ok(current) => self
                        .reconciler
                        .reconcile(&request, current)
                        .map_err(|e| e.context(format_args!("reconciling {request}"))),
                    Err(e) => {
                        Err(Error::msg(e).context(format_args!("reading {primary} {request}")))
                    }
                };
            match reconciled {
                Ok(action) => next = next.sooner(action),
                // The first failure is reported; the other keys are still tried.
                Err(error) => {
                    failed.get_or_insert(error);
                }
            }
        }
        if let Some(error) = failed {
            return Err(error);
        }
        if let Action::RequeueAfter(delay) = next {
            crate::workqueue::requeue_after(delay);
        }
        Ok(())
    }
}

impl<R: Reconciler> Handler for Reconcile<R> {
    fn manifest() -> Manifest {
        R::controller().manifest()
    }

    fn on_add(&mut self, event: &Event) -> Result<(), Error> {
        self.notified(&event.context().kind, event.json())
    }

    fn on_update(&mut self, update: &Update) -> Result<(), Error> {
        let controller = self.controller.get_or_insert_with(R::controller);
        if controller.filters(update)? {
            return Ok(());
        }
        self.notified(&update.context().kind, update.new_json())
    }

    fn on_delete(&mut self, event: &Event) -> Result<(), Error> {
        self.notified(&event.context().kind, event.json())
    }
}

/// Exports a [`Reconciler`] as the plugin's implementation of the ABI. Use
/// it exactly once, at the root of the plugin's `cdylib` crate.
#[macro_export]
macro_rules! export_reconciler {
    ($reconciler:ty) => {
        $crate::export_plugin!($crate::reconcile::Reconcile<$reconciler>);
    };
}

/// What [`finalizer`] asks of the reconcile it wraps.
#[derive(Debug)]
pub enum FinalizerEvent<K> {
    /// The object lives, with the finalizer on it: reconcile it.
    Apply(K),
    /// The object is being deleted: clean up what it made outside the
    /// cluster (or outside its owner references). The finalizer is removed
    /// once this returns `Ok`; an `Err` keeps it, and the cleanup runs
    /// again.
    Cleanup(K),
}

/// Runs `reconcile` with `name` as `object`'s finalizer, as kube-rs's
/// `finalizer`: a live object without it gets it added (the change brings
/// the next reconcile, which applies); a live object with it is applied;
/// an object being deleted with it is cleaned up, then the finalizer
/// removed; an object being deleted without it needs nothing. Both writes
/// are merge patches carrying the `resourceVersion` read, so a concurrent
/// change fails with a conflict and the reconcile is retried (a cleanup
/// must therefore be idempotent, as kube-rs asks). The plugin needs `patch`
/// on the kind in its write rules.
///
/// A state of the object this instance already wrote its finalizer change
/// at (the same `resourceVersion`: the cache has not caught up with the
/// write yet, and another notification mapped here) is left alone: the
/// write's own change brings the next reconcile. So a cleanup that
/// succeeded is not run again on the stale state, and an add does not
/// fail with a conflict. Nor is a cleanup that succeeded run again when
/// the finalizer's removal fails (a conflict with a write that landed
/// after the deletion, say): the instance remembers the object (by UID)
/// as cleaned up, and the retry only removes the finalizer. Only a new
/// instance (a host restart, a hot swap, a trap) cleans up again, as any
/// controller whose process stops between the two steps must.
pub fn finalizer<K>(
    object: K,
    name: &str,
    reconcile: impl FnOnce(FinalizerEvent<K>) -> Result<Action, Error>,
) -> Result<Action, Error>
where
    K: Resource + Metadata<Ty = ObjectMeta>,
{
    let meta = object.metadata();
    let finalizers = meta.finalizers.clone().unwrap_or_default();
    let has = finalizers.iter().any(|f| f == name);
    let deleting = meta.deletion_timestamp.is_some();
    let object_name = meta
        .name
        .clone()
        .ok_or_else(|| Error::new("the object has no name"))?;
    let kind = GroupVersionKind::of::<K>();
    let api = DynamicApi::new(kind.clone(), meta.namespace.as_deref());
    let resource_version = meta.resource_version.clone();
    let uid = meta.uid.clone();
    let written = written::Key::new(&kind, meta.namespace.as_deref(), &object_name, name);
    if resource_version
        .as_deref()
        .is_some_and(|version| written::at(&written, version))
    {
        return Ok(Action::await_change());
    }
    let write = |finalizers: Vec<String>, doing: &str| {
        let patch = serde_json::json!({
            "metadata": {"finalizers": finalizers, "resourceVersion": resource_version}
        });
        api.patch(&object_name, &Patch::Merge(patch))
            .map_err(|e| Error::msg(e).context(format_args!("{doing} finalizer {name}")))?;
        if let Some(version) = &resource_version {
            written::remember(written.clone(), version);
        }
        Ok::<(), Error>(())
    };
    match (deleting, has) {
        (false, false) => {
            let mut added = finalizers;
            added.push(name.to_owned());
            write(added, "adding")?;
            Ok(Action::await_change())
        }
        (false, true) => reconcile(FinalizerEvent::Apply(object)),
        (true, true) => {
            let cleaned = uid
                .as_deref()
                .is_some_and(|uid| written::cleaned_up(&written, uid));
            let action = if cleaned {
                Action::await_change()
            } else {
                let action = reconcile(FinalizerEvent::Cleanup(object))?;
                if let Some(uid) = &uid {
                    written::remember_cleanup(written.clone(), uid);
                }
                action
            };
            write(
                finalizers.iter().filter(|f| *f != name).cloned().collect(),
                "removing",
            )?;
            Ok(action)
        }
        (true, false) => Ok(Action::await_change()),
    }
}

/// What this instance did to objects' finalizers: the states it wrote a
/// finalizer change at, so that a reconcile of the same, stale state (the
/// cache not yet caught up with the write) does not write, or clean up,
/// again; and the objects (by UID) it cleaned up, so that a removal of the
/// finalizer that failed is retried without cleaning up twice.
mod written {
    use crate::GroupVersionKind;
    use std::cell::RefCell;
    use std::collections::VecDeque;

    /// How many objects each record keeps; the oldest is forgotten first (a
    /// forgotten one costs at most a repeated, idempotent write or cleanup).
    const REMEMBERED: usize = 1024;

    /// An object (kind, namespace, name) and one of its finalizers.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub(super) struct Key(String);

    impl Key {
        pub(super) fn new(
            kind: &GroupVersionKind,
            namespace: Option<&str>,
            name: &str,
            finalizer: &str,
        ) -> Self {
            Key(format!(
                "{kind} {}/{name} {finalizer}",
                namespace.unwrap_or_default()
            ))
        }
    }

    /// One value per key, the latest, for the [`REMEMBERED`] latest keys.
    type Record = RefCell<VecDeque<(Key, String)>>;

    thread_local! {
        /// The resourceVersion each finalizer change was written at.
        static WRITTEN: Record = const { RefCell::new(VecDeque::new()) };
        /// The UID of the object each cleanup succeeded for.
        static CLEANED: Record = const { RefCell::new(VecDeque::new()) };
    }

    fn holds(record: &'static std::thread::LocalKey<Record>, key: &Key, value: &str) -> bool {
        record.with(|r| r.borrow().iter().any(|(k, v)| k == key && v == value))
    }

    fn keep(record: &'static std::thread::LocalKey<Record>, key: Key, value: &str) {
        record.with(|r| {
            let mut r = r.borrow_mut();
            r.retain(|(k, _)| *k != key);
            if r.len() == REMEMBERED {
                r.pop_front();
            }
            r.push_back((key, value.to_owned()));
        });
    }

    /// Whether this instance wrote `key`'s finalizer change at `version`.
    pub(super) fn at(key: &Key, version: &str) -> bool {
        holds(&WRITTEN, key, version)
    }

    /// Remembers that this instance wrote `key`'s finalizer change at
    /// `version` (replacing what it remembered of `key`).
    pub(super) fn remember(key: Key, version: &str) {
        keep(&WRITTEN, key, version);
    }

    /// Whether this instance's cleanup for `key` succeeded on the object
    /// with this `uid`.
    pub(super) fn cleaned_up(key: &Key, uid: &str) -> bool {
        holds(&CLEANED, key, uid)
    }

    /// Remembers that the cleanup for `key` succeeded on the object with
    /// this `uid`.
    pub(super) fn remember_cleanup(key: Key, uid: &str) {
        keep(&CLEANED, key, uid);
    }
}

/// Sets `condition` in `conditions` as controller-runtime's
/// `meta.SetStatusCondition`: a condition of a new type is added as given
/// (its `lastTransitionTime` is the caller's now); one of a known type
/// takes the new status, reason, message and `observedGeneration`, and its
/// `lastTransitionTime` moves to the given one only when the status
/// changes. True when anything changed.
pub fn set_condition(conditions: &mut Vec<Condition>, condition: Condition) -> bool {
    let Some(existing) = conditions.iter_mut().find(|c| c.type_ == condition.type_) else {
        conditions.push(condition);
        return true;
    };
    let before = existing.clone();
    if existing.status != condition.status {
        existing.status = condition.status;
        existing.last_transition_time = condition.last_transition_time;
    }
    existing.reason = condition.reason;
    existing.message = condition.message;
    existing.observed_generation = condition.observed_generation;
    *existing != before
}

#[cfg(test)]
mod tests;
