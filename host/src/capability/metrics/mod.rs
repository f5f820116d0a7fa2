//! The `metrics` capability (0.3.0): a plugin declares counters, gauges and
//! histograms in its manifest and updates them through its imports; the
//! host exports them at `/metrics` in a namespace of the plugin's own,
//! `herald_plugin_<plugin>__<name>`, each series also labelled with the
//! plugin.
//!
//! - **Grant.** Every plugin has it, for its own metrics only: nothing a
//!   plugin defines can collide with another plugin's metrics or the
//!   host's, so no plugin can keep another from loading.
//! - **Bounds.** At most 100 metrics, 16 labels each, and a cap on series
//!   (`pluginMetrics.maxSeries`); a misuse never fails a call.
//! - **Dry-run.** No difference: the metrics are the host's.
//! - **Replay.** `herald plugin replay` shows every update under the event
//!   that made it.
//!
//! - [`definition`]: what a plugin declares ([`MetricDefinition`]) and the
//!   rules a declaration must pass at load (Prometheus naming, suffixes by
//!   kind, reserved labels, buckets, the host's own family names).
//! - [`registry`]: the host-wide [`PluginMetricsRegistry`] and the
//!   per-version [`PluginMetrics`] handle whose `add`, `set` and `observe`
//!   the imports call; the series cap; what a new version keeps.
//! - [`error`]: what an update the host drops returns ([`MetricError`])
//!   and the reason it is counted under.
//! - `render`: the registry as a Prometheus collector for `/metrics`.
//!
//! # Guarantees
//!
//! - A plugin whose definitions break a rule is not loaded; the error names
//!   the plugin and the metric. Another plugin's definitions never refuse
//!   it: each plugin's families have their own namespace.
//! - An update never fails the plugin's call: a misuse (undefined name,
//!   wrong kind, wrong label count, negative counter increment, NaN or an
//!   infinity) is dropped, counted in
//!   `herald_plugin_metric_errors_total{plugin,reason}`, and returned as a
//!   [`MetricError`] naming the metric for the plugin's log.
//! - A plugin has at most its cap of series across its metrics
//!   (`pluginMetrics.maxSeries`, default [`DEFAULT_MAX_SERIES`]): a new
//!   series beyond it is dropped and counted in
//!   `herald_plugin_metric_series_dropped_total{plugin}`; existing series
//!   keep updating.
//! - An update to an existing series allocates nothing and takes only its
//!   own metric's lock: plugins never contend with each other on the update
//!   path.
//! - A new version of a plugin keeps the series of every metric whose kind,
//!   label names and buckets it did not change (see
//!   [`PluginMetricsRegistry`] for the whole rule).
//!
//! # Example
//!
//! ```
//! use herald::capability::metrics::{MetricDefinition, MetricKind, PluginMetricsRegistry};
//!
//! let registry = PluginMetricsRegistry::new();
//! let requests = MetricDefinition {
//!     name: "requests_total".into(),
//!     help: "Requests seen.".into(),
//!     kind: MetricKind::Counter,
//!     label_names: vec!["verb".into()],
//!     buckets: vec![],
//! };
//! // At load: checked, not yet exported.
//! let metrics = registry.register("pod-watch", &[requests], 1000).unwrap();
//! // Exported as herald_plugin_pod_watch__requests_total{plugin="pod-watch",verb="get"}.
//! // When this version goes live.
//! metrics.activate();
//! // From the plugin's `add` import.
//! metrics.add("requests_total", &["get".to_owned()], 1.0).unwrap();
//! let refused = metrics.set("requests_total", &["get".to_owned()], 1.0).unwrap_err();
//! assert_eq!(
//!     refused.to_string(),
//!     "metric \"requests_total\" is a counter: `set` is for gauges"
//! );
//! ```

mod config;
pub mod definition;
pub mod error;
mod host;
pub mod registry;
mod render;

pub use config::{MAX_PLUGIN_SERIES, PluginMetricsConfig, PluginMetricsLimits, check_max_series};
pub use definition::{
    DEFAULT_BUCKETS, DefinitionError, LabelProblem, MetricDefinition, MetricKind, MetricProblem,
    Owner, family_name,
};
pub use error::{ErrorReason, MAX_LABEL_VALUE_BYTES, MetricError, Operation};
pub use host::MetricsHost;
pub use registry::{DEFAULT_MAX_SERIES, MetricUpdate, PluginMetrics, PluginMetricsRegistry};

/// The `metrics` capability's state for one plugin.
#[derive(Debug)]
pub struct MetricsState {
    /// The metrics its manifest defines.
    pub defined: PluginMetrics,
    /// Its logger, where the updates the host drops are reported.
    pub logger: std::sync::Arc<super::log::PluginLogger>,
}

/// The `metrics` capability, as the list in `capability/mod.rs` names it.
#[derive(Debug)]
pub struct Metrics;

impl super::factor::Capability for Metrics {
    const ABOUT: super::factor::About = super::factor::About {
        name: "metrics",
        wit: "`metrics` (0.3.0)",
        acts: super::factor::Acts::InsideHost,
    };
    type Stats = ();
    type Plugin = MetricsState;
    type Instance = ();

    fn prepare(setup: &super::Setup<'_>) -> Self::Plugin {
        MetricsState {
            defined: setup.metrics.clone(),
            logger: setup.logger.clone(),
        }
    }

    fn instantiate(_: &Self::Plugin) {}

    fn host<'a>(
        state: &'a Self::Plugin,
        _: &'a mut (),
        _: super::CallScope<'a>,
    ) -> MetricsHost<'a> {
        MetricsHost {
            metrics: &state.defined,
            logger: &state.logger,
        }
    }

    fn add_to_linker<T: super::View + 'static>(
        linker: &mut wasmtime::component::Linker<T>,
        reach: fn(&mut T) -> MetricsHost<'_>,
    ) -> wasmtime::Result<()> {
        host::add_to_linker(linker, reach)
    }
}

impl wasmtime::component::HasData for Metrics {
    type Data<'a> = MetricsHost<'a>;
}
