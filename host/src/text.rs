//! Text from files and plugins, made safe to print: whatever it holds, an
//! error message that quotes it stays on its one log line.

/// True for the characters that can change how a line of text reads or
/// where it ends: control characters (line breaks and escape sequences
/// included), Unicode's line and paragraph separators, and the marks that
/// reorder bidirectional text.
pub fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}' | '\u{2029}' | '\u{200e}' | '\u{200f}' | '\u{061c}'
                | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

/// `text` with every unsafe character ([`is_unsafe`]: line breaks included)
/// written as its escape (`\n`, `\u{1b}`); everything else is kept as is.
pub fn escape_controls(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        if is_unsafe(c) {
            escaped.extend(c.escape_default());
        } else {
            escaped.push(c);
        }
    }
    escaped
}

/// True for an RFC 1123 label (a namespace or plugin name): 1–63 lowercase alphanumerics or '-', alphanumeric at both ends.
pub fn is_dns_label(value: &str) -> bool {
    let bytes = value.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes[0] != b'-'
        && bytes[bytes.len() - 1] != b'-'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_the_rest_is_kept() {
        assert_eq!(
            escape_controls("unknown field `a\nb\r\u{1b}[2J`, é ✓"),
            "unknown field `a\\nb\\r\\u{1b}[2J`, é ✓"
        );
        assert_eq!(escape_controls("plain"), "plain");
    }
}
