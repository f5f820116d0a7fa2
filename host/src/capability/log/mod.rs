//! The `log` capability: a plugin's log lines, from its `log` import and
//! from its stdout and stderr, tagged with its name and revision, rate
//! limited per plugin and handed to the host's log (or another
//! [`LogSink`]).
//!
//! - **Grant.** Every plugin has it: a line costs the host a bounded amount
//!   and goes nowhere but the host's own log.
//! - **Bounds.** Lines are rate-limited per plugin ([`LogRate`]: burst 2,000,
//!   then 200 lines per second by default), cut at [`MAX_LINE_BYTES`]; what
//!   is dropped is counted and summed up in one notice when the plugin may
//!   log again. stdout and stderr are bounded in bytes per second as well
//!   ([`stdio`]), so a plugin cannot make the host split gigabytes of
//!   output into lines.
//! - **Hostile text.** A message is the plugin's, so it is written as data:
//!   the host's text log escapes control characters in every field and
//!   message (`crate::logging::EscapedFields`, the human log's formatter), the JSON log escapes by
//!   construction, and the dashboard shows lines as text. A line break in
//!   a message cannot start a line that reads as another plugin's.
//! - **Dry-run.** No difference: logging has no effect outside the host.
//! - **Replay.** `herald plugin replay` prints every line under the event
//!   that caused it.

mod host;
mod logger;
pub mod stdio;

pub use host::LogHost;
pub use logger::{
    LogLevel, LogLine, LogRate, LogSink, LogSource, MAX_LINE_BYTES, MemorySink, OwnedLogLine,
    PluginLogger, RECENT_LINE_BYTES, RECENT_LINES, RECENT_PLUGINS, RecentLine, RecentLogs,
    TracingSink,
};

/// What the `log` capability keeps for one plugin.
#[derive(Debug)]
pub struct PluginLog {
    /// Its logger (rate-limited, tagged with its name).
    pub logger: std::sync::Arc<PluginLogger>,
    /// Its cache window, which knows the clusters it runs on.
    pub scope: std::sync::Arc<super::cache::CacheScope>,
}

/// The `log` capability, as the list in `capability/mod.rs` names it.
#[derive(Debug)]
pub struct Log;

impl super::factor::Capability for Log {
    const ABOUT: super::factor::About = super::factor::About {
        name: "log",
        wit: "`log` (0.1.0)",
        acts: super::factor::Acts::InsideHost,
    };
    type Stats = ();
    type Plugin = PluginLog;
    type Instance = ();

    fn prepare(setup: &super::Setup<'_>) -> Self::Plugin {
        PluginLog {
            logger: setup.logger.clone(),
            scope: setup.cache.clone(),
        }
    }

    fn instantiate(_: &Self::Plugin) {}

    fn host<'a>(log: &'a Self::Plugin, _: &'a mut (), call: super::CallScope<'a>) -> LogHost<'a> {
        LogHost {
            logger: &log.logger,
            scope: &log.scope,
            cluster: call.cluster.event(),
        }
    }

    fn add_to_linker<T: super::View + 'static>(
        linker: &mut wasmtime::component::Linker<T>,
        reach: fn(&mut T) -> LogHost<'_>,
    ) -> wasmtime::Result<()> {
        host::add_to_linker(linker, reach)
    }
}

impl wasmtime::component::HasData for Log {
    type Data<'a> = LogHost<'a>;
}
