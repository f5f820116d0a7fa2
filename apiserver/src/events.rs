//! `events.k8s.io/v1` Events: a second view of the core `v1` Events, stored once (as core
//! Events) and converted field by field on the way in and out, with the validation the real
//! API server applies to Events written through `events.k8s.io/v1`.

use serde_json::{Map, Value};

use crate::status::ApiError;

/// The group of the second view.
pub(crate) const GROUP: &str = "events.k8s.io";

/// `(events.k8s.io/v1 name, core/v1 name)` of every renamed field; the others (`metadata`,
/// `eventTime`, `series`, `reportingInstance`, `action`, `reason`, `related`, `type`) keep
/// their names.
const RENAMED: &[(&str, &str)] = &[
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

fn rename(obj: Value, api_version: &str, from_events: bool) -> Value {
    let Value::Object(map) = obj else {
        return obj;
    };
    let mut out = Map::new();
    for (k, v) in map {
        let renamed = RENAMED.iter().find_map(|(ev, core)| {
            let (from, to) = if from_events { (ev, core) } else { (core, ev) };
            (*from == k).then(|| to.to_string())
        });
        out.insert(renamed.unwrap_or(k), v);
    }
    out.insert("apiVersion".into(), Value::String(api_version.into()));
    out.insert("kind".into(), Value::String("Event".into()));
    Value::Object(out)
}

/// The `events.k8s.io/v1` string fields Go leaves out when empty (`omitempty`), which the
/// core Event writes even so (`reportingComponent` and `reportingInstance` have no
/// `omitempty` there).
const OMITTED_WHEN_EMPTY: &[&str] = &[
    "reportingController",
    "reportingInstance",
    "action",
    "reason",
    "note",
    "type",
];

/// A stored core `v1` Event as `events.k8s.io/v1` presents it: renamed, and without the
/// empty strings a real server's `events.k8s.io/v1` JSON leaves out.
pub(crate) fn to_events_v1(core: &Value) -> Value {
    let mut event = rename(core.clone(), "events.k8s.io/v1", false);
    if let Some(map) = event.as_object_mut() {
        map.retain(|k, v| !(OMITTED_WHEN_EMPTY.contains(&k.as_str()) && v == ""));
    }
    event
}

/// An `events.k8s.io/v1` Event as the core `v1` Event stored for it. The `apiVersion` must
/// be `events.k8s.io/v1` or absent.
pub(crate) fn to_core(event: Value) -> Result<Value, ApiError> {
    match event.get("apiVersion").and_then(Value::as_str) {
        None | Some("") | Some("events.k8s.io/v1") => {}
        Some(other) => {
            let name = crate::object::name(&event).unwrap_or_default().to_string();
            return Err(ApiError::invalid_causes(
                "Event",
                GROUP,
                &name,
                &[(
                    "apiVersion".into(),
                    "FieldValueInvalid",
                    format!("Invalid value: \"{other}\": must be events.k8s.io/v1"),
                )],
            ));
        }
    }
    Ok(rename(event, "v1", true))
}

/// Check an Event written through `events.k8s.io/v1` (in that form), as the real server does:
/// `eventTime`, `reportingController`, `reportingInstance`, `action` and `reason` are
/// required, `type` is `Normal` or `Warning`, the `deprecated*` fields must be unset on
/// create, `note` is at most 1 KiB and a `series` has a count of at least 2 and a
/// `lastObservedTime`.
pub(crate) fn validate(event: &Value, creating: bool) -> Result<(), ApiError> {
    let mut causes: Vec<(String, &'static str, String)> = Vec::new();
    let missing = |v: &Value| v.as_str().is_none_or(str::is_empty);
    if missing(&event["eventTime"]) {
        causes.push((
            "eventTime".into(),
            "FieldValueRequired",
            "Required value".into(),
        ));
    }
    match event["type"].as_str().unwrap_or("") {
        "Normal" | "Warning" => {}
        other => causes.push((
            "type".into(),
            "FieldValueInvalid",
            format!("Invalid value: \"{other}\": has invalid value: {other}"),
        )),
    }
    for field in [
        "reportingController",
        "reportingInstance",
        "action",
        "reason",
    ] {
        if missing(&event[field]) {
            causes.push((field.into(), "FieldValueRequired", "Required value".into()));
        }
    }
    if creating {
        for field in [
            "deprecatedFirstTimestamp",
            "deprecatedLastTimestamp",
            "deprecatedCount",
        ] {
            if !event[field].is_null() && event[field] != 0 {
                causes.push((
                    field.into(),
                    "FieldValueInvalid",
                    "Invalid value: \"\": needs to be unset".into(),
                ));
            }
        }
        let source = &event["deprecatedSource"];
        if !missing(&source["component"]) || !missing(&source["host"]) {
            causes.push((
                "deprecatedSource".into(),
                "FieldValueInvalid",
                "Invalid value: \"\": needs to be unset".into(),
            ));
        }
    }
    if event["note"].as_str().is_some_and(|n| n.len() > 1024) {
        causes.push((
            "note".into(),
            "FieldValueTooLong",
            "Too long: may not be more than 1024 bytes".into(),
        ));
    }
    let series = &event["series"];
    if series.is_object() {
        if series["count"].as_i64().unwrap_or(0) < 2 {
            causes.push((
                "series.count".into(),
                "FieldValueInvalid",
                format!(
                    "Invalid value: \"{}\": should be at least 2",
                    series["count"].as_i64().unwrap_or(0)
                ),
            ));
        }
        if missing(&series["lastObservedTime"]) {
            causes.push((
                "series.lastObservedTime".into(),
                "FieldValueRequired",
                "Required value".into(),
            ));
        }
    }
    if causes.is_empty() {
        return Ok(());
    }
    let name = crate::object::name(event).unwrap_or_default().to_string();
    Err(ApiError::invalid_causes("Event", GROUP, &name, &causes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_map_both_ways() {
        let ev = json!({
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "e", "namespace": "default"},
            "eventTime": "2026-01-01T00:00:00.000000Z",
            "regarding": {"kind": "Pod", "name": "p"},
            "note": "pulled", "reason": "Pulled", "type": "Normal", "action": "Pull",
            "reportingController": "kubelet", "reportingInstance": "node-a",
            "series": {"count": 2, "lastObservedTime": "2026-01-01T00:00:01.000000Z"}
        });
        validate(&ev, true).unwrap();
        let core = to_core(ev.clone()).unwrap();
        assert_eq!(core["apiVersion"], "v1");
        assert_eq!(core["involvedObject"]["name"], "p");
        assert_eq!(core["message"], "pulled");
        assert_eq!(core["reportingComponent"], "kubelet");
        assert_eq!(core["series"]["count"], 2);
        assert!(core.get("note").is_none());
        assert_eq!(to_events_v1(&core), ev);
    }

    #[test]
    fn empty_strings_the_core_event_writes_are_left_out_of_the_view() {
        let core = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"},
                          "reason": "Started", "message": "",
                          "reportingComponent": "", "reportingInstance": ""});
        assert_eq!(
            to_events_v1(&core),
            json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"},
                   "reason": "Started"})
        );
    }

    #[test]
    fn required_fields_are_checked() {
        let err =
            validate(&json!({"metadata": {"name": "e"}, "type": "Normal"}), true).unwrap_err();
        assert_eq!(err.code, 422);
        let causes = err.details.unwrap()["causes"].clone();
        let fields: Vec<&str> = causes
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["field"].as_str().unwrap())
            .collect();
        assert_eq!(
            fields,
            [
                "eventTime",
                "reportingController",
                "reportingInstance",
                "action",
                "reason"
            ]
        );
    }
}
