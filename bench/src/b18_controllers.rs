//! B18: one controller's end-to-end throughput against the same controller
//! written with controller-runtime (issue 41), each a process of its own
//! against the same embedded API server. Herald's is `herald run` with the
//! `deployment-summaries` fixture (the reconcile API: for every Deployment,
//! a cache read, its summary ConfigMap built and server-side applied with
//! the plugin's field manager); the baseline is `bench/controllergo`, the
//! same controller with controller-runtime v0.25.2 (`For(Deployment)`,
//! `Owns(ConfigMap)`, one reconcile at a time, as Herald's plugin runs).
//!
//! The server holds [`Settings::b18_deployments`] Deployments of B16's
//! realistic shape and no summaries. Each contender is timed from its
//! process's spawn until the last of the summaries exists with its field
//! manager, as a watch of the namespace's ConfigMaps opened before the spawn
//! sees them: start-up, the initial lists (every Deployment; no ConfigMap
//! yet) and every reconcile are in it, for both alike. Its CPU time is the
//! process's at that moment, read from its CPU-time clock
//! (`clock_getcpuclockid`: user and system time of every thread, to the
//! nanosecond). The server runs in the benchmark's process, so none of its
//! work is counted there (its CPU is reported as context).
//! Then the process is stopped and the summaries deleted before the next
//! one starts. The two alternate which goes first in each repetition, after
//! one untimed round (Herald's compile of the plugin, to its artifact cache,
//! and the page cache of both programs).
//!
//! Both use their defaults otherwise: protobuf for built-in kinds (Herald's
//! `cache.protobuf`, controller-runtime's choice for types its scheme knows),
//! Herald's log at `info` (an audit line per write) to a file, no logger for
//! controller-runtime. One setting is lifted on Herald's side: the plugin's
//! API rate limit (5 requests/s by default, client-go's) is unthrottled, as
//! controller-runtime's client is by default.

use crate::cluster::Cluster;
use crate::contenders::{free_address, get, go_build, herald_run, write_kubeconfig};
use crate::measure::{PATIENCE, Samples, process_cpu_ns};
use crate::settings::Settings;
use crate::table::{Goal, Row, Unit};
use futures::StreamExt;
use herald_test_artifacts as artifacts;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams, PostParams, WatchEvent, WatchParams};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The namespace of the Deployments and their summaries.
const NAMESPACE: &str = "bench-0";
/// Herald's field manager for the plugin's writes (`herald.<plugin>`).
const HERALD_MANAGER: &str = "herald.deployment-summaries";
/// The Go controller's field manager.
const GO_MANAGER: &str = "controllergo";
/// Requests in flight while creating the Deployments.
const CREATE_CONCURRENCY: usize = 16;

/// Runs B18.
pub fn run(settings: &Settings, runtime: &tokio::runtime::Runtime) -> Vec<Row> {
    let herald = settings.compiler_program.clone().expect(
        "B18 runs `herald run` beside bench/controllergo and needs Settings::compiler_program \
         (env!(\"CARGO_BIN_EXE_herald-child\") in a bench or test of herald-bench)",
    );
    let objects = settings.b18_deployments;
    runtime.block_on(async {
        let cluster = Cluster::start().await;
        let client = cluster.client();
        let uids = create_deployments(&client, objects).await;
        let url = cluster.url();
        let rig = tokio::task::spawn_blocking(move || Rig::prepare(&url, &herald))
            .await
            .expect("preparing B18");
        let load_before = load_average();
        crate::progress("B18 warm-up: one untimed run of each controller");
        for contender in [Contender::Herald, Contender::Go] {
            rig.run(&client, contender, &uids).await;
        }
        let (mut herald_runs, mut go_runs) = (Runs::default(), Runs::default());
        for rep in 0..settings.repetitions {
            let order = if rep % 2 == 0 {
                [Contender::Herald, Contender::Go]
            } else {
                [Contender::Go, Contender::Herald]
            };
            for contender in order {
                crate::progress(format!(
                    "B18 repetition {}/{}: {}",
                    rep + 1,
                    settings.repetitions,
                    contender.name()
                ));
                let run = rig.run(&client, contender, &uids).await;
                crate::progress(format!(
                    "B18   {}: {objects} summaries in {:.0} ms, {:.0} ms of its CPU (the first after \
                     {:.0} ms, {:.0} ms of CPU), {:.0} ms of the benchmark process's (server), {} \
                     reconcile calls, peak RSS {:.1} MiB",
                    contender.name(),
                    run.wall_s * 1e3,
                    run.cpu_s * 1e3,
                    run.first_wall_s * 1e3,
                    run.first_cpu_s * 1e3,
                    run.server_cpu_s * 1e3,
                    run.reconciles,
                    run.peak_rss / (1024.0 * 1024.0),
                ));
                match contender {
                    Contender::Herald => herald_runs.push(objects, &run),
                    Contender::Go => go_runs.push(objects, &run),
                }
            }
        }
        let load_after = load_average();
        drop(rig);
        cluster.shutdown().await;
        let details = format!(
            "{objects} Deployments (B16's shape) in one namespace, each contender from its spawn until \
             every summary ConfigMap exists with its field manager, {} repetitions alternating the \
             order; medians: wall {:.0} ms Herald, {:.0} ms controller-runtime; CPU of the \
             controller's process {:.0} ms Herald, {:.0} ms controller-runtime; the first summary \
             (start-up and initial lists) after {:.0} ms and {:.0} ms of CPU Herald, {:.0} ms and \
             {:.0} ms of CPU controller-runtime; CPU of the \
             benchmark process meanwhile (the embedded API server and the watch counting the \
             summaries) {:.0} ms with Herald, {:.0} ms with controller-runtime; reconcile calls by \
             the time it stopped {:.0} Herald (notifications delivered), {:.0} controller-runtime; \
             peak RSS {:.1} MiB Herald, {:.1} MiB controller-runtime; load average {} before, {} after",
            settings.repetitions,
            herald_runs.wall_ms.median(),
            go_runs.wall_ms.median(),
            herald_runs.cpu_ms.median(),
            go_runs.cpu_ms.median(),
            herald_runs.first_wall_ms.median(),
            herald_runs.first_cpu_ms.median(),
            go_runs.first_wall_ms.median(),
            go_runs.first_cpu_ms.median(),
            herald_runs.server_cpu_ms.median(),
            go_runs.server_cpu_ms.median(),
            herald_runs.reconciles.median(),
            go_runs.reconciles.median(),
            herald_runs.peak_rss_mib.median(),
            go_runs.peak_rss_mib.median(),
            load_before,
            load_after,
        );
        vec![
            Row::ratio_of(
                "B18.cpu",
                format!(
                    "reconciles per CPU-second of the controller's process, {objects} Deployments from \
                     spawn to every summary applied, `herald run` with deployment-summaries; baseline: \
                     the same controller with controller-runtime (bench/controllergo)"
                ),
                Unit::PerSecond,
                go_runs.per_cpu_second,
                herald_runs.per_cpu_second,
                Goal::RatioAtLeast(0.8),
            )
            .with_details(details),
            Row::ratio_of(
                "B18.wall",
                format!(
                    "reconciles per second of wall time, the same runs ({objects} Deployments, \
                     start-up and initial list included); baseline: controller-runtime"
                ),
                Unit::PerSecond,
                go_runs.per_second,
                herald_runs.per_second,
                Goal::None,
            ),
            Row::ratio_of(
                "B18.cpu-after-first",
                format!(
                    "reconciles per CPU-second from the first summary to the last (the {} after the \
                     first, start-up and initial lists left out), the same runs; baseline: \
                     controller-runtime",
                    objects - 1
                ),
                Unit::PerSecond,
                go_runs.after_first_per_cpu_second,
                herald_runs.after_first_per_cpu_second,
                Goal::None,
            ),
        ]
    })
}

/// The two controllers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Contender {
    Herald,
    Go,
}

impl Contender {
    fn name(self) -> &'static str {
        match self {
            Contender::Herald => "Herald",
            Contender::Go => "controller-runtime",
        }
    }

    fn manager(self) -> &'static str {
        match self {
            Contender::Herald => HERALD_MANAGER,
            Contender::Go => GO_MANAGER,
        }
    }
}

/// One contender's run.
#[derive(Debug, Clone, Copy)]
struct Run {
    /// Spawn to the last summary, seconds.
    wall_s: f64,
    /// The controller process's CPU time by then, seconds.
    cpu_s: f64,
    /// The benchmark process's CPU time over the same span (the embedded
    /// server, the watch), seconds.
    server_cpu_s: f64,
    /// Reconcile calls the controller made until it was stopped.
    reconciles: f64,
    /// The controller's peak RSS by then, bytes.
    peak_rss: f64,
    /// Spawn to the first summary (start-up and the initial lists), seconds.
    first_wall_s: f64,
    /// The controller's CPU time by the first summary, seconds.
    first_cpu_s: f64,
}

/// One contender's figures over the repetitions.
#[derive(Debug, Default)]
struct Runs {
    per_second: Samples,
    per_cpu_second: Samples,
    after_first_per_cpu_second: Samples,
    wall_ms: Samples,
    cpu_ms: Samples,
    server_cpu_ms: Samples,
    reconciles: Samples,
    peak_rss_mib: Samples,
    first_wall_ms: Samples,
    first_cpu_ms: Samples,
}

impl Runs {
    fn push(&mut self, objects: usize, run: &Run) {
        self.per_second.push(objects as f64 / run.wall_s);
        self.per_cpu_second.push(objects as f64 / run.cpu_s);
        self.after_first_per_cpu_second
            .push((objects - 1) as f64 / (run.cpu_s - run.first_cpu_s));
        self.wall_ms.push(run.wall_s * 1e3);
        self.cpu_ms.push(run.cpu_s * 1e3);
        self.server_cpu_ms.push(run.server_cpu_s * 1e3);
        self.reconciles.push(run.reconciles);
        self.peak_rss_mib.push(run.peak_rss / (1024.0 * 1024.0));
        self.first_wall_ms.push(run.first_wall_s * 1e3);
        self.first_cpu_ms.push(run.first_cpu_s * 1e3);
    }
}

/// Where the controllers run from: a scratch directory with the
/// kubeconfig, Herald's configuration and plugin, and the Go program built.
struct Rig {
    dir: herald::scratch::ScratchDir,
    herald: PathBuf,
    config: PathBuf,
    kubeconfig: PathBuf,
    go_program: PathBuf,
    /// Herald's `/metrics` address.
    listen: String,
    /// Numbers the log files of the runs.
    runs: std::sync::atomic::AtomicUsize,
}

impl Rig {
    /// Builds `bench/controllergo` and writes what `herald run` needs to
    /// reconcile with `deployment-summaries` against the server at `url`:
    /// the plugin, its grant to apply ConfigMaps, its API rate unthrottled.
    fn prepare(url: &str, herald: &Path) -> Rig {
        let dir =
            herald::scratch::ScratchDir::new("b18").expect("creating B18's scratch directory");
        let plugins = dir.join("plugins");
        std::fs::create_dir_all(&plugins).expect("creating B18's scratch directory");
        std::fs::write(
            plugins.join("deployment-summaries.wasm"),
            artifacts::bytes(artifacts::DEPLOYMENT_SUMMARIES),
        )
        .expect("writing the plugin");
        let kubeconfig = dir.join("kubeconfig");
        write_kubeconfig(&kubeconfig, url);
        let go_program = dir.join("controllergo");
        go_build(
            "controllergo",
            &go_program,
            "B18 compares with controller-runtime",
        );
        let listen = free_address();
        let config = dir.join("herald.yaml");
        std::fs::write(
            &config,
            format!(
                "pluginDir: {plugins}\nlisten: {listen}\nplugins:\n  deployment-summaries:\n    \
                 allowUnpinned: true\n    rateLimit: {{qps: 1000000000, burst: 1000000000}}\n    \
                 grants:\n      writes:\n        - {{verbs: [apply], group: \"\", kind: ConfigMap, namespaces: [\"*\"]}}\n",
                plugins = plugins.display(),
            ),
        )
        .expect("writing herald run's configuration");
        Rig {
            dir,
            herald: herald.to_owned(),
            config,
            kubeconfig,
            go_program,
            listen,
            runs: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// Starts `contender`, times it until every Deployment in `uids` has its
    /// summary applied by it, checks the summaries, stops it and deletes
    /// them.
    async fn run(
        &self,
        client: &kube::Client,
        contender: Contender,
        uids: &BTreeMap<String, String>,
    ) -> Run {
        let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), NAMESPACE);
        let listed = config_maps
            .list(&ListParams::default())
            .await
            .expect("listing ConfigMaps");
        assert!(
            listed.items.is_empty(),
            "B18 starts each controller with no summaries"
        );
        let version = listed.metadata.resource_version.unwrap_or_default();
        let mut events = config_maps
            .watch(&WatchParams::default().timeout(290), &version)
            .await
            .expect("watching ConfigMaps")
            .boxed();
        let n = self.runs.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let log = std::fs::File::create(self.dir.join(format!("run-{n}.log")))
            .expect("creating a log file");
        let cpu_before = process_cpu_ns().expect("the process CPU clock");
        let started = Instant::now();
        let spawned = match contender {
            Contender::Herald => herald_run(
                &self.herald,
                &self.config,
                &self.kubeconfig,
                &self.dir.join("cache"),
            )
            .env_remove("RUST_LOG")
            .stderr(log)
            .spawn()
            .expect("starting herald run"),
            Contender::Go => Command::new(&self.go_program)
                .arg("--kubeconfig")
                .arg(&self.kubeconfig)
                .args(["--field-manager", GO_MANAGER])
                .stdout(Stdio::piped())
                .stderr(log)
                .spawn()
                .expect("starting bench/controllergo"),
        };
        let mut child = Process(Some(spawned));
        let mut written = HashSet::with_capacity(uids.len());
        let mut first = None;
        while written.len() < uids.len() {
            match tokio::time::timeout(Duration::from_millis(200), events.next()).await {
                Ok(Some(Ok(WatchEvent::Added(cm) | WatchEvent::Modified(cm)))) => {
                    if managed_by(&cm, contender.manager()) {
                        written.insert(cm.metadata.name.unwrap_or_default());
                        if first.is_none() {
                            first = Some((started.elapsed().as_secs_f64(), usage(child.get()).0));
                        }
                    }
                }
                Ok(Some(Ok(_))) => {}
                Ok(Some(Err(e))) => panic!("B18's watch of ConfigMaps failed: {e}"),
                Ok(None) => panic!("B18's watch of ConfigMaps ended early"),
                Err(_) => {
                    if let Ok(Some(status)) = child.get_mut().try_wait() {
                        panic!(
                            "{} exited ({status}) with {} of {} summaries written: {}",
                            contender.name(),
                            written.len(),
                            uids.len(),
                            self.log_tail(n)
                        );
                    }
                    assert!(
                        started.elapsed() < PATIENCE,
                        "{} wrote {} of {} summaries in {PATIENCE:?}: {}",
                        contender.name(),
                        written.len(),
                        uids.len(),
                        self.log_tail(n)
                    );
                }
            }
        }
        let wall_s = started.elapsed().as_secs_f64();
        let (cpu_s, peak_rss) = usage(child.get());
        let (first_wall_s, first_cpu_s) = first.expect("a first summary");
        let cpu_after = process_cpu_ns().expect("the process CPU clock");
        drop(events);
        let reconciles = match contender {
            Contender::Herald => {
                let listen = self.listen.clone();
                let delivered = tokio::task::spawn_blocking(move || delivered(&listen))
                    .await
                    .expect("reading Herald's metrics");
                let _ = tokio::task::spawn_blocking(move || drop(child)).await;
                delivered
            }
            Contender::Go => tokio::task::spawn_blocking(move || stop_go(child.take()))
                .await
                .expect("stopping bench/controllergo"),
        };
        check_summaries(&config_maps, contender, uids).await;
        config_maps
            .delete_collection(&DeleteParams::default(), &ListParams::default())
            .await
            .expect("deleting the summaries");
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = config_maps
                .list(&ListParams::default())
                .await
                .expect("listing ConfigMaps");
            if left.items.is_empty() {
                break;
            }
            assert!(Instant::now() < deadline, "the summaries were not deleted");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Run {
            wall_s,
            cpu_s,
            server_cpu_s: cpu_after.saturating_sub(cpu_before) as f64 / 1e9,
            reconciles,
            peak_rss,
            first_wall_s,
            first_cpu_s,
        }
    }

    /// The last lines of run `n`'s log, for a failure's message.
    fn log_tail(&self, n: usize) -> String {
        let text =
            std::fs::read_to_string(self.dir.join(format!("run-{n}.log"))).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }
}

/// Whether `manager` is among the field managers of `cm`.
fn managed_by(cm: &ConfigMap, manager: &str) -> bool {
    cm.metadata
        .managed_fields
        .iter()
        .flatten()
        .any(|entry| entry.manager.as_deref() == Some(manager))
}

/// Checks that every summary exists, written by `contender`, with what the
/// fixture's `summary` puts in it: the images and replicas of the bench's
/// Deployment, a controller owner reference to it.
async fn check_summaries(
    config_maps: &Api<ConfigMap>,
    contender: Contender,
    uids: &BTreeMap<String, String>,
) {
    let listed = config_maps
        .list(&ListParams::default())
        .await
        .expect("listing the summaries");
    assert_eq!(
        listed.items.len(),
        uids.len(),
        "{} left another count of ConfigMaps than Deployments",
        contender.name()
    );
    let data = BTreeMap::from([
        (
            "images".to_owned(),
            "docker.io/library/nginx:1.27,docker.io/envoyproxy/envoy:v1.31.0".to_owned(),
        ),
        ("replicas".to_owned(), "3".to_owned()),
    ]);
    for cm in &listed.items {
        let name = cm.metadata.name.as_deref().unwrap_or_default();
        let owner = name.strip_suffix("-summary").unwrap_or_else(|| {
            panic!("{} wrote a ConfigMap {name}", contender.name());
        });
        assert!(
            managed_by(cm, contender.manager()),
            "{name}: not written by {}",
            contender.manager()
        );
        assert_eq!(cm.data.as_ref(), Some(&data), "{name}'s data");
        let references = cm.metadata.owner_references.as_deref().unwrap_or_default();
        assert!(
            matches!(references, [r] if r.api_version == "apps/v1" && r.kind == "Deployment"
                && r.name == owner && Some(&r.uid) == uids.get(owner) && r.controller == Some(true)),
            "{name}'s owner references: {references:?}"
        );
    }
}

/// Creates Deployments `web-0` … in [`NAMESPACE`]; returns their uids by name.
async fn create_deployments(client: &kube::Client, count: usize) -> BTreeMap<String, String> {
    crate::progress(format!("B18: creating {count} Deployments"));
    let api: Api<Deployment> = Api::namespaced(client.clone(), NAMESPACE);
    futures::stream::iter(0..count)
        .map(|i| {
            let api = api.clone();
            async move {
                let deployment: Deployment =
                    serde_json::from_value(crate::data::deployment(NAMESPACE, i))
                        .expect("a Deployment");
                let created = api
                    .create(&PostParams::default(), &deployment)
                    .await
                    .expect("creating a Deployment");
                (
                    created.metadata.name.unwrap_or_default(),
                    created.metadata.uid.expect("a uid"),
                )
            }
        })
        .buffer_unordered(CREATE_CONCURRENCY)
        .collect()
        .await
}

/// A controller process, killed and reaped when dropped (also when a run
/// panics, so that none outlives the benchmark).
struct Process(Option<Child>);

impl Process {
    fn get(&self) -> &Child {
        self.0.as_ref().expect("a running process")
    }

    fn get_mut(&mut self) -> &mut Child {
        self.0.as_mut().expect("a running process")
    }

    /// The process, no longer killed when this is dropped.
    fn take(mut self) -> Child {
        self.0.take().expect("a running process")
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The child's CPU time so far (user and system, every thread, those
/// that have exited too; seconds, to the nanosecond: the process's CPU-time
/// clock, where `/proc/<pid>/stat` counts 10 ms ticks) and peak RSS
/// (`VmHWM`, bytes).
fn usage(child: &Child) -> (f64, f64) {
    let mut clock: libc::clockid_t = 0;
    // SAFETY: `clock` is valid and writable for the call; the pid is our
    // child, not yet reaped.
    #[allow(unsafe_code)]
    let got = unsafe { libc::clock_getcpuclockid(child.id() as libc::pid_t, &mut clock) };
    assert_eq!(got, 0, "the child's CPU-time clock");
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid, writable timespec that outlives the call,
    // and `clock` is the CPU-time clock the kernel just gave.
    #[allow(unsafe_code)]
    let read = unsafe { libc::clock_gettime(clock, &mut now) };
    assert_eq!(read, 0, "reading the child's CPU-time clock");
    let cpu = now.tv_sec as f64 + now.tv_nsec as f64 / 1e9;
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id()))
        .expect("reading /proc/PID/status");
    let peak_kib: f64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/PID/status");
    (cpu, peak_kib * 1024.0)
}

/// Herald's notifications delivered to its plugins (each a reconcile call
/// of the one plugin), from `/metrics`.
fn delivered(address: &str) -> f64 {
    let metrics = get(address, "/metrics").expect("herald run serves /metrics");
    metrics
        .lines()
        .filter(|line| line.starts_with("herald_notifications_delivered_total{"))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Stops the Go controller with SIGTERM and reads the reconciles it counted.
fn stop_go(mut child: Child) -> f64 {
    use std::io::Read;
    // SAFETY: kill has no memory preconditions; the pid is our unreaped child.
    #[allow(unsafe_code)]
    let sent = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    assert_eq!(sent, 0, "signalling bench/controllergo");
    let mut out = String::new();
    child
        .stdout
        .take()
        .expect("piped stdout")
        .read_to_string(&mut out)
        .expect("reading bench/controllergo's output");
    let status = child.wait().expect("waiting for bench/controllergo");
    assert!(status.success(), "bench/controllergo stopped with {status}");
    let line: serde_json::Value = serde_json::from_str(out.trim())
        .unwrap_or_else(|e| panic!("bench/controllergo's last line ({e}): {out}"));
    line["reconciles"].as_f64().expect("a reconcile count")
}

/// The 1-minute load average, as `/proc/loadavg` gives it.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|text| text.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "unknown".into())
}
