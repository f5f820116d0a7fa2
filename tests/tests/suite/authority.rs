//! The authority boundary, tried as a hostile plugin author would: one test
//! per class of attack (issue 27), each checking what the API server (or
//! the HTTP server) holds afterwards, the record the host kept, and that a
//! neighbour plugin kept its deliveries. The log-forging and flooding class
//! needs the host's own text log, so it runs the real binary:
//! `host/tests/cli/hostile.rs`.

use super::acting::{Actor, command, config_map_rule, granted, outcome, target};
use super::egress::{Probe, TestServer};
use super::reload::{Rig, write};
use base64::Engine as _;
use herald::capability::events::EventsGrant;
use herald::capability::log::MemorySink;
use herald::capability::reads::{ReadPolicy, ReadRule, Reads};
use herald::capability::{Grants, Mode};
use herald::daemon::Daemon;
use herald::plugin::{LoadOptions, LoadedPlugin, digest};
use herald::reload::{FileState, PluginConfig};
use herald_tests::{PATIENCE, artifacts, engine, eventually, load_with, messages};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{Api, ListParams, PostParams};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// A recorder of the ConfigMaps in `namespace`, the hostile plugin's
/// neighbour: what it logs shows it kept getting its notifications.
pub(super) fn neighbour(namespace: &str) -> (LoadedPlugin, MemorySink) {
    let config = json!({
        "name": "neighbour",
        "kind": {"version": "v1", "kind": "ConfigMap"},
        "namespace": namespace,
    });
    load_with(
        artifacts::RECORDER,
        LoadOptions {
            config: Some(config.to_string()),
            ..LoadOptions::default()
        },
    )
}

/// Starts the neighbour in the actor's namespace and daemon.
pub(super) async fn start_neighbour(actor: &Actor) -> MemorySink {
    let (plugin, sink) = neighbour(actor.namespace());
    actor.daemon.start(plugin).await.unwrap();
    sink
}

/// The names of the ConfigMaps in the actor's namespace, as the server has them.
async fn config_map_names(actor: &Actor) -> Vec<String> {
    actor
        .cluster
        .config_maps()
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|cm| cm.metadata.name)
        .collect()
}

/// Waits until the neighbour has seen an add of every ConfigMap now in its
/// namespace (the hostile plugin's commands among them).
pub(super) async fn neighbour_saw_everything(actor: &Actor, sink: &MemorySink) {
    let names = config_map_names(actor).await;
    neighbour_saw(sink, actor.namespace(), &names).await;
}

/// Waits until the neighbour logging to `sink` has seen an add of each
/// ConfigMap of `names` in namespace `ns`.
pub(super) async fn neighbour_saw(sink: &MemorySink, ns: &str, names: &[impl AsRef<str>]) {
    eventually("the neighbour sees every ConfigMap", PATIENCE, async || {
        let seen = messages(&sink.lines());
        let unseen: Vec<&str> = names
            .iter()
            .map(AsRef::as_ref)
            .filter(|name| {
                let key = format!("key={ns}/{name} ");
                !seen
                    .iter()
                    .any(|m| m.starts_with("event=add") && m.contains(&key))
            })
            .collect();
        if unseen.is_empty() {
            Ok(())
        } else {
            Err(format!("no add yet of {unseen:?}"))
        }
    })
    .await;
}

/// The field managers of `cm`.
fn managers(cm: &ConfigMap) -> Vec<String> {
    cm.metadata
        .managed_fields
        .iter()
        .flatten()
        .filter_map(|entry| entry.manager.clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_cannot_reach_a_query_parameter_or_a_subresource() {
    let config_maps = config_map_rule(&["get", "patch"], &["*"]);
    let pods = json!({"verbs": ["patch"], "group": "", "kind": "Pod", "namespaces": ["*"]});
    let grants = Grants {
        writes: vec![granted(&config_maps), granted(&pods)],
        ..Grants::default()
    };
    let actor = Actor::start(&[config_maps.clone(), pods.clone()], &[], grants).await;
    let ns = actor.namespace().to_owned();
    let sink = start_neighbour(&actor).await;
    // An object owned by someone else, and a Pod with a status.
    let owned: ConfigMap = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "owned"}, "data": {"a": "1"},
    }))
    .unwrap();
    let post = PostParams {
        field_manager: Some("owner".into()),
        ..PostParams::default()
    };
    actor
        .cluster
        .config_maps()
        .create(&post, &owned)
        .await
        .unwrap();
    actor.cluster.create_pod("web", "web").await;
    let pods_api: Api<Pod> = actor.cluster.pods();
    let status_before = serde_json::to_value(pods_api.get("web").await.unwrap().status).unwrap();

    let merge = json!({"data": {"a": "pwned"}}).to_string();
    // A query cut into the name (its own field manager, a dry run turned
    // off, a fragment), and a subresource reached through it.
    for name in [
        "owned?fieldManager=kubectl-client-side-apply",
        "owned?dryRun=None",
        "owned#fragment",
        "owned%3FfieldManager=x",
        "owned/status",
        "../configmaps/owned",
    ] {
        let lines = actor
            .run(command(
                &target(&ns, name),
                json!({"verb": "patch", "patchType": "merge", "body": merge}),
            ))
            .await;
        assert_eq!(outcome(&lines[0]), "invalid", "{name}: {lines:?}");
        assert!(lines[0].contains("target.name"), "{lines:?}");
    }
    let status = json!({"status": {"phase": "Failed"}}).to_string();
    let pod = json!({"kind": "Pod", "namespace": ns, "name": "web/status"});
    let lines = actor
        .run(command(
            &pod,
            json!({"verb": "patch", "patchType": "merge", "body": status}),
        ))
        .await;
    assert_eq!(outcome(&lines[0]), "invalid", "{lines:?}");
    // A namespace, kind or version reaching for more.
    for (field, value) in [
        ("namespace", json!("kube-system/configmaps/x?a=")),
        ("kind", json!("ConfigMap/status")),
        ("version", json!("v1/namespaces/kube-system")),
    ] {
        let mut reaching = target(&ns, "owned");
        reaching[field] = value;
        let lines = actor
            .run(command(
                &reaching,
                json!({"verb": "patch", "patchType": "merge", "body": merge}),
            ))
            .await;
        assert_eq!(outcome(&lines[0]), "invalid", "{field}: {lines:?}");
    }

    // The server's state: the object untouched and owned by its owner alone,
    // the Pod's status untouched.
    let after = actor.config_map("owned").await.unwrap();
    assert_eq!(managers(&after), ["owner"]);
    assert_eq!(after.data.unwrap()["a"], "1");
    let status_after = serde_json::to_value(pods_api.get("web").await.unwrap().status).unwrap();
    assert_eq!(status_after, status_before);
    // The record: every call refused before a request was built.
    let stats = &actor.access.stats;
    assert_eq!(stats.requests("kube-actor", "patch", "invalid"), 10);
    assert_eq!(stats.requests("kube-actor", "patch", "ok"), 0);
    neighbour_saw_everything(&actor, &sink).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_cannot_cut_off_the_dry_run_of_a_plugin_in_dry_run() {
    let rule = config_map_rule(&["get", "create", "apply", "patch", "delete"], &["*"]);
    let grants = Grants {
        mode: Mode::DryRun,
        writes: vec![granted(&rule)],
        ..Grants::default()
    };
    let actor = Actor::start(std::slice::from_ref(&rule), &[], grants).await;
    let ns = actor.namespace().to_owned();
    let sink = start_neighbour(&actor).await;
    for name in ["ghost?dryRun=", "ghost#", "ghost?x=1&dryRun=None"] {
        let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
                          "metadata": {"name": name}, "data": {"a": "1"}});
        let lines = actor
            .run(command(
                &target(&ns, name),
                json!({"verb": "apply", "body": body.to_string()}),
            ))
            .await;
        assert_eq!(outcome(&lines[0]), "invalid", "{name}: {lines:?}");
    }
    // A well-formed dry-run apply is sent, and persists nothing.
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": {"name": "ghost"}, "data": {"a": "1"}});
    let lines = actor
        .run(command(
            &target(&ns, "ghost"),
            json!({"verb": "apply", "body": body.to_string()}),
        ))
        .await;
    assert_eq!(outcome(&lines[0]), "ok", "{lines:?}");
    let names = config_map_names(&actor).await;
    assert!(
        names.iter().all(|name| !name.starts_with("ghost")),
        "nothing persisted: {names:?}"
    );
    let stats = &actor.access.stats;
    assert_eq!(stats.requests("kube-actor", "apply", "invalid"), 3);
    assert_eq!(stats.requests("kube-actor", "apply", "would-succeed"), 1);
    neighbour_saw_everything(&actor, &sink).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_are_read_only_through_a_grant_naming_them() {
    let secrets_in = |namespace: &str| {
        json!({
            "name": "secret-reader",
            "kind": {"version": "v1", "kind": "Secret"},
            "namespace": namespace,
        })
    };
    let load = |config: Value, grants: Grants| {
        LoadedPlugin::load(
            engine(),
            &artifacts::bytes(artifacts::RECORDER),
            LoadOptions {
                config: Some(config.to_string()),
                grants,
                ..LoadOptions::default()
            },
        )
    };
    // No grant: refused at load, naming the grant to add.
    let refused = load(secrets_in("team-a"), Grants::default())
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("plugins.secret-reader.grants.reads"),
        "{refused}"
    );
    assert!(refused.contains("sensitive"), "{refused}");
    // A grant of everything does not reach a sensitive kind.
    let everything = Grants {
        reads: Reads {
            granted: vec![ReadRule {
                group: "*".into(),
                kind: "*".into(),
                namespaces: ["*".to_owned()].into(),
                clusters: Default::default(),
            }],
            ..Reads::default()
        },
        ..Grants::default()
    };
    assert!(load(secrets_in("team-a"), everything).is_err());
    // A grant naming Secrets in one namespace: that namespace, not all.
    let team_a = Grants {
        reads: Reads {
            granted: vec![ReadRule {
                group: String::new(),
                kind: "Secret".into(),
                namespaces: ["team-a".to_owned()].into(),
                clusters: Default::default(),
            }],
            ..Reads::default()
        },
        ..Grants::default()
    };
    assert!(load(secrets_in("team-a"), team_a.clone()).is_ok());
    let all = json!({"name": "secret-reader", "kind": {"version": "v1", "kind": "Secret"}});
    assert!(load(all, team_a).is_err());
    // An operator who approves every read: even Pods need a grant.
    let strict = Grants {
        reads: Reads {
            policy: ReadPolicy {
                default_readable: Vec::new(),
                sensitive: Vec::new(),
                default_cluster: None,
            },
            granted: Vec::new(),
        },
        ..Grants::default()
    };
    let pods = json!({"name": "pod-reader"});
    let refused = load(pods, strict).unwrap_err().to_string();
    assert!(refused.contains("not readable by default"), "{refused}");

    // `kube` gets are reads too: a get of a Secret needs the read grant on
    // top of the declared get rule.
    let get_secrets = json!({"verbs": ["get"], "group": "", "kind": "Secret", "namespaces": ["*"]});
    let grants = Grants {
        writes: vec![granted(&get_secrets)],
        ..Grants::default()
    };
    let actor = Actor::start(std::slice::from_ref(&get_secrets), &[], grants).await;
    let ns = actor.namespace().to_owned();
    let secret = json!({"kind": "Secret", "namespace": ns, "name": "token"});
    let lines = actor.run(command(&secret, json!({"verb": "get"}))).await;
    assert_eq!(outcome(&lines[0]), "not-granted", "{lines:?}");
    assert!(lines[0].contains("grants.reads"), "{lines:?}");
    assert_eq!(
        actor
            .access
            .stats
            .requests("kube-actor", "get", "not-granted"),
        1
    );

    // A write grant is not a read grant: the answer to a write on a Secret
    // says which object was written, never its data.
    let write_secrets =
        json!({"verbs": ["create", "patch"], "group": "", "kind": "Secret", "namespaces": ["*"]});
    let grants = Grants {
        writes: vec![granted(&write_secrets)],
        ..Grants::default()
    };
    let writer = Actor::start(std::slice::from_ref(&write_secrets), &[], grants).await;
    let ns = writer.namespace().to_owned();
    let sink = start_neighbour(&writer).await;
    let secret = json!({"kind": "Secret", "namespace": ns, "name": "db"});
    let body = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db"},
                      "data": {"password": "aHVudGVyMg=="}})
    .to_string();
    let created = writer
        .run(command(&secret, json!({"verb": "create", "body": body})))
        .await;
    assert_eq!(outcome(&created[0]), "ok", "{created:?}");
    assert!(
        created[0].ends_with("fields=apiVersion,kind,metadata"),
        "{created:?}"
    );
    // An empty merge patch answers with the whole object, were it returned.
    let patched = writer
        .run(command(
            &secret,
            json!({"verb": "patch", "patchType": "merge", "body": "{}"}),
        ))
        .await;
    assert_eq!(outcome(&patched[0]), "ok", "{patched:?}");
    assert!(
        patched[0].ends_with("fields=apiVersion,kind,metadata"),
        "{patched:?}"
    );
    let stored: k8s_openapi::api::core::v1::Secret =
        Api::namespaced(writer.cluster.client.clone(), &ns)
            .get("db")
            .await
            .unwrap();
    assert!(
        stored
            .data
            .is_some_and(|data| data.contains_key("password"))
    );
    neighbour_saw_everything(&writer, &sink).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_sends_no_unsafe_request_and_says_what_it_would_have_done() {
    let server = TestServer::start().await;
    let probe = Probe::start_in(json!({"allowedOrigins": [server.origin()]}), Mode::DryRun).await;
    for method in ["POST", "PUT", "DELETE"] {
        let outcome = probe
            .send_with(json!({"url": server.url("/ok"), "method": method, "body": "alert"}))
            .await;
        assert_eq!(outcome, ["status=202 bytes=0 location=-"], "{method}");
    }
    assert_eq!(
        server.seen.connections.load(Ordering::SeqCst),
        0,
        "no unsafe request left the host"
    );
    // A safe method is a read: sent, as in enforce mode.
    let get = probe.send_with(json!({"url": server.url("/ok")})).await;
    assert_eq!(get, ["status=200 bytes=5 location=-"]);
    assert_eq!(server.seen.paths.lock().unwrap().as_slice(), ["/ok"]);
    probe.finish().await;

    // Events in dry-run: written with dryRun=All, nothing persists, and
    // the counter says what would have been.
    let grants = Grants {
        mode: Mode::DryRun,
        events: Some(EventsGrant::default()),
        ..Grants::default()
    };
    let actor = Actor::start(&[], &["events"], grants).await;
    let ns = actor.namespace().to_owned();
    let sink = start_neighbour(&actor).await;
    actor.cluster.create_pod("subject", "a").await;
    let about = json!({"kind": "Pod", "namespace": ns, "name": "subject"});
    let lines = actor
        .run(command(
            &about,
            json!({"verb": "event", "reason": "Checked", "action": "Check", "note": "dry"}),
        ))
        .await;
    assert_eq!(outcome(&lines[0]), "ok", "{lines:?}");
    assert_eq!(actor.access.stats.events("kube-actor", "would-create"), 1);
    assert_eq!(actor.access.stats.events("kube-actor", "created"), 0);
    let events: Api<k8s_openapi::api::events::v1::Event> =
        Api::namespaced(actor.cluster.client.clone(), &ns);
    assert!(
        events
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    neighbour_saw_everything(&actor, &sink).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_live_with_their_object_and_need_its_read() {
    let strict = ReadPolicy {
        default_readable: vec![herald::capability::reads::KindPattern::parse("ConfigMap").unwrap()],
        sensitive: Vec::new(),
        default_cluster: None,
    };
    let grants = Grants {
        events: Some(EventsGrant::default()),
        reads: Reads {
            policy: strict,
            granted: Vec::new(),
        },
        ..Grants::default()
    };
    let actor = Actor::start(&[], &["events"], grants).await;
    let ns = actor.namespace().to_owned();
    let sink = start_neighbour(&actor).await;
    let event = |about: Value| {
        command(
            &about,
            json!({"verb": "event", "reason": "Forged", "action": "Forge", "note": "n"}),
        )
    };
    // About objects it may not read, in a namespace not its own.
    for about in [
        json!({"kind": "Pod", "namespace": "kube-system", "name": "kube-apiserver"}),
        json!({"kind": "Secret", "namespace": ns, "name": "token"}),
        json!({"kind": "Node", "name": "node-1"}),
    ] {
        let lines = actor.run(event(about.clone())).await;
        assert_eq!(outcome(&lines[0]), "not-granted", "{about}: {lines:?}");
    }
    // About a ConfigMap it may read: recorded, in the ConfigMap's namespace.
    actor.cluster.create_config_map("readable", "a", "1").await;
    let about = json!({"kind": "ConfigMap", "namespace": ns, "name": "readable"});
    let lines = actor.run(event(about)).await;
    assert_eq!(outcome(&lines[0]), "ok", "{lines:?}");
    let in_system: Api<k8s_openapi::api::events::v1::Event> =
        Api::namespaced(actor.cluster.client.clone(), "kube-system");
    let forged = in_system
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("Forged"))
        .count();
    assert_eq!(forged, 0, "nothing was written in kube-system");
    let mine: Api<k8s_openapi::api::events::v1::Event> =
        Api::namespaced(actor.cluster.client.clone(), &ns);
    let recorded = mine.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(recorded.len(), 1);
    assert_eq!(actor.access.stats.events("kube-actor", "not-granted"), 3);
    neighbour_saw_everything(&actor, &sink).await;
}

/// A keypair as `cosign generate-key-pair` makes (ECDSA P-256): the public
/// key as PEM, and a signer of files in `cosign sign-blob`'s format.
pub(super) struct Signer {
    pair: ring::signature::EcdsaKeyPair,
}

impl Signer {
    pub(super) fn new() -> Signer {
        use ring::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair};
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &rng).unwrap();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, pkcs8.as_ref(), &rng)
            .unwrap();
        Signer { pair }
    }

    pub(super) fn public_pem(&self) -> String {
        use ring::signature::KeyPair;
        let mut der = vec![
            0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06,
            0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
        ];
        der.extend_from_slice(self.pair.public_key().as_ref());
        let body = base64::engine::general_purpose::STANDARD.encode(der);
        format!("-----BEGIN PUBLIC KEY-----\n{body}\n-----END PUBLIC KEY-----\n")
    }

    pub(super) fn sign(&self, bytes: &[u8]) -> String {
        let rng = ring::rand::SystemRandom::new();
        let signature = self.pair.sign(&rng, bytes).unwrap();
        base64::engine::general_purpose::STANDARD.encode(signature.as_ref())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_with_authority_loads_only_as_a_build_the_operator_knows() {
    let hostile = artifacts::bytes(artifacts::HOSTILE);
    let granted = |extra: PluginConfig| {
        let mut entry = PluginConfig {
            config: Some(json!({"name": "hostile"})),
            ..extra
        };
        entry.grants.events = Some(EventsGrant::default());
        BTreeMap::from([("hostile".to_owned(), entry)])
    };
    // A file claiming a name granted Events, neither pinned nor signed.
    let rig =
        Rig::start_with_namespaced(|_| granted(PluginConfig::default()), Default::default()).await;
    write(&rig.dir.join("hostile.wasm"), &hostile);
    let refused = rig
        .file_status("hostile.wasm", |s| s.state == FileState::Failed)
        .await;
    let error = refused.last_error.unwrap();
    assert!(error.contains("is granted Events"), "{error}");
    assert!(
        error.contains(&format!("plugins.hostile.sha256: [{}]", digest(&hostile))),
        "{error}"
    );
    assert!(rig.daemon.names().iter().all(|n| n != "hostile"));
    rig.finish().await;

    // Pinned: it loads.
    let pin = PluginConfig {
        sha256: vec![digest(&hostile)],
        ..PluginConfig::default()
    };
    let rig = Rig::start_with_namespaced(|_| granted(pin), Default::default()).await;
    write(&rig.dir.join("hostile.wasm"), &hostile);
    rig.running("hostile.wasm", &hostile).await;
    rig.finish().await;

    // Signed by a trusted key: it loads; by another key: refused.
    let signer = Signer::new();
    let keys = super::reload::temp_dir("keys");
    std::fs::write(keys.join("cosign.pub"), signer.public_pem()).unwrap();
    let rig = Rig::start_with_keys(
        |_| granted(PluginConfig::default()),
        Default::default(),
        vec![keys.join("cosign.pub")],
    )
    .await;
    std::fs::write(
        rig.dir.join("hostile.wasm.sig"),
        Signer::new().sign(&hostile),
    )
    .unwrap();
    write(&rig.dir.join("hostile.wasm"), &hostile);
    let refused = rig
        .file_status("hostile.wasm", |s| s.state == FileState::Failed)
        .await;
    assert!(refused.last_error.unwrap().contains("not by any key"));
    std::fs::write(rig.dir.join("hostile.wasm.sig"), signer.sign(&hostile)).unwrap();
    rig.running("hostile.wasm", &hostile).await;
    rig.finish().await;

    // The operator's explicit opt-out for this plugin.
    let unpinned = PluginConfig {
        allow_unpinned: true,
        ..PluginConfig::default()
    };
    let rig = Rig::start_with_namespaced(|_| granted(unpinned), Default::default()).await;
    write(&rig.dir.join("hostile.wasm"), &hostile);
    rig.running("hostile.wasm", &hostile).await;
    rig.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_bodies_are_capped_and_user_information_is_refused() {
    let server = TestServer::start().await;
    let probe = Probe::start(json!({
        "allowedOrigins": [server.origin()],
        "maxRequestSize": "64Ki",
    }))
    .await;
    // A body far over the cap, streamed: cut at the cap.
    let cut = probe
        .send_with(json!({"url": server.url("/sink"), "method": "POST",
                          "bodyBytes": (4 << 20).to_string()}))
        .await;
    assert_eq!(
        cut,
        ["error=ErrorCode::HttpRequestBodySize(None)"],
        "{cut:?}"
    );
    let received = server.seen.bytes.load(Ordering::SeqCst);
    assert!(
        received < (64 << 10) + 16 * 1024,
        "the server got {received} bytes, past the 64 KiB cap"
    );
    // The cut request's connection is counted when the server's accept
    // loop gets to it, which may be after the plugin has its error.
    let connections = eventually(
        "the server has counted the cut request's connection",
        PATIENCE,
        async || match server.seen.connections.load(Ordering::SeqCst) {
            0 => Err("no connection counted".to_owned()),
            n => Ok(n),
        },
    )
    .await;
    // User information aimed at the granted origin: refused, not forwarded.
    let with_user = server.url("/ok").replace("http://", "http://admin:secret@");
    let refused = probe.send_with(json!({"url": with_user})).await;
    assert_eq!(refused, ["error=ErrorCode::HttpRequestDenied"]);
    assert_eq!(server.seen.connections.load(Ordering::SeqCst), connections);
    probe.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_cannot_keep_another_from_loading_by_taking_its_metric_names() {
    let cluster = super::cluster::TestCluster::start().await;
    let daemon = Daemon::new(
        Arc::new(super::recording::informers(cluster.client.clone())),
        herald::dispatch::RetryPolicy::default(),
    );
    let load = |name: &str, metrics: Value| {
        let config = json!({
            "name": name,
            "kind": {"version": "v1", "kind": "ConfigMap"},
            "namespace": cluster.namespace,
            "metrics": metrics,
        });
        load_with(
            artifacts::HOSTILE,
            LoadOptions {
                config: Some(config.to_string()),
                metrics: Some(daemon.plugin_metrics().clone()),
                ..LoadOptions::default()
            },
        )
    };
    // The squatter loads first, with the rightful plugin's names in other
    // shapes.
    let (squatter, _) = load(
        "squatter",
        json!([{"name": "alerts_total", "kind": "counter", "labels": ["stolen"]},
               {"name": "level", "kind": "gauge", "labels": ["x"]}]),
    );
    daemon.start(squatter).await.unwrap();
    let (rightful, logs) = load(
        "rightful",
        json!([{"name": "alerts_total", "kind": "counter", "labels": ["namespace"]},
               {"name": "level", "kind": "gauge", "labels": []}]),
    );
    daemon
        .start(rightful)
        .await
        .expect("the rightful plugin loads");
    cluster.create_config_map("trigger", "a", "1").await;
    eventually(
        "the rightful plugin handled its ConfigMap",
        PATIENCE,
        async || {
            messages(&logs.lines())
                .iter()
                .any(|m| m.starts_with("hostile done"))
        },
    )
    .await;
    let mut registry = prometheus_client::registry::Registry::default();
    registry.register_collector(Box::new(daemon.plugin_metrics().clone()));
    let text = herald::telemetry::encode(&registry);
    for family in [
        "# TYPE herald_plugin_rightful__alerts counter",
        "# TYPE herald_plugin_rightful__level gauge",
        "# TYPE herald_plugin_squatter__alerts counter",
        "# TYPE herald_plugin_squatter__level gauge",
    ] {
        assert!(text.contains(family), "{family} in:\n{text}");
    }
    assert!(
        text.contains(
            "herald_plugin_rightful__alerts_total{plugin=\"rightful\",namespace=\"v\"} 1"
        ),
        "{text}"
    );
    cluster.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_asks_how_long_its_call_has_left() {
    let cluster = super::cluster::TestCluster::start().await;
    let daemon = Daemon::new(
        Arc::new(super::recording::informers(cluster.client.clone())),
        herald::dispatch::RetryPolicy::default(),
    );
    let config = json!({
        "kind": {"version": "v1", "kind": "ConfigMap"},
        "namespace": cluster.namespace,
        "attack": "deadline",
        "callDeadlineMs": 700,
    });
    let (plugin, logs) = load_with(
        artifacts::HOSTILE,
        LoadOptions {
            config: Some(config.to_string()),
            ..LoadOptions::default()
        },
    );
    assert_eq!(plugin.world(), "herald:plugin/plugin@0.7.0");
    daemon.start(plugin).await.unwrap();
    cluster.create_config_map("now", "a", "1").await;
    eventually("the plugin logged what it has left", PATIENCE, async || {
        messages(&logs.lines())
            .iter()
            .any(|m| m.starts_with("hostile remaining_ms="))
    })
    .await;
    let line = messages(&logs.lines())
        .into_iter()
        .find(|m| m.starts_with("hostile remaining_ms="))
        .unwrap();
    let left: u64 = line["hostile remaining_ms=".len()..].parse().unwrap();
    assert!(left > 0 && left <= 700, "{line}");
    cluster.cleanup().await;
}
