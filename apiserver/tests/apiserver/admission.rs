//! Admission webhooks, end to end: webhook configurations created through the API, a real
//! HTTPS webhook server on loopback (rustls, a CA and certificate made for the run), and
//! the real kube-rs client (or plain HTTP where headers matter) seeing what a client of
//! kube-apiserver would see.
//!
//! The test webhook answers by the path it is called at (`/allow`, `/deny`, `/label`, …,
//! see [`answer`]) and records every review it receives, so a test can count calls and
//! read what was sent. Nothing here waits by sleeping: a call is over when the API
//! server's answer arrives, and the webhook that never answers is bounded by its own
//! `timeoutSeconds`.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use kube::api::{Api, DeleteParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::common::{client, config_map, namespace, server, server_with, status};

/// A CA and a certificate it signed for `127.0.0.1`, `localhost` and the service name
/// `admission.herald.svc`.
struct Pki {
    /// The CA certificate, base64 PEM, as `caBundle` takes it.
    ca_bundle: String,
    /// The server's TLS configuration.
    server: Arc<rustls::ServerConfig>,
}

impl Pki {
    fn new() -> Pki {
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "herald admission test CA");
        let ca_cert = ca_params.self_signed(&ca_key).unwrap();
        let issuer = rcgen::Issuer::new(ca_params, ca_key);
        let key = rcgen::KeyPair::generate().unwrap();
        let params = rcgen::CertificateParams::new(vec![
            "127.0.0.1".to_string(),
            "localhost".to_string(),
            "admission.herald.svc".to_string(),
        ])
        .unwrap();
        let cert = params.signed_by(&key, &issuer).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let server = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![cert.der().clone()],
                rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
            )
            .unwrap();
        Pki {
            ca_bundle: base64::engine::general_purpose::STANDARD.encode(ca_cert.pem()),
            server: Arc::new(server),
        }
    }
}

/// One review a webhook received: the path it was called at and the review's `request`.
#[derive(Debug, Clone)]
struct Call {
    path: String,
    request: Value,
}

/// A webhook server on loopback, over HTTPS, answering by path.
struct Webhook {
    addr: SocketAddr,
    ca_bundle: String,
    calls: Arc<Mutex<Vec<Call>>>,
    task: JoinHandle<()>,
}

impl Drop for Webhook {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// What the test webhook answers at `path` to `request`; `None`: it never answers.
fn answer(path: &str, request: &Value) -> Option<Value> {
    let uid = request["uid"].clone();
    let allow = json!({"uid": uid, "allowed": true});
    let patched = |ops: Value| {
        let patch = base64::engine::general_purpose::STANDARD.encode(ops.to_string());
        json!({"uid": uid, "allowed": true, "patchType": "JSONPatch", "patch": patch})
    };
    let add_label = |key: &str, value: &str| {
        let labels = &request["object"]["metadata"]["labels"];
        if labels.is_object() {
            let key = key.replace('~', "~0").replace('/', "~1");
            json!([{"op": "add", "path": format!("/metadata/labels/{key}"), "value": value}])
        } else {
            json!([{"op": "add", "path": "/metadata/labels", "value": {key: value}}])
        }
    };
    Some(match path {
        "/allow" => allow,
        "/deny" => json!({"uid": uid, "allowed": false, "status": {
            "code": 403, "reason": "Forbidden",
            "message": "configmaps named forbidden are not allowed"}}),
        "/deny-bare" => json!({"uid": uid, "allowed": false}),
        "/label" => patched(add_label("admitted-by", "herald")),
        "/first" => patched(add_label("order", "first")),
        "/second" => patched(add_label(
            "seen-first",
            request["object"]["metadata"]["labels"]["order"]
                .as_str()
                .unwrap_or("no"),
        )),
        "/rename" => {
            patched(json!([{"op": "replace", "path": "/metadata/name", "value": "other"}]))
        }
        "/warn" => json!({"uid": uid, "allowed": true,
                          "warnings": ["mind the gap", "say \"please\""]}),
        "/wrong-uid" => json!({"uid": "not-the-requests", "allowed": true}),
        "/never" => return None,
        // Given to webhooks a test expects never to be called: a call fails the write.
        "/unserved" => return Some(json!({"uid": "", "allowed": false})),
        other => panic!("the test webhook serves no {other}"),
    })
}

impl Webhook {
    async fn start(pki: &Pki) -> Webhook {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let calls: Arc<Mutex<Vec<Call>>> = Arc::default();
        let acceptor = tokio_rustls::TlsAcceptor::from(pki.server.clone());
        let recorded = calls.clone();
        let task = tokio::spawn(async move {
            let mut connections = tokio::task::JoinSet::new();
            loop {
                let (tcp, _) = listener.accept().await.unwrap();
                let (acceptor, recorded) = (acceptor.clone(), recorded.clone());
                connections.spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                        let recorded = recorded.clone();
                        async move {
                            let path = req.uri().path().to_string();
                            let body = req.into_body().collect().await.unwrap().to_bytes();
                            let review: Value = serde_json::from_slice(&body).unwrap();
                            let request = review["request"].clone();
                            recorded.lock().unwrap().push(Call {
                                path: path.clone(),
                                request: request.clone(),
                            });
                            let Some(response) = answer(&path, &request) else {
                                std::future::pending::<()>().await;
                                unreachable!("a pending future never ends");
                            };
                            let review = json!({"apiVersion": "admission.k8s.io/v1",
                                                "kind": "AdmissionReview", "response": response});
                            Ok::<_, Infallible>(
                                hyper::Response::builder()
                                    .header("content-type", "application/json")
                                    .body(Full::new(Bytes::from(review.to_string())))
                                    .unwrap(),
                            )
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        Webhook {
            addr,
            ca_bundle: pki.ca_bundle.clone(),
            calls,
            task,
        }
    }

    /// A webhook entry calling `path` of this server, for every operation on `resources`
    /// of the core group (more fields merged from `extra`).
    fn hook(&self, name: &str, path: &str, resources: &[&str], extra: Value) -> Value {
        let mut hook = json!({
            "name": name,
            "clientConfig": {
                "url": format!("https://{}{path}", self.addr),
                "caBundle": self.ca_bundle,
            },
            "rules": [{"operations": ["*"], "apiGroups": [""], "apiVersions": ["v1"],
                       "resources": resources}],
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        });
        for (k, v) in extra.as_object().unwrap() {
            hook[k] = v.clone();
        }
        hook
    }

    /// The reviews received at `path`.
    fn calls(&self, path: &str) -> Vec<Value> {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .filter(|c| c.path == path)
            .map(|c| c.request.clone())
            .collect()
    }
}

async fn validating(client: &Client, name: &str, hooks: Vec<Value>) {
    let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let config = serde_json::from_value(json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": hooks,
    }))
    .unwrap();
    api.create(&PostParams::default(), &config).await.unwrap();
}

async fn mutating(client: &Client, name: &str, hooks: Vec<Value>) {
    let api: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    let config = serde_json::from_value(json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": hooks,
    }))
    .unwrap();
    api.create(&PostParams::default(), &config).await.unwrap();
}

fn cms(client: &Client) -> Api<ConfigMap> {
    Api::default_namespaced(client.clone())
}

/// A request to the API server over plain HTTP, for what kube-rs does not show (headers).
async fn raw(addr: SocketAddr, method: &str, path: &str, body: Value) -> (u16, Vec<String>, Value) {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .unwrap();
    tokio::spawn(connection);
    let request = hyper::Request::builder()
        .method(method)
        .uri(path)
        .header("host", addr.to_string())
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    let code = response.status().as_u16();
    let warnings = response
        .headers()
        .get_all("warning")
        .iter()
        .map(|v| v.to_str().unwrap().to_string())
        .collect();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (code, warnings, serde_json::from_slice(&body).unwrap())
}

/// A port nothing listens on (bound, then released).
async fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap().port()
}

#[tokio::test]
async fn a_denial_reaches_the_client_with_the_webhooks_message_and_code() {
    let (server, pki) = (server().await, Pki::new());
    let webhook = Webhook::start(&pki).await;
    let client = client(&server);
    let hook = webhook.hook(
        "deny.herald.test",
        "/deny",
        &["configmaps"],
        json!({"objectSelector": {"matchLabels": {"name": "forbidden"}}}),
    );
    validating(&client, "deny", vec![hook]).await;
    let err = cms(&client)
        .create(
            &PostParams::default(),
            &config_map("forbidden", &[("name", "forbidden")], "x"),
        )
        .await
        .unwrap_err();
    let s = status(err);
    assert_eq!((s.code, s.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        s.message,
        r#"admission webhook "deny.herald.test" denied the request: configmaps named forbidden are not allowed"#
    );
    assert!(cms(&client).get_opt("forbidden").await.unwrap().is_none());
    assert_eq!(webhook.calls("/deny").len(), 1);
}

#[tokio::test]
async fn a_denial_without_a_status_is_a_400_saying_so() {
    let (server, pki) = (server().await, Pki::new());
    let webhook = Webhook::start(&pki).await;
    let client = client(&server);
    let hook = webhook.hook("bare.herald.test", "/deny-bare", &["configmaps"], json!({}));
    validating(&client, "bare", vec![hook]).await;
    let err = cms(&client)
        .create(&PostParams::default(), &config_map("c", &[], "x"))
        .await
        .unwrap_err();
    let s = status(err);
    assert_eq!(s.code, 400);
    assert_eq!(
        s.message,
        r#"admission webhook "bare.herald.test" denied the request without explanation"#
    );
}

#[tokio::test]
async fn an_allowed_write_is_stored_and_the_webhook_sees_the_whole_request() {
    let (server, pki) = (server().await, Pki::new());
    let webhook = Webhook::start(&pki).await;
    let client = client(&server);
    validating(
        &client,
        "allow",
        vec![webhook.hook("allow.herald.test", "/allow", &["configmaps"], json!({}))],
    )
    .await;
    cms(&client)
        .create(&PostParams::default(), &config_map("kept", &[], "v"))
        .await
        .unwrap();
    assert_eq!(
        cms(&client).get("kept").await.unwrap().data.unwrap()["value"],
        "v"
    );
    let calls = webhook.calls("/allow");
    assert_eq!(calls.len(), 1);
    let r = &calls[0];
    assert!(!r["uid"].as_str().unwrap().is_empty());
    assert_eq!(
        r["kind"],
        json!({"group": "", "version": "v1", "kind": "ConfigMap"})
    );
    assert_eq!(
        r["resource"],
        json!({"group": "", "version": "v1", "resource": "configmaps"})
    );
    assert_eq!(r["requestKind"], r["kind"]);
    assert_eq!(r["requestResource"], r["resource"]);
    assert_eq!(
        (
            r["operation"].as_str(),
            r["namespace"].as_str(),
            r["name"].as_str()
        ),
        (Some("CREATE"), Some("default"), Some("kept"))
    );
    assert_eq!(r["userInfo"]["username"], "system:admin");
    assert_eq!(
        r["userInfo"]["groups"],
        json!(["system:masters", "system:authenticated"])
    );
    assert_eq!(r["dryRun"], false);
    assert_eq!(r["options"]["kind"], "CreateOptions");
    assert_eq!(r["options"]["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(r["object"]["data"]["value"], "v");
    // A validating webhook sees the object as it will be stored.
    assert!(r["object"]["metadata"]["uid"].is_string());
    assert_eq!(r["oldObject"], Value::Null);
}

#[tokio::test]
async fn a_mutation_is_applied_and_seen_on_a_later_get() {
    let (server, pki) = (server().await, Pki::new());
    let webhook = Webhook::start(&pki).await;
    let client = client(&server);
    mutating(
        &client,
        "label",
        vec![webhook.hook("label.herald.test", "/label", &["configmaps"], json!({}))],
    )
    .await;
    let created = cms(&client)
        .create(
            &PostParams::default(),
            &config_map("m", &[("app", "web")], "v"),
        )
        .await
        .unwrap();
    assert_eq!(created.labels()["admitted-by"], "herald");
    let got = cms(&client).get("m").await.unwrap();
    assert_eq!(got.labels()["admitted-by"], "herald");
    assert_eq!(got.labels()["app"], "web");
    // A mutating webhook sees a create before the server finishes it: no uid yet.
    let sent = &webhook.calls("/label")[0];
    assert!(sent["object"]["metadata"].get("uid").is_none());
    // An update goes through it too, with the stored object as oldObject.
    let mut changed = got.clone();
    changed.labels_mut().remove("admitted-by");
    cms(&client)
        .replace("m", &PostParams::default(), &changed)
        .await
        .unwrap();
    let calls = webhook.calls("/label");
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[1]["operation"], "UPDATE");
    assert_eq!(calls[1]["options"]["kind"], "UpdateOptions");
    assert_eq!(
        calls[1]["oldObject"]["metadata"]["labels"]["admitted-by"],
        "herald"
    );
    assert_eq!(
        cms(&client).get("m").await.unwrap().labels()["admitted-by"],
        "herald"
    );
}

#[tokio::test]
async fn the_validating_webhook_sees_the_object_the_mutating_ones_patched_in_name_order() {
    let (server, pki) = (server().await, Pki::new());
    let webhook = Webhook::start(&pki).await;
    let client = client(&server);
    // Created in the opposite order: configurations run by name.
    mutating(
        &client,
        "b-second",
        vec![webhook.hook("second.herald.test", "/second", &["configmaps"], json!({}))],
    )
    .await;
    mutating(
        &client,
        "a-first",
        vec![webhook.hook("first.herald.test", "/first", &["configmaps"], json!({}))],
    )
    .await;
    validating(
        &client,
        "check",
        vec![webhook.hook("check.herald.test", "/allow", &["configmaps"], json!({}))],
    )
    .await;
    cms(&client)
        .create(&PostParams::default(), &config_map("o", &[], "v"))
        .await
        .unwrap();
    let seen = &webhook.calls("/allow")[0]["object"]["metadata"]["labels"];
    assert_eq!(seen["order"], "first");
    assert_eq!(seen["seen-first"], "first");
}

#[tokio::test]
async fn warnings_reach_the_client_as_warning_headers() {
    let (server, pki) = (server().await, Pki::new());
    let webhook = Webhook::start(&pki).await;
    let client = client(&server);
    validating(
        &client,
        "warn",
        vec![webhook.hook("warn.herald.test", "/warn", &["configmaps"], json!({}))],
    )
    .await;
    let (code, warnings, body) = raw(
        server.addr(),
        "POST",
        "/api/v1/namespaces/default/configmaps",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "w"}}),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(
        warnings,
        [r#"299 - "mind the gap""#, r#"299 - "say \"please\"""#]
    );
}

#[tokio::test]
async fn an_unreachable_webhook_refuses_the_write_under_fail_and_not_under_ignore() {
    let (server, pki) = (server().await, Pki::new());
    let webhook = Webhook::start(&pki).await;
    let client = client(&server);
    let port = closed_port().await;
    let mut unreachable = webhook.hook("down.herald.test", "/allow", &["configmaps"], json!({}));
    unreachable["clientConfig"]["url"] = json!(format!("https://127.0.0.1:{port}/check"));
    validating(&client, "down", vec![unreachable.clone()]).await;
    let s = status(
        cms(&client)
            .create(&PostParams::default(), &config_map("a", &[], "v"))
            .await
            .unwrap_err(),
    );
    assert_eq!((s.code, s.reason.as_str()), (500, "InternalError"));
    let expected = format!(
        r#"Internal error occurred: failed calling webhook "down.herald.test": failed to call webhook: Post "https://127.0.0.1:{port}/check?timeout=10s": dial tcp 127.0.0.1:{port}: connect: connection refused"#
    );
    assert_eq!(s.message, expected);
    let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    api.delete("down", &DeleteParams::default()).await.unwrap();
    unreachable["failurePolicy"] = json!("Ignore");
    validating(&client, "down", vec![unreachable]).await;
    cms(&client)
        .create(&PostParams::default(), &config_map("a", &[], "v"))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_webhook_that_never_answers_fails_after_its_timeout_under_fail_and_not_under_ignore() {
    let (server, pki) = (server().await, Pki::new());
    let webhook = Webhook::start(&pki).await;
    let client = client(&server);
    let timeout = json!({"timeoutSeconds": 1});
    let mut hook = webhook.hook("slow.herald.test", "/never", &["configmaps"], timeout);
    mutating(&client, "slow", vec![hook.clone()]).await;
    let started = Instant::now();
    let s = status(
        cms(&client)
            .create(&PostParams::default(), &config_map("a", &[], "v"))
            .await
            .unwrap_err(),
    );
    let took = started.elapsed();
    assert_eq!(s.code, 500);
    let url = format!("https://{}/never?timeout=1s", webhook.addr);
    assert_eq!(
        s.message,
        format!(
            r#"Internal error occurred: failed calling webhook "slow.herald.test": failed to call webhook: Post "{url}": context deadline exceeded"#
        )
    );
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(5),
        "{took:?}"
    );
    assert_eq!(webhook.calls("/never").len(), 1, "the webhook was reached");
    let api: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    api.delete("slow", &DeleteParams::default()).await.unwrap();
    hook["failurePolicy"] = json!("Ignore");
    mutating(&client, "slow", vec![hook]).await;
    cms(&client)
        .create(&PostParams::default(), &config_map("a", &[], "v"))
        .await
        .unwrap();
    assert_eq!(webhook.calls("/never").len(), 2);
}

#[tokio::test]
async fn an_answer_for_another_uid_is_a_failed_call() {
    let (server, pki) = (server().await, Pki::new());
    let webhook = Webhook::start(&pki).await;
    let client = client(&server);
    validating(
        &client,
        "uid",
        vec![webhook.hook("uid.herald.test", "/wrong-uid", &["configmaps"], json!({}))],
    )
    .await;
    let s = status(
        cms(&client)
            .create(&PostParams::default(), &config_map("a", &[], "v"))
            .await
            .unwrap_err(),
    );
    let uid = webhook.calls("/wrong-uid")[0]["uid"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(s.code, 500);
    assert_eq!(
        s.message,
        format!(
            r#"Internal error occurred: failed calling webhook "uid.herald.test": received invalid webhook response: expected response.uid="{uid}", got "not-the-requests""#
        )
    );
}

#[tokio::test]
async fn webhooks_whose_rules_or_selectors_do_not_match_are_not_called() {
    let (server, pki) = (server().await, Pki::new());
    let webhook = Webhook::start(&pki).await;
    let client = client(&server);
    namespace(&client, "plain").await;
    let teams: Api<Namespace> = Api::all(client.clone());
    let mut team_a = Namespace::default();
    team_a.metadata.name = Some("team-a".into());
    team_a.metadata.labels = Some([("team".to_string(), "a".to_string())].into());
    teams.create(&PostParams::default(), &team_a).await.unwrap();
    let only_delete = json!({"rules": [{"operations": ["DELETE"], "apiGroups": [""],
        "apiVersions": ["v1"], "resources": ["configmaps"]}]});
    let only_team_a = json!({"namespaceSelector": {"matchLabels": {"team": "a"}}});
    let only_watched = json!({"objectSelector": {"matchExpressions": [
        {"key": "watch", "operator": "In", "values": ["yes"]}]}});
    let other_group = json!({"rules": [{"operations": ["*"], "apiGroups": ["apps"],
        "apiVersions": ["v1"], "resources": ["*"]}]});
    validating(
        &client,
        "selective",
        vec![
            webhook.hook("secrets.herald.test", "/allow", &["secrets"], json!({})),
            webhook.hook("deletes.herald.test", "/deny", &["configmaps"], only_delete),
            webhook.hook(
                "team-a.herald.test",
                "/unserved",
                &["configmaps"],
                only_team_a.clone(),
            ),
            webhook.hook(
                "watched.herald.test",
                "/wrong-uid",
                &["configmaps"],
                only_watched,
            ),
            webhook.hook("apps.herald.test", "/never", &["configmaps"], other_group),
            webhook.hook("everything.herald.test", "/warn", &["*"], json!({})),
        ],
    )
    .await;
    let plain: Api<ConfigMap> = Api::namespaced(client.clone(), "plain");
    plain
        .create(
            &PostParams::default(),
            &config_map("c", &[("watch", "no")], "v"),
        )
        .await
        .unwrap();
    // The catch-all one was called once; none of the others was.
    assert_eq!(webhook.calls("/warn").len(), 1);
    for path in ["/allow", "/deny", "/unserved", "/wrong-uid", "/never"] {
        assert_eq!(webhook.calls(path).len(), 0, "{path} was called");
    }
    // The namespace selector alone: not called in `plain`, called in `team-a`.
    let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    api.delete("selective", &DeleteParams::default())
        .await
        .unwrap();
    validating(
        &client,
        "team",
        vec![webhook.hook("team-a.herald.test", "/allow", &["configmaps"], only_team_a)],
    )
    .await;
    Api::<ConfigMap>::namespaced(client.clone(), "plain")
        .create(&PostParams::default(), &config_map("d", &[], "v"))
        .await
        .unwrap();
    assert_eq!(webhook.calls("/allow").len(), 0);
    Api::<ConfigMap>::namespaced(client.clone(), "team-a")
        .create(&PostParams::default(), &config_map("d", &[], "v"))
        .await
        .unwrap();
    assert_eq!(webhook.calls("/allow").len(), 1);
}

#[tokio::test]
async fn a_delete_reaches_the_webhook_with_the_old_object() {
    let (server, pki) = (server().await, Pki::new());
    let webhook = Webhook::start(&pki).await;
    let client = client(&server);
    cms(&client)
        .create(
            &PostParams::default(),
            &config_map("gone", &[], "last words"),
        )
        .await
        .unwrap();
    let rule = json!({"rules": [{"operations": ["DELETE"], "apiGroups": [""],
        "apiVersions": ["v1"], "resources": ["configmaps"]}]});
    validating(
        &client,
        "deletes",
        vec![webhook.hook("deletes.herald.test", "/allow", &["configmaps"], rule)],
    )
    .await;
    let dp = DeleteParams {
        propagation_policy: Some(kube::api::PropagationPolicy::Background),
        ..DeleteParams::default()
    };
    cms(&client).delete("gone", &dp).await.unwrap();
    assert!(cms(&client).get_opt("gone").await.unwrap().is_none());
    let calls = webhook.calls("/allow");
    assert_eq!(calls.len(), 1);
    let r = &calls[0];
    assert_eq!(
        (r["operation"].as_str(), r["name"].as_str()),
        (Some("DELETE"), Some("gone"))
    );
    assert_eq!(r["object"], Value::Null);
    assert_eq!(r["oldObject"]["data"]["value"], "last words");
    assert_eq!(r["options"]["kind"], "DeleteOptions");
    assert_eq!(r["options"]["propagationPolicy"], "Background");
}

#[tokio::test]
async fn a_mutating_webhook_cannot_patch_a_delete_or_rename_an_object() {
    let (server, pki) = (server().await, Pki::new());
    let webhook = Webhook::start(&pki).await;
    let client = client(&server);
    cms(&client)
        .create(&PostParams::default(), &config_map("stay", &[], "v"))
        .await
        .unwrap();
    mutating(
        &client,
        "rename",
        vec![webhook.hook("rename.herald.test", "/rename", &["configmaps"], json!({}))],
    )
    .await;
    let s = status(
        cms(&client)
            .create(&PostParams::default(), &config_map("c", &[], "v"))
            .await
            .unwrap_err(),
    );
    assert_eq!(s.code, 500);
    assert_eq!(
        s.message,
        r#"Internal error occurred: admission webhook "rename.herald.test" may not change metadata.name (from "c" to "other")"#
    );
    let s = status(
        cms(&client)
            .delete("stay", &DeleteParams::default())
            .await
            .unwrap_err(),
    );
    assert_eq!(
        s.message,
        r#"Internal error occurred: admission webhook "rename.herald.test" attempted to modify the object, which is not supported for this operation"#
    );
    assert!(cms(&client).get_opt("stay").await.unwrap().is_some());
}

#[tokio::test]
async fn a_status_write_reaches_only_webhooks_naming_the_subresource() {
    let (server, pki) = (server().await, Pki::new());
    let webhook = Webhook::start(&pki).await;
    let client = client(&server);
    validating(
        &client,
        "status",
        vec![webhook.hook("status.herald.test", "/allow", &["pods/status"], json!({}))],
    )
    .await;
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let pod: Pod = serde_json::from_value(json!({"metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}}))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    assert_eq!(webhook.calls("/allow").len(), 0);
    let status = json!({"status": {"phase": "Running"}});
    pods.patch_status(
        "p",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(&status),
    )
    .await
    .unwrap();
    let calls = webhook.calls("/allow");
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["subResource"], "status");
    assert_eq!(calls[0]["kind"]["kind"], "Pod");
    assert_eq!(calls[0]["object"]["status"]["phase"], "Running");
    assert_eq!(calls[0]["oldObject"]["status"]["phase"], "Pending");
}

#[tokio::test]
async fn a_dry_run_tells_the_webhook_and_side_effects_other_than_none_cannot_be_configured() {
    let (server, pki) = (server().await, Pki::new());
    let webhook = Webhook::start(&pki).await;
    let client = client(&server);
    let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let mut effects = webhook.hook("effects.herald.test", "/allow", &["configmaps"], json!({}));
    effects["sideEffects"] = json!("Some");
    let config =
        serde_json::from_value(json!({"metadata": {"name": "effects"}, "webhooks": [effects]}))
            .unwrap();
    let s = status(
        api.create(&PostParams::default(), &config)
            .await
            .unwrap_err(),
    );
    assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        s.message,
        r#"ValidatingWebhookConfiguration.admissionregistration.k8s.io "effects" is invalid: webhooks[0].sideEffects: Unsupported value: "Some": supported values: "None", "NoneOnDryRun""#
    );
    let on_dry_run = json!({"sideEffects": "NoneOnDryRun"});
    validating(
        &client,
        "dry",
        vec![webhook.hook("dry.herald.test", "/allow", &["configmaps"], on_dry_run)],
    )
    .await;
    let dry = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    cms(&client)
        .create(&dry, &config_map("dry", &[], "v"))
        .await
        .unwrap();
    assert!(cms(&client).get_opt("dry").await.unwrap().is_none());
    let calls = webhook.calls("/allow");
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["dryRun"], true);
    assert_eq!(calls[0]["options"]["dryRun"], json!(["All"]));
}

#[tokio::test]
async fn match_conditions_are_refused_and_configurations_are_not_admitted() {
    let (server, pki) = (server().await, Pki::new());
    let webhook = Webhook::start(&pki).await;
    let client = client(&server);
    // A webhook on every resource of the group would see its own configurations' writes
    // if they were admitted; it denies everything.
    let mut deny_all = webhook.hook("all.herald.test", "/deny", &["*"], json!({}));
    deny_all["rules"][0]["apiGroups"] = json!(["*"]);
    deny_all["rules"][0]["apiVersions"] = json!(["*"]);
    validating(&client, "deny-all", vec![deny_all]).await;
    let mut conditional = webhook.hook("cel.herald.test", "/allow", &["configmaps"], json!({}));
    conditional["matchConditions"] = json!([{"name": "x", "expression": "true"}]);
    let api: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    let config =
        serde_json::from_value(json!({"metadata": {"name": "cel"}, "webhooks": [conditional]}))
            .unwrap();
    let s = status(
        api.create(&PostParams::default(), &config)
            .await
            .unwrap_err(),
    );
    assert_eq!(s.code, 422);
    assert!(
        s.message
            .contains("webhooks[0].matchConditions: Forbidden: matchConditions are not supported"),
        "{}",
        s.message
    );
    // Still no call: the configuration writes were never sent to the deny-all webhook.
    let validating_api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    validating_api
        .delete("deny-all", &DeleteParams::default())
        .await
        .unwrap();
    assert_eq!(webhook.calls("/deny").len(), 0);
}

#[tokio::test]
async fn a_service_reference_is_called_at_the_address_the_embedding_program_gives() {
    let pki = Pki::new();
    let webhook = Webhook::start(&pki).await;
    let services =
        herald_apiserver::WebhookServices::new().with("herald", "admission", 443, webhook.addr);
    let server = server_with(|c| c.webhook_services = services).await;
    let client = client(&server);
    let mut hook = webhook.hook("svc.herald.test", "/allow", &["configmaps"], json!({}));
    hook["clientConfig"] = json!({
        "service": {"namespace": "herald", "name": "admission", "path": "/allow"},
        "caBundle": webhook.ca_bundle,
    });
    let mut unknown = hook.clone();
    unknown["name"] = json!("nowhere.herald.test");
    unknown["clientConfig"]["service"]["name"] = json!("nowhere");
    validating(&client, "svc", vec![hook]).await;
    cms(&client)
        .create(&PostParams::default(), &config_map("a", &[], "v"))
        .await
        .unwrap();
    assert_eq!(webhook.calls("/allow").len(), 1);
    validating(&client, "svc-unknown", vec![unknown]).await;
    let s = status(
        cms(&client)
            .create(&PostParams::default(), &config_map("b", &[], "v"))
            .await
            .unwrap_err(),
    );
    assert_eq!(s.code, 500);
    assert!(
        s.message.starts_with(
            r#"Internal error occurred: failed calling webhook "nowhere.herald.test": failed to call webhook: Post "https://nowhere.herald.svc:443/allow?timeout=10s": service "herald/nowhere" port 443 has no address"#
        ),
        "{}",
        s.message
    );
}

#[tokio::test]
async fn a_certificate_the_ca_bundle_does_not_vouch_for_fails_the_call() {
    let (server, pki) = (server().await, Pki::new());
    let webhook = Webhook::start(&pki).await;
    let client = client(&server);
    let mut hook = webhook.hook("tls.herald.test", "/allow", &["configmaps"], json!({}));
    hook["clientConfig"]["caBundle"] = json!(Pki::new().ca_bundle);
    validating(&client, "tls", vec![hook]).await;
    let s = status(
        cms(&client)
            .create(&PostParams::default(), &config_map("a", &[], "v"))
            .await
            .unwrap_err(),
    );
    assert_eq!(s.code, 500);
    assert!(s.message.contains("tls: "), "{}", s.message);
    assert_eq!(webhook.calls("/allow").len(), 0);
}

#[tokio::test]
async fn a_configuration_change_applies_to_the_next_request() {
    let (server, pki) = (server().await, Pki::new());
    let webhook = Webhook::start(&pki).await;
    let client = client(&server);
    validating(
        &client,
        "deny",
        vec![webhook.hook("deny.herald.test", "/deny", &["configmaps"], json!({}))],
    )
    .await;
    assert!(
        cms(&client)
            .create(&PostParams::default(), &config_map("a", &[], "v"))
            .await
            .is_err()
    );
    let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let mut config = api.get("deny").await.unwrap();
    let hooks = config.webhooks.as_mut().unwrap();
    hooks[0].client_config.url = Some(format!("https://{}/allow", webhook.addr));
    api.replace("deny", &PostParams::default(), &config)
        .await
        .unwrap();
    cms(&client)
        .create(&PostParams::default(), &config_map("a", &[], "v"))
        .await
        .unwrap();
    assert_eq!(webhook.calls("/allow").len(), 1);
}
