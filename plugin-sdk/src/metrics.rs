//! The plugin's own Prometheus metrics: declared in the manifest with
//! [`Metric`], updated from handlers with [`counter`], [`gauge`] and
//! [`histogram`]. The host exports each as `herald_plugin_<name>` on its
//! `/metrics` endpoint, with a `plugin` label naming the plugin.
//!
//! ```
//! use herald_sdk::k8s_openapi::api::core::v1::Pod;
//! use herald_sdk::metrics::{self, Metric};
//! use herald_sdk::{Manifest, Subscription};
//!
//! let manifest = Manifest::new("crash-watch", "0.1.0")
//!     .subscribe(Subscription::to::<Pod>())
//!     .metric(Metric::counter("alerts_total", "Alerts sent").labels(["namespace"]))
//!     .metric(Metric::gauge("stuck", "Pods stuck right now"))
//!     .metric(Metric::histogram("rollout_seconds", "Rollout durations").buckets([10.0, 60.0, 300.0]));
//! # herald_sdk::testing::reset();
//! # herald_sdk::testing::declare(&manifest);
//!
//! // In a handler:
//! metrics::counter("alerts_total").with(&["shop"]).inc();
//! metrics::gauge("stuck").set(3.0);
//! metrics::gauge("stuck").add(-1.0);
//! metrics::histogram("rollout_seconds").observe(12.5);
//! # assert_eq!(herald_sdk::testing::metric("alerts_total", &["shop"]), Some(1.0));
//! # assert_eq!(herald_sdk::testing::metric("stuck", &[]), Some(2.0));
//! ```
//!
//! Updates return nothing: the host drops an update it cannot apply (a name
//! the manifest did not define, the wrong kind for the metric, the wrong
//! number of label values, a negative counter increment, NaN), counts it
//! and logs a warning in the plugin's log. A metric never fails a handler.
//! Each plugin holds a bounded number of series (label value combinations,
//! 1,000 by default); updates that would add more are dropped the same way,
//! so keep label values few: a namespace, a reason, never a Pod name.
//!
//! An update is one host call and allocates nothing without labels (with
//! labels: the list of values handed to the host).
//!
//! On the native target the updates reach [`testing`](crate::testing):
//! [`testing::metric`](crate::testing::metric) reads a series back, and
//! [`testing::declare`](crate::testing::declare) makes the test host check
//! updates against the manifest as the real host does.

use std::fmt;

/// What a metric measures (Prometheus' metric types).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MetricKind {
    /// A count that only goes up: [`Counter::inc`], [`Counter::add`].
    Counter,
    /// A value that goes up and down: [`Gauge::set`], [`Gauge::add`].
    Gauge,
    /// Observations counted into buckets: [`Histogram::observe`].
    Histogram,
}

impl MetricKind {
    /// `counter`, `gauge` or `histogram`, as Prometheus' `# TYPE` line
    /// spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Counter => "counter",
            Self::Gauge => "gauge",
            Self::Histogram => "histogram",
        }
    }
}

/// Formats as [`MetricKind::as_str`].
impl fmt::Display for MetricKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One metric the plugin will update, declared in the manifest with
/// [`Manifest::metric`](crate::Manifest::metric). Start from
/// [`Metric::counter`], [`Metric::gauge`] or [`Metric::histogram`].
///
/// The host refuses to load a plugin whose definitions break Prometheus'
/// naming rules: names and label names `[a-zA-Z_][a-zA-Z0-9_]*`, counters
/// ending in `_total`, no label named `plugin` (nor `le` on histograms),
/// bucket bounds strictly increasing. A hot swap to a version that defines
/// a metric the same way keeps its series.
///
/// ```
/// use herald_sdk::metrics::{Metric, MetricKind};
///
/// let metric = Metric::histogram("rollout_duration_seconds", "Time from a rollout's start to its completion")
///     .labels(["namespace"])
///     .buckets([5.0, 30.0, 120.0, 600.0]);
/// assert_eq!(metric.kind, MetricKind::Histogram);
/// assert_eq!(metric.label_names, ["namespace"]);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Metric {
    /// The name, without the `herald_plugin_` prefix the host adds.
    pub name: String,
    /// One line saying what it measures (the `# HELP` text).
    pub help: String,
    /// Counter, gauge or histogram.
    pub kind: MetricKind,
    /// The names of its labels; every update gives one value for each, in
    /// this order.
    pub label_names: Vec<String>,
    /// A histogram's bucket upper bounds, strictly increasing; empty for
    /// Prometheus' defaults (5 ms to 10 s). Ignored for other kinds.
    pub buckets: Vec<f64>,
}

impl Metric {
    /// A metric of `kind`, without labels or buckets.
    pub fn new(kind: MetricKind, name: impl Into<String>, help: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            help: help.into(),
            kind,
            label_names: Vec::new(),
            buckets: Vec::new(),
        }
    }

    /// A counter; its name must end in `_total`.
    pub fn counter(name: impl Into<String>, help: impl Into<String>) -> Self {
        Self::new(MetricKind::Counter, name, help)
    }

    /// A gauge.
    pub fn gauge(name: impl Into<String>, help: impl Into<String>) -> Self {
        Self::new(MetricKind::Gauge, name, help)
    }

    /// A histogram, with Prometheus' default buckets until
    /// [`buckets`](Metric::buckets) sets others.
    pub fn histogram(name: impl Into<String>, help: impl Into<String>) -> Self {
        Self::new(MetricKind::Histogram, name, help)
    }

    /// Adds label names; updates then give one value for each, in order.
    pub fn labels<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.label_names.extend(names.into_iter().map(Into::into));
        self
    }

    /// Sets a histogram's bucket upper bounds (strictly increasing; `+Inf`
    /// is implied).
    pub fn buckets(mut self, bounds: impl IntoIterator<Item = f64>) -> Self {
        self.buckets = bounds.into_iter().collect();
        self
    }

    /// What the host would refuse this definition for, if anything: the
    /// naming rules above. [`testing::declare`](crate::testing::declare)
    /// checks them so a unit test catches what would stop the plugin from
    /// loading.
    ///
    /// ```
    /// use herald_sdk::metrics::Metric;
    ///
    /// assert_eq!(Metric::counter("alerts_total", "Alerts").problem(), None);
    /// assert!(Metric::counter("alerts", "Alerts").problem().unwrap().contains("_total"));
    /// ```
    pub fn problem(&self) -> Option<String> {
        let valid_name = |name: &str| {
            let mut characters = name.chars();
            characters
                .next()
                .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
                && characters.all(|c| c.is_ascii_alphanumeric() || c == '_')
        };
        let name = &self.name;
        if !valid_name(name) {
            return Some(format!(
                "metric name {name:?} is not [a-zA-Z_][a-zA-Z0-9_]*"
            ));
        }
        if self.kind == MetricKind::Counter && !name.ends_with("_total") {
            return Some(format!("counter {name:?} must end in _total"));
        }
        for (index, label) in self.label_names.iter().enumerate() {
            if !valid_name(label) {
                return Some(format!(
                    "metric {name:?}: label name {label:?} is not [a-zA-Z_][a-zA-Z0-9_]*"
                ));
            }
            if label == "plugin" || (self.kind == MetricKind::Histogram && label == "le") {
                return Some(format!("metric {name:?}: label name {label:?} is reserved"));
            }
            if self.label_names[..index].contains(label) {
                return Some(format!("metric {name:?}: label {label:?} twice"));
            }
        }
        if self.kind == MetricKind::Histogram
            && (self.buckets.iter().any(|bound| bound.is_nan())
                || self.buckets.windows(2).any(|pair| pair[0] >= pair[1]))
        {
            return Some(format!(
                "histogram {name:?}: buckets must be strictly increasing"
            ));
        }
        None
    }

    pub(crate) fn into_wit(self) -> crate::bindings::herald::plugin0_3_0::types::MetricDefinition {
        use crate::bindings::herald::plugin0_3_0::types as wit;
        wit::MetricDefinition {
            name: self.name,
            help: self.help,
            kind: match self.kind {
                MetricKind::Counter => wit::MetricKind::Counter,
                MetricKind::Gauge => wit::MetricKind::Gauge,
                MetricKind::Histogram => wit::MetricKind::Histogram,
            },
            label_names: self.label_names,
            buckets: self.buckets,
        }
    }
}

/// How an update changes a series: the three calls of the host's `metrics`
/// interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MetricOp {
    /// Adds the value (a counter's increment, at least 0; a gauge's, any
    /// sign).
    Add,
    /// Sets a gauge to the value.
    Set,
    /// Records one observation in a histogram.
    Observe,
}

impl MetricOp {
    /// `add`, `set` or `observe`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Add => "add",
            Self::Set => "set",
            Self::Observe => "observe",
        }
    }
}

/// One update as it is handed to the host: what
/// [`testing::metric_updates`](crate::testing) records.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricUpdate {
    /// Add, set or observe.
    pub op: MetricOp,
    /// The metric's name, as declared.
    pub name: String,
    /// One value per label name.
    pub label_values: Vec<String>,
    /// The value added, set or observed.
    pub value: f64,
}

/// The counter `name`, to update: `metrics::counter("alerts_total").inc()`.
pub fn counter(name: &str) -> Counter<'_> {
    Counter {
        series: Series::new(name),
    }
}

/// The gauge `name`, to update: `metrics::gauge("stuck").set(3.0)`.
pub fn gauge(name: &str) -> Gauge<'_> {
    Gauge {
        series: Series::new(name),
    }
}

/// The histogram `name`, to update:
/// `metrics::histogram("rollout_seconds").observe(12.5)`.
pub fn histogram(name: &str) -> Histogram<'_> {
    Histogram {
        series: Series::new(name),
    }
}

/// A metric name with the label values of one series.
#[derive(Clone, Copy, Debug)]
struct Series<'a> {
    name: &'a str,
    label_values: &'a [&'a str],
}

impl<'a> Series<'a> {
    fn new(name: &'a str) -> Self {
        Self {
            name,
            label_values: &[],
        }
    }

    fn update(self, op: MetricOp, value: f64) {
        crate::host::metric_update(op, self.name, self.label_values, value);
    }
}

/// One series of a counter: [`counter`], optionally narrowed with
/// [`with`](Counter::with). Only goes up.
///
/// ```
/// use herald_sdk::metrics;
/// # herald_sdk::testing::reset();
///
/// metrics::counter("alerts_total").with(&["shop"]).inc();
/// metrics::counter("alerts_total").with(&["shop"]).add(2.0);
/// assert_eq!(herald_sdk::testing::metric("alerts_total", &["shop"]), Some(3.0));
/// ```
#[derive(Clone, Copy, Debug)]
#[must_use = "a counter does nothing until incremented"]
pub struct Counter<'a> {
    series: Series<'a>,
}

impl<'a> Counter<'a> {
    /// The series with these label values, one per label name declared, in
    /// order.
    pub fn with<'b>(self, label_values: &'b [&'b str]) -> Counter<'b>
    where
        'a: 'b,
    {
        Counter {
            series: Series {
                name: self.series.name,
                label_values,
            },
        }
    }

    /// Adds one.
    pub fn inc(self) {
        self.add(1.0);
    }

    /// Adds `value`, which must be at least 0 (the host drops a negative
    /// increment).
    pub fn add(self, value: f64) {
        self.series.update(MetricOp::Add, value);
    }
}

/// One series of a gauge: [`gauge`], optionally narrowed with
/// [`with`](Gauge::with). Goes up and down.
///
/// ```
/// use herald_sdk::metrics;
/// # herald_sdk::testing::reset();
///
/// metrics::gauge("stuck_rollouts").set(3.0);
/// metrics::gauge("stuck_rollouts").add(-1.0);
/// metrics::gauge("queue_depth").with(&["shop"]).inc();
/// assert_eq!(herald_sdk::testing::metric("stuck_rollouts", &[]), Some(2.0));
/// ```
#[derive(Clone, Copy, Debug)]
#[must_use = "a gauge does nothing until set"]
pub struct Gauge<'a> {
    series: Series<'a>,
}

impl<'a> Gauge<'a> {
    /// The series with these label values, one per label name declared, in
    /// order.
    pub fn with<'b>(self, label_values: &'b [&'b str]) -> Gauge<'b>
    where
        'a: 'b,
    {
        Gauge {
            series: Series {
                name: self.series.name,
                label_values,
            },
        }
    }

    /// Sets the gauge to `value`.
    pub fn set(self, value: f64) {
        self.series.update(MetricOp::Set, value);
    }

    /// Adds `value` (of either sign).
    pub fn add(self, value: f64) {
        self.series.update(MetricOp::Add, value);
    }

    /// Adds one.
    pub fn inc(self) {
        self.add(1.0);
    }

    /// Subtracts one.
    pub fn dec(self) {
        self.add(-1.0);
    }
}

/// One series of a histogram: [`histogram`], optionally narrowed with
/// [`with`](Histogram::with).
///
/// ```
/// use std::time::Duration;
/// use herald_sdk::metrics;
/// # herald_sdk::testing::reset();
///
/// metrics::histogram("rollout_seconds").observe(12.5);
/// metrics::histogram("rollout_seconds").observe_duration(Duration::from_millis(1500));
/// assert_eq!(herald_sdk::testing::observations("rollout_seconds", &[]), [12.5, 1.5]);
/// ```
#[derive(Clone, Copy, Debug)]
#[must_use = "a histogram does nothing until observed"]
pub struct Histogram<'a> {
    series: Series<'a>,
}

impl<'a> Histogram<'a> {
    /// The series with these label values, one per label name declared, in
    /// order.
    pub fn with<'b>(self, label_values: &'b [&'b str]) -> Histogram<'b>
    where
        'a: 'b,
    {
        Histogram {
            series: Series {
                name: self.series.name,
                label_values,
            },
        }
    }

    /// Records one observation.
    pub fn observe(self, value: f64) {
        self.series.update(MetricOp::Observe, value);
    }

    /// Records a duration, in seconds (Prometheus' base unit).
    pub fn observe_duration(self, duration: std::time::Duration) {
        self.observe(duration.as_secs_f64());
    }
}

// The tests run against the native stand-in host.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use crate::testing;

    #[test]
    fn updates_reach_the_host_with_their_series() {
        testing::reset();
        counter("alerts_total").inc();
        counter("alerts_total").with(&["shop"]).add(2.0);
        let namespace = String::from("blog");
        counter("alerts_total").with(&[namespace.as_str()]).inc();
        gauge("stuck").set(3.0);
        gauge("stuck").dec();
        histogram("seconds").with(&["a", "b"]).observe(0.5);
        let updates = testing::take_metric_updates();
        assert_eq!(updates.len(), 6);
        assert_eq!(
            updates[1],
            MetricUpdate {
                op: MetricOp::Add,
                name: "alerts_total".into(),
                label_values: vec!["shop".into()],
                value: 2.0,
            }
        );
        assert_eq!(updates[4].value, -1.0);
        assert_eq!(updates[5].op, MetricOp::Observe);
        assert_eq!(updates[5].label_values, ["a", "b"]);
        assert_eq!(testing::metric("alerts_total", &[]), Some(1.0));
        assert_eq!(testing::metric("alerts_total", &["shop"]), Some(2.0));
        assert_eq!(testing::metric("alerts_total", &["blog"]), Some(1.0));
        assert_eq!(testing::metric("stuck", &[]), Some(2.0));
        assert_eq!(testing::observations("seconds", &["a", "b"]), [0.5]);
    }

    #[test]
    fn definitions_convert_to_the_abi() {
        let definition = Metric::histogram("rollout_seconds", "Rollouts")
            .labels(["namespace"])
            .buckets([1.0, 10.0])
            .into_wit();
        assert_eq!(definition.name, "rollout_seconds");
        assert_eq!(definition.help, "Rollouts");
        assert_eq!(definition.label_names, ["namespace"]);
        assert_eq!(definition.buckets, [1.0, 10.0]);
        assert!(matches!(
            definition.kind,
            crate::bindings::herald::plugin0_3_0::types::MetricKind::Histogram
        ));
    }

    #[test]
    fn problems_follow_the_hosts_naming_rules() {
        let fine = [
            Metric::counter("alerts_total", "a").labels(["namespace", "reason"]),
            Metric::gauge("_stuck", "s"),
            Metric::histogram("seconds", "s").buckets([0.1, 1.0]),
            Metric::gauge("le_gauge", "g").labels(["le"]),
        ];
        for metric in fine {
            assert_eq!(metric.problem(), None, "{metric:?}");
        }
        let broken = [
            (Metric::counter("alerts", "a"), "_total"),
            (Metric::gauge("9lives", "g"), "is not"),
            (Metric::gauge("a-b", "g"), "is not"),
            (Metric::gauge("g", "g").labels(["plugin"]), "reserved"),
            (Metric::histogram("h", "h").labels(["le"]), "reserved"),
            (Metric::gauge("g", "g").labels(["x", "x"]), "twice"),
            (Metric::gauge("g", "g").labels(["a.b"]), "is not"),
            (
                Metric::histogram("h", "h").buckets([1.0, 1.0]),
                "increasing",
            ),
            (
                Metric::histogram("h", "h").buckets([f64::NAN]),
                "increasing",
            ),
        ];
        for (metric, expected) in broken {
            let problem = metric.problem().expect("a problem");
            assert!(problem.contains(expected), "{problem}");
        }
    }
}
