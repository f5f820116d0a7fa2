//! The listeners' families at `/metrics`: notifications received,
//! delivered, failed, retried and skipped, queue depth and delayed items,
//! backoff, requeues, plugin faults and handler durations, one series per
//! listener.

use super::Listener;
use crate::plugin::FaultKind;
use crate::telemetry::{Labels, family};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Exports the listeners running at scrape time, from the counters each
/// keeps ([`ListenerStats`](super::ListenerStats)) and the length of its
/// queue (documented in docs/metrics.md). Each series is labelled with the
/// listener's `plugin` and `resource`; faults also by `kind`, requeues by
/// `outcome`. The listeners are those the function given to
/// [`new`](Self::new) returns, in its order: the daemon keeps them.
pub struct ListenerCollector {
    listeners: Box<dyn Fn() -> Vec<Arc<Listener>> + Send + Sync>,
}

impl ListenerCollector {
    /// A collector over the listeners `listeners` returns when scraped.
    pub fn new(listeners: impl Fn() -> Vec<Arc<Listener>> + Send + Sync + 'static) -> Self {
        ListenerCollector {
            listeners: Box::new(listeners),
        }
    }
}

impl std::fmt::Debug for ListenerCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListenerCollector").finish_non_exhaustive()
    }
}

/// The labels of `listener`'s series.
fn labels(listener: &Listener) -> Labels {
    vec![
        ("plugin", listener.plugin().to_owned()),
        ("resource", listener.resource().to_owned()),
    ]
}

impl Collector for ListenerCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let listeners = (self.listeners)();
        let each = |read: &dyn Fn(&Listener) -> f64| -> Vec<(Labels, f64)> {
            listeners
                .iter()
                .map(|listener| (labels(listener), read(listener)))
                .collect()
        };
        let count = |counter: fn(&Listener) -> &AtomicU64| {
            each(&|listener| counter(listener).load(Ordering::Relaxed) as f64)
        };
        family(
            &mut encoder,
            "herald_notifications_received",
            "Notifications distributed to a plugin's listener.",
            MetricType::Counter,
            &count(|listener| &listener.stats.received),
        )?;
        family(
            &mut encoder,
            "herald_notifications_delivered",
            "Notifications a plugin handled successfully.",
            MetricType::Counter,
            &count(|listener| &listener.stats.delivered),
        )?;
        family(
            &mut encoder,
            "herald_notifications_failed",
            "Failed handler calls (every attempt).",
            MetricType::Counter,
            &count(|listener| &listener.stats.failed),
        )?;
        family(
            &mut encoder,
            "herald_notifications_retried",
            "Handler calls retried after a failure.",
            MetricType::Counter,
            &count(|listener| &listener.stats.retried),
        )?;
        family(
            &mut encoder,
            "herald_notifications_skipped",
            "Notifications skipped after the last retry.",
            MetricType::Counter,
            &count(|listener| &listener.stats.skipped),
        )?;
        family(
            &mut encoder,
            "herald_listener_queue_depth",
            "Notifications waiting in a listener's buffer.",
            MetricType::Gauge,
            &each(&|listener| listener.depth() as f64),
        )?;
        family(
            &mut encoder,
            "herald_listener_queue_delayed",
            "Notifications of a coalesced listener waiting for their instant: a failed key's backoff or a requeue-after.",
            MetricType::Gauge,
            &each(&|listener| listener.delayed() as f64),
        )?;
        family(
            &mut encoder,
            "herald_listener_backoff_seconds",
            "Backoff set after failed calls, in seconds: waited in place (every-event) or set for the key to wait (coalesced).",
            MetricType::Counter,
            &each(&|listener| listener.stats.backoff_millis.load(Ordering::Relaxed) as f64 / 1e3),
        )?;
        let mut requeues = Vec::new();
        for listener in &listeners {
            for (outcome, count) in [
                ("scheduled", &listener.stats.requeued),
                ("ignored", &listener.stats.requeues_ignored),
            ] {
                let mut labels = labels(listener);
                labels.push(("outcome", outcome.to_owned()));
                requeues.push((labels, count.load(Ordering::Relaxed) as f64));
            }
        }
        family(
            &mut encoder,
            "herald_listener_requeues",
            "Requeue-after requests of handlers: scheduled (coalesced delivery) or ignored (every-event delivery cannot keep its order with them).",
            MetricType::Counter,
            &requeues,
        )?;
        let mut faults = Vec::new();
        for listener in &listeners {
            for kind in FaultKind::ALL {
                let mut labels = labels(listener);
                labels.push(("kind", kind.as_str().to_owned()));
                faults.push((labels, listener.stats.faults_of(kind) as f64));
            }
        }
        family(
            &mut encoder,
            "herald_plugin_faults",
            "Plugin calls stopped by a fault, by kind (deadline, memory-limit, stack-overflow, panic, trap).",
            MetricType::Counter,
            &faults,
        )?;
        family(
            &mut encoder,
            "herald_plugin_instances_replaced",
            "Plugin instances replaced between calls because their memory had grown towards the cap (a guest leaking with every call), counted at the call after which they were.",
            MetricType::Counter,
            &each(&|listener| listener.stats.retirements.load(Ordering::Relaxed) as f64),
        )?;
        let mut durations = encoder.encode_descriptor(
            "herald_handler_duration_seconds",
            "Duration of plugin handler calls.",
            None,
            MetricType::Histogram,
        )?;
        for listener in &listeners {
            let labels = labels(listener);
            let labels: Vec<(&str, &str)> = labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
            listener
                .stats
                .duration
                .encode(durations.encode_family(&labels)?)?;
        }
        Ok(())
    }
}
