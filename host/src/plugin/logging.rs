//! Plugin log lines: from the `log` import and from stdout/stderr, rate-limited
//! per plugin and handed to a [`LogSink`] (the host's tracing by default).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Severity of a plugin log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// Very detailed.
    Trace,
    /// Detailed.
    Debug,
    /// Normal.
    Info,
    /// Something looks wrong.
    Warn,
    /// Something failed.
    Error,
}

impl LogLevel {
    /// Lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Trace => "trace",
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Warn => "warn",
            LogLevel::Error => "error",
        }
    }
}

/// Where a plugin log line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LogSource {
    /// The `herald:plugin/log` import.
    Api,
    /// The guest's stdout.
    Stdout,
    /// The guest's stderr.
    Stderr,
}

impl LogSource {
    /// Lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            LogSource::Api => "log",
            LogSource::Stdout => "stdout",
            LogSource::Stderr => "stderr",
        }
    }
}

/// One log line of one plugin.
#[derive(Debug, Clone, Copy)]
pub struct LogLine<'a> {
    /// The plugin's name.
    pub plugin: &'a str,
    /// Which version of the plugin wrote it: the first 12 hex digits of its
    /// file's sha256 (a swap shows as a change of revision).
    pub revision: &'a str,
    /// Severity.
    pub level: LogLevel,
    /// Origin.
    pub source: LogSource,
    /// The text (one line, possibly truncated).
    pub message: &'a str,
}

/// Receives plugin log lines after rate limiting.
pub trait LogSink: Send + Sync + 'static {
    /// Handle one line.
    fn write(&self, line: &LogLine<'_>);
}

/// The default sink: each line becomes a `tracing` event on target
/// `herald::plugin` with a `plugin` field.
#[derive(Debug, Default, Clone, Copy)]
pub struct TracingSink;

impl LogSink for TracingSink {
    fn write(&self, line: &LogLine<'_>) {
        let (plugin, revision, source, message) = (
            line.plugin,
            line.revision,
            line.source.as_str(),
            line.message,
        );
        match line.level {
            LogLevel::Trace => {
                tracing::trace!(target: "herald::plugin", plugin, revision, source, "{message}")
            }
            LogLevel::Debug => {
                tracing::debug!(target: "herald::plugin", plugin, revision, source, "{message}")
            }
            LogLevel::Info => {
                tracing::info!(target: "herald::plugin", plugin, revision, source, "{message}")
            }
            LogLevel::Warn => {
                tracing::warn!(target: "herald::plugin", plugin, revision, source, "{message}")
            }
            LogLevel::Error => {
                tracing::error!(target: "herald::plugin", plugin, revision, source, "{message}")
            }
        }
    }
}

/// How many lines a plugin may log: a token bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogRate {
    /// Sustained lines per second.
    pub lines_per_second: u32,
    /// Lines allowed in a burst.
    pub burst: u32,
}

impl Default for LogRate {
    fn default() -> Self {
        LogRate {
            lines_per_second: 200,
            burst: 2000,
        }
    }
}

/// Longest message kept; longer ones are cut and marked.
pub const MAX_LINE_BYTES: usize = 8 * 1024;

/// One plugin's logger: shared by every instance of that plugin so that
/// rebuilding an instance does not reset its budget.
pub struct PluginLogger {
    plugin: Arc<str>,
    revision: Arc<str>,
    sink: Arc<dyn LogSink>,
    rate: LogRate,
    bucket: Mutex<Bucket>,
    suppressed_total: AtomicU64,
}

struct Bucket {
    tokens: f64,
    refilled: Instant,
    suppressed_since_notice: u64,
}

impl PluginLogger {
    /// A logger for `revision` of `plugin` writing to `sink` at most at `rate`.
    pub fn new(
        plugin: Arc<str>,
        revision: Arc<str>,
        sink: Arc<dyn LogSink>,
        rate: LogRate,
    ) -> Self {
        PluginLogger {
            plugin,
            revision,
            sink,
            rate,
            bucket: Mutex::new(Bucket {
                tokens: rate.burst as f64,
                refilled: Instant::now(),
                suppressed_since_notice: 0,
            }),
            suppressed_total: AtomicU64::new(0),
        }
    }

    /// The plugin name this logger tags lines with.
    pub fn plugin(&self) -> &str {
        &self.plugin
    }

    /// Lines dropped by the rate limit since the plugin was loaded.
    pub fn suppressed_total(&self) -> u64 {
        self.suppressed_total.load(Ordering::Relaxed)
    }

    /// Logs one line, unless the plugin is over its rate.
    pub fn log(&self, level: LogLevel, source: LogSource, message: &str) {
        let resumed_after = {
            let mut bucket = self.bucket.lock().unwrap_or_else(|e| e.into_inner());
            let now = Instant::now();
            let refill = now.duration_since(bucket.refilled).as_secs_f64()
                * self.rate.lines_per_second as f64;
            bucket.tokens = (bucket.tokens + refill).min(self.rate.burst as f64);
            bucket.refilled = now;
            if bucket.tokens < 1.0 {
                bucket.suppressed_since_notice += 1;
                self.suppressed_total.fetch_add(1, Ordering::Relaxed);
                return;
            }
            bucket.tokens -= 1.0;
            std::mem::take(&mut bucket.suppressed_since_notice)
        };
        if resumed_after > 0 {
            let notice = format!(
                "log rate limit: suppressed {resumed_after} lines from this plugin (limit {} lines/s, burst {})",
                self.rate.lines_per_second, self.rate.burst
            );
            self.sink.write(&LogLine {
                plugin: &self.plugin,
                revision: &self.revision,
                level: LogLevel::Warn,
                source: LogSource::Api,
                message: &notice,
            });
        }
        let message = truncate(message);
        self.sink.write(&LogLine {
            plugin: &self.plugin,
            revision: &self.revision,
            level,
            source,
            message: &message,
        });
    }

    /// The rate this logger enforces.
    pub fn rate(&self) -> LogRate {
        self.rate
    }
}

impl std::fmt::Debug for PluginLogger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginLogger")
            .field("plugin", &self.plugin)
            .field("rate", &self.rate)
            .finish()
    }
}

fn truncate(message: &str) -> std::borrow::Cow<'_, str> {
    if message.len() <= MAX_LINE_BYTES {
        return message.into();
    }
    let mut end = MAX_LINE_BYTES;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}…[truncated {} bytes]",
        &message[..end],
        message.len() - end
    )
    .into()
}

/// A sink that keeps every line in memory; for `plugin replay` and tests.
#[derive(Debug, Default, Clone)]
pub struct MemorySink {
    lines: Arc<Mutex<Vec<OwnedLogLine>>>,
}

/// An owned copy of a [`LogLine`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedLogLine {
    /// The plugin's name.
    pub plugin: String,
    /// The plugin's revision (see [`LogLine::revision`]).
    pub revision: String,
    /// Severity.
    pub level: LogLevel,
    /// Origin.
    pub source: LogSource,
    /// The text.
    pub message: String,
}

impl MemorySink {
    /// Takes every line received so far.
    pub fn take(&self) -> Vec<OwnedLogLine> {
        std::mem::take(&mut *self.lines.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// A copy of every line received so far (leaving them there).
    pub fn lines(&self) -> Vec<OwnedLogLine> {
        self.lines.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl LogSink for MemorySink {
    fn write(&self, line: &LogLine<'_>) {
        self.lines
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(OwnedLogLine {
                plugin: line.plugin.to_owned(),
                revision: line.revision.to_owned(),
                level: line.level,
                source: line.source,
                message: line.message.to_owned(),
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_is_cut_to_the_burst_and_counted() {
        let sink = MemorySink::default();
        let logger = PluginLogger::new(
            "flood".into(),
            "0123456789ab".into(),
            Arc::new(sink.clone()),
            LogRate {
                lines_per_second: 1,
                burst: 10,
            },
        );
        for i in 0..1000 {
            logger.log(LogLevel::Info, LogSource::Api, &format!("line {i}"));
        }
        let lines = sink.take();
        assert!(
            lines.len() >= 10 && lines.len() <= 12,
            "kept {} lines",
            lines.len()
        );
        assert!(logger.suppressed_total() >= 988);
    }

    #[test]
    fn long_lines_are_truncated_on_a_char_boundary() {
        let long = "é".repeat(MAX_LINE_BYTES);
        let cut = truncate(&long);
        assert!(cut.len() < long.len());
        assert!(cut.ends_with("bytes]"));
    }
}
