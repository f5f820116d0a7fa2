//! The host side of the plugin's imports (`log`, `cache`, `config`) and the
//! per-instance store data that backs them.

use super::bindings::herald::plugin::{cache, config, log, types};
use super::limits::InstanceLimiter;
use super::logging::{LogLevel, LogSource, PluginLogger};
use super::lookup::{CacheScope, LookupError};
use super::stdio::LogStream;
use crate::gvk::Gvk;
use std::sync::Arc;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// What every instance of one loaded plugin shares: its logger, its window on
/// the cache and its operator-given configuration. Survives instance rebuilds.
#[derive(Debug)]
pub struct PluginContext {
    /// The plugin's logger (rate-limited, tagged with its name).
    pub logger: Arc<PluginLogger>,
    /// The plugin's cache look-ups.
    pub cache: Arc<CacheScope>,
    /// The operator's configuration for the plugin, as JSON text.
    pub config: Option<String>,
}

/// Store data of one instance.
pub(crate) struct HostState {
    wasi: WasiCtx,
    table: ResourceTable,
    pub(crate) limiter: InstanceLimiter,
    context: Arc<PluginContext>,
    stdout: LogStream,
    stderr: LogStream,
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
        HostState {
            wasi,
            table: ResourceTable::new(),
            limiter,
            context,
            stdout,
            stderr,
        }
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

impl types::Host for HostState {}

impl log::Host for HostState {
    fn log(&mut self, level: log::Level, message: String) {
        let level = match level {
            log::Level::Trace => LogLevel::Trace,
            log::Level::Debug => LogLevel::Debug,
            log::Level::Info => LogLevel::Info,
            log::Level::Warn => LogLevel::Warn,
            log::Level::Error => LogLevel::Error,
        };
        self.context.logger.log(level, LogSource::Api, &message);
    }
}

impl cache::Host for HostState {
    fn get(
        &mut self,
        kind: types::GroupVersionKind,
        namespace: Option<String>,
        name: String,
    ) -> wasmtime::Result<Result<Option<String>, cache::CacheError>> {
        let gvk = Gvk::new(kind.group, kind.version, kind.kind);
        match self.context.cache.get(&gvk, namespace.as_deref(), &name) {
            Ok(Some(object)) => {
                self.limiter.reserve_answer(object.json().len())?;
                Ok(Ok(Some(object.json().to_owned())))
            }
            Ok(None) => Ok(Ok(None)),
            Err(err) => Ok(Err(to_guest_error(err))),
        }
    }

    fn list(
        &mut self,
        kind: types::GroupVersionKind,
        namespace: Option<String>,
        label_selector: Option<String>,
    ) -> wasmtime::Result<Result<Vec<String>, cache::CacheError>> {
        let gvk = Gvk::new(kind.group, kind.version, kind.kind);
        let objects =
            match self
                .context
                .cache
                .list(&gvk, namespace.as_deref(), label_selector.as_deref())
            {
                Ok(objects) => objects,
                Err(err) => return Ok(Err(to_guest_error(err))),
            };
        // The answer is bounded by the instance's memory cap before it is built.
        let bytes = objects
            .iter()
            .map(|object| object.json().len() + std::mem::size_of::<String>())
            .sum();
        self.limiter.reserve_answer(bytes)?;
        Ok(Ok(objects
            .iter()
            .map(|object| object.json().to_owned())
            .collect()))
    }
}

fn to_guest_error(err: LookupError) -> cache::CacheError {
    match err {
        LookupError::NotSubscribed(gvk) => {
            cache::CacheError::NotSubscribed(types::GroupVersionKind {
                group: gvk.group,
                version: gvk.version,
                kind: gvk.kind,
            })
        }
        LookupError::InvalidSelector(reason) => cache::CacheError::InvalidSelector(reason),
    }
}

impl config::Host for HostState {
    fn get(&mut self) -> Option<String> {
        self.context.config.clone()
    }
}
