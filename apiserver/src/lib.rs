//! An embedded, in-memory Kubernetes API server for Herald's demo and tests.
//!
//! **This is a development and test component. Production Herald talks to a real Kubernetes
//! cluster; nothing here is meant to stand in for one.** There is no authentication, no
//! built-in admission plugin, no controllers (Deployments never create Pods), no TLS on its
//! own port, and storage is a map in memory (optionally snapshotted to a directory).
//! Admission *webhooks* are called as kube-apiserver calls them: every write goes through
//! the `MutatingWebhookConfiguration`s and `ValidatingWebhookConfiguration`s stored in the
//! server, over HTTPS ([`ApiServerConfig::webhook_services`] gives the addresses of
//! services they name); what is matched and what is left out is in `README.md`. Request bodies may be JSON, YAML or
//! Kubernetes protobuf for the built-in kinds (what kubectl's generators send: `kubectl create
//! namespace|deployment|configmap|secret`, `run`, `expose`), converted to JSON on arrival.
//! Answers are negotiated as kube-apiserver negotiates them: built-in kinds (gets, lists,
//! watches, writes) and errors come in Kubernetes protobuf to a client whose `Accept`
//! prefers it, as client-go's and Herald's informers ask, and in JSON otherwise; custom
//! resources are JSON. The protobuf is encoded from the published Kubernetes `.proto`
//! definitions, independently of Herald's own reader, so that every test reading built-in
//! kinds through this server cross-checks that reader (see the `protobuf` module).
//! [`ApiServerConfig::protobuf`] turns protobuf answers off, as does
//! `HERALD_TEST_API_ENCODING=json` ([`ENCODING_VARIABLE`]) for every server started with the
//! default configuration. `kubectl create -f`, `apply`, `patch`, `label`, `delete`,
//! `get [-w]` all work.
//!
//! What it does do is speak the Kubernetes REST API faithfully enough that the real
//! `kube::Client` and `kubectl` work against it unchanged, over plain HTTP on loopback:
//!
//! * discovery (`/version`, `/api`, `/apis`, resource lists) for the core, `apps`, `batch`,
//!   `coordination.k8s.io`, `networking.k8s.io`, `events.k8s.io`, `rbac.authorization.k8s.io`
//!   and `apiextensions.k8s.io` types, plus every CRD's resource (RBAC objects are stored,
//!   never enforced: there is no authorization);
//! * get, list, watch, create, update, patch (merge, JSON, strategic) and delete and
//!   deletecollection, with `dryRun=All`, delete preconditions and propagation policies;
//! * server-side apply with field managers: `metadata.managedFields` in the `FieldsV1`
//!   format on every write, 409 conflicts with `FieldManagerConflict` causes, `force`, and
//!   removal of fields a manager stops applying (lists keyed by a well-known merge key such as
//!   containers by name merge per element; other lists are owned whole);
//! * the `/status` subresource for the kinds that have one (writes to the main resource keep
//!   `.status`, status writes change only `.status`);
//! * `events.k8s.io/v1` Events as a view of the core `v1` Events, converted field by field;
//! * one global `resourceVersion` counter, `generation`, `generateName`, owner-reference
//!   cascading deletes, finalizers (a delete marks the object with `deletionTimestamp` and
//!   keeps it until a write removes its last finalizer; no new finalizer meanwhile; a deleted
//!   CRD deletes its objects, marks those with finalizers and waits for them, refusing new
//!   ones meanwhile, as kube-apiserver's `customresourcecleanup`),
//!   namespaces that must exist, `Status` errors with the real reasons;
//! * label and field selectors, `limit`/`continue` pages consistent with the first page,
//!   Table output for `kubectl get`;
//! * watches from a resource version out of a bounded history (410 "too old resource version"
//!   beyond it), bookmarks, `timeoutSeconds`, streaming lists (`sendInitialEvents`);
//! * [`Faults`] to drop watches, compact history, add latency and fail requests.
//!
//! Approximated, knowingly: there is no schema, so apply knows list types by field name
//! (keyed lists by their well-known merge key alone, e.g. ports by port without protocol;
//! `metadata.finalizers` as a set; every other list atomic) and marks `.` only on keyed list
//! elements and well-known string maps; no defaults are applied (so no `protocol: TCP`) beyond a
//! StatefulSet's claim templates' `kind` and `apiVersion`, which protobuf readers rely on;
//! create keeps a given `.status` (so fixtures can be created in any state) where a real
//! server resets it; Foreground and Background deletes remove dependents at once;
//! `managedFields` sent by clients are ignored; an `events.k8s.io` write records field paths
//! in `events.k8s.io` names on the stored core Event. Objects are stored as written, not
//! round-tripped through the Go types, so a JSON answer keeps what a real server's would
//! normalise (a missing empty `status`, which Go writes as `{}`; a number as a quantity;
//! `kind` and `apiVersion` on list items) while a protobuf answer carries only what the
//! definitions hold (a field they lack is left out; a value of the wrong type is a `500`);
//! an `Accept` preferring YAML is answered in JSON, and discovery documents are JSON only.
//!
//! ```no_run
//! # async fn demo() -> Result<(), herald_apiserver::Error> {
//! let server = herald_apiserver::start(herald_apiserver::ApiServerConfig::default()).await?;
//! server.write_kubeconfig(std::path::Path::new("/tmp/kubeconfig"))?;
//! println!("kubectl --kubeconfig /tmp/kubeconfig get pods -A  # against {}", server.url());
//! server.shutdown().await;
//! # Ok(()) }
//! ```

mod admission;
mod api;
mod apply;
mod body;
mod discovery;
mod error;
mod events;
mod faults;
mod kind_rules;
mod kubeconfig;
mod managed_fields;
mod negotiate;
mod object;
mod patch;
mod persist;
mod protobuf;
mod registry;
mod router;
mod seed;
pub use herald_grammar::selector;
mod server;
mod status;
mod storage;
mod table;
mod validate;
mod watch;

pub use admission::WebhookServices;
pub use error::Error;
pub use faults::{Faults, Forbidden, Hold};
pub use kubeconfig::{CONTEXT_NAME, kubeconfig_yaml};
pub use persist::SNAPSHOT_FILE;
pub use server::{ApiServer, ApiServerConfig, ENCODING_VARIABLE, start};
