//! Outbound HTTP end to end: the `egress-probe` fixture makes requests
//! through `wasi:http/outgoing-handler` from inside its sandbox, the host
//! checks each against the plugin's grant and sends it itself, and a real
//! HTTP server on 127.0.0.1, started by the test, answers (or does not).
//! Each test reads what the plugin saw from its log and what the server saw
//! from the server.

use super::cluster::TestCluster;
use super::recording::informers;
use herald::capability::Grants;
use herald::capability::http::HttpGrant;
use herald::capability::log::MemorySink;
use herald::daemon::Daemon;
use herald::dispatch::RetryPolicy;
use herald::plugin::{LoadOptions, LoadedPlugin, RequestedLimits};
use herald_tests::{PATIENCE, artifacts, engine, eventually, load_with, messages};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::PostParams;
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

/// What the test server saw.
#[derive(Debug, Default)]
pub(super) struct Seen {
    /// Connections accepted.
    pub(super) connections: AtomicUsize,
    /// Request paths, in order of arrival.
    pub(super) paths: Mutex<Vec<String>>,
    /// Bytes read, on every connection.
    pub(super) bytes: AtomicUsize,
    /// `/hold` requests waiting for their answer now, and the most ever.
    holding: AtomicUsize,
    most_held: AtomicUsize,
    /// `/hold` requests still to come (the test sets it).
    hold_total: AtomicUsize,
    released: Notify,
}

/// An HTTP/1.1 server on 127.0.0.1 with a few behaviours, by path:
/// `/ok` (200, `hello`), `/redirect` (302 to another origin), `/big`
/// (200 with a 4 KiB body, announced), `/never` (reads the request and
/// never answers), `/hold` (answers once as many `/hold` requests wait at
/// once as the concurrency cap of 2 allows, or as remain).
pub(super) struct TestServer {
    port: u16,
    pub(super) seen: Arc<Seen>,
    task: tokio::task::JoinHandle<()>,
}

impl TestServer {
    pub(super) async fn start() -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Seen::default());
        let task = tokio::spawn({
            let seen = seen.clone();
            async move {
                while let Ok((stream, _)) = listener.accept().await {
                    seen.connections.fetch_add(1, Ordering::SeqCst);
                    tokio::spawn(serve(stream, seen.clone()));
                }
            }
        });
        TestServer { port, seen, task }
    }

    pub(super) fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub(super) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.origin())
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Answers the requests of one connection.
async fn serve(mut stream: TcpStream, seen: Arc<Seen>) {
    let mut buffer = Vec::new();
    loop {
        let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") else {
            let mut chunk = [0u8; 4096];
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    seen.bytes.fetch_add(n, Ordering::SeqCst);
                    buffer.extend_from_slice(&chunk[..n]);
                }
            }
            continue;
        };
        let head = String::from_utf8_lossy(&buffer[..end]).into_owned();
        let length: usize = head
            .lines()
            .find_map(|l| {
                let (name, value) = l.split_once(':')?;
                name.eq_ignore_ascii_case("content-length")
                    .then(|| value.trim().parse().ok())?
            })
            .unwrap_or(0);
        while buffer.len() < end + 4 + length {
            let mut chunk = [0u8; 4096];
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    seen.bytes.fetch_add(n, Ordering::SeqCst);
                    buffer.extend_from_slice(&chunk[..n]);
                }
            }
        }
        buffer.drain(..end + 4 + length);
        let path = head
            .split_whitespace()
            .nth(1)
            .unwrap_or_default()
            .to_owned();
        seen.paths.lock().unwrap().push(path.clone());
        let response = match path.as_str() {
            "/ok" => ok("hello"),
            "/redirect" => "HTTP/1.1 302 Found\r\nlocation: http://elsewhere.example/next\r\ncontent-length: 0\r\n\r\n".to_owned(),
            "/big" => ok(&"x".repeat(4096)),
            "/never" => return std::future::pending().await,
            // Reads whatever comes, never answers: what reached it is counted.
            "/sink" => loop {
                let mut chunk = [0u8; 4096];
                match stream.read(&mut chunk).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => {
                        seen.bytes.fetch_add(n, Ordering::SeqCst);
                    }
                }
            },
            "/hold" => {
                hold(&seen).await;
                ok("held")
            }
            _ => "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n".to_owned(),
        };
        if stream.write_all(response.as_bytes()).await.is_err() {
            return;
        }
    }
}

fn ok(body: &str) -> String {
    format!(
        "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// Waits until as many `/hold` requests are waiting as the cap (2) allows
/// or as remain, recording the most ever waiting.
async fn hold(seen: &Seen) {
    let now = seen.holding.fetch_add(1, Ordering::SeqCst) + 1;
    seen.most_held.fetch_max(now, Ordering::SeqCst);
    loop {
        let released = seen.released.notified();
        let holding = seen.holding.load(Ordering::SeqCst);
        let remaining = seen.hold_total.load(Ordering::SeqCst);
        if holding >= remaining.min(2) {
            break;
        }
        released.await;
    }
    seen.hold_total.fetch_sub(1, Ordering::SeqCst);
    seen.holding.fetch_sub(1, Ordering::SeqCst);
    seen.released.notify_waiters();
}

/// The fixture, running in a daemon with `grant`.
pub(super) struct Probe {
    cluster: TestCluster,
    pub(super) logs: MemorySink,
    _daemon: Daemon,
    requests: AtomicUsize,
}

impl Probe {
    pub(super) async fn start(grant: Value) -> Probe {
        Probe::start_in(grant, herald::capability::Mode::Enforce).await
    }

    /// The fixture with `grant`, in `mode`.
    pub(super) async fn start_in(grant: Value, mode: herald::capability::Mode) -> Probe {
        let cluster = TestCluster::start().await;
        let grant: HttpGrant = serde_json::from_value(grant).expect("an HTTP grant");
        let (plugin, logs) = load_with(
            artifacts::EGRESS_PROBE,
            LoadOptions {
                // Its own namespace only: tests sharing a real cluster
                // (HERALD_TEST_KUBECONFIG) would otherwise send each other's.
                config: Some(json!({"namespace": cluster.namespace}).to_string()),
                grants: Grants {
                    http: Some(grant),
                    mode,
                    ..Grants::default()
                },
                overrides: RequestedLimits {
                    call_deadline: Some(Duration::from_secs(10)),
                    memory_bytes: None,
                },
                ..LoadOptions::default()
            },
        );
        let daemon = Daemon::new(
            Arc::new(informers(cluster.client.clone())),
            RetryPolicy::default(),
        );
        daemon.start(plugin).await.expect("egress-probe starts");
        Probe {
            cluster,
            logs,
            _daemon: daemon,
            requests: AtomicUsize::new(0),
        }
    }

    /// Makes the plugin send `count` requests to `url` at once; their log
    /// lines' outcomes (`status=…` or `error=…`), in request order.
    async fn send(&self, url: &str, count: usize) -> Vec<String> {
        self.send_with(json!({"url": url, "count": count.to_string()}))
            .await
    }

    /// Makes the plugin send the requests `data` describes (see the
    /// fixture); their log lines' outcomes, in request order.
    pub(super) async fn send_with(&self, data: Value) -> Vec<String> {
        let count: usize = data["count"].as_str().map_or(1, |c| c.parse().unwrap());
        let name = format!("request-{}", self.requests.fetch_add(1, Ordering::SeqCst));
        let request: ConfigMap = serde_json::from_value(json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "labels": {"herald.dev/egress-probe": "request"}},
            "data": data,
        }))
        .unwrap();
        self.cluster
            .config_maps()
            .create(&PostParams::default(), &request)
            .await
            .unwrap();
        let prefix = format!("egress-probe request={}/{name} i=", self.cluster.namespace);
        let mine = || -> Vec<String> {
            messages(&self.logs.lines())
                .into_iter()
                .filter_map(|m| {
                    let rest = m.strip_prefix(&prefix)?;
                    Some(rest.split_once(' ')?.1.to_owned())
                })
                .collect()
        };
        eventually(
            &format!("{count} requests of {name}"),
            PATIENCE,
            async || mine().len() >= count,
        )
        .await;
        mine()
    }

    pub(super) async fn finish(self) {
        self.cluster.cleanup().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_granted_origin_is_reached_and_any_other_is_refused_before_connecting() {
    let server = TestServer::start().await;
    let other = TestServer::start().await;
    let probe = Probe::start(json!({"allowedOrigins": [server.origin()]})).await;

    assert_eq!(
        probe.send(&server.url("/ok"), 1).await,
        ["status=200 bytes=5 location=-"]
    );
    assert_eq!(server.seen.paths.lock().unwrap().as_slice(), ["/ok"]);

    // Another port of the same host, and cloud metadata: refused, as an
    // HTTP error the plugin sees, with no connection made.
    for url in [other.url("/ok"), "http://169.254.169.254/latest".to_owned()] {
        assert_eq!(
            probe.send(&url, 1).await,
            ["error=ErrorCode::HttpRequestDenied"],
            "{url}"
        );
    }
    assert_eq!(other.seen.connections.load(Ordering::SeqCst), 0);
    probe.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirects_are_not_followed_by_the_host() {
    let server = TestServer::start().await;
    let probe = Probe::start(json!({"allowedOrigins": [server.origin()]})).await;
    // The plugin sees the 302 and where it points; following it would be a
    // new request, checked against the grant like any other.
    assert_eq!(
        probe.send(&server.url("/redirect"), 1).await,
        ["status=302 bytes=0 location=http://elsewhere.example/next"]
    );
    assert_eq!(
        probe.send("http://elsewhere.example/next", 1).await,
        ["error=ErrorCode::HttpRequestDenied"]
    );
    assert_eq!(server.seen.paths.lock().unwrap().as_slice(), ["/redirect"]);
    probe.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn time_and_size_are_bounded_by_the_grant_within_the_call() {
    let server = TestServer::start().await;
    let probe = Probe::start(json!({
        "allowedOrigins": [server.origin()],
        "timeout": "1s",
        "maxResponseSize": "1Ki",
    }))
    .await;
    // A server that never answers: the request ends at its timeout, well
    // inside the 10 s call, and the plugin's call goes on to log it.
    let never = probe.send(&server.url("/never"), 1).await;
    assert!(never[0].starts_with("error="), "{never:?}");
    assert!(never[0].contains("Timeout"), "{never:?}");
    // A body over the cap, announced by its length: refused.
    assert_eq!(
        probe.send(&server.url("/big"), 1).await,
        ["error=ErrorCode::HttpResponseBodySize(Some(4096))"]
    );
    // Within the cap, still fine.
    assert_eq!(
        probe.send(&server.url("/ok"), 1).await,
        ["status=200 bytes=5 location=-"]
    );
    probe.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_in_flight_are_capped_per_plugin() {
    let server = TestServer::start().await;
    server.seen.hold_total.store(5, Ordering::SeqCst);
    let probe = Probe::start(json!({
        "allowedOrigins": [server.origin()],
        "maxConcurrent": 2,
    }))
    .await;
    // Five requests started at once: the server answers each once two are
    // waiting (or all that remain), so with a cap above 2 it would see more
    // at once, and with none below 2 it would never answer.
    let outcomes = probe.send(&server.url("/hold"), 5).await;
    assert_eq!(outcomes, vec!["status=200 bytes=4 location=-"; 5]);
    assert_eq!(server.seen.most_held.load(Ordering::SeqCst), 2);
    probe.finish().await;
}

#[test]
fn a_plugin_that_declares_http_without_a_grant_is_not_loaded() {
    let error = LoadedPlugin::load(
        engine(),
        &artifacts::bytes(artifacts::EGRESS_PROBE),
        LoadOptions::default(),
    )
    .expect_err("no grant")
    .to_string();
    assert!(error.contains("\"http\""), "{error}");
    assert!(error.contains("plugins.egress-probe.grants"), "{error}");
}
