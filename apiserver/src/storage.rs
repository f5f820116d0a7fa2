//! Object storage: every resource's objects, the one global resource version counter, the
//! history ring of change events and the broadcast channel that feeds watches.
//!
//! One mutex guards the state; it is held only for in-memory work, never while writing to a
//! socket. Events are shared with watchers as `Arc`s and serialized at most once.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::ops::Bound;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use base64::Engine;
use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::{Notify, broadcast};

use crate::apply;
use crate::managed_fields::{self, FieldSet, Operation, Scope, Writer};
use crate::object::{self, meta_mut};
use crate::patch::{self, PatchType};
use crate::registry::{CRD_GROUP, CRD_PLURAL, Registry, ResourceId, ResourceType};
use crate::selector::{FieldSelector, LabelSelector, field_value};
use crate::status::ApiError;
use crate::validate;

/// `(namespace, name)`; the namespace is empty for cluster-scoped objects.
pub(crate) type ObjKey = (String, String);

/// The type of a change event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventType {
    /// An object was created (or started matching a watch's selectors).
    Added,
    /// An object changed.
    Modified,
    /// An object was deleted (or stopped matching a watch's selectors).
    Deleted,
}

impl EventType {
    /// The wire name (`ADDED`).
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One change, as kept in the history ring and sent to watchers.
#[derive(Debug)]
pub(crate) struct Event {
    /// The resource version the change produced.
    pub rv: u64,
    /// What happened.
    pub kind: EventType,
    /// Which resource.
    pub resource: ResourceId,
    /// Which object.
    pub key: ObjKey,
    /// The object after the change (for deletes: its last state, with the delete's RV).
    pub object: Arc<Value>,
    /// The object before the change (`None` for creates).
    pub prev: Option<Arc<Value>>,
    line: OnceLock<Bytes>,
    frame: OnceLock<Bytes>,
}

impl Event {
    /// The watch line `{"type":…,"object":…}\n` for this event, serialized once and shared.
    pub fn line(&self) -> Bytes {
        self.line
            .get_or_init(|| render_line(self.kind.as_str(), &self.object))
            .clone()
    }

    /// The protobuf watch frame for this event, encoded once and shared.
    pub fn frame(&self) -> Result<Bytes, crate::protobuf::encode::EncodeError> {
        if let Some(frame) = self.frame.get() {
            return Ok(frame.clone());
        }
        let object = crate::protobuf::encode::object(&self.object)?;
        Ok(self
            .frame
            .get_or_init(|| crate::protobuf::encode::watch_frame(self.kind.as_str(), &object))
            .clone())
    }
}

/// Serialize one watch event line.
pub(crate) fn render_line(kind: &str, object: &Value) -> Bytes {
    let mut buf = Vec::with_capacity(512);
    buf.extend_from_slice(b"{\"type\":\"");
    buf.extend_from_slice(kind.as_bytes());
    buf.extend_from_slice(b"\",\"object\":");
    serde_json::to_writer(&mut buf, object).expect("JSON values always serialize");
    buf.extend_from_slice(b"}\n");
    Bytes::from(buf)
}

/// The resource, version and namespace a request addresses.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    /// The resource type.
    pub rt: Arc<ResourceType>,
    /// The version of the URL.
    pub version: String,
    /// The namespace of the URL (`None`: cluster-scoped, or all namespaces).
    pub namespace: Option<String>,
    /// The type requested when `rt` is the storage of another (`events.k8s.io` Events).
    pub view: Option<Arc<ResourceType>>,
}

impl Target {
    fn key(&self, name: &str) -> ObjKey {
        (self.namespace.clone().unwrap_or_default(), name.to_string())
    }

    /// The `apiVersion` this target serves.
    pub fn api_version(&self) -> String {
        self.view
            .as_ref()
            .unwrap_or(&self.rt)
            .api_version(&self.version)
    }

    /// Whether objects are served exactly as stored.
    pub fn serves_storage_form(&self) -> bool {
        self.view.is_none() && self.version == self.rt.storage_version
    }

    /// A written object in storage form (the `events.k8s.io` view converted and validated).
    pub fn ingest(&self, obj: Value, creating: bool) -> Result<Value, ApiError> {
        if self.view.is_none() {
            return Ok(obj);
        }
        crate::events::validate(&obj, creating)?;
        crate::events::to_core(obj)
    }

    /// The object as served at this target's version.
    pub fn present(&self, obj: Arc<Value>) -> Arc<Value> {
        if self.view.is_some() {
            return Arc::new(crate::events::to_events_v1(&obj));
        }
        if self.version == self.rt.storage_version {
            return obj;
        }
        let mut v = (*obj).clone();
        v["apiVersion"] = Value::String(self.rt.api_version(&self.version));
        Arc::new(v)
    }
}

/// Options of create, update and patch.
#[derive(Debug, Clone, Default)]
pub(crate) struct WriteOptions {
    /// `dryRun=All`: validate, don't store.
    pub dry_run: bool,
    /// Keep a given `uid`, `creationTimestamp` and `generation` (seeding).
    pub preserve_identity: bool,
    /// The field manager recorded in `metadata.managedFields` (`None`: none recorded).
    pub field_manager: Option<String>,
    /// `force=true` of a server-side apply: take conflicting fields.
    pub force: bool,
    /// The create is a server-side apply (its entry's operation is `Apply`).
    pub(crate) applying: bool,
}

/// Options of delete.
#[derive(Debug, Clone, Default)]
pub(crate) struct DeleteOptions {
    /// `dryRun=All`.
    pub dry_run: bool,
    /// `preconditions.resourceVersion`.
    pub precondition_rv: Option<String>,
    /// `preconditions.uid`.
    pub precondition_uid: Option<String>,
    /// `propagationPolicy=Orphan`: don't delete dependents.
    pub orphan: bool,
    /// The `propagationPolicy` given, as given (for admission webhooks' `options`).
    pub propagation: Option<String>,
}

/// Parameters of a list.
#[derive(Debug, Clone, Default)]
pub(crate) struct ListParams {
    /// `labelSelector`.
    pub label: LabelSelector,
    /// `fieldSelector`.
    pub field: FieldSelector,
    /// `limit` (0 or absent: no limit).
    pub limit: Option<usize>,
    /// `continue`.
    pub continue_token: Option<String>,
    /// `resourceVersion`.
    pub resource_version: Option<String>,
    /// `resourceVersionMatch`.
    pub rv_match: Option<String>,
}

/// One page of a list.
#[derive(Debug)]
pub(crate) struct ListResult {
    /// The resource version the page is consistent with.
    pub rv: u64,
    /// The objects, in storage version.
    pub items: Vec<Arc<Value>>,
    /// Token for the next page.
    pub continue_token: Option<String>,
    /// Objects left after this page (when cheap and selector-free).
    pub remaining: Option<u64>,
}

/// Where a new watch starts.
#[derive(Debug)]
pub(crate) enum WatchStart {
    /// Send the current state as ADDED events (then, if `end_bookmark`, the
    /// initial-events-end bookmark), then live events after `rv`.
    Initial {
        /// Current objects of the resource (unfiltered by selectors).
        objects: Vec<Arc<Value>>,
        /// The resource version of that state.
        rv: u64,
        /// Whether to send the `k8s.io/initial-events-end` bookmark.
        end_bookmark: bool,
    },
    /// Replay retained events after `from_rv`, then live events.
    History {
        /// Retained events of the resource after `from_rv`.
        events: Vec<Arc<Event>>,
        /// The resource version the client has seen.
        from_rv: u64,
    },
    /// The requested version is older than the retained history.
    Expired {
        /// What the client asked for.
        requested: u64,
        /// The oldest version the server can resume from.
        oldest: u64,
    },
}

/// Parameters deciding a watch's start.
#[derive(Debug, Clone, Default)]
pub(crate) struct WatchFrom {
    /// `resourceVersion`.
    pub resource_version: Option<String>,
    /// `sendInitialEvents=true`.
    pub send_initial_events: bool,
}

/// How an update's `managedFields` come about.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Ownership {
    /// Recorded from the change, as an `Update` by the write's field manager in this scope.
    Update(Scope),
    /// Already computed (server-side apply).
    Precomputed,
}

/// A create, update or patch as asked for, for [`Store::propose`].
#[derive(Debug, Clone)]
pub(crate) enum Write<'a> {
    /// A create of this body.
    Create(Value),
    /// A replacement of `name` (with `status_only`, of its status).
    Update {
        /// The object's name.
        name: &'a str,
        /// The body.
        body: Value,
        /// A write to the `/status` subresource.
        status_only: bool,
    },
    /// A patch of `name` (a server-side apply may create it).
    Patch {
        /// The object's name.
        name: &'a str,
        /// The patch format.
        kind: PatchType,
        /// The patch.
        patch: &'a Value,
        /// A write to the `/status` subresource.
        status_only: bool,
    },
}

/// A write's object before the server finishes it: what mutating admission webhooks see
/// and may change (`object`), and the stored object it replaces.
#[derive(Debug, Clone)]
pub(crate) struct Proposal {
    /// The stored object replaced (`None`: a create).
    pub existing: Option<Arc<Value>>,
    /// The object asked for, at the request's version (a create's without its generated
    /// name, uid or timestamps).
    pub object: Value,
    ownership: Ownership,
    /// A create by server-side apply: the fields its manager applied.
    requested: Option<Value>,
    applying: bool,
}

/// A write finished but not stored: what validating admission webhooks see.
#[derive(Debug)]
pub(crate) struct Staged {
    /// The object to store, in storage form.
    pub object: Value,
    /// The stored object it replaces (`None`: a create).
    pub existing: Option<Arc<Value>>,
    key: ObjKey,
    crd_type: Option<ResourceType>,
}

/// The ownership scope of a write.
fn scope(rt: &ResourceType, status_only: bool) -> Scope {
    if status_only {
        Scope::Status
    } else {
        Scope::Main {
            status_separate: rt.has_status,
        }
    }
}

/// What a write to `existing` stores: with `status_only`, `existing` with the written
/// `.status`; otherwise the written object, whose `.status` is ignored (kept as it was) for
/// kinds with a status subresource.
fn scoped(rt: &ResourceType, existing: &Value, written: Value, status_only: bool) -> Value {
    let (mut base, source) = if status_only {
        ((*existing).clone(), written)
    } else if rt.has_status {
        (written, existing.clone())
    } else {
        return written;
    };
    match source.get("status") {
        Some(s) => base["status"] = s.clone(),
        None => {
            base.as_object_mut().map(|m| m.remove("status"));
        }
    }
    base
}

#[derive(Serialize, Deserialize)]
struct ContinueToken {
    v: String,
    rv: u64,
    ns: String,
    name: String,
}

use serde::{Deserialize, Serialize};

struct State {
    rv: u64,
    registry: Registry,
    tables: HashMap<ResourceId, BTreeMap<ObjKey, Arc<Value>>>,
    history: VecDeque<Arc<Event>>,
    window: usize,
    /// Resuming from a version below this one gets 410 Gone (every event after it is in
    /// `history`).
    floor: u64,
    /// Owner uid → objects naming it in `ownerReferences`.
    dependents: HashMap<String, BTreeSet<(ResourceId, ObjKey)>>,
    tx: broadcast::Sender<Arc<Event>>,
}

/// The object store. Cheap to share behind an `Arc`.
pub(crate) struct Store {
    state: Mutex<State>,
    /// Signalled after every committed change (persistence listens).
    pub changed: Notify,
}

/// Capacity of the watch broadcast; a watcher further behind catches up from history.
const BROADCAST_CAPACITY: usize = 8192;

impl Store {
    /// An empty store with the three well-known namespaces.
    pub fn new(history_window: usize) -> Self {
        let (tx, _) = broadcast::channel(BROADCAST_CAPACITY);
        Store {
            state: Mutex::new(State {
                rv: 0,
                registry: Registry::new(),
                tables: HashMap::new(),
                history: VecDeque::new(),
                window: history_window.max(1),
                floor: 0,
                dependents: HashMap::new(),
                tx,
            }),
            changed: Notify::new(),
        }
    }

    /// Create the namespaces every cluster has, if missing.
    pub fn ensure_default_namespaces(&self) {
        let mut st = self.lock();
        let rt = st
            .registry
            .lookup("", "v1", "namespaces")
            .expect("namespaces are built in");
        for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
            if st.get(&rt.id, &(String::new(), ns.to_string())).is_none() {
                let target = Target {
                    rt: rt.clone(),
                    version: "v1".into(),
                    namespace: None,
                    view: None,
                };
                let obj =
                    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
                let _ = st.create(&target, obj, &WriteOptions::default());
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn notify(&self) {
        self.changed.notify_one();
    }

    /// The current global resource version.
    pub fn current_rv(&self) -> u64 {
        self.lock().rv
    }

    /// A copy of the registry of served types.
    pub fn registry(&self) -> Registry {
        self.lock().registry.clone()
    }

    /// The type with identity `id`.
    pub fn by_id(&self, id: &ResourceId) -> Option<Arc<ResourceType>> {
        self.lock().registry.by_id(id)
    }

    /// The type served at `group/version/plural`.
    pub fn lookup(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceType>> {
        self.lock().registry.lookup(group, version, plural)
    }

    /// Forget all history, as an etcd compaction at the current revision: every resume from
    /// an older version now gets 410 Gone; resuming from the current version (which has
    /// missed nothing) still works, as on a real API server.
    pub fn compact(&self) {
        let mut st = self.lock();
        st.history.clear();
        st.floor = st.rv;
    }

    /// Get one object.
    pub fn get(&self, target: &Target, name: &str) -> Result<Arc<Value>, ApiError> {
        let st = self.lock();
        st.get(&target.rt.id, &target.key(name))
            .map(|o| target.present(o))
            .ok_or_else(|| ApiError::not_found(&target.rt, name))
    }

    /// Create an object.
    pub fn create(
        &self,
        target: &Target,
        obj: Value,
        opts: &WriteOptions,
    ) -> Result<Arc<Value>, ApiError> {
        let result = self.lock().create(target, obj, opts);
        self.after_write(result, opts.dry_run)
    }

    /// Create an object given only its manifest (seeding): the type comes from
    /// `apiVersion`/`kind`, namespaced objects without a namespace go to `default`.
    pub fn create_manifest(&self, obj: Value) -> Result<Arc<Value>, ApiError> {
        let result = {
            let mut st = self.lock();
            let api_version = obj["apiVersion"].as_str().unwrap_or_default();
            let kind = obj["kind"].as_str().unwrap_or_default();
            let (group, version) = match api_version.split_once('/') {
                Some((g, v)) => (g, v),
                None => ("", api_version),
            };
            let Some(rt) = st.registry.lookup_kind(group, version, kind) else {
                return Err(ApiError::bad_request(format!(
                    "no resource of kind {kind:?} is served at {api_version:?}"
                )));
            };
            let namespace = rt.namespaced.then(|| {
                object::namespace(&obj)
                    .filter(|n| !n.is_empty())
                    .unwrap_or("default")
                    .to_string()
            });
            let (rt, view) = match rt.stored_as.as_ref().and_then(|id| st.registry.by_id(id)) {
                Some(storage) => (storage, Some(rt)),
                None => (rt, None),
            };
            let target = Target {
                rt,
                version: version.to_string(),
                namespace,
                view,
            };
            let opts = WriteOptions {
                preserve_identity: true,
                ..WriteOptions::default()
            };
            st.create(&target, obj, &opts)
        };
        self.after_write(result, false)
    }

    /// Replace an object (or, with `status_only`, only its status).
    pub fn update(
        &self,
        target: &Target,
        name: &str,
        body: Value,
        status_only: bool,
        opts: &WriteOptions,
    ) -> Result<Arc<Value>, ApiError> {
        let write = Write::Update {
            name,
            body,
            status_only,
        };
        let result = {
            let mut st = self.lock();
            st.propose(target, write, opts)
                .and_then(|p| st.write(target, p, opts))
        };
        self.after_write(result, opts.dry_run)
    }

    /// Patch an object; returns the result and whether it was created (server-side apply).
    pub fn patch(
        &self,
        target: &Target,
        name: &str,
        kind: PatchType,
        patch: &Value,
        status_only: bool,
        opts: &WriteOptions,
    ) -> Result<(Arc<Value>, bool), ApiError> {
        let write = Write::Patch {
            name,
            kind,
            patch,
            status_only,
        };
        let result = {
            let mut st = self.lock();
            st.propose(target, write, opts).and_then(|p| {
                let created = p.existing.is_none();
                st.write(target, p, opts).map(|o| (o, created))
            })
        };
        let created = matches!(result, Ok((_, true)));
        self.after_write(result.map(|(o, _)| o), opts.dry_run)
            .map(|o| (o, created))
    }

    /// The first step of a write in steps (the admission path): what `write` would store,
    /// before the server finishes it. Nothing is locked between the steps; [`commit`]
    /// notices a stored object that changed meanwhile.
    ///
    /// [`commit`]: Store::commit
    pub fn propose(
        &self,
        target: &Target,
        write: Write<'_>,
        opts: &WriteOptions,
    ) -> Result<Proposal, ApiError> {
        self.lock().propose(target, write, opts)
    }

    /// The second step: the proposal (perhaps changed by webhooks) finished and validated
    /// as any write is.
    pub fn stage(
        &self,
        target: &Target,
        proposal: Proposal,
        opts: &WriteOptions,
    ) -> Result<Staged, ApiError> {
        self.lock().stage(target, proposal, opts)
    }

    /// The last step: store what was staged, as served at the target's version; `Ok(None)`
    /// when the object it replaces changed since it was proposed (the write is to be done
    /// again from its proposal, as the real server retries an update whose object changed
    /// under it). A create finding the name taken is `409 AlreadyExists`.
    pub fn commit(
        &self,
        target: &Target,
        staged: Staged,
        dry_run: bool,
    ) -> Result<Option<Arc<Value>>, ApiError> {
        let result = self.lock().commit(target, staged, dry_run);
        if matches!(result, Ok(Some(_))) && !dry_run {
            self.notify();
        }
        result
    }

    /// One object as stored (storage form), for a delete's admission.
    pub fn get_stored(&self, target: &Target, name: &str) -> Result<Arc<Value>, ApiError> {
        let st = self.lock();
        st.get(&target.rt.id, &target.key(name))
            .ok_or_else(|| ApiError::not_found(&target.rt, name))
    }

    /// Delete an object if it is still `expected` (the one admission saw); `Ok(None)` when
    /// it changed meanwhile.
    pub fn delete_unchanged(
        &self,
        target: &Target,
        name: &str,
        opts: &DeleteOptions,
        expected: &Arc<Value>,
    ) -> Result<Option<Arc<Value>>, ApiError> {
        let result = {
            let mut st = self.lock();
            match st.get(&target.rt.id, &target.key(name)) {
                Some(current) if Arc::ptr_eq(&current, expected) => {
                    st.delete(target, name, opts).map(Some)
                }
                Some(_) => Ok(None),
                None => Err(ApiError::not_found(&target.rt, name)),
            }
        };
        if matches!(result, Ok(Some(_))) && !opts.dry_run {
            self.notify();
        }
        result
    }

    /// The Namespace object `name`, if it exists.
    pub fn namespace_object(&self, name: &str) -> Option<Arc<Value>> {
        let id = ResourceId {
            group: String::new(),
            plural: "namespaces".into(),
        };
        self.lock().get(&id, &(String::new(), name.to_string()))
    }

    /// The stored objects of the type `group`/`plural` (any namespace), in storage form.
    pub fn objects_of(&self, group: &str, plural: &str) -> Vec<Arc<Value>> {
        let id = ResourceId {
            group: group.to_string(),
            plural: plural.to_string(),
        };
        self.lock().current_objects(&id, None)
    }

    /// Delete an object (and its dependents, and a namespace's or CRD's contents).
    pub fn delete(
        &self,
        target: &Target,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Arc<Value>, ApiError> {
        let result = self.lock().delete(target, name, opts);
        self.after_write(result, opts.dry_run)
    }

    /// Delete every object a list with `params` would return; returns them.
    pub fn delete_collection(
        &self,
        target: &Target,
        params: &ListParams,
        opts: &DeleteOptions,
    ) -> Result<ListResult, ApiError> {
        let result = {
            let mut st = self.lock();
            let all = ListParams {
                label: params.label.clone(),
                field: params.field.clone(),
                ..ListParams::default()
            };
            let listed = st.list(target, &all)?;
            let mut deleted = Vec::new();
            for obj in listed.items {
                let name = object::name(&obj).unwrap_or_default().to_string();
                let t = Target {
                    namespace: target
                        .rt
                        .namespaced
                        .then(|| object::namespace(&obj).unwrap_or_default().to_string()),
                    ..target.clone()
                };
                if let Ok(o) = st.delete(&t, &name, opts) {
                    deleted.push(o);
                }
            }
            Ok(ListResult {
                rv: st.rv,
                items: deleted,
                continue_token: None,
                remaining: None,
            })
        };
        if !opts.dry_run {
            self.notify();
        }
        result
    }

    /// List objects.
    pub fn list(&self, target: &Target, params: &ListParams) -> Result<ListResult, ApiError> {
        self.lock().list(target, params)
    }

    /// Decide where a watch starts and subscribe it to live events, atomically.
    pub fn watch(
        &self,
        target: &Target,
        from: &WatchFrom,
    ) -> Result<(WatchStart, broadcast::Receiver<Arc<Event>>), ApiError> {
        let st = self.lock();
        let rx = st.tx.subscribe();
        let rv_param = from.resource_version.as_deref().unwrap_or("");
        if from.send_initial_events || rv_param.is_empty() || rv_param == "0" {
            let objects = st.current_objects(&target.rt.id, target.namespace.as_deref());
            return Ok((
                WatchStart::Initial {
                    objects,
                    rv: st.rv,
                    end_bookmark: from.send_initial_events,
                },
                rx,
            ));
        }
        let requested: u64 = rv_param.parse().map_err(|_| {
            ApiError::bad_request(format!("invalid resource version: {rv_param:?}"))
        })?;
        Ok((st.history_after(&target.rt.id, requested), rx))
    }

    /// Re-subscribe a watcher that fell behind the broadcast, replaying retained events.
    pub fn catch_up(
        &self,
        resource: &ResourceId,
        from_rv: u64,
    ) -> (WatchStart, broadcast::Receiver<Arc<Event>>) {
        let st = self.lock();
        let rx = st.tx.subscribe();
        (st.history_after(resource, from_rv), rx)
    }

    /// Every stored object with its resource, and the current resource version.
    pub fn export(&self) -> (u64, Vec<(ResourceId, Arc<Value>)>) {
        let st = self.lock();
        let mut ids: Vec<&ResourceId> = st.tables.keys().collect();
        // CRDs first, so that restoring registers types before their objects.
        ids.sort_by_key(|id| {
            (
                id.plural != CRD_PLURAL || id.group != CRD_GROUP,
                (*id).clone(),
            )
        });
        let objects = ids
            .into_iter()
            .flat_map(|id| st.tables[id].values().map(move |o| (id.clone(), o.clone())))
            .collect();
        (st.rv, objects)
    }

    /// Load exported objects verbatim and set the resource version counter (no events).
    pub fn import(&self, rv: u64, objects: Vec<(ResourceId, Value)>) -> Result<(), String> {
        let mut st = self.lock();
        for (id, obj) in objects {
            if id.group == CRD_GROUP && id.plural == CRD_PLURAL {
                let rt = crate::registry::crd_resource_type(&obj)
                    .map_err(|(f, p)| format!("invalid CRD: {f}: {p}"))?;
                st.registry.register_crd(rt);
            }
            if st.registry.by_id(&id).is_none() {
                return Err(format!("unknown resource {}", id.plural));
            }
            let key = (
                object::namespace(&obj).unwrap_or_default().to_string(),
                object::name(&obj).unwrap_or_default().to_string(),
            );
            let obj = Arc::new(obj);
            for owner in object::owner_uids(&obj) {
                st.dependents
                    .entry(owner)
                    .or_default()
                    .insert((id.clone(), key.clone()));
            }
            st.tables.entry(id).or_default().insert(key, obj);
        }
        st.rv = st.rv.max(rv);
        st.floor = st.rv;
        st.history.clear();
        Ok(())
    }

    fn after_write<T>(&self, result: Result<T, ApiError>, dry_run: bool) -> Result<T, ApiError> {
        if result.is_ok() && !dry_run {
            self.notify();
        }
        result
    }
}

/// Whether a resource supports filtering on a field in a field selector.
pub(crate) fn supports_field(rt: &ResourceType, field: &str) -> bool {
    if matches!(field, "metadata.name" | "metadata.namespace") {
        return true;
    }
    let extra: &[&str] = match (rt.id.group.as_str(), rt.id.plural.as_str()) {
        ("", "pods") => &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "status.phase",
            "status.podIP",
        ],
        ("", "events") => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "source",
            "type",
        ],
        ("", "secrets") => &["type"],
        ("", "namespaces") => &["status.phase"],
        ("", "nodes") => &["spec.unschedulable"],
        ("batch", "jobs") => &["status.successful"],
        _ => &[],
    };
    extra.contains(&field)
}

/// Whether an object passes a list's or watch's selectors.
pub(crate) fn selected(obj: &Value, label: &LabelSelector, field: &FieldSelector) -> bool {
    (label.is_empty() || label.matches_json(object::labels(obj)))
        && (field.is_empty() || field.matches(|f| field_value(obj, f)))
}

fn encode_continue(rv: u64, key: &ObjKey) -> String {
    let token = ContinueToken {
        v: "meta.k8s.io/v1".into(),
        rv,
        ns: key.0.clone(),
        name: key.1.clone(),
    };
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(serde_json::to_vec(&token).expect("token serializes"))
}

fn decode_continue(token: &str) -> Result<ContinueToken, ApiError> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .ok()
        .and_then(|b| serde_json::from_slice::<ContinueToken>(&b).ok())
        .ok_or_else(|| ApiError::bad_request(format!("invalid continue token: {token:?}")))
}

const EXPIRED_CONTINUE: &str = "The provided continue parameter is too old to display a \
     consistent list result. You can start a new list without the continue parameter, or use \
     the continue token in this response to retrieve the remainder of the results. Continuing \
     with the provided token results in an inconsistent list - objects that were created, \
     modified, or deleted between the time the first chunk was returned and now may show up \
     in the list.";

impl State {
    fn get(&self, id: &ResourceId, key: &ObjKey) -> Option<Arc<Value>> {
        self.tables.get(id).and_then(|t| t.get(key)).cloned()
    }

    fn namespace_exists(&self, ns: &str) -> bool {
        let id = ResourceId {
            group: String::new(),
            plural: "namespaces".into(),
        };
        self.get(&id, &(String::new(), ns.to_string())).is_some()
    }

    fn current_objects(&self, id: &ResourceId, ns: Option<&str>) -> Vec<Arc<Value>> {
        let Some(table) = self.tables.get(id) else {
            return Vec::new();
        };
        match ns {
            Some(ns) => table
                .range((ns.to_string(), String::new())..)
                .take_while(|(k, _)| k.0 == ns)
                .map(|(_, v)| v.clone())
                .collect(),
            None => table.values().cloned().collect(),
        }
    }

    fn history_after(&self, id: &ResourceId, requested: u64) -> WatchStart {
        if requested < self.floor {
            return WatchStart::Expired {
                requested,
                oldest: self.floor,
            };
        }
        let start = self.history.partition_point(|e| e.rv <= requested);
        let events = self
            .history
            .range(start..)
            .filter(|e| &e.resource == id)
            .cloned()
            .collect();
        WatchStart::History {
            events,
            from_rv: requested,
        }
    }

    fn emit(&mut self, event: Event) {
        let event = Arc::new(event);
        self.history.push_back(event.clone());
        while self.history.len() > self.window {
            if let Some(old) = self.history.pop_front() {
                self.floor = self.floor.max(old.rv);
            }
        }
        let _ = self.tx.send(event);
    }

    fn index_owners(
        &mut self,
        id: &ResourceId,
        key: &ObjKey,
        old: Option<&Value>,
        new: Option<&Value>,
    ) {
        let old_owners = old.map(object::owner_uids).unwrap_or_default();
        let new_owners = new.map(object::owner_uids).unwrap_or_default();
        if old_owners == new_owners {
            return;
        }
        let entry = (id.clone(), key.clone());
        for o in old_owners {
            if let Some(set) = self.dependents.get_mut(&o) {
                set.remove(&entry);
                if set.is_empty() {
                    self.dependents.remove(&o);
                }
            }
        }
        for o in new_owners {
            self.dependents.entry(o).or_default().insert(entry.clone());
        }
    }

    /// Store `obj` under a new resource version and emit ADDED/MODIFIED.
    fn commit_put(&mut self, rt: &ResourceType, key: ObjKey, mut obj: Value) -> Arc<Value> {
        self.rv += 1;
        object::set_resource_version(&mut obj, self.rv);
        let obj = Arc::new(obj);
        let prev = self
            .tables
            .entry(rt.id.clone())
            .or_default()
            .insert(key.clone(), obj.clone());
        self.index_owners(&rt.id, &key, prev.as_deref(), Some(&obj));
        let kind = if prev.is_some() {
            EventType::Modified
        } else {
            EventType::Added
        };
        self.emit(Event {
            rv: self.rv,
            kind,
            resource: rt.id.clone(),
            key,
            object: obj.clone(),
            prev,
            line: OnceLock::new(),
            frame: OnceLock::new(),
        });
        obj
    }

    /// Remove an object under a new resource version and emit DELETED with its last state.
    fn commit_delete(
        &mut self,
        id: &ResourceId,
        key: &ObjKey,
        finalize: impl FnOnce(&mut Value),
    ) -> Option<Arc<Value>> {
        let prev = self.tables.get_mut(id)?.remove(key)?;
        self.rv += 1;
        let mut last = (*prev).clone();
        finalize(&mut last);
        object::set_resource_version(&mut last, self.rv);
        let last = Arc::new(last);
        self.index_owners(id, key, Some(&prev), None);
        self.emit(Event {
            rv: self.rv,
            kind: EventType::Deleted,
            resource: id.clone(),
            key: key.clone(),
            object: last.clone(),
            prev: Some(prev),
            line: OnceLock::new(),
            frame: OnceLock::new(),
        });
        Some(last)
    }

    /// Check `apiVersion` and `kind` of a request body against the URL, filling them in if absent.
    fn check_type(target: &Target, obj: &mut Value) -> Result<(), ApiError> {
        let rt = &target.rt;
        if !obj.is_object() {
            return Err(ApiError::bad_request(
                "the body of the request must be a JSON object",
            ));
        }
        let expected_av = rt.api_version(&target.version);
        let name = object::name(obj).unwrap_or_default().to_string();
        match obj.get("apiVersion").and_then(Value::as_str) {
            None | Some("") => obj["apiVersion"] = Value::String(expected_av),
            Some(av) if av == expected_av => {}
            Some(av) => {
                return Err(ApiError::invalid(
                    rt,
                    &name,
                    "apiVersion",
                    &format!(
                        "Invalid value: \"{av}\": must be {expected_av} for {}",
                        rt.qualified()
                    ),
                ));
            }
        }
        match obj.get("kind").and_then(Value::as_str) {
            None | Some("") => obj["kind"] = Value::String(rt.kind.clone()),
            Some(k) if k == rt.kind => {}
            Some(k) => {
                return Err(ApiError::invalid(
                    rt,
                    &name,
                    "kind",
                    &format!("Invalid value: \"{k}\": must be {}", rt.kind),
                ));
            }
        }
        if obj.get("metadata").is_some_and(|m| !m.is_object()) {
            return Err(ApiError::bad_request("metadata must be an object"));
        }
        Ok(())
    }

    /// Check the body's namespace against the URL's and set it.
    fn check_namespace(target: &Target, obj: &mut Value) -> Result<(), ApiError> {
        if !target.rt.namespaced {
            meta_mut(obj).remove("namespace");
            return Ok(());
        }
        let Some(ns) = target.namespace.as_deref() else {
            return Err(ApiError::method_not_allowed());
        };
        match object::namespace(obj) {
            Some(body_ns) if !body_ns.is_empty() && body_ns != ns => {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            _ => {}
        }
        meta_mut(obj).insert("namespace".into(), Value::String(ns.to_string()));
        Ok(())
    }

    /// Type-specific defaults and validation shared by create and update; returns the
    /// resource type a CRD defines.
    fn type_rules(
        &self,
        rt: &ResourceType,
        obj: &mut Value,
    ) -> Result<Option<ResourceType>, ApiError> {
        crate::kind_rules::check(rt, obj)?;
        let name = object::name(obj).unwrap_or_default().to_string();
        match (rt.id.group.as_str(), rt.id.plural.as_str()) {
            // kube-apiserver folds a Secret's write-only `stringData` into
            // `data` (base64), the string winning over a key of both, and
            // never stores it.
            ("", "secrets") => fold_string_data(obj),
            ("", "namespaces") => {
                let labels = meta_mut(obj).entry("labels").or_insert_with(|| json!({}));
                if let Some(l) = labels.as_object_mut() {
                    l.insert(
                        "kubernetes.io/metadata.name".into(),
                        Value::String(name.clone()),
                    );
                }
                if obj["spec"]["finalizers"].is_null() {
                    obj["spec"] = json!({"finalizers": ["kubernetes"]});
                }
                if obj["status"]["phase"].is_null() {
                    obj["status"] = json!({"phase": "Active"});
                }
            }
            // kube-apiserver's defaulting gives each claim template its
            // type, whatever was written (and protobuf, which does not
            // carry an embedded object's type, relies on it).
            ("apps", "statefulsets") => {
                let templates = obj
                    .get_mut("spec")
                    .and_then(|spec| spec.get_mut("volumeClaimTemplates"))
                    .and_then(Value::as_array_mut);
                for template in templates.into_iter().flatten() {
                    if let Some(template) = template.as_object_mut() {
                        template.insert("apiVersion".into(), json!("v1"));
                        template.insert("kind".into(), json!("PersistentVolumeClaim"));
                    }
                }
            }
            ("", "pods") if obj["status"]["phase"].is_null() => {
                if !obj["status"].is_object() {
                    obj["status"] = json!({});
                }
                obj["status"]["phase"] = json!("Pending");
            }
            (CRD_GROUP, CRD_PLURAL) => {
                let crt = crate::registry::crd_resource_type(obj)
                    .map_err(|(field, problem)| ApiError::invalid(rt, &name, &field, &problem))?;
                if self.registry.is_taken(&crt.id, &name) {
                    return Err(ApiError::invalid(
                        rt,
                        &name,
                        "spec.names.plural",
                        &format!("Invalid value: {:?}: already served", crt.id.plural),
                    ));
                }
                let now = object::now_rfc3339();
                let cond = |t: &str, reason: &str, msg: &str| json!({"type": t, "status": "True", "lastTransitionTime": now, "reason": reason, "message": msg});
                let status = json!({
                    "conditions": [
                        cond("NamesAccepted", "NoConflicts", "no conflicts found"),
                        cond("Established", "InitialNamesAccepted", "the initial names have been accepted"),
                    ],
                    "acceptedNames": obj["spec"]["names"].clone(),
                    "storedVersions": [crt.storage_version.clone()],
                });
                let keep = obj["status"]["conditions"].is_array()
                    && obj["status"]["acceptedNames"] == obj["spec"]["names"];
                if !keep {
                    obj["status"] = status;
                }
                return Ok(Some(crt));
            }
            _ => {}
        }
        Ok(None)
    }

    /// A create's object as asked for, checked against the URL (what a mutating webhook sees
    /// of a create: no name generated, no uid yet). A missing namespace is refused here, as
    /// the real server's `NamespaceLifecycle` refuses it before any webhook runs.
    fn propose_create(
        &self,
        target: &Target,
        obj: Value,
        opts: &WriteOptions,
    ) -> Result<Proposal, ApiError> {
        if self.terminating_crd(&target.rt).is_some() {
            return Err(ApiError::crd_terminating("create"));
        }
        let mut obj = target.ingest(obj, true)?;
        Self::check_type(target, &mut obj)?;
        Self::check_namespace(target, &mut obj)?;
        if target.rt.namespaced {
            let ns = target.namespace.clone().unwrap_or_default();
            if !self.namespace_exists(&ns) {
                return Err(ApiError::not_found_in("", "namespaces", &ns));
            }
        }
        Ok(Proposal {
            existing: None,
            requested: opts.applying.then(|| obj.clone()),
            object: obj,
            ownership: Ownership::Precomputed,
            applying: opts.applying,
        })
    }

    /// The object a create stores: name, identity, type rules and managed fields.
    fn stage_create(
        &self,
        target: &Target,
        proposal: Proposal,
        opts: &WriteOptions,
    ) -> Result<Staged, ApiError> {
        let rt = target.rt.clone();
        let mut obj = proposal.object;
        let meta = meta_mut(&mut obj);
        let given = meta
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .map(str::to_string);
        let generate = meta
            .get("generateName")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .map(str::to_string);
        let ns = target.namespace.clone().unwrap_or_default();
        let name = match (given, generate) {
            (Some(n), _) => n,
            (None, Some(prefix)) => {
                let mut name = format!("{prefix}{}", object::name_suffix());
                for _ in 0..8 {
                    if self.get(&rt.id, &(ns.clone(), name.clone())).is_none() {
                        break;
                    }
                    name = format!("{prefix}{}", object::name_suffix());
                }
                name
            }
            (None, None) => {
                return Err(ApiError::invalid(
                    &rt,
                    "",
                    "metadata.name",
                    "Required value: name or generateName is required",
                ));
            }
        };
        validate::check_name(&name, &rt.id.group, &rt.id.plural)
            .map_err(|problem| ApiError::invalid(&rt, &name, "metadata.name", &problem))?;
        if rt.namespaced && !self.namespace_exists(&ns) {
            return Err(ApiError::not_found_in("", "namespaces", &ns));
        }
        let key = (ns, name.clone());
        if self.get(&rt.id, &key).is_some() {
            return Err(ApiError::already_exists(&rt, &name));
        }
        let meta = meta_mut(&mut obj);
        meta.insert("name".into(), Value::String(name.clone()));
        let keep = |meta: &serde_json::Map<String, Value>, k: &str| {
            opts.preserve_identity && meta.get(k).is_some_and(|v| !v.is_null())
        };
        if !keep(meta, "uid") {
            meta.insert("uid".into(), Value::String(object::new_uid()));
        }
        if !keep(meta, "creationTimestamp") {
            meta.insert(
                "creationTimestamp".into(),
                Value::String(object::now_rfc3339()),
            );
        }
        if !keep(meta, "generation") {
            meta.insert("generation".into(), json!(1));
        }
        if !opts.preserve_identity {
            meta.remove("deletionTimestamp");
        }
        meta.remove("resourceVersion");
        let crd_type = self.type_rules(&rt, &mut obj)?;
        obj["apiVersion"] = Value::String(rt.api_version(&rt.storage_version));
        match &opts.field_manager {
            Some(manager) => {
                let api_version = target.api_version();
                let writer = Writer {
                    manager,
                    api_version: &api_version,
                    scope: Scope::Main {
                        status_separate: rt.has_status,
                    },
                };
                let entries = match (&proposal.requested, proposal.applying) {
                    (Some(requested), true) => {
                        let mut entries = Vec::new();
                        let fields = FieldSet::of(requested, writer.scope);
                        managed_fields::put_entry(&mut entries, &writer, Operation::Apply, fields);
                        entries
                    }
                    _ => managed_fields::record_update(&Value::Null, &obj, &writer),
                };
                managed_fields::set_entries(&mut obj, &entries);
            }
            None if !opts.preserve_identity => {
                meta_mut(&mut obj).remove("managedFields");
            }
            None => {}
        }
        Ok(Staged {
            object: obj,
            existing: None,
            key,
            crd_type,
        })
    }

    /// The object an update or patch stores: server-owned metadata kept, the generation
    /// bumped on a spec change, managed fields recorded.
    fn stage_update(
        &self,
        target: &Target,
        proposal: Proposal,
        opts: &WriteOptions,
    ) -> Result<Staged, ApiError> {
        let rt = target.rt.clone();
        let existing = proposal
            .existing
            .expect("an update proposal replaces an object");
        let mut new = proposal.object;
        let name = object::name(&existing).unwrap_or_default().to_string();
        let key = target.key(&name);
        {
            let old_meta = object::meta(&existing).cloned().unwrap_or_default();
            let meta = meta_mut(&mut new);
            for k in [
                "uid",
                "creationTimestamp",
                "name",
                "namespace",
                "deletionTimestamp",
                "resourceVersion",
            ] {
                match old_meta.get(k) {
                    Some(v) => meta.insert(k.into(), v.clone()),
                    None => meta.remove(k),
                };
            }
            let generation = old_meta
                .get("generation")
                .and_then(Value::as_i64)
                .unwrap_or(1);
            meta.insert("generation".into(), json!(generation));
        }
        new["apiVersion"] = Value::String(rt.api_version(&rt.storage_version));
        new["kind"] = Value::String(rt.kind.clone());
        let crd_type = self.type_rules(&rt, &mut new)?;
        if !object::spec_part_eq(&existing, &new)
            || annotations_move_generation(&rt, &existing, &new)
        {
            let generation = new["metadata"]["generation"].as_i64().unwrap_or(1);
            new["metadata"]["generation"] = json!(generation + 1);
        }
        if let Ownership::Update(scope) = proposal.ownership {
            // Only the server maintains managedFields on non-apply writes.
            match object::meta(&existing).and_then(|m| m.get("managedFields")) {
                Some(mf) => meta_mut(&mut new).insert("managedFields".into(), mf.clone()),
                None => meta_mut(&mut new).remove("managedFields"),
            };
            if &new != existing.as_ref()
                && let Some(manager) = &opts.field_manager
            {
                let api_version = target.api_version();
                let writer = Writer {
                    manager,
                    api_version: &api_version,
                    scope,
                };
                let entries = managed_fields::record_update(&existing, &new, &writer);
                managed_fields::set_entries(&mut new, &entries);
            }
        }
        Ok(Staged {
            object: new,
            existing: Some(existing),
            key,
            crd_type,
        })
    }

    /// The object a proposal stores, once finished.
    fn stage(
        &self,
        target: &Target,
        proposal: Proposal,
        opts: &WriteOptions,
    ) -> Result<Staged, ApiError> {
        if proposal.existing.is_some() {
            self.stage_update(target, proposal, opts)
        } else {
            self.stage_create(target, proposal, opts)
        }
    }

    /// Store a staged write, unless what it replaces changed since it was staged
    /// (`Ok(None)`: stale, to be done again). A dry run stores nothing; an update that
    /// changes nothing keeps the stored object and its resource version.
    fn commit(
        &mut self,
        target: &Target,
        staged: Staged,
        dry_run: bool,
    ) -> Result<Option<Arc<Value>>, ApiError> {
        let rt = target.rt.clone();
        if dry_run {
            return Ok(Some(target.present(Arc::new(staged.object))));
        }
        match &staged.existing {
            None => {
                if rt.namespaced && !self.namespace_exists(&staged.key.0) {
                    return Err(ApiError::not_found_in("", "namespaces", &staged.key.0));
                }
                if self.get(&rt.id, &staged.key).is_some() {
                    return Err(ApiError::already_exists(&rt, &staged.key.1));
                }
            }
            Some(existing) => {
                match self.get(&rt.id, &staged.key) {
                    Some(current) if Arc::ptr_eq(&current, existing) => {}
                    _ => return Ok(None),
                }
                if &staged.object == existing.as_ref() {
                    return Ok(Some(target.present(existing.clone())));
                }
                if being_deleted(existing) {
                    let before = finalizers(existing);
                    if finalizers(&staged.object).any(|f| !before.clone().any(|b| b == f)) {
                        return Err(ApiError::invalid(
                            &rt,
                            &staged.key.1,
                            "metadata.finalizers",
                            "Forbidden: no new finalizers can be added if the object is being deleted",
                        ));
                    }
                    if !has_finalizers(&staged.object) {
                        // The last finalizer removed: the write is stored, then the
                        // object deleted (MODIFIED, then DELETED, as the real server).
                        let last = self.commit_put(&rt, staged.key.clone(), staged.object);
                        self.commit_delete(&rt.id, &staged.key, |_| {});
                        self.delete_dependents(
                            object::uid(&last).map(str::to_string).into_iter().collect(),
                        );
                        self.finish_crd_deletion(&rt);
                        return Ok(Some(target.present(last)));
                    }
                }
            }
        }
        let stored = self.commit_put(&rt, staged.key, staged.object);
        if let Some(crt) = staged.crd_type {
            self.registry.register_crd(crt);
        }
        Ok(Some(target.present(stored)))
    }

    /// Propose, stage and commit in one go (under the one lock, so never stale).
    fn write(
        &mut self,
        target: &Target,
        proposal: Proposal,
        opts: &WriteOptions,
    ) -> Result<Arc<Value>, ApiError> {
        let staged = self.stage(target, proposal, opts)?;
        Ok(self
            .commit(target, staged, opts.dry_run)?
            .expect("nothing changes while the lock is held"))
    }

    fn create(
        &mut self,
        target: &Target,
        obj: Value,
        opts: &WriteOptions,
    ) -> Result<Arc<Value>, ApiError> {
        let proposal = self.propose_create(target, obj, opts)?;
        self.write(target, proposal, opts)
    }

    /// An update's object: the body checked against the URL and the stored object, with
    /// `.status` (or, for a status write, all but `.status`) kept as stored.
    fn propose_update(
        &self,
        target: &Target,
        name: &str,
        body: Value,
        status_only: bool,
    ) -> Result<Proposal, ApiError> {
        let rt = target.rt.clone();
        let mut body = target.ingest(body, false)?;
        Self::check_type(target, &mut body)?;
        match object::name(&body) {
            Some(n) if !n.is_empty() && n != name => {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({n}) does not match the name on the URL ({name})"
                )));
            }
            _ => {}
        }
        meta_mut(&mut body).insert("name".into(), Value::String(name.to_string()));
        Self::check_namespace(target, &mut body)?;
        let existing = self
            .get(&rt.id, &target.key(name))
            .ok_or_else(|| ApiError::not_found(&rt, name))?;
        if let Some(rv) = object::resource_version(&body).filter(|rv| !rv.is_empty())
            && Some(rv) != object::resource_version(&existing)
        {
            return Err(ApiError::conflict(&rt, name));
        }
        let new = scoped(&rt, &existing, body, status_only);
        Ok(Proposal {
            existing: Some(existing),
            object: new,
            ownership: Ownership::Update(scope(&rt, status_only)),
            requested: None,
            applying: false,
        })
    }

    /// A patch's object: the patch applied to the stored object (or, for an apply of an
    /// object that does not exist, a create).
    fn propose_patch(
        &self,
        target: &Target,
        name: &str,
        kind: PatchType,
        patch: &Value,
        status_only: bool,
        opts: &WriteOptions,
    ) -> Result<Proposal, ApiError> {
        let rt = target.rt.clone();
        let Some(existing) = self.get(&rt.id, &target.key(name)) else {
            if kind == PatchType::Apply && !status_only {
                let mut obj = patch.clone();
                let opts = &WriteOptions {
                    applying: true,
                    ..opts.clone()
                };
                if !obj.is_object() {
                    return Err(ApiError::bad_request("an apply patch must be an object"));
                }
                match object::name(&obj) {
                    Some(n) if n != name => {
                        return Err(ApiError::bad_request(format!(
                            "the name of the object ({n}) does not match the name on the URL ({name})"
                        )));
                    }
                    _ => {
                        meta_mut(&mut obj).insert("name".into(), Value::String(name.into()));
                    }
                }
                return self.propose_create(target, obj, opts);
            }
            return Err(ApiError::not_found(&rt, name));
        };
        let mut doc = (*target.present(existing.clone())).clone();
        let mut ownership = Ownership::Update(scope(&rt, status_only));
        match kind {
            PatchType::Merge => patch::merge_patch(&mut doc, patch),
            PatchType::Strategic => patch::strategic_merge(&mut doc, patch),
            PatchType::Apply => {
                let mut body = patch.clone();
                if target.view.is_none() {
                    Self::check_type(target, &mut body)?;
                }
                let api_version = target.api_version();
                let writer = Writer {
                    manager: opts.field_manager.as_deref().unwrap_or_default(),
                    api_version: &api_version,
                    scope: scope(&rt, status_only),
                };
                doc = apply::apply(&doc, &body, &writer, opts.force)?;
                ownership = Ownership::Precomputed;
            }
            PatchType::Json => patch::json_patch(&mut doc, patch)
                .map_err(|e| ApiError::invalid(&rt, name, "patch", &e))?,
        }
        if !doc.is_object() {
            return Err(ApiError::bad_request("the patch result is not an object"));
        }
        let mut doc = target.ingest(doc, false)?;
        Self::check_type(target, &mut doc)?;
        if object::name(&doc) != Some(name) {
            return Err(ApiError::invalid(
                &rt,
                name,
                "metadata.name",
                "Invalid value: field is immutable",
            ));
        }
        if let Some(rv) = object::resource_version(&doc).filter(|rv| !rv.is_empty())
            && Some(rv) != object::resource_version(&existing)
        {
            return Err(ApiError::conflict(&rt, name));
        }
        let managed = doc["metadata"]["managedFields"].clone();
        let mut new = scoped(&rt, &existing, doc, status_only);
        if matches!(ownership, Ownership::Precomputed) {
            match managed {
                Value::Null => meta_mut(&mut new).remove("managedFields"),
                mf => meta_mut(&mut new).insert("managedFields".into(), mf),
            };
        }
        Ok(Proposal {
            existing: Some(existing),
            object: new,
            ownership,
            requested: None,
            applying: false,
        })
    }

    /// What `write` asks for, as a proposal.
    fn propose(
        &self,
        target: &Target,
        write: Write<'_>,
        opts: &WriteOptions,
    ) -> Result<Proposal, ApiError> {
        match write {
            Write::Create(obj) => self.propose_create(target, obj, opts),
            Write::Update {
                name,
                body,
                status_only,
            } => self.propose_update(target, name, body, status_only),
            Write::Patch {
                name,
                kind,
                patch,
                status_only,
            } => self.propose_patch(target, name, kind, patch, status_only, opts),
        }
    }

    fn delete(
        &mut self,
        target: &Target,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Arc<Value>, ApiError> {
        let rt = target.rt.clone();
        let key = target.key(name);
        let existing = self
            .get(&rt.id, &key)
            .ok_or_else(|| ApiError::not_found(&rt, name))?;
        if let Some(uid) = &opts.precondition_uid
            && Some(uid.as_str()) != object::uid(&existing)
        {
            let actual = object::uid(&existing).unwrap_or_default();
            return Err(ApiError::precondition_failed(&rt, name, "UID", uid, actual));
        }
        if let Some(rv) = &opts.precondition_rv
            && Some(rv.as_str()) != object::resource_version(&existing)
        {
            let actual = object::resource_version(&existing).unwrap_or_default();
            return Err(ApiError::precondition_failed(
                &rt,
                name,
                "ResourceVersion",
                rv,
                actual,
            ));
        }
        if opts.dry_run {
            return Ok(target.present(existing));
        }
        let is_namespace = rt.id.group.is_empty() && rt.id.plural == "namespaces";
        let is_crd = rt.id.group == CRD_GROUP && rt.id.plural == CRD_PLURAL;
        if !is_namespace && !is_crd && has_finalizers(&existing) {
            return Ok(self.mark_for_deletion(target, key, existing));
        }
        if is_crd && self.delete_custom_resources(name) {
            // Some are held by their finalizers: the CRD waits for them, as
            // kube-apiserver's `customresourcecleanup` finalizer makes it.
            return Ok(self.mark_for_deletion(target, key, existing));
        }
        let mut cascade: Vec<String> = Vec::new();
        if is_namespace {
            let mut victims: Vec<(ResourceId, ObjKey)> = Vec::new();
            for (id, table) in &self.tables {
                for k in table
                    .range((name.to_string(), String::new())..)
                    .take_while(|(k, _)| k.0 == name)
                    .map(|(k, _)| k)
                {
                    victims.push((id.clone(), k.clone()));
                }
            }
            victims.sort();
            for (id, k) in victims {
                if let Some(gone) = self.commit_delete(&id, &k, |_| {}) {
                    cascade.extend(object::uid(&gone).map(str::to_string));
                }
            }
        }
        if is_crd && let Some(crt) = self.registry.unregister_crd(name) {
            if let Some(table) = self.tables.get(&crt.id) {
                let keys: Vec<ObjKey> = table.keys().cloned().collect();
                for k in keys {
                    self.commit_delete(&crt.id, &k, |_| {});
                }
            }
            self.tables.remove(&crt.id);
        }
        let now = object::now_rfc3339();
        let last = self
            .commit_delete(&rt.id, &key, |obj| {
                if is_namespace {
                    meta_mut(obj).insert("deletionTimestamp".into(), Value::String(now));
                    obj["status"] = json!({"phase": "Terminating"});
                }
            })
            .expect("checked above");
        if !opts.orphan {
            cascade.extend(object::uid(&last).map(str::to_string));
            self.delete_dependents(cascade);
        }
        Ok(target.present(last))
    }

    /// Deletes, transitively, every object owned by one of `owners` (UIDs), as the
    /// garbage collector does.
    fn delete_dependents(&mut self, mut owners: Vec<String>) {
        while let Some(uid) = owners.pop() {
            let Some(deps) = self.dependents.remove(&uid) else {
                continue;
            };
            for (id, k) in deps {
                if let Some(gone) = self.commit_delete(&id, &k, |_| {}) {
                    owners.extend(object::uid(&gone).map(str::to_string));
                }
            }
        }
    }

    /// Deletes every object of the resource the CRD `crd_name` defines, as
    /// kube-apiserver does when the CRD is deleted: at once, or, for one
    /// with finalizers, marked for deletion for its controllers to finish.
    /// True when any is held so.
    fn delete_custom_resources(&mut self, crd_name: &str) -> bool {
        let Some(crt) = self
            .registry
            .all()
            .find(|rt| rt.crd.as_deref() == Some(crd_name))
            .cloned()
        else {
            return false;
        };
        let keys: Vec<ObjKey> = self
            .tables
            .get(&crt.id)
            .map(|table| table.keys().cloned().collect())
            .unwrap_or_default();
        let mut held = false;
        for key in keys {
            let Some(object) = self.get(&crt.id, &key) else {
                continue;
            };
            if !has_finalizers(&object) {
                self.commit_delete(&crt.id, &key, |_| {});
                continue;
            }
            held = true;
            if !being_deleted(&object) {
                let mut marked = (*object).clone();
                let meta = meta_mut(&mut marked);
                meta.insert(
                    "deletionTimestamp".into(),
                    Value::String(object::now_rfc3339()),
                );
                meta.insert("deletionGracePeriodSeconds".into(), json!(0));
                self.commit_put(&crt, key, marked);
            }
        }
        held
    }

    /// The CRD of `rt` (a custom resource), when it is being deleted.
    fn terminating_crd(&self, rt: &ResourceType) -> Option<(ResourceId, ObjKey)> {
        let crd_name = rt.crd.clone()?;
        let id = ResourceId {
            group: CRD_GROUP.into(),
            plural: CRD_PLURAL.into(),
        };
        let key: ObjKey = (String::new(), crd_name);
        self.get(&id, &key)
            .is_some_and(|crd| being_deleted(&crd))
            .then_some((id, key))
    }

    /// Once the last object of a CRD being deleted is gone, the CRD goes
    /// too, and its resource is no longer served.
    fn finish_crd_deletion(&mut self, rt: &ResourceType) {
        let Some((id, key)) = self.terminating_crd(rt) else {
            return;
        };
        if self
            .tables
            .get(&rt.id)
            .is_some_and(|table| !table.is_empty())
        {
            return;
        }
        self.registry.unregister_crd(&key.1);
        self.tables.remove(&rt.id);
        self.commit_delete(&id, &key, |_| {});
    }

    /// A delete of an object with finalizers, as the real server does it: the object
    /// stays, marked with `deletionTimestamp` (once: a second delete changes nothing),
    /// until the writes of its finalizers' controllers have removed every finalizer.
    fn mark_for_deletion(
        &mut self,
        target: &Target,
        key: ObjKey,
        existing: Arc<Value>,
    ) -> Arc<Value> {
        if object::meta(&existing).is_some_and(|m| m.contains_key("deletionTimestamp")) {
            return target.present(existing);
        }
        let mut marked = (*existing).clone();
        let meta = meta_mut(&mut marked);
        meta.insert(
            "deletionTimestamp".into(),
            Value::String(object::now_rfc3339()),
        );
        meta.insert("deletionGracePeriodSeconds".into(), json!(0));
        target.present(self.commit_put(&target.rt, key, marked))
    }

    fn list(&self, target: &Target, params: &ListParams) -> Result<ListResult, ApiError> {
        let id = &target.rt.id;
        let (at, start) = match &params.continue_token {
            Some(token) if !token.is_empty() => {
                let t = decode_continue(token)?;
                if t.rv < self.floor {
                    return Err(ApiError::expired(EXPIRED_CONTINUE));
                }
                (t.rv, Some((t.ns, t.name)))
            }
            _ => {
                let rv_param = params.resource_version.as_deref().unwrap_or("");
                if rv_param.is_empty() || rv_param == "0" {
                    (self.rv, None)
                } else {
                    let requested: u64 = rv_param.parse().map_err(|_| {
                        ApiError::bad_request(format!("invalid resource version: {rv_param:?}"))
                    })?;
                    if requested > self.rv {
                        return Err(ApiError::too_large_resource_version(requested, self.rv));
                    }
                    if params.rv_match.as_deref() == Some("Exact") {
                        if requested < self.floor {
                            return Err(ApiError::expired(format!(
                                "too old resource version: {requested} ({})",
                                self.floor
                            )));
                        }
                        (requested, None)
                    } else {
                        (self.rv, None)
                    }
                }
            }
        };
        let ns = target.namespace.as_deref();
        let in_ns = |k: &ObjKey| ns.is_none_or(|n| k.0 == n);
        let lower = match &start {
            Some(k) => Bound::Excluded(k.clone()),
            None => match ns {
                Some(n) => Bound::Included((n.to_string(), String::new())),
                None => Bound::Unbounded,
            },
        };
        let snapshot: BTreeMap<ObjKey, Arc<Value>>;
        let source: &BTreeMap<ObjKey, Arc<Value>> = if at == self.rv {
            match self.tables.get(id) {
                Some(t) => t,
                None => {
                    snapshot = BTreeMap::new();
                    &snapshot
                }
            }
        } else {
            let mut map: BTreeMap<ObjKey, Arc<Value>> = self
                .tables
                .get(id)
                .map(|t| {
                    t.range((lower.clone(), Bound::Unbounded))
                        .filter(|(k, _)| in_ns(k))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect()
                })
                .unwrap_or_default();
            for ev in self.history.iter().rev() {
                if ev.rv <= at {
                    break;
                }
                if &ev.resource != id || !in_ns(&ev.key) {
                    continue;
                }
                match &ev.prev {
                    Some(p) => map.insert(ev.key.clone(), p.clone()),
                    None => map.remove(&ev.key),
                };
            }
            snapshot = map;
            &snapshot
        };
        let limit = params.limit.filter(|l| *l > 0);
        let mut items = Vec::new();
        let mut continue_token = None;
        let mut remaining = None;
        let selectors_empty = params.label.is_empty() && params.field.is_empty();
        let mut iter = source
            .range((lower, Bound::Unbounded))
            .take_while(|(k, _)| in_ns(k) || ns.is_none())
            .filter(|(k, _)| in_ns(k))
            .filter(|(_, v)| selected(v, &params.label, &params.field));
        for (k, v) in iter.by_ref() {
            items.push(v.clone());
            if limit.is_some_and(|l| items.len() >= l) {
                let last = k.clone();
                let rest = if selectors_empty {
                    iter.count() as u64
                } else {
                    u64::from(iter.next().is_some())
                };
                if rest > 0 {
                    continue_token = Some(encode_continue(at, &last));
                    if selectors_empty {
                        remaining = Some(rest);
                    }
                }
                break;
            }
        }
        Ok(ListResult {
            rv: at,
            items,
            continue_token,
            remaining,
        })
    }
}

/// The object's `metadata.finalizers`.
fn finalizers(obj: &Value) -> impl Iterator<Item = &str> + Clone {
    obj["metadata"]["finalizers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

/// Whether the object has finalizers left.
fn has_finalizers(obj: &Value) -> bool {
    finalizers(obj).next().is_some()
}

/// Whether the object is marked for deletion (`deletionTimestamp`).
fn being_deleted(obj: &Value) -> bool {
    !obj["metadata"]["deletionTimestamp"].is_null()
}

/// A Secret's `stringData` merged into `data` as base64, and removed.
fn fold_string_data(obj: &mut Value) {
    use base64::Engine as _;
    let Some(Value::Object(strings)) = obj.as_object_mut().and_then(|o| o.remove("stringData"))
    else {
        return;
    };
    let data = obj
        .as_object_mut()
        .map(|o| o.entry("data").or_insert_with(|| json!({})));
    if let Some(Value::Object(data)) = data {
        for (key, value) in strings {
            if let Value::String(text) = value {
                let encoded = base64::engine::general_purpose::STANDARD.encode(text);
                data.insert(key, Value::String(encoded));
            }
        }
    }
}

/// Whether an update of a `rt` from `old` to `new` moves the generation for
/// its annotations: kube-apiserver's Deployment strategy bumps it when they
/// change (they are copied to the Deployment's ReplicaSets), not only when
/// the spec does.
fn annotations_move_generation(rt: &ResourceType, old: &Value, new: &Value) -> bool {
    // As apimachinery's semantic equality: no annotations and empty ones
    // are the same.
    let annotations = |object: &Value| {
        object
            .pointer("/metadata/annotations")
            .filter(|a| a.as_object().is_some_and(|m| !m.is_empty()))
            .cloned()
    };
    rt.id.group == "apps" && rt.kind == "Deployment" && annotations(old) != annotations(new)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secrets_string_data_is_folded_into_its_data_and_not_kept() {
        let mut secret = json!({
            "metadata": {"name": "s"},
            "data": {"kept": "a2VwdA==", "both": "b2xk"},
            "stringData": {"both": "new", "plain": "text"},
        });
        fold_string_data(&mut secret);
        assert_eq!(
            secret,
            json!({
                "metadata": {"name": "s"},
                "data": {"kept": "a2VwdA==", "both": "bmV3", "plain": "dGV4dA=="},
            })
        );
    }

    fn target(store: &Store, plural: &str, ns: Option<&str>) -> Target {
        let rt = store.lookup("", "v1", plural).unwrap();
        Target {
            rt,
            version: "v1".into(),
            namespace: ns.map(str::to_string),
            view: None,
        }
    }

    fn cm(name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}})
    }

    #[test]
    fn resource_versions_are_one_global_counter() {
        let store = Store::new(100);
        store.ensure_default_namespaces();
        let t = target(&store, "configmaps", Some("default"));
        let a = store.create(&t, cm("a"), &WriteOptions::default()).unwrap();
        let b = store.create(&t, cm("b"), &WriteOptions::default()).unwrap();
        let ra: u64 = object::resource_version(&a).unwrap().parse().unwrap();
        let rb: u64 = object::resource_version(&b).unwrap().parse().unwrap();
        assert_eq!(rb, ra + 1);
        assert_eq!(store.current_rv(), rb);
    }

    #[test]
    fn pages_stay_consistent_with_the_first_pages_version() {
        let store = Store::new(100);
        store.ensure_default_namespaces();
        let t = target(&store, "configmaps", Some("default"));
        for n in ["a", "b", "c", "d"] {
            store.create(&t, cm(n), &WriteOptions::default()).unwrap();
        }
        let params = ListParams {
            limit: Some(2),
            ..ListParams::default()
        };
        let first = store.list(&t, &params).unwrap();
        assert_eq!(first.items.len(), 2);
        assert_eq!(first.remaining, Some(2));
        store.delete(&t, "c", &DeleteOptions::default()).unwrap();
        store
            .create(&t, cm("bb"), &WriteOptions::default())
            .unwrap();
        let second = store
            .list(
                &t,
                &ListParams {
                    continue_token: first.continue_token.clone(),
                    ..params.clone()
                },
            )
            .unwrap();
        let names: Vec<&str> = second
            .items
            .iter()
            .map(|o| object::name(o).unwrap())
            .collect();
        assert_eq!(names, vec!["c", "d"]);
        assert_eq!(second.rv, first.rv);
        assert!(second.continue_token.is_none());
        store.compact();
        let err = store
            .list(
                &t,
                &ListParams {
                    continue_token: first.continue_token,
                    ..params
                },
            )
            .unwrap_err();
        assert_eq!((err.code, &*err.reason), (410, "Expired"));
    }

    #[test]
    fn history_window_moves_the_floor() {
        let store = Store::new(2);
        store.ensure_default_namespaces();
        let rv0 = store.current_rv();
        let t = target(&store, "configmaps", Some("default"));
        for n in ["a", "b", "c"] {
            store.create(&t, cm(n), &WriteOptions::default()).unwrap();
        }
        let from = WatchFrom {
            resource_version: Some(rv0.to_string()),
            send_initial_events: false,
        };
        assert!(matches!(
            store.watch(&t, &from).unwrap().0,
            WatchStart::Expired { .. }
        ));
        let from = WatchFrom {
            resource_version: Some((rv0 + 1).to_string()),
            send_initial_events: false,
        };
        match store.watch(&t, &from).unwrap().0 {
            WatchStart::History { events, .. } => assert_eq!(events.len(), 2),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn deleting_an_owner_deletes_its_dependents() {
        let store = Store::new(100);
        store.ensure_default_namespaces();
        let t = target(&store, "configmaps", Some("default"));
        let owner = store
            .create(&t, cm("owner"), &WriteOptions::default())
            .unwrap();
        let mut dep = cm("dep");
        dep["metadata"]["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "ConfigMap",
            "name": "owner", "uid": object::uid(&owner).unwrap()}]);
        store.create(&t, dep, &WriteOptions::default()).unwrap();
        store
            .delete(&t, "owner", &DeleteOptions::default())
            .unwrap();
        assert_eq!(store.get(&t, "dep").unwrap_err().code, 404);
    }
}
