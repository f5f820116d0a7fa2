//! The Go example plugin end to end: `plugins/go-pod-phases` (written with
//! `sdk/go`, standard Go toolchain) built by what `herald plugin build`
//! runs, loaded by the daemon and fed by a real informer from the embedded
//! API server. A Pod is added, changes phase, restarts past the configured
//! warning (a Warning Event lands on the API server, published after the
//! plugin asked the host's `deadline` how long its call had left) and is
//! deleted; the plugin's log and its own metrics show each step.
//!
//! Needs Go 1.24 or later on the PATH (or `HERALD_GO`); without it the test
//! fails, unless skipping was asked for outside CI (`herald_tests::skip`).

use super::cluster::TestCluster;
use super::recording::informers;
use herald::build::{self, go};
use herald::capability::kube::ClusterApi;
use herald::capability::{ClusterAccess, Grants};
use herald::daemon::Daemon;
use herald::dispatch::RetryPolicy;
use herald::plugin::LoadOptions;
use herald_tests::{PATIENCE, eventually, load_with, messages};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The Pod's status: its phase and its one container's restarts.
fn status(phase: &str, restarts: i32) -> serde_json::Value {
    json!({"status": {"phase": phase, "containerStatuses": [{
        "name": "app", "image": "nginx:1.27", "imageID": "", "ready": phase == "Running",
        "restartCount": restarts, "state": {"running": {}},
    }]}})
}

/// Builds the Go plugin `plugins/<name>` into the build's scratch folder with
/// `herald plugin build`'s own code; `None` when Go is missing and skipping
/// was asked for (`test` names the test that skips).
pub(super) fn build(name: &str, test: &str) -> Option<PathBuf> {
    match go::version(&go::program()) {
        Ok(_) => {}
        Err(err @ go::GoError::Missing { .. }) => {
            herald_tests::skip(test, &err.to_string());
            return None;
        }
        Err(err) => panic!("{err}"),
    }
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("suite-go")
        .join(format!("{name}.wasm"));
    let started = std::time::Instant::now();
    let built = build::build(
        &repo.join("plugins").join(name),
        Some(&out),
        build::Options::default(),
    )
    .unwrap_or_else(|e| panic!("herald plugin build plugins/{name}: {e}"));
    eprintln!(
        "built {} ({} bytes) in {:.1} s",
        built.output.display(),
        built.bytes,
        started.elapsed().as_secs_f64()
    );
    Some(out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_go_example_plugin_follows_a_pod_and_acts_on_the_api_server() {
    let Some(wasm) = build(
        "go-pod-phases",
        "go_plugin::the_go_example_plugin_follows_a_pod_and_acts_on_the_api_server",
    ) else {
        return;
    };
    let cluster = TestCluster::start().await;
    let access = ClusterAccess::new(Arc::new(ClusterApi::new(cluster.writer.clone())));
    let daemon = Daemon::new(
        Arc::new(informers(cluster.client.clone())),
        RetryPolicy::default(),
    );
    let options = LoadOptions {
        config: Some(json!({"restartWarning": 2, "pendingRecheck": "0s"}).to_string()),
        grants: Grants {
            events: Some(Default::default()),
            ..Grants::default()
        },
        access: Some(access),
        metrics: Some(daemon.plugin_metrics().clone()),
        ..LoadOptions::default()
    };
    let started = std::time::Instant::now();
    let (plugin, logs) = load_with(wasm.to_str().unwrap(), options);
    eprintln!(
        "go-pod-phases compiled and loaded in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    // Every Go plugin exports 0.7.0's `delivery` and 0.5.0's `admission`;
    // this one admits nothing, and asks for no cluster.
    assert_eq!(plugin.world(), "herald:plugin/plugin@0.7.0");
    assert!(!plugin.knows_clusters());
    assert_eq!(plugin.manifest().name, "go-pod-phases");
    assert_eq!(plugin.manifest().admission, None);
    daemon.start(plugin).await.expect("go-pod-phases starts");

    let ns = cluster.namespace.clone();
    let pods: Api<Pod> = Api::namespaced(cluster.client.clone(), &ns);
    let pod: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web-0"},
        "spec": {"nodeName": "node-1", "containers": [{"name": "app", "image": "nginx:1.27"}]},
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let logged = |prefix: String| {
        let logs = logs.clone();
        async move || {
            let lines = messages(&logs.lines());
            if lines.iter().any(|m| m.starts_with(&prefix)) {
                Ok(())
            } else {
                Err(format!("the plugin logged {lines:?}"))
            }
        }
    };
    eventually(
        "the add logged, the Pod decoded into corev1.Pod",
        PATIENCE,
        logged(format!("pod added pod={ns}/web-0 ")),
    )
    .await;
    let added = messages(&logs.lines());
    assert!(
        added
            .iter()
            .any(|m| m.starts_with(&format!("pod added pod={ns}/web-0 "))
                && m.contains("node=node-1")),
        "{added:#?}"
    );

    let patch_status = |value: serde_json::Value| {
        let pods = pods.clone();
        async move {
            pods.patch_status("web-0", &PatchParams::default(), &Patch::Merge(value))
                .await
                .unwrap();
        }
    };
    patch_status(status("Running", 0)).await;
    eventually(
        "the phase change logged, read through the lazy view",
        PATIENCE,
        logged(format!("phase changed pod={ns}/web-0 ")),
    )
    .await;
    patch_status(status("Running", 2)).await;

    let events: Api<Event> = Api::namespaced(cluster.client.clone(), &ns);
    let event = eventually(
        &format!("a RestartingContainer Event on {ns}/web-0"),
        PATIENCE,
        async || {
            let found = events.list(&ListParams::default()).await.unwrap().items;
            match found
                .iter()
                .find(|e| e.reason.as_deref() == Some("RestartingContainer"))
            {
                Some(event) => Ok(event.clone()),
                None => Err(format!("{found:#?}")),
            }
        },
    )
    .await;
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    assert_eq!(
        event.note.as_deref(),
        Some("container app restarted 2 times")
    );
    assert_eq!(
        event.regarding.as_ref().and_then(|r| r.name.as_deref()),
        Some("web-0")
    );

    // At once: on a real cluster a Pod bound to a node otherwise waits for
    // its kubelet, which the test's node name does not have.
    pods.delete("web-0", &DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    eventually(
        "the deletion logged",
        PATIENCE,
        logged(format!(
            "pod deleted pod={ns}/web-0 final-state-unknown=false"
        )),
    )
    .await;

    let mut registry = prometheus_client::registry::Registry::default();
    registry.register_collector(Box::new(daemon.plugin_metrics().clone()));
    let mut scrape = String::new();
    prometheus_client::encoding::text::encode(&mut scrape, &registry).unwrap();
    for series in [
        format!(
            "herald_plugin_go_pod_phases__container_restarts_total{{plugin=\"go-pod-phases\",namespace=\"{ns}\"}} 2"
        ),
        "herald_plugin_go_pod_phases__phase_changes_total{plugin=\"go-pod-phases\",phase=\"Running\"}"
            .to_owned(),
    ] {
        assert!(scrape.contains(&series), "{series} in:\n{scrape}");
    }
    cluster.cleanup().await;
}
