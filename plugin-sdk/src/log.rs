//! Logging into the host's log, tagged with the plugin's name. Use the
//! macros [`trace!`](crate::trace), [`debug!`](crate::debug),
//! [`info!`](crate::info), [`warn!`](crate::warn) and
//! [`error!`](crate::error), called by path (`herald_sdk::info!(...)`) so
//! they are not mistaken for the `log` or `tracing` crates' macros.

use std::fmt;

/// Severity of a log line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// Very detailed tracing.
    Trace,
    /// Diagnostics for developers.
    Debug,
    /// Normal facts worth recording.
    Info,
    /// Something looks wrong.
    Warn,
    /// Something failed.
    Error,
}

/// Formats as the lowercase level name, e.g. `warn`.
impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Trace => "trace",
            Self::Debug => "debug",
            Self::Info => "info",
            Self::Warn => "warn",
            Self::Error => "error",
        })
    }
}

/// Writes one line to the host's log. The host may rate-limit a plugin that
/// floods. The macros call this.
pub fn write(level: Level, message: &str) {
    crate::host::log(level, message);
}

/// Logs a line at [`Level::Trace`], with `format!` syntax.
#[macro_export]
macro_rules! trace {
    ($($arg:tt)+) => {
        $crate::log::write($crate::log::Level::Trace, &::std::format!($($arg)+))
    };
}

/// Logs a line at [`Level::Debug`], with `format!` syntax.
#[macro_export]
macro_rules! debug {
    ($($arg:tt)+) => {
        $crate::log::write($crate::log::Level::Debug, &::std::format!($($arg)+))
    };
}

/// Logs a line at [`Level::Info`], with `format!` syntax:
/// `herald_sdk::info!("created pod={key}")`.
#[macro_export]
macro_rules! info {
    ($($arg:tt)+) => {
        $crate::log::write($crate::log::Level::Info, &::std::format!($($arg)+))
    };
}

/// Logs a line at [`Level::Warn`], with `format!` syntax.
#[macro_export]
macro_rules! warn {
    ($($arg:tt)+) => {
        $crate::log::write($crate::log::Level::Warn, &::std::format!($($arg)+))
    };
}

/// Logs a line at [`Level::Error`], with `format!` syntax.
#[macro_export]
macro_rules! error {
    ($($arg:tt)+) => {
        $crate::log::write($crate::log::Level::Error, &::std::format!($($arg)+))
    };
}

// The tests run against the native stand-in host.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use crate::testing;

    #[test]
    fn macros_format_and_write_at_their_level() {
        testing::reset();
        let key = "shop/web-0";
        crate::trace!("t {key}");
        crate::debug!("d {}", 1);
        crate::info!("i {key}");
        crate::warn!("w");
        crate::error!("e {:>3}", 7);
        let lines: Vec<(Level, String)> = testing::take_logs()
            .into_iter()
            .map(|line| (line.level, line.message))
            .collect();
        assert_eq!(
            lines,
            [
                (Level::Trace, "t shop/web-0".to_owned()),
                (Level::Debug, "d 1".to_owned()),
                (Level::Info, "i shop/web-0".to_owned()),
                (Level::Warn, "w".to_owned()),
                (Level::Error, "e   7".to_owned()),
            ]
        );
        assert!(testing::take_logs().is_empty());
    }

    #[test]
    fn levels_display_lowercase_and_order_by_severity() {
        assert_eq!(Level::Warn.to_string(), "warn");
        assert!(Level::Trace < Level::Error);
    }
}
