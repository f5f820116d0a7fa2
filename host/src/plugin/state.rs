//! The store's state of one instance: the WASI sandbox every instance
//! runs in, and each capability's state (the list in `capability/mod.rs`
//! generates both the state and how its imports reach it; the runtime
//! only hands it out with the call under way, [`Store`]).

use super::limits::{InstanceLimiter, MAX_HOST_RESOURCES};
use crate::capability::log::stdio::LogStream;
use crate::capability::log::{LogSource, PluginLogger};
use crate::capability::metrics::PluginMetrics;
use crate::capability::{
    AnswerBudget, Authorized, CallCluster, CallScope, InstanceCapabilities, Parts,
    PluginCapabilities, Setup, Store,
};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtxView, WasiHttpView};

/// The capabilities' state of a plugin granted nothing, with no cache
/// window and detached metrics, logging to `logger` and configured with
/// `config`: a plugin whose manifest is being read, and tests.
pub(crate) fn granted_nothing(
    logger: Arc<PluginLogger>,
    config: Option<&str>,
) -> Arc<PluginCapabilities> {
    let name = logger.plugin().to_owned();
    Arc::new(PluginCapabilities::prepare(&Setup {
        logger: &logger,
        cache: &Arc::default(),
        config,
        metrics: &PluginMetrics::detached(&name),
        authorized: &Authorized::none(&name),
    }))
}

/// Handles one count of an instance's resource table pays for, per
/// `wasi:http` call: see [`HostState::count_before_http_call`].
const HANDLES_COUNTED_PER_HTTP_CALL: usize = 256;

/// Store data of one instance.
pub(crate) struct HostState {
    wasi: WasiCtx,
    /// Every host resource the instance holds, at most
    /// [`MAX_HOST_RESOURCES`] at once.
    table: ResourceTable,
    /// An empty table that refuses every entry: what `wasi:http` gets once
    /// the instance has hit a limit, so that its next call traps.
    spent: ResourceTable,
    pub(crate) limiter: InstanceLimiter,
    /// What every capability keeps for the plugin.
    plugin: Arc<PluginCapabilities>,
    /// What every capability keeps for this instance.
    instance: InstanceCapabilities,
    stdout: LogStream,
    stderr: LogStream,
    /// When the call under way must end: host calls that wait on I/O give
    /// up in time for the plugin to see why.
    pub(crate) deadline: Option<Instant>,
    /// The cluster of the call under way, and the one it targets.
    pub(crate) cluster: CallCluster,
    /// `wasi:http` calls left before the next count of what the instance
    /// holds ([`HostState::charge_host_resources`]).
    uncounted_http_calls: usize,
    /// Whether host code reached the resource table (through WASI or
    /// `wasi:http`, the only ways to it) since the last count: a call
    /// that did not cannot have changed what the instance holds.
    table_reached: bool,
}

impl HostState {
    /// A sandbox that denies everything WASI offers except clocks and
    /// randomness: no files, no environment, no arguments, no sockets, no
    /// stdin; stdout and stderr become log lines.
    pub(crate) fn new(plugin: Arc<PluginCapabilities>, limiter: InstanceLimiter) -> Self {
        let stdout = LogStream::new(plugin.log.logger.clone(), LogSource::Stdout);
        let stderr = LogStream::new(plugin.log.logger.clone(), LogSource::Stderr);
        let wasi = WasiCtx::builder()
            .stdout(stdout.clone())
            .stderr(stderr.clone())
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .build();
        let mut table = ResourceTable::new();
        table.set_max_capacity(MAX_HOST_RESOURCES);
        let mut spent = ResourceTable::new();
        spent.set_max_capacity(0);
        HostState {
            wasi,
            table,
            spent,
            limiter,
            instance: InstanceCapabilities::new(&plugin),
            plugin,
            stdout,
            stderr,
            deadline: None,
            cluster: CallCluster::default(),
            uncounted_http_calls: 0,
            table_reached: false,
        }
    }

    /// Takes the call's requeue request, leaving none (before and after
    /// each call; see [`Handled`](super::Handled)).
    pub(crate) fn take_requeue(&mut self) -> Option<Duration> {
        self.instance.workqueue.take()
    }

    /// At the end of a handler call, charges what the instance holds if
    /// the call reached the resource table, so no call leaves more behind
    /// than the cap allows. A call that never reached it (most: a handler
    /// that only reads its event and the cache) pays nothing.
    pub(crate) fn charge_host_resources_after_call(&mut self) -> wasmtime::Result<()> {
        if !self.table_reached {
            return Ok(());
        }
        self.charge_host_resources()
    }

    /// Charges the host resources the instance holds now to its memory cap
    /// ([`InstanceLimiter::charge_host`]): after a call that reached the
    /// table ([`Self::charge_host_resources_after_call`]) and before
    /// `wasi:http` calls ([`Self::count_before_http_call`]).
    fn charge_host_resources(&mut self) -> wasmtime::Result<()> {
        self.table_reached = false;
        let held = crate::capability::http::held_bytes(&mut self.table);
        self.uncounted_http_calls = held.handles / HANDLES_COUNTED_PER_HTTP_CALL;
        self.limiter.charge_host(held.bytes)
    }

    /// Counts what the instance holds before a `wasi:http` call, unless a
    /// recent count still stands: a count visits every handle, so with `n`
    /// held it is made every `n / 256`th call (every call below 256
    /// handles). Between two counts an instance adds at most what those
    /// calls can (at the handle cap, 16 calls: 16 `fields` of at most
    /// wasmtime-wasi-http's 128 KiB, or strings its own memory held); a
    /// plugin at the cap spends no more than 256 handle visits a call.
    fn count_before_http_call(&mut self) -> wasmtime::Result<()> {
        if self.limiter.exceeded_limit().is_none() && self.uncounted_http_calls > 0 {
            self.uncounted_http_calls -= 1;
            return Ok(());
        }
        self.charge_host_resources()
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
        self.table_reached = true;
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl WasiHttpView for HostState {
    /// Every `wasi:http` call starts here: over its memory cap, the
    /// instance gets a table that refuses everything, so the call traps
    /// (as a memory-limit fault: the limiter recorded the hit) before it
    /// can add to what the instance holds.
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        let table = match self.count_before_http_call() {
            Ok(()) => &mut self.table,
            Err(_) => &mut self.spent,
        };
        // After the count: what this call adds is counted at the next.
        self.table_reached = true;
        self.instance.http.view(table, self.deadline)
    }
}

impl Store for HostState {
    fn parts(&mut self) -> Parts<'_> {
        Parts {
            plugin: &self.plugin,
            instance: &mut self.instance,
            call: CallScope {
                deadline: self.deadline,
                budget: &mut self.limiter,
                cluster: &mut self.cluster,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capability::log::{LogRate, MemorySink};
    use crate::plugin::Limits;
    use wasmtime_wasi_http::FieldMap;

    fn state(memory_bytes: u64) -> HostState {
        let context = granted_nothing(
            Arc::new(PluginLogger::new(
                "hoarder".into(),
                "-".into(),
                Arc::new(MemorySink::default()),
                LogRate::default(),
            )),
            None,
        );
        let limits = Limits {
            call_deadline: Duration::from_secs(1),
            memory_bytes,
        };
        HostState::new(context, InstanceLimiter::new(&limits))
    }

    #[test]
    fn an_instance_holds_at_most_the_handle_cap_of_host_resources() {
        let mut state = state(64 << 20);
        for _ in 0..MAX_HOST_RESOURCES {
            state.table.push(()).unwrap();
        }
        let full = state.table.push(()).unwrap_err();
        assert!(
            matches!(full, wasmtime::component::ResourceTableError::Full),
            "{full}"
        );
    }

    #[test]
    fn over_the_memory_cap_wasi_http_gets_a_table_that_refuses_everything() {
        let mut state = state(1 << 20);
        // Under the cap, wasi:http works on the instance's table.
        let kept = state.http().table.push(FieldMap::new_mutable(1 << 20));
        assert!(kept.is_ok());
        // Fields holding more than the cap, kept from an earlier call.
        for i in 0..20 {
            let mut fields = FieldMap::new_mutable(1 << 20);
            let name = http::HeaderName::from_bytes(format!("x-{i}").as_bytes()).unwrap();
            let value = http::HeaderValue::from_bytes(&[b'v'; 64 * 1024]).unwrap();
            fields.append_raw(name, value).unwrap();
            state.table.push(fields).unwrap();
        }
        assert!(state.http().table.push(()).is_err());
        let hit = state
            .limiter
            .exceeded_limit()
            .expect("the limit is recorded");
        assert!(hit.desired > 20 * 64 * 1024, "{hit}");
        assert!(state.charge_host_resources().is_err());
    }

    #[test]
    fn a_count_stands_for_one_wasi_http_call_per_256_handles_held() {
        let mut state = state(4 << 20);
        for _ in 0..1024 {
            state.table.push(()).unwrap();
        }
        assert!(
            state.http().table.push(()).is_ok(),
            "counted: 1,024 handles"
        );
        let mut fields = FieldMap::new_mutable(8 << 20);
        let value = http::HeaderValue::from_bytes(&[b'v'; 100 * 1024]).unwrap();
        for i in 0..40 {
            let name = http::HeaderName::from_bytes(format!("x-{i}").as_bytes()).unwrap();
            fields.append_raw(name, value.clone()).unwrap();
        }
        state.table.push(fields).unwrap();
        // The count stands for the next 4 calls; the fifth counts again.
        for call in 0..4 {
            assert!(state.http().table.push(()).is_ok(), "call {call}");
        }
        assert!(state.http().table.push(()).is_err());
        assert!(state.limiter.exceeded_limit().is_some());
    }

    /// `wasi:http` fields holding 20 values of 100 KiB.
    fn fields_of_two_megabytes() -> FieldMap {
        let mut fields = FieldMap::new_mutable(4 << 20);
        let value = http::HeaderValue::from_bytes(&[b'v'; 100 * 1024]).unwrap();
        for i in 0..20 {
            let name = http::HeaderName::from_bytes(format!("x-{i}").as_bytes()).unwrap();
            fields.append_raw(name, value.clone()).unwrap();
        }
        fields
    }

    #[test]
    fn the_end_of_a_call_counts_only_if_host_code_reached_the_table() {
        let mut state = state(1 << 20);
        let fields = fields_of_two_megabytes();
        // Put there behind the views' backs: no call reached the table.
        state.table.push(fields).unwrap();
        assert!(state.charge_host_resources_after_call().is_ok());
        // A WASI call reaches it: the end of that call counts.
        let _ = state.ctx();
        assert!(state.charge_host_resources_after_call().is_err());
    }

    #[test]
    fn what_a_wasi_http_call_adds_after_its_count_is_counted_at_the_end_of_the_call() {
        let mut state = state(1 << 20);
        let fields = fields_of_two_megabytes();
        // Counted empty before it runs, the call adds 2 MB.
        assert!(state.http().table.push(fields).is_ok());
        assert!(state.charge_host_resources_after_call().is_err());
    }
}
