//! The `metrics` import (0.3.0 and later), on the plugin's [`PluginMetrics`].

use super::PluginMetrics;
use crate::capability::log::{LogLevel, LogSource, PluginLogger};
use crate::wit::v0_3::herald::plugin0_3_0::metrics;
use wasmtime::component::{HasData, Linker};

/// What the `metrics` import reaches: the plugin's metrics, and its log for
/// the updates the host drops.
pub struct MetricsHost<'a> {
    /// The metrics its manifest defines.
    pub metrics: &'a PluginMetrics,
    /// Where a dropped update is reported.
    pub logger: &'a PluginLogger,
}

/// Implemented by the store's state: the `metrics` capability's view.
pub trait MetricsView: Send {
    /// The plugin's metrics and logger.
    fn metrics(&mut self) -> MetricsHost<'_>;
}

struct HasMetrics;

impl HasData for HasMetrics {
    type Data<'a> = MetricsHost<'a>;
}

/// Links `metrics` (0.3.0 and later).
pub fn add_to_linker<T: MetricsView + 'static>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    metrics::add_to_linker::<T, HasMetrics>(linker, T::metrics)
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
