//! Text from files and plugins, made safe to print: whatever it holds, an
//! error message that quotes it stays on its one log line, and a reader
//! sees every character that could change how it reads.
//!
//! One escape serves every place such text lands: the human log and the
//! JSON log ([`escape_controls`], [`quote`], [`escape_json_line`]), an
//! Event's note ([`escape_controls_within`]), and the messages that quote a
//! refused value. Each unsafe character ([`is_unsafe`]) is written as a
//! visible escape: `\n`, `\r`, `\t`, or `\u{…}` with its code point in hex.

use std::fmt::Write as _;

/// True for the characters that can change how a line of text reads or
/// where it ends, or that hide text from its reader:
///
/// - control characters: C0 (line breaks, tabs, NUL and `ESC`, which starts
///   terminal escape sequences such as CSI and OSC 8 hyperlinks), `DEL`,
///   and C1 (`U+0080`–`U+009F`, whose `U+009B` is a one-character CSI and
///   `U+0085` a line break);
/// - Unicode's line and paragraph separators (`U+2028`, `U+2029`);
/// - the marks and overrides that reorder bidirectional text (`U+061C`,
///   `U+200E`, `U+200F`, `U+202A`–`U+202E`, `U+2066`–`U+2069`);
/// - invisible format characters that hide or join text: the soft hyphen,
///   the Mongolian vowel separator, the zero width space, the word joiner
///   and invisible operators (`U+2060`–`U+2064`), the deprecated format
///   controls (`U+206A`–`U+206F`), the byte order mark, the interlinear
///   annotation controls (`U+FFF9`–`U+FFFB`) and the tag characters
///   (`U+E0000`–`U+E007F`).
///
/// The zero width joiner and non-joiner (`U+200C`, `U+200D`) are kept:
/// scripts and emoji need them, and they neither move nor hide text.
pub fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}' | '\u{2029}'
                | '\u{061c}' | '\u{200e}' | '\u{200f}'
                | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
                | '\u{00ad}' | '\u{180e}' | '\u{200b}'
                | '\u{2060}'..='\u{2064}' | '\u{206a}'..='\u{206f}'
                | '\u{feff}' | '\u{fff9}'..='\u{fffb}'
                | '\u{e0000}'..='\u{e007f}'
        )
}

/// Writes `c` as its visible escape: `\n`, `\r`, `\t`, else `\u{…}` with
/// its code point in lower-case hex (`\u{1b}`, `\u{202e}`).
fn push_escape(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        _ => {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
}

/// The escape [`escape_controls`] writes for `c`, if it is unsafe.
pub fn escape_of(c: char) -> Option<String> {
    is_unsafe(c).then(|| {
        let mut escaped = String::new();
        push_escape(&mut escaped, c);
        escaped
    })
}

/// `text` with every unsafe character ([`is_unsafe`]: line breaks and tabs
/// included) written as its visible escape (`\n`, `\u{1b}`); everything
/// else is kept as is.
pub fn escape_controls(text: &str) -> String {
    if !text.chars().any(is_unsafe) {
        return text.to_owned();
    }
    let mut escaped = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_unsafe(c) {
            push_escape(&mut escaped, c);
        } else {
            escaped.push(c);
        }
    }
    escaped
}

/// [`escape_controls`] of `text`, cut to at most `max_bytes` bytes *after*
/// escaping: the cut falls between characters and between escapes, never
/// inside one. True in the second place if anything was cut.
pub fn escape_controls_within(text: &str, max_bytes: usize) -> (String, bool) {
    let mut escaped = String::with_capacity(text.len().min(max_bytes));
    let mut unit = String::new();
    for c in text.chars() {
        unit.clear();
        if is_unsafe(c) {
            push_escape(&mut unit, c);
        } else {
            unit.push(c);
        }
        if escaped.len() + unit.len() > max_bytes {
            return (escaped, true);
        }
        escaped.push_str(&unit);
    }
    (escaped, false)
}

/// `text` in double quotes, as the human log writes a field value that
/// needs them: `"` and `\` escaped with a backslash, every unsafe
/// character as [`escape_controls`] writes it.
pub fn quote(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for c in text.chars() {
        match c {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            c if is_unsafe(c) => push_escape(&mut quoted, c),
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

/// One line of JSON (an object as `serde_json` writes it) with every
/// string in it escaped as [`escape_controls`] does: what a reader decodes
/// from each string is what the human log shows, never a raw unsafe
/// character. JSON itself escapes only C0, `"` and `\`, and a JSON escape
/// such as `\u001b` or `\n` decodes back to the raw character: those are
/// rewritten as the visible escape (the JSON text `\\u{1b}`, `\\n`), and
/// raw unsafe characters JSON leaves alone (`DEL`, C1, bidirectional
/// marks, `U+2028`) likewise. Everything outside strings, and every other
/// escape, is kept byte for byte; text that is not JSON is returned with
/// every unsafe character escaped.
pub fn escape_json_line(line: &str) -> String {
    if !line.contains('\\') && !line.chars().any(is_unsafe_in_json) {
        return line.to_owned();
    }
    let mut out = String::with_capacity(line.len() + 16);
    let mut chars = line.char_indices().peekable();
    let mut in_string = false;
    // The visible escape of `c`, written inside a JSON string: each of its
    // backslashes doubled.
    let json_escape = |out: &mut String, c: char| {
        let mut escape = String::new();
        push_escape(&mut escape, c);
        out.push_str(&escape.replace('\\', "\\\\"));
    };
    while let Some((at, c)) = chars.next() {
        if !in_string {
            if c == '"' {
                in_string = true;
            }
            if is_unsafe(c) && !matches!(c, '\n' | '\r' | '\t') {
                // Not JSON's whitespace: not JSON at all. Escape it anyway.
                push_escape(&mut out, c);
            } else {
                out.push(c);
            }
            continue;
        }
        match c {
            '"' => {
                in_string = false;
                out.push(c);
            }
            '\\' => {
                let Some((_, e)) = chars.next() else {
                    out.push(c);
                    break;
                };
                let (decoded, width) = match e {
                    'n' => (Some('\n'), 2),
                    'r' => (Some('\r'), 2),
                    't' => (Some('\t'), 2),
                    'b' => (Some('\u{8}'), 2),
                    'f' => (Some('\u{c}'), 2),
                    'u' => decode_unicode_escape(&line[at..]),
                    _ => (None, 2),
                };
                match decoded {
                    Some(decoded) if is_unsafe(decoded) => json_escape(&mut out, decoded),
                    _ => out.push_str(&line[at..at + width]),
                }
                // The rest of the escape (its first two characters are read).
                for _ in 2..width {
                    chars.next();
                }
            }
            c if is_unsafe(c) => json_escape(&mut out, c),
            c => out.push(c),
        }
    }
    out
}

/// The character a JSON `\uXXXX` escape at the start of `escape` stands
/// for (a surrogate pair's two escapes together), and the bytes it takes;
/// `None` (and 2 bytes, the backslash and `u`) if it is not well formed.
fn decode_unicode_escape(escape: &str) -> (Option<char>, usize) {
    let unit = |at: usize| {
        escape
            .get(at..at + 6)
            .filter(|e| e.starts_with("\\u"))
            .and_then(|e| u32::from_str_radix(&e[2..], 16).ok())
    };
    match unit(0) {
        None => (None, 2),
        Some(high @ 0xd800..=0xdbff) => match unit(6) {
            Some(low @ 0xdc00..=0xdfff) => {
                let code = 0x10000 + ((high - 0xd800) << 10) + (low - 0xdc00);
                (char::from_u32(code), 12)
            }
            _ => (None, 6),
        },
        Some(code) => (char::from_u32(code), 6),
    }
}

/// True for an unsafe character that `serde_json` writes raw.
fn is_unsafe_in_json(c: char) -> bool {
    is_unsafe(c) && c as u32 >= 0x20
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
pub(crate) mod tests {
    use super::*;

    /// One character of every class [`is_unsafe`] names, with its escape.
    pub(crate) const HOSTILE: &[(char, &str)] = &[
        ('\0', "\\u{0}"),
        ('\n', "\\n"),
        ('\r', "\\r"),
        ('\t', "\\t"),
        ('\u{7}', "\\u{7}"),
        ('\u{1b}', "\\u{1b}"),
        ('\u{7f}', "\\u{7f}"),
        ('\u{85}', "\\u{85}"),
        ('\u{9b}', "\\u{9b}"),
        ('\u{9d}', "\\u{9d}"),
        ('\u{2028}', "\\u{2028}"),
        ('\u{2029}', "\\u{2029}"),
        ('\u{061c}', "\\u{61c}"),
        ('\u{200e}', "\\u{200e}"),
        ('\u{200f}', "\\u{200f}"),
        ('\u{202a}', "\\u{202a}"),
        ('\u{202e}', "\\u{202e}"),
        ('\u{2066}', "\\u{2066}"),
        ('\u{2069}', "\\u{2069}"),
        ('\u{00ad}', "\\u{ad}"),
        ('\u{200b}', "\\u{200b}"),
        ('\u{2060}', "\\u{2060}"),
        ('\u{feff}', "\\u{feff}"),
        ('\u{fffa}', "\\u{fffa}"),
        ('\u{e0041}', "\\u{e0041}"),
    ];

    /// A string holding one of each, between letters, and an OSC 8
    /// hyperlink and a CSI sequence.
    pub(crate) fn hostile_text() -> String {
        let mut text: String = HOSTILE.iter().map(|(c, _)| format!("a{c}")).collect();
        text.push_str("\u{1b}]8;;https://evil.example/\u{7}click\u{1b}]8;;\u{7}\u{1b}[2J");
        text
    }

    #[test]
    fn control_characters_are_escaped_and_the_rest_is_kept() {
        assert_eq!(
            escape_controls("unknown field `a\nb\r\u{1b}[2J`, é ✓"),
            "unknown field `a\\nb\\r\\u{1b}[2J`, é ✓"
        );
        assert_eq!(escape_controls("plain"), "plain");
        // Scripts and emoji keep their joiners.
        assert_eq!(
            escape_controls("👩\u{200d}💻 ब्\u{200c}"),
            "👩\u{200d}💻 ब्\u{200c}"
        );
    }

    #[test]
    fn every_class_of_unsafe_character_has_a_visible_escape() {
        for (c, escape) in HOSTILE {
            assert!(is_unsafe(*c), "{c:?}");
            assert_eq!(escape_controls(&format!("x{c}y")), format!("x{escape}y"));
            assert_eq!(escape_of(*c).as_deref(), Some(*escape));
        }
        let escaped = escape_controls(&hostile_text());
        assert!(!escaped.chars().any(is_unsafe), "{escaped}");
        assert!(escaped.contains("\\u{1b}]8;;https://evil.example/\\u{7}click"));
    }

    #[test]
    fn a_cut_never_falls_inside_an_escape() {
        // "ab" then ESC (6 bytes escaped): a cut at 7 keeps "ab".
        assert_eq!(escape_controls_within("ab\u{1b}c", 7), ("ab".into(), true));
        assert_eq!(
            escape_controls_within("ab\u{1b}c", 8),
            ("ab\\u{1b}".into(), true)
        );
        assert_eq!(
            escape_controls_within("ab\u{1b}c", 9),
            ("ab\\u{1b}c".into(), false)
        );
        // A multi-byte character is never split either.
        assert_eq!(escape_controls_within("aé", 2), ("a".into(), true));
        for max in 0..64 {
            let (cut, _) = escape_controls_within(&hostile_text(), max);
            assert!(cut.len() <= max);
            assert!(escape_controls(&hostile_text()).starts_with(&cut));
            assert!(!cut.ends_with('\\') && !cut.chars().any(is_unsafe), "{cut}");
        }
    }

    #[test]
    fn quoted_values_escape_quotes_backslashes_and_unsafe_characters() {
        assert_eq!(
            quote("a \"b\" \\ c\n\u{202e}"),
            r#""a \"b\" \\ c\n\u{202e}""#
        );
    }

    #[test]
    fn json_strings_decode_to_the_visible_escapes_and_stay_json() {
        let hostile = hostile_text();
        let line = serde_json::json!({
            "fields": {"message": hostile, "detail": format!("\"{hostile}\\")},
            "n": 1,
        })
        .to_string();
        let escaped = escape_json_line(&line);
        assert!(!escaped.chars().any(is_unsafe), "{escaped}");
        let value: serde_json::Value = serde_json::from_str(&escaped).unwrap();
        assert_eq!(value["fields"]["message"], escape_controls(&hostile));
        assert_eq!(
            value["fields"]["detail"],
            format!("\"{}\\", escape_controls(&hostile))
        );
        assert_eq!(value["n"], 1);
        // Safe text, escaped quotes and backslashes and characters above
        // the BMP are kept as they are.
        let safe = serde_json::json!({"a": "é \"q\" \\ 👩‍💻 \u{10000}"}).to_string();
        assert_eq!(escape_json_line(&safe), safe);
        let surrogates = r#"{"a":"\ud83d\ude00 \u0022 \u00e9"}"#;
        assert_eq!(escape_json_line(surrogates), surrogates);
        // Escapes that decode to unsafe characters become visible ones.
        assert_eq!(
            escape_json_line(r#"{"a":"\udb40\udc41\u001b\u202E\f"}"#),
            r#"{"a":"\\u{e0041}\\u{1b}\\u{202e}\\u{c}"}"#
        );
    }
}
