//! The admission server: HTTPS on its own port, HTTP/2 and HTTP/1.1,
//! `POST /validate/<plugin>` and `POST /mutate/<plugin>`, each review body
//! capped, each handshake bounded in time, the handshakes under way and the
//! connections served bounded in number: a flood of connections that never
//! finish their handshake costs a bounded share of the host and evicts its
//! own oldest, so a client that completes its handshake (the API server)
//! still gets through.

use super::decide::{Answered, answer};
use super::plugins::AdmissionPlugins;
use super::tls::ServingCert;
use crate::webhook::Decision;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::{Method, Request, Response, StatusCode};
use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, oneshot};

/// The largest review body read: an object and its old state of up to
/// Kubernetes' 3 MiB each, and the review around them.
pub const MAX_REVIEW_BYTES: usize = 7 * 1024 * 1024;
/// How long a client has to finish its TLS handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections served at once (their handshake done); past it, a new one
/// is closed.
pub const MAX_CONNECTIONS: usize = 1024;
/// Handshakes under way at once; past it, the oldest is dropped for the
/// newest.
pub const MAX_PENDING_HANDSHAKES: usize = 256;

/// Serves reviews for `plugins` on `listener` with `cert` until the task is
/// dropped.
pub async fn serve(listener: TcpListener, cert: Arc<ServingCert>, plugins: Arc<AdmissionPlugins>) {
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(cert.server_config()));
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let handshakes = Arc::new(Handshakes::default());
    loop {
        let stream = crate::accept::next(&listener, "admission").await;
        let (handshake, evicted) = handshakes.begin();
        let (acceptor, plugins, slots, handshakes) = (
            acceptor.clone(),
            plugins.clone(),
            slots.clone(),
            handshakes.clone(),
        );
        tokio::spawn(async move {
            let accepted = tokio::select! {
                accepted = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)) => accepted,
                _ = evicted => return,
            };
            handshakes.end(handshake);
            let Ok(Ok(tls)) = accepted else {
                return;
            };
            let Ok(_slot) = slots.try_acquire_owned() else {
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

/// The handshakes under way, oldest first, each with what ends it early.
#[derive(Debug, Default)]
struct Handshakes {
    pending: Mutex<VecDeque<(u64, oneshot::Sender<()>)>>,
    next: AtomicU64,
}

impl Handshakes {
    /// Notes a new handshake, evicting the oldest when
    /// [`MAX_PENDING_HANDSHAKES`] are under way; the receiver completes if
    /// this one is evicted in turn.
    fn begin(&self) -> (u64, oneshot::Receiver<()>) {
        let (evict, evicted) = oneshot::channel();
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        if pending.len() >= MAX_PENDING_HANDSHAKES {
            // Dropping its sender ends the oldest handshake.
            pending.pop_front();
        }
        pending.push_back((id, evict));
        (id, evicted)
    }

    /// The handshake `id` is over (done, failed or timed out).
    fn end(&self, id: u64) {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(at) = pending.iter().position(|(pending, _)| *pending == id) {
            pending.remove(at);
        }
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
    let started = std::time::Instant::now();
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
        // Answered by the plugin (or for it, by its failure policy).
        plugins
            .stats()
            .record_request(plugin, decision.as_str(), started.elapsed());
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

    #[test]
    fn past_the_bound_a_new_handshake_evicts_the_oldest_and_a_finished_one_leaves() {
        let handshakes = Handshakes::default();
        let mut begun: Vec<(u64, oneshot::Receiver<()>)> = (0..MAX_PENDING_HANDSHAKES)
            .map(|_| handshakes.begin())
            .collect();
        // A finished handshake leaves room without evicting anyone.
        let (finished, _) = begun.remove(1);
        handshakes.end(finished);
        let (_, mut newest) = handshakes.begin();
        assert!(begun.iter_mut().all(|(_, r)| {
            r.try_recv()
                .is_err_and(|e| e == oneshot::error::TryRecvError::Empty)
        }));
        // Full again: the next one evicts the oldest, and only it.
        let (_, _another) = handshakes.begin();
        assert_eq!(
            begun[0].1.try_recv(),
            Err(oneshot::error::TryRecvError::Closed),
            "the oldest handshake is ended"
        );
        assert!(
            begun[1..]
                .iter_mut()
                .all(|(_, r)| r.try_recv() == Err(oneshot::error::TryRecvError::Empty))
        );
        assert_eq!(newest.try_recv(), Err(oneshot::error::TryRecvError::Empty));
    }
}
