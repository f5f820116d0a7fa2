//! What `herald plugin replay` shows of an Event a plugin publishes: the
//! object it is about, beside the create call that carries it.

/// What an Event a plugin creates is about: `Kind namespace/name` of its
/// `regarding` object, escaped for one line, given the `kind` a call wrote
/// and the `body` it sent; `None` for any other call.
pub fn about(kind: &str, body: Option<&str>) -> Option<String> {
    if kind != "Event" {
        return None;
    }
    let body: serde_json::Value = serde_json::from_str(body?).ok()?;
    let regarding = body.get("regarding")?;
    let field = |name: &str| regarding.get(name).and_then(|v| v.as_str()).unwrap_or("");
    let kind = crate::text::escape_controls(field("kind"));
    let name = crate::text::escape_controls(field("name"));
    Some(match field("namespace") {
        "" => format!("{kind} {name}"),
        namespace => format!("{kind} {}/{name}", crate::text::escape_controls(namespace)),
    })
}
