//! The `log` import of every world version, on the plugin's logger.

use super::logger::{LogLevel, LogSource, PluginLogger};
use crate::capability::cache::CacheScope;
use crate::cluster::ClusterName;
use crate::wit::{v0_1, v0_2};
use wasmtime::component::Linker;

/// What the `log` import reaches: the plugin's logger.
pub struct LogHost<'a> {
    /// The logger every instance of the plugin shares.
    pub logger: &'a PluginLogger,
    /// The plugin's cache window, which knows its clusters.
    pub scope: &'a CacheScope,
    /// The notification's cluster (`None`: the default one).
    pub cluster: Option<&'a ClusterName>,
}

/// Links the `log` import of every world version; `reach` finds the
/// plugin's logger in the store's state.
pub(super) fn add_to_linker<T: Send + 'static>(
    linker: &mut Linker<T>,
    reach: fn(&mut T) -> LogHost<'_>,
) -> wasmtime::Result<()> {
    v0_1::herald::plugin::log::add_to_linker::<T, super::Log>(linker, reach)?;
    v0_2::herald::plugin::log::add_to_linker::<T, super::Log>(linker, reach)
}

impl LogHost<'_> {
    /// Logs one line, naming the notification's cluster when the plugin
    /// runs on several.
    fn write(&self, level: LogLevel, message: &str) {
        let cluster = self
            .scope
            .spans_clusters()
            .then(|| self.scope.cluster_name(self.cluster));
        self.logger
            .log_in(cluster.as_deref(), level, LogSource::Api, message);
    }
}

/// One version's `level` enum as the logger's.
macro_rules! level {
    ($version:ident, $level:expr) => {{
        use $version::herald::plugin::log::Level;
        match $level {
            Level::Trace => LogLevel::Trace,
            Level::Debug => LogLevel::Debug,
            Level::Info => LogLevel::Info,
            Level::Warn => LogLevel::Warn,
            Level::Error => LogLevel::Error,
        }
    }};
}

impl v0_1::herald::plugin::log::Host for LogHost<'_> {
    fn log(&mut self, level: v0_1::herald::plugin::log::Level, message: String) {
        self.write(level!(v0_1, level), &message);
    }
}

impl v0_2::herald::plugin::log::Host for LogHost<'_> {
    fn log(&mut self, level: v0_2::herald::plugin::log::Level, message: String) {
        self.write(level!(v0_2, level), &message);
    }
}
