//! The text forms Kubernetes JSON gives times and durations, both ways: `meta/v1` `Time`
//! and `MicroTime` as RFC 3339 (to the second, to the microsecond), `Duration` as Go's
//! `time.Duration` string.

use serde_json::Value;

/// `time.Time{}.Unix()` in Go: how a zero time reads when sent as seconds.
const GO_ZERO: i64 = -62_135_596_800;

/// A `meta/v1` time as Kubernetes writes it: RFC 3339 in UTC, to the second (`Time`) or the
/// microsecond (`MicroTime`); the zero time (an empty message, or Go's zero) is `null`.
pub(crate) fn timestamp(seconds: i64, nanos: i64, micro: bool) -> Value {
    if (seconds == 0 && nanos == 0) || seconds == GO_ZERO {
        return Value::Null;
    }
    let Ok(ts) = jiff::Timestamp::new(seconds, 0) else {
        return Value::Null;
    };
    let whole = ts.strftime("%Y-%m-%dT%H:%M:%S").to_string();
    if micro {
        Value::String(format!("{whole}.{:06}Z", nanos / 1000))
    } else {
        Value::String(format!("{whole}Z"))
    }
}

/// The seconds and nanoseconds of an RFC 3339 time (`2023-11-14T22:13:20Z`, with a
/// fraction or an offset), as Go's `metav1.Time` reads it from JSON.
pub(crate) fn parse_timestamp(text: &str) -> Result<(i64, i32), String> {
    let ts: jiff::Timestamp = text
        .parse()
        .map_err(|e| format!("{text:?} is not an RFC 3339 time: {e}"))?;
    Ok((ts.as_second(), ts.subsec_nanosecond()))
}

/// Go's `time.Duration.String()` for `nanos` nanoseconds (`"1h0m0s"`, `"1.5s"`, `"300ms"`).
pub(crate) fn go_duration(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".to_string();
    }
    let sign = if nanos < 0 { "-" } else { "" };
    let n = nanos.unsigned_abs();
    let fraction = |whole: u64, frac: u64, digits: usize| {
        let frac = format!("{frac:0digits$}");
        let frac = frac.trim_end_matches('0');
        if frac.is_empty() {
            whole.to_string()
        } else {
            format!("{whole}.{frac}")
        }
    };
    if n < 1_000 {
        return format!("{sign}{n}ns");
    }
    if n < 1_000_000 {
        return format!("{sign}{}µs", fraction(n / 1_000, n % 1_000, 3));
    }
    if n < 1_000_000_000 {
        return format!("{sign}{}ms", fraction(n / 1_000_000, n % 1_000_000, 6));
    }
    let secs = n / 1_000_000_000;
    let s = format!("{}s", fraction(secs % 60, n % 1_000_000_000, 9));
    let (mins, hours) = ((secs / 60) % 60, secs / 3600);
    if hours > 0 {
        format!("{sign}{hours}h{mins}m{s}")
    } else if mins > 0 {
        format!("{sign}{mins}m{s}")
    } else {
        format!("{sign}{s}")
    }
}

/// The nanoseconds of a Go duration string, as `time.ParseDuration` reads it: an optional
/// sign, then numbers with optional fractions each followed by a unit (`ns`, `us`, `µs`,
/// `ms`, `s`, `m`, `h`); `"0"` alone needs none.
pub(crate) fn parse_go_duration(text: &str) -> Result<i64, String> {
    let invalid = || format!("{text:?} is not a Go duration");
    let (negative, mut rest) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let digits = |s: &str| s.bytes().take_while(u8::is_ascii_digit).count();
        let whole_len = digits(rest);
        let whole = &rest[..whole_len];
        rest = &rest[whole_len..];
        let mut fraction = "";
        if let Some(after) = rest.strip_prefix('.') {
            let len = digits(after);
            fraction = &after[..len];
            rest = &after[len..];
        }
        if whole.is_empty() && fraction.is_empty() {
            return Err(invalid());
        }
        let unit_len = rest
            .char_indices()
            .find(|(_, c)| *c == '.' || c.is_ascii_digit())
            .map_or(rest.len(), |(i, _)| i);
        let unit: u128 = match &rest[..unit_len] {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return Err(invalid()),
        };
        rest = &rest[unit_len..];
        let whole: u128 = if whole.is_empty() {
            0
        } else {
            whole.parse().map_err(|_| invalid())?
        };
        let mut value = whole.checked_mul(unit).ok_or_else(invalid)?;
        if !fraction.is_empty() {
            // Go keeps at most what fits; nineteen digits is past a nanosecond of an hour.
            let kept = &fraction[..fraction.len().min(19)];
            let numerator: u128 = kept.parse().map_err(|_| invalid())?;
            value += numerator * unit / 10u128.pow(kept.len() as u32);
        }
        total = total.checked_add(value).ok_or_else(invalid)?;
    }
    let total = i64::try_from(total).map_err(|_| invalid())?;
    Ok(if negative { -total } else { total })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_and_write_as_go_does() {
        for (nanos, text) in [
            (0, "0s"),
            (3_600_000_000_000, "1h0m0s"),
            (1_500_000_000, "1.5s"),
            (300_000_000, "300ms"),
            (-90_000_000_000, "-1m30s"),
            (2_500, "2.5µs"),
            (7, "7ns"),
        ] {
            assert_eq!(go_duration(nanos), text);
            assert_eq!(parse_go_duration(text), Ok(nanos), "{text}");
        }
        assert_eq!(parse_go_duration("0"), Ok(0));
        assert_eq!(parse_go_duration("1h30m"), Ok(5_400_000_000_000));
        assert_eq!(parse_go_duration(".5s"), Ok(500_000_000));
        assert_eq!(parse_go_duration("2us"), Ok(2_000));
        for bad in ["", "1", "s", "1x", "-", ".s", "1h-2m"] {
            assert!(parse_go_duration(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn times_read_rfc_3339_and_write_utc() {
        assert_eq!(
            parse_timestamp("2023-11-14T22:13:20Z"),
            Ok((1_700_000_000, 0))
        );
        assert_eq!(
            parse_timestamp("2023-11-15T00:13:20.000250+02:00"),
            Ok((1_700_000_000, 250_000))
        );
        assert!(parse_timestamp("").is_err());
        assert!(parse_timestamp("yesterday").is_err());
        assert_eq!(
            timestamp(1_700_000_000, 250_000, true),
            "2023-11-14T22:13:20.000250Z"
        );
        assert_eq!(
            timestamp(1_700_000_000, 250_000, false),
            "2023-11-14T22:13:20Z"
        );
        assert_eq!(timestamp(GO_ZERO, 0, false), Value::Null);
    }
}
