//! The per-instance store data behind the plugin's imports, and the host
//! side of the imports every world version shares (`log`, `cache`,
//! `config`); the capabilities' imports are in [`capability`](crate::capability).

use super::limits::InstanceLimiter;
use super::logging::{LogLevel, LogSource, PluginLogger};
use super::lookup::{CacheScope, LookupError};
use super::stdio::LogStream;
use crate::capability::Authority;
use crate::capability::metrics::PluginMetrics;
use crate::gvk::Gvk;
use crate::store::CachedObject;
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

/// What every instance of one loaded plugin shares: its logger, its window on
/// the cache, its operator-given configuration, its grants and its metrics.
/// Survives instance rebuilds.
#[derive(Debug)]
pub struct PluginContext {
    /// The plugin's logger (rate-limited, tagged with its name).
    pub logger: Arc<PluginLogger>,
    /// The plugin's cache look-ups.
    pub cache: Arc<CacheScope>,
    /// The operator's configuration for the plugin, as JSON text.
    pub config: Option<String>,
    /// What the operator granted it.
    pub authority: Arc<Authority>,
    /// The metrics its manifest defines: what its metric imports update.
    pub metrics: PluginMetrics,
}

/// Which update a plugin made to one of its metrics.
#[derive(Debug, Clone, Copy)]
pub(crate) enum MetricUpdate {
    /// `metrics.add`: counters and gauges.
    Add,
    /// `metrics.set`: gauges.
    Set,
    /// `metrics.observe`: histograms.
    Observe,
}

/// Store data of one instance.
pub(crate) struct HostState {
    wasi: WasiCtx,
    table: ResourceTable,
    pub(crate) limiter: InstanceLimiter,
    context: Arc<PluginContext>,
    stdout: LogStream,
    stderr: LogStream,
    /// When the call under way must end: host calls that wait on I/O give
    /// up in time for the plugin to see why.
    pub(crate) deadline: Option<Instant>,
    /// `wasi:http`'s per-instance state.
    http: WasiHttpCtx,
    /// Where `wasi:http` requests go: through the plugin's egress policy.
    egress: crate::capability::http::EgressHooks,
    /// The delay the handler call under way asked its notification to be
    /// delivered again after (the last request wins); cleared before each
    /// call and taken after it ([`Handled`](super::Handled)).
    requeue_after: Option<Duration>,
}

impl HostState {
    /// A sandbox that denies everything WASI offers except clocks and
    /// randomness: no files, no environment, no arguments, no sockets, no
    /// stdin; stdout and stderr become log lines.
    pub(crate) fn new(context: Arc<PluginContext>, limiter: InstanceLimiter) -> Self {
        let stdout = LogStream::new(context.logger.clone(), LogSource::Stdout);
        let stderr = LogStream::new(context.logger.clone(), LogSource::Stderr);
        let wasi = WasiCtx::builder()
            .stdout(stdout.clone())
            .stderr(stderr.clone())
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .build();
        let egress = context.authority.egress().hooks();
        HostState {
            wasi,
            table: ResourceTable::new(),
            limiter,
            context,
            stdout,
            stderr,
            deadline: None,
            http: WasiHttpCtx::new(),
            egress,
            requeue_after: None,
        }
    }

    /// Asks for the notification being handled to be delivered again after
    /// `delay` (the workqueue import's `requeue-after`). The last request of
    /// a call wins; it counts only if the call succeeds, and only coalesced
    /// delivery honours it (see [`crate::dispatch`]'s worker).
    pub(crate) fn request_requeue(&mut self, delay: Duration) {
        self.requeue_after = Some(delay);
    }

    /// Takes the call's requeue request, leaving none.
    pub(crate) fn take_requeue(&mut self) -> Option<Duration> {
        self.requeue_after.take()
    }

    /// What the plugin may do beyond logging and the cache.
    pub(crate) fn authority(&self) -> &Arc<Authority> {
        &self.context.authority
    }

    /// Emits partial output lines left at the end of a call.
    pub(crate) fn finish_output(&self) {
        self.stdout.finish();
        self.stderr.finish();
    }
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl WasiHttpView for HostState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        self.egress.set_deadline(self.deadline);
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.egress,
        }
    }
}

impl HostState {
    /// Applies one update to a metric the plugin defined; a misuse is
    /// dropped, counted, and logged as a warning in the plugin's log.
    pub(crate) fn metric_update(
        &self,
        update: MetricUpdate,
        name: &str,
        label_values: &[String],
        value: f64,
    ) {
        let metrics = &self.context.metrics;
        let applied = match update {
            MetricUpdate::Add => metrics.add(name, label_values, value),
            MetricUpdate::Set => metrics.set(name, label_values, value),
            MetricUpdate::Observe => metrics.observe(name, label_values, value),
        };
        if let Err(err) = applied {
            self.plugin_log(LogLevel::Warn, &err.to_string());
        }
    }

    /// Writes one log line from the plugin.
    pub(crate) fn plugin_log(&self, level: LogLevel, message: &str) {
        self.context.logger.log(level, LogSource::Api, message);
    }

    /// A cache look-up of one object, its answer charged to the instance's
    /// memory budget (a trap if it does not fit).
    pub(crate) fn cache_get(
        &mut self,
        gvk: &Gvk,
        namespace: Option<&str>,
        name: &str,
    ) -> wasmtime::Result<Result<Option<String>, LookupError>> {
        match self.context.cache.get(gvk, namespace, name) {
            Ok(Some(object)) => {
                self.limiter.reserve_answer(object.json().len())?;
                Ok(Ok(Some(object.json().to_owned())))
            }
            Ok(None) => Ok(Ok(None)),
            Err(err) => Ok(Err(err)),
        }
    }

    /// A cache listing, bounded by the instance's memory budget before the
    /// answer is built.
    pub(crate) fn cache_list(
        &mut self,
        gvk: &Gvk,
        namespace: Option<&str>,
        label_selector: Option<&str>,
    ) -> wasmtime::Result<Result<Vec<String>, LookupError>> {
        match self.context.cache.list(gvk, namespace, label_selector) {
            Ok(objects) => self.answer(&objects).map(Ok),
            Err(err) => Ok(Err(err)),
        }
    }

    /// A look-up by a declared index, bounded as [`Self::cache_list`] is.
    pub(crate) fn cache_by_index(
        &mut self,
        name: &str,
        value: &str,
        namespace: Option<&str>,
    ) -> wasmtime::Result<Result<Vec<String>, LookupError>> {
        match self.context.cache.by_index(name, value, namespace) {
            Ok(objects) => self.answer(&objects).map(Ok),
            Err(err) => Ok(Err(err)),
        }
    }

    /// The JSON texts of `objects` for the guest, once the instance's
    /// memory budget has room for them (a trap otherwise).
    fn answer(&mut self, objects: &[Arc<CachedObject>]) -> wasmtime::Result<Vec<String>> {
        let bytes = objects
            .iter()
            .map(|object| object.json().len() + std::mem::size_of::<String>())
            .sum();
        self.limiter.reserve_answer(bytes)?;
        Ok(objects
            .iter()
            .map(|object| object.json().to_owned())
            .collect())
    }

    /// The operator's configuration for the plugin.
    pub(crate) fn plugin_config(&self) -> Option<String> {
        self.context.config.clone()
    }
}
