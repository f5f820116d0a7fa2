//! The transcoder against answers recorded from a real kube-apiserver
//! (v1.36.3): each `testdata/<name>.pb` is the protobuf answer to a request
//! whose JSON answer is `testdata/<name>.json`. The objects were made to
//! cover the awkward cases: quantities, int-or-strings, inline volume
//! sources, bytes, micro-times, raw extensions, HTML and control
//! characters in strings, empty strings, zero numbers and absent pointers.

use super::*;
use serde_json::Value;
use std::path::Path;

fn testdata(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src/informer/protobuf/testdata")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn transcoded(bytes: &[u8], skip_managed_fields: bool) -> String {
    let mut out = String::new();
    Transcoder::new(skip_managed_fields)
        .object(bytes, &mut out)
        .unwrap_or_else(|e| panic!("{e}"));
    out
}

const RECORDED: [&str; 27] = [
    "pods",
    "configmaps",
    "secrets",
    "services",
    "events",
    "resourcequotas",
    "namespaces",
    "nodes",
    "deployments",
    "controllerrevisions",
    "cronjobs",
    "networkpolicies",
    "leases",
    "events.k8s.io",
    "poddisruptionbudgets",
    "horizontalpodautoscalers",
    "roles",
    "clusterroles",
    "endpointslices",
    "priorityclasses",
    "storageclasses",
    "flowschemas",
    // Claim templates with and without `kind` and `apiVersion` as written:
    // the server's JSON has both for each, its protobuf neither.
    "statefulsets",
    "notfound",
    // A binaryData entry with an empty value: `""` in the server's JSON,
    // no value on the wire (found by the fuzzed round trips).
    "binarydata",
    // A CSINode of this 1.36 server: no `status`, which 1.37's type (this
    // Herald's schema) has and Go always writes (found by protobuf-diff.sh).
    "csinodes",
    // An empty list: no items on the wire, `"items":[]` in JSON.
    "empty-configmaps",
];

#[test]
fn every_recorded_answer_reads_as_the_json_the_server_sent() {
    for name in RECORDED {
        let expected = String::from_utf8(testdata(&format!("{name}.json"))).unwrap();
        let json = transcoded(&testdata(&format!("{name}.pb")), false);
        let same: Value =
            serde_json::from_str(&json).unwrap_or_else(|e| panic!("{name}: {e}\n{json}"));
        let server: Value = serde_json::from_str(&expected).unwrap();
        assert_eq!(same, server, "{name}");
        // Byte for byte, too: the same field order, escapes and formats.
        assert_eq!(json, expected.trim_end(), "{name}");
    }
}

#[test]
fn managed_fields_are_left_out_when_asked() {
    let json = transcoded(&testdata("pods.pb"), true);
    let list: Value = serde_json::from_str(&json).unwrap();
    let pod = &list["items"][0];
    assert_eq!(pod["metadata"]["name"], "rich");
    assert!(pod["metadata"].get("managedFields").is_none(), "{pod}");
    let full: Value = serde_json::from_str(&transcoded(&testdata("pods.pb"), false)).unwrap();
    assert!(full["items"][0]["metadata"]["managedFields"].is_array());
}

/// The frames of a recorded protobuf watch (`watch-configmaps.pb`): a
/// streaming list of namespace `fx`'s ConfigMaps, its bookmark, then a
/// ConfigMap created, labelled and deleted.
fn frames(bytes: &[u8]) -> Vec<&[u8]> {
    let mut frames = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        let len = u32::from_be_bytes(rest[..4].try_into().unwrap()) as usize;
        frames.push(&rest[4..4 + len]);
        rest = &rest[4 + len..];
    }
    frames
}

#[test]
fn a_watch_frame_reads_as_the_line_a_json_watch_sends() {
    let transcoder = Transcoder::new(false);
    let lines: Vec<Value> = frames(&testdata("watch-configmaps.pb"))
        .into_iter()
        .map(|frame| {
            let mut out = String::new();
            transcoder.watch_event(frame, &mut out).unwrap();
            serde_json::from_str(&out).unwrap()
        })
        .collect();
    let types: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["ADDED", "BOOKMARK", "ADDED", "MODIFIED", "DELETED"]);
    // The streamed ConfigMap is the listed one, with its kind and apiVersion.
    let listed: Value = serde_json::from_slice(&testdata("configmaps.json")).unwrap();
    let bin = lines
        .iter()
        .find(|l| l["object"]["metadata"]["name"] == "bin")
        .unwrap();
    let mut expected = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["metadata"]["name"] == "bin")
        .unwrap()
        .clone();
    expected["kind"] = "ConfigMap".into();
    expected["apiVersion"] = "v1".into();
    assert_eq!(bin["object"], expected);
    assert_eq!(
        lines[1]["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    assert_eq!(lines[3]["object"]["metadata"]["labels"]["l"], "2");
}

/// Bytes of a protobuf field (length-delimited) for hand-made messages.
fn field(number: u8, bytes: &[u8]) -> Vec<u8> {
    let mut out = vec![number << 3 | 2, bytes.len() as u8];
    out.extend_from_slice(bytes);
    out
}

fn enveloped(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let type_meta = [field(1, api_version.as_bytes()), field(2, kind.as_bytes())].concat();
    [b"k8s\0".to_vec(), field(1, &type_meta), field(2, raw)].concat()
}

#[test]
fn a_watch_error_carries_the_servers_status() {
    // Status: message (3) "too old", reason (4) "Expired", code (6) 410.
    let status = [
        field(3, b"too old"),
        field(4, b"Expired"),
        vec![6 << 3, 0x9a, 0x03],
    ]
    .concat();
    let frame = [
        field(1, b"ERROR"),
        field(2, &field(1, &enveloped("v1", "Status", &status))),
    ]
    .concat();
    let mut out = String::new();
    Transcoder::new(true).watch_event(&frame, &mut out).unwrap();
    let line: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(line["type"], "ERROR");
    assert_eq!(line["object"]["code"], 410);
    assert_eq!(line["object"]["reason"], "Expired");
    assert_eq!(line["object"]["kind"], "Status");
}

#[test]
fn a_binary_data_entry_without_a_value_is_an_empty_string_as_go_decodes_it() {
    // ConfigMap.binaryData (field 3): one entry with a key and no value,
    // one with an empty value, one with bytes. Go decodes each value from
    // `[]byte{}`, so the server's JSON has `""` for the first two.
    let entries = [
        field(1, &field(1, b"cm")),
        field(3, &field(1, b"absent")),
        field(3, &[field(1, b"empty"), field(2, b"")].concat()),
        field(3, &[field(1, b"full"), field(2, b"hi")].concat()),
    ]
    .concat();
    let mut out = String::new();
    Transcoder::new(true)
        .object(&enveloped("v1", "ConfigMap", &entries), &mut out)
        .unwrap();
    assert_eq!(
        out,
        r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cm"},"binaryData":{"absent":"","empty":"","full":"aGk="}}"#
    );
}

#[test]
fn a_field_an_older_server_does_not_have_is_not_written() {
    // A CSINode of Kubernetes 1.36: metadata and spec, no status (1.37 added
    // `status`, a struct Go writes even when empty, and its protobuf
    // always carries it). The 1.36 server's JSON has no status either.
    let csinode = [
        field(1, &field(1, b"node-a")),
        field(
            2,
            &field(1, &[field(1, b"csi.example.com"), field(2, b"n1")].concat()),
        ),
    ]
    .concat();
    let mut out = String::new();
    Transcoder::new(true)
        .object(
            &enveloped("storage.k8s.io/v1", "CSINode", &csinode),
            &mut out,
        )
        .unwrap();
    assert_eq!(
        out,
        r#"{"kind":"CSINode","apiVersion":"storage.k8s.io/v1","metadata":{"name":"node-a"},"spec":{"drivers":[{"name":"csi.example.com","nodeID":"n1","topologyKeys":null}]}}"#
    );
}

#[test]
fn a_field_the_schema_lacks_is_an_error_not_dropped() {
    // A ConfigMap with field 15, which no ConfigMap has had.
    let bytes = enveloped("v1", "ConfigMap", &field(15, b"new"));
    let err = Transcoder::new(true)
        .object(&bytes, &mut String::new())
        .unwrap_err();
    assert!(
        matches!(&err, TranscodeError::UnknownField { message, number: 15, .. } if message.ends_with("core/v1.ConfigMap")),
        "{err}"
    );
}

#[test]
fn kinds_outside_the_schema_and_broken_bytes_are_refused() {
    let widget = enveloped("example.com/v1", "Widget", b"");
    assert!(matches!(
        Transcoder::new(true).object(&widget, &mut String::new()),
        Err(TranscodeError::UnknownKind { .. })
    ));
    assert!(!Transcoder::new(true).knows("example.com/v1", "Widget"));
    assert!(Transcoder::new(true).knows("apps/v1", "Deployment"));
    for broken in [&b"{\"kind\":\"Pod\"}"[..], b"k8s\0\x12\x05ab"] {
        assert!(matches!(
            Transcoder::new(true).object(broken, &mut String::new()),
            Err(TranscodeError::Malformed(_))
        ));
    }
    // A ConfigMap whose `data` (field 2, a map) arrives as a number.
    let bytes = enveloped("v1", "ConfigMap", &[2 << 3, 1]);
    assert!(matches!(
        Transcoder::new(true).object(&bytes, &mut String::new()),
        Err(TranscodeError::WireType { .. })
    ));
}

#[test]
fn damaged_protobuf_is_refused_or_read_as_json_never_a_panic() {
    // Every prefix and every single-byte change of two recorded answers:
    // the transcoder must refuse them or write JSON that parses.
    let transcoder = Transcoder::new(true);
    let mut outcomes = [0usize; 2];
    for name in ["configmaps", "pods"] {
        let recorded = testdata(&format!("{name}.pb"));
        let mut damaged: Vec<Vec<u8>> = (0..recorded.len())
            .map(|end| recorded[..end].to_vec())
            .collect();
        for at in 0..recorded.len() {
            for flip in [0x01, 0x80, 0xff] {
                let mut bytes = recorded.clone();
                bytes[at] ^= flip;
                damaged.push(bytes);
            }
        }
        for bytes in damaged {
            let mut out = String::new();
            match transcoder.object(&bytes, &mut out) {
                Ok(()) => {
                    outcomes[0] += 1;
                    if let Err(e) = serde_json::from_str::<Value>(&out) {
                        panic!("{name}: wrote JSON that does not parse ({e}): {out}");
                    }
                }
                Err(_) => outcomes[1] += 1,
            }
        }
    }
    // Both happen: a changed string byte still transcodes, a cut one does not.
    assert!(outcomes[0] > 0 && outcomes[1] > 0, "{outcomes:?}");
}

#[test]
fn a_difference_names_the_first_byte_and_shows_both_sides_around_it() {
    assert_eq!(difference(r#"{"a":1}"#, r#"{"a":1}"#), None);
    let said = difference(r#"{"a":1,"b":"x"}"#, r#"{"a":1,"b":"y"}"#).unwrap();
    assert!(said.starts_with("differs at byte 12\n"), "{said}");
    assert!(said.contains(r#"herald:   …{"a":1,"b":"x"}…"#), "{said}");
    assert!(said.contains(r#"expected: …{"a":1,"b":"y"}…"#), "{said}");
    // One a prefix of the other: the difference is where the shorter ends,
    // and a window never splits a character.
    let said = difference("ééé", "ééé!").unwrap();
    assert!(said.starts_with("differs at byte 6\n"), "{said}");
}
