//! Byte quantities in configuration, as Kubernetes writes them: `64Mi`,
//! `1Gi`, `500M`, or a plain number of bytes.

use serde::{Deserialize, Deserializer, Serializer, de::Error as _};

/// Parses `64Mi`, `1Gi`, `500k`, `2M` or `1048576`.
pub fn parse(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let value: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a byte quantity: write e.g. 64Mi, 1Gi or 1048576"))?;
    let scale: u64 = match suffix {
        "" => 1,
        "k" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        other => {
            return Err(format!(
                "{text:?} has unknown suffix {other:?}: use Ki, Mi, Gi (or k, M, G)"
            ));
        }
    };
    value
        .checked_mul(scale)
        .ok_or_else(|| format!("{text:?} is too large"))
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
        assert!(parse("64 apples").unwrap_err().contains("unknown suffix"));
        assert!(parse("Mi").is_err());
        assert!(parse("99999999999999Gi").unwrap_err().contains("too large"));
        assert_eq!(format(64 << 20), "64Mi");
        assert_eq!(format(1000), "1000");
    }
}
