//! The host's own metrics, read at scrape time from the counters the
//! informers, listeners and plugin loader keep (nothing on the hot path but
//! atomic adds and one histogram observation per call).

use crate::daemon::{Daemon, PluginStatus};
use crate::dispatch::Listener;
use crate::informer::{SharedInformer, WatchEventType};
use crate::plugin::FaultKind;
use crate::reload::LoaderStats;
use crate::telemetry::{Labels, family};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Collects every Herald metric from the running daemon at scrape time.
#[derive(Debug)]
pub struct HeraldCollector {
    daemon: Arc<Daemon>,
    loader: Arc<LoaderStats>,
}

impl HeraldCollector {
    /// A collector over `daemon` and `loader`.
    pub fn new(daemon: Arc<Daemon>, loader: Arc<LoaderStats>) -> Self {
        HeraldCollector { daemon, loader }
    }
}

/// A registry holding Herald's collector.
pub fn registry(daemon: Arc<Daemon>, loader: Arc<LoaderStats>) -> Registry {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(HeraldCollector::new(daemon, loader)));
    registry
}

fn informer_labels(informer: &SharedInformer) -> Labels {
    let key = informer.key();
    vec![
        ("resource", key.resource.plural.clone()),
        ("group", key.resource.gvk.group.clone()),
        ("informer", key.to_string()),
    ]
}

fn listener_labels(listener: &Listener) -> Labels {
    vec![
        ("plugin", listener.plugin().to_owned()),
        ("resource", listener.resource().to_owned()),
    ]
}

impl Collector for HeraldCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let informers = self.daemon.informers().all();
        let mut events = Vec::new();
        let (mut objects, mut bytes, mut restarts, mut relists, mut errors) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut bad_objects = Vec::new();
        for informer in &informers {
            let labels = informer_labels(informer);
            for kind in WatchEventType::ALL {
                let mut with_type = labels.clone();
                with_type.push(("type", kind.as_str().to_owned()));
                events.push((with_type, informer.stats().events.get(kind) as f64));
            }
            objects.push((labels.clone(), informer.store().len() as f64));
            bytes.push((labels.clone(), informer.store().heap_bytes() as f64));
            restarts.push((
                labels.clone(),
                informer.stats().watch_restarts.load(Ordering::Relaxed) as f64,
            ));
            relists.push((
                labels.clone(),
                informer.processor().stats.relists.load(Ordering::Relaxed) as f64,
            ));
            errors.push((
                labels.clone(),
                informer.stats().errors.load(Ordering::Relaxed) as f64,
            ));
            bad_objects.push((
                labels,
                informer.stats().bad_objects.load(Ordering::Relaxed) as f64,
            ));
        }
        family(
            &mut encoder,
            "herald_watch_events",
            "Watch events received from the API server, by resource and type.",
            MetricType::Counter,
            &events,
        )?;
        family(
            &mut encoder,
            "herald_cache_objects",
            "Objects in the shared cache, by informer.",
            MetricType::Gauge,
            &objects,
        )?;
        family(
            &mut encoder,
            "herald_cache_bytes",
            "Bytes held by cached objects (JSON and parsed metadata), by informer.",
            MetricType::Gauge,
            &bytes,
        )?;
        family(
            &mut encoder,
            "herald_watch_restarts",
            "Watch requests restarted (timeouts, drops, errors), by informer.",
            MetricType::Counter,
            &restarts,
        )?;
        family(
            &mut encoder,
            "herald_relists",
            "Complete lists applied (first sync and relists after 410 Gone), by informer.",
            MetricType::Counter,
            &relists,
        )?;
        family(
            &mut encoder,
            "herald_watch_errors",
            "List/watch errors that led to a backoff, by informer.",
            MetricType::Counter,
            &errors,
        )?;
        family(
            &mut encoder,
            "herald_watch_bad_objects",
            "Objects from the API server the host could not cache (logged, then skipped), by informer.",
            MetricType::Counter,
            &bad_objects,
        )?;

        let listeners: Vec<Arc<Listener>> = self
            .daemon
            .names()
            .iter()
            .flat_map(|name| self.daemon.listeners(name))
            .collect();
        let counter = |read: &dyn Fn(&Listener) -> u64| -> Vec<(Labels, f64)> {
            listeners
                .iter()
                .map(|l| (listener_labels(l), read(l) as f64))
                .collect()
        };
        family(
            &mut encoder,
            "herald_notifications_received",
            "Notifications distributed to a plugin's listener.",
            MetricType::Counter,
            &counter(&|l| l.stats.received.load(Ordering::Relaxed)),
        )?;
        family(
            &mut encoder,
            "herald_notifications_delivered",
            "Notifications a plugin handled successfully.",
            MetricType::Counter,
            &counter(&|l| l.stats.delivered.load(Ordering::Relaxed)),
        )?;
        family(
            &mut encoder,
            "herald_notifications_failed",
            "Failed handler calls (every attempt).",
            MetricType::Counter,
            &counter(&|l| l.stats.failed.load(Ordering::Relaxed)),
        )?;
        family(
            &mut encoder,
            "herald_notifications_retried",
            "Handler calls retried after a failure.",
            MetricType::Counter,
            &counter(&|l| l.stats.retried.load(Ordering::Relaxed)),
        )?;
        family(
            &mut encoder,
            "herald_notifications_skipped",
            "Notifications skipped after the last retry.",
            MetricType::Counter,
            &counter(&|l| l.stats.skipped.load(Ordering::Relaxed)),
        )?;
        family(
            &mut encoder,
            "herald_listener_queue_depth",
            "Notifications waiting in a listener's buffer.",
            MetricType::Gauge,
            &counter(&|l| l.depth() as u64),
        )?;
        family(
            &mut encoder,
            "herald_listener_queue_delayed",
            "Notifications of a coalesced listener waiting for their instant: a failed key's backoff or a requeue-after.",
            MetricType::Gauge,
            &counter(&|l| l.delayed() as u64),
        )?;
        family(
            &mut encoder,
            "herald_listener_backoff_seconds",
            "Backoff set after failed calls, in seconds: waited in place (every-event) or set for the key to wait (coalesced).",
            MetricType::Counter,
            &listeners
                .iter()
                .map(|l| {
                    let millis = l.stats.backoff_millis.load(Ordering::Relaxed);
                    (listener_labels(l), millis as f64 / 1e3)
                })
                .collect::<Vec<_>>(),
        )?;
        let mut requeues = Vec::new();
        for listener in &listeners {
            for (outcome, count) in [
                ("scheduled", &listener.stats.requeued),
                ("ignored", &listener.stats.requeues_ignored),
            ] {
                let mut labels = listener_labels(listener);
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
                let mut labels = listener_labels(listener);
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
        {
            let mut metric = encoder.encode_descriptor(
                "herald_handler_duration_seconds",
                "Duration of plugin handler calls.",
                None,
                MetricType::Histogram,
            )?;
            for listener in &listeners {
                let labels = listener_labels(listener);
                let labels: Vec<(&str, &str)> =
                    labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
                listener
                    .stats
                    .duration
                    .encode(metric.encode_family(&labels)?)?;
            }
        }
        let plugins = self.daemon.plugins();
        let per_plugin = |read: fn(&crate::capability::log::PluginLogger) -> u64| {
            plugins
                .iter()
                .map(|plugin| {
                    (
                        vec![("plugin", plugin.name().to_owned())],
                        read(&plugin.context().logger) as f64,
                    )
                })
                .collect::<Vec<(Labels, f64)>>()
        };
        family(
            &mut encoder,
            "herald_plugin_log_lines_suppressed",
            "Plugin log lines dropped by the per-plugin rate limit.",
            MetricType::Counter,
            &per_plugin(|logger| logger.suppressed_total()),
        )?;
        family(
            &mut encoder,
            "herald_plugin_output_bytes_dropped",
            "Bytes a plugin wrote to stdout or stderr over its byte rate, dropped before they became log lines.",
            MetricType::Counter,
            &per_plugin(|logger| logger.output_bytes_dropped()),
        )?;

        let loader = &self.loader;
        let none: Labels = Vec::new();
        family(
            &mut encoder,
            "herald_plugin_reloads",
            "Plugins loaded or swapped in from the plugin directory.",
            MetricType::Counter,
            &[(none.clone(), loader.reloads.load(Ordering::Relaxed) as f64)],
        )?;
        family(
            &mut encoder,
            "herald_plugin_unloads",
            "Plugins unloaded because their file was removed from the plugin directory.",
            MetricType::Counter,
            &[(none.clone(), loader.unloads.load(Ordering::Relaxed) as f64)],
        )?;
        family(
            &mut encoder,
            "herald_plugin_load_errors",
            "Plugin files that failed to load (kept the previous version, if any).",
            MetricType::Counter,
            &[(
                none.clone(),
                loader.load_errors.load(Ordering::Relaxed) as f64,
            )],
        )?;
        family(
            &mut encoder,
            "herald_plugin_compiles",
            "Plugin compilations (compiled-artifact cache misses).",
            MetricType::Counter,
            &[(none.clone(), loader.compiles.load(Ordering::Relaxed) as f64)],
        )?;
        family(
            &mut encoder,
            "herald_plugin_compile_seconds",
            "Total time spent compiling plugins, in seconds.",
            MetricType::Counter,
            &[(
                none.clone(),
                loader.compile_micros.load(Ordering::Relaxed) as f64 / 1e6,
            )],
        )?;
        family(
            &mut encoder,
            "herald_plugin_artifact_cache_hits",
            "Plugin loads served from the compiled-artifact cache.",
            MetricType::Counter,
            &[(
                none.clone(),
                loader.cache_hits.load(Ordering::Relaxed) as f64,
            )],
        )?;
        let source = |outcome: &str, count: &AtomicU64| {
            (
                vec![("outcome", outcome.to_owned())],
                count.load(Ordering::Relaxed) as f64,
            )
        };
        family(
            &mut encoder,
            "herald_plugin_source_pulls",
            "Attempts to pull plugin sources from their OCI registries, by outcome: pulled (a new version), unchanged, error.",
            MetricType::Counter,
            &[
                source("pulled", &loader.source_pulls),
                source("unchanged", &loader.source_unchanged),
                source("error", &loader.source_errors),
            ],
        )?;
        let dispatching = if self.daemon.is_dispatching() {
            1.0
        } else {
            0.0
        };
        family(
            &mut encoder,
            "herald_dispatching",
            "1 while this replica dispatches to plugins (always without leader election; only on the leader with it).",
            MetricType::Gauge,
            &[(none.clone(), dispatching)],
        )?;
        let (_, abandoned) = self.daemon.abandoned_workers();
        family(
            &mut encoder,
            "herald_plugin_workers_abandoned",
            "Plugin workers that did not come back within their call deadline plus a margin when stopped (unload, swap, shutdown), and were left to end on their own.",
            MetricType::Counter,
            &[(none.clone(), abandoned as f64)],
        )?;
        let statuses = self.daemon.status();
        let flag = |set: fn(&PluginStatus) -> bool| -> Vec<(Labels, f64)> {
            statuses
                .iter()
                .map(|status| {
                    let value = if set(status) { 1.0 } else { 0.0 };
                    (vec![("plugin", status.name.clone())], value)
                })
                .collect()
        };
        let reclaimed: Vec<(Labels, f64)> = statuses
            .iter()
            .map(|status| {
                let reclaimed = status.instances_reclaimed as f64;
                (vec![("plugin", status.name.clone())], reclaimed)
            })
            .collect();
        family(
            &mut encoder,
            "herald_plugin_instances_reclaimed",
            "Times a plugin's idle instance was dropped (plugins.<name>.reclaimIdleAfter) since it last started dispatching.",
            MetricType::Counter,
            &reclaimed,
        )?;
        let degraded = flag(|status| status.degraded.is_some());
        let waiting = flag(|status| status.caches.as_ref().is_some_and(|c| !c.synced));
        family(
            &mut encoder,
            "herald_plugin_waiting_for_caches",
            "1 while a dispatching plugin's first delivery waits for a cache it subscribes to to have its initial list.",
            MetricType::Gauge,
            &waiting,
        )?;
        family(
            &mut encoder,
            "herald_plugin_degraded",
            "1 while a plugin is degraded: it skipped a notification of its initial list, so readiness no longer waits for it.",
            MetricType::Gauge,
            &degraded,
        )?;
        let ready = if self.daemon.ready() { 1.0 } else { 0.0 };
        family(
            &mut encoder,
            "herald_ready",
            "1 when every informer has synced and every plugin has handled its initial list.",
            MetricType::Gauge,
            &[(none, ready)],
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capability::metrics::PluginMetricsRegistry;
    use crate::capability::{ActionStats, ActionStatsCollector};
    use crate::dispatch::RetryPolicy;
    use crate::informer::{Informers, ReflectorConfig};
    use crate::plugin::FaultKind;
    use crate::shard::Change;
    use crate::telemetry::{HOST_FAMILIES, encode};
    use std::sync::atomic::Ordering;

    /// `(family, type)` of every `# TYPE` line of `text`.
    fn types(text: &str) -> Vec<(String, String)> {
        text.lines()
            .filter_map(|line| line.strip_prefix("# TYPE "))
            .map(|rest| {
                let (name, kind) = rest.split_once(' ').expect("# TYPE name type");
                (name.to_owned(), kind.to_owned())
            })
            .collect()
    }

    /// The list of host families is what the host's collectors export: with
    /// nothing running every family still writes its `# HELP` and `# TYPE`.
    #[tokio::test]
    async fn the_host_families_list_is_exactly_what_the_host_exports() {
        let config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
        let client = kube::Client::try_from(config).unwrap();
        let informers = Arc::new(Informers::new(client, ReflectorConfig::default()));
        let daemon = Arc::new(Daemon::new(informers, RetryPolicy::default()));
        let mut registry = registry(daemon, Arc::default());
        registry.register_collector(Box::new(ActionStatsCollector(Arc::new(
            ActionStats::default(),
        ))));
        registry.register_collector(Box::new(PluginMetricsRegistry::new()));
        registry.register_collector(Box::new(crate::shard::ShardCollector(Arc::new(
            crate::shard::ShardView::new("replica-a"),
        ))));
        let exported = types(&encode(&registry));
        let listed: Vec<(String, String)> = HOST_FAMILIES
            .iter()
            .map(|(name, kind)| ((*name).to_owned(), kind.as_str().to_owned()))
            .collect();
        for family in &exported {
            assert!(
                listed.contains(family),
                "{family:?} is missing from HOST_FAMILIES"
            );
        }
        for family in &listed {
            assert!(
                exported.contains(family),
                "{family:?} is listed but not exported"
            );
        }
    }

    /// The families of an OpenMetrics exposition, each with its lines
    /// (`# HELP`, `# TYPE`, samples), in the order written.
    fn families(text: &str) -> Vec<(String, String)> {
        let mut families: Vec<(String, String)> = Vec::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# HELP ") {
                let name = rest.split(' ').next().unwrap_or_default();
                families.push((name.to_owned(), String::new()));
            }
            if let Some((_, lines)) = families.last_mut() {
                lines.push_str(line);
                lines.push('\n');
            }
        }
        families
    }

    /// What `/metrics` serves for the daemon of
    /// [`the_registry_renders_a_known_state_family_by_family`]: two
    /// plugins on one informer, every counter the test sets given its own
    /// value (the initial list adds one bookmark and one relist).
    const KNOWN_STATE: &str = include_str!("testdata/known-state.openmetrics");

    /// Every family `/metrics` serves (the daemon parts', then the
    /// capabilities' and the sharding's, registered as `service.rs` does)
    /// renders a known state as [`KNOWN_STATE`] pins it: names, help,
    /// types, labels, the order of families and of samples within each,
    /// and values. Two plugins share one informer of Pods on an empty
    /// cluster (so no call runs and nothing changes while it renders);
    /// every counter it can reach is set to a value of its own, so a
    /// family reading the wrong counter shows.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_registry_renders_a_known_state_family_by_family() {
        use crate::informer::WatchEventType;
        use crate::plugin::{LoadOptions, LoadedPlugin, PluginEngine};
        use std::time::{Duration, Instant};

        // No bookmark but the one that ends the initial list.
        let server = herald_apiserver::start(herald_apiserver::ApiServerConfig {
            bookmark_interval: Duration::from_secs(3600),
            ..Default::default()
        })
        .await
        .unwrap();
        let config = kube::Config::new(server.url().parse().unwrap());
        let client = kube::Client::try_from(config).unwrap();
        let informers = Arc::new(Informers::new(client, ReflectorConfig::default()));
        let daemon = Arc::new(Daemon::new(informers.clone(), RetryPolicy::default()));
        let engine = PluginEngine::new(Default::default()).unwrap();
        let bytes = std::fs::read(herald_test_artifacts::NAMED_NOOP).unwrap();
        for name in ["alpha", "beta"] {
            let options = LoadOptions {
                metrics: Some(daemon.plugin_metrics().clone()),
                config: Some(serde_json::json!({ "name": name }).to_string()),
                ..LoadOptions::default()
            };
            let plugin = LoadedPlugin::load(&engine, &bytes, options).unwrap();
            daemon.start(plugin).await.unwrap();
        }
        let deadline = Instant::now() + Duration::from_secs(20);
        while !daemon.ready() {
            assert!(Instant::now() < deadline, "the daemon did not get ready");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }

        // Every counter a value of its own: 1, 2, 3, … in the order set.
        let mut next = 0;
        let mut value = || {
            next += 1;
            next
        };
        let [informer] = &informers.all()[..] else {
            panic!("one informer for both plugins")
        };
        let stats = informer.stats();
        for kind in WatchEventType::ALL {
            for _ in 0..value() {
                stats.events.count(kind);
            }
        }
        for counter in [&stats.watch_restarts, &stats.errors, &stats.bad_objects] {
            counter.fetch_add(value(), Ordering::Relaxed);
        }
        informer
            .processor()
            .stats
            .relists
            .fetch_add(value(), Ordering::Relaxed);
        for name in ["alpha", "beta"] {
            let [listener] = &daemon.listeners(name)[..] else {
                panic!("one listener for {name}")
            };
            let stats = &listener.stats;
            for counter in [
                &stats.received,
                &stats.delivered,
                &stats.failed,
                &stats.retried,
                &stats.skipped,
                &stats.requeued,
                &stats.requeues_ignored,
            ] {
                counter.fetch_add(value(), Ordering::Relaxed);
            }
            stats.backoff_millis.fetch_add(1_500, Ordering::Relaxed);
            for kind in FaultKind::ALL {
                for _ in 0..value() {
                    stats.record_fault(kind);
                }
            }
            stats.duration.observe(0.000_5);
            stats.duration.observe(2.0);
        }
        let loader = Arc::new(LoaderStats::default());
        for counter in [
            &loader.reloads,
            &loader.unloads,
            &loader.load_errors,
            &loader.compiles,
            &loader.cache_hits,
            &loader.source_pulls,
            &loader.source_unchanged,
            &loader.source_errors,
        ] {
            counter.fetch_add(value(), Ordering::Relaxed);
        }
        loader
            .compile_micros
            .fetch_add(2_250_000, Ordering::Relaxed);
        let shard = Arc::new(crate::shard::ShardView::new("replica-a"));
        shard.observed(Default::default(), 3, 2);
        for change in [Change::Acquired, Change::Lost, Change::Lost] {
            shard.count(change);
        }

        let mut registry = registry(daemon.clone(), loader);
        registry.register_collector(Box::new(ActionStatsCollector(Arc::new(
            ActionStats::default(),
        ))));
        registry.register_collector(Box::new(daemon.plugin_metrics().clone()));
        registry.register_collector(Box::new(crate::shard::ShardCollector(shard)));
        let (rendered, known) = (families(&encode(&registry)), families(KNOWN_STATE));
        let names = |families: &[(String, String)]| -> Vec<String> {
            families.iter().map(|(name, _)| name.clone()).collect()
        };
        assert_eq!(names(&rendered), names(&known), "the families, in order");
        for ((name, rendered), (_, known)) in rendered.iter().zip(&known) {
            assert_eq!(rendered, known, "family {name}");
        }
        daemon.shutdown(Instant::now() + Duration::from_secs(5));
    }

    /// docs/metrics.md names every host family as its samples are named.
    #[test]
    fn every_host_family_is_documented() {
        let docs = include_str!("../../../docs/metrics.md");
        for (name, kind) in HOST_FAMILIES {
            let shown = match kind {
                MetricType::Counter => format!("`{name}_total`"),
                _ => format!("`{name}`"),
            };
            assert!(
                docs.contains(&shown),
                "docs/metrics.md does not document {shown}"
            );
        }
    }
}
