//! The informers' families at `/metrics`: watch events, cached objects and
//! bytes, watch restarts, relists, errors and bad objects, one series per
//! running informer.

use super::{Informers, SharedInformer, WatchEventType};
use crate::telemetry::{Labels, family};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// Exports every informer the registry runs at scrape time, from the
/// counters its reflector and processor keep and the size of its store
/// (documented in docs/metrics.md). Each series is labelled with the
/// informer's `resource`, `group`, `cluster` and whole key (`informer`);
/// the watch events also by `type`.
#[derive(Debug)]
pub struct InformerCollector(pub Arc<Informers>);

/// The labels of `informer`'s series, its cluster named by the registry
/// (the default one's name when the key names none).
fn labels(informers: &Informers, informer: &SharedInformer) -> Labels {
    let key = informer.key();
    let cluster = match &key.cluster {
        Some(name) => name.as_str().to_owned(),
        None => informers.default_cluster_name(),
    };
    vec![
        ("resource", key.resource.plural.clone()),
        ("group", key.resource.gvk.group.clone()),
        ("cluster", cluster),
        ("informer", key.to_string()),
    ]
}

impl Collector for InformerCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let informers = self.0.all();
        let mut events = Vec::new();
        for informer in &informers {
            for kind in WatchEventType::ALL {
                let mut labels = labels(&self.0, informer);
                labels.push(("type", kind.as_str().to_owned()));
                events.push((labels, informer.stats().events.get(kind) as f64));
            }
        }
        family(
            &mut encoder,
            "herald_watch_events",
            "Watch events received from the API server, by resource and type.",
            MetricType::Counter,
            &events,
        )?;
        let each = |read: &dyn Fn(&SharedInformer) -> u64| -> Vec<(Labels, f64)> {
            informers
                .iter()
                .map(|informer| (labels(&self.0, informer), read(informer) as f64))
                .collect()
        };
        family(
            &mut encoder,
            "herald_cache_objects",
            "Objects in the shared cache, by informer.",
            MetricType::Gauge,
            &each(&|informer| informer.store().len() as u64),
        )?;
        family(
            &mut encoder,
            "herald_cache_bytes",
            "Bytes held by cached objects (JSON and parsed metadata), by informer.",
            MetricType::Gauge,
            &each(&|informer| informer.store().heap_bytes() as u64),
        )?;
        family(
            &mut encoder,
            "herald_watch_restarts",
            "Watch requests restarted (timeouts, drops, errors), by informer.",
            MetricType::Counter,
            &each(&|informer| informer.stats().watch_restarts.load(Ordering::Relaxed)),
        )?;
        family(
            &mut encoder,
            "herald_relists",
            "Complete lists applied (first sync and relists after 410 Gone), by informer.",
            MetricType::Counter,
            &each(&|informer| informer.processor().stats.relists.load(Ordering::Relaxed)),
        )?;
        family(
            &mut encoder,
            "herald_watch_errors",
            "List/watch errors that led to a backoff, by informer.",
            MetricType::Counter,
            &each(&|informer| informer.stats().errors.load(Ordering::Relaxed)),
        )?;
        family(
            &mut encoder,
            "herald_watch_protobuf_fallback",
            "1 when the API server's protobuf for the informer's kind could not be read (a field this Herald does not know) and the kind is read as JSON since, by informer.",
            MetricType::Gauge,
            &each(&|informer| u64::from(informer.stats().protobuf_fallback().is_some())),
        )?;
        family(
            &mut encoder,
            "herald_watch_bad_objects",
            "Objects from the API server the host could not cache (logged, then skipped), by informer.",
            MetricType::Counter,
            &each(&|informer| informer.stats().bad_objects.load(Ordering::Relaxed)),
        )
    }
}
