//! What becomes of an update the host drops: the error returned for the
//! plugin's log, and the reason it is counted under.

use super::definition::MetricKind;
use std::sync::atomic::AtomicU64;

/// Longest label value an update may give, in bytes.
pub const MAX_LABEL_VALUE_BYTES: usize = 1024;

/// An update to a plugin metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// `add`: counters (a value ≥ 0) and gauges.
    Add,
    /// `set`: gauges.
    Set,
    /// `observe`: histograms.
    Observe,
}

impl Operation {
    pub(super) fn applies_to(self, kind: MetricKind) -> bool {
        matches!(
            (self, kind),
            (Operation::Add, MetricKind::Counter | MetricKind::Gauge)
                | (Operation::Set, MetricKind::Gauge)
                | (Operation::Observe, MetricKind::Histogram)
        )
    }

    fn for_kinds(self) -> &'static str {
        match self {
            Operation::Add => "counters and gauges",
            Operation::Set => "gauges",
            Operation::Observe => "histograms",
        }
    }
}

impl std::fmt::Display for Operation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Operation::Add => "add",
            Operation::Set => "set",
            Operation::Observe => "observe",
        })
    }
}

/// An update the host dropped, and why. Nothing goes back to the plugin:
/// the bindings log it as a (rate-limited) warning of the plugin. Every
/// kind but [`MetricError::SeriesLimit`] is counted in
/// `herald_plugin_metric_errors_total{plugin,reason}` (see
/// [`MetricError::reason`]); a dropped new series is counted in
/// `herald_plugin_metric_series_dropped_total{plugin}`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MetricError {
    /// No metric of that name in the manifest.
    #[error("metric {metric} is not defined in the plugin's manifest")]
    Undefined {
        /// The name given (quoted, cut short).
        metric: String,
    },
    /// The metric was defined by this version of the plugin, but a newer
    /// version redefined or dropped it, or the plugin was unloaded.
    #[error(
        "metric {metric} is no longer defined: a newer version of the plugin replaced this \
         version's definition, or the plugin was unloaded"
    )]
    Replaced {
        /// The metric (quoted).
        metric: String,
    },
    /// The operation does not apply to the metric's kind.
    #[error("metric {metric} is a {kind}: `{operation}` is for {}", .operation.for_kinds())]
    WrongKind {
        /// The metric (quoted).
        metric: String,
        /// Its kind.
        kind: MetricKind,
        /// What was asked.
        operation: Operation,
    },
    /// Not one value per label name.
    #[error("metric {metric} has {expected} label(s) [{names}], but {given} value(s) were given")]
    LabelCount {
        /// The metric (quoted).
        metric: String,
        /// Its label count.
        expected: usize,
        /// Its label names.
        names: String,
        /// Values given.
        given: usize,
    },
    /// A label value longer than [`MAX_LABEL_VALUE_BYTES`].
    #[error(
        "metric {metric}: the value of label {label} is {bytes} bytes long, more than the \
         {MAX_LABEL_VALUE_BYTES} allowed"
    )]
    LabelTooLong {
        /// The metric (quoted).
        metric: String,
        /// The label (quoted).
        label: String,
        /// The value's length.
        bytes: usize,
    },
    /// A label value holding a character that could change how the
    /// exposition reads ([`crate::text::is_unsafe`]: control characters,
    /// line breaks included, `DEL`, C1, line and paragraph separators,
    /// bidirectional and invisible marks).
    #[error(
        "metric {metric}: the value of label {label} holds {escape}: label values may not hold \
         control characters, line or paragraph separators, bidirectional or invisible marks"
    )]
    LabelUnsafe {
        /// The metric (quoted).
        metric: String,
        /// The label (quoted).
        label: String,
        /// The first such character, as its visible escape (`\u{202e}`).
        escape: String,
    },
    /// A counter given a negative increment.
    #[error("counter {metric} cannot go down: `add` was given {value}")]
    Negative {
        /// The metric (quoted).
        metric: String,
        /// The value given.
        value: f64,
    },
    /// NaN or an infinity.
    #[error("metric {metric}: `{operation}` was given {value}, which is not a finite number")]
    NotFinite {
        /// The metric (quoted).
        metric: String,
        /// What was asked.
        operation: Operation,
        /// The value given.
        value: f64,
    },
    /// A new series beyond the plugin's cap; existing series still update.
    #[error(
        "metric {metric}: a new series was dropped: the plugin has reached its limit of {max} \
         series across its metrics (pluginMetrics.maxSeries, plugins.<name>.metrics.maxSeries)"
    )]
    SeriesLimit {
        /// The metric (quoted).
        metric: String,
        /// The plugin's cap.
        max: usize,
    },
}

/// The `reason` label of `herald_plugin_metric_errors_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorReason {
    /// [`MetricError::Undefined`] and [`MetricError::Replaced`].
    Undefined,
    /// [`MetricError::WrongKind`].
    WrongKind,
    /// [`MetricError::LabelCount`].
    LabelCount,
    /// [`MetricError::LabelTooLong`].
    LabelTooLong,
    /// [`MetricError::LabelUnsafe`].
    LabelUnsafe,
    /// [`MetricError::Negative`].
    Negative,
    /// [`MetricError::NotFinite`].
    NotFinite,
}

impl ErrorReason {
    /// Every reason, in the order they are exported.
    pub const ALL: [ErrorReason; 7] = [
        ErrorReason::Undefined,
        ErrorReason::WrongKind,
        ErrorReason::LabelCount,
        ErrorReason::LabelTooLong,
        ErrorReason::LabelUnsafe,
        ErrorReason::Negative,
        ErrorReason::NotFinite,
    ];

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorReason::Undefined => "undefined",
            ErrorReason::WrongKind => "wrong-kind",
            ErrorReason::LabelCount => "label-count",
            ErrorReason::LabelTooLong => "label-too-long",
            ErrorReason::LabelUnsafe => "label-unsafe",
            ErrorReason::Negative => "negative",
            ErrorReason::NotFinite => "not-finite",
        }
    }
}

impl MetricError {
    /// The `reason` it is counted under in
    /// `herald_plugin_metric_errors_total`; `None` for a dropped series,
    /// counted in `herald_plugin_metric_series_dropped_total` instead.
    pub fn reason(&self) -> Option<ErrorReason> {
        Some(match self {
            MetricError::Undefined { .. } | MetricError::Replaced { .. } => ErrorReason::Undefined,
            MetricError::WrongKind { .. } => ErrorReason::WrongKind,
            MetricError::LabelCount { .. } => ErrorReason::LabelCount,
            MetricError::LabelTooLong { .. } => ErrorReason::LabelTooLong,
            MetricError::LabelUnsafe { .. } => ErrorReason::LabelUnsafe,
            MetricError::Negative { .. } => ErrorReason::Negative,
            MetricError::NotFinite { .. } => ErrorReason::NotFinite,
            MetricError::SeriesLimit { .. } => return None,
        })
    }
}

/// Per-plugin error counters, one per [`ErrorReason`].
#[derive(Debug, Default)]
pub(super) struct ErrorCounts {
    undefined: AtomicU64,
    wrong_kind: AtomicU64,
    label_count: AtomicU64,
    label_too_long: AtomicU64,
    label_unsafe: AtomicU64,
    negative: AtomicU64,
    not_finite: AtomicU64,
}

impl ErrorCounts {
    pub(super) fn of(&self, reason: ErrorReason) -> &AtomicU64 {
        match reason {
            ErrorReason::Undefined => &self.undefined,
            ErrorReason::WrongKind => &self.wrong_kind,
            ErrorReason::LabelCount => &self.label_count,
            ErrorReason::LabelTooLong => &self.label_too_long,
            ErrorReason::LabelUnsafe => &self.label_unsafe,
            ErrorReason::Negative => &self.negative,
            ErrorReason::NotFinite => &self.not_finite,
        }
    }
}
