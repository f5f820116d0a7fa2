//! Plugin log lines: from the `log` import and from stdout/stderr, rate-limited
//! per plugin and handed to a [`LogSink`] (the host's tracing by default);
//! [`RecentLogs`] keeps the last few lines of each plugin for the dashboard.

use crate::throttle::{Admit, Throttle};
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
    /// The cluster of the notification the plugin was handling, when it
    /// runs on several clusters; `None` otherwise.
    pub cluster: Option<&'a str>,
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
        let (plugin, revision, source, message, cluster) = (
            line.plugin,
            line.revision,
            line.source.as_str(),
            line.message,
            line.cluster,
        );
        match line.level {
            LogLevel::Trace => {
                tracing::trace!(target: "herald::plugin", plugin, revision, source, cluster, "{message}")
            }
            LogLevel::Debug => {
                tracing::debug!(target: "herald::plugin", plugin, revision, source, cluster, "{message}")
            }
            LogLevel::Info => {
                tracing::info!(target: "herald::plugin", plugin, revision, source, cluster, "{message}")
            }
            LogLevel::Warn => {
                tracing::warn!(target: "herald::plugin", plugin, revision, source, cluster, "{message}")
            }
            LogLevel::Error => {
                tracing::error!(target: "herald::plugin", plugin, revision, source, cluster, "{message}")
            }
        }
    }
}

/// How much a plugin may make the host log: token buckets of lines (every
/// line, from the `log` import and from stdout and stderr) and of bytes
/// (what it writes to stdout and stderr, before it is split into lines).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogRate {
    /// Sustained lines per second.
    pub lines_per_second: u32,
    /// Lines allowed in a burst.
    pub burst: u32,
    /// Sustained bytes per second written to stdout and stderr.
    pub output_bytes_per_second: u64,
    /// Bytes of stdout and stderr allowed in a burst.
    pub output_burst_bytes: u64,
}

impl Default for LogRate {
    fn default() -> Self {
        LogRate {
            lines_per_second: 200,
            burst: 2000,
            output_bytes_per_second: 256 << 10,
            output_burst_bytes: 2 << 20,
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
    lines: Throttle,
    output: Throttle,
    output_bytes_dropped: AtomicU64,
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
            lines: Throttle::new(rate.lines_per_second.into(), rate.burst.into()),
            output: Throttle::new(rate.output_bytes_per_second, rate.output_burst_bytes),
            rate,
            output_bytes_dropped: AtomicU64::new(0),
        }
    }

    /// The plugin name this logger tags lines with.
    pub fn plugin(&self) -> &str {
        &self.plugin
    }

    /// Lines dropped by the rate limit since the plugin was loaded.
    pub fn suppressed_total(&self) -> u64 {
        self.lines.dropped_total()
    }

    /// Bytes of stdout and stderr dropped by the byte rate since the plugin
    /// was loaded.
    pub fn output_bytes_dropped(&self) -> u64 {
        self.output_bytes_dropped.load(Ordering::Relaxed)
    }

    /// Whether `bytes` more of stdout or stderr fit the plugin's byte rate;
    /// what does not is dropped before it is split into lines, counted,
    /// and summed up in the next notice.
    pub fn admit_output(&self, bytes: usize) -> bool {
        match self.output.admit(bytes as u64, Instant::now()) {
            Admit::Pass { summary } => {
                if let Some(writes) = summary {
                    self.notice(&format!(
                        "output rate limit: dropped {writes} writes to stdout or stderr from this \
                         plugin ({} bytes in all so far; limit {} bytes/s, burst {})",
                        self.output_bytes_dropped(),
                        self.rate.output_bytes_per_second,
                        self.rate.output_burst_bytes
                    ));
                }
                true
            }
            Admit::Drop => {
                self.output_bytes_dropped
                    .fetch_add(bytes as u64, Ordering::Relaxed);
                false
            }
        }
    }

    /// Logs one line, unless the plugin is over its rate.
    pub fn log(&self, level: LogLevel, source: LogSource, message: &str) {
        self.log_in(None, level, source, message);
    }

    /// Logs one line written while handling a notification of `cluster`
    /// (named when the plugin runs on several), unless the plugin is over
    /// its rate.
    pub fn log_in(&self, cluster: Option<&str>, level: LogLevel, source: LogSource, message: &str) {
        match self.lines.admit(1, Instant::now()) {
            Admit::Drop => return,
            Admit::Pass {
                summary: Some(dropped),
            } => self.notice(&format!(
                "log rate limit: suppressed {dropped} lines from this plugin (limit {} lines/s, \
                 burst {})",
                self.rate.lines_per_second, self.rate.burst
            )),
            Admit::Pass { summary: None } => {}
        }
        let message = truncate(message);
        self.sink.write(&LogLine {
            plugin: &self.plugin,
            revision: &self.revision,
            level,
            source,
            message: &message,
            cluster,
        });
    }

    /// A warning of the host's about this plugin's output, in its log.
    fn notice(&self, message: &str) {
        self.sink.write(&LogLine {
            plugin: &self.plugin,
            revision: &self.revision,
            level: LogLevel::Warn,
            source: LogSource::Api,
            message,
            cluster: None,
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
    cut(message, MAX_LINE_BYTES)
}

/// `message` cut to at most `max` bytes (on a char boundary) and marked.
fn cut(message: &str, max: usize) -> std::borrow::Cow<'_, str> {
    if message.len() <= max {
        return message.into();
    }
    let mut end = max;
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
    /// The cluster (see [`LogLine::cluster`]).
    pub cluster: Option<String>,
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
                cluster: line.cluster.map(str::to_owned),
            });
    }
}

/// Lines kept per plugin by [`RecentLogs`].
pub const RECENT_LINES: usize = 50;

/// Plugins [`RecentLogs`] keeps lines of; past that, the plugin that logged
/// least recently is forgotten first.
pub const RECENT_PLUGINS: usize = 128;

/// Longest message [`RecentLogs`] keeps; longer ones are cut and marked (the
/// sink it passes lines on to gets them whole).
pub const RECENT_LINE_BYTES: usize = 1024;

/// A sink that passes every line on to another and keeps the last
/// [`RECENT_LINES`] of each plugin, for the dashboard. Memory is bounded:
/// at most [`RECENT_PLUGINS`] plugins × [`RECENT_LINES`] lines ×
/// [`RECENT_LINE_BYTES`] bytes of text.
pub struct RecentLogs {
    inner: Arc<dyn LogSink>,
    plugins: Mutex<std::collections::HashMap<String, Recent>>,
    /// Ticks on every line, so the least recently logging plugin is known.
    clock: AtomicU64,
}

struct Recent {
    lines: std::collections::VecDeque<RecentLine>,
    last: u64,
}

/// One kept line.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecentLine {
    /// When it was logged, in milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// The plugin's revision (see [`LogLine::revision`]).
    pub revision: String,
    /// Severity: `trace` … `error`.
    pub level: &'static str,
    /// Origin: `log`, `stdout` or `stderr`.
    pub source: &'static str,
    /// The text, cut at [`RECENT_LINE_BYTES`].
    pub message: String,
}

impl std::fmt::Debug for RecentLogs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecentLogs").finish_non_exhaustive()
    }
}

impl RecentLogs {
    /// Keeps lines, passing each on to `inner`.
    pub fn new(inner: Arc<dyn LogSink>) -> Self {
        RecentLogs {
            inner,
            plugins: Mutex::default(),
            clock: AtomicU64::new(0),
        }
    }

    /// The last lines of `plugin`, oldest first.
    pub fn lines(&self, plugin: &str) -> Vec<RecentLine> {
        self.lock()
            .get(plugin)
            .map(|recent| recent.lines.iter().cloned().collect())
            .unwrap_or_default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, Recent>> {
        self.plugins.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl LogSink for RecentLogs {
    fn write(&self, line: &LogLine<'_>) {
        self.inner.write(line);
        let kept = RecentLine {
            at_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64),
            revision: line.revision.to_owned(),
            level: line.level.as_str(),
            source: line.source.as_str(),
            message: cut(line.message, RECENT_LINE_BYTES).into_owned(),
        };
        let now = self.clock.fetch_add(1, Ordering::Relaxed);
        let mut plugins = self.lock();
        if !plugins.contains_key(line.plugin) && plugins.len() >= RECENT_PLUGINS {
            let quietest = plugins
                .iter()
                .min_by_key(|(_, recent)| recent.last)
                .map(|(name, _)| name.clone());
            if let Some(name) = quietest {
                plugins.remove(&name);
            }
        }
        let recent = plugins
            .entry(line.plugin.to_owned())
            .or_insert_with(|| Recent {
                lines: std::collections::VecDeque::with_capacity(RECENT_LINES),
                last: now,
            });
        if recent.lines.len() == RECENT_LINES {
            recent.lines.pop_front();
        }
        recent.lines.push_back(kept);
        recent.last = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recent_logs_keep_the_last_lines_of_each_plugin_and_pass_every_line_on() {
        let inner = MemorySink::default();
        let recent = RecentLogs::new(Arc::new(inner.clone()));
        let write = |plugin: &str, message: &str| {
            recent.write(&LogLine {
                plugin,
                revision: "0123456789ab",
                level: LogLevel::Info,
                source: LogSource::Api,
                message,
                cluster: None,
            })
        };
        for i in 0..RECENT_LINES + 7 {
            write("a", &format!("a{i}"));
        }
        write("b", &"x".repeat(RECENT_LINE_BYTES * 2));
        assert_eq!(
            inner.lines().len(),
            RECENT_LINES + 8,
            "every line passed on"
        );
        let kept: Vec<String> = recent.lines("a").into_iter().map(|l| l.message).collect();
        assert_eq!(kept.len(), RECENT_LINES);
        assert_eq!(kept[0], "a7", "the oldest went first");
        assert_eq!(kept[RECENT_LINES - 1], format!("a{}", RECENT_LINES + 6));
        let long = &recent.lines("b")[0].message;
        assert!(long.len() < RECENT_LINE_BYTES + 40 && long.ends_with("bytes]"));
        assert!(recent.lines("c").is_empty());
    }

    #[test]
    fn recent_logs_forget_the_quietest_plugin_first() {
        let recent = RecentLogs::new(Arc::new(MemorySink::default()));
        let write = |plugin: &str| {
            recent.write(&LogLine {
                plugin,
                revision: "r",
                level: LogLevel::Info,
                source: LogSource::Stdout,
                message: "m",
                cluster: None,
            })
        };
        for n in 0..RECENT_PLUGINS {
            write(&format!("p{n}"));
        }
        write("p0"); // p1 is now the quietest
        write("new");
        assert!(!recent.lines("p0").is_empty());
        assert!(recent.lines("p1").is_empty(), "the quietest was forgotten");
        assert!(!recent.lines("new").is_empty());
    }

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
                ..LogRate::default()
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
