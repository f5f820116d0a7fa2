//! Several clusters from one daemon: the default cluster ("east", the
//! suite's cluster: the embedded API server, or the real one
//! `HERALD_TEST_KUBECONFIG` names) and a second embedded API server
//! ("west"), each reached by its own kube client over real HTTP. The
//! plugin is `plugins/fleet-fanout` (world 0.7.0): a ConfigMap labelled for
//! fan-out in one cluster is copied into the other, labelled with the
//! cluster it came from, so what each cluster holds afterwards says which
//! cluster each notification came from and where each write went.

use super::acting::granted;
use super::cluster::TestCluster;
use super::recording::informers;
use herald::capability::kube::ClusterApi;
use herald::capability::reads::{ReadPolicy, ReadRule, Reads};
use herald::capability::{ClusterAccess, Grants};
use herald::cluster::{ClusterName, Clusters};
use herald::daemon::{Daemon, StartError};
use herald::dispatch::RetryPolicy;
use herald::plugin::{LoadError, LoadOptions, LoadedPlugin};
use herald::scratch::ScratchDir;
use herald_tests::{PATIENCE, eventually, load_with, messages};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::json;
use std::path::Path;
use std::sync::Arc;

const FAN_OUT: &str = "herald.dev/fan-out";
const FANNED_FROM: &str = "herald.dev/fanned-from";

/// The suite's cluster as the default one ("east") and a second embedded
/// API server ("west"), the test's namespace in both.
struct TwoClusters {
    east: TestCluster,
    west: herald_apiserver::ApiServer,
    west_client: kube::Client,
    west_writer: kube::Client,
}

impl TwoClusters {
    async fn start() -> TwoClusters {
        let east = TestCluster::start().await;
        let west = herald_apiserver::start(herald_apiserver::ApiServerConfig::default())
            .await
            .expect("a second embedded API server");
        let config = kube::Config::new(west.url().parse().expect("server URL"));
        let west_writer =
            kube::Client::try_from(herald::capability::kube::writer_config(config.clone()))
                .unwrap();
        let west_client = kube::Client::try_from(config).unwrap();
        let ns: Namespace =
            serde_json::from_value(json!({"metadata": {"name": east.namespace}})).unwrap();
        Api::<Namespace>::all(west_client.clone())
            .create(&PostParams::default(), &ns)
            .await
            .expect("the test's namespace in west");
        TwoClusters {
            east,
            west,
            west_client,
            west_writer,
        }
    }

    /// A daemon watching both, east the default, and the way its plugins
    /// reach them.
    fn daemon(&self) -> (Daemon, ClusterAccess) {
        let west = ClusterName::parse("name", "west").unwrap();
        let informers = informers(self.east.client.clone()).with_default_name(east());
        informers.add_cluster(west.clone(), self.west_client.clone());
        let api = ClusterApi::new(self.east.writer.clone());
        api.add_cluster(west, self.west_writer.clone());
        let daemon = Daemon::new(Arc::new(informers), RetryPolicy::default());
        (daemon, ClusterAccess::new(Arc::new(api)))
    }

    fn config_maps(&self, cluster: &str) -> Api<ConfigMap> {
        let client = match cluster {
            "east" => self.east.client.clone(),
            _ => self.west_client.clone(),
        };
        Api::namespaced(client, &self.east.namespace)
    }

    /// Creates `name` in `cluster`, labelled for fan-out.
    async fn fan_out(&self, cluster: &str, name: &str, color: &str) {
        let cm: ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": name, "labels": {FAN_OUT: "true", "app": "shop"}},
            "data": {"color": color}
        }))
        .unwrap();
        self.config_maps(cluster)
            .create(&PostParams::default(), &cm)
            .await
            .unwrap_or_else(|e| panic!("creating {name} in {cluster}: {e}"));
    }

    /// Waits for the copy of `name` in `cluster`: its origin and color.
    async fn copy_in(&self, cluster: &str, name: &str, logs: &LogsOf) -> (String, String) {
        let config_maps = self.config_maps(cluster);
        eventually(
            &format!("{name} copied into {cluster}"),
            PATIENCE,
            async || match config_maps.get_opt(name).await {
                Ok(Some(copy)) => Ok((
                    label(&copy, FANNED_FROM).unwrap_or_default(),
                    copy.data.unwrap_or_default()["color"].clone(),
                )),
                other => Err(format!("{other:?}; the plugin logged {:?}", logs())),
            },
        )
        .await
    }
}

type LogsOf = dyn Fn() -> Vec<String>;

fn east() -> ClusterName {
    ClusterName::parse("name", "east").unwrap()
}

fn label(cm: &ConfigMap, key: &str) -> Option<String> {
    cm.metadata.labels.as_ref()?.get(key).cloned()
}

fn clusters(names: &[&str]) -> Clusters {
    Clusters(names.iter().map(|n| n.to_string()).collect())
}

/// fleet-fanout's grants: running on every cluster, reading ConfigMaps in
/// the clusters `reads` names (the default readable kinds cover east),
/// writing its copies where `writes` says.
fn grants(writes: Clusters, reads: Option<Clusters>) -> Grants {
    let mut write = granted(&json!({
        "verbs": ["get", "apply", "delete"], "kind": "ConfigMap", "namespaces": ["*"]
    }));
    write.clusters = writes;
    Grants {
        clusters: clusters(&["*"]),
        writes: vec![write],
        reads: Reads {
            policy: ReadPolicy {
                default_cluster: Some(east()),
                ..ReadPolicy::default()
            },
            granted: reads
                .map(|clusters| ReadRule {
                    group: String::new(),
                    kind: "ConfigMap".into(),
                    namespaces: ["*".to_owned()].into(),
                    clusters,
                })
                .into_iter()
                .collect(),
        },
        ..Grants::default()
    }
}

/// A daemon over the test's cluster as east, with no other cluster yet,
/// and the fleet that adds them: its informers, the plugins' way to the
/// clusters, the daemon.
fn fleet_of(east_cluster: &TestCluster) -> (Arc<herald::fleet::Fleet>, ClusterApi, Arc<Daemon>) {
    let informers = Arc::new(informers(east_cluster.client.clone()).with_default_name(east()));
    let api = ClusterApi::new(east_cluster.writer.clone());
    let daemon = Arc::new(Daemon::new(informers.clone(), RetryPolicy::default()));
    let fleet = Arc::new(herald::fleet::Fleet::new(
        informers,
        api.clone(),
        daemon.clone(),
    ));
    (fleet, api, daemon)
}

fn fanout(daemon: &Daemon, access: ClusterAccess, grants: Grants) -> (LoadedPlugin, Arc<LogsOf>) {
    fanout_at(RUST_FANOUT, daemon, access, grants)
}

/// The Rust fleet-fanout and the world it is built for (the Rust SDK's).
const RUST_FANOUT: (&str, &str) = (herald_test_artifacts::FLEET_FANOUT, "0.7.0");

/// A fleet-fanout built at `wasm` for `world` (the Rust plugin, or its
/// Python port): any world that knows clusters.
fn fanout_at(
    (wasm, world): (&str, &str),
    daemon: &Daemon,
    access: ClusterAccess,
    grants: Grants,
) -> (LoadedPlugin, Arc<LogsOf>) {
    let options = LoadOptions {
        grants,
        access: Some(access),
        metrics: Some(daemon.plugin_metrics().clone()),
        ..LoadOptions::default()
    };
    let (plugin, sink) = load_with(wasm, options);
    assert_eq!(plugin.world(), format!("herald:plugin/plugin@{world}"));
    assert!(plugin.knows_clusters());
    let logs: Arc<LogsOf> = Arc::new(move || messages(&sink.lines()));
    (plugin, logs)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_plugin_acts_on_both_clusters_and_each_event_names_its_own() {
    acts_on_both_clusters(RUST_FANOUT).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_port_acts_on_both_clusters_as_the_rust_plugin_does() {
    let test = "clusters::the_python_port_acts_on_both_clusters_as_the_rust_plugin_does";
    let out = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("suite-python")
        .join("fleet-fanout-py.wasm");
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    if let Some(wasm) =
        super::replica_alert::build_python("fleet-fanout-py", "fleet_fanout.py", &out, test)
    {
        acts_on_both_clusters((wasm.to_str().unwrap(), "0.7.0")).await;
    }
}

/// fleet-fanout built at `wasm` on east and west: a fan-out ConfigMap of
/// each copied into the other, labelled with its origin, each copy logged
/// naming both; a delete in east deleting west's copy and nothing else.
async fn acts_on_both_clusters(wasm: (&str, &str)) {
    let fleet = TwoClusters::start().await;
    let (daemon, access) = fleet.daemon();
    let (plugin, logs) = fanout_at(
        wasm,
        &daemon,
        access,
        grants(clusters(&["*"]), Some(clusters(&["west"]))),
    );
    daemon.start(plugin).await.expect("fleet-fanout starts");
    let ns = &fleet.east.namespace;

    fleet.fan_out("east", "settings", "blue").await;
    assert_eq!(
        fleet.copy_in("west", "settings", &*logs).await,
        ("east".to_owned(), "blue".to_owned())
    );
    fleet.fan_out("west", "routes", "green").await;
    assert_eq!(
        fleet.copy_in("east", "routes", &*logs).await,
        ("west".to_owned(), "green".to_owned())
    );
    // The plugin logs a copy after its apply returns, so the server may
    // show it a moment before the log does.
    for line in [
        format!("copied {ns}/settings from east to west"),
        format!("copied {ns}/routes from west to east"),
    ] {
        eventually("the copy logged", PATIENCE, async || {
            let logged = logs();
            if logged.contains(&line) {
                Ok(())
            } else {
                Err(format!("{line:?} not in {logged:?}"))
            }
        })
        .await;
    }
    // Never copied back into the cluster it came from.
    assert_eq!(
        label(
            &fleet.config_maps("east").get("settings").await.unwrap(),
            FANNED_FROM
        ),
        None
    );

    // A delete in east deletes the copy in west, and only that one.
    fleet
        .config_maps("east")
        .delete("settings", &DeleteParams::default())
        .await
        .unwrap();
    let west = fleet.config_maps("west");
    eventually("the copy in west deleted", PATIENCE, async || {
        match west.get_opt("settings").await {
            Ok(None) => Ok(()),
            other => Err(format!("{other:?}; the plugin logged {:?}", logs())),
        }
    })
    .await;
    assert!(west.get_opt("routes").await.unwrap().is_some());
    daemon.shutdown(std::time::Instant::now() + PATIENCE);
    fleet.east.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grants_name_their_clusters_and_cover_the_default_one_alone_without() {
    let fleet = TwoClusters::start().await;

    // Run on west without a read grant there: refused, naming it.
    let (daemon, access) = fleet.daemon();
    let (plugin, _) = fanout(&daemon, access.clone(), grants(clusters(&["*"]), None));
    match daemon.start(plugin).await {
        Err(refused @ StartError::NotGranted(_)) => {
            let refused = refused.to_string();
            assert!(
                refused.contains("cluster \"west\"") && refused.contains("clusters: [west]"),
                "{refused}"
            );
        }
        other => panic!("started without reading west: {other:?}"),
    }

    // Writes granted with no cluster named: the default cluster only.
    let (plugin, logs) = fanout(
        &daemon,
        access,
        grants(Clusters::default(), Some(clusters(&["west"]))),
    );
    daemon.start(plugin).await.expect("fleet-fanout starts");
    fleet.fan_out("west", "routes", "green").await;
    assert_eq!(
        fleet.copy_in("east", "routes", &*logs).await,
        ("west".to_owned(), "green".to_owned()),
        "into the default cluster: granted"
    );
    fleet.fan_out("east", "settings", "blue").await;
    let refusal = eventually("the copy into west refused", PATIENCE, async || {
        let status = daemon.status();
        let last = status[0].last_error.as_ref().map(|e| e.message.clone());
        match last {
            Some(message) if message.contains("settings") => Ok(message),
            other => Err(format!("last error {other:?}; logged {:?}", logs())),
        }
    })
    .await;
    assert!(
        refusal.contains("west: not-granted")
            && refusal.contains("in cluster \"west\"")
            && refusal.contains("grants.writes[].clusters"),
        "{refusal}"
    );
    assert!(
        fleet
            .config_maps("west")
            .get_opt("settings")
            .await
            .unwrap()
            .is_none(),
        "nothing written where no grant reaches"
    );
    daemon.shutdown(std::time::Instant::now() + PATIENCE);
    fleet.east.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_that_cannot_tell_clusters_apart_runs_on_the_default_one_alone() {
    let fleet = TwoClusters::start().await;
    let (daemon, access) = fleet.daemon();
    let options = LoadOptions {
        grants: Grants {
            clusters: clusters(&["*"]),
            ..Grants::default()
        },
        access: Some(access),
        ..LoadOptions::default()
    };
    let bytes = std::fs::read(herald_test_artifacts::NOOP).unwrap();
    let loaded = LoadedPlugin::load(herald_tests::engine(), &bytes, options);
    match loaded {
        Err(refused @ LoadError::ClustersUnknown { .. }) => {
            let refused = refused.to_string();
            assert!(
                refused.contains("plugins.noop.clusters")
                    && refused.contains("herald:plugin/cluster@0.6.0"),
                "{refused}"
            );
        }
        other => panic!("a plugin without the cluster import ran on every cluster: {other:?}"),
    }
    drop(daemon);
    fleet.east.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_hold_plugin_a_cluster_that_cannot_list_leaves_the_replica_ready() {
    let fleet = TwoClusters::start().await;
    let _forbidden = fleet.west.faults().forbid_reads("/api/v1/configmaps");
    let (daemon, access) = fleet.daemon();
    let daemon = daemon.with_other_clusters(herald::readiness::HoldPolicy::HoldPlugin);
    let (plugin, logs) = fanout(
        &daemon,
        access,
        grants(clusters(&["*"]), Some(clusters(&["west"]))),
    );
    daemon.start(plugin).await.expect("fleet-fanout starts");
    fleet.fan_out("east", "settings", "blue").await;
    fleet.copy_in("west", "settings", &*logs).await;
    // West holds nothing: its informer, and the plugin's wait for it, are
    // named under what does not hold readiness. On the embedded server the
    // replica is then ready; on a real cluster other tests' fan-out
    // ConfigMaps (in namespaces west lacks) may keep the plugin handling
    // its initial list in east, which holds it for a reason of its own.
    let on_real_cluster = fleet.east.server.is_none();
    let readiness = eventually("west spared", PATIENCE, async || {
        let readiness = daemon.readiness();
        let text = readiness.text(daemon.forbidden_informers());
        let west_spared = readiness
            .not_holding
            .iter()
            .any(|h| h.name.contains("in cluster west"))
            && !readiness
                .holding
                .iter()
                .any(|h| h.name.contains("in cluster west") || h.why.contains("in cluster west"));
        if west_spared && (readiness.ready || on_real_cluster) {
            Ok(text)
        } else {
            Err(text)
        }
    })
    .await;
    assert!(
        readiness.contains("configmaps labels(herald.dev/fan-out=true) in cluster west"),
        "west's informer is named, holding nothing: {readiness}"
    );
    daemon.shutdown(std::time::Instant::now() + PATIENCE);
    fleet.east.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_that_cannot_list_holds_back_only_its_own_deliveries() {
    let fleet = TwoClusters::start().await;
    let forbidden = fleet.west.faults().forbid_reads("/api/v1/configmaps");
    let (daemon, access) = fleet.daemon();
    let (plugin, logs) = fanout(
        &daemon,
        access,
        grants(clusters(&["*"]), Some(clusters(&["west"]))),
    );
    daemon.start(plugin).await.expect("fleet-fanout starts");

    // West cannot list: east's notifications are delivered all the same.
    fleet.fan_out("east", "settings", "blue").await;
    assert_eq!(
        fleet.copy_in("west", "settings", &*logs).await,
        ("east".to_owned(), "blue".to_owned())
    );
    let readiness = daemon.readiness();
    let held = readiness.text(daemon.forbidden_informers());
    assert!(!readiness.ready, "{held}");
    assert!(
        held.contains("informer configmaps labels(herald.dev/fan-out=true) in cluster west"),
        "readiness names west's informer: {held}"
    );

    // Once west lists, its notifications follow.
    drop(forbidden);
    fleet.fan_out("west", "routes", "green").await;
    assert_eq!(
        fleet.copy_in("east", "routes", &*logs).await,
        ("west".to_owned(), "green".to_owned())
    );
    // West no longer holds readiness. On the embedded server the replica is
    // then ready; on a real cluster other tests' fan-out ConfigMaps may
    // keep the plugin busy in east, a hold of its own (see the test above).
    let on_real_cluster = fleet.east.server.is_none();
    eventually("west listed, holding nothing", PATIENCE, async || {
        let readiness = daemon.readiness();
        let west_holds = readiness
            .holding
            .iter()
            .any(|h| h.name.contains("in cluster west") || h.why.contains("in cluster west"));
        if !west_holds && (readiness.ready || on_real_cluster) {
            Ok(())
        } else {
            Err(readiness.text(daemon.forbidden_informers()))
        }
    })
    .await;
    daemon.shutdown(std::time::Instant::now() + PATIENCE);
    fleet.east.cleanup().await;
}

/// A server standing in for west: its own embedded API server, the test's
/// namespace in it, and a kubeconfig for it written at `path`.
async fn west_server(namespace: &str, path: &std::path::Path) -> herald_apiserver::ApiServer {
    let server = herald_apiserver::start(herald_apiserver::ApiServerConfig::default())
        .await
        .expect("an embedded API server");
    let client = kube::Client::try_from(kube::Config::new(server.url().parse().unwrap())).unwrap();
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": namespace}})).unwrap();
    Api::<Namespace>::all(client)
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    server.write_kubeconfig(path).unwrap();
    server
}

/// A probe that the ConfigMap `name` was copied into `maps` from the cluster
/// `from` by fleet-fanout (whose log lines `logs` gives, for the message).
fn copied_into(
    maps: &Api<ConfigMap>,
    logs: &Arc<LogsOf>,
    name: &'static str,
    from: &'static str,
) -> impl AsyncFnMut() -> Result<(), String> {
    let (maps, logs) = (maps.clone(), logs.clone());
    async move || match maps.get_opt(name).await {
        Ok(Some(copy)) if label(&copy, FANNED_FROM).as_deref() == Some(from) => Ok(()),
        other => Err(format!("{other:?}; the plugin logged {:?}", logs())),
    }
}

/// Creates, in `server`'s namespace `ns`, a ConfigMap `name` for
/// fleet-fanout to copy.
async fn fan_out_in(server: &herald_apiserver::ApiServer, ns: &str, name: &str) {
    let client = kube::Client::try_from(kube::Config::new(server.url().parse().unwrap())).unwrap();
    let cm: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {FAN_OUT: "true"}}, "data": {"at": name}
    }))
    .unwrap();
    Api::<ConfigMap>::namespaced(client, ns)
        .create(&PostParams::default(), &cm)
        .await
        .unwrap();
}

/// Moves `from` into `dir` as `name`, as a provider writes a file: whole.
fn drop_in(from: &std::path::Path, dir: &std::path::Path, name: &str) {
    let staged = dir.join(format!(".{name}.tmp"));
    std::fs::copy(from, &staged).unwrap();
    std::fs::rename(&staged, dir.join(name)).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_directory_adds_replaces_removes_and_adds_back_clusters_at_run_time() {
    use herald::fleet::ClusterDirectory;
    let east_cluster = TestCluster::start().await;
    let ns = east_cluster.namespace.clone();
    let work = ScratchDir::new("fleet").unwrap();
    let dir = work.join("clusters");
    std::fs::create_dir_all(&dir).unwrap();
    // Junk beside the clusters: each an error naming the file, the others run.
    std::fs::write(dir.join("README.txt"), "not a cluster").unwrap();
    std::fs::write(dir.join("bad.kubeconfig"), "apiVersion: [").unwrap();
    std::fs::write(dir.join("east.yaml"), "clusters: []").unwrap();

    let (fleet, api, daemon) = fleet_of(&east_cluster);
    let log = herald_tests::host_log();
    let following = ClusterDirectory::start(
        dir.clone(),
        fleet.clone(),
        ["east".to_owned()].into(),
        std::time::Duration::from_secs(1),
    )
    .await
    .expect("following the directory");
    let dir_text = dir.display().to_string();
    for (file, says) in [
        ("README.txt", "names the cluster"),
        ("bad.kubeconfig", "cluster bad"),
        ("east.yaml", "named by the configuration already"),
    ] {
        let found = log.lines_with(&[&dir_text, file, says]);
        assert!(!found.is_empty(), "no error about {file}");
    }
    assert!(fleet.names().is_empty(), "{:?}", fleet.names());

    let (plugin, logs) = fanout(
        &daemon,
        ClusterAccess::new(Arc::new(api)),
        grants(clusters(&["*"]), Some(clusters(&["*"]))),
    );
    daemon
        .start(plugin)
        .await
        .expect("fleet-fanout starts on east alone");
    let east_maps: Api<ConfigMap> = Api::namespaced(east_cluster.client.clone(), &ns);
    let copied_into_east =
        |name: &'static str, from: &'static str| copied_into(&east_maps, &logs, name, from);
    let fan_out_in = async |server: &herald_apiserver::ApiServer, name: &str| {
        fan_out_in(server, &ns, name).await;
    };

    // Added: a kubeconfig dropped in; west's objects reach the plugin.
    let first = west_server(&ns, &work.join("west-1")).await;
    fan_out_in(&first, "routes").await;
    drop_in(&work.join("west-1"), &dir, "west.kubeconfig");
    eventually(
        "west added, its routes copied into east",
        PATIENCE,
        copied_into_east("routes", "west"),
    )
    .await;

    // Killed, and back at another address with other credentials: the
    // file rewritten, the cluster replaced, its informers listing again.
    drop(first);
    let second = west_server(&ns, &work.join("west-2")).await;
    fan_out_in(&second, "later").await;
    drop_in(&work.join("west-2"), &dir, "west.kubeconfig");
    eventually(
        "west replaced, later copied into east",
        PATIENCE,
        copied_into_east("later", "west"),
    )
    .await;

    // A file turned bad keeps the connection it had.
    std::fs::write(dir.join("west.kubeconfig"), "apiVersion: [").unwrap();
    eventually("the bad rewrite reported", PATIENCE, async || {
        let found = log.lines_with(&[&dir_text, "cluster west", "stays in use"]);
        if found.is_empty() {
            Err("not yet".to_owned())
        } else {
            Ok(())
        }
    })
    .await;
    fan_out_in(&second, "still").await;
    eventually(
        "west still delivers",
        PATIENCE,
        copied_into_east("still", "west"),
    )
    .await;

    // Removed: its informers stop, nothing of west is subscribed.
    std::fs::remove_file(dir.join("west.kubeconfig")).unwrap();
    let in_west = |daemon: &Daemon| {
        daemon
            .informers()
            .all()
            .iter()
            .filter(|i| i.key().cluster.is_some())
            .count()
    };
    eventually("west removed", PATIENCE, async || {
        let (names, running) = (fleet.names(), in_west(&daemon));
        if names.is_empty() && running == 0 {
            Ok(())
        } else {
            Err(format!("clusters {names:?}, informers in west {running}"))
        }
    })
    .await;
    let status = daemon.status();
    assert!(
        status[0]
            .subscriptions
            .iter()
            .all(|s| !s.informer.contains("in cluster west")),
        "{:?}",
        status[0].subscriptions
    );

    // Added back: the same file again.
    fan_out_in(&second, "again").await;
    drop_in(&work.join("west-2"), &dir, "west.kubeconfig");
    eventually(
        "west added back, again copied into east",
        PATIENCE,
        copied_into_east("again", "west"),
    )
    .await;

    following.stop().await;
    daemon.shutdown(std::time::Instant::now() + PATIENCE);
    drop(second);
    east_cluster.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_clusters_kubeconfig_rewritten_replaces_its_connection_and_a_bad_one_keeps_it()
{
    use herald::fleet::ConfiguredClusters;
    use herald::source::{SourceConfig, SourceKind, connect_kubeconfig};
    let east_cluster = TestCluster::start().await;
    let ns = east_cluster.namespace.clone();
    let work = ScratchDir::new("configured").unwrap();
    let dir = work.join("etc");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("west.kubeconfig");
    let first = west_server(&ns, &file).await;

    // As the service starts a `clusters[]` entry: connected, then followed.
    let (fleet, api, daemon) = fleet_of(&east_cluster);
    let west = ClusterName::parse("cluster", "west").unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    let connection = connect_kubeconfig(&text, None, "west.kubeconfig")
        .await
        .unwrap();
    fleet
        .add(west.clone(), connection, Default::default())
        .await;
    let configured = [SourceConfig {
        name: Some(west),
        kind: SourceKind::Kubeconfig,
        kubeconfig: Some(file.clone()),
        ..SourceConfig::default()
    }];
    let following = ConfiguredClusters::start(
        &configured,
        fleet.clone(),
        std::time::Duration::from_secs(1),
    )
    .expect("a kubeconfig entry is followed");
    let log = herald_tests::host_log();

    let (plugin, logs) = fanout(
        &daemon,
        ClusterAccess::new(Arc::new(api)),
        grants(clusters(&["*"]), Some(clusters(&["*"]))),
    );
    daemon.start(plugin).await.expect("fleet-fanout starts");
    let east_maps: Api<ConfigMap> = Api::namespaced(east_cluster.client.clone(), &ns);
    fan_out_in(&first, &ns, "routes").await;
    eventually(
        "west's routes copied into east",
        PATIENCE,
        copied_into(&east_maps, &logs, "routes", "west"),
    )
    .await;

    // The credentials rotate and the server moves: the file rewritten, the
    // cluster replaced, its informers listing again from the new server.
    drop(first);
    let second = west_server(&ns, &work.join("west-2")).await;
    fan_out_in(&second, &ns, "later").await;
    drop_in(&work.join("west-2"), &dir, "west.kubeconfig");
    eventually(
        "west replaced, later copied into east",
        PATIENCE,
        copied_into(&east_maps, &logs, "later", "west"),
    )
    .await;

    // A rewrite that is no kubeconfig is reported; the connection stays.
    std::fs::write(&file, "apiVersion: [").unwrap();
    eventually("the bad rewrite reported", PATIENCE, async || {
        if log
            .lines_with(&["clusters[] west", "stays in use"])
            .is_empty()
        {
            Err("not yet".to_owned())
        } else {
            Ok(())
        }
    })
    .await;
    fan_out_in(&second, &ns, "still").await;
    eventually(
        "west still delivers",
        PATIENCE,
        copied_into(&east_maps, &logs, "still", "west"),
    )
    .await;

    following.stop().await;
    daemon.shutdown(std::time::Instant::now() + PATIENCE);
    drop(second);
    east_cluster.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_selecting_clusters_by_label_joins_those_labelled_and_leaves_one_relabelled() {
    use herald::source::connect_kubeconfig;
    let east_cluster = TestCluster::start().await;
    let ns = east_cluster.namespace.clone();
    let work = ScratchDir::new("labels").unwrap();
    std::fs::create_dir_all(&work).unwrap();
    let server = west_server(&ns, &work.join("west")).await;

    let (fleet, api, daemon) = fleet_of(&east_cluster);
    let mut runs_on = grants(clusters(&["*"]), Some(clusters(&["*"])));
    runs_on.clusters = clusters(&["east", "tier=edge"]);
    let (plugin, _logs) = fanout(&daemon, ClusterAccess::new(Arc::new(api)), runs_on);
    daemon
        .start(plugin)
        .await
        .expect("fleet-fanout starts on east");
    let subscribed_in_west = |daemon: &Daemon| {
        daemon.status()[0]
            .subscriptions
            .iter()
            .any(|s| s.informer.contains("in cluster west"))
    };
    let west = ClusterName::parse("cluster", "west").unwrap();
    let connect = async || {
        let text = std::fs::read_to_string(work.join("west")).unwrap();
        connect_kubeconfig(&text, None, "west").await.unwrap()
    };
    let labels = |tier: &str| [("tier".to_owned(), tier.to_owned())].into();

    // Labelled as the plugin selects: it joins west.
    fleet
        .add(west.clone(), connect().await, labels("edge"))
        .await;
    eventually("the plugin subscribed in west", PATIENCE, async || {
        subscribed_in_west(&daemon)
    })
    .await;
    // Relabelled: it leaves west, which stays in the fleet.
    fleet.relabel(&west, labels("core")).await;
    eventually("the plugin left west", PATIENCE, async || {
        !subscribed_in_west(&daemon)
    })
    .await;
    assert_eq!(fleet.names(), std::slice::from_ref(&west));
    // Added again with no labels: it stays out.
    fleet.add(west, connect().await, Default::default()).await;
    assert!(!subscribed_in_west(&daemon));

    daemon.shutdown(std::time::Instant::now() + PATIENCE);
    drop(server);
    east_cluster.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_secrets_in_the_home_cluster_add_and_remove_clusters() {
    use herald::fleet::{ClusterSecrets, ClusterSecretsConfig, Fleet};
    use k8s_openapi::api::core::v1::Secret;
    let log = herald_tests::host_log();
    let east_cluster = TestCluster::start().await;
    let ns = east_cluster.namespace.clone();
    let work = ScratchDir::new("secrets").unwrap();
    std::fs::create_dir_all(&work).unwrap();
    let west = west_server(&ns, &work.join("west")).await;
    let north = west_server(&ns, &work.join("north")).await;

    let (fleet, api, daemon) = fleet_of(&east_cluster);
    let secrets: Api<Secret> = Api::namespaced(east_cluster.client.clone(), &ns);
    let post = PostParams::default();
    // Cluster API's convention for west, Argo CD's for north, and an Argo
    // CD Secret whose name is no cluster name.
    let capi: Secret = serde_json::from_value(json!({
        "metadata": {"name": "west-kubeconfig", "labels": {"cluster.x-k8s.io/cluster-name": "west"}},
        "stringData": {"value": std::fs::read_to_string(work.join("west")).unwrap()},
    }))
    .unwrap();
    let argo: Secret = serde_json::from_value(json!({
        "metadata": {"name": "north", "labels": {"argocd.argoproj.io/secret-type": "cluster"}},
        "stringData": {"name": "north", "server": north.url(), "config": "{}"},
    }))
    .unwrap();
    let bad: Secret = serde_json::from_value(json!({
        "metadata": {"name": "prod", "labels": {"argocd.argoproj.io/secret-type": "cluster"}},
        "stringData": {"name": "Prod EU", "server": "https://prod.example"},
    }))
    .unwrap();
    for secret in [&capi, &argo, &bad] {
        secrets.create(&post, secret).await.unwrap();
    }
    let following = ClusterSecrets::start(
        east_cluster.client.clone(),
        ClusterSecretsConfig {
            namespace: ns.clone(),
            poll_interval: std::time::Duration::from_millis(200),
        },
        fleet.clone(),
        ["east".to_owned()].into(),
    )
    .await;
    let names = |fleet: &Fleet| -> Vec<String> {
        fleet
            .names()
            .iter()
            .map(|n| n.as_str().to_owned())
            .collect()
    };
    assert_eq!(
        names(&fleet),
        ["north", "west"],
        "both conventions read at start"
    );
    let refused = log.lines_with(&[&format!("Secret {ns}/prod"), "Prod EU"]);
    assert!(
        !refused.is_empty(),
        "the Secret that names no cluster is named"
    );

    let (plugin, logs) = fanout(
        &daemon,
        ClusterAccess::new(Arc::new(api)),
        grants(clusters(&["*"]), Some(clusters(&["*"]))),
    );
    daemon
        .start(plugin)
        .await
        .expect("fleet-fanout starts on all three");
    let north_maps: Api<ConfigMap> = Api::namespaced(
        kube::Client::try_from(kube::Config::new(north.url().parse().unwrap())).unwrap(),
        &ns,
    );
    let cm: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "from-east", "labels": {FAN_OUT: "true"}}, "data": {"a": "b"}
    }))
    .unwrap();
    Api::<ConfigMap>::namespaced(east_cluster.client.clone(), &ns)
        .create(&post, &cm)
        .await
        .unwrap();
    eventually(
        "from-east copied into north",
        PATIENCE,
        async || match north_maps.get_opt("from-east").await {
            Ok(Some(copy)) if label(&copy, FANNED_FROM).as_deref() == Some("east") => Ok(()),
            other => Err(format!("{other:?}; logged {:?}", logs())),
        },
    )
    .await;

    // The Secret deleted: the cluster goes, and the plugin with it.
    secrets
        .delete("west-kubeconfig", &DeleteParams::default())
        .await
        .unwrap();
    eventually("west removed", PATIENCE, async || {
        let now = names(&fleet);
        let in_west = daemon
            .informers()
            .all()
            .iter()
            .filter(|i| {
                i.key()
                    .cluster
                    .as_ref()
                    .is_some_and(|c| c.as_str() == "west")
            })
            .count();
        if now == ["north"] && in_west == 0 {
            Ok(())
        } else {
            Err(format!("clusters {now:?}, informers in west {in_west}"))
        }
    })
    .await;

    following.stop().await;
    daemon.shutdown(std::time::Instant::now() + PATIENCE);
    drop((west, north));
    east_cluster.cleanup().await;
}
