//! The host-wide registry of plugin metrics, and the per-plugin handle
//! whose `add`, `set` and `observe` are what a plugin's imports call.
//!
//! Locks: the registry's one mutex is taken by registration, activation,
//! unregistration and scrapes; an update takes only the mutex of its own
//! metric (one per plugin and metric), so plugins never wait on each other
//! and a scrape holds each metric's lock only while it copies its series.

use super::definition::{
    self, Checked, DefinitionError, MetricDefinition, MetricKind, MetricProblem, Owner, Shape,
    shown,
};
use super::error::{ErrorCounts, MAX_LABEL_VALUE_BYTES, MetricError, Operation};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// The default of `pluginMetrics.maxSeries`: series one plugin may have
/// across all its metrics.
pub const DEFAULT_MAX_SERIES: usize = 1000;
/// What one plugin's versions share: the series count its cap applies to,
/// the cap, and the error and drop counters. Kept from one version to the
/// next; gone when the plugin is unregistered.
#[derive(Debug)]
pub(super) struct PluginState {
    /// Series across the plugin's live metrics (a replaced metric's are
    /// gone from it).
    series: AtomicUsize,
    max_series: AtomicUsize,
    pub(super) dropped: AtomicU64,
    pub(super) errors: ErrorCounts,
    /// Updates applied, kept while [`PluginMetrics::record_updates`] asks
    /// (offline replay): `None` otherwise, which costs an update nothing.
    journal: Mutex<Option<Vec<MetricUpdate>>>,
    journaling: AtomicBool,
}

/// One metric update a plugin made, as replay shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricUpdate {
    /// `add`, `set` or `observe`.
    pub operation: Operation,
    /// The metric's name, as the plugin defined it.
    pub metric: String,
    /// Each label's name and value.
    pub labels: Vec<(String, String)>,
    /// The value added, set or observed.
    pub value: f64,
}

impl std::fmt::Display for MetricUpdate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "metric {} {}", self.operation, self.metric)?;
        if !self.labels.is_empty() {
            let labels: Vec<String> = self
                .labels
                .iter()
                .map(|(name, value)| format!("{name}={value:?}"))
                .collect();
            write!(f, "{{{}}}", labels.join(","))?;
        }
        write!(f, " {}", self.value)
    }
}

impl PluginState {
    fn new(max_series: usize) -> Self {
        PluginState {
            series: AtomicUsize::new(0),
            max_series: AtomicUsize::new(max_series),
            dropped: AtomicU64::new(0),
            errors: ErrorCounts::default(),
            journal: Mutex::new(None),
            journaling: AtomicBool::new(false),
        }
    }

    /// Takes a place for one more series, if the cap allows.
    fn admit(&self) -> bool {
        let max = self.max_series.load(Ordering::Relaxed);
        if self.series.fetch_add(1, Ordering::Relaxed) < max {
            return true;
        }
        self.series.fetch_sub(1, Ordering::Relaxed);
        self.dropped.fetch_add(1, Ordering::Relaxed);
        false
    }
}

/// The value of one series.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Value {
    /// A counter's or gauge's.
    Number(f64),
    /// A histogram's.
    Histogram(Box<Buckets>),
}

/// A histogram series: per-bucket (not cumulative) counts, the last one
/// `+Inf`'s, and the sum and count of observations.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Buckets {
    pub(super) counts: Box<[u64]>,
    pub(super) sum: f64,
    pub(super) count: u64,
}

impl Value {
    fn new(shape: &Shape) -> Self {
        match shape.kind {
            MetricKind::Histogram => Value::Histogram(Box::new(Buckets {
                counts: vec![0; shape.bounds.len() + 1].into(),
                sum: 0.0,
                count: 0,
            })),
            _ => Value::Number(0.0),
        }
    }

    fn apply(&mut self, operation: Operation, value: f64, bounds: &[f64]) {
        match (self, operation) {
            (Value::Number(n), Operation::Add) => *n += value,
            (Value::Number(n), Operation::Set) => *n = value,
            (Value::Histogram(h), Operation::Observe) => {
                // The first bucket whose bound is ≥ value (`le`), else +Inf.
                h.counts[bounds.partition_point(|b| *b < value)] += 1;
                h.sum += value;
                h.count += 1;
            }
            // Checked against the kind before.
            _ => {}
        }
    }
}

/// One plugin's metric: its series and the lock updates take.
#[derive(Debug)]
pub(super) struct Metric {
    pub(super) name: String,
    pub(super) shape: Shape,
    plugin: Arc<PluginState>,
    series: Mutex<Series>,
}

/// What a metric's lock guards.
#[derive(Debug)]
pub(super) struct Series {
    /// The help text of the version that activated it last.
    pub(super) help: String,
    /// Replaced or unloaded: no longer exported, updates refused.
    pub(super) retired: bool,
    /// Label values (in the order of the label names) → value.
    pub(super) values: HashMap<Vec<String>, Value>,
}

impl Metric {
    fn new(checked: &Checked, plugin: Arc<PluginState>) -> Self {
        Metric {
            name: checked.name.clone(),
            shape: checked.shape.clone(),
            plugin,
            series: Mutex::new(Series {
                help: checked.help.clone(),
                retired: false,
                values: HashMap::new(),
            }),
        }
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, Series> {
        self.series.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn update(
        &self,
        operation: Operation,
        labels: &[String],
        value: f64,
    ) -> Result<(), MetricError> {
        let mut series = self.lock();
        if series.retired {
            return Err(MetricError::Replaced {
                metric: shown(&self.name),
            });
        }
        if let Some(current) = series.values.get_mut(labels) {
            current.apply(operation, value, &self.shape.bounds);
            return Ok(());
        }
        // A new series: its label values are checked once, here (an
        // existing series' were), so an update of one costs nothing more.
        for (label, value) in self.shape.label_names.iter().zip(labels) {
            if let Some(escape) = value.chars().find_map(crate::text::escape_of) {
                return Err(MetricError::LabelUnsafe {
                    metric: shown(&self.name),
                    label: shown(label),
                    escape,
                });
            }
        }
        if !self.plugin.admit() {
            return Err(MetricError::SeriesLimit {
                metric: shown(&self.name),
                max: self.plugin.max_series.load(Ordering::Relaxed),
            });
        }
        let mut new = Value::new(&self.shape);
        new.apply(operation, value, &self.shape.bounds);
        series.values.insert(labels.to_vec(), new);
        Ok(())
    }

    /// No longer exported: its series go (and leave the plugin's count).
    fn retire(&self) {
        let mut series = self.lock();
        series.retired = true;
        let gone = series.values.len();
        series.values.clear();
        self.plugin.series.fetch_sub(gone, Ordering::Relaxed);
    }

    /// Exported, with `help`. A metric retired meanwhile (its plugin was
    /// unregistered between this version's registration and activation)
    /// comes back empty.
    fn install(&self, help: &str) {
        let mut series = self.lock();
        series.retired = false;
        if series.help != help {
            series.help = help.to_owned();
        }
    }
}

impl Drop for Metric {
    fn drop(&mut self) {
        let series = self.series.get_mut().unwrap_or_else(|e| e.into_inner());
        self.plugin
            .series
            .fetch_sub(series.values.len(), Ordering::Relaxed);
    }
}

/// One version's metric, with the help text that version gave it.
#[derive(Debug)]
pub(super) struct Slot {
    pub(super) metric: Arc<Metric>,
    help: String,
}

/// What a [`PluginMetrics`] handle holds.
#[derive(Debug)]
pub(super) struct Handle {
    plugin: String,
    pub(super) metrics: HashMap<String, Slot>,
    pub(super) state: Arc<PluginState>,
    max_series: usize,
    /// The registry it was registered with; `None` for a detached handle.
    registry: Option<Weak<Shared>>,
    /// Every name its metrics take in the exposition, claimed in the
    /// registry for as long as the handle lives.
    claimed: Vec<String>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        if let Some(shared) = self.registry.as_ref().and_then(Weak::upgrade) {
            shared.release(&self.claimed);
        }
    }
}

/// Who holds an exposed name: a plugin, and how many of its handles.
#[derive(Debug)]
struct Claim {
    plugin: String,
    handles: usize,
}

/// The registry's state: the activated handle of each plugin, by name, and
/// every exposed name claimed by a live handle.
///
/// Locks: `claims` is taken on its own, or while `installed` is held
/// (a handle dropped under it), never the other way round.
#[derive(Debug, Default)]
pub(super) struct Shared {
    installed: Mutex<BTreeMap<String, Arc<Handle>>>,
    claims: Mutex<HashMap<String, Claim>>,
}

impl Shared {
    pub(super) fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Arc<Handle>>> {
        self.installed.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn claims(&self) -> MutexGuard<'_, HashMap<String, Claim>> {
        self.claims.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Claims `names` for `plugin`, all or none: refused if one of them is
    /// the host's, or another plugin's (registered or running). The error
    /// says which name and whose.
    fn claim(&self, plugin: &str, names: &[(String, String)]) -> Result<(), DefinitionError> {
        let mut claims = self.claims();
        for (metric, name) in names {
            let at_fault = |owner| DefinitionError::Metric {
                plugin: plugin.to_owned(),
                metric: metric.clone(),
                problem: MetricProblem::Taken {
                    series: name.clone(),
                    owner,
                },
            };
            if definition::host_exposed_names().contains(name) {
                return Err(at_fault(Owner::Host));
            }
            if let Some(claim) = claims.get(name)
                && claim.plugin != plugin
            {
                return Err(at_fault(Owner::Plugin(claim.plugin.clone())));
            }
        }
        for (_, name) in names {
            claims
                .entry(name.clone())
                .or_insert_with(|| Claim {
                    plugin: plugin.to_owned(),
                    handles: 0,
                })
                .handles += 1;
        }
        Ok(())
    }

    /// Gives back one handle's claims.
    fn release(&self, names: &[String]) {
        let mut claims = self.claims();
        for name in names {
            if let Some(claim) = claims.get_mut(name) {
                claim.handles -= 1;
                if claim.handles == 0 {
                    claims.remove(name);
                }
            }
        }
    }
}

/// Every plugin's metrics, host-wide: one per daemon, shared by all
/// plugins and read by `/metrics` (it is a Prometheus
/// [`Collector`](prometheus_client::collector::Collector)). Cheap to clone.
///
/// A plugin's metrics go through three steps:
///
/// 1. [`register`](Self::register) at load: the definitions are checked
///    (the rules of [`MetricDefinition`], and against other plugins'
///    metrics) and a [`PluginMetrics`] handle is made, *not yet exported*:
///    a load refused later (a duplicate name, a kind the server does not
///    serve) leaves what runs untouched.
/// 2. [`PluginMetrics::activate`] when the version goes live (the daemon's
///    start or swap): its definitions become the plugin's. A metric whose
///    kind, label names and buckets are unchanged from the version before
///    keeps its series and values (both versions' handles update the same
///    series while the old one drains); a changed one starts empty; one no
///    longer defined is dropped. The old version's later updates to a
///    changed or dropped metric fail with [`MetricError::Replaced`].
/// 3. [`unregister`](Self::unregister) when the plugin is gone for good
///    (its file removed, disabled, or the file now runs another plugin):
///    its series go.
///
/// Each plugin's metrics are exported in a namespace of its own
/// (`herald_plugin_<plugin>__<metric>`, see [`definition`]'s
/// `family_name`): no plugin's definitions can collide with another's, so
/// none can be refused, or lose its metrics, because of another plugin.
/// Registration checks it all the same: every name a family takes in the
/// exposition (its own and with every suffix, [`definition::SUFFIXES`]) is
/// claimed for the plugin while any of its handles lives, and a name that
/// is the host's, or claimed by another plugin, refuses the registration.
/// So no name can get two `# TYPE` lines, even through a mapping bug.
#[derive(Clone, Default)]
pub struct PluginMetricsRegistry {
    pub(super) shared: Arc<Shared>,
}

impl std::fmt::Debug for PluginMetricsRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginMetricsRegistry")
            .field("plugins", &self.plugins())
            .finish()
    }
}

impl PluginMetricsRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Checks `plugin`'s `definitions` and makes its handle, with a cap of
    /// `max_series` series across all its metrics; nothing is exported
    /// before [`PluginMetrics::activate`]. The error names the plugin and
    /// the metric at fault (and the other plugin, for a conflict).
    pub fn register(
        &self,
        plugin: &str,
        definitions: &[MetricDefinition],
        max_series: usize,
    ) -> Result<PluginMetrics, DefinitionError> {
        let checked = definition::check_all(plugin, definitions)?;
        let names: Vec<(String, String)> = checked
            .iter()
            .flat_map(|c| {
                definition::exposed_names(plugin, &c.name, c.shape.kind)
                    .into_iter()
                    .map(|name| (c.name.clone(), name))
            })
            .collect();
        let installed = self.shared.lock();
        self.shared.claim(plugin, &names)?;
        let claimed = names.into_iter().map(|(_, name)| name).collect();
        let current = installed.get(plugin);
        let state = current
            .map(|handle| handle.state.clone())
            .unwrap_or_else(|| Arc::new(PluginState::new(max_series)));
        let metrics = checked
            .into_iter()
            .map(|checked| {
                let same = current
                    .and_then(|handle| handle.metrics.get(&checked.name))
                    .filter(|slot| slot.metric.shape == checked.shape)
                    .map(|slot| slot.metric.clone());
                let metric = same.unwrap_or_else(|| Arc::new(Metric::new(&checked, state.clone())));
                let slot = Slot {
                    metric,
                    help: checked.help,
                };
                (checked.name, slot)
            })
            .collect();
        Ok(PluginMetrics {
            inner: Arc::new(Handle {
                plugin: plugin.to_owned(),
                metrics,
                state,
                max_series,
                registry: Some(Arc::downgrade(&self.shared)),
                claimed,
            }),
        })
    }

    /// Drops every series of `plugin`, which is gone for good, and its
    /// error and drop counters. Its handles' later updates fail with
    /// [`MetricError::Replaced`]. False if it had nothing registered.
    pub fn unregister(&self, plugin: &str) -> bool {
        let Some(handle) = self.shared.lock().remove(plugin) else {
            return false;
        };
        for slot in handle.metrics.values() {
            slot.metric.retire();
        }
        true
    }

    /// Plugins with activated metrics, by name.
    pub fn plugins(&self) -> Vec<String> {
        self.shared.lock().keys().cloned().collect()
    }
}

/// One loaded plugin version's metrics: what its `add`, `set` and `observe`
/// imports call. Cheap to clone. An update to a series that exists
/// allocates nothing and takes only its metric's lock.
#[derive(Clone)]
pub struct PluginMetrics {
    pub(super) inner: Arc<Handle>,
}

impl std::fmt::Debug for PluginMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut metrics: Vec<&str> = self.inner.metrics.keys().map(String::as_str).collect();
        metrics.sort_unstable();
        f.debug_struct("PluginMetrics")
            .field("plugin", &self.inner.plugin)
            .field("metrics", &metrics)
            .field("max_series", &self.inner.max_series)
            .finish()
    }
}

impl PluginMetrics {
    /// A handle defining nothing, tied to no registry: every update fails
    /// with [`MetricError::Undefined`]. For a plugin asked for its manifest
    /// before it is loaded.
    pub fn detached(plugin: &str) -> Self {
        PluginMetrics {
            inner: Arc::new(Handle {
                plugin: plugin.to_owned(),
                metrics: HashMap::new(),
                state: Arc::new(PluginState::new(0)),
                max_series: 0,
                registry: None,
                claimed: Vec::new(),
            }),
        }
    }

    /// The plugin's name.
    pub fn plugin(&self) -> &str {
        &self.inner.plugin
    }

    /// Makes this version's definitions the plugin's, exported from now on
    /// (see [`PluginMetricsRegistry`]). Call it when the version goes live;
    /// activations of one plugin must follow the order of its registrations
    /// (the reloader loads one file at a time). Again on an active handle,
    /// or on a detached one: nothing.
    pub fn activate(&self) {
        let Some(shared) = self.inner.registry.as_ref().and_then(Weak::upgrade) else {
            return;
        };
        let mut installed = shared.lock();
        let previous = installed.insert(self.inner.plugin.clone(), self.inner.clone());
        if let Some(previous) = previous.filter(|p| !Arc::ptr_eq(p, &self.inner)) {
            for slot in previous.metrics.values() {
                let kept = self
                    .inner
                    .metrics
                    .values()
                    .any(|mine| Arc::ptr_eq(&mine.metric, &slot.metric));
                if !kept {
                    slot.metric.retire();
                }
            }
        }
        for slot in self.inner.metrics.values() {
            slot.metric.install(&slot.help);
        }
        self.inner
            .state
            .max_series
            .store(self.inner.max_series, Ordering::Relaxed);
    }

    /// True while this handle's definitions are the plugin's exported ones
    /// (it was activated, and neither a newer version nor an
    /// unregistration has replaced it since).
    pub fn is_active(&self) -> bool {
        let Some(shared) = self.inner.registry.as_ref().and_then(Weak::upgrade) else {
            return false;
        };
        shared
            .lock()
            .get(&self.inner.plugin)
            .is_some_and(|current| Arc::ptr_eq(current, &self.inner))
    }

    /// Adds `value` to a counter (≥ 0) or a gauge (any finite value), in the
    /// series of `label_values` (one per label name, in their order).
    pub fn add(&self, name: &str, label_values: &[String], value: f64) -> Result<(), MetricError> {
        self.update(Operation::Add, name, label_values, value)
    }

    /// Sets a gauge's series to `value` (finite).
    pub fn set(&self, name: &str, label_values: &[String], value: f64) -> Result<(), MetricError> {
        self.update(Operation::Set, name, label_values, value)
    }

    /// Counts `value` (finite) into a histogram's series.
    pub fn observe(
        &self,
        name: &str,
        label_values: &[String],
        value: f64,
    ) -> Result<(), MetricError> {
        self.update(Operation::Observe, name, label_values, value)
    }

    fn update(
        &self,
        operation: Operation,
        name: &str,
        labels: &[String],
        value: f64,
    ) -> Result<(), MetricError> {
        let result = self.try_update(operation, name, labels, value);
        if result.is_ok() && self.inner.state.journaling.load(Ordering::Relaxed) {
            self.journal(operation, name, labels, value);
        }
        if let Err(error) = &result
            && let Some(reason) = error.reason()
        {
            self.inner
                .state
                .errors
                .of(reason)
                .fetch_add(1, Ordering::Relaxed);
        }
        result
    }

    /// Keeps every update applied from now on, for [`take_updates`](Self::take_updates).
    pub fn record_updates(&self) {
        let mut journal = self
            .inner
            .state
            .journal
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        journal.get_or_insert_with(Vec::new);
        self.inner.state.journaling.store(true, Ordering::Relaxed);
    }

    /// The updates applied since the last call (with
    /// [`record_updates`](Self::record_updates); none otherwise).
    pub fn take_updates(&self) -> Vec<MetricUpdate> {
        let mut journal = self
            .inner
            .state
            .journal
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        journal.as_mut().map(std::mem::take).unwrap_or_default()
    }

    fn journal(&self, operation: Operation, name: &str, labels: &[String], value: f64) {
        let names = self
            .inner
            .metrics
            .get(name)
            .map(|slot| slot.metric.shape.label_names.clone())
            .unwrap_or_default();
        let update = MetricUpdate {
            operation,
            metric: name.to_owned(),
            labels: names.into_iter().zip(labels.iter().cloned()).collect(),
            value,
        };
        let mut journal = self
            .inner
            .state
            .journal
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(journal) = journal.as_mut() {
            journal.push(update);
        }
    }

    fn try_update(
        &self,
        operation: Operation,
        name: &str,
        labels: &[String],
        value: f64,
    ) -> Result<(), MetricError> {
        let Some(slot) = self.inner.metrics.get(name) else {
            return Err(MetricError::Undefined {
                metric: shown(name),
            });
        };
        let metric = &slot.metric;
        let shape = &metric.shape;
        if !operation.applies_to(shape.kind) {
            return Err(MetricError::WrongKind {
                metric: shown(name),
                kind: shape.kind,
                operation,
            });
        }
        if !value.is_finite() {
            return Err(MetricError::NotFinite {
                metric: shown(name),
                operation,
                value,
            });
        }
        if shape.kind == MetricKind::Counter && value < 0.0 {
            return Err(MetricError::Negative {
                metric: shown(name),
                value,
            });
        }
        if labels.len() != shape.label_names.len() {
            return Err(MetricError::LabelCount {
                metric: shown(name),
                expected: shape.label_names.len(),
                names: shape.label_names.join(", "),
                given: labels.len(),
            });
        }
        if let Some((label, value)) = shape
            .label_names
            .iter()
            .zip(labels)
            .find(|(_, value)| value.len() > MAX_LABEL_VALUE_BYTES)
        {
            return Err(MetricError::LabelTooLong {
                metric: shown(name),
                label: shown(label),
                bytes: value.len(),
            });
        }

        metric.update(operation, labels, value)
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::error::ErrorReason;
    use super::*;

    pub(crate) fn counter(name: &str, labels: &[&str]) -> MetricDefinition {
        MetricDefinition {
            name: name.into(),
            help: "Things counted.".into(),
            kind: MetricKind::Counter,
            label_names: labels.iter().map(|l| l.to_string()).collect(),
            buckets: Vec::new(),
        }
    }

    pub(crate) fn gauge(name: &str, labels: &[&str]) -> MetricDefinition {
        MetricDefinition {
            kind: MetricKind::Gauge,
            help: "A level.".into(),
            ..counter(name, labels)
        }
    }

    pub(crate) fn histogram(name: &str, labels: &[&str], buckets: &[f64]) -> MetricDefinition {
        MetricDefinition {
            kind: MetricKind::Histogram,
            help: "Observations.".into(),
            buckets: buckets.to_vec(),
            ..counter(name, labels)
        }
    }

    pub(crate) fn labels(values: &[&str]) -> Vec<String> {
        values.iter().map(|v| v.to_string()).collect()
    }

    /// A registry with `plugin`'s `definitions` registered and activated.
    pub(crate) fn active(
        registry: &PluginMetricsRegistry,
        plugin: &str,
        definitions: &[MetricDefinition],
    ) -> PluginMetrics {
        let handle = registry
            .register(plugin, definitions, DEFAULT_MAX_SERIES)
            .unwrap();
        handle.activate();
        handle
    }

    /// Installs `plugin` with `definitions` as activated *without any
    /// check*: neither the definition rules nor the claims on exposed
    /// names. What a bug in them would let through, for the tests of the
    /// exposition's last guard.
    pub(crate) fn install_unchecked(
        registry: &PluginMetricsRegistry,
        plugin: &str,
        definitions: &[MetricDefinition],
    ) -> PluginMetrics {
        let state = Arc::new(PluginState::new(DEFAULT_MAX_SERIES));
        let metrics = definitions
            .iter()
            .map(|d| {
                let checked = Checked {
                    name: d.name.clone(),
                    help: d.help.clone(),
                    shape: Shape {
                        kind: d.kind,
                        label_names: d.label_names.as_slice().into(),
                        bounds: if d.kind == MetricKind::Histogram {
                            definition::DEFAULT_BUCKETS.into()
                        } else {
                            Box::default()
                        },
                    },
                };
                let slot = Slot {
                    metric: Arc::new(Metric::new(&checked, state.clone())),
                    help: d.help.clone(),
                };
                (d.name.clone(), slot)
            })
            .collect();
        let handle = PluginMetrics {
            inner: Arc::new(Handle {
                plugin: plugin.to_owned(),
                metrics,
                state,
                max_series: DEFAULT_MAX_SERIES,
                registry: None,
                claimed: Vec::new(),
            }),
        };
        registry
            .shared
            .lock()
            .insert(plugin.to_owned(), handle.inner.clone());
        handle
    }

    /// The value of one series of a counter or gauge, if it exists.
    fn number(handle: &PluginMetrics, name: &str, values: &[&str]) -> Option<f64> {
        let series = handle.inner.metrics[name].metric.lock();
        match series.values.get(&labels(values))? {
            Value::Number(n) => Some(*n),
            Value::Histogram(_) => None,
        }
    }

    fn errors(handle: &PluginMetrics, reason: ErrorReason) -> u64 {
        handle.inner.state.errors.of(reason).load(Ordering::Relaxed)
    }

    #[test]
    fn counters_and_gauges_add_and_set() {
        let registry = PluginMetricsRegistry::new();
        let p = active(
            &registry,
            "p",
            &[counter("calls_total", &["verb"]), gauge("depth", &[])],
        );
        p.add("calls_total", &labels(&["get"]), 1.0).unwrap();
        p.add("calls_total", &labels(&["get"]), 2.5).unwrap();
        p.add("calls_total", &labels(&["put"]), 0.0).unwrap();
        p.add("depth", &[], 5.0).unwrap();
        p.add("depth", &[], -7.0).unwrap();
        assert_eq!(number(&p, "calls_total", &["get"]), Some(3.5));
        assert_eq!(number(&p, "calls_total", &["put"]), Some(0.0));
        assert_eq!(number(&p, "depth", &[]), Some(-2.0));
        p.set("depth", &[], 42.0).unwrap();
        assert_eq!(number(&p, "depth", &[]), Some(42.0));
    }

    #[test]
    fn histograms_count_each_observation_in_the_first_bucket_that_holds_it() {
        let registry = PluginMetricsRegistry::new();
        let p = active(&registry, "p", &[histogram("size", &[], &[1.0, 10.0])]);
        for value in [0.5, 1.0, 1.5, 10.0, 11.0, -3.0] {
            p.observe("size", &[], value).unwrap();
        }
        let series = p.inner.metrics["size"].metric.lock();
        let Value::Histogram(h) = &series.values[&Vec::<String>::new()] else {
            panic!("a histogram");
        };
        // le=1: 0.5, 1.0, -3.0; le=10: 1.5, 10.0; +Inf: 11.0.
        assert_eq!(h.counts.as_ref(), &[3, 2, 1]);
        assert_eq!((h.count, h.sum), (6, 21.0));
    }

    #[test]
    fn every_misuse_is_dropped_named_and_counted_by_reason() {
        let registry = PluginMetricsRegistry::new();
        let p = active(
            &registry,
            "p",
            &[
                counter("calls_total", &["verb", "code"]),
                gauge("depth", &[]),
                histogram("seconds", &[], &[]),
            ],
        );
        let two = labels(&["get", "200"]);
        let cases: Vec<(Result<(), MetricError>, ErrorReason, &str)> = vec![
            (
                p.add("nope_total", &two, 1.0),
                ErrorReason::Undefined,
                "metric \"nope_total\" is not defined in the plugin's manifest",
            ),
            (
                p.set("calls_total", &two, 1.0),
                ErrorReason::WrongKind,
                "metric \"calls_total\" is a counter: `set` is for gauges",
            ),
            (
                p.observe("depth", &[], 1.0),
                ErrorReason::WrongKind,
                "metric \"depth\" is a gauge: `observe` is for histograms",
            ),
            (
                p.add("seconds", &[], 1.0),
                ErrorReason::WrongKind,
                "metric \"seconds\" is a histogram: `add` is for counters and gauges",
            ),
            (
                p.add("calls_total", &labels(&["get"]), 1.0),
                ErrorReason::LabelCount,
                "metric \"calls_total\" has 2 label(s) [verb, code], but 1 value(s) were given",
            ),
            (
                p.add("calls_total", &two, -1.0),
                ErrorReason::Negative,
                "counter \"calls_total\" cannot go down: `add` was given -1",
            ),
            (
                p.add("depth", &[], f64::NAN),
                ErrorReason::NotFinite,
                "metric \"depth\": `add` was given NaN, which is not a finite number",
            ),
            (
                p.observe("seconds", &[], f64::INFINITY),
                ErrorReason::NotFinite,
                "metric \"seconds\": `observe` was given inf, which is not a finite number",
            ),
            (
                p.add(
                    "calls_total",
                    &labels(&["get", &"x".repeat(MAX_LABEL_VALUE_BYTES + 1)]),
                    1.0,
                ),
                ErrorReason::LabelTooLong,
                "metric \"calls_total\": the value of label \"code\" is 1025 bytes long, more \
                 than the 1024 allowed",
            ),
        ];
        for (result, reason, message) in &cases {
            let error = result.as_ref().expect_err(message);
            assert_eq!(error.to_string(), *message);
            assert_eq!(error.reason(), Some(*reason));
        }
        for reason in ErrorReason::ALL {
            let expected = cases.iter().filter(|(_, r, _)| *r == reason).count() as u64;
            assert_eq!(errors(&p, reason), expected, "{reason:?}");
        }
        // Nothing was recorded by the refused updates.
        assert_eq!(p.inner.state.series.load(Ordering::Relaxed), 0);
        // Negative zero is no decrease, and a gauge may go negative.
        p.add("calls_total", &two, -0.0).unwrap();
        p.set("depth", &[], -1.0).unwrap();
    }

    #[test]
    fn an_undefined_name_is_shown_cut_short() {
        let p = PluginMetrics::detached("p");
        let error = p.add(&"n\n".repeat(1000), &[], 1.0).unwrap_err();
        let message = error.to_string();
        assert!(message.len() < 200 && !message.contains('\n'), "{message}");
    }

    #[test]
    fn the_series_past_the_cap_is_dropped_and_counted_while_existing_ones_update() {
        let registry = PluginMetricsRegistry::new();
        let p = active(
            &registry,
            "p",
            &[counter("a_total", &["n"]), gauge("b", &["n"])],
        );
        // The cap spans the plugin's metrics: 600 + 400 = 1000.
        for n in 0..600 {
            p.add("a_total", &labels(&[&n.to_string()]), 1.0).unwrap();
        }
        for n in 0..400 {
            p.set("b", &labels(&[&n.to_string()]), 1.0).unwrap();
        }
        let error = p.add("a_total", &labels(&["600"]), 1.0).unwrap_err();
        assert_eq!(
            error,
            MetricError::SeriesLimit {
                metric: "\"a_total\"".into(),
                max: 1000
            }
        );
        assert!(
            error.to_string().contains("limit of 1000 series"),
            "{error}"
        );
        assert_eq!(error.reason(), None);
        assert!(p.set("b", &labels(&["400"]), 1.0).is_err());
        assert_eq!(p.inner.state.dropped.load(Ordering::Relaxed), 2);
        assert!(ErrorReason::ALL.iter().all(|r| errors(&p, *r) == 0));
        // Existing series still update.
        p.add("a_total", &labels(&["0"]), 1.0).unwrap();
        p.set("b", &labels(&["399"]), 7.0).unwrap();
        assert_eq!(number(&p, "a_total", &["0"]), Some(2.0));
        assert_eq!(number(&p, "b", &["399"]), Some(7.0));
        assert_eq!(number(&p, "a_total", &["600"]), None);
        assert_eq!(p.inner.state.series.load(Ordering::Relaxed), 1000);
    }

    #[test]
    fn an_unchanged_metric_keeps_its_series_across_a_new_version_and_a_changed_one_resets() {
        let registry = PluginMetricsRegistry::new();
        let v1 = active(
            &registry,
            "p",
            &[
                counter("kept_total", &["k"]),
                counter("relabelled_total", &["k"]),
                histogram("rebucketed", &[], &[1.0]),
                gauge("dropped", &[]),
            ],
        );
        let one = labels(&["x"]);
        v1.add("kept_total", &one, 3.0).unwrap();
        v1.add("relabelled_total", &one, 3.0).unwrap();
        v1.observe("rebucketed", &[], 0.5).unwrap();
        v1.set("dropped", &[], 9.0).unwrap();
        let v2 = registry
            .register(
                "p",
                &[
                    MetricDefinition {
                        help: "New help, same series.".into(),
                        ..counter("kept_total", &["k"])
                    },
                    counter("relabelled_total", &["k", "j"]),
                    histogram("rebucketed", &[], &[2.0]),
                    gauge("added", &[]),
                ],
                DEFAULT_MAX_SERIES,
            )
            .unwrap();
        // Registered, not active: the running version is untouched.
        assert!(v1.is_active() && !v2.is_active());
        v1.add("kept_total", &one, 1.0).unwrap();
        v1.set("dropped", &[], 10.0).unwrap();
        assert_eq!(number(&v1, "dropped", &[]), Some(10.0));
        v2.activate();
        assert!(v2.is_active() && !v1.is_active());
        assert_eq!(number(&v2, "kept_total", &["x"]), Some(4.0));
        assert_eq!(
            v2.inner.metrics["kept_total"].metric.lock().help,
            "New help, same series."
        );
        assert_eq!(number(&v2, "relabelled_total", &["x", "y"]), None);
        assert!(
            v2.inner.metrics["rebucketed"]
                .metric
                .lock()
                .values
                .is_empty()
        );
        // The old version, draining, still counts into the unchanged metric...
        v1.add("kept_total", &one, 1.0).unwrap();
        assert_eq!(number(&v2, "kept_total", &["x"]), Some(5.0));
        // ...and its updates to changed or dropped ones are refused.
        for (result, metric) in [
            (v1.add("relabelled_total", &one, 1.0), "relabelled_total"),
            (v1.observe("rebucketed", &[], 1.0), "rebucketed"),
            (v1.set("dropped", &[], 1.0), "dropped"),
        ] {
            let error = result.unwrap_err();
            assert_eq!(
                error,
                MetricError::Replaced {
                    metric: format!("{metric:?}")
                }
            );
            assert!(error.to_string().contains("no longer defined"), "{error}");
        }
        // Only the kept series counts against the cap.
        assert_eq!(v2.inner.state.series.load(Ordering::Relaxed), 1);
        drop(v1);
        assert_eq!(v2.inner.state.series.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn a_version_registered_but_never_activated_changes_nothing() {
        let registry = PluginMetricsRegistry::new();
        let v1 = active(&registry, "p", &[gauge("g", &[])]);
        v1.set("g", &[], 1.0).unwrap();
        let refused = registry
            .register("p", &[counter("other_total", &[])], 5)
            .unwrap();
        drop(refused);
        v1.set("g", &[], 2.0).unwrap();
        assert_eq!(number(&v1, "g", &[]), Some(2.0));
        assert_eq!(v1.inner.state.max_series.load(Ordering::Relaxed), 1000);
        assert_eq!(v1.inner.state.series.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn unregistering_drops_the_plugins_series_and_counters() {
        let registry = PluginMetricsRegistry::new();
        let p = active(&registry, "p", &[gauge("g", &[])]);
        p.set("g", &[], 1.0).unwrap();
        assert_eq!(registry.plugins(), ["p"]);
        assert!(registry.unregister("p"));
        assert!(!registry.unregister("p"));
        assert!(registry.plugins().is_empty());
        assert!(matches!(
            p.set("g", &[], 1.0),
            Err(MetricError::Replaced { .. })
        ));
        assert_eq!(p.inner.state.series.load(Ordering::Relaxed), 0);
        // A new load of the same name starts from nothing.
        let again = active(&registry, "p", &[gauge("g", &[])]);
        assert_eq!(number(&again, "g", &[]), None);
        assert_eq!(errors(&again, ErrorReason::Undefined), 0);
    }

    #[test]
    fn no_plugin_can_keep_another_from_loading_or_take_its_metrics() {
        // A hostile plugin defines, first, the metric another plugin needs,
        // with other labels and another kind: each lives in its own
        // namespace, so the rightful plugin loads and keeps its own series.
        let registry = PluginMetricsRegistry::new();
        let squatter = active(&registry, "squatter", &[gauge("requests", &["x"])]);
        let rightful = active(
            &registry,
            "rightful",
            &[counter("requests_total", &["code"])],
        );
        squatter.set("requests", &labels(&["1"]), 7.0).unwrap();
        rightful
            .add("requests_total", &labels(&["200"]), 2.0)
            .unwrap();
        assert_eq!(number(&rightful, "requests_total", &["200"]), Some(2.0));
        assert_eq!(number(&squatter, "requests", &["1"]), Some(7.0));
        // The same name and shape in two plugins: two families.
        let other = active(&registry, "other", &[counter("requests_total", &["code"])]);
        other.add("requests_total", &labels(&["200"]), 5.0).unwrap();
        assert_eq!(number(&rightful, "requests_total", &["200"]), Some(2.0));
        // Unloading one leaves the others' series alone.
        assert!(registry.unregister("squatter"));
        assert_eq!(number(&rightful, "requests_total", &["200"]), Some(2.0));
    }

    #[test]
    fn a_metric_whose_suffixed_names_would_be_another_plugins_is_refused_at_registration() {
        // The reproduction: plugin `a`'s histogram `x_` would write
        // herald_plugin_a__x__bucket and __sum, the families of plugin
        // `a--x`'s gauges `bucket` and `sum`.
        let registry = PluginMetricsRegistry::new();
        let neighbour = active(
            &registry,
            "a--x",
            &[gauge("bucket", &[]), gauge("sum", &[])],
        );
        let error = registry
            .register("a", &[histogram("x_", &[], &[])], DEFAULT_MAX_SERIES)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("plugin \"a\" metric \"x_\"") && error.contains("end in '_'"),
            "{error}"
        );
        neighbour.set("bucket", &[], 1.0).unwrap();
        assert_eq!(number(&neighbour, "bucket", &[]), Some(1.0));
    }

    #[test]
    fn every_exposed_name_is_claimed_for_one_plugin_and_never_the_hosts() {
        let registry = PluginMetricsRegistry::new();
        let shared = &registry.shared;
        let names = |metric: &str, names: &[&str]| -> Vec<(String, String)> {
            names
                .iter()
                .map(|n| (metric.to_owned(), (*n).to_owned()))
                .collect()
        };
        // What a broken mapping could make: two plugins' families sharing a
        // name, or a plugin's taking the host's.
        shared
            .claim("a", &names("x_", &["herald_plugin_a__x__bucket"]))
            .unwrap();
        let error = shared
            .claim("a--x", &names("bucket", &["herald_plugin_a__x__bucket"]))
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "plugin \"a--x\" metric \"bucket\": its series herald_plugin_a__x__bucket is already \
             plugin \"a\"'s: no two families may share an exposed name"
        );
        for host in [
            "herald_plugin_faults_total",
            "herald_ready",
            "herald_handler_duration_seconds_bucket",
            "herald_ready_created",
        ] {
            let error = shared
                .claim("p", &names("m", &[host]))
                .unwrap_err()
                .to_string();
            assert!(error.contains("one of the host's own"), "{error}");
        }
        // A refused claim takes nothing.
        assert!(!shared.claims().contains_key("herald_ready"));
        // Two versions of one plugin share their names; the claims go with
        // the last handle holding them.
        let v1 = active(&registry, "p", &[histogram("h", &[], &[])]);
        let v2 = active(&registry, "p", &[histogram("h", &[], &[])]);
        assert_eq!(shared.claims()["herald_plugin_p__h_bucket"].handles, 2);
        for suffix in [
            "", "_bucket", "_sum", "_count", "_created", "_total", "_info",
        ] {
            assert!(
                shared
                    .claims()
                    .contains_key(&format!("herald_plugin_p__h{suffix}")),
                "{suffix}"
            );
        }
        drop(v1);
        assert!(registry.unregister("p"));
        assert_eq!(shared.claims()["herald_plugin_p__h"].handles, 1);
        drop(v2);
        assert!(!shared.claims().contains_key("herald_plugin_p__h"));
        // A registration refused for any reason holds no claim.
        registry
            .register("q", &[gauge("g_", &[])], DEFAULT_MAX_SERIES)
            .unwrap_err();
        assert!(shared.claims().keys().all(|name| !name.contains("_q__")));
    }

    #[test]
    fn a_label_value_that_could_change_how_the_exposition_reads_is_dropped_and_counted() {
        let registry = PluginMetricsRegistry::new();
        let p = active(&registry, "p", &[counter("calls_total", &["verb", "code"])]);
        for (c, escape) in crate::text::tests::HOSTILE {
            let error = p
                .add("calls_total", &labels(&["get", &format!("2{c}00")]), 1.0)
                .unwrap_err();
            assert_eq!(error.reason(), Some(ErrorReason::LabelUnsafe));
            assert_eq!(
                error.to_string(),
                format!(
                    "metric \"calls_total\": the value of label \"code\" holds {escape}: label \
                     values may not hold control characters, line or paragraph separators, \
                     bidirectional or invisible marks"
                )
            );
        }
        assert_eq!(
            errors(&p, ErrorReason::LabelUnsafe),
            crate::text::tests::HOSTILE.len() as u64
        );
        assert_eq!(p.inner.state.series.load(Ordering::Relaxed), 0);
        p.add("calls_total", &labels(&["get", "é \"✓\" \\"]), 1.0)
            .unwrap();
    }

    #[test]
    fn a_detached_handle_defines_nothing() {
        let p = PluginMetrics::detached("(loading)");
        p.activate();
        assert!(!p.is_active());
        assert!(matches!(
            p.add("x_total", &[], 1.0),
            Err(MetricError::Undefined { .. })
        ));
    }

    #[test]
    fn threads_updating_one_plugins_metrics_lose_nothing() {
        let registry = PluginMetricsRegistry::new();
        let definitions = || [counter("n_total", &["t"]), histogram("h", &[], &[])];
        let p = active(&registry, "p", &definitions());
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let p = p.clone();
                let registry = registry.clone();
                std::thread::spawn(move || {
                    let mine = labels(&[&(t % 2).to_string()]);
                    for i in 0..10_000 {
                        p.add("n_total", &mine, 1.0).unwrap();
                        p.observe("h", &[], 0.001).unwrap();
                        if i % 1000 == 0 {
                            // Scrapes, and new versions with the same
                            // definitions, meanwhile.
                            let _ = super::super::render::text(&registry);
                            active(&registry, "p", &definitions());
                        }
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(number(&p, "n_total", &["0"]), Some(20_000.0));
        assert_eq!(number(&p, "n_total", &["1"]), Some(20_000.0));
        let series = p.inner.metrics["h"].metric.lock();
        let Value::Histogram(h) = &series.values[&Vec::<String>::new()] else {
            panic!("a histogram");
        };
        assert_eq!(h.count, 40_000);
    }

    /// What an update to an existing series costs, against what a native
    /// Rust plugin would pay with prometheus-client: a family looked up by
    /// its label set, and a counter handle kept aside. Figures only mean
    /// something in a release build.
    #[test]
    #[ignore = "measurement: cargo test --release -p herald --lib update_cost -- --ignored --nocapture"]
    fn update_cost() {
        use prometheus_client::metrics::counter::Counter;
        use prometheus_client::metrics::family::Family;
        const N: u32 = 2_000_000;
        let per_call = |started: std::time::Instant| started.elapsed().as_nanos() as f64 / N as f64;
        let registry = PluginMetricsRegistry::new();
        let p = active(&registry, "p", &[counter("calls_total", &["verb", "code"])]);
        let values = labels(&["get", "200"]);
        let started = std::time::Instant::now();
        for _ in 0..N {
            std::hint::black_box(&p)
                .add("calls_total", std::hint::black_box(&values), 1.0)
                .unwrap();
        }
        let herald = per_call(started);
        let family = Family::<Vec<(String, String)>, Counter>::default();
        let set = vec![
            ("verb".to_owned(), "get".to_owned()),
            ("code".to_owned(), "200".to_owned()),
        ];
        let started = std::time::Instant::now();
        for _ in 0..N {
            std::hint::black_box(&family)
                .get_or_create(std::hint::black_box(&set))
                .inc();
        }
        let by_labels = per_call(started);
        let kept = family.get_or_create(&set).clone();
        let started = std::time::Instant::now();
        for _ in 0..N {
            std::hint::black_box(&kept).inc();
        }
        let handle = per_call(started);
        println!(
            "update of an existing series: herald add {herald:.1} ns; prometheus-client \
             family by labels {by_labels:.1} ns, counter handle {handle:.1} ns"
        );
    }
}
