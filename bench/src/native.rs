//! The benchmark handlers compiled natively, as an in-process listener would
//! run them: the same work as the `noop`, `json-meta`, `typed-pod` and
//! `pod-view` fixtures, on the JSON text the host holds.

use crate::fixtures::Fixture;
use herald_sdk::view::ObjectView;
use k8s_openapi::api::core::v1::{Pod, PodStatus};
use serde::Deserialize;
use std::borrow::Cow;
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

/// The one field of the spec `pod-view` reads.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Placement<'a> {
    #[serde(borrow)]
    node_name: Option<Cow<'a, str>>,
}

/// `pod-view`'s reads, through the same SDK code compiled natively.
fn read_view(json: &str) {
    let pod = ObjectView::parse(json).expect("bench Pods read");
    let meta = pod.metadata();
    black_box((meta.name(), meta.namespace(), meta.labels().get("app")));
    black_box(meta.controller().map(|owner| owner.name()));
    black_box(pod.status::<PodStatus>().expect("bench Pods decode"));
    black_box(
        pod.spec::<Placement>()
            .expect("bench Pods decode")
            .and_then(|spec| spec.node_name),
    );
}

/// Handles one added object as `fixture` does, natively.
pub fn on_add(fixture: Fixture, json: &str) {
    match fixture {
        Fixture::Noop
        | Fixture::NoopBatch
        | Fixture::Floor
        | Fixture::HandlerFloor
        | Fixture::NamedNoop
        | Fixture::LatencyProbe => {
            black_box(json);
        }
        Fixture::JsonMeta => {
            black_box(serde_json::from_str::<Object>(json).expect("bench objects decode"));
        }
        Fixture::TypedPod => {
            black_box(serde_json::from_str::<Pod>(json).expect("bench Pods decode"));
        }
        Fixture::PodView => read_view(json),
        Fixture::InfiniteLoop | Fixture::Blocker => {
            unreachable!("{} never returns: it has no native twin", fixture.label())
        }
    }
}
