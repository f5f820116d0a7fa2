//! Blind writes (issue 38, class 1): a plugin granted to write a kind it may
//! not read gets nothing of an object back, through any verb or patch type:
//! not in an answer, an error, a cause, the host's log or audit lines. The
//! operations that read the object (JSON Patch `copy`, `move`, `test`,
//! `$setElementOrder`, an apply without force) are refused before anything
//! is sent; everything the server says about the object is withheld.
//!
//! Run against a real kube-apiserver too (`HERALD_TEST_KUBECONFIG`), whose
//! patch handler quotes the whole patched object when it cannot decode it.

use super::acting::{Actor, command, granted, outcome};
use super::authority::{neighbour_saw_everything, start_neighbour};
use base64::Engine as _;
use herald::capability::Grants;
use herald::capability::Mode;
use herald_tests::{PATIENCE, eventually, host_log};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

/// Secrets' write rule: every writing verb, no read grant.
fn secret_writes() -> Value {
    json!({"verbs": ["create", "update", "patch", "apply", "delete"], "group": "",
           "kind": "Secret", "namespaces": ["*"]})
}

/// kube-actor granted [`secret_writes`] and no read, in `mode`.
async fn secret_writer(mode: Mode) -> Actor {
    let rule = secret_writes();
    let grants = Grants {
        writes: vec![granted(&rule)],
        mode,
        ..Grants::default()
    };
    Actor::start(std::slice::from_ref(&rule), &[], grants).await
}

/// The hidden values: the password and another key's, plain and as the
/// server writes them (base64), unique to the namespace.
struct Hidden {
    plain: Vec<String>,
    encoded: Vec<String>,
}

impl Hidden {
    fn of(namespace: &str) -> Hidden {
        let plain = vec![
            format!("hunter2-{namespace}-password"),
            format!("swordfish-{namespace}-token"),
        ];
        let encoded = plain
            .iter()
            .map(|value| base64::engine::general_purpose::STANDARD.encode(value))
            .collect();
        Hidden { plain, encoded }
    }

    /// Panics naming the line if any hidden value appears in `lines`.
    fn assert_absent(&self, lines: &[String], place: &str) {
        for line in lines {
            for value in self.plain.iter().chain(&self.encoded) {
                assert!(
                    !line.contains(value.as_str()),
                    "{place} holds the hidden value {value:?}: {line}"
                );
            }
        }
    }
}

/// Makes the Secret `db` as the cluster's admin, holding the hidden values.
async fn make_secret(actor: &Actor, hidden: &Hidden) -> Api<Secret> {
    let secrets: Api<Secret> = Api::namespaced(actor.cluster.client.clone(), actor.namespace());
    let secret: Secret = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db"},
        "data": {"password": hidden.encoded[0], "token": hidden.encoded[1]},
    }))
    .unwrap();
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    secrets
}

/// The attacks the host refuses itself, with the cause field it names.
fn refused_attacks(hidden: &Hidden) -> Vec<(Value, &'static str)> {
    let json_patch =
        |ops: Value| json!({"verb": "patch", "patchType": "json", "body": ops.to_string()});
    vec![
        // Copy a value into a field the server validates and quotes.
        (
            json_patch(json!([{"op": "copy", "from": "/data/password", "path": "/apiVersion"}])),
            "body[0].op",
        ),
        (
            json_patch(
                json!([{"op": "add", "path": "/metadata/labels", "value": {}},
                              {"op": "move", "from": "/data/token", "path": "/kind"}]),
            ),
            "body[1].op",
        ),
        // An oracle for a guessed value, right and wrong.
        (
            json_patch(
                json!([{"op": "test", "path": "/data/password", "value": hidden.encoded[0]}]),
            ),
            "body[0].op",
        ),
        (
            json_patch(json!([{"op": "test", "path": "/data/password", "value": "Z3Vlc3M="}])),
            "body[0].op",
        ),
        // The server compares an element order with the live list.
        (
            json!({"verb": "patch", "patchType": "strategic",
                   "body": json!({"metadata": {"$setElementOrder/finalizers": ["a"]}}).to_string()}),
            "body.metadata.$setElementOrder/finalizers",
        ),
        // An apply without force conflicts exactly where a value differs.
        (
            json!({"verb": "apply", "force": "false",
                   "body": json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db"},
                                  "data": {"password": "Z3Vlc3M="}}).to_string()}),
            "force",
        ),
    ]
}

/// Writes the server refuses, some in ways a real kube-apiserver answers by
/// quoting the object (a patched object it cannot decode).
fn server_refused_attacks() -> Vec<Value> {
    let number = json!({"data": {"token": 12345}}).to_string();
    vec![
        json!({"verb": "patch", "patchType": "json",
               "body": json!([{"op": "replace", "path": "/data/token", "value": 12345}]).to_string()}),
        json!({"verb": "patch", "patchType": "json",
               "body": json!([{"op": "replace", "path": "/data", "value": "not a map"}]).to_string()}),
        json!({"verb": "patch", "patchType": "json",
               "body": json!([{"op": "remove", "path": "/data/absent"}]).to_string()}),
        json!({"verb": "patch", "patchType": "merge", "body": number}),
        json!({"verb": "patch", "patchType": "strategic", "body": number}),
        json!({"verb": "patch", "patchType": "merge",
               "body": json!({"metadata": {"name": "Not A Name"}}).to_string()}),
        json!({"verb": "apply", "force": "true",
               "body": json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db"},
                              "data": {"token": 12345}}).to_string()}),
        json!({"verb": "replace",
               "body": json!({"apiVersion": "v1", "kind": "Secret",
                              "metadata": {"name": "db", "resourceVersion": "1"},
                              "data": {"token": "eA=="}}).to_string()}),
        json!({"verb": "create",
               "body": json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db"}}).to_string()}),
    ]
}

/// Runs every attack as `actor` on the Secret in `secrets` and checks what
/// came back.
async fn attack(actor: &Actor, secrets: &Api<Secret>, hidden: &Hidden) {
    let log = host_log();
    let ns = actor.namespace().to_owned();
    let secret = json!({"kind": "Secret", "namespace": ns, "name": "db"});
    let sent_before = actor.sent();
    for (data, field) in refused_attacks(hidden) {
        let lines = actor.run(command(&secret, data.clone())).await;
        assert_eq!(outcome(&lines[0]), "invalid", "{data}: {lines:?}");
        assert!(
            lines[0].ends_with(&format!("causes={field}")),
            "{data}: {lines:?}"
        );
    }
    assert_eq!(
        actor.sent(),
        sent_before,
        "the operations that read the object are refused before anything is sent"
    );
    let stored = secrets.get("db").await.unwrap().data.unwrap();
    assert_eq!(
        stored["password"].0,
        hidden.plain[0].as_bytes(),
        "no refused operation changed the password"
    );
    // What the server answers these depends on the server (a real one
    // quotes the patched object it cannot decode): whatever it is, it is
    // checked below.
    for data in server_refused_attacks() {
        actor.run(command(&secret, data)).await;
    }
    // Nothing of the Secret anywhere: the plugin's answers and errors (its
    // whole-error lines), the host's warnings and audit lines.
    hidden.assert_absent(&actor.lines(), "what the plugin was told");
    hidden.assert_absent(&log.lines_with(&[&ns]), "the host's log");
    hidden.assert_absent(&log.lines_with(&["plugin API call"]), "the audit log");
    assert!(
        !log.lines_with(&["plugin API call", &ns, "invalid"])
            .is_empty()
            || !log
                .lines_with(&["plugin API call", &ns, "would-be-invalid"])
                .is_empty(),
        "the refusals were audited"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_that_may_write_but_not_read_a_kind_gets_nothing_of_it_back() {
    let actor = secret_writer(Mode::Enforce).await;
    let sink = start_neighbour(&actor).await;
    let hidden = Hidden::of(actor.namespace());
    let secrets = make_secret(&actor, &hidden).await;
    attack(&actor, &secrets, &hidden).await;
    neighbour_saw_everything(&actor, &sink).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blind_write_in_dry_run_reports_no_value_either() {
    let actor = secret_writer(Mode::DryRun).await;
    let hidden = Hidden::of(actor.namespace());
    let secrets = make_secret(&actor, &hidden).await;
    attack(&actor, &secrets, &hidden).await;
    // The dry-run report of a write that would succeed names fields only.
    let ns = actor.namespace().to_owned();
    let secret = json!({"kind": "Secret", "namespace": ns, "name": "db"});
    let lines = actor
        .run(command(
            &secret,
            json!({"verb": "patch", "patchType": "merge",
                   "body": json!({"data": {"extra": "eA=="}}).to_string()}),
        ))
        .await;
    assert_eq!(outcome(&lines[0]), "ok", "{lines:?}");
    let log = host_log();
    eventually("the dry-run report of the patch", PATIENCE, async || {
        !log.lines_with(&[&ns, "would change"]).is_empty()
    })
    .await;
    let reports = log.lines_with(&[&ns, "would change"]);
    hidden.assert_absent(&reports, "the dry-run report");
    assert!(
        reports.iter().any(|line| line.contains("data.extra")),
        "{reports:?}"
    );
}
