//! The host's own metrics: the one place that registers each daemon part's
//! collector, in the order `/metrics` shows their families. Each collector
//! lives with the state it reads and reads it at scrape time (nothing on the
//! hot path but atomic adds and one histogram observation per call):
//!
//! 1. the informers ([`InformerCollector`]): watch events, caches, relists;
//! 2. the listeners ([`ListenerCollector`]): notifications, queues, faults,
//!    handler durations;
//! 3. the plugins ([`PluginCollector`]): log lines and output dropped;
//! 4. the loader ([`LoaderCollector`]): reloads, compilations, pulls;
//! 5. admission ([`AdmissionCollector`]): reviews answered, their durations,
//!    what the scans of existing objects found;
//! 6. the daemon ([`DaemonCollector`]): dispatching, plugins' state, ready;
//! 7. the capabilities ([`ActionStatsCollector`]): each one's actions, then
//!    the audit's;
//! 8. the plugins' own metrics ([`crate::capability::metrics::PluginMetricsRegistry`]);
//! 9. sharding, when it is on ([`ShardCollector`]).

use crate::admission::metrics::AdmissionCollector;
use crate::capability::{ActionStats, ActionStatsCollector};
use crate::daemon::{Daemon, PluginStatus};
use crate::dispatch::metrics::ListenerCollector;
use crate::informer::metrics::InformerCollector;
use crate::plugin::metrics::PluginCollector;
use crate::reload::LoaderStats;
use crate::reload::metrics::LoaderCollector;
use crate::shard::{ShardCollector, ShardView};
use crate::telemetry::{Labels, family};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use std::sync::Arc;

/// What `/metrics` reads: the daemon, and the state its collectors do not
/// reach through it.
#[derive(Debug, Clone)]
pub struct Sources {
    /// The daemon (informers, listeners, plugins, admission, its own state
    /// and the plugins' own metrics).
    pub daemon: Arc<Daemon>,
    /// The plugin loader's counters.
    pub loader: Arc<LoaderStats>,
    /// The capabilities' counters of the plugins' actions.
    pub actions: Arc<ActionStats>,
    /// The sharding view, when sharding is on.
    pub sharding: Option<Arc<ShardView>>,
}

impl Sources {
    /// The sources of `daemon` alone: fresh loader and action counters, no
    /// sharding (what a test or a tool reading only the daemon's families
    /// needs).
    pub fn of(daemon: Arc<Daemon>) -> Self {
        Sources {
            daemon,
            loader: Arc::default(),
            actions: Arc::default(),
            sharding: None,
        }
    }
}

/// A registry holding the collector of each part of `sources`, in the
/// order of the module docs.
pub fn registry(sources: Sources) -> Registry {
    let Sources {
        daemon,
        loader,
        actions,
        sharding,
    } = sources;
    let mut registry = Registry::default();
    registry.register_collector(Box::new(InformerCollector(daemon.informers().clone())));
    let listening = daemon.clone();
    registry.register_collector(Box::new(ListenerCollector::new(move || {
        let names = listening.names();
        names
            .iter()
            .flat_map(|name| listening.listeners(name))
            .collect()
    })));
    let running = daemon.clone();
    registry.register_collector(Box::new(PluginCollector::new(move || running.plugins())));
    registry.register_collector(Box::new(LoaderCollector(loader)));
    registry.register_collector(Box::new(AdmissionCollector(
        daemon.admission().stats().clone(),
    )));
    registry.register_collector(Box::new(DaemonCollector(daemon.clone())));
    registry.register_collector(Box::new(ActionStatsCollector(actions)));
    registry.register_collector(Box::new(daemon.plugin_metrics().clone()));
    if let Some(view) = sharding {
        registry.register_collector(Box::new(ShardCollector(view)));
    }
    registry
}

/// Exports the daemon's own state (documented in docs/metrics.md): whether
/// it dispatches, the workers it abandoned, each running plugin's idle
/// instances reclaimed, wait for caches and degradation (labelled with its
/// `plugin`), and readiness. It sits here rather than beside [`Daemon`]
/// because `daemon.rs` is a single file; it reads only the daemon's public
/// API.
#[derive(Debug)]
pub struct DaemonCollector(pub Arc<Daemon>);

impl Collector for DaemonCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let daemon = &self.0;
        family(
            &mut encoder,
            "herald_dispatching",
            "1 while this replica dispatches to plugins (always without leader election; only on the leader with it).",
            MetricType::Gauge,
            &[(Vec::new(), flag(daemon.is_dispatching()))],
        )?;
        let (_, abandoned) = daemon.abandoned_workers();
        family(
            &mut encoder,
            "herald_plugin_workers_abandoned",
            "Plugin workers that did not come back within their call deadline plus a margin when stopped (unload, swap, shutdown), and were left to end on their own.",
            MetricType::Counter,
            &[(Vec::new(), abandoned as f64)],
        )?;
        let statuses = daemon.status();
        let each = |read: fn(&PluginStatus) -> f64| -> Vec<(Labels, f64)> {
            statuses
                .iter()
                .map(|status| (vec![("plugin", status.name.clone())], read(status)))
                .collect()
        };
        family(
            &mut encoder,
            "herald_plugin_instances_reclaimed",
            "Times a plugin's idle instance was dropped (plugins.<name>.reclaimIdleAfter) since it last started dispatching.",
            MetricType::Counter,
            &each(|status| status.instances_reclaimed as f64),
        )?;
        family(
            &mut encoder,
            "herald_plugin_waiting_for_caches",
            "1 while a dispatching plugin's first delivery waits for a cache it subscribes to to have its initial list.",
            MetricType::Gauge,
            &each(|status| flag(status.caches.as_ref().is_some_and(|c| !c.synced))),
        )?;
        family(
            &mut encoder,
            "herald_plugin_degraded",
            "1 while a plugin is degraded: it skipped a notification of its initial list, so readiness no longer waits for it.",
            MetricType::Gauge,
            &each(|status| flag(status.degraded.is_some())),
        )?;
        family(
            &mut encoder,
            "herald_ready",
            "1 when every informer has synced and every plugin has handled its initial list.",
            MetricType::Gauge,
            &[(Vec::new(), flag(daemon.ready()))],
        )
    }
}

/// A gauge's value for a condition: 1 if it holds, else 0.
fn flag(holds: bool) -> f64 {
    if holds { 1.0 } else { 0.0 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::metrics::Verdict;
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
        let registry = registry(Sources {
            daemon,
            loader: Arc::default(),
            actions: Arc::default(),
            sharding: Some(Arc::new(ShardView::new("replica-a"))),
        });
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
        stats.fall_back_to_json("field 99 of v1/Pod is unknown".into());
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
            stats.retirements.fetch_add(2, Ordering::Relaxed);
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
        let admission = daemon.admission().stats();
        admission.record(
            "alpha",
            "validate",
            "CREATE",
            Verdict::Denied,
            Some(Duration::from_micros(500)),
        );
        admission.record(
            "alpha",
            "mutate",
            "UPDATE",
            Verdict::Mutated,
            Some(Duration::from_secs(2)),
        );
        admission.record("beta", "validate", "DELETE", Verdict::FailedOpen, None);
        admission.record_request("alpha", "validate", Duration::from_micros(700));
        admission.fresh_findings("beta");
        let shard = Arc::new(crate::shard::ShardView::new("replica-a"));
        shard.observed(Default::default(), 3, 2);
        for change in [Change::Acquired, Change::Lost, Change::Lost] {
            shard.count(change);
        }

        let registry = registry(Sources {
            daemon: daemon.clone(),
            loader,
            actions: Arc::default(),
            sharding: Some(shard),
        });
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
