//! Helpers for JSON objects: metadata access, server-assigned identities and timestamps.

use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Map, Value};

/// `metadata` of an object, if it is a map.
pub(crate) fn meta(obj: &Value) -> Option<&Map<String, Value>> {
    obj.get("metadata").and_then(Value::as_object)
}

/// `metadata` of an object, created if missing. `obj` must be a JSON object.
pub(crate) fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
    let map = obj.as_object_mut().expect("objects are JSON maps");
    let m = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !m.is_object() {
        *m = Value::Object(Map::new());
    }
    m.as_object_mut().expect("just made a map")
}

/// A string field of `metadata`.
pub(crate) fn meta_str<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    meta(obj).and_then(|m| m.get(key)).and_then(Value::as_str)
}

/// `metadata.name`.
pub(crate) fn name(obj: &Value) -> Option<&str> {
    meta_str(obj, "name")
}

/// `metadata.namespace`.
pub(crate) fn namespace(obj: &Value) -> Option<&str> {
    meta_str(obj, "namespace")
}

/// `metadata.resourceVersion`.
pub(crate) fn resource_version(obj: &Value) -> Option<&str> {
    meta_str(obj, "resourceVersion")
}

/// `metadata.uid`.
pub(crate) fn uid(obj: &Value) -> Option<&str> {
    meta_str(obj, "uid")
}

/// `metadata.labels`.
pub(crate) fn labels(obj: &Value) -> Option<&Map<String, Value>> {
    meta(obj)
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
}

/// The uids in `metadata.ownerReferences`.
pub(crate) fn owner_uids(obj: &Value) -> Vec<String> {
    meta(obj)
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
        .map(|refs| {
            refs.iter()
                .filter_map(|r| r.get("uid").and_then(Value::as_str))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Set `metadata.resourceVersion`.
pub(crate) fn set_resource_version(obj: &mut Value, rv: u64) {
    meta_mut(obj).insert("resourceVersion".into(), Value::String(rv.to_string()));
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// 64 random bits (from the standard library's randomly keyed hasher).
fn random_u64() -> u64 {
    let mut h = std::hash::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    h.finish()
}

/// A random version-4 UUID, formatted as the API server does.
pub(crate) fn new_uid() -> String {
    let hi = random_u64();
    let lo = random_u64();
    let hi = (hi & 0xffff_ffff_ffff_0fff) | 0x0000_0000_0000_4000;
    let lo = (lo & 0x3fff_ffff_ffff_ffff) | 0x8000_0000_0000_0000;
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        hi >> 32,
        (hi >> 16) & 0xffff,
        hi & 0xffff,
        lo >> 48,
        lo & 0xffff_ffff_ffff
    )
}

/// A 5-character suffix for `generateName`, from the alphabet the API server uses.
pub(crate) fn name_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut r = random_u64();
    (0..5)
        .map(|_| {
            let c = ALPHABET[(r % ALPHABET.len() as u64) as usize] as char;
            r /= ALPHABET.len() as u64;
            c
        })
        .collect()
}

/// The current time in RFC 3339 with second precision (`2024-05-01T12:00:00Z`).
pub(crate) fn now_rfc3339() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// Seconds since an RFC 3339 timestamp, if it parses.
pub(crate) fn age_seconds(timestamp: &str) -> Option<i64> {
    let t: jiff::Timestamp = timestamp.parse().ok()?;
    Some(jiff::Timestamp::now().as_second() - t.as_second())
}

/// The object without `metadata` and `status`: what `metadata.generation` tracks.
pub(crate) fn spec_part_eq(a: &Value, b: &Value) -> bool {
    match (a.as_object(), b.as_object()) {
        (Some(a), Some(b)) => {
            let relevant = |m: &Map<String, Value>| -> usize {
                m.keys()
                    .filter(|k| !matches!(k.as_str(), "metadata" | "status"))
                    .count()
            };
            relevant(a) == relevant(b)
                && a.iter()
                    .filter(|(k, _)| !matches!(k.as_str(), "metadata" | "status"))
                    .all(|(k, v)| b.get(k) == Some(v))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn uids_look_like_uuids_and_differ() {
        let a = new_uid();
        let b = new_uid();
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
    }

    #[test]
    fn timestamps_are_rfc3339_seconds() {
        let t = now_rfc3339();
        assert_eq!(t.len(), 20, "{t}");
        assert!(t.ends_with('Z'));
        assert!(age_seconds(&t).unwrap() <= 1);
    }

    #[test]
    fn spec_comparison_ignores_metadata_and_status() {
        let a = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"x": 1}, "status": {"y": 1}});
        let b = json!({"metadata": {}, "spec": {"x": 1}, "status": {"y": 2}});
        let c = json!({"metadata": {}, "spec": {"x": 2}});
        assert!(spec_part_eq(&a, &b));
        assert!(!spec_part_eq(&a, &c));
    }
}
