//! The policy driven through the `wasi:http` hook, against real servers on
//! 127.0.0.1 started by each test. Nothing here waits on a clock to
//! synchronize: servers report what they saw on channels, and "no
//! connection" is proven by a later connection being the first one accepted.

use super::*;
use crate::capability::{ActionStats, ActionStatsCollector, Declared, Grants};
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const PLUGIN: &str = "hooked";
const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello";
/// A bound no test comes near unless what it checks is broken.
const NEVER: Duration = Duration::from_secs(20);

/// A server on 127.0.0.1 answering each connection with its handler.
struct Server {
    address: SocketAddr,
    connections: Arc<AtomicUsize>,
}

impl Server {
    async fn start<F, Fut>(handler: F) -> Server
    where
        F: Fn(TcpStream) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let connections = Arc::new(AtomicUsize::new(0));
        let accepted = connections.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                accepted.fetch_add(1, SeqCst);
                tokio::spawn(handler(stream));
            }
        });
        Server {
            address,
            connections,
        }
    }

    /// A server answering every request with `response`.
    async fn canned(response: &'static [u8]) -> Server {
        Server::start(move |mut stream| async move {
            read_head(&mut stream).await;
            let _ = stream.write_all(response).await;
        })
        .await
    }

    fn port(&self) -> u16 {
        self.address.port()
    }

    fn url(&self, host: &str) -> String {
        format!("http://{host}:{}/hook?token=secret", self.port())
    }

    /// Connections accepted so far.
    fn connections(&self) -> usize {
        self.connections.load(SeqCst)
    }

    /// Proves no connection came before now: a connection made now is
    /// accepted after any earlier one, so it must be the first.
    async fn assert_untouched(&self) {
        let _probe = TcpStream::connect(self.address).await.unwrap();
        tokio::time::timeout(NEVER, async {
            while self.connections() == 0 {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the probe is accepted");
        assert_eq!(self.connections(), 1, "the refused request never connected");
    }
}

/// Reads a request's head, up to its blank line.
async fn read_head(stream: &mut (impl AsyncRead + Unpin)) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte).await {
            Ok(1) => head.push(byte[0]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&head).into_owned()
}

fn origins(origins: &[&str]) -> HttpGrant {
    HttpGrant::new(origins.iter().map(|o| o.parse().unwrap()).collect())
}

/// A grant of the test server's origin, `http://127.0.0.1:<port>`.
fn local(server: &Server) -> HttpGrant {
    origins(&[format!("http://127.0.0.1:{}", server.port()).as_str()])
}

fn egress(grant: HttpGrant) -> Egress {
    Egress::new(PLUGIN, Some(grant), Arc::default())
}

fn request(method: &str, url: &str) -> http::Request<WasiBody> {
    let uri: http::Uri = url.parse().unwrap();
    let authority = uri.authority().unwrap().to_string();
    http::Request::builder()
        .method(method)
        .uri(uri)
        .header(http::header::HOST, authority)
        .body(
            Empty::<Bytes>::new()
                .map_err(|never| match never {})
                .boxed_unsync(),
        )
        .unwrap()
}

/// One request through the hook, as wasi:http's outgoing handler makes it.
async fn send(
    hooks: &mut EgressHooks,
    method: &str,
    url: &str,
) -> Result<http::Response<WasiBody>, Error> {
    let sent = hooks.send_request(request(method, url), None, Box::new(async { Ok(()) }));
    let (response, io) = Pin::from(sent).await?;
    Pin::from(io).await?;
    Ok(response)
}

/// The body's bytes up to its end or its error.
async fn read_body(response: http::Response<WasiBody>) -> (Vec<u8>, Option<Error>) {
    let mut body = response.into_body();
    let mut bytes = Vec::new();
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(frame) => {
                if let Ok(data) = frame.into_data() {
                    bytes.extend_from_slice(&data);
                }
            }
            Err(error) => return (bytes, Some(error)),
        }
    }
    (bytes, None)
}

/// A resolver answering from a table (unknown names: no address).
fn resolver(table: &[(&str, &[&str])]) -> Resolver {
    let table: Vec<(String, Vec<IpAddr>)> = table
        .iter()
        .map(|(name, ips)| {
            (
                name.to_string(),
                ips.iter().map(|ip| ip.parse().unwrap()).collect(),
            )
        })
        .collect();
    Arc::new(move |host, port| {
        let found: Vec<SocketAddr> = table
            .iter()
            .filter(|(name, _)| name == host)
            .flat_map(|(_, ips)| ips.iter().map(move |ip| SocketAddr::new(*ip, port)))
            .collect();
        Box::pin(async move { Ok(found) })
    })
}

fn count(egress: &Egress, outcome: Outcome) -> u64 {
    egress.stats().requests(PLUGIN, outcome)
}

#[tokio::test]
async fn a_request_to_an_allowed_origin_gets_its_response() {
    let server = Server::canned(OK).await;
    let egress = Arc::new(egress(local(&server)));
    let mut hooks = egress.hooks();
    let response = send(&mut hooks, "GET", &server.url("127.0.0.1"))
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let (body, error) = read_body(response).await;
    assert_eq!(body, b"hello");
    assert!(error.is_none());
    assert_eq!(count(&egress, Outcome::Ok), 1);
}

#[tokio::test]
async fn a_plugin_without_a_grant_is_refused_before_any_connection() {
    let server = Server::canned(OK).await;
    let egress = Arc::new(Egress::denied(PLUGIN));
    let refused = send(&mut egress.hooks(), "GET", &server.url("127.0.0.1")).await;
    assert!(matches!(refused, Err(Error::HttpRequestDenied)));
    assert_eq!(count(&egress, Outcome::DeniedOrigin), 1);
    server.assert_untouched().await;
}

#[tokio::test]
async fn a_request_to_an_origin_not_granted_is_refused_before_any_connection() {
    let server = Server::canned(OK).await;
    let other_port = format!("http://127.0.0.1:{}", server.port() ^ 1);
    let egress = Arc::new(egress(origins(&[other_port.as_str(), "https://127.0.0.1"])));
    let mut hooks = egress.hooks();
    for url in [
        server.url("127.0.0.1"),
        format!("https://127.0.0.1:{}/", server.port()),
        format!("http://127.0.0.2:{}/", server.port()),
    ] {
        let refused = send(&mut hooks, "POST", &url).await;
        assert!(matches!(refused, Err(Error::HttpRequestDenied)), "{url}");
    }
    assert_eq!(count(&egress, Outcome::DeniedOrigin), 3);
    server.assert_untouched().await;
}

#[tokio::test]
async fn localhost_is_another_origin_than_the_loopback_address_granted_literally() {
    let server = Server::canned(OK).await;
    let literal = format!("http://127.0.0.1:{}", server.port());
    let egress = Arc::new(egress(origins(&[literal.as_str()])));
    let refused = send(&mut egress.hooks(), "GET", &server.url("localhost")).await;
    assert!(matches!(refused, Err(Error::HttpRequestDenied)));
    server.assert_untouched().await;
}

#[tokio::test]
async fn a_granted_localhost_origin_may_reach_loopback() {
    let server = Server::canned(OK).await;
    let localhost = format!("http://localhost:{}", server.port());
    let egress = Arc::new(egress(origins(&[localhost.as_str()])));
    let response = send(&mut egress.hooks(), "GET", &server.url("localhost"))
        .await
        .unwrap();
    assert_eq!(read_body(response).await.0, b"hello");
}

#[tokio::test]
async fn a_name_resolving_to_loopback_link_local_or_metadata_is_refused_before_connecting() {
    let server = Server::canned(OK).await;
    let port = server.port();
    let granted: Vec<String> = ["loop", "rebind", "meta", "mapped", "zero"]
        .iter()
        .map(|name| format!("http://{name}.test:{port}"))
        .collect();
    let granted: Vec<&str> = granted.iter().map(String::as_str).collect();
    let egress = Arc::new(egress(origins(&granted)).with_resolver(resolver(&[
        ("loop.test", &["127.0.0.1"]),
        // One bad address among good ones refuses the request.
        ("rebind.test", &["10.0.0.7", "127.0.0.1"]),
        ("meta.test", &["169.254.169.254"]),
        ("mapped.test", &["::ffff:169.254.169.254"]),
        ("zero.test", &["0.0.0.0"]),
    ])));
    let mut hooks = egress.hooks();
    for name in ["loop", "rebind", "meta", "mapped", "zero"] {
        let url = server.url(&format!("{name}.test"));
        let refused = send(&mut hooks, "GET", &url).await;
        assert!(
            matches!(refused, Err(Error::DestinationIpProhibited)),
            "{url}: {refused:?}"
        );
    }
    assert_eq!(count(&egress, Outcome::DeniedAddress), 5);
    server.assert_untouched().await;
}

#[tokio::test]
async fn a_link_local_literal_not_granted_is_refused() {
    let egress = Arc::new(egress(origins(&["http://hooks.test"])));
    let mut hooks = egress.hooks();
    for url in [
        "http://169.254.169.254/latest/meta-data/",
        "http://[fe80::1]/",
        "http://[::ffff:169.254.169.254]/",
    ] {
        let refused = send(&mut hooks, "GET", url).await;
        assert!(matches!(refused, Err(Error::HttpRequestDenied)), "{url}");
    }
}

#[tokio::test]
async fn a_response_announcing_more_than_the_cap_is_refused_when_its_headers_arrive() {
    const BIG: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2048\r\nConnection: close\r\n\r\n";
    let server = Server::start(|mut stream| async move {
        let head = read_head(&mut stream).await;
        let _ = stream.write_all(BIG).await;
        if !head.starts_with("HEAD") {
            let _ = stream.write_all(&[b'x'; 2048]).await;
        }
    })
    .await;
    let egress = Arc::new(egress(HttpGrant {
        max_response_size: 1024,
        ..local(&server)
    }));
    let mut hooks = egress.hooks();
    let refused = send(&mut hooks, "GET", &server.url("127.0.0.1")).await;
    assert!(matches!(
        refused,
        Err(Error::HttpResponseBodySize(Some(2048)))
    ));
    assert_eq!(count(&egress, Outcome::TooLarge), 1);
    // A HEAD response announces a body it does not have.
    let head = send(&mut hooks, "HEAD", &server.url("127.0.0.1"))
        .await
        .unwrap();
    let (body, error) = read_body(head).await;
    assert!(body.is_empty() && error.is_none());
    assert_eq!(count(&egress, Outcome::Ok), 1);
}

/// A chunked response of `chunks` chunks of `size` bytes.
async fn chunked_server(chunks: usize, size: usize) -> Server {
    Server::start(move |mut stream| async move {
        read_head(&mut stream).await;
        let mut response = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        for _ in 0..chunks {
            response.extend_from_slice(format!("{size:x}\r\n").as_bytes());
            response.extend(std::iter::repeat_n(b'x', size));
            response.extend_from_slice(b"\r\n");
        }
        response.extend_from_slice(b"0\r\n\r\n");
        let _ = stream.write_all(&response).await;
    })
    .await
}

#[tokio::test]
async fn a_chunked_body_passing_the_cap_is_cut_and_never_delivered_past_it() {
    let server = chunked_server(3, 600).await;
    let egress = Arc::new(egress(HttpGrant {
        max_response_size: 1024,
        ..local(&server)
    }));
    let response = send(&mut egress.hooks(), "GET", &server.url("127.0.0.1"))
        .await
        .unwrap();
    let (body, error) = read_body(response).await;
    assert!(body.len() <= 1024, "{} bytes delivered", body.len());
    assert!(matches!(error, Some(Error::HttpResponseBodySize(Some(n))) if n > 1024));
    assert_eq!(count(&egress, Outcome::TooLarge), 1);
}

#[tokio::test]
async fn a_chunked_body_of_exactly_the_cap_is_read_whole() {
    let server = chunked_server(2, 512).await;
    let egress = Arc::new(egress(HttpGrant {
        max_response_size: 1024,
        ..local(&server)
    }));
    let response = send(&mut egress.hooks(), "GET", &server.url("127.0.0.1"))
        .await
        .unwrap();
    let (body, error) = read_body(response).await;
    assert_eq!(body.len(), 1024);
    assert!(error.is_none());
    assert_eq!(count(&egress, Outcome::Ok), 1);
}

/// A server that reads the request, then holds the connection open and
/// says nothing.
async fn silent_server() -> Server {
    Server::start(|mut stream| async move {
        read_head(&mut stream).await;
        std::future::pending::<()>().await;
        drop(stream);
    })
    .await
}

#[tokio::test]
async fn a_server_that_never_answers_times_out_within_the_calls_deadline() {
    let server = silent_server().await;
    let egress = Arc::new(egress(local(&server)));
    let mut hooks = egress.hooks();
    let started = Instant::now();
    hooks.set_deadline(Some(started + Duration::from_millis(300)));
    let answer = tokio::time::timeout(NEVER, send(&mut hooks, "GET", &server.url("127.0.0.1")))
        .await
        .expect("the request ends within its budget, long before this bound");
    assert!(matches!(answer, Err(Error::HttpResponseTimeout)));
    assert!(started.elapsed() < NEVER);
    assert_eq!(count(&egress, Outcome::Timeout), 1);
}

#[tokio::test]
async fn a_body_that_never_ends_times_out_at_the_grants_timeout() {
    let server = Server::start(|mut stream| async move {
        read_head(&mut stream).await;
        let _ = stream
            .write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
            .await;
        std::future::pending::<()>().await;
        drop(stream);
    })
    .await;
    let egress = Arc::new(egress(HttpGrant {
        timeout: Duration::from_millis(300),
        ..local(&server)
    }));
    let response = send(&mut egress.hooks(), "GET", &server.url("127.0.0.1"))
        .await
        .unwrap();
    let (body, error) = tokio::time::timeout(NEVER, read_body(response))
        .await
        .expect("the body ends at the request's deadline");
    assert_eq!(body, b"hello");
    assert!(matches!(error, Some(Error::HttpResponseTimeout)));
    assert_eq!(count(&egress, Outcome::Timeout), 1);
}

#[tokio::test]
async fn a_call_with_no_time_left_sends_nothing() {
    let server = Server::canned(OK).await;
    let egress = Arc::new(egress(local(&server)));
    let mut hooks = egress.hooks();
    hooks.set_deadline(Some(Instant::now()));
    let answer = send(&mut hooks, "GET", &server.url("127.0.0.1")).await;
    assert!(matches!(answer, Err(Error::ConnectionTimeout)));
    server.assert_untouched().await;
}

#[tokio::test]
async fn no_more_than_max_concurrent_requests_are_in_flight_at_once() {
    let go = Arc::new(tokio::sync::Semaphore::new(0));
    let (accepted, mut arrivals) = tokio::sync::mpsc::unbounded_channel();
    let in_flight = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let server = {
        let (go, in_flight, most) = (go.clone(), in_flight.clone(), most.clone());
        Server::start(move |mut stream| {
            let (go, accepted) = (go.clone(), accepted.clone());
            let (in_flight, most) = (in_flight.clone(), most.clone());
            async move {
                read_head(&mut stream).await;
                most.fetch_max(in_flight.fetch_add(1, SeqCst) + 1, SeqCst);
                accepted.send(()).unwrap();
                go.acquire().await.unwrap().forget();
                // Counted out before answering: the client's slot is given
                // back only after it has the whole answer.
                in_flight.fetch_sub(1, SeqCst);
                let _ = stream.write_all(OK).await;
            }
        })
        .await
    };
    let egress = Arc::new(egress(HttpGrant {
        max_concurrent: 2,
        ..local(&server)
    }));
    let mut requests = tokio::task::JoinSet::new();
    for _ in 0..5 {
        let mut hooks = egress.hooks();
        let url = server.url("127.0.0.1");
        requests.spawn(async move {
            let response = send(&mut hooks, "GET", &url).await.unwrap();
            read_body(response).await
        });
    }
    for _ in 0..2 {
        arrivals.recv().await.unwrap();
    }
    for _ in 2..5 {
        assert_eq!(in_flight.load(SeqCst), 2);
        // One answer lets exactly one more request in.
        go.add_permits(1);
        arrivals.recv().await.unwrap();
    }
    go.add_permits(2);
    while let Some(done) = requests.join_next().await {
        let (body, error) = done.unwrap();
        assert_eq!(body, b"hello");
        assert!(error.is_none());
    }
    assert_eq!(most.load(SeqCst), 2);
    assert_eq!(server.connections(), 5);
    assert_eq!(count(&egress, Outcome::Ok), 5);
}

#[tokio::test]
async fn a_body_left_unread_gives_its_slot_back_at_the_requests_deadline() {
    let answered = Arc::new(AtomicUsize::new(0));
    let server = {
        let answered = answered.clone();
        Server::start(move |mut stream| {
            let first = answered.fetch_add(1, SeqCst) == 0;
            async move {
                read_head(&mut stream).await;
                if first {
                    let _ = stream
                        .write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                        .await;
                    std::future::pending::<()>().await;
                }
                let _ = stream.write_all(OK).await;
            }
        })
        .await
    };
    let egress = Arc::new(egress(HttpGrant {
        max_concurrent: 1,
        ..local(&server)
    }));
    let mut first = egress.hooks();
    first.set_deadline(Some(Instant::now() + Duration::from_millis(300)));
    let unread = send(&mut first, "GET", &server.url("127.0.0.1"))
        .await
        .unwrap();
    // The only slot is the unread body's until its request's deadline.
    let second = tokio::time::timeout(
        NEVER,
        send(&mut egress.hooks(), "GET", &server.url("127.0.0.1")),
    )
    .await
    .expect("the slot comes back at the first request's deadline")
    .unwrap();
    assert_eq!(read_body(second).await.0, b"hello");
    drop(unread);
}

const CA: &[u8] = include_bytes!("testdata/ca.pem");
const CERT: &[u8] = include_bytes!("testdata/server.pem");
const KEY: &[u8] = include_bytes!("testdata/server.key");

/// An HTTPS server with the test CA's certificate for localhost and
/// 127.0.0.1.
async fn tls_server() -> Server {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from_pem_slice(CERT).unwrap()],
            PrivateKeyDer::from_pem_slice(KEY).unwrap(),
        )
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    Server::start(move |stream| {
        let acceptor = acceptor.clone();
        async move {
            let Ok(mut stream) = acceptor.accept(stream).await else {
                return;
            };
            read_head(&mut stream).await;
            let _ = stream.write_all(OK).await;
            let _ = stream.shutdown().await;
        }
    })
    .await
}

fn test_ca() -> rustls::RootCertStore {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(CA).unwrap())
        .unwrap();
    roots
}

#[tokio::test]
async fn https_reaches_a_server_whose_certificate_the_roots_trust() {
    let server = tls_server().await;
    let port = server.port();
    let granted = [
        format!("https://localhost:{port}"),
        format!("https://127.0.0.1:{port}"),
    ];
    let egress = Arc::new(
        egress(origins(&[granted[0].as_str(), granted[1].as_str()])).with_roots(test_ca()),
    );
    let mut hooks = egress.hooks();
    for url in [
        format!("https://localhost:{port}/"),
        format!("https://127.0.0.1:{port}/"),
    ] {
        let response = send(&mut hooks, "GET", &url).await.unwrap();
        assert_eq!(read_body(response).await.0, b"hello", "{url}");
    }
}

#[tokio::test]
async fn https_to_a_server_the_roots_do_not_trust_is_a_certificate_error() {
    let server = tls_server().await;
    let origin = format!("https://127.0.0.1:{}", server.port());
    let egress =
        Arc::new(egress(origins(&[origin.as_str()])).with_roots(rustls::RootCertStore::empty()));
    let refused = send(&mut egress.hooks(), "GET", &format!("{origin}/")).await;
    assert!(
        matches!(refused, Err(Error::TlsCertificateError)),
        "{refused:?}"
    );
    assert_eq!(count(&egress, Outcome::Error), 1);
}

#[tokio::test]
async fn requests_are_counted_on_the_metrics_page_by_outcome() {
    let server = Server::canned(OK).await;
    let stats = Arc::new(ActionStats::default());
    let origin = format!("http://127.0.0.1:{}", server.port());
    let egress = Arc::new(Egress::new(
        PLUGIN,
        Some(origins(&[origin.as_str()])),
        stats.http.clone(),
    ));
    let mut hooks = egress.hooks();
    let response = send(&mut hooks, "GET", &server.url("127.0.0.1"))
        .await
        .unwrap();
    read_body(response).await;
    let _ = send(&mut hooks, "GET", "https://elsewhere.test/").await;
    let mut registry = prometheus_client::registry::Registry::default();
    registry.register_collector(Box::new(ActionStatsCollector(stats)));
    let text = crate::telemetry::encode(&registry);
    for line in [
        "herald_plugin_http_requests_total{plugin=\"hooked\",outcome=\"ok\"} 1",
        "herald_plugin_http_requests_total{plugin=\"hooked\",outcome=\"denied-origin\"} 1",
        "herald_plugin_http_request_duration_seconds_count{plugin=\"hooked\"} 1",
    ] {
        assert!(text.contains(line), "{line} in:\n{text}");
    }
}

#[test]
fn audit_urls_leave_out_queries_and_user_information() {
    let url = |text: &str| audit_url(&text.parse().unwrap());
    assert_eq!(
        url("https://hooks.example.com/services/x?token=secret"),
        "https://hooks.example.com/services/x?…"
    );
    assert_eq!(
        url("http://user:pw@10.0.0.7:8080/a"),
        "http://10.0.0.7:8080/a"
    );
}

fn audit() -> Arc<crate::capability::AuditLog> {
    Arc::new(crate::capability::AuditLog::new(
        PLUGIN,
        Default::default(),
        None,
    ))
}

#[test]
fn http_is_granted_by_an_http_grant_and_needs_the_manifests_declaration() {
    let declared = [CAPABILITY.to_owned()];
    let declaring = |capabilities: &'static [String]| Declared {
        plugin: PLUGIN,
        capabilities,
        writes: &[],
        reads: &[],
    };
    let declared: &'static [String] = Box::leak(Box::new(declared));
    let grant = origins(&["https://hooks.example.com"]);
    // Declared, not granted: not loaded, naming the grant to add.
    let error = Grants::default()
        .authorize(declaring(declared), None, audit())
        .unwrap_err();
    assert!(
        matches!(&error, crate::capability::NotGranted::Grant { key: "http", plugin, .. } if plugin == PLUGIN),
        "{error:?}"
    );
    assert!(
        error
            .to_string()
            .contains(&format!("plugins.{PLUGIN}.grants.http")),
        "{error}"
    );
    // Declared and granted.
    let granted = Grants {
        http: Some(grant.clone()),
        ..Grants::default()
    };
    let authorized = granted
        .authorize(declaring(declared), None, audit())
        .unwrap();
    assert_eq!(Egress::for_plugin(&authorized).grant(), Some(&grant));
    // Granted, not declared: its requests are refused.
    let authorized = granted.authorize(declaring(&[]), None, audit()).unwrap();
    assert_eq!(Egress::for_plugin(&authorized).grant(), None);
    // The offline tools' grant passes the check and grants no origin.
    let offline = Grants::all_declared()
        .authorize(declaring(declared), None, audit())
        .unwrap();
    assert_eq!(Egress::for_plugin(&offline).grant(), None);
}
