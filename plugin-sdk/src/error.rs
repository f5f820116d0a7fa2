//! The error a handler returns: a message the host records as the call's
//! failure.

use std::fmt;

/// A handler failure. The host records its message and retries the
/// notification with backoff a bounded number of times.
///
/// Any [`std::error::Error`] converts into it, so `?` works on
/// `serde_json`, I/O and [`CacheError`](crate::cache::CacheError) results;
/// the message then includes the error's chain of sources. For a message of
/// your own use [`Error::new`] or [`Error::msg`].
///
/// `Error` deliberately does not implement [`std::error::Error`] itself (as
/// with `anyhow::Error`), which is what lets the blanket conversion exist.
#[derive(Clone, PartialEq, Eq)]
pub struct Error {
    message: String,
}

impl Error {
    /// An error with this message; a `String` is taken without copying.
    ///
    /// ```
    /// let error = herald_sdk::Error::new(String::from("pod has no node"));
    /// assert_eq!(error.message(), "pod has no node");
    /// ```
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }

    /// An error carrying anything displayable as its message.
    ///
    /// ```
    /// let error = herald_sdk::Error::msg(format_args!("{} is not ready", "web-0"));
    /// assert_eq!(error.message(), "web-0 is not ready");
    /// ```
    pub fn msg(message: impl fmt::Display) -> Self {
        Self {
            message: message.to_string(),
        }
    }

    /// The message the host will record.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Prefixes the message with what was being done, as in
    /// `decoding config: expected a map`.
    pub fn context(self, doing: impl fmt::Display) -> Self {
        Self {
            message: format!("{doing}: {}", self.message),
        }
    }

    /// The message, consumed: what crosses the ABI as `err(string)`.
    pub fn into_message(self) -> String {
        self.message
    }
}

impl<E: std::error::Error> From<E> for Error {
    fn from(error: E) -> Self {
        let mut message = error.to_string();
        let mut source = error.source();
        while let Some(cause) = source {
            message.push_str(": ");
            message.push_str(&cause.to_string());
            source = cause.source();
        }
        Self { message }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.message, f)
    }
}

impl From<Error> for String {
    fn from(error: Error) -> Self {
        error.message
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Outer(std::io::Error);

    impl fmt::Display for Outer {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("reading state")
        }
    }

    impl std::error::Error for Outer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn question_mark_converts_std_errors() {
        fn parse() -> Result<u32, Error> {
            Ok("x".parse::<u32>()?)
        }
        assert_eq!(
            parse().unwrap_err().message(),
            "invalid digit found in string"
        );
    }

    #[test]
    fn conversion_keeps_the_source_chain() {
        let error = Error::from(Outer(std::io::Error::other("disk gone")));
        assert_eq!(error.message(), "reading state: disk gone");
    }

    #[test]
    fn msg_and_context_compose() {
        let error = Error::msg("no phase").context("pod web-0");
        assert_eq!(error.to_string(), "pod web-0: no phase");
        assert_eq!(format!("{error:?}"), "\"pod web-0: no phase\"");
        assert_eq!(String::from(error), "pod web-0: no phase");
    }

    #[test]
    fn serde_errors_convert() {
        let error: Error = serde_json::from_str::<u8>("300").unwrap_err().into();
        assert!(error.message().contains("300"), "{error}");
    }
}
