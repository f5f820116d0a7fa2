//! The `metrics` import (0.3.0 and later), on the plugin's [`PluginMetrics`].

use super::PluginMetrics;
use crate::capability::log::{LogLevel, LogSource, PluginLogger};
use crate::wit::v0_3::herald::plugin0_3_0::metrics;
use wasmtime::component::Linker;

/// What the `metrics` import reaches: the plugin's metrics, and its log for
/// the updates the host drops.
pub struct MetricsHost<'a> {
    /// The metrics its manifest defines.
    pub metrics: &'a PluginMetrics,
    /// Where a dropped update is reported.
    pub logger: &'a PluginLogger,
}

/// Links `metrics` (0.3.0 and later); `reach`
/// finds what they reach in the store's state.
pub(super) fn add_to_linker<T: Send + 'static>(
    linker: &mut Linker<T>,
    reach: fn(&mut T) -> MetricsHost<'_>,
) -> wasmtime::Result<()> {
    metrics::add_to_linker::<T, super::Metrics>(linker, reach)
}

impl MetricsHost<'_> {
    /// A misuse is dropped, counted, and logged as a warning in the
    /// plugin's log: metrics never fail a handler.
    fn report(&self, applied: Result<(), super::MetricError>) {
        if let Err(err) = applied {
            self.logger
                .log(LogLevel::Warn, LogSource::Api, &err.to_string());
        }
    }
}

impl metrics::Host for MetricsHost<'_> {
    fn add(&mut self, name: String, label_values: Vec<String>, value: f64) {
        self.report(self.metrics.add(&name, &label_values, value));
    }

    fn set(&mut self, name: String, label_values: Vec<String>, value: f64) {
        self.report(self.metrics.set(&name, &label_values, value));
    }

    fn observe(&mut self, name: String, label_values: Vec<String>, value: f64) {
        self.report(self.metrics.observe(&name, &label_values, value));
    }
}
