//! Sharding across replicas: three real `herald run` processes (the suite's
//! `herald-replica` binary, real HTTP to the API server, real signals)
//! divide six plugins through Leases. Killed, a replica's plugins move to
//! the others within the lease duration plus a stated bound and every
//! object reaches them; restarted, it takes its share back; terminated, it
//! releases its Leases at once. The Lease history (watched by the test from
//! the start) and the plugins' own records (each replica's log) show that
//! no plugin was ever dispatched by two replicas at once.
//!
//! An in-process test drives two coordinators directly to show the
//! hand-over handshake: a plugin given up is released only once its
//! replica has stopped it.
//!
//! Every wait polls for an observable condition under a generous bound;
//! timings are asserted only where the protocol promises them.

use crate::cluster::TestCluster;
use futures::StreamExt;
use herald::scratch::ScratchDir;
use herald_tests::{artifacts, eventually};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, WatchEvent, WatchParams};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The Leases' timings: short, so that the test is quick.
const LEASE_DURATION: Duration = Duration::from_secs(2);
/// How long a test waits for anything that should happen; a safety net.
const NEVER: Duration = Duration::from_secs(90);
/// The bound promised after a SIGKILL, beyond the lease duration: the
/// member and plugin Leases expire together, the survivors see it at their
/// next round (100 ms), take the plugins, start their informers and deliver
/// the first notification of a fresh initial list.
const FAILOVER_MARGIN: Duration = Duration::from_secs(3);
/// The Lease group of the test.
const GROUP: &str = "herald-shard";
/// Six plugins: copies of the recorder under names of their own.
const PLUGINS: [&str; 6] = [
    "shard-p1", "shard-p2", "shard-p3", "shard-p4", "shard-p5", "shard-p6",
];

/// One plugin call as the recorder logged it.
#[derive(Debug, Clone)]
struct Delivery {
    replica: String,
    plugin: String,
    key: String,
    initial: bool,
    at: Timestamp,
}

/// A `herald run` process of the suite, its log read line by line.
struct Replica {
    identity: String,
    /// Where its endpoints listen.
    address: String,
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Replica {
    fn start(identity: &str, config: &Path, address: &str) -> Replica {
        let mut child = Command::new(env!("CARGO_BIN_EXE_herald-replica"))
            .args(["run", "--config"])
            .arg(config)
            .env_remove("RUST_LOG")
            .env_remove("KUBECONFIG")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting herald run");
        let lines = Arc::new(Mutex::new(Vec::new()));
        for stream in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let lines = lines.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    lines.lock().unwrap().push(line);
                }
            });
        }
        Replica {
            identity: identity.to_owned(),
            address: address.to_owned(),
            child,
            lines,
        }
    }

    fn log(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    /// The recorder lines of this process.
    fn deliveries(&self) -> Vec<Delivery> {
        self.log()
            .iter()
            .filter_map(|line| {
                let json: serde_json::Value = serde_json::from_str(line).ok()?;
                let fields = &json["fields"];
                let message = fields["message"].as_str()?;
                let key = message.split(' ').find_map(|f| f.strip_prefix("key="))?;
                Some(Delivery {
                    replica: self.identity.clone(),
                    plugin: fields["plugin"].as_str()?.to_owned(),
                    key: key.to_owned(),
                    initial: message.contains("initial=true"),
                    at: json["timestamp"].as_str()?.parse().ok()?,
                })
            })
            .collect()
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .expect("running kill");
        assert!(status.success(), "kill {signal} failed");
    }

    /// Waits for the process to exit.
    async fn exited(&mut self) -> std::process::ExitStatus {
        let child = &mut self.child;
        eventually("the replica to exit", NEVER, async || {
            child.try_wait().unwrap()
        })
        .await
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `GET http://address/path`, the body of a 200.
fn http_get(address: &str, path: &str) -> Option<String> {
    match herald_tests::http_get(address, path)? {
        (200, body) => Some(body),
        _ => None,
    }
}

/// The owner of each plugin, as `/plugins` of the replica at `address`
/// shows it (only if it lists every plugin).
fn owners(address: &str) -> Option<BTreeMap<String, Option<String>>> {
    let body = http_get(address, "/plugins")?;
    let report: serde_json::Value = serde_json::from_str(&body).ok()?;
    let owners: BTreeMap<String, Option<String>> = report["plugins"]
        .as_array()?
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap_or_default().to_owned(),
                p["owner"].as_str().map(str::to_owned),
            )
        })
        .collect();
    (owners.len() == PLUGINS.len()).then_some(owners)
}

/// One version of a Lease as the test's watch saw it.
#[derive(Debug, Clone)]
struct Version {
    lease: String,
    holder: Option<String>,
    acquired: Option<Timestamp>,
    renewed: Option<Timestamp>,
}

/// Records every version of every Lease in the namespace from now on.
fn watch_leases(cluster: &TestCluster) -> Arc<Mutex<Vec<Version>>> {
    let history = Arc::new(Mutex::new(Vec::new()));
    let api: Api<Lease> = Api::namespaced(cluster.client.clone(), &cluster.namespace);
    let seen = history.clone();
    tokio::spawn(async move {
        let mut version = "0".to_owned();
        loop {
            let params = WatchParams::default().timeout(290);
            let Ok(stream) = api.watch(&params, &version).await else {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            };
            let mut stream = stream.boxed();
            while let Some(Ok(event)) = stream.next().await {
                let lease = match event {
                    WatchEvent::Added(l) | WatchEvent::Modified(l) => l,
                    WatchEvent::Deleted(_) | WatchEvent::Bookmark(_) => continue,
                    WatchEvent::Error(e) => panic!("the Lease watch failed: {e:?}"),
                };
                version = lease.metadata.resource_version.clone().unwrap_or(version);
                let spec = lease.spec.clone().unwrap_or_default();
                seen.lock().unwrap().push(Version {
                    lease: lease.metadata.name.clone().unwrap_or_default(),
                    holder: spec.holder_identity.filter(|h| !h.is_empty()),
                    acquired: spec.acquire_time.map(|t| t.0),
                    renewed: spec.renew_time.map(|t| t.0),
                });
            }
        }
    });
    history
}

fn plugin_lease(plugin: &str) -> String {
    format!("{GROUP}-plugin-{plugin}")
}

/// Holder changes of one Lease: `(last version of the old holder, first
/// of the new one, whether the Lease was released in between)`.
fn handovers(history: &[Version], lease: &str) -> Vec<(Version, Version, bool)> {
    let mut out = Vec::new();
    let mut held: Option<Version> = None;
    let mut released = false;
    for v in history.iter().filter(|v| v.lease == lease) {
        match &v.holder {
            None => released = held.is_some(),
            Some(holder) => {
                if let Some(previous) = &held
                    && previous.holder.as_ref() != Some(holder)
                {
                    out.push((previous.clone(), v.clone(), released));
                }
                released = false;
                held = Some(v.clone());
            }
        }
    }
    out
}

/// Each replica's tenure of each plugin: `(replica, from, to)`, from the
/// Lease history (`to` is `None` while it still holds it).
fn tenures(history: &[Version], lease: &str) -> Vec<(String, Timestamp, Option<Timestamp>)> {
    let mut out: Vec<(String, Timestamp, Option<Timestamp>)> = Vec::new();
    let mut current: Option<(String, Timestamp)> = None;
    for v in history.iter().filter(|v| v.lease == lease) {
        match (&current, &v.holder) {
            (Some((holder, _)), Some(h)) if holder == h => {}
            (Some((holder, from)), next) => {
                // Released (renewTime of the release) or taken over
                // (acquireTime of the new holder): the old tenure ends.
                let to = match next {
                    None => v.renewed,
                    Some(_) => v.acquired,
                };
                out.push((holder.clone(), *from, to.or(Some(Timestamp::now()))));
                current = next.clone().zip(v.acquired);
            }
            (None, Some(h)) => current = Some((h.clone(), v.acquired.expect("acquireTime"))),
            (None, None) => {}
        }
    }
    if let Some((holder, from)) = current {
        out.push((holder, from, None));
    }
    out
}

/// Writes the configuration of one replica.
fn write_config(
    dir: &Path,
    cluster: &TestCluster,
    kubeconfig: &Path,
    identity: &str,
    address: &str,
) -> PathBuf {
    let mut plugins = serde_json::Map::new();
    for name in PLUGINS {
        plugins.insert(
            name.into(),
            serde_json::json!({"config": {
                "kind": {"version": "v1", "kind": "ConfigMap"},
                "namespace": cluster.namespace,
            }}),
        );
    }
    let config = serde_json::json!({
        "pluginDir": dir.join("plugins"),
        "listen": address,
        "source": {"kind": "kubeconfig", "kubeconfig": kubeconfig},
        "log": {"format": "json", "pluginLinesPerSecond": 1_000_000, "pluginBurst": 1_000_000},
        "pluginFiles": {"artifactCache": {"dir": dir.join("artifacts")}},
        "shutdown": {"gracePeriod": "5s"},
        "sharding": {
            "enabled": true,
            "leaseName": GROUP,
            "leaseNamespace": cluster.namespace,
            "identity": identity,
            "leaseDuration": "2s",
            "renewDeadline": "1s",
            "retryPeriod": "100ms",
        },
        "plugins": plugins,
    });
    let path = dir.join(format!("{identity}.yaml"));
    std::fs::write(&path, serde_yaml::to_string(&config).unwrap()).unwrap();
    path
}

/// Waits until every plugin is owned, per `/plugins` of `address`, and the
/// owners are exactly `replicas`, each with at most `ceil(6 / n)`.
async fn wait_for_balance(address: &str, replicas: &[&str]) -> BTreeMap<String, String> {
    let share = PLUGINS.len().div_ceil(replicas.len());
    eventually(
        &format!("the plugins balanced over {replicas:?}"),
        NEVER,
        async || {
            let owners = owners(address)?;
            let owners: BTreeMap<String, String> = owners
                .into_iter()
                .map(|(p, o)| Some((p, o?)))
                .collect::<Option<_>>()?;
            let mut load: BTreeMap<&str, usize> = BTreeMap::new();
            for owner in owners.values() {
                *load.entry(owner.as_str()).or_default() += 1;
            }
            let balanced = load.keys().copied().collect::<BTreeSet<_>>()
                == replicas.iter().copied().collect()
                && load.values().all(|n| *n <= share);
            balanced.then_some(owners)
        },
    )
    .await
}

/// Every delivery of every replica so far.
fn all_deliveries(replicas: &[&Replica], earlier: &[Delivery]) -> Vec<Delivery> {
    let mut all = earlier.to_vec();
    for r in replicas {
        all.extend(r.deliveries());
    }
    all
}

/// Whether `plugin` has recorded the ConfigMap `name` on `replica`.
fn recorded(deliveries: &[Delivery], replica: &str, plugin: &str, name: &str) -> bool {
    deliveries.iter().any(|d| {
        d.replica == replica && d.plugin == plugin && d.key.rsplit('/').next() == Some(name)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_divide_the_plugins_and_hand_them_over_when_one_dies_returns_or_leaves() {
    let cluster = TestCluster::start().await;
    let dir = ScratchDir::new("sharding").unwrap();
    artifacts::write_renamed_recorders(&dir.join("plugins"), &PLUGINS);
    let kubeconfig = cluster.kubeconfig(&dir);
    let history = watch_leases(&cluster);
    // A port of its own for each replica, kept across its restart.
    let addresses: BTreeMap<&str, String> = ["replica-a", "replica-b", "replica-c"]
        .into_iter()
        .map(|id| {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a free port")
                .port();
            (id, format!("127.0.0.1:{port}"))
        })
        .collect();
    let start = |id: &str| {
        let address = &addresses[id];
        Replica::start(
            id,
            &write_config(&dir, &cluster, &kubeconfig, id, address),
            address,
        )
    };

    // A alone takes every plugin; B and C then take their shares.
    cluster.create_config_map("before", "a", "1").await;
    let a = start("replica-a");
    let a_address = a.address.clone();
    wait_for_balance(&a_address, &["replica-a"]).await;
    let b = start("replica-b");
    let mut c = start("replica-c");
    let owners = wait_for_balance(&a_address, &["replica-a", "replica-b", "replica-c"]).await;
    let c_plugins: Vec<String> = owners
        .iter()
        .filter(|(_, o)| *o == "replica-c")
        .map(|(p, _)| p.clone())
        .collect();
    assert_eq!(
        c_plugins.len(),
        2,
        "six plugins over three replicas: {owners:?}"
    );

    // Every plugin, wherever it runs, gets the objects.
    cluster.create_config_map("spread", "a", "1").await;
    eventually(
        "every plugin to record `spread` on its owner",
        NEVER,
        async || {
            let all = all_deliveries(&[&a, &b, &c], &[]);
            owners
                .iter()
                .all(|(p, o)| recorded(&all, o, p, "spread"))
                .then_some(())
        },
    )
    .await;

    // SIGKILL C: its plugins move to A and B once their Leases expire.
    let killed_at = Timestamp::now();
    c.signal("-KILL");
    c.exited().await;
    let c_records = c.deliveries();
    cluster.create_config_map("after-kill", "a", "1").await;
    let moved = wait_for_balance(&a_address, &["replica-a", "replica-b"]).await;
    eventually(
        "C's plugins to record `after-kill` on their new owners",
        NEVER,
        async || {
            let all = all_deliveries(&[&a, &b], &[]);
            c_plugins
                .iter()
                .all(|p| recorded(&all, &moved[p], p, "after-kill"))
                .then_some(())
        },
    )
    .await;
    let all = all_deliveries(&[&a, &b], &[]);
    for plugin in &c_plugins {
        let first = all
            .iter()
            .filter(|d| &d.plugin == plugin && d.at > killed_at)
            .map(|d| d.at)
            .min()
            .expect("a delivery after the kill");
        let failover = first.duration_since(killed_at);
        eprintln!(
            "{plugin}: first dispatched by {} {failover:?} after the kill",
            moved[plugin]
        );
        let bound = SignedDuration::try_from(LEASE_DURATION + FAILOVER_MARGIN).unwrap();
        assert!(
            failover <= bound,
            "{plugin} was first dispatched by its new owner {failover:?} after the kill, beyond {bound:?}"
        );
        // The new owner starts from a fresh initial list: everything so far.
        for name in ["before", "spread"] {
            assert!(
                all.iter().any(|d| &d.plugin == plugin
                    && d.replica == moved[plugin]
                    && d.initial
                    && d.key.ends_with(&format!("/{name}"))),
                "{plugin}'s new owner did not get {name} in its initial list"
            );
        }
    }

    // C comes back (same identity) and takes a share again.
    let c = start("replica-c");
    let back = wait_for_balance(&a_address, &["replica-a", "replica-b", "replica-c"]).await;
    assert!(back.values().any(|o| o == "replica-c"));
    // Balanced, it stays so: every plugin's Lease renewed five more times
    // by the same holder.
    let renewals = |lease: &str| {
        history
            .lock()
            .unwrap()
            .iter()
            .filter(|v| v.lease == lease)
            .count()
    };
    let before: BTreeMap<&str, usize> = PLUGINS
        .iter()
        .map(|p| (*p, renewals(&plugin_lease(p))))
        .collect();
    eventually(
        "five more renewals of every plugin's Lease",
        NEVER,
        async || {
            PLUGINS
                .iter()
                .all(|p| renewals(&plugin_lease(p)) >= before[p] + 5)
                .then_some(())
        },
    )
    .await;
    assert_eq!(
        owners_now(&a_address),
        back,
        "ownership moved although nothing changed"
    );

    // SIGTERM B: it releases its Leases (holder cleared) rather than
    // letting them expire, and A and C take them over.
    let mut b = b;
    let b_plugins: Vec<String> = back
        .iter()
        .filter(|(_, o)| *o == "replica-b")
        .map(|(p, _)| p.clone())
        .collect();
    assert!(!b_plugins.is_empty());
    b.signal("-TERM");
    let status = b.exited().await;
    assert!(status.success(), "SIGTERM: a clean exit, not {status:?}");
    let b_records = b.deliveries();
    // What followed B's last version of each of its Leases, once seen.
    let history_now = eventually(
        "a version after B's last one on each of its Leases",
        NEVER,
        async || {
            let history = history.lock().unwrap().clone();
            b_plugins
                .iter()
                .all(|p| {
                    let lease = plugin_lease(p);
                    let versions: Vec<&Version> =
                        history.iter().filter(|v| v.lease == lease).collect();
                    versions
                        .iter()
                        .rposition(|v| v.holder.as_deref() == Some("replica-b"))
                        .is_some_and(|at| at + 1 < versions.len())
                })
                .then_some(history)
        },
    )
    .await;
    for plugin in &b_plugins {
        let lease = plugin_lease(plugin);
        let versions: Vec<&Version> = history_now.iter().filter(|v| v.lease == lease).collect();
        let last_of_b = versions
            .iter()
            .rposition(|v| v.holder.as_deref() == Some("replica-b"))
            .expect("B held it");
        assert!(
            versions
                .get(last_of_b + 1)
                .is_some_and(|next| next.holder.is_none()),
            "B exited without releasing {lease}: after its last renewal came {:?}",
            versions.get(last_of_b + 1)
        );
    }
    let member_released = history_now.iter().any(|v| {
        v.lease.starts_with(&format!("{GROUP}-member-"))
            && v.holder.is_none()
            && history_now
                .iter()
                .any(|w| w.lease == v.lease && w.holder.as_deref() == Some("replica-b"))
    });
    assert!(member_released, "B's member Lease was not released");
    let after_term = wait_for_balance(&a_address, &["replica-a", "replica-c"]).await;
    // Handed over, not expired: the next holder took each of B's plugins
    // well within a lease duration of its release.
    let history_now = history.lock().unwrap().clone();
    for plugin in &b_plugins {
        let lease = plugin_lease(plugin);
        let versions: Vec<&Version> = history_now.iter().filter(|v| v.lease == lease).collect();
        let released = versions
            .iter()
            .rposition(|v| v.holder.is_none())
            .expect("the release");
        let taken = versions[released..]
            .iter()
            .find(|v| v.holder.is_some())
            .expect("a new holder");
        let after = taken
            .acquired
            .expect("acquireTime")
            .duration_since(versions[released].renewed.expect("renewTime"));
        assert!(
            after < SignedDuration::try_from(LEASE_DURATION).unwrap(),
            "{lease} was taken {after:?} after B released it: as if it had expired"
        );
    }
    cluster.create_config_map("after-term", "a", "1").await;
    eventually("every plugin to record `after-term`", NEVER, async || {
        let all = all_deliveries(&[&a, &c], &[]);
        after_term
            .iter()
            .all(|(p, o)| recorded(&all, o, p, "after-term"))
            .then_some(())
    })
    .await;

    // The whole history: released handovers precede expiry; expired ones
    // waited the lease duration; no delivery outside its replica's tenure.
    let history_all = history.lock().unwrap().clone();
    for plugin in PLUGINS {
        let lease = plugin_lease(plugin);
        for (from, to, released) in handovers(&history_all, &lease) {
            if released {
                continue;
            }
            let waited = to
                .acquired
                .expect("acquireTime")
                .duration_since(from.renewed.expect("renewTime"));
            assert!(
                waited
                    >= SignedDuration::try_from(LEASE_DURATION - Duration::from_millis(1)).unwrap(),
                "{lease}: {:?} took over from {:?} {waited:?} after its last renewal, before the lease expired",
                to.holder,
                from.holder
            );
        }
    }
    let every = all_deliveries(&[&a, &c], &[c_records, b_records].concat());
    eprintln!(
        "{} deliveries checked against {} Lease versions",
        every.len(),
        history_all.len()
    );
    for plugin in PLUGINS {
        let spans = tenures(&history_all, &plugin_lease(plugin));
        for d in every.iter().filter(|d| d.plugin == plugin) {
            let inside = spans.iter().any(|(holder, from, to)| {
                holder == &d.replica
                    && d.at >= *from - SignedDuration::from_millis(1)
                    && to.is_none_or(|to| d.at <= to + SignedDuration::from_millis(1))
            });
            assert!(
                inside,
                "{plugin} was dispatched by {} at {} outside its tenures {spans:?}",
                d.replica, d.at
            );
        }
        // Every object reached the plugin.
        for name in ["before", "spread", "after-kill", "after-term"] {
            assert!(
                every
                    .iter()
                    .any(|d| d.plugin == plugin && d.key.ends_with(&format!("/{name}"))),
                "{plugin} never recorded {name}"
            );
        }
    }

    // The metrics agree with /plugins: A's load, and the changes it saw.
    let metrics = http_get(&a_address, "/metrics").expect("/metrics answers");
    let sample = |name: &str| {
        metrics
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .unwrap_or_else(|| panic!("no sample {name} in /metrics"))
    };
    let owned_by_a = owners_now(&a_address)
        .values()
        .filter(|o| *o == "replica-a")
        .count();
    assert_eq!(sample("herald_shard_owned_plugins") as usize, owned_by_a);
    assert_eq!(sample("herald_shard_members"), 2.0);
    assert!(sample("herald_shard_ownership_changes_total{change=\"acquired\"}") >= 6.0);
    assert!(sample("herald_shard_ownership_changes_total{change=\"released\"}") >= 1.0);

    a.signal("-TERM");
    c.signal("-TERM");
    drop((a, c));
    cluster.cleanup().await;
}

/// The owners `/plugins` shows now (every plugin owned).
fn owners_now(address: &str) -> BTreeMap<String, String> {
    owners(address)
        .expect("/plugins answers")
        .into_iter()
        .map(|(p, o)| (p, o.expect("every plugin owned")))
        .collect()
}

/// Mirrors a coordinator's owned set into its `applied` channel, as a
/// daemon that stops plugins at once would, until told to hold.
fn follow(
    mut owned: tokio::sync::watch::Receiver<BTreeSet<String>>,
    applied: tokio::sync::watch::Sender<BTreeSet<String>>,
    hold: Arc<std::sync::atomic::AtomicBool>,
) {
    tokio::spawn(async move {
        loop {
            if !hold.load(std::sync::atomic::Ordering::SeqCst) {
                applied.send_replace(owned.borrow_and_update().clone());
            }
            tokio::select! {
                changed = owned.changed() => if changed.is_err() { return },
                () = tokio::time::sleep(Duration::from_millis(20)) => {}
            }
        }
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_given_up_is_released_only_once_its_replica_has_stopped_it() {
    use herald::leader::LeaseSettings;
    use herald::shard::{KnownPlugins, Sharding};
    let cluster = TestCluster::start().await;
    let settings = |identity: &str| LeaseSettings {
        lease_duration: LEASE_DURATION,
        renew_deadline: Duration::from_secs(1),
        retry_period: Duration::from_millis(100),
        ..LeaseSettings::new(&cluster.namespace, "inproc", identity)
    };
    let known: KnownPlugins = Arc::new(|| BTreeSet::from(["p1".to_owned(), "p2".to_owned()]));
    // A coordinator and what its (stand-in) daemon has applied.
    let spawn = |identity: &str, hold: Arc<std::sync::atomic::AtomicBool>| {
        let (applied, applied_rx) = tokio::sync::watch::channel(BTreeSet::new());
        let sharding = Sharding::spawn(
            cluster.client.clone(),
            settings(identity),
            known.clone(),
            applied_rx.clone(),
        )
        .expect("valid settings");
        follow(sharding.owned(), applied, hold);
        (sharding, applied_rx)
    };
    let a_hold = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (a, a_applied) = spawn("a", a_hold.clone());
    let a_owned = a.owned();
    // Both owned and both applied by A's daemon before it holds.
    eventually("a's daemon to run both plugins", NEVER, async || {
        a_owned.borrow().len() == 2 && a_applied.borrow().len() == 2
    })
    .await;

    // A's daemon now stops nothing: when B joins, A stops publishing one
    // plugin as owned but keeps renewing its Lease.
    a_hold.store(true, std::sync::atomic::Ordering::SeqCst);
    let (b, _) = spawn("b", Arc::new(std::sync::atomic::AtomicBool::new(false)));
    let given_up = eventually("a to give one plugin up", NEVER, async || {
        let owned = a_owned.borrow();
        (owned.len() == 1).then(|| {
            ["p1", "p2"]
                .into_iter()
                .find(|p| !owned.contains(*p))
                .unwrap()
                .to_owned()
        })
    })
    .await;
    let leases: Api<Lease> = Api::namespaced(cluster.client.clone(), &cluster.namespace);
    let lease = format!("inproc-plugin-{given_up}");
    let mut renewals = 0;
    let mut last = None;
    eventually(
        &format!("a to renew {lease} five times"),
        NEVER,
        async || {
            let spec = leases.get(&lease).await.unwrap().spec.unwrap();
            assert_eq!(
                spec.holder_identity.as_deref(),
                Some("a"),
                "{lease} left a before a's daemon stopped the plugin"
            );
            if spec.renew_time != last {
                renewals += 1;
                last = spec.renew_time;
            }
            assert!(
                !b.owned().borrow().contains(&given_up),
                "b owns {given_up} before a's daemon stopped it"
            );
            if renewals >= 5 {
                Ok(())
            } else {
                Err(format!("{renewals} renewals"))
            }
        },
    )
    .await;

    // Once A's daemon has stopped it, A releases it and B takes it.
    a_hold.store(false, std::sync::atomic::Ordering::SeqCst);
    let b_owned = b.owned();
    eventually("b to own the plugin a gave up", NEVER, async || {
        b_owned.borrow().contains(&given_up)
    })
    .await;
    assert_eq!(a.view().changes(herald::shard::Change::Released), 1);
    a.release().await;
    b.release().await;
    cluster.cleanup().await;
}
