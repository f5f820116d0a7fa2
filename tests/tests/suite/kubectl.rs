//! What a newcomer types first against the cluster: kubectl's create
//! generators, which send their objects as protobuf, and each object then
//! reaching a plugin watching its kind. Needs `kubectl` (the test fails,
//! saying so, without it).

use super::cluster::TestCluster;
use super::recording::informers;
use herald::capability::log::MemorySink;
use herald::daemon::Daemon;
use herald::dispatch::RetryPolicy;
use herald::plugin::LoadOptions;
use herald::scratch::ScratchDir;
use herald_tests::{PATIENCE, artifacts, eventually, load_with};
use serde_json::json;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Runs kubectl with `kubeconfig` and `args`, failing the test unless it succeeds.
pub(super) fn kubectl(kubeconfig: &Path, args: &[&str]) {
    let output = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("this test needs kubectl on the PATH ({e}): install it"));
    assert!(
        output.status.success(),
        "kubectl {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A recorder watching `kind` (in `namespace`, if given), named `name`.
fn recorder(
    name: &str,
    group: &str,
    kind: &str,
    namespace: Option<&str>,
) -> (herald::plugin::LoadedPlugin, MemorySink) {
    let config = json!({
        "name": name,
        "kind": {"group": group, "version": "v1", "kind": kind},
        "namespace": namespace,
    });
    // Reads granted as the operator would: exactly the kind watched, in
    // its namespace (Secrets are never readable by default).
    let reads = herald::capability::reads::Reads {
        granted: vec![herald::capability::reads::ReadRule {
            group: group.into(),
            kind: kind.into(),
            namespaces: [namespace.unwrap_or("*").to_owned()].into(),
            clusters: Default::default(),
        }],
        ..Default::default()
    };
    load_with(
        artifacts::RECORDER,
        LoadOptions {
            config: Some(config.to_string()),
            grants: herald::capability::Grants {
                reads,
                ..Default::default()
            },
            ..LoadOptions::default()
        },
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_made_by_kubectls_create_generators_reach_plugins() {
    let cluster = TestCluster::start().await;
    let work = ScratchDir::new("kubectl").unwrap();
    let kubeconfig = cluster.kubeconfig(&work);
    let ns = cluster.namespace.clone();
    let team = format!("{ns}-team-a");
    let daemon = Daemon::new(
        Arc::new(informers(cluster.client.clone())),
        RetryPolicy::default(),
    );
    // (recorder, the key its object will have)
    let watched = [
        (recorder("namespaces", "", "Namespace", None), team.clone()),
        (
            recorder("deployments", "apps", "Deployment", Some(&ns)),
            format!("{ns}/web"),
        ),
        (
            recorder("config-maps", "", "ConfigMap", Some(&ns)),
            format!("{ns}/settings"),
        ),
        (
            recorder("secrets", "", "Secret", Some(&ns)),
            format!("{ns}/token"),
        ),
        (
            recorder("pods", "", "Pod", Some(&ns)),
            format!("{ns}/nginx"),
        ),
        (
            recorder("services", "", "Service", Some(&ns)),
            format!("{ns}/web"),
        ),
    ];
    let mut sinks = Vec::new();
    for ((plugin, sink), key) in watched {
        daemon.start(plugin).await.unwrap();
        sinks.push((sink, key));
    }
    eventually("the daemon is ready", PATIENCE, async || daemon.ready()).await;

    kubectl(&kubeconfig, &["create", "namespace", &team]);
    kubectl(
        &kubeconfig,
        &["-n", &ns, "create", "deployment", "web", "--image=nginx"],
    );
    kubectl(
        &kubeconfig,
        &[
            "-n",
            &ns,
            "create",
            "configmap",
            "settings",
            "--from-literal=mode=demo",
        ],
    );
    kubectl(
        &kubeconfig,
        &[
            "-n",
            &ns,
            "create",
            "secret",
            "generic",
            "token",
            "--from-literal=key=s3cr3t",
        ],
    );
    kubectl(&kubeconfig, &["-n", &ns, "run", "nginx", "--image=nginx"]);
    kubectl(
        &kubeconfig,
        &["-n", &ns, "expose", "deployment", "web", "--port=80"],
    );

    for (sink, key) in &sinks {
        let seen = std::sync::Mutex::new(Vec::new());
        let wanted = format!("event=add key={key} ");
        eventually(
            &format!("a plugin sees the add of {key}"),
            PATIENCE,
            async || {
                let mut seen = seen.lock().unwrap();
                seen.extend(sink.take().into_iter().map(|line| line.message));
                seen.iter().any(|message| {
                    message.starts_with(&wanted) && message.contains("initial=false")
                })
            },
        )
        .await;
    }
    daemon.shutdown(Instant::now() + Duration::from_secs(5));
    // Not waited for: a cluster without a namespace controller never finishes.
    kubectl(&kubeconfig, &["delete", "namespace", &team, "--wait=false"]);
    cluster.cleanup().await;
}
