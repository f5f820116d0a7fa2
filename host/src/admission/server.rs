//! The admission server: HTTPS on its own port, HTTP/2 and HTTP/1.1,
//! `POST /validate/<plugin>` and `POST /mutate/<plugin>`, each review body
//! capped, each handshake bounded in time and the connections at once
//! bounded in number, so a flood of handshakes costs a bounded share of the
//! host.

use super::decide::{Answered, answer};
use super::plugins::AdmissionPlugins;
use super::tls::ServingCert;
use crate::webhook::Decision;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::{Method, Request, Response, StatusCode};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// The largest review body read: an object and its old state of up to
/// Kubernetes' 3 MiB each, and the review around them.
pub const MAX_REVIEW_BYTES: usize = 7 * 1024 * 1024;
/// How long a client has to finish its TLS handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections served at once; more wait to be accepted.
pub const MAX_CONNECTIONS: usize = 1024;

/// Serves reviews for `plugins` on `listener` with `cert` until the task is
/// dropped.
pub async fn serve(listener: TcpListener, cert: Arc<ServingCert>, plugins: Arc<AdmissionPlugins>) {
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(cert.server_config()));
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return;
        };
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let acceptor = acceptor.clone();
        let plugins = plugins.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let Ok(Ok(tls)) =
                tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await
            else {
                return;
            };
            let service = hyper::service::service_fn(move |request| {
                let plugins = plugins.clone();
                async move { Ok::<_, Infallible>(respond(&plugins, request).await) }
            });
            let builder =
                hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new());
            let _ = builder
                .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                .await;
        });
    }
}

/// The answer to one request.
async fn respond(
    plugins: &AdmissionPlugins,
    request: Request<hyper::body::Incoming>,
) -> Response<Full<Bytes>> {
    let path = request.uri().path().to_owned();
    let Some((decision, plugin)) = route(&path) else {
        return text(
            StatusCode::NOT_FOUND,
            "admission paths are /validate/<plugin> and /mutate/<plugin>",
        );
    };
    if request.method() != Method::POST {
        return text(StatusCode::METHOD_NOT_ALLOWED, "reviews are POSTed");
    }
    let timeout = request.uri().query().and_then(query_timeout);
    let body = match Limited::new(request.into_body(), MAX_REVIEW_BYTES)
        .collect()
        .await
    {
        Ok(body) => body.to_bytes(),
        Err(error) => {
            let message = if error.is::<http_body_util::LengthLimitError>() {
                format!("the review is larger than {MAX_REVIEW_BYTES} bytes")
            } else {
                format!("the review could not be read: {error}")
            };
            return text(StatusCode::PAYLOAD_TOO_LARGE, &message);
        }
    };
    let Answered { status, body } = answer(plugins, plugin, decision, &body, timeout).await;
    let content_type = if status == 200 {
        "application/json"
    } else {
        "text/plain; charset=utf-8"
    };
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .body(Full::new(Bytes::from(body)))
        .expect("a valid response")
}

/// The decision and plugin a path names: `/validate/<plugin>` or
/// `/mutate/<plugin>`, the name a plugin name.
fn route(path: &str) -> Option<(Decision, &str)> {
    let rest = path.strip_prefix('/')?;
    let (decision, plugin) = rest.split_once('/')?;
    let decision = Decision::parse(decision)?;
    crate::plugin::is_plugin_name(plugin).then_some((decision, plugin))
}

/// The `timeout` the API server puts in the webhook's query (`10s`, Go's
/// duration syntax in whole seconds or milliseconds).
fn query_timeout(query: &str) -> Option<Duration> {
    let value = form_urlencoded::parse(query.as_bytes())
        .find(|(key, _)| key == "timeout")
        .map(|(_, value)| value.into_owned())?;
    if let Some(ms) = value.strip_suffix("ms") {
        return ms.parse().ok().map(Duration::from_millis);
    }
    value
        .strip_suffix('s')?
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0 && *s <= 3600.0)
        .map(Duration::from_secs_f64)
}

fn text(status: StatusCode, message: &str) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header("content-type", "text/plain; charset=utf-8")
        .body(Full::new(Bytes::from(format!("{message}\n"))))
        .expect("a valid response")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_a_decision_and_a_plugin() {
        assert_eq!(
            route("/validate/image-policy"),
            Some((Decision::Validate, "image-policy"))
        );
        assert_eq!(
            route("/mutate/defaults"),
            Some((Decision::Mutate, "defaults"))
        );
        assert_eq!(route("/validate/"), None);
        assert_eq!(route("/validate/a/b"), None);
        assert_eq!(route("/admit/x"), None);
        assert_eq!(route("/validate/Bad_Name"), None);
    }

    #[test]
    fn the_api_servers_timeout_is_read_from_the_query() {
        assert_eq!(query_timeout("timeout=10s"), Some(Duration::from_secs(10)));
        assert_eq!(
            query_timeout("x=1&timeout=1500ms"),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(query_timeout("timeout=abc"), None);
        assert_eq!(query_timeout("timeout=-1s"), None);
        assert_eq!(query_timeout(""), None);
    }
}
