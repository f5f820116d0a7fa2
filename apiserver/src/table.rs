//! Server-side printing: `meta.k8s.io/v1` `Table` responses, as `kubectl get` asks for.

use serde_json::{Value, json};

use crate::object;
use crate::registry::ResourceType;

/// What each table row carries in `object` (the `includeObject` parameter).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IncludeObject {
    /// No object.
    None,
    /// `PartialObjectMetadata` (the default).
    Metadata,
    /// The full object.
    Object,
}

impl IncludeObject {
    /// From the `includeObject` query parameter.
    pub fn from_param(p: Option<&str>) -> Self {
        match p {
            Some("None") => IncludeObject::None,
            Some("Object") => IncludeObject::Object,
            _ => IncludeObject::Metadata,
        }
    }
}

fn column(name: &str, ty: &str, format: &str, description: &str) -> Value {
    json!({"name": name, "type": ty, "format": format, "description": description, "priority": 0})
}

fn columns(rt: &ResourceType) -> Vec<Value> {
    let name = column(
        "Name",
        "string",
        "name",
        "Name must be unique within a namespace.",
    );
    let age = column(
        "Age",
        "string",
        "",
        "CreationTimestamp is a timestamp representing the server time when this object was created.",
    );
    match (rt.id.group.as_str(), rt.id.plural.as_str()) {
        ("", "pods") => vec![
            name,
            column(
                "Ready",
                "string",
                "",
                "The aggregate readiness state of this pod for accepting traffic.",
            ),
            column(
                "Status",
                "string",
                "",
                "The aggregate status of the containers in this pod.",
            ),
            column(
                "Restarts",
                "string",
                "",
                "The number of times the containers in this pod have been restarted.",
            ),
            age,
        ],
        ("", "namespaces") => vec![
            name,
            column("Status", "string", "", "The status of the namespace"),
            age,
        ],
        ("apps", "deployments") => vec![
            name,
            column("Ready", "string", "", "Number of the pod with ready state"),
            column(
                "Up-to-date",
                "string",
                "",
                "Total number of non-terminated pods targeted by this deployment that have the desired template spec.",
            ),
            column(
                "Available",
                "string",
                "",
                "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.",
            ),
            age,
        ],
        ("" | "events.k8s.io", "events") => vec![
            column(
                "Last Seen",
                "string",
                "",
                "The last time the event was observed.",
            ),
            column(
                "Type",
                "string",
                "",
                "Type of this event (Normal, Warning).",
            ),
            column("Reason", "string", "", "The reason for the event."),
            column("Object", "string", "", "The object the event is about."),
            column(
                "Message",
                "string",
                "",
                "A human-readable description of the event.",
            ),
        ],
        ("networking.k8s.io", "networkpolicies") => vec![
            name,
            column(
                "Pod-Selector",
                "string",
                "",
                "Selects the pods to which this NetworkPolicy object applies.",
            ),
            age,
        ],
        ("", "resourcequotas") => vec![
            name,
            age,
            column("Request", "string", "", "Request of the resource quota."),
            column("Limit", "string", "", "Limit of the resource quota."),
        ],
        _ => vec![name, age],
    }
}

/// `key=value,…` of a label selector's `matchLabels` and `matchExpressions`, `<none>` if empty.
fn selector_text(sel: &Value) -> String {
    let mut parts: Vec<String> = sel["matchLabels"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                .collect()
        })
        .unwrap_or_default();
    for e in sel["matchExpressions"].as_array().into_iter().flatten() {
        let key = e["key"].as_str().unwrap_or_default();
        let values: Vec<&str> = e["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        parts.push(match e["operator"].as_str().unwrap_or_default() {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            _ => format!("!{key}"),
        });
    }
    if parts.is_empty() {
        "<none>".into()
    } else {
        parts.join(",")
    }
}

/// `cpu: 0/1, pods: 2/10` for the quota's hard limits whose names start (`limits.`) or not.
fn quota_text(obj: &Value, limits: bool) -> String {
    let Some(hard) = obj["spec"]["hard"].as_object() else {
        return String::new();
    };
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        Value::Null => "0".into(),
        other => other.to_string(),
    };
    hard.iter()
        .filter(|(k, _)| k.starts_with("limits.") == limits)
        .map(|(k, v)| format!("{k}: {}/{}", text(&obj["status"]["used"][k]), text(v)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `HumanDuration`-style age: `42s`, `5m3s`, `17m`, `3h4m`, `20h`, `3d4h`, `12d`, `2y`.
pub(crate) fn human_age(seconds: i64) -> String {
    let s = seconds.max(0);
    let (m, h, d) = (s / 60, s / 3600, s / 86400);
    if s < 120 {
        format!("{s}s")
    } else if m < 10 {
        format!("{m}m{}s", s % 60)
    } else if m < 180 {
        format!("{m}m")
    } else if h < 8 {
        format!("{h}h{}m", m % 60)
    } else if h < 48 {
        format!("{h}h")
    } else if h < 192 {
        format!("{d}d{}h", h % 24)
    } else if d < 365 * 2 {
        format!("{d}d")
    } else {
        format!("{}y", d / 365)
    }
}

fn cells(rt: &ResourceType, obj: &Value) -> Vec<Value> {
    let name = json!(object::name(obj).unwrap_or_default());
    let age = json!(
        object::meta_str(obj, "creationTimestamp")
            .and_then(object::age_seconds)
            .map(human_age)
            .unwrap_or_else(|| "<unknown>".into())
    );
    let int = |v: &Value| v.as_i64().unwrap_or(0);
    match (rt.id.group.as_str(), rt.id.plural.as_str()) {
        ("", "pods") => {
            let containers = obj["spec"]["containers"].as_array().map_or(0, |c| c.len());
            let statuses = obj["status"]["containerStatuses"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let ready = statuses
                .iter()
                .filter(|s| s["ready"].as_bool() == Some(true))
                .count();
            let restarts: i64 = statuses.iter().map(|s| int(&s["restartCount"])).sum();
            let status = if object::meta_str(obj, "deletionTimestamp").is_some() {
                "Terminating".to_string()
            } else {
                obj["status"]["reason"]
                    .as_str()
                    .or(obj["status"]["phase"].as_str())
                    .unwrap_or("Pending")
                    .to_string()
            };
            vec![
                name,
                json!(format!("{ready}/{containers}")),
                json!(status),
                json!(restarts.to_string()),
                age,
            ]
        }
        ("", "namespaces") => vec![
            name,
            json!(obj["status"]["phase"].as_str().unwrap_or("Active")),
            age,
        ],
        ("apps", "deployments") => {
            let st = &obj["status"];
            let desired = obj["spec"]["replicas"].as_i64().unwrap_or(1);
            vec![
                name,
                json!(format!("{}/{desired}", int(&st["readyReplicas"]))),
                json!(int(&st["updatedReplicas"])),
                json!(int(&st["availableReplicas"])),
                age,
            ]
        }
        ("" | "events.k8s.io", "events") => {
            let last_seen = [
                &obj["series"]["lastObservedTime"],
                &obj["lastTimestamp"],
                &obj["deprecatedLastTimestamp"],
                &obj["eventTime"],
            ]
            .into_iter()
            .find_map(Value::as_str)
            .and_then(object::age_seconds)
            .map(human_age)
            .unwrap_or_else(|| "<unknown>".into());
            let regarding = if obj["involvedObject"].is_object() {
                &obj["involvedObject"]
            } else {
                &obj["regarding"]
            };
            let object = format!(
                "{}/{}",
                regarding["kind"]
                    .as_str()
                    .unwrap_or_default()
                    .to_lowercase(),
                regarding["name"].as_str().unwrap_or_default()
            );
            let message = obj["message"].as_str().or(obj["note"].as_str());
            vec![
                json!(last_seen),
                json!(obj["type"].as_str().unwrap_or_default()),
                json!(obj["reason"].as_str().unwrap_or_default()),
                json!(object),
                json!(message.unwrap_or_default()),
            ]
        }
        ("networking.k8s.io", "networkpolicies") => {
            vec![name, json!(selector_text(&obj["spec"]["podSelector"])), age]
        }
        ("", "resourcequotas") => vec![
            name,
            age,
            json!(quota_text(obj, false)),
            json!(quota_text(obj, true)),
        ],
        _ => vec![name, age],
    }
}

/// One table row for an object.
pub(crate) fn row(rt: &ResourceType, obj: &Value, include: IncludeObject) -> Value {
    let mut row = json!({"cells": cells(rt, obj)});
    match include {
        IncludeObject::None => {}
        IncludeObject::Metadata => {
            row["object"] = json!({
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": obj.get("metadata").cloned().unwrap_or_else(|| json!({})),
            });
        }
        IncludeObject::Object => row["object"] = obj.clone(),
    }
    row
}

/// A Table of rows.
pub(crate) fn table(
    rt: &ResourceType,
    rows: Vec<Value>,
    rv: Option<u64>,
    cont: Option<&str>,
) -> Value {
    let mut metadata = json!({});
    if let Some(rv) = rv {
        metadata["resourceVersion"] = json!(rv.to_string());
    }
    if let Some(c) = cont {
        metadata["continue"] = json!(c);
    }
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": columns(rt),
        "rows": rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_like_kubectls() {
        assert_eq!(human_age(5), "5s");
        assert_eq!(human_age(130), "2m10s");
        assert_eq!(human_age(1200), "20m");
        assert_eq!(human_age(4 * 3600 + 120), "4h2m");
        assert_eq!(human_age(20 * 3600), "20h");
        assert_eq!(human_age(3 * 86400 + 3600), "3d1h");
        assert_eq!(human_age(30 * 86400), "30d");
        assert_eq!(human_age(3 * 365 * 86400), "3y");
    }
}
