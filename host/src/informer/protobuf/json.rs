//! The JSON Go's `encoding/json` writes, value by value: the API server
//! encodes objects with it, so an object transcoded from protobuf reads as
//! the one it would have sent as JSON.

use base64::Engine;
use std::fmt::Write;

/// Writes `text` as a JSON string the way `encoding/json` does: `<`, `>`,
/// `&`, U+2028 and U+2029 escaped, bytes that are not UTF-8 replaced by
/// U+FFFD.
pub fn string(out: &mut String, text: &[u8]) {
    out.push('"');
    for chunk in text.utf8_chunks() {
        escape_valid(out, chunk.valid());
        if !chunk.invalid().is_empty() {
            out.push_str("\\ufffd");
        }
    }
    out.push('"');
}

fn escape_valid(out: &mut String, text: &str) {
    let mut plain = 0;
    for (at, c) in text.char_indices() {
        let escaped = match c {
            '"' => "\\\"",
            '\\' => "\\\\",
            '\n' => "\\n",
            '\r' => "\\r",
            '\t' => "\\t",
            '\u{8}' => "\\b",
            '\u{c}' => "\\f",
            '<' => "\\u003c",
            '>' => "\\u003e",
            '&' => "\\u0026",
            '\u{2028}' => "\\u2028",
            '\u{2029}' => "\\u2029",
            c if (c as u32) < 0x20 => "",
            _ => continue,
        };
        out.push_str(&text[plain..at]);
        if escaped.is_empty() {
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push_str(escaped);
        }
        plain = at + c.len_utf8();
    }
    out.push_str(&text[plain..]);
}

/// Writes `bytes` as `encoding/json` writes a `[]byte`: standard base64.
pub fn base64(out: &mut String, bytes: &[u8]) {
    out.push('"');
    base64::engine::general_purpose::STANDARD.encode_string(bytes, out);
    out.push('"');
}

/// Writes a float64 as `encoding/json` does: the shortest decimal that reads
/// back the same, in exponent form below 1e-6 and from 1e21.
pub fn float(out: &mut String, value: f64) {
    shortest(out, value, value.abs());
}

/// Writes a float32 as `encoding/json` does: the shortest decimal that
/// reads back the same float32.
pub fn float32(out: &mut String, value: f32) {
    shortest(out, value, f64::from(value.abs()));
}

fn shortest<F>(out: &mut String, value: F, magnitude: f64)
where
    F: std::fmt::Display + std::fmt::LowerExp,
{
    if !magnitude.is_finite() {
        // encoding/json refuses these; the server never stores one.
        out.push_str("null");
        return;
    }
    if magnitude == 0.0 || (1e-6..1e21).contains(&magnitude) {
        let _ = write!(out, "{value}");
    } else {
        let text = format!("{value:e}");
        let (mantissa, exponent) = text.split_once('e').expect("{:e} has an exponent");
        // Go writes `e-7` and `e+21` (never below 21 here).
        let sign = if exponent.starts_with('-') { "" } else { "+" };
        let _ = write!(out, "{mantissa}e{sign}{exponent}");
    }
}

/// Seconds from 0001-01-01T00:00:00Z to the Unix epoch: Go's zero time.
pub const GO_ZERO_TIME_UNIX: i64 = -62_135_596_800;

/// Writes a `metav1.Time` (RFC 3339 in UTC, whole seconds) or, with
/// `micros`, a `metav1.MicroTime` (six fractional digits).
pub fn time(out: &mut String, seconds: i64, nanos: i32, micros: bool) {
    let days = seconds.div_euclid(86_400);
    let of_day = seconds.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    let _ = write!(
        out,
        "\"{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
        of_day / 3600,
        of_day / 60 % 60,
        of_day % 60
    );
    if micros {
        let _ = write!(out, ".{:06}", nanos.clamp(0, 999_999_999) / 1000);
    }
    out.push_str("Z\"");
}

/// The proleptic Gregorian date of a day counted from 1970-01-01.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    // Eras of 400 years (146,097 days), counted from 0000-03-01 so that the
    // leap day ends each year.
    let shifted = days + 719_468;
    let era = shifted.div_euclid(146_097);
    let day_of_era = shifted.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_index + 2) / 5 + 1) as u32;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Writes a `metav1.Duration` as Go's `time.Duration.String` (`"1h2m3.5s"`,
/// `"250ms"`, `"0s"`), quoted.
pub fn duration(out: &mut String, nanos: i64) {
    out.push('"');
    if nanos == 0 {
        out.push_str("0s\"");
        return;
    }
    if nanos < 0 {
        out.push('-');
    }
    let n = nanos.unsigned_abs();
    if n < 1_000_000_000 {
        // Below a second: one unit with a fraction.
        let (unit, scale) = match n {
            0..1_000 => ("ns", 1),
            1_000..1_000_000 => ("\u{b5}s", 1_000),
            _ => ("ms", 1_000_000),
        };
        fraction(out, n, scale);
        out.push_str(unit);
    } else {
        let seconds = n / 1_000_000_000;
        let (hours, minutes) = (seconds / 3600, seconds / 60 % 60);
        if hours > 0 {
            let _ = write!(out, "{hours}h");
        }
        if hours > 0 || minutes > 0 {
            let _ = write!(out, "{minutes}m");
        }
        fraction(out, n % 60_000_000_000, 1_000_000_000);
        out.push('s');
    }
    out.push('"');
}

/// Writes `value / scale` with the fraction's trailing zeros dropped.
fn fraction(out: &mut String, value: u64, scale: u64) {
    let _ = write!(out, "{}", value / scale);
    let rest = value % scale;
    if rest > 0 {
        let width = scale.ilog10() as usize;
        let digits = format!("{rest:0width$}");
        out.push('.');
        out.push_str(digits.trim_end_matches('0'));
    }
}

/// Writes embedded JSON (a `RawExtension` or `FieldsV1`) as `encoding/json`
/// does for a `json.Marshaler`'s output: validated, compacted, its strings
/// escaped. Returns `false`, writing nothing, when it is not JSON.
pub fn embedded(out: &mut String, raw: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(raw) else {
        return false;
    };
    if serde_json::from_str::<serde::de::IgnoredAny>(text).is_err() {
        return false;
    }
    let mut in_string = false;
    let mut escaped = false;
    let mut plain = 0;
    for (at, c) in text.char_indices() {
        if in_string {
            let replacement = match c {
                _ if escaped => {
                    escaped = false;
                    continue;
                }
                '\\' => {
                    escaped = true;
                    continue;
                }
                '"' => {
                    in_string = false;
                    continue;
                }
                '<' => "\\u003c",
                '>' => "\\u003e",
                '&' => "\\u0026",
                '\u{2028}' => "\\u2028",
                '\u{2029}' => "\\u2029",
                _ => continue,
            };
            out.push_str(&text[plain..at]);
            out.push_str(replacement);
            plain = at + c.len_utf8();
        } else if c == '"' {
            in_string = true;
        } else if c.is_ascii_whitespace() {
            out.push_str(&text[plain..at]);
            plain = at + 1;
        }
    }
    out.push_str(&text[plain..]);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(write: impl FnOnce(&mut String)) -> String {
        let mut out = String::new();
        write(&mut out);
        out
    }

    #[test]
    fn strings_are_escaped_as_go_escapes_them() {
        let text = "a\"b\\c\n\t<x>&\u{1}\u{2028}é😀";
        assert_eq!(
            written(|o| string(o, text.as_bytes())),
            r#""a\"b\\c\n\t\u003cx\u003e\u0026\u0001\u2028é😀""#
        );
        assert_eq!(written(|o| string(o, b"a\xffb")), r#""a\ufffdb""#);
    }

    #[test]
    fn times_are_rfc3339_in_utc() {
        assert_eq!(
            written(|o| time(o, 0, 0, false)),
            "\"1970-01-01T00:00:00Z\""
        );
        assert_eq!(
            written(|o| time(o, 1_795_856_400, 123_456_789, true)),
            "\"2026-11-28T09:00:00.123456Z\""
        );
        // A leap day, and a date before the epoch.
        assert_eq!(
            written(|o| time(o, 951_782_400, 0, false)),
            "\"2000-02-29T00:00:00Z\""
        );
        assert_eq!(
            written(|o| time(o, -86_400, 0, false)),
            "\"1969-12-31T00:00:00Z\""
        );
        assert_eq!(
            written(|o| time(o, GO_ZERO_TIME_UNIX, 0, false)),
            "\"0001-01-01T00:00:00Z\""
        );
    }

    #[test]
    fn durations_read_as_go_prints_them() {
        for (nanos, text) in [
            (0, "0s"),
            (1, "1ns"),
            (1_500, "1.5\u{b5}s"),
            (250_000_000, "250ms"),
            (1_000_000_000, "1s"),
            (90_500_000_000, "1m30.5s"),
            (3_600_000_000_000, "1h0m0s"),
            (-5_000_000_000, "-5s"),
        ] {
            assert_eq!(written(|o| duration(o, nanos)), format!("\"{text}\""));
        }
    }

    #[test]
    fn floats_switch_to_exponents_where_go_does() {
        for (value, text) in [
            (0.0, "0"),
            (1.5, "1.5"),
            (100.0, "100"),
            (1e20, "100000000000000000000"),
            (1e21, "1e+21"),
            (1.5e-7, "1.5e-7"),
            (-2.5e-12, "-2.5e-12"),
        ] {
            assert_eq!(written(|o| float(o, value)), text, "{value}");
        }
        assert_eq!(written(|o| float32(o, 0.1)), "0.1");
    }

    #[test]
    fn embedded_json_is_compacted_and_escaped_or_refused() {
        let raw = br#"{ "a" : [1, "x y<", {"b":"\"}"} ] }"#;
        assert_eq!(
            written(|o| assert!(embedded(o, raw))),
            r#"{"a":[1,"x y\u003c",{"b":"\"}"}]}"#
        );
        let mut out = String::new();
        assert!(!embedded(&mut out, b"{not json"));
        assert!(out.is_empty());
    }
}
