//! Scopes that widen (issue 38, class 3): a namespace never narrows a
//! cluster-scoped kind, so neither a subscription nor a read grant naming
//! one covers it. The informer and the API path drop the namespace of a
//! cluster-scoped kind; a check that saw it would have let a plugin granted
//! one namespace receive, cache and list every Namespace.

use super::acting::{Actor, command, granted, outcome};
use super::reload::{Rig, write};
use herald::capability::Grants;
use herald::capability::events::EventsGrant;
use herald::capability::log::MemorySink;
use herald::capability::reads::{ReadPolicy, ReadRule, Reads};
use herald::daemon::{Daemon, StartError};
use herald::plugin::{LoadOptions, LoadedPlugin};
use herald::reload::{FileState, PluginConfig};
use herald_tests::{PATIENCE, artifacts, engine, eventually, load_with};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// `reads.defaultReadable: []`: every read needs a grant.
fn strict() -> ReadPolicy {
    ReadPolicy {
        default_readable: Vec::new(),
        sensitive: Vec::new(),
        default_cluster: None,
    }
}

fn rule(group: &str, kind: &str, namespaces: &[&str]) -> ReadRule {
    ReadRule {
        group: group.into(),
        kind: kind.into(),
        namespaces: namespaces.iter().map(|n| n.to_string()).collect(),
        clusters: Default::default(),
    }
}

/// A grant of every kind, in namespace `allowed` only.
fn allowed_only() -> Vec<ReadRule> {
    vec![rule("*", "*", &["allowed"])]
}

/// The recorder as `name`, subscribed to `kind` (in `namespace`, if any),
/// under the strict policy with `granted`.
fn recorder(
    name: &str,
    kind: Value,
    namespace: Option<&str>,
    granted: Vec<ReadRule>,
) -> LoadOptions {
    let mut config = json!({"name": name, "kind": kind});
    if let Some(namespace) = namespace {
        config["namespace"] = json!(namespace);
    }
    LoadOptions {
        config: Some(config.to_string()),
        grants: Grants {
            reads: Reads {
                policy: strict(),
                granted,
            },
            ..Grants::default()
        },
        ..LoadOptions::default()
    }
}

/// Starts a recorder of the ConfigMaps of `namespace`, granted them, in
/// `daemon`: what it logs shows it kept its deliveries.
async fn start_neighbour(daemon: &Daemon, namespace: &str) -> MemorySink {
    let (plugin, sink) = load_with(
        artifacts::RECORDER,
        recorder(
            "neighbour",
            json!({"version": "v1", "kind": "ConfigMap"}),
            Some(namespace),
            vec![rule("", "ConfigMap", &[namespace])],
        ),
    );
    daemon.start(plugin).await.expect("the neighbour starts");
    sink
}

/// Creates ConfigMaps in the rig's namespace and waits until the neighbour
/// has an add of each.
async fn neighbour_keeps_its_deliveries(rig: &Rig, sink: &MemorySink, names: &[&str]) {
    for name in names {
        rig.cluster.create_config_map(name, "a", "1").await;
    }
    super::authority::neighbour_saw(sink, &rig.cluster.namespace, names).await;
}

/// True when some running informer watches the resource `plural`.
fn watches(daemon: &Daemon, plural: &str) -> bool {
    daemon
        .informers()
        .all()
        .iter()
        .any(|informer| informer.key().resource.plural == plural)
}

fn assert_refusal_says_why(error: &str, plugin: &str, kind: &str) {
    for part in [
        format!("plugin {plugin:?}"),
        format!("{kind} is cluster-scoped"),
        "namespace \"allowed\"".to_owned(),
        format!("plugins.{plugin}.grants.reads"),
    ] {
        assert!(error.contains(&part), "{part:?} in {error}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_in_a_namespace_to_a_cluster_scoped_kind_is_refused_at_load() {
    // The reproduction: Namespaces "in allowed", granted reads in `allowed`
    // only, under `reads.defaultReadable: []`, as a file in the directory.
    let rig = Rig::start_with_reads(
        |_| {
            let mut entry = PluginConfig {
                config: Some(json!({
                    "kind": {"version": "v1", "kind": "Namespace"},
                    "namespace": "allowed",
                })),
                ..PluginConfig::default()
            };
            entry.grants.reads = allowed_only();
            BTreeMap::from([("recorder".to_owned(), entry)])
        },
        strict(),
    )
    .await;
    let ns = rig.cluster.namespace.clone();
    let sink = start_neighbour(&rig.daemon, &ns).await;
    write(
        &rig.dir.join("recorder.wasm"),
        &artifacts::bytes(artifacts::RECORDER),
    );
    let refused = rig
        .file_status("recorder.wasm", |s| s.state == FileState::Failed)
        .await;
    assert_refusal_says_why(&refused.last_error.unwrap(), "recorder", "Namespace");
    assert_eq!(rig.daemon.names(), ["neighbour"]);
    assert!(
        !watches(&rig.daemon, "namespaces"),
        "no Namespace informer (nor cache to list) was started for it"
    );
    neighbour_keeps_its_deliveries(&rig, &sink, &["after-refusal"]).await;
    assert!(
        rig.lines().iter().all(|l| l.plugin != "recorder"),
        "the refused plugin received nothing: {:?}",
        rig.lines()
    );

    // Other cluster-scoped kinds, loaded directly: refused the same way,
    // whatever the grant (here every kind in `allowed`).
    for (group, kind) in [
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("", "Node"),
        ("", "PersistentVolume"),
    ] {
        let options = recorder(
            "snoop",
            json!({"group": group, "version": "v1", "kind": kind}),
            Some("allowed"),
            allowed_only(),
        );
        let error = LoadedPlugin::load(engine(), &artifacts::bytes(artifacts::RECORDER), options)
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert_refusal_says_why(&error, "snoop", kind);
    }
    neighbour_keeps_its_deliveries(&rig, &sink, &["after-others"]).await;
    rig.finish().await;
}

/// The API group of `kind`, one of those these tests use.
fn group_of(kind: &str) -> &'static str {
    match kind {
        "ClusterRole" => "rbac.authorization.k8s.io",
        _ => "",
    }
}

#[test]
fn a_read_grant_naming_namespaces_never_covers_a_cluster_scoped_kind() {
    let load = |kind: &str, granted: Vec<ReadRule>| {
        let options = recorder(
            "snoop",
            json!({"group": group_of(kind), "version": "v1", "kind": kind}),
            None,
            granted,
        );
        LoadedPlugin::load(engine(), &artifacts::bytes(artifacts::RECORDER), options).map(|_| ())
    };
    for kind in ["Namespace", "ClusterRole", "Node"] {
        for granted in [
            allowed_only(),
            vec![rule(group_of(kind), kind, &["allowed", "kube-system"])],
        ] {
            let error = load(kind, granted).unwrap_err().to_string();
            for part in [
                "plugin \"snoop\"",
                &format!("{kind} is cluster-scoped"),
                "\"allowed\"",
                "never cover",
                "plugins.snoop.grants.reads",
            ] {
                assert!(error.contains(part), "{part:?} in {error}");
            }
        }
    }
    assert!(
        load(
            "ClusterRole",
            vec![rule(group_of("ClusterRole"), "ClusterRole", &["*"])]
        )
        .is_ok(),
        "a grant with namespaces \"*\" covers it"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_scoped_custom_kind_in_a_namespace_is_refused_once_discovery_names_it() {
    let rig = Rig::start_with_reads(|_| BTreeMap::new(), strict()).await;
    let ns = rig.cluster.namespace.clone();
    let sink = start_neighbour(&rig.daemon, &ns).await;
    // A cluster-scoped CRD of its own per test namespace.
    let group = format!("{ns}.example.com");
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "metadata": {"name": format!("gadgets.{group}")},
        "spec": {"group": group, "scope": "Cluster",
                 "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                     "schema": {"openAPIV3Schema": {"type": "object",
                         "x-kubernetes-preserve-unknown-fields": true}}}]}
    }))
    .unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(rig.cluster.client.clone());
    crds.create(&PostParams::default(), &crd).await.unwrap();
    // Its scope is unknown until discovery: the manifest and the grant
    // (every kind in `allowed`) pass at load.
    let (plugin, logs) = load_with(
        artifacts::RECORDER,
        recorder(
            "snoop",
            json!({"group": group, "version": "v1", "kind": "Gadget"}),
            Some("allowed"),
            allowed_only(),
        ),
    );
    // Discovery may take a moment to list a new CRD on a real cluster.
    let error = eventually("discovery lists Gadget", PATIENCE, async || {
        match rig.daemon.start(plugin.clone()).await {
            Err(unresolved @ StartError::Resolve { .. }) => Err(unresolved),
            Err(error) => Ok(error),
            Ok(()) => panic!("a namespace on a cluster-scoped kind was dropped, not refused"),
        }
    })
    .await;
    assert!(matches!(error, StartError::ClusterScoped(_)), "{error}");
    assert_refusal_says_why(&error.to_string(), "snoop", "Gadget");
    assert_eq!(rig.daemon.names(), ["neighbour"]);
    assert!(!watches(&rig.daemon, "gadgets"), "no informer, no cache");
    neighbour_keeps_its_deliveries(&rig, &sink, &["after-gadgets"]).await;
    assert!(logs.lines().is_empty(), "{:?}", logs.lines());
    crds.delete(&format!("gadgets.{group}"), &Default::default())
        .await
        .unwrap();
    rig.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_grant_in_a_namespace_covers_no_event_or_get_about_a_cluster_scoped_object() {
    // Its command ConfigMaps are readable by default; everything else only
    // in `default`, where an Event about a cluster-scoped object would go.
    let rules = [json!({"verbs": ["get"], "group": "", "kind": "Namespace", "namespaces": ["*"]})];
    let grants = Grants {
        events: Some(EventsGrant::default()),
        writes: vec![granted(&rules[0])],
        reads: Reads {
            policy: ReadPolicy {
                default_readable: vec![
                    herald::capability::reads::KindPattern::parse("ConfigMap").unwrap(),
                ],
                sensitive: Vec::new(),
                default_cluster: None,
            },
            granted: vec![rule("*", "*", &["default"])],
        },
        ..Grants::default()
    };
    let actor = Actor::start(&rules, &["events"], grants).await;
    // An Event about a Node "in" the granted namespace: a Node has none.
    let event = command(
        &json!({"kind": "Node", "namespace": "default", "name": "node-1"}),
        json!({"verb": "event", "reason": "Forged", "action": "Forge", "note": "n"}),
    );
    let lines = actor.run(event).await;
    assert_eq!(outcome(&lines[0]), "not-granted", "{lines:?}");
    assert!(lines[0].contains("Node is cluster-scoped"), "{lines:?}");
    // A get of a Namespace "in" the granted namespace: refused before
    // anything is sent.
    let get = command(
        &json!({"kind": "Namespace", "namespace": "default", "name": "kube-system"}),
        json!({"verb": "get"}),
    );
    let lines = actor.run(get).await;
    assert_eq!(outcome(&lines[0]), "not-granted", "{lines:?}");
    assert!(
        lines[0].contains("Namespace is cluster-scoped"),
        "{lines:?}"
    );
    let in_default: Api<k8s_openapi::api::events::v1::Event> =
        Api::namespaced(actor.cluster.client.clone(), "default");
    assert!(
        in_default
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .iter()
            .all(|e| e.reason.as_deref() != Some("Forged")),
        "no Event about the Node was written"
    );
    actor.cluster.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_events_grant_naming_default_covers_no_event_about_a_cluster_scoped_object() {
    // Events granted in `default` (where an Event about a cluster-scoped
    // object lives); only ConfigMaps readable, so neither Nodes nor Pods.
    let grants = Grants {
        events: Some(EventsGrant {
            namespaces: ["default".to_owned()].into(),
            clusters: Default::default(),
        }),
        reads: Reads {
            policy: ReadPolicy {
                default_readable: vec![
                    herald::capability::reads::KindPattern::parse("ConfigMap").unwrap(),
                ],
                sensitive: Vec::new(),
                default_cluster: None,
            },
            granted: Vec::new(),
        },
        ..Grants::default()
    };
    let actor = Actor::start(&[], &["events"], grants).await;
    let ns = actor.namespace().to_owned();
    let event = |target: Value, reason: &str| {
        command(
            &target,
            json!({"verb": "event", "reason": reason, "action": "Forge", "note": "n"}),
        )
    };
    // About a Node, with no namespace: the grant of `default` covers it not.
    let lines = actor
        .run(event(
            json!({"kind": "Node", "name": "node-1"}),
            "AboutNode",
        ))
        .await;
    assert_eq!(outcome(&lines[0]), "not-granted", "{lines:?}");
    assert!(
        lines[0].contains("covers no cluster-scoped object"),
        "{lines:?}"
    );
    // About a Pod in `default`, which the grant names: recorded.
    let lines = actor
        .run(event(
            json!({"kind": "Pod", "namespace": "default", "name": "web"}),
            "AboutPod",
        ))
        .await;
    assert_eq!(outcome(&lines[0]), "ok", "{lines:?}");
    // About a Pod in the test's namespace, which it does not: refused.
    let lines = actor
        .run(event(
            json!({"kind": "Pod", "namespace": ns, "name": "web"}),
            "AboutOtherPod",
        ))
        .await;
    assert_eq!(outcome(&lines[0]), "not-granted", "{lines:?}");
    let in_default: Api<k8s_openapi::api::events::v1::Event> =
        Api::namespaced(actor.cluster.client.clone(), "default");
    let reasons: Vec<String> = in_default
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|e| e.reason)
        .collect();
    assert!(
        !reasons.iter().any(|r| r == "AboutNode"),
        "no Event about the Node was written: {reasons:?}"
    );
    actor.cluster.cleanup().await;
}
