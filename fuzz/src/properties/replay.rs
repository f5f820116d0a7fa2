//! Recorded-event files for `herald plugin replay`: [`parse_events`] on any
//! text.
//!
//! - It never panics.
//! - A refusal points at a line of the input (1 to the line the input ends
//!   on) and says what is wrong.
//! - Accepted events are in file order, each at a line of the input that
//!   holds the `{` its object starts with, and each object (and old object)
//!   has the string `apiVersion`, `kind` and `metadata.name` the parser
//!   promises the replayer.

use herald::replay::{RecordedEvent, parse_events};
use serde_json::Value;

/// Parses `data` (if UTF-8) as an event file.
pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let lines: Vec<&str> = text.split('\n').collect();
    match parse_events(text) {
        Ok(events) => {
            let mut previous_line = 1;
            for (index, event) in events.iter().enumerate() {
                check_event(text, &lines, index, event);
                assert!(
                    event.line >= previous_line,
                    "{text:?}: event #{index} at line {} comes before line {previous_line}",
                    event.line
                );
                previous_line = event.line;
            }
        }
        Err(err) => {
            assert!(
                (1..=lines.len()).contains(&err.line),
                "{text:?}: error at line {} of {}: {err}",
                err.line,
                lines.len()
            );
            assert!(!err.reason.is_empty(), "{text:?}: the error says nothing");
        }
    }
}

fn check_event(text: &str, lines: &[&str], index: usize, event: &RecordedEvent) {
    let line = event
        .line
        .checked_sub(1)
        .and_then(|at| lines.get(at))
        .unwrap_or_else(|| {
            panic!(
                "{text:?}: event #{index} is at line {}, outside the input",
                event.line
            )
        });
    assert!(
        line.contains('{'),
        "{text:?}: event #{index} is said to start at line {}, which holds no object: {line:?}",
        event.line
    );
    for (what, object) in [("object", Some(&event.object)), ("old", event.old.as_ref())] {
        if let Some(object) = object {
            assert!(
                has_identity(object),
                "{text:?}: event #{index}: its {what} lacks apiVersion, kind or metadata.name: {object}"
            );
        }
    }
}

/// What the replayer needs of an object to cache and key it.
fn has_identity(object: &Value) -> bool {
    object["apiVersion"].is_string()
        && object["kind"].is_string()
        && object["metadata"]["name"].is_string()
}
