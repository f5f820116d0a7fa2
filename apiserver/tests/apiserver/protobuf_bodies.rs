//! Protobuf request bodies over raw HTTP: a built-in kind is stored as JSON and answered in
//! the encoding the request's `Accept` prefers; a custom resource's kind is refused with 415
//! naming it.
//!
//! The bodies are encoded here field by field, with the field numbers of the published
//! Kubernetes `.proto` files, independently of the descriptors the server decodes with.

use ::protobuf::CodedOutputStream;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

use crate::common::{client, server, status};

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// A message of length-delimited fields (strings, bytes, messages), by field number.
fn message(fields: &[(u32, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut os = CodedOutputStream::vec(&mut out);
    for (number, bytes) in fields {
        os.write_bytes(*number, bytes).unwrap();
    }
    os.flush().unwrap();
    drop(os);
    out
}

/// A map entry (`key = 1`, `value = 2`).
fn entry(key: &str, value: &[u8]) -> Vec<u8> {
    message(&[(1, key.as_bytes()), (2, value)])
}

/// `k8s\0` and a `runtime.Unknown` (`typeMeta = 1`, `raw = 2`) wrapping `raw`, as
/// client-go sends a body.
fn body(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let type_meta = message(&[(1, api_version.as_bytes()), (2, kind.as_bytes())]);
    let mut out = b"k8s\0".to_vec();
    out.extend(message(&[(1, &type_meta), (2, raw)]));
    out
}

/// `ObjectMeta` with its `name` (field 1).
fn meta(name: &str) -> Vec<u8> {
    message(&[(1, name.as_bytes())])
}

#[tokio::test]
async fn a_protobuf_config_map_is_stored_and_answered_as_asked() {
    let server = server().await;
    let c = client(&server);
    let post = |accept: &str, name: &str| {
        // ConfigMap: metadata = 1, data = 2, binaryData = 3.
        let cm = message(&[
            (1, &meta(name)),
            (2, &entry("a", b"b")),
            (3, &entry("bin", &[0, 1, 255])),
        ]);
        http::Request::post("/api/v1/namespaces/default/configmaps")
            .header("content-type", PROTOBUF)
            .header("accept", accept)
            .body(body("v1", "ConfigMap", &cm))
            .unwrap()
    };
    let created: Value = serde_json::from_str(
        &c.request_text(post("application/json", "from-protobuf"))
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(created["kind"], "ConfigMap");
    assert_eq!(created["data"], json!({"a": "b"}));
    let got = Api::<ConfigMap>::default_namespaced(c.clone())
        .get("from-protobuf")
        .await
        .unwrap();
    assert_eq!(got.data.unwrap()["a"], "b");
    assert_eq!(got.binary_data.unwrap()["bin"].0, vec![0, 1, 255]);

    // Asked for protobuf first, the created object comes back in protobuf.
    let answer = c
        .send(
            post(&format!("{PROTOBUF}, application/json"), "also-protobuf")
                .map(kube::client::Body::from),
        )
        .await
        .unwrap();
    assert_eq!(answer.status(), 201);
    assert_eq!(answer.headers()["content-type"], PROTOBUF);
    let bytes = answer.into_body().collect_bytes().await.unwrap();
    let mut json = String::new();
    herald::informer::protobuf::Transcoder::new(false)
        .object(&bytes, &mut json)
        .unwrap();
    let created: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(created["metadata"]["name"], "also-protobuf");
    assert_eq!(created["binaryData"], json!({"bin": "AAH/"}));
}

#[tokio::test]
async fn a_protobuf_custom_resource_is_415_naming_its_kind() {
    let server = server().await;
    let c = client(&server);
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "kind": "Widget"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                     "schema": {"openAPIV3Schema": {"type": "object",
                         "x-kubernetes-preserve-unknown-fields": true}}}]}
    }))
    .unwrap();
    Api::<CustomResourceDefinition>::all(c.clone())
        .create(&PostParams::default(), &crd)
        .await
        .unwrap();
    let req = http::Request::post("/apis/example.com/v1/namespaces/default/widgets")
        .header("content-type", PROTOBUF)
        .body(body("example.com/v1", "Widget", &meta("w")))
        .unwrap();
    let err = status(c.request_text(req).await.unwrap_err());
    assert_eq!(
        (err.code, err.reason.as_str()),
        (415, "UnsupportedMediaType")
    );
    assert!(err.message.contains("kind Widget"), "{}", err.message);
}

#[tokio::test]
async fn a_protobuf_delete_options_body_is_read_as_client_go_sends_it() {
    let server = server().await;
    let c = client(&server);
    let config_maps = Api::<ConfigMap>::default_namespaced(c.clone());
    for name in ["dry-run-delete", "deleted"] {
        let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
        config_maps
            .create(&PostParams::default(), &cm)
            .await
            .unwrap();
    }
    // client-go encodes a core kind's DeleteOptions under `v1`; the message is
    // meta/v1's: propagationPolicy = 4, dryRun = 5.
    let delete = |name: &str, options: &[(u32, &[u8])]| {
        http::Request::delete(format!("/api/v1/namespaces/default/configmaps/{name}"))
            .header("content-type", PROTOBUF)
            .header("accept", "application/json")
            .body(body("v1", "DeleteOptions", &message(options)))
            .unwrap()
    };
    c.request_text(delete("dry-run-delete", &[(5, b"All")]))
        .await
        .unwrap();
    assert!(
        config_maps
            .get_opt("dry-run-delete")
            .await
            .unwrap()
            .is_some(),
        "dryRun: [All] in the protobuf body kept the object"
    );
    c.request_text(delete("deleted", &[(4, b"Background")]))
        .await
        .unwrap();
    assert!(config_maps.get_opt("deleted").await.unwrap().is_none());
}
