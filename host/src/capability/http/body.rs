//! The response body a plugin reads: passed through frame by frame, never
//! buffered, cut at `maxResponseSize` and at the request's deadline, and
//! holding the plugin's concurrency slot until it ends.

use super::stats::{Ledger, Outcome};
use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::{Instant, Sleep};
use wasmtime_wasi_http::Error;

/// One request's place among the plugin's `maxConcurrent`: shared by the
/// response body and the connection's task, given back by whichever ends
/// first (the body read to its end, failed or dropped; the connection
/// closed or cut at the request's deadline).
#[derive(Debug, Clone)]
pub(super) struct Slot(Arc<Mutex<Option<OwnedSemaphorePermit>>>);

impl Slot {
    pub(super) fn new(permit: OwnedSemaphorePermit) -> Self {
        Slot(Arc::new(Mutex::new(Some(permit))))
    }

    /// Gives the slot back (once; later calls do nothing).
    pub(super) fn release(&self) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).take();
    }
}

/// A response body bounded in size and time.
pub(super) struct CappedBody {
    /// `None` once the body ended or failed: dropping hyper's body tells the
    /// connection nobody reads any more.
    inner: Option<hyper::body::Incoming>,
    cap: u64,
    deadline: Pin<Box<Sleep>>,
    slot: Slot,
    ledger: Ledger,
}

impl CappedBody {
    /// `inner`, of which at most `cap` bytes are passed on before
    /// `deadline`; `ledger` records the request when the body ends.
    pub(super) fn new(
        inner: hyper::body::Incoming,
        cap: u64,
        deadline: Instant,
        slot: Slot,
        mut ledger: Ledger,
    ) -> Self {
        ledger.on_drop = (
            Outcome::Ok,
            "the plugin dropped the response body before its end",
        );
        CappedBody {
            inner: Some(inner),
            cap,
            deadline: Box::pin(tokio::time::sleep_until(deadline)),
            slot,
            ledger,
        }
    }

    /// Ends the body: no more frames, the slot given back, the request
    /// recorded.
    fn end(&mut self, outcome: Outcome, detail: &str) {
        self.inner = None;
        self.slot.release();
        self.ledger.finish(outcome, detail);
    }

    fn fail(
        &mut self,
        outcome: Outcome,
        error: Error,
        detail: &str,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        self.end(outcome, detail);
        Poll::Ready(Some(Err(error)))
    }
}

impl Body for CappedBody {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let this = self.get_mut();
        let Some(inner) = this.inner.as_mut() else {
            return Poll::Ready(None);
        };
        if this.deadline.as_mut().poll(cx).is_ready() {
            return this.fail(
                Outcome::Timeout,
                Error::HttpResponseTimeout,
                "the response body did not end within the request's time budget",
            );
        }
        match Pin::new(inner).poll_frame(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(None) => {
                this.end(Outcome::Ok, "");
                Poll::Ready(None)
            }
            Poll::Ready(Some(Err(error))) => {
                let detail = format!("reading the response body: {error}");
                this.fail(Outcome::Error, Error::Hyper(error), &detail)
            }
            Poll::Ready(Some(Ok(frame))) => {
                let len = frame.data_ref().map_or(0, |data| data.len() as u64);
                let read = this.ledger.bytes + len;
                if read > this.cap {
                    let detail = format!(
                        "the response body is larger than maxResponseSize ({} bytes)",
                        this.cap
                    );
                    return this.fail(
                        Outcome::TooLarge,
                        Error::HttpResponseBodySize(Some(read)),
                        &detail,
                    );
                }
                this.ledger.bytes = read;
                Poll::Ready(Some(Ok(frame)))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner
            .as_ref()
            .is_none_or(|inner| inner.is_end_stream())
    }

    fn size_hint(&self) -> SizeHint {
        self.inner
            .as_ref()
            .map_or_else(|| SizeHint::with_exact(0), |inner| inner.size_hint())
    }
}

impl Drop for CappedBody {
    fn drop(&mut self) {
        // The ledger records the drop itself; the slot must not wait for
        // the connection's task to notice.
        self.slot.release();
    }
}

/// A request body bounded in size: passed on frame by frame until more than
/// `cap` bytes have gone through, then failed with `HTTP-request-body-size`
/// (the request is cut there; `exceeded` tells the sender why).
pub(super) struct CappedRequestBody {
    inner: wasmtime_wasi_http::WasiBody,
    cap: u64,
    sent: u64,
    exceeded: Arc<std::sync::atomic::AtomicBool>,
}

impl CappedRequestBody {
    /// `inner`, of which at most `cap` bytes pass; `exceeded` is set if it
    /// tries to send more.
    pub(super) fn new(
        inner: wasmtime_wasi_http::WasiBody,
        cap: u64,
        exceeded: Arc<std::sync::atomic::AtomicBool>,
    ) -> Self {
        CappedRequestBody {
            inner,
            cap,
            sent: 0,
            exceeded,
        }
    }
}

impl Body for CappedRequestBody {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    this.sent += data.len() as u64;
                    if this.sent > this.cap {
                        this.exceeded
                            .store(true, std::sync::atomic::Ordering::Relaxed);
                        return Poll::Ready(Some(Err(Error::HttpRequestBodySize(Some(this.sent)))));
                    }
                }
                Poll::Ready(Some(Ok(frame)))
            }
            other => other,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Reads a request body that is not going to be sent (dry-run) to its end,
/// counting it, up to `cap` bytes: its size, or the error past the cap.
pub(super) async fn drain_request(
    body: wasmtime_wasi_http::WasiBody,
    cap: u64,
) -> Result<u64, Error> {
    use http_body_util::BodyExt;
    let exceeded = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut body = CappedRequestBody::new(body, cap, exceeded);
    let mut size = 0u64;
    while let Some(frame) = body.frame().await {
        if let Some(data) = frame?.data_ref() {
            size += data.len() as u64;
        }
    }
    Ok(size)
}
