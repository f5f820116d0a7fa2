//! B14: sharding across replicas. Real `herald run` processes (this
//! crate's `herald-child`, the `herald` command line) against the embedded
//! API server, dividing the same plugins through Leases.
//!
//! - B14.a: deliveries per CPU-second of all replicas together, 3 replicas
//!   against 1, with the same plugins (renamed copies of the `recorder`
//!   fixture on the ConfigMaps of one namespace, log lines filtered out)
//!   and the same writes at the same rate. CPU is every replica process's
//!   user + system time (`/proc/<pid>/stat`) from the first write until
//!   every plugin has handled every write; deliveries are the `delivered`
//!   counts `/plugins` reports.
//! - B14.a2: the same with each plugin on the ConfigMaps of its own
//!   namespace, so that the informers divide between the replicas, the
//!   writes spread over the namespaces.
//! - B14.d: in that layout, with every namespace filled with ConfigMaps of
//!   about 4 KiB, the resident memory of the largest replica, 3 against 1
//!   (and each one's `herald_cache_bytes`).
//! - B14.b: failover, kill → first event handled by the new owner: a
//!   replica owning a chosen plugin is killed with SIGKILL while a
//!   ConfigMap is updated every 10 ms; the survivors' `/plugins` are read
//!   every 10 ms until one of them reports a delivery by that plugin. The
//!   Leases use a 2 s duration (1 s renew deadline, 100 ms retry period), so
//!   the figure is that duration plus what the hand-over adds; with
//!   client-go's 15 s it is 15 s plus the same.
//! - B14.c: the API cost of per-plugin Leases: Lease writes per second
//!   (a watch of the namespace's Leases over one second) with 3 replicas
//!   balanced and idle.

use crate::cluster::Cluster;
use crate::measure::{PATIENCE, Samples};
use crate::settings::Settings;
use crate::table::{Goal, Row, Unit};
use herald::scratch::ScratchDir;
use herald_test_artifacts as artifacts;
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The namespace written to (one of the benchmark's).
const NAMESPACE: &str = "bench-0";
/// The lease duration the replicas run with.
const LEASE_DURATION: Duration = Duration::from_secs(2);
/// ConfigMaps the writes go to, in turn.
const POOL: usize = 20;

/// Runs B14.
pub fn run(settings: &Settings, runtime: &tokio::runtime::Runtime) -> Vec<Row> {
    let Some(program) = settings.compiler_program.clone() else {
        return vec![pending("B14", "needs the herald-child binary")];
    };
    crate::progress("B14: sharding (3 replicas vs 1, failover)");
    // Clients spawn their connection tasks on the runtime.
    let _runtime = runtime.enter();
    let cluster = runtime.block_on(Cluster::start());
    let kubeconfig_dir = scratch("kube");
    let kubeconfig = kubeconfig_dir.join("kubeconfig");
    runtime.block_on(write_kubeconfig(&cluster, &kubeconfig));
    let client = cluster.client();
    let plugins: Vec<String> = (1..=settings.b14_plugins)
        .map(|i| format!("bench-{i:02}"))
        .collect();
    // Every plugin on the ConfigMaps of one namespace (one informer per
    // replica), or each on its own namespace (the informers divide).
    let shared = Rig::new(&program, &kubeconfig, "b14", &plugins, |_| {
        NAMESPACE.to_owned()
    });
    assert!(
        plugins.len() < crate::data::NAMESPACES,
        "B14: a namespace per plugin"
    );
    let own = Rig::new(&program, &kubeconfig, "b14own", &plugins, |i| {
        format!("bench-{}", i + 1)
    });
    runtime.block_on(async {
        shared.create_pools(&client).await;
        own.create_pools(&client).await;
        own.fill(&client, settings.b14_objects).await;
    });

    let mut written = 0;
    let one = shared.throughput(
        runtime,
        &client,
        &[shared.start("replica-0")],
        settings,
        &mut written,
    );
    let mut replicas: Vec<Replica> = (0..3)
        .map(|i| shared.start(&format!("replica-{i}")))
        .collect();
    let three = shared.throughput(runtime, &client, &replicas, settings, &mut written);
    let mut lease_writes = Samples::new();
    for _ in 0..settings.repetitions {
        lease_writes.push(runtime.block_on(lease_writes_per_second(&client)));
    }
    let mut failovers = Samples::new();
    for _ in 0..settings.repetitions {
        let (seconds, victim) = shared.failover(runtime, &client, &mut replicas, &mut written);
        failovers.push(seconds);
        replicas[victim] = shared.start(&format!("replica-{victim}"));
        shared.wait_balanced(runtime, &replicas);
    }
    drop(replicas);

    let single = [own.start("own-0")];
    let own_one = own.throughput(runtime, &client, &single, settings, &mut written);
    let (rss_one, cache_one) = own.memory(runtime, &single);
    drop(single);
    let replicas: Vec<Replica> = (0..3).map(|i| own.start(&format!("own-{i}"))).collect();
    let own_three = own.throughput(runtime, &client, &replicas, settings, &mut written);
    let (rss_three, cache_three) = own.memory(runtime, &replicas);
    drop(replicas);
    let events = settings.b14_events;
    let rate = settings.b14_rate;
    let count = plugins.len();
    vec![
        Row::ratio_of(
            "B14.a",
            format!(
                "deliveries per CPU-second of all replicas, 3 replicas (measured) vs 1 (baseline), {count} plugins all on one namespace's ConfigMaps, {events} writes at {rate}/s"
            ),
            Unit::PerSecond,
            one,
            three,
            Goal::None,
        )
        .with_details(
            "each replica runs the one informer its plugins share, so 3 replicas pay 3 watches, 3 caches and 3 processes' lease rounds for the same deliveries",
        ),
        Row::ratio_of(
            "B14.a2",
            format!(
                "deliveries per CPU-second of all replicas, 3 replicas vs 1, {count} plugins each on its own namespace, {events} writes at {rate}/s spread over them"
            ),
            Unit::PerSecond,
            own_one,
            own_three,
            Goal::None,
        )
        .with_details(
            "the informers divide between the replicas: what 3 replicas add is 3 processes and their lease rounds",
        ),
        Row::ratio_of(
            "B14.d",
            format!(
                "resident memory of the largest replica, 3 replicas vs 1, {count} plugins each on its own namespace of {} ConfigMaps of ~4 KiB",
                settings.b14_objects
            ),
            Unit::Bytes,
            one_sample(rss_one),
            one_sample(rss_three),
            Goal::None,
        )
        .with_details(format!(
            "cache bytes (herald_cache_bytes): {:.1} MiB on the single replica; {} on the three",
            cache_one.iter().sum::<f64>() / (1024.0 * 1024.0),
            cache_three
                .iter()
                .map(|b| format!("{:.1} MiB", b / (1024.0 * 1024.0)))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        Row::ratio_of(
            "B14.b",
            format!(
                "failover, SIGKILL → first event handled by the new owner ({}s lease, 100 ms retry, polled every 10 ms)",
                LEASE_DURATION.as_secs()
            ),
            Unit::Seconds,
            Samples::new(),
            failovers,
            Goal::ValueAtMost(LEASE_DURATION.as_secs_f64() + 3.0),
        )
        .with_details(
            "the bound is the suite's: the lease duration plus 3 s for the next round, the new informer's list and the first call",
        ),
        Row::ratio_of(
            "B14.c",
            format!(
                "Lease writes per second with 3 replicas and {} plugins, balanced and idle (100 ms retry period)",
                count
            ),
            Unit::PerSecond,
            Samples::new(),
            lease_writes,
            Goal::None,
        )
        .with_details(format!(
            "expected (plugins + replicas) / retryPeriod = {:.0}/s: one renewal of each plugin's and each member's Lease per round; plus one list of the group per replica per round (not counted: not a write)",
            (count + 3) as f64 / 0.1
        )),
    ]
}

/// A single measurement as samples.
fn one_sample(value: f64) -> Samples {
    let mut samples = Samples::new();
    samples.push(value);
    samples
}

fn pending(id: &str, why: &'static str) -> Row {
    Row::ratio_of(
        id,
        "sharding",
        Unit::Seconds,
        Samples::new(),
        Samples::new(),
        Goal::Pending(why),
    )
}

/// A fresh directory of this run, removed when dropped.
fn scratch(what: &str) -> ScratchDir {
    ScratchDir::new(&format!("b14-{what}")).expect("creating B14's scratch directory")
}

/// A kubeconfig for the embedded server.
async fn write_kubeconfig(cluster: &Cluster, path: &Path) {
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: bench\n  cluster:\n    server: {}\ncontexts:\n- name: bench\n  context:\n    cluster: bench\n    user: bench\ncurrent-context: bench\nusers:\n- name: bench\n  user: {{}}\n",
        cluster.url()
    );
    tokio::fs::write(path, text).await.unwrap();
}

/// Writes `count` updates at `rate` per second, in turn over the pool of
/// each of `namespaces`, each setting a value never written before
/// (`written` counts them).
async fn write(
    client: &kube::Client,
    namespaces: &[String],
    count: usize,
    rate: u32,
    written: &mut usize,
) {
    let started = tokio::time::Instant::now();
    for i in 0..count {
        let due = started + Duration::from_secs_f64(i as f64 / f64::from(rate));
        tokio::time::sleep_until(due).await;
        *written += 1;
        let namespace = &namespaces[*written % namespaces.len()];
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
        let patch = Patch::Merge(serde_json::json!({"data": {"n": written.to_string()}}));
        api.patch(
            &format!("b14-{}", (*written / namespaces.len()) % POOL),
            &PatchParams::default(),
            &patch,
        )
        .await
        .expect("updating a ConfigMap");
    }
}

/// Lease writes seen by a watch of the namespace's Leases over one second.
async fn lease_writes_per_second(client: &kube::Client) -> f64 {
    use futures::StreamExt;
    use k8s_openapi::api::coordination::v1::Lease;
    let api: Api<Lease> = Api::namespaced(client.clone(), NAMESPACE);
    let listed = api
        .list(&kube::api::ListParams::default())
        .await
        .expect("listing Leases");
    let version = listed.metadata.resource_version.unwrap_or_default();
    let mut events = api
        .watch(&kube::api::WatchParams::default().timeout(30), &version)
        .await
        .expect("watching Leases")
        .boxed();
    let window = Duration::from_secs(1);
    let end = tokio::time::Instant::now() + window;
    let mut writes = 0u32;
    while let Ok(Some(event)) = tokio::time::timeout_at(end, events.next()).await {
        if matches!(
            event,
            Ok(kube::api::WatchEvent::Added(_) | kube::api::WatchEvent::Modified(_))
        ) {
            writes += 1;
        }
    }
    f64::from(writes) / window.as_secs_f64()
}

/// Where the replicas run from: one plugin directory, one Lease group.
struct Rig {
    program: PathBuf,
    dir: ScratchDir,
    kubeconfig: PathBuf,
    group: String,
    plugins: Vec<String>,
    /// The namespace of each plugin's ConfigMaps.
    namespaces: Vec<String>,
}

/// A `herald run` process.
struct Replica {
    child: Child,
    address: std::net::SocketAddr,
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Replica {
    /// User + system CPU time so far, in seconds.
    fn cpu_seconds(&self) -> f64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id()))
            .expect("reading /proc/<pid>/stat");
        // Fields after the command name (which may hold spaces), from 3.
        let after = &stat[stat.rfind(')').unwrap() + 2..];
        let fields: Vec<&str> = after.split(' ').collect();
        let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
        ticks * Self::tick()
    }

    /// The unit of `/proc/<pid>/stat`'s CPU times, in seconds.
    fn tick() -> f64 {
        // SAFETY: sysconf only reads a configuration value of the system.
        #[allow(unsafe_code)]
        let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
        1.0 / per_second
    }
}

/// One plugin as a replica's `/plugins` reports it.
#[derive(Debug, Clone)]
struct Reported {
    dispatching: bool,
    synced: bool,
    delivered: u64,
}

impl Rig {
    /// A plugin directory of `plugins` (renamed recorders), plugin `i`
    /// watching the ConfigMaps of `namespace(i)`, for the Lease group `group`.
    fn new(
        program: &Path,
        kubeconfig: &Path,
        group: &str,
        plugins: &[String],
        namespace: impl Fn(usize) -> String,
    ) -> Rig {
        let dir = scratch(group);
        artifacts::write_renamed_recorders(&dir.join("plugins"), plugins);
        Rig {
            program: program.to_owned(),
            dir,
            kubeconfig: kubeconfig.to_owned(),
            group: group.to_owned(),
            namespaces: (0..plugins.len()).map(namespace).collect(),
            plugins: plugins.to_vec(),
        }
    }

    /// The distinct namespaces the plugins watch.
    fn watched(&self) -> Vec<String> {
        let set: std::collections::BTreeSet<&String> = self.namespaces.iter().collect();
        set.into_iter().cloned().collect()
    }

    /// The ConfigMaps written to, in each watched namespace.
    async fn create_pools(&self, client: &kube::Client) {
        for namespace in self.watched() {
            create(client, &namespace, "b14", POOL, 0).await;
        }
    }

    /// `count` ConfigMaps of about 4 KiB in each watched namespace.
    async fn fill(&self, client: &kube::Client, count: usize) {
        for namespace in self.watched() {
            create(client, &namespace, "fill", count, 4096).await;
        }
    }

    /// Deliveries per CPU-second (B14.a, B14.a2), one sample per
    /// repetition, once balanced.
    fn throughput(
        &self,
        runtime: &tokio::runtime::Runtime,
        client: &kube::Client,
        replicas: &[Replica],
        settings: &Settings,
        written: &mut usize,
    ) -> Samples {
        self.wait_balanced(runtime, replicas);
        let mut samples = Samples::new();
        for _ in 0..settings.repetitions {
            let before = self.delivered(runtime, replicas);
            let cpu_before: f64 = replicas.iter().map(Replica::cpu_seconds).sum();
            runtime.block_on(write(
                client,
                &self.watched(),
                settings.b14_events,
                settings.b14_rate,
                written,
            ));
            // Each write reaches the plugins watching its namespace.
            let fan_out = self.plugins.len() / self.watched().len();
            let expected = before + (settings.b14_events * fan_out) as u64;
            crate::measure::wait_every(
                "B14: every plugin handles every write",
                PATIENCE,
                Duration::from_millis(5),
                || self.delivered(runtime, replicas) >= expected,
            );
            // At least one tick of the clock /proc counts in (10 ms): a quick
            // run's handful of writes may cost less than one.
            let cpu = (replicas.iter().map(Replica::cpu_seconds).sum::<f64>() - cpu_before)
                .max(Replica::tick());
            let delivered = self.delivered(runtime, replicas) - before;
            samples.push(delivered as f64 / cpu);
        }
        samples
    }

    /// The largest resident set of `replicas`, and each one's cache bytes.
    fn memory(&self, runtime: &tokio::runtime::Runtime, replicas: &[Replica]) -> (f64, Vec<f64>) {
        let rss = replicas
            .iter()
            .map(|r| {
                let status = std::fs::read_to_string(format!("/proc/{}/status", r.child.id()))
                    .expect("reading /proc/<pid>/status");
                status
                    .lines()
                    .find_map(|l| l.strip_prefix("VmRSS:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
                    .expect("VmRSS")
                    * 1024.0
            })
            .fold(0.0, f64::max);
        let cache = replicas
            .iter()
            .map(|r| {
                let text = runtime
                    .block_on(fetch(r.address, "/metrics"))
                    .expect("/metrics answers");
                String::from_utf8_lossy(&text)
                    .lines()
                    .filter(|l| l.starts_with("herald_cache_bytes"))
                    .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
                    .sum()
            })
            .collect();
        (rss, cache)
    }

    fn start(&self, identity: &str) -> Replica {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let address = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        let mut plugins = serde_json::Map::new();
        for name in &self.plugins {
            plugins.insert(
                name.clone(),
                serde_json::json!({"config": {
                    "kind": {"version": "v1", "kind": "ConfigMap"},
                    "namespace": self.namespaces[self.plugins.iter().position(|p| p == name).unwrap()],
                }}),
            );
        }
        let config = serde_json::json!({
            "pluginDir": self.dir.join("plugins"),
            "listen": address.to_string(),
            "source": {"kind": "kubeconfig", "kubeconfig": self.kubeconfig},
            "log": {"level": "warn", "format": "json"},
            "pluginFiles": {"artifactCache": {"dir": self.dir.join("artifacts")}},
            "sharding": {
                "enabled": true,
                "leaseName": self.group,
                "leaseNamespace": NAMESPACE,
                "identity": identity,
                "leaseDuration": format!("{}s", LEASE_DURATION.as_secs()),
                "renewDeadline": "1s",
                "retryPeriod": "100ms",
            },
            "plugins": plugins,
        });
        let path = self.dir.join(format!("{identity}.json"));
        std::fs::write(&path, config.to_string()).unwrap();
        let child = Command::new(&self.program)
            .args(["run", "--config"])
            .arg(&path)
            .env_remove("RUST_LOG")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting herald run");
        Replica { child, address }
    }

    /// Each plugin as every replica reports it (a replica not answering yet
    /// reports nothing).
    fn reports(
        &self,
        runtime: &tokio::runtime::Runtime,
        replicas: &[Replica],
    ) -> Vec<BTreeMap<String, Reported>> {
        replicas
            .iter()
            .map(|r| runtime.block_on(plugins_of(r.address)).unwrap_or_default())
            .collect()
    }

    /// Waits until every plugin is dispatched and through its initial list
    /// on exactly one replica, and every replica owns at most its share.
    fn wait_balanced(&self, runtime: &tokio::runtime::Runtime, replicas: &[Replica]) {
        let share = self.plugins.len().div_ceil(replicas.len());
        let deadline = Instant::now() + PATIENCE;
        loop {
            let reports = self.reports(runtime, replicas);
            let owners = |name: &String| {
                reports
                    .iter()
                    .filter(|r| r.get(name).is_some_and(|p| p.dispatching && p.synced))
                    .count()
            };
            let loads_ok = reports
                .iter()
                .all(|r| r.values().filter(|p| p.dispatching).count() <= share);
            if loads_ok && self.plugins.iter().all(|name| owners(name) == 1) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "B14: the plugins were not balanced over {} replicas: {reports:?}",
                replicas.len()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Total deliveries of every plugin on every replica.
    fn delivered(&self, runtime: &tokio::runtime::Runtime, replicas: &[Replica]) -> u64 {
        self.reports(runtime, replicas)
            .iter()
            .flat_map(|r| r.values())
            .map(|p| p.delivered)
            .sum()
    }

    /// One repetition of B14.b: kills the owner of the first plugin and
    /// returns the seconds until a survivor handled an event for it, and
    /// which replica was killed.
    fn failover(
        &self,
        runtime: &tokio::runtime::Runtime,
        client: &kube::Client,
        replicas: &mut [Replica],
        written: &mut usize,
    ) -> (f64, usize) {
        let plugin = &self.plugins[0];
        let reports = self.reports(runtime, replicas);
        let victim = reports
            .iter()
            .position(|r| r.get(plugin).is_some_and(|p| p.dispatching))
            .expect("an owner of the plugin");
        let killed = Instant::now();
        replicas[victim].child.kill().expect("SIGKILL");
        let _ = replicas[victim].child.wait();
        let writer = {
            let client = client.clone();
            let mut first = *written;
            let namespaces = self.watched();
            runtime.spawn(async move {
                loop {
                    write(&client, &namespaces, 1, 1000, &mut first).await;
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            })
        };
        let deadline = Instant::now() + PATIENCE;
        let seconds = loop {
            let handled = replicas.iter().enumerate().any(|(i, r)| {
                i != victim
                    && runtime
                        .block_on(plugins_of(r.address))
                        .and_then(|p| p.get(plugin).cloned())
                        .is_some_and(|p| p.dispatching && p.delivered > 0)
            });
            if handled {
                break killed.elapsed().as_secs_f64();
            }
            assert!(Instant::now() < deadline, "B14: no failover of {plugin}");
            std::thread::sleep(Duration::from_millis(10));
        };
        writer.abort();
        *written += 100_000;
        (seconds, victim)
    }
}

/// `GET path` from the replica at `address`: the body, if it answered.
async fn fetch(address: std::net::SocketAddr, path: &str) -> Option<Bytes> {
    let stream = tokio::net::TcpStream::connect(address).await.ok()?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .ok()?;
    tokio::spawn(connection);
    let request = hyper::Request::get(path)
        .header(hyper::header::HOST, address.to_string())
        .body(Empty::<Bytes>::new())
        .ok()?;
    let response = sender.send_request(request).await.ok()?;
    Some(response.into_body().collect().await.ok()?.to_bytes())
}

/// Creates `count` ConfigMaps `<prefix>-<i>` in `namespace`, each with
/// `bytes` of data (16 at a time).
async fn create(client: &kube::Client, namespace: &str, prefix: &str, count: usize, bytes: usize) {
    use futures::StreamExt;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let value = "x".repeat(bytes);
    futures::stream::iter(0..count)
        .map(|i| {
            let (api, value) = (api.clone(), value.clone());
            async move {
                let cm = serde_json::from_value(serde_json::json!({
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": format!("{prefix}-{i}")},
                    "data": {"n": "0", "payload": value},
                }))
                .unwrap();
                api.create(&PostParams::default(), &cm)
                    .await
                    .expect("creating a ConfigMap");
            }
        })
        .buffer_unordered(16)
        .collect::<Vec<()>>()
        .await;
}

/// `/plugins` of the replica at `address`: each plugin's dispatching,
/// synced and delivered (summed over its subscriptions).
async fn plugins_of(address: std::net::SocketAddr) -> Option<BTreeMap<String, Reported>> {
    let body = fetch(address, "/plugins").await?;
    let report: serde_json::Value = serde_json::from_slice(&body).ok()?;
    Some(
        report["plugins"]
            .as_array()?
            .iter()
            .map(|p| {
                let delivered = p["subscriptions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|s| s["delivered"].as_u64().unwrap_or(0))
                    .sum();
                (
                    p["name"].as_str().unwrap_or_default().to_owned(),
                    Reported {
                        dispatching: p["dispatching"].as_bool().unwrap_or(false),
                        synced: p["synced"].as_bool().unwrap_or(false),
                        delivered,
                    },
                )
            })
            .collect(),
    )
}
