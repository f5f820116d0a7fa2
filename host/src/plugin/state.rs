//! The store's state of one instance, and the views each capability takes
//! of it ([`crate::capability::View`]); the WASI sandbox every instance
//! runs in.

use super::limits::InstanceLimiter;
use crate::capability::cache::{CacheHost, CacheScope, CacheView};
use crate::capability::config::{ConfigHost, ConfigView};
use crate::capability::deadline::{DeadlineHost, DeadlineView};
use crate::capability::events::{EventsAccess, EventsHost, EventsView};
use crate::capability::http::{Egress, HttpInstance};
use crate::capability::kube::{KubeAccess, KubeHost, KubeView};
use crate::capability::log::stdio::LogStream;
use crate::capability::log::{LogHost, LogSource, LogView, PluginLogger};
use crate::capability::metrics::{MetricsHost, MetricsView, PluginMetrics};
use crate::capability::workqueue::{Requeue, WorkqueueHost, WorkqueueView};
use crate::capability::{AnswerBudget, Authorized, CallScope};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtxView, WasiHttpView};

/// What every instance of one loaded plugin shares, capability by
/// capability: its logger, its window on the cache, its configuration, its
/// access to the world outside the host and its metrics. Survives instance
/// rebuilds.
#[derive(Debug)]
pub struct PluginContext {
    /// The plugin's logger (rate-limited, tagged with its name).
    pub logger: Arc<PluginLogger>,
    /// The plugin's cache look-ups.
    pub cache: Arc<CacheScope>,
    /// The operator's configuration for the plugin, as JSON text.
    pub config: Option<String>,
    /// Its Kubernetes API calls.
    pub kube: Arc<KubeAccess>,
    /// Its Events.
    pub events: Arc<EventsAccess>,
    /// Its outbound HTTP.
    pub egress: Arc<Egress>,
    /// The metrics its manifest defines: what its metric imports update.
    pub metrics: PluginMetrics,
}

impl PluginContext {
    /// The context of a plugin with `logger`, `cache`, `config`, what the
    /// operator `authorized` and `metrics`.
    pub fn new(
        logger: Arc<PluginLogger>,
        cache: Arc<CacheScope>,
        config: Option<String>,
        authorized: Authorized,
        metrics: PluginMetrics,
    ) -> Self {
        PluginContext {
            logger,
            cache,
            config,
            kube: authorized.kube,
            events: authorized.events,
            egress: authorized.http,
            metrics,
        }
    }
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
    http: HttpInstance,
    /// The requeue request of the call under way (`workqueue`).
    requeue: Requeue,
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
        let http = HttpInstance::new(&context.egress);
        HostState {
            wasi,
            table: ResourceTable::new(),
            limiter,
            context,
            stdout,
            stderr,
            deadline: None,
            http,
            requeue: Requeue::default(),
        }
    }

    /// Takes the call's requeue request, leaving none (before and after
    /// each call; see [`Handled`](super::Handled)).
    pub(crate) fn take_requeue(&mut self) -> Option<Duration> {
        self.requeue.take()
    }

    /// Emits partial output lines left at the end of a call.
    pub(crate) fn finish_output(&self) {
        self.stdout.finish();
        self.stderr.finish();
    }
}

impl AnswerBudget for InstanceLimiter {
    fn reserve(&mut self, bytes: usize) -> wasmtime::Result<()> {
        self.reserve_answer(bytes)
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
        self.http.view(&mut self.table, self.deadline)
    }
}

impl LogView for HostState {
    fn log(&mut self) -> LogHost<'_> {
        LogHost {
            logger: &self.context.logger,
        }
    }
}

impl ConfigView for HostState {
    fn config(&mut self) -> ConfigHost<'_> {
        ConfigHost {
            config: self.context.config.as_deref(),
        }
    }
}

impl CacheView for HostState {
    fn cache(&mut self) -> CacheHost<'_> {
        CacheHost {
            scope: &self.context.cache,
            call: CallScope {
                deadline: self.deadline,
                budget: &mut self.limiter,
            },
        }
    }
}

impl WorkqueueView for HostState {
    fn workqueue(&mut self) -> WorkqueueHost<'_> {
        WorkqueueHost {
            requeue: &mut self.requeue,
        }
    }
}

impl MetricsView for HostState {
    fn metrics(&mut self) -> MetricsHost<'_> {
        MetricsHost {
            metrics: &self.context.metrics,
            logger: &self.context.logger,
        }
    }
}

impl DeadlineView for HostState {
    fn deadline(&mut self) -> DeadlineHost {
        DeadlineHost {
            deadline: self.deadline,
        }
    }
}

impl KubeView for HostState {
    fn kube(&mut self) -> KubeHost<'_> {
        KubeHost {
            access: &self.context.kube,
            call: CallScope {
                deadline: self.deadline,
                budget: &mut self.limiter,
            },
        }
    }
}

impl EventsView for HostState {
    fn events(&mut self) -> EventsHost<'_> {
        EventsHost {
            access: &self.context.events,
            deadline: self.deadline,
        }
    }
}
