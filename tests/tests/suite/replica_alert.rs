//! The same small controller in Python and in JavaScript
//! (`plugins/replica-alert-py`, `plugins/replica-alert-js`), built with each
//! SDK's build command and run by the daemon against the embedded API server
//! and a webhook on loopback: a Deployment that loses replicas gets a
//! ConfigMap written, a Warning Event, a counted alert, a POST to the webhook
//! and a requeue; when it recovers, the ConfigMap says so, a Normal Event is
//! recorded and the webhook told.
//!
//! Needs the Python SDK's build requirements (`python3 -m pip install -r
//! sdk/python/requirements-build.txt`) and the JavaScript toolchain (`npm ci`
//! at the repository root), as `.ci/run` installs them; without them the
//! test fails, unless skipping was asked for outside CI
//! (`herald_tests::skip`).

use super::acting::granted;
use super::cluster::TestCluster;
use super::egress::TestServer;
use super::recording::informers;
use herald::capability::http::HttpGrant;
use herald::capability::kube::ClusterApi;
use herald::capability::{ClusterAccess, Grants};
use herald::daemon::Daemon;
use herald::dispatch::RetryPolicy;
use herald::plugin::LoadOptions;
use herald::scratch::ScratchDir;
use herald_tests::{PATIENCE, eventually, load_with, messages};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::Ordering;

const TEST: &str =
    "replica_alert::the_python_and_javascript_controllers_act_on_the_api_server_and_a_webhook";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Runs `command`, which builds a plugin into `out`; `None` (after
/// `herald_tests::skip` for `test`) when its toolchain is missing.
fn build(
    test: &str,
    what: &str,
    mut command: Command,
    out: &Path,
    install: &str,
) -> Option<PathBuf> {
    let started = std::time::Instant::now();
    match command.output() {
        Ok(output) if output.status.success() && out.exists() => {
            eprintln!("built {what} in {:.1} s", started.elapsed().as_secs_f64());
            Some(out.to_owned())
        }
        Ok(output) => {
            let said = String::from_utf8_lossy(&output.stderr);
            let missing = said.contains("No module named") || said.contains("Cannot find");
            if missing {
                herald_tests::skip(test, &format!("{what} cannot be built here: {install}"));
                return None;
            }
            panic!(
                "building {what} failed:\n{}\n{said}",
                String::from_utf8_lossy(&output.stdout)
            )
        }
        Err(err) => {
            herald_tests::skip(test, &format!("{what}: {err}; {install}"));
            None
        }
    }
}

/// Builds the Python plugin `plugins/<name>/<module>` into `out` with the
/// SDK's build command; `None` (after `herald_tests::skip` for `test`) when
/// the SDK's build requirements are missing.
pub(super) fn build_python(name: &str, module: &str, out: &Path, test: &str) -> Option<PathBuf> {
    let root = repo();
    let mut python = Command::new(std::env::var("HERALD_PYTHON").unwrap_or("python3".into()));
    python
        .current_dir(&root)
        .env("PYTHONPATH", root.join("sdk/python/src"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .args(["-m", "herald_sdk", "build"])
        .arg(root.join("plugins").join(name).join(module))
        .arg("-o")
        .arg(out);
    build(
        test,
        name,
        python,
        out,
        "run `python3 -m pip install -r sdk/python/requirements-build.txt`",
    )
}

/// Both plugins, built into a fresh directory, with the world each SDK
/// builds.
fn build_both(dir: &Path) -> Option<[(String, PathBuf, &'static str); 2]> {
    std::fs::create_dir_all(dir).unwrap();
    let root = repo();
    let python = build_python(
        "replica-alert-py",
        "replica_alert.py",
        &dir.join("replica-alert-py.wasm"),
        TEST,
    )?;
    let js_out = dir.join("replica-alert-js.wasm");
    let mut js = Command::new(root.join("node_modules/.bin/herald-build"));
    js.current_dir(root.join("plugins/replica-alert-js"))
        .arg("src/plugin.js")
        .arg("-o")
        .arg(&js_out);
    let js = build(
        TEST,
        "replica-alert-js",
        js,
        &js_out,
        "run `npm ci` at the repository root",
    )?;
    Some([
        ("replica-alert-py".to_owned(), python, "0.7.0"),
        ("replica-alert-js".to_owned(), js, "0.7.0"),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_and_javascript_controllers_act_on_the_api_server_and_a_webhook() {
    let dir = ScratchDir::new("suite-replica-alert").unwrap();
    let Some(plugins) = build_both(&dir) else {
        return;
    };
    for (name, wasm, world) in plugins {
        one_controller(&name, &wasm, world).await;
    }
}

/// The scenario for the plugin `name` built at `wasm` for `world`.
async fn one_controller(name: &str, wasm: &Path, world: &str) {
    let cluster = TestCluster::start().await;
    let webhook = TestServer::start().await;
    let ns = cluster.namespace.clone();
    let access = ClusterAccess::new(Arc::new(ClusterApi::new(cluster.writer.clone())));
    let daemon = Daemon::new(
        Arc::new(informers(cluster.client.clone())),
        RetryPolicy::default(),
    );
    let http: HttpGrant =
        serde_json::from_value(json!({"allowedOrigins": [webhook.origin()]})).unwrap();
    let apply_config_maps =
        json!({"verbs": ["apply"], "group": "", "kind": "ConfigMap", "namespaces": ["*"]});
    let options = LoadOptions {
        config: Some(json!({"webhookUrl": webhook.url("/ok")}).to_string()),
        grants: Grants {
            events: Some(Default::default()),
            http: Some(http),
            writes: vec![granted(&apply_config_maps)],
            ..Grants::default()
        },
        access: Some(access),
        metrics: Some(daemon.plugin_metrics().clone()),
        ..LoadOptions::default()
    };
    let (plugin, logs) = load_with(wasm.to_str().unwrap(), options);
    assert_eq!(plugin.manifest().name, name);
    // Both SDKs import every interface of their world, `cluster` included.
    assert_eq!(plugin.world(), format!("herald:plugin/plugin@{world}"));
    assert!(plugin.knows_clusters());
    daemon.start(plugin).await.unwrap();

    let deployments: Api<Deployment> = Api::namespaced(cluster.client.clone(), &ns);
    let deployment: Deployment = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                         "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}},
        },
    }))
    .unwrap();
    deployments
        .create(&PostParams::default(), &deployment)
        .await
        .unwrap();
    let available = |count: i32| {
        let deployments = deployments.clone();
        async move {
            let status = json!({"status": {"replicas": 3, "readyReplicas": count,
                                           "availableReplicas": count, "observedGeneration": 1}});
            deployments
                .patch_status("web", &PatchParams::default(), &Patch::Merge(status))
                .await
                .unwrap();
        }
    };
    let config_maps: Api<ConfigMap> = Api::namespaced(cluster.client.clone(), &ns);
    let events: Api<Event> = Api::namespaced(cluster.client.clone(), &ns);
    let state = || {
        let config_maps = config_maps.clone();
        async move {
            config_maps
                .get_opt("replica-alert-web")
                .await
                .unwrap()
                .and_then(|cm| cm.data)
                .and_then(|data| data.get("state").cloned())
        }
    };
    let reasons = || {
        let events = events.clone();
        async move {
            events
                .list(&ListParams::default())
                .await
                .unwrap()
                .items
                .into_iter()
                .filter_map(|e| e.reason)
                .collect::<Vec<_>>()
        }
    };
    let posts = || {
        webhook
            .seen
            .paths
            .lock()
            .unwrap()
            .iter()
            .filter(|p| *p == "/ok")
            .count()
    };

    // Degraded: the ConfigMap, the Warning Event, the POST, the requeue.
    available(1).await;
    wait_until(
        name,
        &logs,
        "degraded: ConfigMap, Event and POST",
        || async {
            state().await.as_deref() == Some("degraded")
                && reasons().await.contains(&"ReplicasUnavailable".to_owned())
                && posts() == 1
        },
    )
    .await;
    let requeued = || {
        daemon
            .listeners(name)
            .iter()
            .map(|l| l.stats.requeued.load(Ordering::Acquire))
            .sum::<u64>()
    };
    eventually(
        &format!("{name} asks for the Deployment again"),
        PATIENCE,
        async || requeued() >= 1,
    )
    .await;

    // Recovered: the ConfigMap says so, a Normal Event, a second POST.
    available(3).await;
    wait_until(
        name,
        &logs,
        "recovered: ConfigMap, Event and POST",
        || async {
            state().await.as_deref() == Some("ok")
                && reasons().await.contains(&"ReplicasAvailable".to_owned())
                && posts() == 2
        },
    )
    .await;
    assert_eq!(
        reasons()
            .await
            .iter()
            .filter(|r| *r == "ReplicasUnavailable")
            .count(),
        1,
        "one alert for the episode"
    );

    let mut registry = prometheus_client::registry::Registry::default();
    registry.register_collector(Box::new(daemon.plugin_metrics().clone()));
    let mut scrape = String::new();
    prometheus_client::encoding::text::encode(&mut scrape, &registry).unwrap();
    let family = format!("herald_plugin_{}__alerts_total", name.replace('-', "_"));
    let series = format!("{family}{{plugin=\"{name}\",namespace=\"{ns}\"}} 1");
    assert!(scrape.contains(&series), "{series} in:\n{scrape}");
    cluster.cleanup().await;
}

/// Waits (up to the suite's patience) until `done`, naming the plugin and
/// showing its log if it never happens.
async fn wait_until(
    name: &str,
    logs: &herald::capability::log::MemorySink,
    what: &str,
    done: impl AsyncFn() -> bool,
) {
    eventually(&format!("{name}: {what}"), PATIENCE, async || {
        if done().await {
            Ok(())
        } else {
            Err(format!("it logged {:?}", messages(&logs.lines())))
        }
    })
    .await;
}
