//! Herald and client-go as separate processes against the benchmark's API
//! server (issue 32). The baseline is the client-go program of
//! `bench/clientgo` (a typed Pod `SharedInformer` with a transform that
//! strips `managedFields`, as most client-go programs do).
//!
//! - Start-up (B7): each timed from spawn until it has synced, with its
//!   peak RSS at that moment. Herald is `herald run` (the benchmark's
//!   `herald-child`, the same CLI) with one no-op plugin, timed until
//!   `/readyz` answers 200; client-go prints its own sync time and peak RSS.
//! - Latency (B4): client-go's handler reads the clock first thing and the
//!   write time from the Pod's stamp, as the `latency-probe` plugin does,
//!   and prints its percentiles once the flush Pod is updated; against it,
//!   `herald run` with one `latency-probe`, whose lines are read from its
//!   JSON log.

use crate::cluster::FLUSH_POD;
use crate::data::STAMP_ANNOTATION;
use crate::latency::{p50_p99, reported_latencies};
use herald_test_artifacts as artifacts;
use serde::Deserialize;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a process may take to sync before the benchmark gives up.
const PATIENCE: Duration = Duration::from_secs(300);

/// One fresh process, synced.
#[derive(Debug, Clone, Copy)]
pub struct Synced {
    /// Milliseconds from spawn (client-go: from its first package's
    /// initialisation, about 1 ms after exec) to synced.
    pub millis: f64,
    /// Peak RSS when synced, in bytes (`VmHWM`).
    pub peak_rss: f64,
    /// CPU time used until then, in milliseconds.
    pub cpu_millis: f64,
}

/// A scratch directory with a kubeconfig for the server at `url`, the
/// client-go program built, and a plugin directory holding the no-op.
pub struct Contenders {
    dir: herald::scratch::ScratchDir,
    kubeconfig: PathBuf,
    clientgo: PathBuf,
    herald: PathBuf,
}

/// What `bench/clientgo --mode=latency` prints once it stops.
#[derive(Debug, Deserialize)]
struct LatencyLine {
    count: u64,
    p50_ms: f64,
    p99_ms: f64,
}

/// client-go's handler recording latencies, synced and waiting for writes.
pub struct ClientGoLatency {
    child: Child,
    lines: std::io::Lines<BufReader<std::process::ChildStdout>>,
}

impl ClientGoLatency {
    /// Its p50 and p99 in milliseconds, once the flush Pod was updated.
    pub fn finish(mut self) -> (f64, f64) {
        let line = self
            .lines
            .next()
            .and_then(Result::ok)
            .expect("the client-go program prints its latencies after the flush");
        let _ = self.child.wait();
        let latency: LatencyLine = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("the client-go latency line ({e}): {line}"));
        assert!(latency.count > 0, "client-go saw no stamped update: {line}");
        (latency.p50_ms, latency.p99_ms)
    }
}

/// `herald run` with one `latency-probe` plugin, ready, its log read.
pub struct HeraldLatency {
    child: Child,
    lines: std::sync::mpsc::Receiver<String>,
}

impl HeraldLatency {
    /// The p50 and p99 (ms) of the latencies the probe reported, once the
    /// flush Pod was updated and the probe said `flushed`.
    pub fn finish(mut self) -> (f64, f64) {
        let deadline = Instant::now() + PATIENCE;
        let mut latencies = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .expect("the probe in herald run reports after the flush");
            let Ok(entry) = serde_json::from_str::<serde_json::Value>(&line) else {
                continue;
            };
            let Some(message) = entry["fields"]["message"].as_str() else {
                continue;
            };
            if message.starts_with("flushed ") {
                let _ = self.child.kill();
                return p50_p99(&latencies);
            }
            latencies.extend(reported_latencies(message));
        }
    }
}

impl Drop for HeraldLatency {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ClientGoLatency {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What `bench/clientgo --mode=sync` prints.
#[derive(Debug, Deserialize)]
struct ClientGoLine {
    synced_ms: f64,
    objects: u64,
    peak_rss_kib: f64,
    cpu_ms: f64,
}

impl Contenders {
    /// Prepares both against the server at `url`: builds `bench/clientgo`
    /// with the Go toolchain (failing with what to install if it is
    /// missing) and writes the kubeconfig and the plugin directory.
    pub fn prepare(url: &str, herald: &Path) -> Contenders {
        let dir = herald::scratch::ScratchDir::new("b7").expect("creating B7's scratch directory");
        std::fs::create_dir_all(dir.join("plugins")).expect("creating B7's scratch directory");
        std::fs::write(
            dir.join("plugins/noop.wasm"),
            artifacts::bytes(artifacts::NOOP),
        )
        .expect("writing the no-op plugin");
        let kubeconfig = dir.join("kubeconfig");
        write_kubeconfig(&kubeconfig, url);
        let clientgo = dir.join("clientgo");
        go_build("clientgo", &clientgo, "B7 compares with client-go");
        Contenders {
            dir,
            kubeconfig,
            clientgo,
            herald: herald.to_owned(),
        }
    }

    /// client-go's informer, synced by a streaming list (`watch_list`) or
    /// by a LIST, over JSON; `objects` Pods expected.
    pub fn clientgo(&self, watch_list: bool, objects: usize) -> Synced {
        let output = Command::new(&self.clientgo)
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg(format!("--watch-list={watch_list}"))
            .args(["--content-type", "json", "--timeout", "5m"])
            .stderr(Stdio::inherit())
            .output()
            .expect("running the client-go program");
        assert!(output.status.success(), "the client-go program failed");
        let line: ClientGoLine = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
            panic!(
                "the client-go program printed no sync line ({e}): {}",
                String::from_utf8_lossy(&output.stdout)
            )
        });
        assert!(
            line.objects >= objects as u64,
            "client-go synced {} objects of {objects}",
            line.objects
        );
        Synced {
            millis: line.synced_ms,
            peak_rss: line.peak_rss_kib * 1024.0,
            cpu_millis: line.cpu_ms,
        }
    }

    /// client-go's informer in latency mode, returned once synced: its
    /// handler records write → handler latencies until the flush Pod is
    /// updated (then [`ClientGoLatency::finish`]).
    pub fn clientgo_latency(&self) -> ClientGoLatency {
        let mut child = Command::new(&self.clientgo)
            .arg("--mode=latency")
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg(format!("--annotation={STAMP_ANNOTATION}"))
            .arg(format!("--flush-pod={FLUSH_POD}"))
            .args(["--duration", "5m", "--timeout", "5m"])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("running the client-go program");
        let mut lines = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        let synced = lines
            .next()
            .and_then(Result::ok)
            .expect("the client-go program prints a line once synced");
        assert!(synced.contains("synced_ms"), "not a sync line: {synced}");
        ClientGoLatency { child, lines }
    }

    /// `herald run` with one `latency-probe` plugin, returned once ready:
    /// the probe records write → entry latencies until the flush Pod is
    /// updated (then [`HeraldLatency::finish`]). Its log is JSON, and the
    /// plugin log rate is lifted so that no report line is dropped.
    pub fn herald_latency(&self) -> HeraldLatency {
        let plugins = self.dir.join("latency-plugins");
        std::fs::create_dir_all(&plugins).expect("creating the probe's directory");
        std::fs::write(
            plugins.join("latency-probe.wasm"),
            artifacts::bytes(artifacts::LATENCY_PROBE),
        )
        .expect("writing the latency probe");
        let address = free_address();
        let config = self.dir.join("latency.yaml");
        std::fs::write(
            &config,
            format!(
                "pluginDir: {}\nlisten: {address}\nlog:\n  format: json\n  pluginLinesPerSecond: 1000000\n  pluginBurst: 1000000\n",
                plugins.display()
            ),
        )
        .expect("writing herald run's configuration");
        let mut child = herald_run(
            &self.herald,
            &config,
            &self.kubeconfig,
            &self.dir.join("cache"),
        )
        .env_remove("RUST_LOG")
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting herald run");
        let stderr = child.stderr.take().expect("piped stderr");
        let (send, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if send.send(line).is_err() {
                    return;
                }
            }
        });
        let started = Instant::now();
        while !ready(&address) {
            if let Ok(Some(status)) = child.try_wait() {
                let said: Vec<String> = lines.try_iter().collect();
                panic!("herald run exited ({status}) before ready: {said:?}");
            }
            assert!(started.elapsed() < PATIENCE, "herald run never got ready");
            std::thread::sleep(Duration::from_millis(5));
        }
        HeraldLatency { child, lines }
    }

    /// `herald run` with the no-op plugin (its compiled artifact cached by
    /// an earlier run, as on a restart), from spawn until `/readyz` says
    /// ready; its cache then holds `objects` Pods or more.
    ///
    /// It reads JSON, as client-go does here: the embedded server encodes
    /// protobuf from its stored JSON object by object, a cost of the
    /// stand-in server that B7.protobuf shows on its own (against a real
    /// kube-apiserver, protobuf is Herald's faster default:
    /// `bench/kube-apiserver/compare.sh`).
    pub fn herald(&self, objects: usize) -> Synced {
        let address = free_address();
        let config = self.dir.join("herald-json.yaml");
        std::fs::write(&config, "cache:\n  protobuf: false\n")
            .expect("writing herald run's configuration");
        let started = Instant::now();
        let mut child = Command::new(&self.herald)
            .arg("run")
            .arg("--config")
            .arg(&config)
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--plugins")
            .arg(self.dir.join("plugins"))
            .arg("--listen")
            .arg(&address)
            .env("XDG_CACHE_HOME", self.dir.join("cache"))
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting herald run");
        let stderr = child.stderr.take().expect("piped stderr");
        let errors = std::thread::spawn(move || {
            BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
                .collect::<Vec<_>>()
        });
        loop {
            if ready(&address) {
                break;
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!(
                    "herald run exited ({status}) before ready: {:?}",
                    errors.join()
                );
            }
            assert!(started.elapsed() < PATIENCE, "herald run never got ready");
            std::thread::sleep(Duration::from_millis(2));
        }
        let millis = started.elapsed().as_secs_f64() * 1e3;
        let (peak_rss, cpu_millis) = usage(&child);
        let cached = cached_objects(&address);
        stop(child);
        assert!(
            cached >= objects as f64,
            "herald run said ready with {cached} objects cached of {objects}"
        );
        let _ = errors.join();
        Synced {
            millis,
            peak_rss,
            cpu_millis,
        }
    }
}

/// A loopback address nothing listens on now.
/// Writes a kubeconfig for the API server at `url` (no credentials: the
/// embedded one needs none) to `path`.
pub(crate) fn write_kubeconfig(path: &Path, url: &str) {
    std::fs::write(
        path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: bench\n  cluster:\n    server: {url}\n\
             users:\n- name: bench\n  user: {{}}\ncontexts:\n- name: bench\n  context:\n    cluster: bench\n    user: bench\n\
             current-context: bench\n"
        ),
    )
    .expect("writing the kubeconfig");
}

/// Builds the Go program in `bench/<module>` into `out`; `why` says which
/// benchmark needs it, for the message when Go is missing.
pub(crate) fn go_build(module: &str, out: &Path, why: &str) {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join(module);
    // The flags tools/helm/build.sh builds helm with: with the same
    // versions of the Kubernetes modules (each go.mod aligned to
    // tools/helm's), Go's build cache then compiles them once for all.
    let built = Command::new(herald::build::go::program())
        .env("GOFLAGS", "-mod=readonly -buildvcs=false")
        .args(["build", "-trimpath", "-o"])
        .arg(out)
        .arg(".")
        .current_dir(&source)
        .status()
        .unwrap_or_else(|e| {
            panic!(
                "{why} and builds {}: cannot run `go` ({e}); install Go 1.26 or later with the Go module proxy reachable",
                source.display()
            )
        });
    assert!(built.success(), "`go build` of {} failed", source.display());
}

/// `herald run --config <config> --kubeconfig <kubeconfig>` with its
/// artifact cache under `cache_home`, its stdout dropped.
pub(crate) fn herald_run(
    program: &Path,
    config: &Path,
    kubeconfig: &Path,
    cache_home: &Path,
) -> Command {
    let mut command = Command::new(program);
    command
        .arg("run")
        .arg("--config")
        .arg(config)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .env("XDG_CACHE_HOME", cache_home)
        .stdout(Stdio::null());
    command
}

pub(crate) fn free_address() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("binding a loopback port");
    listener.local_addr().expect("its address").to_string()
}

/// `GET path` on `address`: the whole response, or `None` if nothing
/// listens yet.
pub(crate) fn get(address: &str, path: &str) -> Option<String> {
    let mut stream = TcpStream::connect(address).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    Some(response)
}

/// Whether `GET /readyz` on `address` answers 200.
pub(crate) fn ready(address: &str) -> bool {
    get(address, "/readyz").is_some_and(|r| r.starts_with("HTTP/1.1 200 "))
}

/// The objects in the daemon's caches, summed from `/metrics`.
fn cached_objects(address: &str) -> f64 {
    let metrics = get(address, "/metrics").expect("herald run serves /metrics");
    metrics
        .lines()
        .filter(|line| line.starts_with("herald_cache_objects{"))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// The child's peak RSS (bytes, `VmHWM`) and CPU time so far (ms).
fn usage(child: &Child) -> (f64, f64) {
    let proc = PathBuf::from(format!("/proc/{}", child.id()));
    let status = std::fs::read_to_string(proc.join("status")).expect("reading /proc/PID/status");
    let peak_kib: f64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/PID/status");
    let stat = std::fs::read_to_string(proc.join("stat")).expect("reading /proc/PID/stat");
    // Fields after the command's closing parenthesis: utime and stime are
    // the 12th and 13th (fields 14 and 15 of the whole line).
    let after = &stat[stat.rfind(')').expect("a stat line") + 2..];
    let fields: Vec<&str> = after.split(' ').collect();
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    // SAFETY: sysconf has no preconditions.
    #[allow(unsafe_code)]
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    (peak_kib * 1024.0, ticks / per_second * 1e3)
}

/// Ends `child` and reaps it.
fn stop(mut child: Child) {
    let _ = child.kill();
    let _ = child.wait();
}
