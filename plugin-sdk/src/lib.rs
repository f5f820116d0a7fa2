//! Write [Herald](https://example.invalid/herald) plugins in Rust.
//!
//! A Herald plugin is a WebAssembly component that the Herald daemon loads
//! and feeds with the notifications of Kubernetes shared informers: every
//! add, update and delete of the objects it subscribed to. This crate turns
//! the raw ABI (`wit/0.6.0/herald.wit`, world `herald:plugin/plugin@0.6.0`)
//! into one trait, [`Handler`], plus typed access to the objects, logging,
//! cache look-ups, configuration, granted Kubernetes writes and Events,
//! metrics of the plugin's own, the work queue, outbound HTTP, the call's
//! [`deadline`], its [`cluster`] and [`admission`] decisions. (The host
//! still runs components built against the released 0.5.0, 0.4.0, 0.3.0,
//! 0.2.0 and 0.1.0 worlds in `wit/`; this SDK builds 0.6.0 components, which
//! import only the interfaces a plugin uses.)
//!
//! # A plugin in one file
//!
//! `Cargo.toml`:
//!
//! ```toml
//! [package]
//! name = "pod-logger"
//! version = "0.1.0"
//! edition = "2024"
//!
//! [lib]
//! crate-type = ["cdylib"]
//!
//! [dependencies]
//! herald-sdk = { path = "../plugin-sdk" }
//! ```
//!
//! `src/lib.rs`:
//!
//! ```no_run
//! use herald_sdk::k8s_openapi::api::core::v1::Pod;
//! use herald_sdk::{Error, Event, Handler, Manifest, Subscription, Update};
//!
//! /// Logs Pods of the `shop` namespace as they come, change phase and go.
//! #[derive(Default)]
//! struct PodLogger {
//!     /// Adds seen so far: state lives as long as the plugin instance.
//!     seen: u64,
//! }
//!
//! impl Handler for PodLogger {
//!     fn manifest() -> Manifest {
//!         Manifest::new("pod-logger", "0.1.0")
//!             .subscribe(Subscription::to::<Pod>().namespace("shop").labels("app=web"))
//!     }
//!
//!     fn on_add(&mut self, event: &Event) -> Result<(), Error> {
//!         self.seen += 1;
//!         let pod: Pod = event.object()?;
//!         let node = pod.spec.and_then(|spec| spec.node_name).unwrap_or_default();
//!         herald_sdk::info!("added pod={} node={node} seen={}", event.key(), self.seen);
//!         Ok(())
//!     }
//!
//!     fn on_update(&mut self, event: &Update) -> Result<(), Error> {
//!         let phase = |pod: Pod| pod.status.and_then(|status| status.phase).unwrap_or_default();
//!         let (old, new) = (phase(event.old()?), phase(event.new()?));
//!         if old != new {
//!             herald_sdk::info!("phase pod={} from={old} to={new}", event.key());
//!         }
//!         Ok(())
//!     }
//!
//!     fn on_delete(&mut self, event: &Event) -> Result<(), Error> {
//!         let unknown = event.final_state_unknown();
//!         herald_sdk::warn!("deleted pod={} final-state-unknown={unknown}", event.key());
//!         Ok(())
//!     }
//! }
//!
//! herald_sdk::export_plugin!(PodLogger);
//! # fn main() {}
//! ```
//!
//! Build it with `cargo build --release --target wasm32-wasip2`: rustc emits
//! a component, `target/wasm32-wasip2/release/pod_logger.wasm`, ready for
//! the host.
//!
//! # A plugin that acts
//!
//! Writes are declared in the manifest (the operator grants at least as
//! much, or the plugin is not loaded) and made through [`kube`]; Events
//! need the `events` capability:
//!
//! ```no_run
//! use herald_sdk::k8s_openapi::api::core::v1::Pod;
//! use herald_sdk::kube::{Api, Patch};
//! use herald_sdk::serde_json::json;
//! use herald_sdk::{Error, Event, Handler, Manifest, Subscription, Verb, WriteRule, events};
//!
//! #[derive(Default)]
//! struct Labeller;
//!
//! impl Handler for Labeller {
//!     fn manifest() -> Manifest {
//!         Manifest::new("labeller", "0.1.0")
//!             .subscribe(Subscription::to::<Pod>().namespace("shop"))
//!             .write(WriteRule::new::<Pod>().verbs([Verb::Patch]).namespaces(["shop"]))
//!             .capability("events")
//!     }
//!
//!     fn on_add(&mut self, event: &Event) -> Result<(), Error> {
//!         let pod: Pod = event.object()?;
//!         let patch = Patch::Merge(json!({"metadata": {"labels": {"seen": "true"}}}));
//!         match Api::<Pod>::namespaced("shop").patch(event.name(), &patch) {
//!             Ok(_) => events::normal(&pod, "Seen", "labelled seen=true")?,
//!             Err(error) if error.is_not_found() => {} // gone already
//!             Err(error) => return Err(error.into()),  // the host retries
//!         }
//!         Ok(())
//!     }
//! }
//!
//! herald_sdk::export_plugin!(Labeller);
//! # fn main() {}
//! ```
//!
//! # A plugin that alerts
//!
//! Outbound HTTP needs the `http` capability (the operator grants the
//! origins), and a plugin's own metrics are declared in the manifest:
//!
//! ```no_run
//! use herald_sdk::k8s_openapi::api::core::v1::Pod;
//! use herald_sdk::metrics::{self, Metric};
//! use herald_sdk::serde_json::json;
//! use herald_sdk::{Error, Handler, Manifest, Subscription, Update, http};
//!
//! #[derive(Default)]
//! struct Evictions;
//!
//! impl Handler for Evictions {
//!     fn manifest() -> Manifest {
//!         Manifest::new("evictions", "0.1.0")
//!             .subscribe(Subscription::to::<Pod>().coalesced())
//!             .capability("http")
//!             .metric(Metric::counter("evictions_total", "Evicted Pods").labels(["namespace"]))
//!     }
//!
//!     fn on_update(&mut self, event: &Update) -> Result<(), Error> {
//!         let (old, new): (Pod, Pod) = (event.old()?, event.new()?);
//!         let reason = |pod: &Pod| pod.status.as_ref().and_then(|status| status.reason.clone());
//!         if reason(&new).as_deref() == Some("Evicted") && reason(&old).is_none() {
//!             let namespace = new.metadata.namespace.as_deref().unwrap_or_default();
//!             metrics::counter("evictions_total").with(&[namespace]).inc();
//!             // Any failure (an error or a status other than 2xx) fails the
//!             // call: the host retries this Pod with backoff.
//!             http::post_json("https://hooks.example.com/evictions", &json!({"pod": event.key()}))?
//!                 .error_for_status()?;
//!         }
//!         Ok(())
//!     }
//! }
//!
//! herald_sdk::export_plugin!(Evictions);
//! # fn main() {}
//! ```
//!
//! # The pieces
//!
//! - **[`Handler`]**: the manifest plus `on_add`, `on_update` and
//!   `on_delete`, each defaulting to doing nothing. The host creates the
//!   handler once with [`Default`] and keeps it, so fields hold state between
//!   calls. An `Err(`[`Error`]`)` is a failure the host records and retries
//!   with backoff; `?` converts any standard error, [`Error::msg`] makes one.
//! - **[`export_plugin!`]**: one line that exports a handler type as the
//!   component's implementation of the ABI.
//! - **[`Manifest`] and [`Subscription`]**: what to watch. Subscribe to a
//!   `k8s-openapi` type with [`Subscription::to`], to any kind (CRDs) with
//!   [`Subscription::new`] or [`Manifest::subscribe_kind`], narrowed by
//!   namespace, label and field selectors, with an optional resync period and
//!   [`Delivery`] mode; ask for [`Limits`] and capabilities.
//! - **[`Event`] and [`Update`]**: the [`Context`] the host sent (kind, key,
//!   resource version, initial-list / resync / final-state-unknown flags),
//!   the raw JSON, and typed decoding: `event.object::<Pod>()`,
//!   `update.old::<Pod>()`, `update.new::<Pod>()`, into any `k8s-openapi`
//!   type or your own `Deserialize` struct (which may borrow from the
//!   event). Or lazily, paying only for what is read: `event.view()` is an
//!   [`ObjectView`](view::ObjectView), the metadata borrowed from the JSON
//!   and the spec and status decoded on demand,
//!   `event.view()?.status::<PodStatus>()`.
//! - **Logging**: [`info!`], [`warn!`], [`error!`], [`debug!`] and
//!   [`trace!`] with `format!` syntax write to the host's log, tagged with
//!   the plugin's name. Call them by path (`herald_sdk::info!`); they are
//!   not the `log` crate's.
//! - **[`cache`]**: read-only look-ups in the host's informer caches,
//!   limited to the kinds (and namespaces and selectors) the plugin
//!   subscribed to: `cache::get::<ReplicaSet>(Some(ns), name)`,
//!   `cache::list::<ReplicaSet>(Some(ns), Some("app=web"))`, and raw JSON by
//!   [`GroupVersionKind`].
//! - **[`config`]**: the operator's configuration for this plugin,
//!   `config::get::<MySettings>()`.
//! - **[`kube`]**: reads and writes through the API server, typed
//!   (`kube::Api::<Deployment>::namespaced("shop").patch(...)`, `apply`,
//!   `delete`, the `status` subresource) or untyped for any kind
//!   ([`kube::DynamicApi`]); failures are a [`kube::KubeError`] a handler
//!   can act on. Every call must be declared in the manifest with
//!   [`Manifest::write`] and a [`WriteRule`], and granted by the operator.
//! - **[`events`]**: Kubernetes Events about objects,
//!   `events::warning(&pod, "DisallowedImage", note)`; needs the `events`
//!   capability.
//! - **[`metrics`]**: the plugin's own Prometheus metrics, declared with
//!   [`Manifest::metric`] (`Metric::counter`, `gauge`, `histogram`) and
//!   updated with `metrics::counter("alerts_total").with(&["shop"]).inc()`,
//!   `metrics::gauge(..).set(..)`, `metrics::histogram(..).observe(..)`;
//!   the host exports them as `herald_plugin_<name>`.
//! - **[`workqueue`]**: `workqueue::requeue_after(delay)` asks for the
//!   object being handled to be delivered again later (coalesced
//!   subscriptions).
//! - **[`http`]**: a small blocking client over `wasi:http`,
//!   `http::post_json(url, &body)`, `http::get_json::<T>(url)`,
//!   [`http::Request`] for the rest; redirects followed, each hop checked by
//!   the host against the origins the operator granted; failures are a
//!   typed [`http::HttpError`]. Needs the `http` capability.
//!
//! # The sandbox
//!
//! Plugins run with a WASI context that grants nothing: no files, no
//! environment variables, no arguments, no sockets. Clocks and randomness
//! work. Outbound HTTP goes only through [`http`] (`wasi:http`), to the
//! origins the operator granted. Anything written to stdout or stderr becomes a host log line, but
//! the logging macros are the proper channel. A panic traps the instance:
//! the host records the failure and starts a fresh instance (with a fresh
//! handler) for the next call.
//!
//! # Testing plugins natively
//!
//! The crate also compiles for the host target. There, the log, cache,
//! config, kube, events, metrics, workqueue and HTTP calls reach an
//! in-process stand-in, [`testing`], which records every write, Event,
//! metric update, requeue and HTTP request and answers with scripted
//! responses, so handler logic can be unit-tested with
//! `cargo test --target x86_64-unknown-linux-gnu` (or whatever the native
//! target is).

#[doc(hidden)]
// wit-bindgen's generated code is the ABI boundary: raw pointers into linear
// memory, `extern "C"` exports and `link_section` statics, hence `unsafe`.
// Its items follow the WIT documentation, not `missing_docs`.
#[allow(unsafe_code, missing_docs)]
pub mod bindings;

pub mod admission;
pub mod cache;
pub mod cluster;
pub mod config;
pub mod deadline;
mod error;
mod event;
pub mod events;
pub(crate) mod frame;
mod handler;
mod host;
pub mod http;
mod kind;
pub mod kube;
pub mod log;
mod manifest;
pub mod metrics;
pub mod reconcile;
#[cfg(not(target_arch = "wasm32"))]
pub mod testing;
pub mod view;
pub mod workqueue;

pub use error::Error;
pub use event::{Context, Event, Update};
pub use handler::Handler;
#[doc(hidden)]
pub use handler::export as __private;
pub use kind::GroupVersionKind;
pub use manifest::{Delivery, Limits, Manifest, Subscription, UnknownVerb, Verb, WriteRule};

/// The `k8s-openapi` crate the SDK decodes objects with (feature `latest`),
/// re-exported so plugins use the same version: `herald_sdk::k8s_openapi::api::core::v1::Pod`.
pub use k8s_openapi;
/// The `serde_json` crate, re-exported for plugins that read raw JSON.
pub use serde_json;
