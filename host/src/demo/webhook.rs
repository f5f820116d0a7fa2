//! The demo's webhook receiver: a small HTTP server on loopback standing in
//! for a chat or incident API, so `crashloop-alert`'s outbound requests
//! (granted to this origin alone) have somewhere to go. It prints each
//! request it gets as `webhook │ …` beside the plugins' output.
//!
//! The first request is answered `503 Service Unavailable`, as a receiver
//! that is briefly down would: the demo shows the plugin's call failing
//! and the host's workqueue retrying that Pod alone, with backoff, until
//! the alert is accepted.

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::{Request, Response, StatusCode};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// Largest request body the receiver reads.
const MAX_BODY: usize = 64 * 1024;

/// A running receiver; stops when dropped.
#[derive(Debug)]
pub struct WebhookReceiver {
    address: SocketAddr,
    received: Arc<AtomicU64>,
    task: JoinHandle<()>,
}

impl WebhookReceiver {
    /// Starts a receiver on a free loopback port.
    pub async fn start() -> std::io::Result<Self> {
        let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        let address = listener.local_addr()?;
        let received = Arc::new(AtomicU64::new(0));
        let counted = received.clone();
        let task = tokio::spawn(async move {
            let received = counted;
            while let Ok((stream, _)) = listener.accept().await {
                let received = received.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        answer(request, received.fetch_add(1, Ordering::Relaxed))
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Ok(WebhookReceiver {
            address,
            received,
            task,
        })
    }

    /// Requests received so far (the first was refused).
    pub fn received(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
    }

    /// The origin to grant: `http://127.0.0.1:<port>`.
    pub fn origin(&self) -> String {
        format!("http://{}", self.address)
    }

    /// The URL plugins post alerts to.
    pub fn url(&self) -> String {
        format!("{}/alerts", self.origin())
    }
}

impl Drop for WebhookReceiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Prints request number `index` (from 0) and answers it: 503 for the
/// first, 200 afterwards.
async fn answer(
    request: Request<hyper::body::Incoming>,
    index: u64,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (parts, body) = request.into_parts();
    let body = match Limited::new(body, MAX_BODY).collect().await {
        Ok(body) => String::from_utf8_lossy(&body.to_bytes()).into_owned(),
        Err(_) => format!("(a body over {MAX_BODY} bytes)"),
    };
    let status = if index == 0 {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::OK
    };
    println!(
        "{:>20} │ {} {} {body} → {}",
        "webhook",
        parts.method,
        parts.uri.path(),
        status.as_u16()
    );
    Ok(Response::builder()
        .status(status)
        .body(Full::new(Bytes::new()))
        .expect("a static response"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_first_request_is_refused_and_later_ones_accepted() {
        let receiver = WebhookReceiver::start().await.unwrap();
        let post = || async {
            let stream = tokio::net::TcpStream::connect(receiver.address)
                .await
                .unwrap();
            let (mut sender, connection) =
                hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                    .await
                    .unwrap();
            tokio::spawn(connection);
            let request = Request::post(receiver.url())
                .header("host", receiver.address.to_string())
                .body(Full::new(Bytes::from_static(b"{\"pod\":\"shop/crashy\"}")))
                .unwrap();
            sender.send_request(request).await.unwrap().status()
        };
        assert_eq!(post().await, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(post().await, StatusCode::OK);
        assert_eq!(post().await, StatusCode::OK);
    }
}
