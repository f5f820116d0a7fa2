//! The recorded-event file format read by `herald plugin replay`.
//!
//! A sequence of JSON objects (one per line, or pretty-printed one after the
//! other), each:
//!
//! ```json
//! {"type": "add", "object": {...}}
//! {"type": "update", "old": {...}, "object": {...}}
//! {"type": "delete", "object": {...}, "finalStateUnknown": true}
//! ```
//!
//! `type` may also be a watch event type (`ADDED`, `MODIFIED`, `DELETED`), so
//! the output of `kubectl get pods -w --output-watch-events -o json` replays
//! as is. `old` is optional on updates: the replayer then uses the state it
//! last saw for that object. Optional flags: `initial` (is-initial-list),
//! `resync` (is-resync), `finalStateUnknown`.

use serde::Deserialize;
use serde_json::Value;

/// What happened to the object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// First seen.
    Add,
    /// Changed.
    Update,
    /// Removed.
    Delete,
}

impl EventType {
    /// Lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Add => "add",
            EventType::Update => "update",
            EventType::Delete => "delete",
        }
    }
}

/// One recorded event.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedEvent {
    /// 1-based line where the event starts in its file.
    pub line: usize,
    /// What happened.
    pub kind: EventType,
    /// The (new) object.
    pub object: Value,
    /// The old object of an update, when recorded.
    pub old: Option<Value>,
    /// Deliver as part of an initial list.
    pub initial: bool,
    /// Deliver as a resync.
    pub resync: bool,
    /// Deliver as a tombstone.
    pub final_state_unknown: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawEvent {
    #[serde(rename = "type")]
    kind: String,
    object: Value,
    #[serde(default)]
    old: Option<Value>,
    #[serde(default)]
    initial: bool,
    #[serde(default)]
    resync: bool,
    #[serde(default)]
    final_state_unknown: bool,
}

/// A malformed event file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct EventParseError {
    /// 1-based line of the offending event.
    pub line: usize,
    /// What is wrong.
    pub reason: String,
}

/// Parses a whole event file.
pub fn parse_events(text: &str) -> Result<Vec<RecordedEvent>, EventParseError> {
    let mut events = Vec::new();
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    loop {
        let start = stream.byte_offset();
        let value = match stream.next() {
            None => break,
            Some(Ok(value)) => value,
            Some(Err(err)) => {
                return Err(EventParseError {
                    line: err.line(),
                    reason: format!("not valid JSON: {err}"),
                });
            }
        };
        let line = line_of(text, start);
        events.push(parse_event(value, line)?);
    }
    Ok(events)
}

fn line_of(text: &str, offset: usize) -> usize {
    let skipped = text[offset..].len() - text[offset..].trim_start().len();
    text[..offset + skipped]
        .bytes()
        .filter(|b| *b == b'\n')
        .count()
        + 1
}

fn parse_event(value: Value, line: usize) -> Result<RecordedEvent, EventParseError> {
    let fail = |reason: String| EventParseError { line, reason };
    let raw: RawEvent = serde_json::from_value(value).map_err(|e| {
        fail(format!("{e}; expected {{\"type\":\"add\"|\"update\"|\"delete\",\"object\":{{…}},\"old\":{{…}}}}"))
    })?;
    let kind = match raw.kind.as_str() {
        "add" | "ADDED" => EventType::Add,
        "update" | "MODIFIED" => EventType::Update,
        "delete" | "DELETED" => EventType::Delete,
        other => {
            return Err(fail(format!(
                "unknown event type {other:?}: use add, update or delete"
            )));
        }
    };
    for (what, object) in [("object", Some(&raw.object)), ("old", raw.old.as_ref())] {
        if let Some(object) = object {
            check_object(object).map_err(|reason| fail(format!("{what}: {reason}")))?;
        }
    }
    Ok(RecordedEvent {
        line,
        kind,
        object: raw.object,
        old: raw.old,
        initial: raw.initial,
        resync: raw.resync,
        final_state_unknown: raw.final_state_unknown,
    })
}

/// Why an event's `object` or `old` is not a Kubernetes object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
enum ObjectError {
    /// Not a JSON object at all.
    #[error("is not a JSON object")]
    NotAnObject,
    /// The field held here is missing or not a string.
    #[error("has no string {0:?}")]
    NoString(&'static str),
    /// No `metadata.name` string.
    #[error("has no metadata.name")]
    NoName,
}

fn check_object(object: &Value) -> Result<(), ObjectError> {
    let map = object.as_object().ok_or(ObjectError::NotAnObject)?;
    for field in ["apiVersion", "kind"] {
        if !map.get(field).is_some_and(Value::is_string) {
            return Err(ObjectError::NoString(field));
        }
    }
    let has_name = map
        .get("metadata")
        .and_then(|m| m.get("name"))
        .is_some_and(Value::is_string);
    if !has_name {
        return Err(ObjectError::NoName);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const POD: &str =
        r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","namespace":"ns"}}"#;

    #[test]
    fn reads_json_lines_and_pretty_printed_watch_events() {
        let text = format!(
            "{{\"type\":\"add\",\"object\":{POD}}}\n\n{{\n  \"type\": \"MODIFIED\",\n  \"object\": {POD}\n}}\n{{\"type\":\"delete\",\"object\":{POD},\"finalStateUnknown\":true}}\n"
        );
        let events = parse_events(&text).unwrap();
        let kinds: Vec<_> = events.iter().map(|e| (e.kind, e.line)).collect();
        assert_eq!(
            kinds,
            [
                (EventType::Add, 1),
                (EventType::Update, 3),
                (EventType::Delete, 7)
            ]
        );
        assert!(events[2].final_state_unknown);
    }

    #[test]
    fn errors_name_the_line_and_the_problem() {
        let text = format!(
            "{{\"type\":\"add\",\"object\":{POD}}}\n{{\"type\":\"poke\",\"object\":{POD}}}\n"
        );
        let err = parse_events(&text).unwrap_err();
        assert_eq!(err.line, 2);
        assert!(err.reason.contains("unknown event type \"poke\""), "{err}");

        let err = parse_events("{\"type\":\"add\",\"object\":{\"kind\":\"Pod\"}}").unwrap_err();
        assert!(
            err.to_string()
                .contains("object: has no string \"apiVersion\""),
            "{err}"
        );

        let err = parse_events("{\"type\":\"add\",\n\"object\":").unwrap_err();
        assert!(err.reason.starts_with("not valid JSON"), "{err}");
    }
}
