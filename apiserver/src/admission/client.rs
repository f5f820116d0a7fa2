//! Calling one webhook: the `AdmissionReview` POSTed as JSON over HTTPS (HTTP/1.1, rustls
//! with the `ring` provider), the server's certificate checked against the webhook's
//! `caBundle` (the system's roots when it has none), the whole call bounded by the
//! webhook's `timeoutSeconds`, the answer's body by [`MAX_RESPONSE`].
//!
//! As kube-apiserver does, the URL carries `?timeout=<seconds>s` for the webhook to know
//! its deadline, and a `service` reference is called as `https://<name>.<namespace>.svc`
//! (the name its certificate must hold) at the address [`WebhookServices`] gives it.
//! Errors are worded as Go's HTTP client words them where that is cheap (`Post "<url>":
//! context deadline exceeded`, `… connect: connection refused`); TLS errors are rustls'.

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use http::{Request, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::rt::TokioIo;
use rustls::RootCertStore;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::net::TcpStream;

use super::config::{Endpoint, Webhook};
use super::services::WebhookServices;

/// The largest answer read from a webhook (3 MiB, as kube-apiserver's limit on a webhook's
/// response).
pub(crate) const MAX_RESPONSE: usize = 3 * 1024 * 1024;

/// Where one call goes.
struct Target {
    /// The URL as shown in errors, with its `timeout` parameter.
    url: String,
    /// The path and query sent.
    path_and_query: String,
    /// The `Host` header.
    host: String,
    /// The name the certificate must hold.
    server_name: String,
    /// Where to connect (`None`: resolve `host`).
    addr: Option<SocketAddr>,
    /// Host and port to resolve when `addr` is `None`.
    lookup: (String, u16),
}

fn target(hook: &Webhook, services: &WebhookServices) -> Result<Target, String> {
    let timeout = format!("timeout={}s", hook.timeout.as_secs());
    match &hook.endpoint {
        Endpoint::Url(url) => {
            let uri: http::Uri = url.parse().map_err(|e| format!("parse {url:?}: {e}"))?;
            let host = uri.host().unwrap_or_default().to_string();
            let port = uri.port_u16().unwrap_or(443);
            let path = match uri.path() {
                "" => "/",
                p => p,
            };
            let bare = host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_string();
            Ok(Target {
                url: format!("{}?{timeout}", url.trim_end_matches('?')),
                path_and_query: format!("{path}?{timeout}"),
                host: uri.authority().map(|a| a.to_string()).unwrap_or(host),
                server_name: bare.clone(),
                addr: None,
                lookup: (bare, port),
            })
        }
        Endpoint::Service {
            namespace,
            name,
            path,
            port,
        } => {
            let dns = format!("{name}.{namespace}.svc");
            let url = format!("https://{dns}:{port}{path}?{timeout}");
            let addr = services.resolve(namespace, name, *port).ok_or_else(|| {
                format!(
                    "Post {url:?}: service \"{namespace}/{name}\" port {port} has no address \
                     (the embedded API server has no cluster network: give it one with \
                     ApiServerConfig::webhook_services)"
                )
            })?;
            Ok(Target {
                url,
                path_and_query: format!("{path}?{timeout}"),
                host: format!("{dns}:{port}"),
                server_name: dns,
                addr: Some(addr),
                lookup: (String::new(), *port),
            })
        }
    }
}

/// The system's trust roots, loaded once (for webhooks without a `caBundle`).
fn system_roots() -> Arc<RootCertStore> {
    static ROOTS: OnceLock<Arc<RootCertStore>> = OnceLock::new();
    ROOTS
        .get_or_init(|| {
            let mut roots = RootCertStore::empty();
            for cert in rustls_native_certs::load_native_certs().certs {
                let _ = roots.add(cert);
            }
            Arc::new(roots)
        })
        .clone()
}

fn tls_config(ca_bundle: &[u8]) -> Result<Arc<rustls::ClientConfig>, String> {
    let roots = if ca_bundle.is_empty() {
        system_roots()
    } else {
        let mut roots = RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(ca_bundle) {
            let cert = cert.map_err(|e| format!("caBundle: {e}"))?;
            roots.add(cert).map_err(|e| format!("caBundle: {e}"))?;
        }
        if roots.is_empty() {
            return Err("caBundle holds no PEM certificate".into());
        }
        Arc::new(roots)
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("tls: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// POST `body` to the webhook and return its answer's body; the error is the cause after
/// `failed to call webhook: `.
pub(crate) async fn post(
    hook: &Webhook,
    services: &WebhookServices,
    body: Bytes,
) -> Result<Bytes, String> {
    let target = target(hook, services)?;
    let url = target.url.clone();
    match tokio::time::timeout(hook.timeout, exchange(&hook.ca_bundle, target, body)).await {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(cause)) => Err(format!("Post {url:?}: {cause}")),
        Err(_) => Err(format!("Post {url:?}: context deadline exceeded")),
    }
}

async fn exchange(ca_bundle: &[u8], target: Target, body: Bytes) -> Result<Bytes, String> {
    let tls = tls_config(ca_bundle)?;
    let addrs: Vec<SocketAddr> = match target.addr {
        Some(addr) => vec![addr],
        None => tokio::net::lookup_host((target.lookup.0.as_str(), target.lookup.1))
            .await
            .map_err(|e| format!("dial tcp: lookup {}: {e}", target.lookup.0))?
            .collect(),
    };
    let mut last = format!("dial tcp: lookup {}: no addresses", target.lookup.0);
    let mut tcp = None;
    for addr in addrs {
        match TcpStream::connect(addr).await {
            Ok(stream) => {
                tcp = Some(stream);
                break;
            }
            Err(e) => last = format!("dial tcp {addr}: connect: {}", io_text(&e)),
        }
    }
    let tcp = tcp.ok_or(last)?;
    let _ = tcp.set_nodelay(true);
    let name = ServerName::try_from(target.server_name.clone())
        .map_err(|e| format!("tls: invalid server name {:?}: {e}", target.server_name))?;
    let stream = tokio_rustls::TlsConnector::from(tls)
        .connect(name, tcp)
        .await
        .map_err(|e| format!("tls: failed to verify certificate or handshake: {e}"))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    let request = Request::post(target.path_and_query.as_str())
        .header(header::HOST, target.host.as_str())
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, */*")
        .header(header::USER_AGENT, "herald-apiserver")
        .body(Full::new(body))
        .map_err(|e| e.to_string())?;
    let answer = async move {
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status();
        let body = Limited::new(response.into_body(), MAX_RESPONSE)
            .collect()
            .await
            .map_err(|e| format!("reading the answer (at most {MAX_RESPONSE} bytes): {e}"))?
            .to_bytes();
        if !status.is_success() {
            return Err(format!(
                "the server responded with the status code {} but did not return more \
                 information",
                status.as_u16()
            ));
        }
        Ok(body)
    };
    tokio::pin!(answer);
    tokio::pin!(connection);
    tokio::select! {
        biased;
        result = &mut answer => result,
        ended = &mut connection => match ended {
            Err(e) => Err(e.to_string()),
            Ok(()) => answer.await,
        },
    }
}

/// An I/O error as Go words the common ones.
fn io_text(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::ConnectionRefused => "connection refused".into(),
        _ => e.to_string(),
    }
}
