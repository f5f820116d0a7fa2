//! Protobuf request bodies over raw HTTP: a built-in kind is stored as JSON and answered in
//! JSON; a custom resource's kind is refused with 415 naming it.

use ::protobuf::Message;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_rs_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_rs_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

use crate::common::{client, server, status};

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// `k8s\0` and a `runtime.Unknown` wrapping `message`, as client-go sends a body.
fn body(api_version: &str, kind: &str, message: &impl Message) -> Vec<u8> {
    let mut type_meta = TypeMeta::new();
    type_meta.apiVersion = Some(api_version.into());
    type_meta.kind = Some(kind.into());
    let mut unknown = Unknown::new();
    unknown.typeMeta = Some(type_meta).into();
    unknown.raw = Some(message.write_to_bytes().unwrap());
    let mut out = b"k8s\0".to_vec();
    out.extend(unknown.write_to_bytes().unwrap());
    out
}

fn meta(name: &str) -> ObjectMeta {
    let mut m = ObjectMeta::new();
    m.name = Some(name.into());
    m
}

#[tokio::test]
async fn a_protobuf_config_map_is_stored_and_answered_in_json() {
    let server = server().await;
    let c = client(&server);
    let mut cm = k8s_rs_pb::api::core::v1::ConfigMap::new();
    cm.metadata = Some(meta("from-protobuf")).into();
    cm.data.insert("a".into(), "b".into());
    cm.binaryData.insert("bin".into(), vec![0, 1, 255]);
    let req = http::Request::post("/api/v1/namespaces/default/configmaps")
        .header("content-type", PROTOBUF)
        .header("accept", format!("{PROTOBUF}, application/json"))
        .body(body("v1", "ConfigMap", &cm))
        .unwrap();
    let created: Value = serde_json::from_str(&c.request_text(req).await.unwrap()).unwrap();
    assert_eq!(created["kind"], "ConfigMap");
    assert_eq!(created["data"], json!({"a": "b"}));
    let got = Api::<ConfigMap>::default_namespaced(c)
        .get("from-protobuf")
        .await
        .unwrap();
    assert_eq!(got.data.unwrap()["a"], "b");
    assert_eq!(got.binary_data.unwrap()["bin"].0, vec![0, 1, 255]);
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
