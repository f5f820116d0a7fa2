//! The host's own log: its format and level (`log`), the rate of plugins'
//! lines, and its two formatters, which write every field escaped: the
//! human format's ([`EscapedFields`]) and the JSON format's
//! ([`EscapedJson`]).

use crate::capability::log::LogRate;
use serde::Deserialize;
use std::fmt::{self, Write as _};
use tracing::field::{Field, Visit};
use tracing_subscriber::field::RecordFields;
use tracing_subscriber::fmt::FormatFields;
use tracing_subscriber::fmt::format::Writer;

/// Log output format.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Human,
    /// One JSON object per line.
    Json,
}

/// `log`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct LogConfig {
    /// `human` or `json`.
    pub format: LogFormat,
    /// A tracing filter, e.g. `info` or `info,herald::informer=debug`. `RUST_LOG` overrides it.
    pub level: String,
    /// Lines per second each plugin may log (sustained).
    pub plugin_lines_per_second: u32,
    /// Lines each plugin may log in a burst.
    pub plugin_burst: u32,
    /// Bytes per second each plugin may write to stdout and stderr
    /// (sustained); what is over it is dropped, counted and summed up.
    #[serde(with = "crate::units::quantity")]
    pub plugin_output_bytes_per_second: u64,
    /// Bytes of stdout and stderr each plugin may write in a burst.
    #[serde(with = "crate::units::quantity")]
    pub plugin_output_burst: u64,
}

impl Default for LogConfig {
    fn default() -> Self {
        let rate = LogRate::default();
        LogConfig {
            format: LogFormat::Human,
            level: "info".into(),
            plugin_lines_per_second: rate.lines_per_second,
            plugin_burst: rate.burst,
            plugin_output_bytes_per_second: rate.output_bytes_per_second,
            plugin_output_burst: rate.output_burst_bytes,
        }
    }
}

impl LogConfig {
    /// Checks the filter and the rates; the key at fault is relative to `log`.
    pub fn validate(&self) -> Result<(), crate::yaml::Invalid> {
        if tracing_subscriber::EnvFilter::try_new(&self.level).is_err() {
            return Err(crate::yaml::Invalid::new(
                "level",
                format!(
                    "{:?} is not a valid filter: use e.g. info, debug or info,herald=debug",
                    self.level
                ),
            ));
        }
        if self.plugin_lines_per_second == 0 || self.plugin_burst == 0 {
            return Err(crate::yaml::Invalid::new(
                "pluginLinesPerSecond",
                "plugin log rate and burst must be at least 1",
            ));
        }
        if self.plugin_output_bytes_per_second == 0 || self.plugin_output_burst == 0 {
            return Err(crate::yaml::Invalid::new(
                "pluginOutputBytesPerSecond",
                "plugin output rate and burst must be above zero",
            ));
        }
        Ok(())
    }

    /// How much each plugin may log.
    pub fn plugin_rate(&self) -> LogRate {
        LogRate {
            lines_per_second: self.plugin_lines_per_second,
            burst: self.plugin_burst,
            output_bytes_per_second: self.plugin_output_bytes_per_second,
            output_burst_bytes: self.plugin_output_burst,
        }
    }
}

/// Logs to stderr as `log` says; `RUST_LOG` overrides the level. The human
/// format writes every field through [`EscapedFields`]; the JSON format
/// through [`EscapedJson`]: in both, a reader sees each unsafe character
/// of the message and every field ([`crate::text::is_unsafe`]) as the same
/// visible escape.
pub fn init(log: &LogConfig) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(&log.level));
    use std::io::IsTerminal;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colours for a terminal only: a log file or a collector gets text.
        .with_ansi(std::io::stderr().is_terminal());
    let _ = match log.format {
        LogFormat::Human => builder.fmt_fields(EscapedFields).try_init(),
        LogFormat::Json => builder
            .json()
            .event_format(EscapedJson::default())
            .try_init(),
    };
}

/// The JSON log's lines: what `tracing-subscriber`'s JSON format writes
/// (one object per event: timestamp, level, fields, target, spans), with
/// every string in it escaped by [`crate::text::escape_json_line`]. JSON
/// escapes only C0 characters, `"` and `\`, and a consumer decodes `\n` or
/// `\u001b` back into the raw character: here what a consumer decodes from
/// the message, a field, a span field or an error is exactly what the
/// human log shows (`\n`, `\u{1b}`, `\u{202e}` as visible text), so a
/// plugin's text cannot move a terminal's cursor, open a hyperlink, reorder
/// a line or break it in any viewer of the log.
#[derive(Debug)]
pub struct EscapedJson {
    inner: tracing_subscriber::fmt::format::Format<tracing_subscriber::fmt::format::Json>,
}

impl Default for EscapedJson {
    fn default() -> Self {
        EscapedJson {
            inner: tracing_subscriber::fmt::format().json(),
        }
    }
}

impl<S, N> tracing_subscriber::fmt::FormatEvent<S, N> for EscapedJson
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    N: for<'writer> FormatFields<'writer> + 'static,
{
    fn format_event(
        &self,
        context: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> fmt::Result {
        let mut line = String::new();
        tracing_subscriber::fmt::FormatEvent::format_event(
            &self.inner,
            context,
            Writer::new(&mut line),
            event,
        )?;
        writer.write_str(&crate::text::escape_json_line(&line))
    }
}

/// The human log's fields, written so that no value can change the shape of
/// its line: control characters (line breaks, escape sequences) and the
/// Unicode characters that break or reorder lines are written as escapes in
/// the message and in every field, and a field value holding a space, `=`
/// or `"` is quoted. Much of what the host logs comes from plugins (their
/// messages, names and URLs they asked for, errors quoting them): a plugin
/// cannot write a line that reads as another plugin's, or as the host's.
#[derive(Debug, Default, Clone, Copy)]
pub struct EscapedFields;

impl<'writer> FormatFields<'writer> for EscapedFields {
    fn format_fields<R: RecordFields>(&self, writer: Writer<'writer>, fields: R) -> fmt::Result {
        let mut visitor = EscapingVisitor {
            writer,
            first: true,
            result: Ok(()),
        };
        fields.record(&mut visitor);
        visitor.result
    }
}

struct EscapingVisitor<'writer> {
    writer: Writer<'writer>,
    first: bool,
    result: fmt::Result,
}

impl EscapingVisitor<'_> {
    fn field(&mut self, field: &Field, value: &str) {
        if self.result.is_err() {
            return;
        }
        let separator = if self.first { "" } else { " " };
        self.first = false;
        self.result = if field.name() == "message" {
            write!(
                self.writer,
                "{separator}{}",
                crate::text::escape_controls(value)
            )
        } else if value.is_empty()
            || value
                .chars()
                .any(|c| c.is_whitespace() || c == '=' || c == '"' || crate::text::is_unsafe(c))
        {
            write!(
                self.writer,
                "{separator}{}={}",
                field.name(),
                crate::text::quote(value)
            )
        } else {
            write!(self.writer, "{separator}{}={value}", field.name())
        };
    }
}

impl Visit for EscapingVisitor<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.field(field, value);
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        let mut text = String::new();
        let _ = write!(text, "{value:?}");
        self.field(field, &text);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// What the human format writes for one event logged with `log`.
    fn written(log: impl FnOnce()) -> String {
        let out = Arc::new(Mutex::new(Vec::new()));
        let sink = out.clone();
        let subscriber = tracing_subscriber::fmt()
            .fmt_fields(EscapedFields)
            .with_ansi(false)
            .without_time()
            .with_writer(move || Sink(sink.clone()))
            .finish();
        tracing::subscriber::with_default(subscriber, log);
        String::from_utf8(out.lock().unwrap().clone()).unwrap()
    }

    /// What the JSON format writes for the events logged with `log`.
    pub(crate) fn written_json(log: impl FnOnce()) -> String {
        let out = Arc::new(Mutex::new(Vec::new()));
        let sink = out.clone();
        let subscriber = tracing_subscriber::fmt()
            .json()
            .event_format(EscapedJson::default())
            .with_writer(move || Sink(sink.clone()))
            .finish();
        tracing::subscriber::with_default(subscriber, log);
        String::from_utf8(out.lock().unwrap().clone()).unwrap()
    }

    /// Logs `text` as a plugin's line, an audit line's detail, a handler's
    /// error and inside a span, as the host does.
    fn log_everywhere(text: &str) {
        let span = tracing::info_span!("call", plugin = "mallory", key = text);
        let _entered = span.enter();
        tracing::info!(target: "herald::plugin", plugin = "mallory", source = "stdout", "{text}");
        tracing::warn!(target: "herald::audit", plugin = "mallory", detail = text, "plugin API call");
        let error = std::io::Error::other(text.to_owned());
        tracing::warn!(plugin = "mallory", error = %error, debug = ?text, "handler failed");
    }

    #[test]
    fn both_formats_write_every_unsafe_character_as_the_same_visible_escape() {
        use crate::text::tests::{HOSTILE, hostile_text};
        let hostile = hostile_text();
        let human = written(|| log_everywhere(&hostile));
        let json = written_json(|| log_everywhere(&hostile));
        for (format, text) in [("human", &human), ("json", &json)] {
            assert_eq!(text.lines().count(), 3, "{format}: {text}");
            let inside = text.trim_end_matches('\n');
            assert!(
                !inside
                    .chars()
                    .any(|c| c != '\n' && crate::text::is_unsafe(c)),
                "{format}: {text:?}"
            );
        }
        for (c, escape) in HOSTILE {
            assert!(human.contains(escape), "human: {c:?} as {escape}");
        }
        let escaped = crate::text::escape_controls(&hostile);
        for line in json.lines() {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            // What a consumer decodes is the human format's escape.
            let strings = |v: &serde_json::Value| -> Vec<String> {
                let mut found = Vec::new();
                collect_strings(v, &mut found);
                found
            };
            for string in strings(&value) {
                assert!(!string.chars().any(crate::text::is_unsafe), "{string:?}");
            }
            assert_eq!(value["span"]["key"], escaped.as_str(), "{line}");
        }
        let plugin: serde_json::Value = serde_json::from_str(json.lines().next().unwrap()).unwrap();
        assert_eq!(plugin["fields"]["message"], escaped.as_str());
        let audit: serde_json::Value = serde_json::from_str(json.lines().nth(1).unwrap()).unwrap();
        assert_eq!(audit["fields"]["detail"], escaped.as_str());
    }

    fn collect_strings(value: &serde_json::Value, found: &mut Vec<String>) {
        match value {
            serde_json::Value::String(s) => found.push(s.clone()),
            serde_json::Value::Array(items) => items.iter().for_each(|v| collect_strings(v, found)),
            serde_json::Value::Object(map) => map.values().for_each(|v| collect_strings(v, found)),
            _ => {}
        }
    }

    struct Sink(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Sink {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_plugins_line_break_cannot_forge_another_line() {
        let forged = "hello\n2026-11-25T00:00:00Z  INFO herald::plugin: pwned plugin=victim";
        let text = written(|| {
            tracing::info!(target: "herald::plugin", plugin = "mallory", source = "log", "{forged}");
            tracing::info!(target: "herald::audit", plugin = "mallory", name = %"x\r\nplugin=victim outcome=ok", "plugin API call");
        });
        assert_eq!(text.lines().count(), 2, "{text}");
        assert!(text.contains("hello\\n2026"), "{text}");
        assert!(
            text.contains(r#"name="x\r\nplugin=victim outcome=ok""#),
            "{text}"
        );
        assert!(!written(|| tracing::info!("{}", "\u{1b}[2J\u{2028}")).contains('\u{1b}'));
    }

    #[test]
    fn plain_values_stay_plain_and_others_are_quoted() {
        let text =
            written(|| tracing::info!(plugin = "pod-watch", detail = "two words", empty = "", "m"));
        assert!(text.contains("plugin=pod-watch"), "{text}");
        assert!(text.contains(r#"detail="two words""#), "{text}");
        assert!(text.contains(r#"empty="""#), "{text}");
    }
}
