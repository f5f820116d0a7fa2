//! B12: what a plugin's own metric update and one outbound HTTP request cost
//! through the host, each beside its native equivalent in the same
//! repetition.
//!
//! - **A metric update.** The `metrics-probe` fixture increments a counter
//!   with one label `UPDATES` times in one handler call (the SDK, the
//!   `metrics` import, the host's checks and its series map); the baseline
//!   is what a native Rust controller does for the same update with
//!   prometheus-client: the family looked up by its label set, then `inc`.
//! - **An HTTP request.** The `egress-probe` fixture makes one `GET`
//!   through `wasi:http/outgoing-handler` per handler call (the grant check,
//!   the address check, a new connection, the response read into the
//!   guest), to a small HTTP/1.1 server on loopback started here; the
//!   baselines make the same `GET` with hyper from native code, once over a
//!   new connection per request (as the host does) and once over one kept
//!   alive.

use crate::b1_throughput::context;
use crate::fixtures::Fixtures;
use crate::measure::Samples;
use crate::settings::Settings;
use crate::table::{Goal, Row, Unit};
use herald::capability::Grants;
use herald::capability::http::HttpGrant;
use herald::capability::log::LogRate;
use herald::capability::metrics::PluginMetricsRegistry;
use herald::plugin::{LoadOptions, LoadedPlugin, PluginInstance};
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use serde_json::json;
use std::time::Instant;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Metric updates per repetition (full run).
const UPDATES: u32 = 100_000;

/// HTTP requests per repetition (full run).
const REQUESTS: usize = 200;

/// Runs B12.
pub fn run(
    settings: &Settings,
    fixtures: &Fixtures,
    runtime: &tokio::runtime::Runtime,
) -> Vec<Row> {
    let mut rows = vec![metric_update(settings, fixtures)];
    rows.extend(http_request(settings, fixtures, runtime));
    rows
}

/// B12.a: one counter increment with a label.
fn metric_update(settings: &Settings, fixtures: &Fixtures) -> Row {
    let updates = if settings.quick { 100 } else { UPDATES };
    let registry = PluginMetricsRegistry::new();
    let plugin = load(
        fixtures,
        herald_test_artifacts::METRICS_PROBE,
        LoadOptions {
            metrics: Some(registry.clone()),
            ..LoadOptions::default()
        },
    );
    plugin.context().metrics.defined.activate();
    let mut instance = PluginInstance::new(plugin).expect("instantiating metrics-probe");
    let command =
        command(json!({"metric": "counter", "count": updates.to_string(), "label": "bench"}));
    let family = Family::<Vec<(String, String)>, Counter>::default();
    let labels = vec![("kind".to_owned(), "bench".to_owned())];
    let (mut native, mut plugin) = (Samples::new(), Samples::new());
    for rep in 0..settings.repetitions {
        crate::progress(format!(
            "B12 metric updates, repetition {}/{}",
            rep + 1,
            settings.repetitions
        ));
        let started = Instant::now();
        for _ in 0..updates {
            std::hint::black_box(&family)
                .get_or_create(std::hint::black_box(&labels))
                .inc();
        }
        native.push(started.elapsed().as_secs_f64() * 1e6 / f64::from(updates));
        let started = Instant::now();
        instance
            .on_add(&context(), &command)
            .expect("metrics-probe's updates");
        plugin.push(started.elapsed().as_secs_f64() * 1e6 / f64::from(updates));
    }
    let expected = f64::from(updates) * settings.repetitions as f64;
    let exported = exported_counter(&registry);
    assert_eq!(
        exported,
        Some(expected),
        "every update of metrics-probe reached its series"
    );
    Row::ratio_of(
        "B12.a",
        "one labelled counter increment from a plugin, against prometheus-client's family look-up and inc",
        Unit::Micros,
        native,
        plugin,
        Goal::None,
    )
    .with_details(format!(
        "µs per update, {updates} updates in one handler call per repetition (the call itself divided among them)"
    ))
}

/// The value of `herald_plugin_metrics_probe__updates_total{kind="bench"}` as the host
/// exports it.
fn exported_counter(registry: &PluginMetricsRegistry) -> Option<f64> {
    let mut prometheus = prometheus_client::registry::Registry::default();
    prometheus.register_collector(Box::new(registry.clone()));
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &prometheus).expect("encoding");
    text.lines().find_map(|line| {
        let rest = line.strip_prefix("herald_plugin_metrics_probe__updates_total{")?;
        rest.contains("kind=\"bench\"")
            .then(|| rest.rsplit(' ').next()?.parse().ok())?
    })
}

/// B12.b and B12.c: one allowed `GET` to a server on loopback.
fn http_request(
    settings: &Settings,
    fixtures: &Fixtures,
    runtime: &tokio::runtime::Runtime,
) -> Vec<Row> {
    let requests = if settings.quick { 3 } else { REQUESTS };
    // The plugin's requests are spawned on the runtime its calls run in.
    let _entered = runtime.enter();
    let listener = runtime
        .block_on(TcpListener::bind("127.0.0.1:0"))
        .expect("binding the test server");
    let address = listener.local_addr().expect("its address");
    let server = runtime.spawn(serve(listener));
    let origin = format!("http://{address}");
    let grant: HttpGrant =
        serde_json::from_value(json!({"allowedOrigins": [origin]})).expect("the HTTP grant");
    let plugin = load(
        fixtures,
        herald_test_artifacts::EGRESS_PROBE,
        LoadOptions {
            grants: Grants {
                http: Some(grant),
                ..Grants::default()
            },
            ..LoadOptions::default()
        },
    );
    let mut instance = PluginInstance::new(plugin).expect("instantiating egress-probe");
    let command = command(json!({"url": format!("{origin}/ok"), "count": "1"}));
    let mut kept_alive = runtime.block_on(connect(address));
    let (mut fresh, mut pooled, mut plugin) = (Samples::new(), Samples::new(), Samples::new());
    fixtures.logs.take();
    for rep in 0..settings.repetitions {
        crate::progress(format!(
            "B12 HTTP requests, repetition {}/{}",
            rep + 1,
            settings.repetitions
        ));
        let started = Instant::now();
        runtime.block_on(async {
            for _ in 0..requests {
                let mut sender = connect(address).await;
                get(&mut sender, address).await;
            }
        });
        fresh.push(started.elapsed().as_secs_f64() * 1e6 / requests as f64);
        let started = Instant::now();
        runtime.block_on(async {
            for _ in 0..requests {
                get(&mut kept_alive, address).await;
            }
        });
        pooled.push(started.elapsed().as_secs_f64() * 1e6 / requests as f64);
        let started = Instant::now();
        for _ in 0..requests {
            instance
                .on_add(&context(), &command)
                .expect("egress-probe's request");
        }
        plugin.push(started.elapsed().as_secs_f64() * 1e6 / requests as f64);
    }
    server.abort();
    let answered = fixtures
        .logs
        .take()
        .iter()
        .filter(|(_, message)| message.contains(" status=200 bytes=2 "))
        .count();
    assert_eq!(
        answered,
        requests * settings.repetitions,
        "every request of egress-probe was answered 200"
    );
    let details = format!(
        "µs per GET of a 2-byte body from a server on loopback, {requests} sequential requests per repetition; the plugin's include the handler call making each"
    );
    vec![
        Row::ratio_of(
            "B12.b",
            "one allowed HTTP GET from a plugin, against native hyper over a new connection (as the host makes it)",
            Unit::Micros,
            fresh,
            plugin.clone(),
            Goal::None,
        )
        .with_details(details.clone()),
        Row::ratio_of(
            "B12.c",
            "the same GET from a plugin, against native hyper over a kept-alive connection",
            Unit::Micros,
            pooled,
            plugin,
            Goal::None,
        )
        .with_details(details),
    ]
}

/// Loads the fixture at `path` with `options`, its log lines collected.
fn load(fixtures: &Fixtures, path: &str, options: LoadOptions) -> LoadedPlugin {
    LoadedPlugin::load(
        fixtures.engine(),
        &herald_test_artifacts::bytes(path),
        LoadOptions {
            sink: fixtures.logs.clone(),
            log_rate: LogRate {
                lines_per_second: 1_000_000,
                burst: 1_000_000,
                ..LogRate::default()
            },
            ..options
        },
    )
    .unwrap_or_else(|e| panic!("loading {path}: {e}"))
}

/// A ConfigMap carrying `data`: a fixture's command (the fixtures' handlers
/// do not look at its labels, which only select it on a cluster).
fn command(data: serde_json::Value) -> String {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "command", "namespace": "bench-0", "resourceVersion": "1"},
        "data": data,
    })
    .to_string()
}

/// A hyper HTTP/1.1 client connection to `address`, its driver spawned.
async fn connect(
    address: std::net::SocketAddr,
) -> hyper::client::conn::http1::SendRequest<Empty<Bytes>> {
    let stream = TcpStream::connect(address).await.expect("connecting");
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("HTTP/1.1 handshake");
    tokio::spawn(connection);
    sender
}

/// One `GET /ok`, its body read.
async fn get(
    sender: &mut hyper::client::conn::http1::SendRequest<Empty<Bytes>>,
    address: std::net::SocketAddr,
) {
    let request = hyper::Request::get("/ok")
        .header(hyper::header::HOST, address.to_string())
        .body(Empty::new())
        .expect("a request");
    sender.ready().await.expect("the connection is ready");
    let response = sender.send_request(request).await.expect("a response");
    assert_eq!(response.status(), 200);
    let body = response.into_body().collect().await.expect("its body");
    assert_eq!(body.to_bytes().len(), 2);
}

/// Answers every request on every connection `200 ok`, keeping
/// connections open for as long as the client does.
async fn serve(listener: TcpListener) {
    while let Ok((mut stream, _)) = listener.accept().await {
        tokio::spawn(async move {
            let mut buffer = Vec::new();
            let mut chunk = [0u8; 4096];
            loop {
                while let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                    buffer.drain(..end + 4);
                    let response = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
                    if stream.write_all(response).await.is_err() {
                        return;
                    }
                }
                match stream.read(&mut chunk).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => buffer.extend_from_slice(&chunk[..n]),
                }
            }
        });
    }
}
