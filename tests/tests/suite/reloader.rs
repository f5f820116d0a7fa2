//! The Go and Python reconcile APIs end to end: `plugins/go-reloader` (a
//! port of Stakater Reloader's core, written with `sdk/go/reconcile`) built
//! by what `herald plugin build` runs, and its Python port
//! `plugins/reloader-py` (`herald_sdk.reconcile`) built by the Python SDK's
//! build command, each loaded by the daemon, fed by real informers from the
//! API server and rolling Deployments through the host's kube client. What
//! each did is read back from the server: a following Deployment's
//! recorded hash and its generation, which moves once per rollout (and
//! once when the hash is first recorded, an annotation of the Deployment,
//! as kube-apiserver moves it for a Deployment's annotations).
//!
//! Needs Go (or `HERALD_GO`), as the suite's `go_plugin` test, and the
//! Python SDK's build requirements, as its `replica_alert` test.

use super::acting::granted;
use super::cluster::TestCluster;
use super::go_plugin;
use super::recording::informers;
use super::replica_alert::build_python;
use herald::capability::kube::ClusterApi;
use herald::capability::reads::{ReadRule, Reads};
use herald::capability::{ClusterAccess, Grants};
use herald::daemon::Daemon;
use herald::dispatch::RetryPolicy;
use herald::plugin::LoadOptions;
use herald_tests::{PATIENCE, eventually, load_with, messages};
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;

/// The hash annotation the plugin writes (`HashAnnotation` in main.go).
const HASH: &str = "reloader.herald.example.com/hash";

/// A Deployment of one nginx container reading its environment from the
/// ConfigMap `settings`, with `annotations`.
fn deployment(name: &str, annotations: Value) -> Deployment {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{
                    "name": "app", "image": "nginx:1.27",
                    "envFrom": [{"configMapRef": {"name": "settings"}}],
                }]},
            },
        },
    }))
    .unwrap()
}

/// A Deployment's state as the plugin leaves it: its recorded hash, its
/// pod template's hash, and its generation.
#[derive(Debug, Clone, PartialEq)]
struct Rollout {
    recorded: Option<String>,
    template: Option<String>,
    generation: i64,
}

fn rollout(d: &Deployment) -> Rollout {
    let template = d.spec.template.metadata.as_ref();
    Rollout {
        recorded: d
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(HASH).cloned()),
        template: template
            .and_then(|m| m.annotations.as_ref())
            .and_then(|a| a.get(HASH).cloned()),
        generation: d.metadata.generation.unwrap_or_default(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_go_reloader_rolls_a_following_deployment_once_per_data_change_and_never_otherwise() {
    let test = "reloader::the_go_reloader_rolls_a_following_deployment_once_per_data_change_and_never_otherwise";
    if let Some(wasm) = go_plugin::build("go-reloader", test) {
        rolls_once_per_data_change(&wasm, "go-reloader").await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_reloader_rolls_a_following_deployment_once_per_data_change_and_never_otherwise()
{
    let test = "reloader::the_python_reloader_rolls_a_following_deployment_once_per_data_change_and_never_otherwise";
    let out = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("suite-python")
        .join("reloader-py.wasm");
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    if let Some(wasm) = build_python("reloader-py", "reloader.py", &out, test) {
        rolls_once_per_data_change(&wasm, "reloader-py").await;
    }
}

/// The reloader built at `wasm`, named `name`, against a fresh namespace:
/// each follower's hash recorded without a rollout, then one rollout per
/// data change it follows and none for a label change; a Deployment that
/// follows nothing never touched.
async fn rolls_once_per_data_change(wasm: &Path, name: &str) {
    let cluster = TestCluster::start().await;
    let client = cluster.client.clone();
    let ns = cluster.namespace.clone();
    cluster.create_config_map("settings", "web", "blue").await;
    cluster.create_config_map("flags", "web", "on").await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    for d in [
        deployment(
            "web",
            json!({"configmap.reloader.stakater.com/reload": "settings,flags"}),
        ),
        deployment("auto", json!({"reloader.stakater.com/auto": "true"})),
        deployment("plain", json!({})),
    ] {
        deployments
            .create(&PostParams::default(), &d)
            .await
            .unwrap();
    }

    let access = ClusterAccess::new(Arc::new(ClusterApi::new(cluster.writer.clone())));
    let daemon = Daemon::new(Arc::new(informers(client.clone())), RetryPolicy::default());
    let options = LoadOptions {
        grants: Grants {
            writes: vec![granted(
                &json!({"verbs": ["apply"], "group": "apps", "kind": "Deployment", "namespaces": ["*"]}),
            )],
            // Secrets are never readable by default: the plugin follows
            // them, so its grant names them.
            reads: Reads {
                granted: vec![ReadRule {
                    group: String::new(),
                    kind: "Secret".into(),
                    namespaces: ["*".to_owned()].into(),
                    clusters: Default::default(),
                }],
                ..Reads::default()
            },
            ..Grants::default()
        },
        access: Some(access),
        metrics: Some(daemon.plugin_metrics().clone()),
        ..LoadOptions::default()
    };
    let (plugin, logs) = load_with(wasm.to_str().unwrap(), options);
    assert_eq!(plugin.manifest().name, name);
    daemon.start(plugin).await.expect("the reloader starts");

    let state = |name: &'static str| {
        let deployments = deployments.clone();
        async move { rollout(&deployments.get(name).await.unwrap()) }
    };
    let reaches = |name: &'static str, wanted: fn(&Rollout, &str) -> bool, hash: String| {
        let deployments = deployments.clone();
        let logs = logs.clone();
        async move || {
            let now = rollout(&deployments.get(name).await.map_err(|e| e.to_string())?);
            if wanted(&now, &hash) {
                Ok(now)
            } else {
                Err(format!(
                    "{name}: {now:?}; the plugin logged {:?}",
                    messages(&logs.lines())
                ))
            }
        }
    };

    // First sight: the hash recorded on each follower, no rollout.
    let recorded = |r: &Rollout, _: &str| r.recorded.is_some();
    let web = eventually(
        "web's hash recorded",
        PATIENCE,
        reaches("web", recorded, String::new()),
    )
    .await;
    let auto = eventually(
        "auto's hash recorded",
        PATIENCE,
        reaches("auto", recorded, String::new()),
    )
    .await;
    // No rollout: the pod templates untouched. Recording the hash (an
    // annotation of the Deployment) moves its generation once, as
    // kube-apiserver's Deployment strategy does for annotations; rollouts
    // are counted from there.
    assert_eq!(
        (web.template.as_deref(), auto.template.as_deref()),
        (None, None),
        "{web:?} {auto:?}"
    );
    let (web_seen, auto_seen) = (web.generation, auto.generation);

    // A data change of a ConfigMap both follow: each rolls, once.
    cluster.update_config_map("settings", "green").await;
    let rolled = |r: &Rollout, before: &str| {
        r.recorded.as_deref().is_some_and(|h| h != before) && r.template == r.recorded
    };
    let web = eventually(
        "web rolled for the new settings",
        PATIENCE,
        reaches("web", rolled, web.recorded.unwrap()),
    )
    .await;
    let auto = eventually(
        "auto rolled for the new settings",
        PATIENCE,
        reaches("auto", rolled, auto.recorded.unwrap()),
    )
    .await;
    assert_eq!(
        (web.generation, auto.generation),
        (web_seen + 1, auto_seen + 1),
        "one rollout each"
    );

    // A label-only change of `settings`, then a data change of `flags`,
    // which only web follows. Both ConfigMaps are one subscription, whose
    // keys are reconciled in the order they changed, so once web has rolled
    // for `flags` the label change has been reconciled too: had it rolled
    // anything, a generation would show it.
    cluster
        .config_maps()
        .patch(
            "settings",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"team": "shop"}}})),
        )
        .await
        .unwrap();
    cluster.update_config_map("flags", "off").await;
    let web = eventually(
        "web rolled for the new flags",
        PATIENCE,
        reaches("web", rolled, web.recorded.unwrap()),
    )
    .await;
    assert_eq!(
        web.generation,
        web_seen + 2,
        "web rolled more than once per data change: {web:?}"
    );
    assert_eq!(
        state("auto").await,
        auto,
        "auto rolled without a data change it follows"
    );
    let plain = state("plain").await;
    assert_eq!(
        plain,
        Rollout {
            recorded: None,
            template: None,
            generation: 1
        },
        "a Deployment that follows nothing was touched"
    );
    // The plugin logs a rollout after its apply returns, so the server can
    // show the third before the log does. A reconcile that reads the
    // Deployment from a cache its own apply has not reached yet applies the
    // same hash again (a no-op on the server, as the generations above
    // show) and logs it again: rollouts are the distinct (Deployment, hash)
    // pairs.
    let rolls = || {
        messages(&logs.lines())
            .into_iter()
            .filter(|m| m.starts_with("rolled for changed data"))
            .collect::<std::collections::BTreeSet<_>>()
            .len()
    };
    eventually(
        "the plugin logged its three rollouts",
        PATIENCE,
        async || match rolls() {
            3 => Ok(()),
            n => Err(format!(
                "{n} distinct rollouts logged: {:?}",
                messages(&logs.lines())
            )),
        },
    )
    .await;
    daemon.stop(name).await;
    cluster.cleanup().await;
}
