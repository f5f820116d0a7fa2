//! Human-readable durations for configuration files: `250ms`, `1s`, `5m`, `1h`.

use serde::{Deserialize, Deserializer, Serializer, de::Error as _};
use std::time::Duration;

/// A duration that [`parse`] cannot read; each variant holds the text at
/// fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// The text does not start with a number.
    #[error("{0:?} is not a duration: write e.g. 250ms, 1s, 5m or 1h")]
    NotANumber(String),
    /// The number is followed by a unit other than `ms`, `s`, `m` or `h`.
    #[error("{text:?} has unknown unit {unit:?}: use ms, s, m or h")]
    UnknownUnit {
        /// The whole duration.
        text: String,
        /// The unit at fault.
        unit: String,
    },
    /// The duration is negative, not finite, or over a billion seconds.
    #[error("{0:?} is out of range")]
    OutOfRange(String),
}

/// Parses `250ms`, `1s`, `1.5s`, `5m` or `1h` (a bare number is seconds).
pub fn parse(text: &str) -> Result<Duration, DurationError> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| DurationError::NotANumber(text.to_owned()))?;
    let scale = match unit.trim() {
        "ms" => 0.001,
        "" | "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        other => {
            return Err(DurationError::UnknownUnit {
                text: text.to_owned(),
                unit: other.to_owned(),
            });
        }
    };
    let seconds = value * scale;
    if !seconds.is_finite() || !(0.0..=1e9).contains(&seconds) {
        return Err(DurationError::OutOfRange(text.to_owned()));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// Formats a duration the way [`parse`] reads it.
pub fn format(duration: Duration) -> String {
    let millis = duration.as_millis();
    if !millis.is_multiple_of(1000) {
        format!("{millis}ms")
    } else if millis.is_multiple_of(3_600_000) && millis > 0 {
        format!("{}h", millis / 3_600_000)
    } else if millis.is_multiple_of(60_000) && millis > 0 {
        format!("{}m", millis / 60_000)
    } else {
        format!("{}s", millis / 1000)
    }
}

/// Serde `serialize_with` for a [`Duration`].
pub fn serialize<S: Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&format(*duration))
}

/// Serde `deserialize_with` for a [`Duration`]: a string as [`parse`] reads, or a number of seconds.
pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Text(String),
        Seconds(f64),
    }
    match Raw::deserialize(deserializer)? {
        Raw::Text(text) => parse(&text).map_err(D::Error::custom),
        Raw::Seconds(seconds) => parse(&seconds.to_string()).map_err(D::Error::custom),
    }
}

/// `Option<Duration>` in the same forms; absent or `null` is `None`.
pub mod option {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    /// Serde `serialize_with`.
    pub fn serialize<S: Serializer>(
        value: &Option<Duration>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(duration) => super::serialize(duration, serializer),
            None => serializer.serialize_none(),
        }
    }

    /// Serde `deserialize_with`.
    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Duration>, D::Error> {
        #[derive(Deserialize)]
        struct Wrapper(#[serde(with = "super")] Duration);
        Ok(Option::<Wrapper>::deserialize(deserializer)?.map(|w| w.0))
    }
}

/// `Option<Duration>` serialized as a whole number of milliseconds, as the
/// manifest's `…Ms` fields are.
pub mod millis_option {
    use serde::Serializer;
    use std::time::Duration;

    /// Serde `serialize_with`.
    pub fn serialize<S: Serializer>(
        value: &Option<Duration>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(d) => serializer.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            None => serializer.serialize_none(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_unit_and_rejects_garbage() {
        assert_eq!(parse("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse("2").unwrap(), Duration::from_secs(2));
        assert_eq!(parse("5m").unwrap(), Duration::from_secs(300));
        assert_eq!(parse("1h").unwrap(), Duration::from_secs(3600));
        assert_eq!(
            parse("soon").unwrap_err().to_string(),
            r#""soon" is not a duration: write e.g. 250ms, 1s, 5m or 1h"#
        );
        assert_eq!(
            parse("3 weeks").unwrap_err().to_string(),
            r#""3 weeks" has unknown unit "weeks": use ms, s, m or h"#
        );
        assert_eq!(
            parse("999999999h").unwrap_err(),
            DurationError::OutOfRange("999999999h".into())
        );
    }

    #[test]
    fn format_round_trips() {
        for text in ["250ms", "1s", "90s", "5m", "2h"] {
            assert_eq!(format(parse(text).unwrap()), text);
        }
    }
}
