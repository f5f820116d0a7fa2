//! Byte quantities in configuration, as Kubernetes writes them: `64Mi`,
//! `1Gi`, `500M`, or a plain number of bytes.

use serde::{Deserialize, Deserializer, Serializer, de::Error as _};

/// A byte quantity that [`parse`] cannot read; each variant holds the text
/// at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    /// The text does not start with a whole number.
    #[error("{0:?} is not a byte quantity: write e.g. 64Mi, 1Gi or 1048576")]
    NotANumber(String),
    /// The number is followed by a suffix other than `Ki`, `Mi`, `Gi`, `k`,
    /// `M` or `G`.
    #[error("{text:?} has unknown suffix {suffix:?}: use Ki, Mi, Gi (or k, M, G)")]
    UnknownSuffix {
        /// The whole quantity.
        text: String,
        /// The suffix at fault.
        suffix: String,
    },
    /// The quantity does not fit in 64 bits.
    #[error("{0:?} is too large")]
    TooLarge(String),
}

/// Parses `64Mi`, `1Gi`, `500k`, `2M` or `1048576`.
pub fn parse(text: &str) -> Result<u64, QuantityError> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let value: u64 = number
        .parse()
        .map_err(|_| QuantityError::NotANumber(text.to_owned()))?;
    let scale: u64 = match suffix {
        "" => 1,
        "k" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        other => {
            return Err(QuantityError::UnknownSuffix {
                text: text.to_owned(),
                suffix: other.to_owned(),
            });
        }
    };
    value
        .checked_mul(scale)
        .ok_or_else(|| QuantityError::TooLarge(text.to_owned()))
}

/// Formats bytes with the largest exact binary suffix.
pub fn format(bytes: u64) -> String {
    for (suffix, scale) in [("Gi", 1u64 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)] {
        if bytes >= scale && bytes.is_multiple_of(scale) {
            return format!("{}{suffix}", bytes / scale);
        }
    }
    bytes.to_string()
}

/// Serde `serialize_with` for a byte quantity.
pub fn serialize<S: Serializer>(bytes: &u64, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&format(*bytes))
}

/// Serde `deserialize_with` for a byte quantity: a string or a number.
pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Number(u64),
        Text(String),
    }
    match Raw::deserialize(deserializer)? {
        Raw::Number(bytes) => Ok(bytes),
        Raw::Text(text) => parse(&text).map_err(D::Error::custom),
    }
}

/// `Option<u64>` byte quantities; absent or `null` is `None`.
pub mod option {
    use serde::{Deserialize, Deserializer};

    /// Serde `deserialize_with`.
    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<u64>, D::Error> {
        #[derive(Deserialize)]
        struct Wrapper(#[serde(with = "super")] u64);
        Ok(Option::<Wrapper>::deserialize(deserializer)?.map(|w| w.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kubernetes_quantities() {
        assert_eq!(parse("64Mi").unwrap(), 64 << 20);
        assert_eq!(parse("1Gi").unwrap(), 1 << 30);
        assert_eq!(parse("500k").unwrap(), 500_000);
        assert_eq!(parse("1048576").unwrap(), 1 << 20);
        assert_eq!(
            parse("64 apples").unwrap_err().to_string(),
            r#""64 apples" has unknown suffix " apples": use Ki, Mi, Gi (or k, M, G)"#
        );
        assert_eq!(
            parse("Mi").unwrap_err(),
            QuantityError::NotANumber("Mi".into())
        );
        assert_eq!(
            parse("99999999999999Gi").unwrap_err().to_string(),
            r#""99999999999999Gi" is too large"#
        );
        assert_eq!(format(64 << 20), "64Mi");
        assert_eq!(format(1000), "1000");
    }
}
