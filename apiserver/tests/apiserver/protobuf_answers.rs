//! Answers in protobuf over real HTTP, read back with Herald's own reader of protobuf
//! (`herald::informer::protobuf`, driven by a schema generated from the Go types, where the
//! server encodes with the published `.proto` definitions): content negotiation as
//! kube-apiserver v1.36.3 answered the same requests, and gets, lists and watches of the
//! kinds a real server returned (`host/src/informer/protobuf/testdata`) reading back as the
//! same JSON as the JSON answers.

use bytes::Bytes;
use futures::StreamExt;
use herald::informer::protobuf::{ACCEPT_PROTOBUF, Transcoder};
use http_body_util::BodyExt;
use kube::Client;
use serde_json::{Value, json};

use crate::common::{client, namespace, server, server_with, within};

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
const PROTOBUF_WATCH: &str = "application/vnd.kubernetes.protobuf;stream=watch";

/// An answer as it came over the wire.
struct Answer {
    code: u16,
    content_type: String,
    body: Bytes,
}

impl Answer {
    /// The body as JSON, read by Herald's transcoder when it is protobuf.
    fn json(&self) -> Value {
        if self.content_type.starts_with(PROTOBUF) {
            assert!(self.body.starts_with(b"k8s\0"), "no magic: {:?}", self.body);
            host_reads(&self.body)
        } else {
            assert_eq!(self.content_type, "application/json");
            serde_json::from_slice(&self.body).expect("a JSON body")
        }
    }
}

/// What Herald's reader makes of an enveloped object.
fn host_reads(bytes: &[u8]) -> Value {
    let mut out = String::new();
    Transcoder::new(false)
        .object(bytes, &mut out)
        .unwrap_or_else(|e| panic!("Herald cannot read the answer: {e}"));
    serde_json::from_str(&out).expect("Herald writes JSON")
}

/// Sends `method path` with `accept` (none if `None`) and `body` (JSON).
async fn send(
    c: &Client,
    method: &str,
    path: &str,
    accept: Option<&str>,
    body: Option<&Value>,
) -> Answer {
    let mut request = http::Request::builder().method(method).uri(path);
    if let Some(accept) = accept {
        request = request.header("accept", accept);
    }
    let body = match body {
        Some(v) => {
            request = request.header("content-type", "application/json");
            serde_json::to_vec(v).unwrap()
        }
        None => Vec::new(),
    };
    let response = c
        .send(request.body(kube::client::Body::from(body)).unwrap())
        .await
        .unwrap();
    let code = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    let body = response.into_body().collect_bytes().await.unwrap();
    Answer {
        code,
        content_type,
        body,
    }
}

async fn get(c: &Client, path: &str, accept: Option<&str>) -> Answer {
    send(c, "GET", path, accept, None).await
}

/// The events of a watch `path` (the first `count`), each as the JSON line a JSON watch
/// sends: protobuf frames transcoded by Herald, JSON lines as they are.
async fn watch(c: &Client, path: &str, accept: &str, count: usize) -> (String, Vec<Value>) {
    let request = http::Request::get(path)
        .header("accept", accept)
        .body(kube::client::Body::empty())
        .unwrap();
    let response = c.send(request).await.unwrap();
    assert_eq!(response.status(), 200);
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_string();
    let protobuf = content_type == PROTOBUF_WATCH;
    let mut body = response.into_body().into_data_stream();
    let mut buffer = Vec::new();
    let mut events = Vec::new();
    within(&format!("{count} events of {path}"), async {
        while events.len() < count {
            let chunk = body.next().await.expect("the watch goes on").unwrap();
            buffer.extend_from_slice(&chunk);
            loop {
                let event = if protobuf {
                    let Some(length) = buffer.get(..4) else { break };
                    let length = u32::from_be_bytes(length.try_into().unwrap()) as usize;
                    if buffer.len() < 4 + length {
                        break;
                    }
                    let mut line = String::new();
                    Transcoder::new(false)
                        .watch_event(&buffer[4..4 + length], &mut line)
                        .unwrap_or_else(|e| panic!("Herald cannot read the frame: {e}"));
                    buffer.drain(..4 + length);
                    line
                } else {
                    let Some(end) = buffer.iter().position(|b| *b == b'\n') else {
                        break;
                    };
                    let line: Vec<u8> = buffer.drain(..=end).collect();
                    String::from_utf8(line).unwrap()
                };
                events.push(serde_json::from_str::<Value>(&event).unwrap());
            }
        }
    })
    .await;
    (content_type, events)
}

#[tokio::test]
async fn built_in_kinds_are_answered_in_protobuf_when_it_comes_first() {
    let server = server().await;
    let c = client(&server);
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "c"}, "data": {"a": "b"}});
    let created = send(
        &c,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        Some(ACCEPT_PROTOBUF),
        Some(&cm),
    )
    .await;
    assert_eq!(
        (created.code, created.content_type.as_str()),
        (201, PROTOBUF)
    );
    assert_eq!(created.json()["data"], json!({"a": "b"}));

    let path = "/api/v1/namespaces/default/configmaps/c";
    let as_json = get(&c, path, None).await;
    assert_eq!(as_json.content_type, "application/json");
    for (accept, content_type) in [
        (ACCEPT_PROTOBUF, PROTOBUF),
        (PROTOBUF, PROTOBUF),
        (
            "application/json;q=0.5, application/vnd.kubernetes.protobuf",
            PROTOBUF,
        ),
        // goautoneg sorts a specific type before a wildcard, whatever their qualities.
        ("*/*, application/vnd.kubernetes.protobuf;q=0.5", PROTOBUF),
        (
            "application/json, application/vnd.kubernetes.protobuf",
            "application/json",
        ),
        ("*/*", "application/json"),
        ("application/json", "application/json"),
    ] {
        let answer = get(&c, path, Some(accept)).await;
        assert_eq!(
            (answer.code, answer.content_type.as_str()),
            (200, content_type),
            "{accept}"
        );
        assert_eq!(answer.json(), as_json.json(), "{accept}");
    }

    let list = get(
        &c,
        "/api/v1/namespaces/default/configmaps",
        Some(ACCEPT_PROTOBUF),
    )
    .await;
    assert_eq!(list.content_type, PROTOBUF);
    assert_eq!(list.json()["kind"], "ConfigMapList");

    // Errors are a Status in protobuf too, as kube-apiserver answered a missing ConfigMap.
    let missing = "/api/v1/namespaces/default/configmaps/missing";
    let in_protobuf = get(&c, missing, Some(ACCEPT_PROTOBUF)).await;
    assert_eq!(
        (in_protobuf.code, in_protobuf.content_type.as_str()),
        (404, PROTOBUF)
    );
    assert_eq!(in_protobuf.json(), get(&c, missing, None).await.json());
    let unknown = get(&c, "/api/v1/nope", Some(ACCEPT_PROTOBUF)).await;
    assert_eq!(
        (unknown.code, unknown.content_type.as_str()),
        (404, PROTOBUF)
    );
    assert_eq!(unknown.json()["reason"], "NotFound");

    let (content_type, events) = watch(
        &c,
        "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=0",
        ACCEPT_PROTOBUF,
        1,
    )
    .await;
    assert_eq!(content_type, PROTOBUF_WATCH);
    assert_eq!(events[0]["type"], "ADDED");
    assert_eq!(events[0]["object"]["metadata"]["name"], "c");
}

#[tokio::test]
async fn nothing_acceptable_is_refused_as_kube_apiserver_refuses_it() {
    let server = server().await;
    let c = client(&server);
    // A built-in kind: go-restful's 406, in JSON, before anything is done.
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
    let refused = send(
        &c,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        Some("text/html"),
        Some(&cm),
    )
    .await;
    assert_eq!(
        (refused.code, refused.content_type.as_str()),
        (406, "application/json")
    );
    assert_eq!(
        refused.json()["message"],
        "406: Not Acceptable\n\nAvailable representations: application/json, application/yaml, \
         application/vnd.kubernetes.protobuf"
    );
    let list = get(
        &c,
        "/api/v1/namespaces/default/configmaps",
        Some("text/html"),
    )
    .await;
    assert_eq!(
        list.json()["message"],
        "406: Not Acceptable\n\nAvailable representations: application/json, application/yaml, \
         application/vnd.kubernetes.protobuf, application/json;stream=watch, \
         application/vnd.kubernetes.protobuf;stream=watch"
    );
    assert_eq!(
        get(&c, "/api/v1/namespaces/default/configmaps/c", None)
            .await
            .code,
        404
    );
}

/// A custom resource, as kube-apiserver v1.36.3 answered: JSON for Herald's `Accept`, and
/// for protobuf alone a 406 Status, in protobuf, before anything is done.
#[tokio::test]
async fn custom_resources_are_json_and_refuse_protobuf_alone() {
    let server = server().await;
    let c = client(&server);
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "kind": "Widget"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                     "schema": {"openAPIV3Schema": {"type": "object",
                         "x-kubernetes-preserve-unknown-fields": true}}}]}
    });
    let created = send(
        &c,
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        Some(ACCEPT_PROTOBUF),
        Some(&crd),
    )
    .await;
    // The definition itself is a built-in kind (which Herald reads as JSON: its schema
    // leaves apiextensions out; the server's own decoder checks its JSON Schema names).
    assert_eq!(
        (created.code, created.content_type.as_str()),
        (201, PROTOBUF)
    );
    assert!(created.body.starts_with(b"k8s\0"));

    let widgets = "/apis/example.com/v1/namespaces/default/widgets";
    let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget",
                        "metadata": {"name": "w"}, "size": 3});
    let made = send(&c, "POST", widgets, Some(ACCEPT_PROTOBUF), Some(&widget)).await;
    assert_eq!(
        (made.code, made.content_type.as_str()),
        (201, "application/json")
    );
    let got = get(&c, &format!("{widgets}/w"), Some(ACCEPT_PROTOBUF)).await;
    assert_eq!(got.content_type, "application/json");
    assert_eq!(got.json()["size"], 3);
    let (content_type, _) = watch(
        &c,
        &format!("{widgets}?watch=true&resourceVersion=0"),
        ACCEPT_PROTOBUF,
        1,
    )
    .await;
    assert_eq!(content_type, "application/json");

    let missing = get(&c, &format!("{widgets}/missing"), Some(ACCEPT_PROTOBUF)).await;
    assert_eq!(
        (missing.code, missing.content_type.as_str()),
        (404, PROTOBUF)
    );

    let other = json!({"apiVersion": "example.com/v1", "kind": "Widget",
                       "metadata": {"name": "w2"}});
    for refused in [
        get(&c, &format!("{widgets}/w"), Some(PROTOBUF)).await,
        get(&c, &format!("{widgets}?watch=true"), Some(PROTOBUF)).await,
        send(&c, "POST", widgets, Some(PROTOBUF), Some(&other)).await,
    ] {
        assert_eq!(
            (refused.code, refused.content_type.as_str()),
            (406, PROTOBUF)
        );
        let status = refused.json();
        assert_eq!(status["reason"], "NotAcceptable");
        assert_eq!(
            status["message"],
            "only the following media types are accepted: application/json, application/yaml, \
             application/vnd.kubernetes.protobuf"
        );
    }
    assert_eq!(get(&c, &format!("{widgets}/w2"), None).await.code, 404);
}

#[tokio::test]
async fn a_json_only_server_answers_json_and_refuses_protobuf_alone() {
    let server = server_with(|config| config.protobuf = false).await;
    let c = client(&server);
    let path = "/api/v1/namespaces/default/configmaps";
    let list = get(&c, path, Some(ACCEPT_PROTOBUF)).await;
    assert_eq!(
        (list.code, list.content_type.as_str()),
        (200, "application/json")
    );
    let missing = get(&c, &format!("{path}/missing"), Some(ACCEPT_PROTOBUF)).await;
    assert_eq!(
        (missing.code, missing.content_type.as_str()),
        (404, "application/json")
    );
    let (content_type, _) = watch(
        &c,
        &format!("{path}?watch=true&allowWatchBookmarks=true"),
        ACCEPT_PROTOBUF,
        1,
    )
    .await;
    assert_eq!(content_type, "application/json");
    let refused = get(&c, path, Some(PROTOBUF)).await;
    assert_eq!(
        (refused.code, refused.content_type.as_str()),
        (406, "application/json")
    );
}

/// Where the server serves a recorded kind.
struct Recorded {
    /// The file under `host/src/informer/protobuf/testdata`.
    file: &'static str,
    /// Whether its objects are created here, or seen through a view of others (the
    /// `events.k8s.io` Events are the core ones, as on the server that recorded them).
    create: bool,
    /// `/api/v1`, `/apis/apps/v1`.
    prefix: &'static str,
    plural: &'static str,
    namespaced: bool,
}

const RECORDED: &[Recorded] = &[
    Recorded {
        file: "namespaces",
        create: true,
        prefix: "/api/v1",
        plural: "namespaces",
        namespaced: false,
    },
    Recorded {
        file: "nodes",
        create: true,
        prefix: "/api/v1",
        plural: "nodes",
        namespaced: false,
    },
    Recorded {
        file: "clusterroles",
        create: true,
        prefix: "/apis/rbac.authorization.k8s.io/v1",
        plural: "clusterroles",
        namespaced: false,
    },
    Recorded {
        file: "configmaps",
        create: true,
        prefix: "/api/v1",
        plural: "configmaps",
        namespaced: true,
    },
    Recorded {
        file: "secrets",
        create: true,
        prefix: "/api/v1",
        plural: "secrets",
        namespaced: true,
    },
    Recorded {
        file: "services",
        create: true,
        prefix: "/api/v1",
        plural: "services",
        namespaced: true,
    },
    Recorded {
        file: "pods",
        create: true,
        prefix: "/api/v1",
        plural: "pods",
        namespaced: true,
    },
    Recorded {
        file: "resourcequotas",
        create: true,
        prefix: "/api/v1",
        plural: "resourcequotas",
        namespaced: true,
    },
    Recorded {
        file: "events",
        create: true,
        prefix: "/api/v1",
        plural: "events",
        namespaced: true,
    },
    Recorded {
        file: "events.k8s.io",
        create: false,
        prefix: "/apis/events.k8s.io/v1",
        plural: "events",
        namespaced: true,
    },
    Recorded {
        file: "deployments",
        create: true,
        prefix: "/apis/apps/v1",
        plural: "deployments",
        namespaced: true,
    },
    Recorded {
        file: "statefulsets",
        create: true,
        prefix: "/apis/apps/v1",
        plural: "statefulsets",
        namespaced: true,
    },
    Recorded {
        file: "cronjobs",
        create: true,
        prefix: "/apis/batch/v1",
        plural: "cronjobs",
        namespaced: true,
    },
    Recorded {
        file: "leases",
        create: true,
        prefix: "/apis/coordination.k8s.io/v1",
        plural: "leases",
        namespaced: true,
    },
    Recorded {
        file: "networkpolicies",
        create: true,
        prefix: "/apis/networking.k8s.io/v1",
        plural: "networkpolicies",
        namespaced: true,
    },
    Recorded {
        file: "roles",
        create: true,
        prefix: "/apis/rbac.authorization.k8s.io/v1",
        plural: "roles",
        namespaced: true,
    },
];

/// The namespace the recorded namespaced objects are created in.
const NAMESPACE: &str = "recorded";

/// A real server's list, its items made ready to create here: their kind and apiVersion
/// set, what the server assigns removed, moved to [`NAMESPACE`].
fn recorded_items(file: &str) -> Vec<Value> {
    let path = format!(
        "{}/../host/src/informer/protobuf/testdata/{file}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let list: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let kind = list["kind"].as_str().unwrap().strip_suffix("List").unwrap();
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            let mut item = item.clone();
            item["apiVersion"] = list["apiVersion"].clone();
            item["kind"] = json!(kind);
            let metadata = item["metadata"].as_object_mut().unwrap();
            for assigned in [
                "resourceVersion",
                "uid",
                "creationTimestamp",
                "managedFields",
                "generation",
            ] {
                metadata.remove(assigned);
            }
            if metadata.contains_key("namespace") {
                metadata.insert("namespace".into(), json!(NAMESPACE));
            }
            item
        })
        .collect()
}

/// A JSON list as a real server writes it: items carry no `apiVersion` and `kind` (this
/// server's JSON lists do; protobuf carries none).
fn without_item_types(mut list: Value) -> Value {
    for item in list["items"].as_array_mut().unwrap() {
        let item = item.as_object_mut().unwrap();
        item.remove("apiVersion");
        item.remove("kind");
    }
    list
}

/// Objects as a real kube-apiserver returned them (so in the form Go writes them), stored
/// here and read back: each get and each list in protobuf, read by Herald, is the JSON answer.
#[tokio::test]
async fn recorded_objects_read_the_same_over_protobuf_as_over_json() {
    let server = server().await;
    let c = client(&server);
    namespace(&c, NAMESPACE).await;
    let mut compared = 0;
    for recorded in RECORDED {
        let collection = if recorded.namespaced {
            format!(
                "{}/namespaces/{NAMESPACE}/{}",
                recorded.prefix, recorded.plural
            )
        } else {
            format!("{}/{}", recorded.prefix, recorded.plural)
        };
        for item in recorded_items(recorded.file) {
            let name = item["metadata"]["name"].as_str().unwrap().to_string();
            if recorded.create {
                let created = send(
                    &c,
                    "POST",
                    &collection,
                    Some("application/json"),
                    Some(&item),
                )
                .await;
                match created.code {
                    201 => {}
                    // The namespaces every server starts with.
                    409 if recorded.plural == "namespaces" => continue,
                    code => panic!(
                        "creating {} {name}: {code} {}",
                        recorded.file,
                        String::from_utf8_lossy(&created.body)
                    ),
                }
            }
            let path = format!("{collection}/{name}");
            let as_json = get(&c, &path, None).await;
            let in_protobuf = get(&c, &path, Some(ACCEPT_PROTOBUF)).await;
            assert_eq!(in_protobuf.content_type, PROTOBUF, "{path}");
            assert_eq!(in_protobuf.json(), as_json.json(), "{path}");
            compared += 1;
        }
        if recorded.namespaced || matches!(recorded.plural, "clusterroles" | "nodes") {
            let as_json = get(&c, &collection, None).await;
            let in_protobuf = get(&c, &collection, Some(ACCEPT_PROTOBUF)).await;
            assert_eq!(in_protobuf.content_type, PROTOBUF, "{collection}");
            let listed = in_protobuf.json();
            assert!(
                !listed["items"].as_array().unwrap().is_empty(),
                "{collection}"
            );
            assert_eq!(listed, without_item_types(as_json.json()), "{collection}");
        }
    }
    assert!(compared > 80, "only {compared} objects compared");
}

/// A StatefulSet's claim templates written without `kind` and `apiVersion` come back with
/// both, as kube-apiserver's defaulting gives them, in JSON and through Herald's reading
/// of protobuf (which carries neither).
#[tokio::test]
async fn claim_templates_come_back_typed_in_json_and_in_protobuf() {
    let server = server().await;
    let c = client(&server);
    namespace(&c, "claims").await;
    let collection = "/apis/apps/v1/namespaces/claims/statefulsets";
    let statefulset = json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "db"},
        "spec": {"serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
                 "template": {"metadata": {"labels": {"app": "db"}},
                              "spec": {"containers": [{"name": "c", "image": "pause"}]}},
                 "volumeClaimTemplates": [
                     {"metadata": {"name": "data"},
                      "spec": {"accessModes": ["ReadWriteOnce"],
                               "resources": {"requests": {"storage": "1Gi"}}}}]}});
    let created = send(&c, "POST", collection, None, Some(&statefulset)).await;
    assert_eq!(created.code, 201);
    let path = format!("{collection}/db");
    let as_json = get(&c, &path, None).await.json();
    let template = &as_json["spec"]["volumeClaimTemplates"][0];
    assert_eq!(template["kind"], "PersistentVolumeClaim", "{as_json}");
    assert_eq!(template["apiVersion"], "v1", "{as_json}");
    // The template only: this server keeps objects as written, where Go
    // writes its zero fields (`resources: {}`, `status: {}`) in both.
    let in_protobuf = get(&c, &path, Some(ACCEPT_PROTOBUF)).await.json();
    let read = &in_protobuf["spec"]["volumeClaimTemplates"][0];
    assert_eq!(
        (&read["kind"], &read["apiVersion"], &read["metadata"]),
        (
            &template["kind"],
            &template["apiVersion"],
            &template["metadata"]
        )
    );
}

/// The same changes watched in JSON and in protobuf are the same events: a streamed list's
/// ADDED events and its closing bookmark, MODIFIED, DELETED, periodic bookmarks, and the
/// ERROR of a resource version too old.
#[tokio::test]
async fn a_watch_in_protobuf_sees_the_events_a_json_watch_sees() {
    let server = server_with(|config| config.history_window = 4).await;
    let c = client(&server);
    namespace(&c, "watched").await;
    let collection = "/apis/apps/v1/namespaces/watched/deployments";
    let deployment = |replicas: i64| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": "web", "labels": {"app": "web"}},
               "spec": {"replicas": replicas,
                        "selector": {"matchLabels": {"app": "web"}},
                        "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
                        "template": {"metadata": {"labels": {"app": "web"}},
                                     "spec": {"containers": [{"name": "nginx", "image": "nginx",
                                         "resources": {"limits": {"cpu": "100m"}}}]}}},
               // Written as Go writes an empty status, so that both answers agree.
               "status": {}})
    };
    let created = send(&c, "POST", collection, None, Some(&deployment(1))).await;
    assert_eq!(created.code, 201);
    let from = created.json()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();

    // A streaming list: the object, then the bookmark that ends the initial events.
    let streamed = format!(
        "{collection}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
    );
    let (_, json_events) = watch(&c, &streamed, "application/json", 2).await;
    let (content_type, protobuf_events) = watch(&c, &streamed, ACCEPT_PROTOBUF, 2).await;
    assert_eq!(content_type, PROTOBUF_WATCH);
    assert_eq!(protobuf_events[0], json_events[0]);
    assert_eq!(bookmark(&protobuf_events[1]), bookmark(&json_events[1]));
    assert_eq!(protobuf_events[1]["type"], "BOOKMARK");
    assert_eq!(
        protobuf_events[1]["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );

    // Changes from the version of the create, read by both watches at once.
    let changes = format!("{collection}?watch=true&resourceVersion={from}");
    let json_watch = watch(&c, &changes, "application/json", 3);
    let protobuf_watch = watch(&c, &changes, ACCEPT_PROTOBUF, 3);
    let writes = async {
        let mut scaled = created.json();
        scaled["spec"]["replicas"] = json!(0);
        let path = format!("{collection}/web");
        assert_eq!(send(&c, "PUT", &path, None, Some(&scaled)).await.code, 200);
        let mut labelled = get(&c, &path, None).await.json();
        labelled["metadata"]["labels"]["tier"] = json!("front");
        assert_eq!(
            send(&c, "PUT", &path, None, Some(&labelled)).await.code,
            200
        );
        assert_eq!(send(&c, "DELETE", &path, None, None).await.code, 200);
    };
    let ((_, json_events), (_, protobuf_events), ()) =
        tokio::join!(json_watch, protobuf_watch, writes);
    let types: Vec<&Value> = protobuf_events.iter().map(|e| &e["type"]).collect();
    assert_eq!(types, ["MODIFIED", "MODIFIED", "DELETED"]);
    assert_eq!(protobuf_events[0]["object"]["spec"]["replicas"], 0);
    assert_eq!(protobuf_events, json_events);

    // A periodic bookmark: the kind, at the current version.
    let bookmarks =
        format!("{collection}?watch=true&allowWatchBookmarks=true&resourceVersion={from}");
    let (_, events) = watch(&c, &bookmarks, ACCEPT_PROTOBUF, 4).await;
    let rv = get(&c, collection, None).await.json()["metadata"]["resourceVersion"].clone();
    assert_eq!(
        bookmark(&events[3]),
        json!({"type": "BOOKMARK", "kind": "Deployment", "apiVersion": "apps/v1",
               "metadata": {"resourceVersion": rv}})
    );

    // Past the history window, the watch ends with a 410 Status.
    let expired = format!("{collection}?watch=true&resourceVersion=1");
    let (_, json_events) = watch(&c, &expired, "application/json", 1).await;
    let (_, protobuf_events) = watch(&c, &expired, ACCEPT_PROTOBUF, 1).await;
    assert_eq!(protobuf_events[0]["type"], "ERROR");
    assert_eq!(protobuf_events[0]["object"]["code"], 410);
    assert_eq!(protobuf_events, json_events);
}

/// What a client reads of a bookmark: its type, the kind, and the metadata (a real server's
/// also has the kind's other fields, empty, as Go writes them, and so does Herald's reading
/// of protobuf; this server's JSON has none).
fn bookmark(event: &Value) -> Value {
    let object = &event["object"];
    json!({"type": event["type"], "kind": object["kind"], "apiVersion": object["apiVersion"],
           "metadata": object["metadata"]})
}

/// A value of the wrong type for its field (a real server would have refused the write)
/// cannot be answered in protobuf: a 500 saying where, not a silently different object.
#[tokio::test]
async fn an_object_protobuf_cannot_hold_is_a_500_naming_the_field() {
    let server = server().await;
    let c = client(&server);
    let odd = json!({"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": "odd"}, "data": {"n": 3}});
    let path = "/api/v1/namespaces/default/configmaps";
    assert_eq!(send(&c, "POST", path, None, Some(&odd)).await.code, 201);
    assert_eq!(
        get(&c, &format!("{path}/odd"), None).await.json()["data"]["n"],
        3
    );
    let refused = get(&c, &format!("{path}/odd"), Some(ACCEPT_PROTOBUF)).await;
    assert_eq!(
        (refused.code, refused.content_type.as_str()),
        (500, PROTOBUF)
    );
    let message = refused.json()["message"].as_str().unwrap().to_string();
    assert!(message.contains("ConfigMap.data.n"), "{message}");
}
