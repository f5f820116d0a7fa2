//! B15's memory row: the resident memory an admitting plugin adds to
//! `herald run`, against the same plugin with admission off (a
//! handler-only plugin). The plugins are copies of the `admission-bench`
//! fixture under names of their own; with admission on, each has answered
//! one review (so it holds an admission instance beside its handlers'
//! instance) and sits idle. Each side is the slope between a daemon with
//! few and one with many plugins, a process of its own each time, so what
//! the daemon holds whatever its plugins count cancels out.

use crate::b15_admission::{connect, write_certificate};
use crate::contenders::{free_address, get, herald_run, ready, write_kubeconfig};
use crate::measure::Samples;
use crate::settings::Settings;
use crate::table::{Goal, Row, Unit};
use bytes::Bytes;
use herald_test_artifacts as artifacts;
use http_body_util::{BodyExt, Full};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// How long a daemon has to get ready, and more per plugin: the first
/// daemon of a run compiles every copy (the artifact cache then has them).
const PATIENCE: Duration = Duration::from_secs(120);
const PATIENCE_PER_PLUGIN: Duration = Duration::from_secs(30);

/// The fixture's own name, and its copies' (as long: `admission-b0000`…).
const FIXTURE_NAME: &str = "admission-bench";

fn copy_name(n: usize) -> String {
    format!("admission-b{n:04}")
}

/// Runs B15's memory comparison against the API server at `url`.
pub async fn run(settings: &Settings, url: &str, herald: &Path) -> Row {
    let dir =
        herald::scratch::ScratchDir::new("b15-memory").expect("creating B15's scratch directory");
    let certs = dir.join("certs");
    std::fs::create_dir_all(&certs).expect("creating B15's scratch directory");
    let ca = write_certificate(&certs);
    let kubeconfig = dir.join("kubeconfig");
    write_kubeconfig(&kubeconfig, url);
    let (few, many) = settings.b15_memory_plugins;
    let side = |admission: bool| Side {
        dir: dir.to_path_buf(),
        certs: certs.clone(),
        kubeconfig: kubeconfig.clone(),
        herald: herald.to_owned(),
        ca: ca.clone(),
        admission,
    };
    let (admitting, handling) = (side(true), side(false));
    let (mut admitting_each, mut handling_each) = (Samples::new(), Samples::new());
    for rep in 0..settings.repetitions {
        crate::progress(format!(
            "B15 memory, {few} and {many} plugins, repetition {}/{}",
            rep + 1,
            settings.repetitions
        ));
        // Alternate which side goes first, so neither always runs on a
        // machine the other has just warmed.
        let sides = if rep % 2 == 0 {
            [&admitting, &handling]
        } else {
            [&handling, &admitting]
        };
        for side in sides {
            // The larger daemon first: in the first repetition it compiles
            // every copy the smaller one then finds in the cache.
            let large = side.resident(many).await;
            let each = (large - side.resident(few).await) / (many - few) as f64;
            if side.admission {
                admitting_each.push(each);
            } else {
                handling_each.push(each);
            }
        }
    }
    drop(dir);
    Row::ratio_of(
        "B15.memory",
        format!(
            "resident memory per admitting plugin (admission-bench copies, one review answered each), \
             slope between {few} and {many} plugins in `herald run`; baseline: the same plugins with \
             admission off (handlers only)"
        ),
        Unit::Bytes,
        handling_each,
        admitting_each,
        Goal::RatioAtMost(1.2),
    )
}

/// One side of the comparison: how its daemons are started.
struct Side {
    dir: PathBuf,
    certs: PathBuf,
    kubeconfig: PathBuf,
    herald: PathBuf,
    ca: String,
    admission: bool,
}

/// A daemon, killed when dropped.
struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Side {
    /// The resident bytes of a daemon running `count` copies, every copy
    /// dispatching and, with admission on, having answered one review.
    async fn resident(&self, count: usize) -> f64 {
        let plugins = self.dir.join(format!("plugins-{count}"));
        if !plugins.exists() {
            std::fs::create_dir_all(&plugins).expect("creating a plugin directory");
            for n in 0..count {
                let name = copy_name(n);
                std::fs::write(
                    plugins.join(format!("{name}.wasm")),
                    artifacts::renamed(artifacts::ADMISSION_BENCH, FIXTURE_NAME, &name),
                )
                .expect("writing a plugin");
            }
        }
        let (endpoints, admission) = (free_address(), free_address());
        let config = self
            .dir
            .join(format!("herald-{count}-{}.yaml", self.admission));
        std::fs::write(
            &config,
            format!(
                "pluginDir: {plugins}\nlisten: {endpoints}\nadmission:\n  enabled: {enabled}\n  listen: {admission}\n  certFile: {cert}\n  keyFile: {key}\n",
                plugins = plugins.display(),
                enabled = self.admission,
                cert = self.certs.join("tls.crt").display(),
                key = self.certs.join("tls.key").display(),
            ),
        )
        .expect("writing herald run's configuration");
        // One artifact cache for every daemon: each copy compiles once.
        let daemon = Daemon(
            herald_run(
                &self.herald,
                &config,
                &self.kubeconfig,
                &self.dir.join("cache"),
            )
            .env("RUST_LOG", "warn")
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting herald run"),
        );
        let started = Instant::now();
        let patience = PATIENCE + PATIENCE_PER_PLUGIN * count as u32;
        while !(ready(&endpoints) && dispatching(&endpoints) == count) {
            assert!(
                started.elapsed() < patience,
                "herald run had {} of {count} plugins dispatching after {patience:?}",
                dispatching(&endpoints)
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if self.admission {
            let sender = connect(&admission, &self.ca).await;
            for n in 0..count {
                review_once(sender.clone(), &copy_name(n)).await;
            }
        }
        resident_bytes_of(daemon.0.id()).expect("the daemon's /proc status") as f64
    }
}

/// How many plugins `/plugins` on `address` lists as dispatching.
fn dispatching(address: &str) -> usize {
    let Some(response) = get(address, "/plugins") else {
        return 0;
    };
    let Some((_, body)) = response.split_once("\r\n\r\n") else {
        return 0;
    };
    let report: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
    report["plugins"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["dispatching"] == true)
        .count()
}

/// Sends B15's review to the plugin `name`; panics unless it is allowed.
async fn review_once(mut sender: hyper::client::conn::http2::SendRequest<Full<Bytes>>, name: &str) {
    let request = hyper::Request::post(format!("https://localhost/validate/{name}"))
        .header("content-type", "application/json")
        .body(Full::new(crate::b15_admission::review(0)))
        .expect("a request");
    let response = sender.send_request(request).await.expect("an answer");
    let body = response
        .into_body()
        .collect()
        .await
        .expect("the answer's body")
        .to_bytes();
    let answer: serde_json::Value =
        serde_json::from_slice(&body).expect("an AdmissionReview answer");
    assert_eq!(
        answer["response"]["allowed"],
        true,
        "{name} did not allow the Pod: {}",
        String::from_utf8_lossy(&body)
    );
}

/// The resident set of the process `pid`, from `/proc/<pid>/status`.
fn resident_bytes_of(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}
