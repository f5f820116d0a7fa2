//! The benchmark handlers compiled natively, as an in-process listener would
//! run them: the same work as the `noop`, `json-meta` and `typed-pod`
//! fixtures, on the JSON text the host holds.

use crate::fixtures::Fixture;
use k8s_openapi::api::core::v1::Pod;
use serde::Deserialize;
use std::hint::black_box;

/// The part of an object `json-meta` reads.
#[derive(Deserialize)]
#[allow(dead_code, reason = "decoded only to measure decoding")]
struct Object {
    metadata: Meta,
}

/// The `metadata` fields `json-meta` reads; serde skips the rest.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code, reason = "decoded only to measure decoding")]
struct Meta {
    name: String,
    namespace: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
}

/// Handles one added object as `fixture` does, natively.
pub fn on_add(fixture: Fixture, json: &str) {
    match fixture {
        Fixture::Noop | Fixture::Floor | Fixture::NamedNoop | Fixture::LatencyProbe => {
            black_box(json);
        }
        Fixture::JsonMeta => {
            black_box(serde_json::from_str::<Object>(json).expect("bench objects decode"));
        }
        Fixture::TypedPod => {
            black_box(serde_json::from_str::<Pod>(json).expect("bench Pods decode"));
        }
        Fixture::InfiniteLoop | Fixture::Blocker => {
            unreachable!("{} never returns: it has no native twin", fixture.label())
        }
    }
}
