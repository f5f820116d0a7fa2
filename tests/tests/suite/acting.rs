//! Plugins that act: the `kube` and `events` capabilities end to end, the
//! `kube-actor` fixture making real calls through the host's kube client to
//! the embedded API server (real HTTP), within its declared and granted
//! write rules. Each test drives the fixture with "command" ConfigMaps
//! (see `plugins/fixtures/kube-actor/README.md`) and reads the outcome of
//! each call from its log and the result from the API server.

use super::cluster::TestCluster;
use super::recording::informers;
use futures::future::BoxFuture;
use herald::capability::kube::WriteRule;
use herald::capability::kube::{ApiBackend, ApiRequest, ClusterApi, KubeError};
use herald::capability::log::MemorySink;
use herald::capability::rate::RateLimit;
use herald::capability::{ClusterAccess, Grants, Mode};
use herald::daemon::Daemon;
use herald::dispatch::RetryPolicy;
use herald::plugin::{LoadOptions, LoadedPlugin};
use herald::scratch::ScratchDir;
use herald_tests::{PATIENCE, artifacts, engine, eventually, load_with, messages};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{Api, ListParams, PostParams};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A rule for `verbs` on core ConfigMaps in `namespaces`.
pub(super) fn config_map_rule(verbs: &[&str], namespaces: &[&str]) -> Value {
    json!({"verbs": verbs, "group": "", "kind": "ConfigMap", "namespaces": namespaces})
}

/// The rule as the operator grants it.
pub(super) fn granted(rule: &Value) -> WriteRule {
    serde_json::from_value(rule.clone()).expect("a write rule")
}

/// Counts the requests that reach the cluster.
#[derive(Debug)]
struct Counting {
    inner: ClusterApi,
    sent: Arc<AtomicU64>,
}

impl ApiBackend for Counting {
    fn send(&self, request: ApiRequest) -> BoxFuture<'static, Result<String, KubeError>> {
        self.sent.fetch_add(1, Ordering::SeqCst);
        self.inner.send(request)
    }
}

/// The kube-actor fixture, running in a daemon.
pub(super) struct Actor {
    pub(super) cluster: TestCluster,
    logs: MemorySink,
    pub(super) access: ClusterAccess,
    sent: Arc<AtomicU64>,
    pub(super) daemon: Daemon,
    commands: AtomicU64,
}

impl Actor {
    /// Starts kube-actor declaring `rules` and `capabilities`, granted
    /// `grants`.
    pub(super) async fn start(rules: &[Value], capabilities: &[&str], grants: Grants) -> Actor {
        let cluster = TestCluster::start().await;
        let sent = Arc::new(AtomicU64::new(0));
        let access = ClusterAccess::new(Arc::new(Counting {
            inner: ClusterApi::new(cluster.writer.clone()),
            sent: sent.clone(),
        }));
        // Its own namespace only: tests sharing a real cluster
        // (HERALD_TEST_KUBECONFIG) would otherwise run each other's commands.
        let config = json!({
            "writes": rules,
            "capabilities": capabilities,
            "namespace": cluster.namespace,
        });
        let (plugin, logs) = load_with(
            artifacts::KUBE_ACTOR,
            LoadOptions {
                config: Some(config.to_string()),
                grants,
                access: Some(access.clone()),
                ..LoadOptions::default()
            },
        );
        let daemon = Daemon::new(
            Arc::new(informers(cluster.client.clone())),
            RetryPolicy::default(),
        );
        daemon.start(plugin).await.expect("kube-actor starts");
        Actor {
            cluster,
            logs,
            access,
            sent,
            daemon,
            commands: AtomicU64::new(0),
        }
    }

    pub(super) fn namespace(&self) -> &str {
        &self.cluster.namespace
    }

    /// Runs one command (`data`) and returns its calls' log lines, in order.
    pub(super) async fn run(&self, data: Value) -> Vec<String> {
        let name = format!("command-{}", self.commands.fetch_add(1, Ordering::SeqCst));
        let calls: usize = data["repeat"]
            .as_str()
            .map(|n| n.parse().unwrap())
            .unwrap_or(1);
        let command: ConfigMap = serde_json::from_value(json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": name,
                "labels": {"herald.dev/kube-actor": "command"},
            },
            "data": data,
        }))
        .unwrap();
        self.cluster
            .config_maps()
            .create(&PostParams::default(), &command)
            .await
            .unwrap();
        let prefix = format!("kube-actor command={}/{name} call=", self.namespace());
        let mine = || -> Vec<String> {
            messages(&self.logs.lines())
                .into_iter()
                .filter(|m| m.starts_with(&prefix))
                .collect()
        };
        eventually(&format!("{calls} calls of {name}"), PATIENCE, async || {
            mine().len() >= calls
        })
        .await;
        mine()
    }

    /// Every line the fixture has logged, as its messages.
    pub(super) fn lines(&self) -> Vec<String> {
        messages(&self.logs.lines())
    }

    /// How many requests reached the cluster's backend.
    pub(super) fn sent(&self) -> u64 {
        self.sent.load(Ordering::SeqCst)
    }

    /// A ConfigMap of the test's namespace, if it exists.
    pub(super) async fn config_map(&self, name: &str) -> Option<ConfigMap> {
        self.cluster.config_maps().get_opt(name).await.unwrap()
    }
}

/// The `outcome=` of a call's log line.
pub(super) fn outcome(line: &str) -> &str {
    line.split(" outcome=")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or_else(|| panic!("no outcome in {line:?}"))
}

fn every_verb() -> Value {
    config_map_rule(
        &["get", "create", "update", "patch", "apply", "delete"],
        &["*"],
    )
}

pub(super) fn grants(rules: &[&Value]) -> Grants {
    Grants {
        writes: rules.iter().map(|r| granted(r)).collect(),
        ..Grants::default()
    }
}

pub(super) fn target(ns: &str, name: &str) -> Value {
    json!({"kind": "ConfigMap", "namespace": ns, "name": name})
}

/// `data` for a command: the target's keys plus `extra`.
pub(super) fn command(target: &Value, extra: Value) -> Value {
    let mut data = target.clone();
    for (key, value) in extra.as_object().unwrap() {
        data[key] = value.clone();
    }
    data
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_verb_reaches_the_api_server_as_the_plugin_asked() {
    let rule = every_verb();
    let actor = Actor::start(std::slice::from_ref(&rule), &[], grants(&[&rule])).await;
    let ns = actor.namespace().to_owned();
    let made = target(&ns, "made");
    let body = |data: Value| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "made", "namespace": ns}, "data": data})
        .to_string()
    };

    let create = actor
        .run(command(
            &made,
            json!({"verb": "create", "body": body(json!({"a": "1"}))}),
        ))
        .await;
    assert_eq!(outcome(&create[0]), "ok", "{create:?}");
    let get = actor.run(command(&made, json!({"verb": "get"}))).await;
    assert_eq!(outcome(&get[0]), "ok", "{get:?}");

    let merge = json!({"metadata": {"labels": {"merged": "yes"}}}).to_string();
    let patched = actor
        .run(command(
            &made,
            json!({"verb": "patch", "patchType": "merge", "body": merge}),
        ))
        .await;
    assert_eq!(outcome(&patched[0]), "ok", "{patched:?}");
    let json_patch = json!([{"op": "add", "path": "/data/b", "value": "2"}]).to_string();
    let patched = actor
        .run(command(
            &made,
            json!({"verb": "patch", "patchType": "json", "body": json_patch}),
        ))
        .await;
    assert_eq!(outcome(&patched[0]), "ok", "{patched:?}");
    let strategic = json!({"data": {"c": "3"}}).to_string();
    let patched = actor
        .run(command(
            &made,
            json!({"verb": "patch", "patchType": "strategic", "body": strategic}),
        ))
        .await;
    assert_eq!(outcome(&patched[0]), "ok", "{patched:?}");
    let stored = actor.config_map("made").await.expect("made exists");
    assert_eq!(stored.metadata.labels.unwrap()["merged"], "yes");
    let data = stored.data.unwrap();
    assert_eq!(
        (data["a"].as_str(), data["b"].as_str(), data["c"].as_str()),
        ("1", "2", "3")
    );

    // Server-side apply: the plugin's field manager owns what it applied.
    let applied = actor
        .run(command(
            &made,
            json!({"verb": "apply", "force": "true", "body": body(json!({"applied": "yes"}))}),
        ))
        .await;
    assert_eq!(outcome(&applied[0]), "ok", "{applied:?}");
    let stored = actor.config_map("made").await.unwrap();
    assert_eq!(stored.data.as_ref().unwrap()["applied"], "yes");
    let managers: Vec<String> = stored
        .metadata
        .managed_fields
        .unwrap_or_default()
        .into_iter()
        .filter_map(|m| m.manager)
        .collect();
    assert!(
        managers.contains(&"herald.kube-actor".to_owned()),
        "{managers:?}"
    );

    // Replace, conditional on the current resourceVersion.
    let version = stored.metadata.resource_version.unwrap();
    let mut replacement: Value = serde_json::from_str(&body(json!({"replaced": "yes"}))).unwrap();
    replacement["metadata"]["resourceVersion"] = json!(version);
    let replaced = actor
        .run(command(
            &made,
            json!({"verb": "replace", "body": replacement.to_string()}),
        ))
        .await;
    assert_eq!(outcome(&replaced[0]), "ok", "{replaced:?}");
    assert_eq!(
        actor.config_map("made").await.unwrap().data.unwrap(),
        [("replaced".to_owned(), "yes".to_owned())].into()
    );

    // Delete with a UID precondition: a wrong UID is a conflict, the right one deletes.
    let uid = actor
        .config_map("made")
        .await
        .unwrap()
        .metadata
        .uid
        .unwrap();
    let refused = actor
        .run(command(
            &made,
            json!({"verb": "delete", "uid": "not-its-uid"}),
        ))
        .await;
    assert_eq!(outcome(&refused[0]), "conflict", "{refused:?}");
    let deleted = actor
        .run(command(
            &made,
            json!({"verb": "delete", "uid": uid, "propagation": "background"}),
        ))
        .await;
    assert_eq!(outcome(&deleted[0]), "ok", "{deleted:?}");
    assert!(actor.config_map("made").await.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_subresource_is_a_grant_of_its_own() {
    let status_rule = json!({"verbs": ["patch"], "group": "", "kind": "Pod",
                             "subresource": "status", "namespaces": ["*"]});
    let actor = Actor::start(
        std::slice::from_ref(&status_rule),
        &[],
        grants(&[&status_rule]),
    )
    .await;
    let ns = actor.namespace().to_owned();
    let pod: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}
    }))
    .unwrap();
    let pods: Api<Pod> = actor.cluster.pods();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let pod_target = json!({"kind": "Pod", "namespace": ns, "name": "p"});
    let phase = json!({"status": {"phase": "Running"}}).to_string();
    let status = actor
        .run(command(
            &pod_target,
            json!({"verb": "patch", "subresource": "status", "body": phase}),
        ))
        .await;
    assert_eq!(outcome(&status[0]), "ok", "{status:?}");
    let stored = pods.get("p").await.unwrap();
    assert_eq!(stored.status.unwrap().phase.as_deref(), Some("Running"));
    // The same patch on the Pod itself is outside the rule.
    let main = actor
        .run(command(&pod_target, json!({"verb": "patch", "body": "{}"})))
        .await;
    assert_eq!(outcome(&main[0]), "not-granted", "{main:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_error_is_the_typed_variant_the_server_means() {
    let rule = config_map_rule(&["get", "create", "update"], &["*"]);
    let actor = Actor::start(std::slice::from_ref(&rule), &[], grants(&[&rule])).await;
    let ns = actor.namespace().to_owned();
    let body = |name: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": name, "namespace": ns}, "data": {"a": "1"}})
    };
    let twice = target(&ns, "twice");
    let create = json!({"verb": "create", "body": body("twice").to_string(), "repeat": "2"});
    let created = actor.run(command(&twice, create)).await;
    assert_eq!(outcome(&created[0]), "ok", "{created:?}");
    assert_eq!(outcome(&created[1]), "already-exists", "{created:?}");

    let missing = actor
        .run(command(&target(&ns, "missing"), json!({"verb": "get"})))
        .await;
    assert_eq!(outcome(&missing[0]), "not-found", "{missing:?}");

    // A replace at a stale resourceVersion.
    let mut stale = body("twice");
    stale["metadata"]["resourceVersion"] = json!("1");
    let conflict = actor
        .run(command(
            &twice,
            json!({"verb": "replace", "body": stale.to_string()}),
        ))
        .await;
    assert_eq!(outcome(&conflict[0]), "conflict", "{conflict:?}");

    // An object the server refuses, with the field at fault.
    let bad = target(&ns, "Not_A_Name");
    let invalid = actor
        .run(command(
            &bad,
            json!({"verb": "create", "body": body("Not_A_Name").to_string()}),
        ))
        .await;
    assert_eq!(outcome(&invalid[0]), "invalid", "{invalid:?}");
    assert!(invalid[0].contains("metadata.name"), "{invalid:?}");

    // Outside the rules: refused before any request leaves the host.
    let before = actor.sent.load(Ordering::SeqCst);
    let denied = actor.run(command(&twice, json!({"verb": "delete"}))).await;
    assert_eq!(outcome(&denied[0]), "not-granted", "{denied:?}");
    assert!(denied[0].contains("delete ConfigMap"), "{denied:?}");
    let secret = json!({"kind": "Secret", "namespace": ns, "name": "s"});
    let denied = actor.run(command(&secret, json!({"verb": "get"}))).await;
    assert_eq!(outcome(&denied[0]), "not-granted", "{denied:?}");
    assert_eq!(
        actor.sent.load(Ordering::SeqCst),
        before,
        "no request was sent"
    );
    let stats = &actor.access.stats;
    assert_eq!(stats.requests("kube-actor", "delete", "not-granted"), 1);
    assert_eq!(stats.requests("kube-actor", "create", "already-exists"), 1);
}

#[test]
fn a_plugin_declaring_more_than_its_grant_is_not_loaded() {
    let rule = config_map_rule(&["get", "apply"], &["*"]);
    let config = json!({"writes": [rule], "capabilities": ["events"]}).to_string();
    let load = |grants: Grants| {
        LoadedPlugin::load(
            engine(),
            &artifacts::bytes(artifacts::KUBE_ACTOR),
            LoadOptions {
                config: Some(config.clone()),
                grants,
                ..LoadOptions::default()
            },
        )
    };
    let all_writes = || {
        vec![granted(&config_map_rule(
            &["get", "apply", "delete"],
            &["*"],
        ))]
    };
    let nothing = load(Grants::default()).unwrap_err().to_string();
    assert!(nothing.contains("grants.writes"), "{nothing}");
    let no_events = Grants {
        writes: all_writes(),
        ..Grants::default()
    };
    let error = load(no_events).unwrap_err().to_string();
    assert!(
        error.contains("\"events\"") && error.contains("grants.events"),
        "{error}"
    );
    let narrow = Grants {
        events: Some(Default::default()),
        writes: vec![granted(&config_map_rule(&["get", "apply"], &["team-a"]))],
        ..Grants::default()
    };
    let error = load(narrow).unwrap_err().to_string();
    assert!(
        error.contains("get ConfigMap in every namespace (\"*\")"),
        "the error names the missing grant: {error}"
    );
    let enough = Grants {
        events: Some(Default::default()),
        writes: all_writes(),
        ..Grants::default()
    };
    let plugin = load(enough).expect("a grant covering the declaration loads");
    assert_eq!(plugin.kube().rules().len(), 1);
    assert_eq!(plugin.world(), "herald:plugin/plugin@0.7.0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_sends_every_write_and_persists_nothing() {
    let rule = every_verb();
    let grants = Grants {
        mode: Mode::DryRun,
        ..grants(&[&rule])
    };
    let actor = Actor::start(std::slice::from_ref(&rule), &[], grants).await;
    let ns = actor.namespace().to_owned();
    let existing: ConfigMap = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kept"}, "data": {"a": "1"}
    }))
    .unwrap();
    actor
        .cluster
        .config_maps()
        .create(&PostParams::default(), &existing)
        .await
        .unwrap();
    let body = |name: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": name, "namespace": ns}, "data": {"a": "changed"}})
        .to_string()
    };
    let created = actor
        .run(command(
            &target(&ns, "shadow"),
            json!({"verb": "create", "body": body("shadow")}),
        ))
        .await;
    assert_eq!(
        outcome(&created[0]),
        "ok",
        "the server admitted it: {created:?}"
    );
    let kept = target(&ns, "kept");
    for data in [
        json!({"verb": "apply", "force": "true", "body": body("kept")}),
        json!({"verb": "patch", "body": json!({"data": {"a": "patched"}}).to_string()}),
        json!({"verb": "delete"}),
    ] {
        let lines = actor.run(command(&kept, data)).await;
        assert_eq!(outcome(&lines[0]), "ok", "{lines:?}");
    }
    assert!(
        actor.config_map("shadow").await.is_none(),
        "the create persisted nothing"
    );
    let kept = actor
        .config_map("kept")
        .await
        .expect("the delete persisted nothing");
    assert_eq!(
        kept.data.unwrap()["a"],
        "1",
        "the apply and patch persisted nothing"
    );
    assert_eq!(
        actor
            .access
            .stats
            .requests("kube-actor", "apply", "would-succeed"),
        1,
        "a dry-run write is counted as what it would have done"
    );
    assert_eq!(actor.access.stats.requests("kube-actor", "apply", "ok"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rate_limit_paces_calls_and_refuses_what_cannot_wait() {
    let rule = config_map_rule(&["get"], &["*"]);
    let grants = Grants {
        rate_limit: RateLimit { qps: 1.0, burst: 2 },
        ..grants(&[&rule])
    };
    let actor = Actor::start(std::slice::from_ref(&rule), &[], grants).await;
    let ns = actor.namespace().to_owned();
    // Six reads in one handler call of the default deadline: two pass at
    // once, the next waits for the bucket, and calls whose wait would
    // outlast the call's deadline are refused at once.
    let lines = actor
        .run(command(
            &target(&ns, "missing"),
            json!({"verb": "get", "repeat": "6"}),
        ))
        .await;
    let outcomes: Vec<&str> = lines.iter().map(|l| outcome(l)).collect();
    assert_eq!(&outcomes[..2], ["not-found", "not-found"], "{lines:?}");
    assert!(outcomes.contains(&"too-many-requests"), "{lines:?}");
    let (waits, refused) = actor.access.stats.throttling("kube-actor");
    assert!(refused >= 1, "refusals are counted");
    let sent = actor.sent.load(Ordering::SeqCst);
    assert!((2..6).contains(&sent), "{sent} requests reached the server");
    assert_eq!(
        sent,
        2 + waits,
        "every request past the burst waited for a token"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_events_merge_into_one_series() {
    let actor = Actor::start(
        &[],
        &["events"],
        Grants {
            events: Some(Default::default()),
            ..Grants::default()
        },
    )
    .await;
    let ns = actor.namespace().to_owned();
    let about = target(&ns, "subject");
    let lines = actor
        .run(command(
            &about,
            json!({"verb": "event", "type": "Warning", "reason": "Flapping",
                                    "action": "Observed", "note": "it flapped", "repeat": "3"}),
        ))
        .await;
    assert!(lines.iter().all(|l| outcome(l) == "ok"), "{lines:?}");
    let events: Api<k8s_openapi::api::events::v1::Event> =
        Api::namespaced(actor.cluster.client.clone(), &ns);
    let listed = events.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(
        listed.len(),
        1,
        "one Event for three occurrences: {listed:?}"
    );
    let event = &listed[0];
    assert_eq!(event.reason.as_deref(), Some("Flapping"));
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    assert_eq!(
        event.reporting_controller.as_deref(),
        Some("herald.dev/kube-actor")
    );
    assert_eq!(
        event.regarding.as_ref().unwrap().name.as_deref(),
        Some("subject")
    );
    assert_eq!(event.series.as_ref().map(|s| s.count), Some(3));
    assert_eq!(actor.access.stats.events("kube-actor", "series"), 2);

    // Not granted: refused, nothing recorded.
    let rule = config_map_rule(&["get"], &["*"]);
    let denied = Actor::start(std::slice::from_ref(&rule), &[], grants(&[&rule])).await;
    let lines = denied
        .run(command(
            &target(denied.namespace(), "x"),
            json!({"verb": "event", "reason": "R"}),
        ))
        .await;
    assert_eq!(outcome(&lines[0]), "not-granted", "{lines:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_built_against_0_1_0_still_runs() {
    let cluster = TestCluster::start().await;
    let (plugin, logs) = load_with(artifacts::LEGACY_V1, LoadOptions::default());
    assert_eq!(plugin.world(), "herald:plugin/plugin@0.1.0");
    let daemon = Daemon::new(
        Arc::new(informers(cluster.client.clone())),
        RetryPolicy::default(),
    );
    daemon.start(plugin).await.unwrap();
    cluster.create_config_map("old-friend", "v", "legacy").await;
    let key = format!("{}/old-friend", cluster.namespace);
    eventually("legacy-v1 sees the add", PATIENCE, async || {
        messages(&logs.lines())
            .iter()
            .any(|m| m == &format!("legacy-v1 add key={key}"))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespace_defaults_gives_a_new_namespace_its_objects_and_repairs_them() {
    use k8s_openapi::api::core::v1::ResourceQuota;
    use k8s_openapi::api::networking::v1::NetworkPolicy;
    let cluster = TestCluster::start().await;
    let selector = format!("{}-defaults", cluster.namespace);
    let config = json!({"namespaceSelector": selector});
    let rules = [
        json!({"verbs": ["get", "apply"], "group": "networking.k8s.io", "kind": "NetworkPolicy", "namespaces": ["*"]}),
        json!({"verbs": ["get", "apply"], "group": "", "kind": "ResourceQuota", "namespaces": ["*"]}),
    ];
    let access = ClusterAccess::new(Arc::new(ClusterApi::new(cluster.writer.clone())));
    let (plugin, _logs) = load_with(
        artifacts::NAMESPACE_DEFAULTS,
        LoadOptions {
            config: Some(config.to_string()),
            grants: Grants {
                writes: rules.iter().map(granted).collect(),
                ..Grants::default()
            },
            access: Some(access.clone()),
            ..LoadOptions::default()
        },
    );
    let daemon = Daemon::new(
        Arc::new(informers(cluster.client.clone())),
        RetryPolicy::default(),
    );
    daemon
        .start(plugin)
        .await
        .expect("namespace-defaults starts");

    // A namespace made by kubectl, then labelled so the plugin selects it.
    let work = ScratchDir::new("defaults").unwrap();
    let kubeconfig = cluster.kubeconfig(&work);
    let team = format!("{}-team", cluster.namespace);
    let kubeconfig = kubeconfig.as_path();
    super::kubectl::kubectl(kubeconfig, &["create", "namespace", &team]);
    super::kubectl::kubectl(
        kubeconfig,
        &["label", "namespace", &team, &format!("{selector}=yes")],
    );

    let policies: Api<NetworkPolicy> = Api::namespaced(cluster.client.clone(), &team);
    let quotas: Api<ResourceQuota> = Api::namespaced(cluster.client.clone(), &team);
    let policy = eventually(
        &format!("the defaults appear in {team}"),
        PATIENCE,
        async || {
            let policy = policies.get_opt("herald-default-deny").await.unwrap();
            let quota = quotas.get_opt("herald-default-quota").await.unwrap();
            match (policy, quota) {
                (Some(policy), Some(_)) => Ok(policy),
                (policy, quota) => Err(format!(
                    "NetworkPolicy found: {}, ResourceQuota found: {}",
                    policy.is_some(),
                    quota.is_some()
                )),
            }
        },
    )
    .await;
    let spec = policy.spec.unwrap();
    assert_eq!(spec.policy_types.unwrap(), ["Ingress", "Egress"]);

    // Deleted by someone: it comes back.
    super::kubectl::kubectl(
        kubeconfig,
        &[
            "-n",
            &team,
            "delete",
            "networkpolicy",
            "herald-default-deny",
        ],
    );
    eventually(
        "the deleted NetworkPolicy comes back",
        PATIENCE,
        async || {
            policies
                .get_opt("herald-default-deny")
                .await
                .unwrap()
                .is_some_and(|back| back.metadata.uid != policy.metadata.uid)
        },
    )
    .await;
    // The server holds the repaired object before the host has counted the
    // answer to the apply that made it.
    eventually("the three applies are counted", PATIENCE, async || {
        access.stats.requests("namespace-defaults", "apply", "ok") >= 3
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_throttled_call_goes_back_to_the_plugin_and_is_never_retried_by_the_host() {
    let rule = config_map_rule(&["get"], &["*"]);
    let actor = Actor::start(std::slice::from_ref(&rule), &[], grants(&[&rule])).await;
    let Some(faults) = actor.cluster.faults() else {
        return herald_tests::skip(
            "a_throttled_call_goes_back_to_the_plugin_and_is_never_retried_by_the_host",
            "a real cluster cannot be told to throttle",
        );
    };
    let ns = actor.namespace().to_owned();
    // One 429: a client that retried it would get the second answer
    // (not-found) instead.
    faults.throttle_requests_to("/configmaps/missing", 1);
    let lines = actor
        .run(command(&target(&ns, "missing"), json!({"verb": "get"})))
        .await;
    assert_eq!(outcome(&lines[0]), "too-many-requests", "{lines:?}");
    let after = actor
        .run(command(&target(&ns, "missing"), json!({"verb": "get"})))
        .await;
    assert_eq!(outcome(&after[0]), "not-found", "{after:?}");
}
