//! B15: the latency Herald adds at the API server's door. One policy, two
//! implementations, each a process of its own on loopback with the same
//! certificate and the same embedded API server behind its cache: `herald
//! run` serving the `admission-bench` fixture (a Rust plugin: a Pod's
//! images against the registries its Namespace allows, the Namespace read
//! from the cache), and `bench/webhookgo`, the same check written with
//! controller-runtime's webhook server and its manager's cached client.
//!
//! The load is what kube-apiserver sends: AdmissionReviews POSTed over one
//! HTTP/2 connection per webhook, open loop at a fixed rate (100 and 1,000
//! reviews/s), each timed from the request sent to the whole answer read.
//! Every answer must allow the Pod (a refusal or an error fails the run).
//! The rows give Herald's p50 and p99 against controller-runtime's, the two
//! alternating phase by phase in each repetition; [`crate::b15_memory`]
//! adds the memory an admitting plugin costs.

use crate::contenders::{free_address, go_build, herald_run, ready, write_kubeconfig};
use crate::measure::{Samples, percentile};
use crate::settings::Settings;
use crate::table::{Goal, Row, Unit};
use bytes::Bytes;
use herald_test_artifacts as artifacts;
use http_body_util::{BodyExt, Full};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, PostParams};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::runtime::Runtime;

/// The namespace of the reviewed Pods, and the registries it allows.
const NAMESPACE: &str = "b15";
const REGISTRIES: &str = "docker.io_ghcr.io";
/// How long a webhook process has to become ready.
const PATIENCE: Duration = Duration::from_secs(120);

/// Runs B15.
pub fn run(settings: &Settings, runtime: &Runtime) -> Vec<Row> {
    let herald_program = settings.compiler_program.clone().expect(
        "B15 runs `herald run` beside bench/webhookgo and needs Settings::compiler_program \
         (env!(\"CARGO_BIN_EXE_herald-child\") in a bench or test of herald-bench)",
    );
    runtime.block_on(async {
        let cluster = crate::cluster::Cluster::start().await;
        let namespace: Namespace = serde_json::from_value(serde_json::json!({
            "metadata": {"name": NAMESPACE, "labels": {"registries": REGISTRIES}},
        }))
        .expect("a Namespace");
        Api::<Namespace>::all(cluster.client())
            .create(&PostParams::default(), &namespace)
            .await
            .expect("creating B15's namespace");
        let url = cluster.url();
        let program = herald_program.clone();
        let doors = tokio::task::spawn_blocking(move || Doors::open(&url, &program))
            .await
            .expect("starting the two webhooks");
        let mut rows = Vec::new();
        for &rate in &settings.b15_rates {
            let (mut herald, mut go) = (Phases::default(), Phases::default());
            let mut split = TailSplit::default();
            for rep in 0..settings.repetitions {
                crate::progress(format!(
                    "B15 {rate} reviews/s repetition {}/{}",
                    rep + 1,
                    settings.repetitions
                ));
                go.push(load(&doors.go, &doors.ca, rate, settings.b15_seconds).await);
                let before = Timed::read(&doors.metrics);
                let latencies = load(&doors.herald, &doors.ca, rate, settings.b15_seconds).await;
                split.add(&latencies, before, Timed::read(&doors.metrics));
                herald.push(latencies);
            }
            let what = |p: &str| {
                format!(
                    "{p} latency of one AdmissionReview (a Pod's images against its Namespace from the cache), \
                     {rate}/s over HTTP/2, `herald run` with admission-bench; baseline: controller-runtime's \
                     webhook server, same check"
                )
            };
            rows.push(
                Row::ratio_of(
                    format!("B15.p50-{rate}"),
                    what("p50"),
                    Unit::Millis,
                    go.p50,
                    herald.p50,
                    Goal::RatioAtMost(1.0),
                )
                .with_details(format!(
                    "{rate} reviews/s for {:.1} s per phase; answers in the phase: Herald {}, controller-runtime {} (medians)",
                    settings.b15_seconds,
                    herald.answered.median(),
                    go.answered.median(),
                )),
            );
            rows.push(
                Row::ratio_of(
                    format!("B15.p99-{rate}"),
                    what("p99"),
                    Unit::Millis,
                    go.p99,
                    herald.p99,
                    Goal::RatioAtMost(1.0),
                )
                .with_details(split.describe()),
            );
        }
        drop(doors);
        if !settings.b15_latency_only {
            rows.push(crate::b15_memory::run(settings, &cluster.url(), &herald_program).await);
        }
        cluster.shutdown().await;
        rows
    })
}

/// The percentiles of one contender, a value per repetition.
#[derive(Debug, Default)]
struct Phases {
    p50: Samples,
    p99: Samples,
    answered: Samples,
}

impl Phases {
    fn push(&mut self, latencies: Vec<f64>) {
        self.p50.push(percentile(&latencies, 50.0));
        self.p99.push(percentile(&latencies, 99.0));
        self.answered.push(latencies.len() as f64);
    }
}

/// Where Herald's slow reviews spend their time: the reviews over a bound
/// end to end, against Herald's own histograms over the same bounds (their
/// buckets fall there): the plugin calls (`herald_admission_duration_seconds`)
/// and the server's time from a request's headers to its answer
/// (`herald_admission_request_duration_seconds`), over all of a rate's
/// phases.
#[derive(Debug, Default)]
struct TailSplit {
    reviews: usize,
    /// Reviews over each of [`TAIL_BOUNDS`] end to end.
    slow_reviews: [usize; 2],
    /// What Herald's histograms counted in the phases.
    timed: Timed,
}

/// Bounds of the handler-duration histogram's buckets (seconds) the tail
/// is split at.
const TAIL_BOUNDS: [&str; 2] = ["0.00064", "0.00256"];

/// Cumulative counts of one of admission-bench's histograms: all
/// observations, and those over each of [`TAIL_BOUNDS`].
#[derive(Debug, Default, Clone, Copy)]
struct Over {
    all: f64,
    over: [f64; 2],
}

impl Over {
    fn read(metrics: &str, family: &str) -> Over {
        let value = |suffix: &str, le: Option<&str>| -> f64 {
            let prefix = format!("{family}_{suffix}{{");
            metrics
                .lines()
                .filter(|l| l.starts_with(&prefix) && l.contains("plugin=\"admission-bench\""))
                .filter(|l| le.is_none_or(|le| l.contains(&format!("le=\"{le}\""))))
                .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
                .sum()
        };
        let all = value("count", None);
        Over {
            all,
            over: TAIL_BOUNDS.map(|le| all - value("bucket", Some(le))),
        }
    }

    fn since(self, before: Over) -> Over {
        Over {
            all: self.all - before.all,
            over: [0, 1].map(|i| self.over[i] - before.over[i]),
        }
    }

    fn add(&mut self, other: Over) {
        self.all += other.all;
        for i in 0..2 {
            self.over[i] += other.over[i];
        }
    }
}

/// Herald's two histograms of admission-bench's reviews.
#[derive(Debug, Default, Clone, Copy)]
struct Timed {
    calls: Over,
    server: Over,
}

impl Timed {
    /// Both, read from `/metrics` at `address`.
    fn read(address: &str) -> Timed {
        let metrics =
            crate::contenders::get(address, "/metrics").expect("herald run serves /metrics");
        Timed {
            calls: Over::read(&metrics, "herald_admission_duration_seconds"),
            server: Over::read(&metrics, "herald_admission_request_duration_seconds"),
        }
    }
}

impl TailSplit {
    fn add(&mut self, latencies: &[f64], before: Timed, after: Timed) {
        self.reviews += latencies.len();
        for (i, bound) in TAIL_BOUNDS.iter().enumerate() {
            let ms = bound.parse::<f64>().expect("a bound") * 1000.0;
            self.slow_reviews[i] += latencies.iter().filter(|&&l| l > ms).count();
        }
        self.timed.calls.add(after.calls.since(before.calls));
        self.timed.server.add(after.server.since(before.server));
    }

    fn describe(&self) -> String {
        let Timed { calls, server } = self.timed;
        format!(
            "Herald's tail split: of {} reviews, {} took over 0.64 ms and {} over 2.56 ms end to end; \
             inside Herald's server (headers to answer) {} and {} of {}; in the plugin's call {} and {} of {}",
            self.reviews,
            self.slow_reviews[0],
            self.slow_reviews[1],
            server.over[0],
            server.over[1],
            server.all,
            calls.over[0],
            calls.over[1],
            calls.all,
        )
    }
}

/// A webhook to load: where it listens and the path it answers on.
#[derive(Debug, Clone)]
struct Door {
    address: String,
    path: &'static str,
}

/// The two webhook processes, stopped when dropped.
struct Doors {
    herald: Door,
    /// Herald's endpoints (`/metrics`).
    metrics: String,
    go: Door,
    /// The PEM of the CA both certificates chain to.
    ca: String,
    _children: Children,
    /// Their certificates, configurations and plugin, removed once they
    /// have stopped.
    _dir: herald::scratch::ScratchDir,
}

/// Processes killed when dropped, also when starting the next one panics.
#[derive(Default)]
struct Children(Vec<Child>);

impl Drop for Children {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Doors {
    /// Builds `bench/webhookgo`, writes a CA, one serving certificate for
    /// 127.0.0.1 and both configurations, starts both processes against the
    /// API server at `url` and waits until each is ready.
    fn open(url: &str, herald: &Path) -> Doors {
        let dir =
            herald::scratch::ScratchDir::new("b15").expect("creating B15's scratch directory");
        let certs = dir.join("certs");
        let plugins = dir.join("plugins");
        std::fs::create_dir_all(&certs).expect("creating B15's scratch directory");
        std::fs::create_dir_all(&plugins).expect("creating B15's plugin directory");
        let ca = write_certificate(&certs);
        std::fs::write(
            plugins.join("admission-bench.wasm"),
            artifacts::bytes(artifacts::ADMISSION_BENCH),
        )
        .expect("writing the plugin");
        let kubeconfig = dir.join("kubeconfig");
        write_kubeconfig(&kubeconfig, url);
        let go_program = dir.join("webhookgo");
        go_build(
            "webhookgo",
            &go_program,
            "B15 compares with controller-runtime",
        );

        let (endpoints, admission) = (free_address(), free_address());
        let config = dir.join("herald.yaml");
        std::fs::write(
            &config,
            format!(
                "pluginDir: {plugins}\nlisten: {endpoints}\nadmission:\n  enabled: true\n  listen: {admission}\n  certFile: {cert}\n  keyFile: {key}\n",
                plugins = plugins.display(),
                cert = certs.join("tls.crt").display(),
                key = certs.join("tls.key").display(),
            ),
        )
        .expect("writing herald run's configuration");
        let herald_child = herald_run(herald, &config, &kubeconfig, &dir.join("cache"))
            .env("RUST_LOG", "warn")
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting herald run");
        let mut children = Children(vec![herald_child]);
        let started = Instant::now();
        while !ready(&endpoints) {
            assert!(started.elapsed() < PATIENCE, "herald run never got ready");
            std::thread::sleep(Duration::from_millis(5));
        }

        let go_address = free_address();
        let port = go_address.rsplit(':').next().expect("a port").to_owned();
        let mut go_child = Command::new(&go_program)
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .arg("--cert-dir")
            .arg(&certs)
            .args(["--port", &port])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting bench/webhookgo");
        let stdout = go_child.stdout.take().expect("piped stdout");
        children.0.push(go_child);
        let said = BufReader::new(stdout).lines().next().and_then(Result::ok);
        assert_eq!(
            said.as_deref(),
            Some("ready"),
            "bench/webhookgo did not get ready"
        );
        Doors {
            herald: Door {
                address: admission,
                path: "/validate/admission-bench",
            },
            metrics: endpoints,
            go: Door {
                address: go_address,
                path: "/validate",
            },
            ca,
            _children: children,
            _dir: dir,
        }
    }
}

/// Writes a CA's leaf for `localhost` and `127.0.0.1` as `tls.crt` and
/// `tls.key` in `dir` (controller-runtime's names, and Herald's by
/// configuration); returns the CA's PEM.
pub(crate) fn write_certificate(dir: &Path) -> String {
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca_key = rcgen::KeyPair::generate().expect("a CA key");
    let ca = params.self_signed(&ca_key).expect("the CA");
    let issuer = rcgen::Issuer::new(params, ca_key);
    let leaf_params =
        rcgen::CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .expect("leaf parameters");
    let leaf_key = rcgen::KeyPair::generate().expect("a leaf key");
    let leaf = leaf_params.signed_by(&leaf_key, &issuer).expect("the leaf");
    std::fs::write(dir.join("tls.crt"), leaf.pem()).expect("writing tls.crt");
    std::fs::write(dir.join("tls.key"), leaf_key.serialize_pem()).expect("writing tls.key");
    ca.pem()
}

/// The review the load sends, numbered `n`: a Pod with one allowed image.
pub(crate) fn review(n: u64) -> Bytes {
    let pod = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": format!("pod-{n}"), "namespace": NAMESPACE, "labels": {"app": "b15"}},
        "spec": {"containers": [
            {"name": "app", "image": "ghcr.io/acme/app:1.4.2"},
            {"name": "proxy", "image": "docker.io/library/envoy:1.30"},
        ]},
    });
    let body = serde_json::json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": format!("b15-{n}"),
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
            "requestResource": {"group": "", "version": "v1", "resource": "pods"},
            "name": format!("pod-{n}"),
            "namespace": NAMESPACE,
            "operation": "CREATE",
            "userInfo": {"username": "system:serviceaccount:b15:loader", "groups": ["system:authenticated"]},
            "object": pod,
            "oldObject": null,
            "dryRun": false,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
        },
    });
    Bytes::from(serde_json::to_vec(&body).expect("a review"))
}

/// Sends reviews to `door` at `rate` per second for `seconds` over one
/// HTTP/2 connection, open loop; returns each one's latency in ms. Panics
/// unless every answer allows the Pod.
async fn load(door: &Door, ca: &str, rate: u32, seconds: f64) -> Vec<f64> {
    let sender = connect(&door.address, ca).await;
    let count = (f64::from(rate) * seconds).ceil() as u64;
    let interval = Duration::from_secs_f64(1.0 / f64::from(rate));
    let started = tokio::time::Instant::now();
    let mut pending = Vec::with_capacity(count as usize);
    for n in 0..count {
        tokio::time::sleep_until(started + interval * n as u32).await;
        let mut sender = sender.clone();
        let request = hyper::Request::post(format!("https://localhost{}", door.path))
            .header("content-type", "application/json")
            .body(Full::new(review(n)))
            .expect("a request");
        pending.push(tokio::spawn(async move {
            let sent = Instant::now();
            let response = sender.send_request(request).await.expect("an answer");
            let status = response.status();
            let body = response
                .into_body()
                .collect()
                .await
                .expect("the answer's body")
                .to_bytes();
            let took = sent.elapsed().as_secs_f64() * 1000.0;
            let answer: serde_json::Value =
                serde_json::from_slice(&body).expect("an AdmissionReview answer");
            assert!(
                status.is_success() && answer["response"]["allowed"] == true,
                "the webhook did not allow the Pod ({status}): {}",
                String::from_utf8_lossy(&body)
            );
            took
        }));
    }
    let mut latencies = Vec::with_capacity(pending.len());
    for answer in pending {
        latencies.push(answer.await.expect("a request task"));
    }
    latencies
}

/// One HTTP/2 connection over TLS to `address`, trusting `ca`.
pub(crate) async fn connect(
    address: &str,
    ca: &str,
) -> hyper::client::conn::http2::SendRequest<Full<Bytes>> {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(rustls::pki_types::CertificateDer::from_pem_slice(ca.as_bytes()).expect("the CA"))
        .expect("trusting the CA");
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("TLS versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec()];
    let tcp = tokio::net::TcpStream::connect(address)
        .await
        .expect("connecting to the webhook");
    tcp.set_nodelay(true).expect("TCP_NODELAY");
    let name = rustls::pki_types::ServerName::try_from("localhost").expect("a name");
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .expect("a TLS handshake");
    let (sender, connection) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(tls),
    )
    .await
    .expect("an HTTP/2 connection");
    tokio::spawn(connection);
    sender
}
