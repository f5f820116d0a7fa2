//! Watch streams: one task per watch turns store events into newline-delimited JSON events
//! or length-prefixed protobuf frames, applying namespace and selector filters, bookmarks,
//! timeouts and the 410 behaviour.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc, watch};
use tokio::time::Instant;

use crate::body::Chunk;
use crate::negotiate::Encoding;
use crate::object;
use crate::selector::{FieldSelector, LabelSelector};
use crate::status::ApiError;
use crate::storage::{Event, EventType, Store, Target, WatchStart, render_line, selected};
use crate::table::{self, IncludeObject};

/// What a watch request asked for.
#[derive(Debug, Clone)]
pub(crate) struct WatchSpec {
    /// Resource, version and namespace.
    pub target: Target,
    /// `labelSelector`.
    pub label: LabelSelector,
    /// `fieldSelector`.
    pub field: FieldSelector,
    /// `allowWatchBookmarks=true`.
    pub bookmarks: bool,
    /// Interval between bookmarks.
    pub bookmark_interval: Duration,
    /// `timeoutSeconds`.
    pub timeout: Option<Duration>,
    /// Render objects as Tables (kubectl `get -w`).
    pub table: Option<IncludeObject>,
    /// JSON lines or protobuf frames.
    pub encoding: Encoding,
}

/// Frames buffered per watch before the task waits for the client.
const CHANNEL_DEPTH: usize = 256;

/// Start the task feeding one watch; returns the receiving end for the response body.
///
/// `kill` changing ends the stream abruptly (fault injection and shutdown).
pub(crate) fn spawn(
    store: Arc<Store>,
    spec: WatchSpec,
    start: WatchStart,
    rx: broadcast::Receiver<Arc<Event>>,
    kill: watch::Receiver<u64>,
) -> mpsc::Receiver<Chunk> {
    let (tx, body) = mpsc::channel(CHANNEL_DEPTH);
    let watcher = Watcher {
        store,
        spec,
        tx,
        last_rv: 0,
    };
    tokio::spawn(watcher.run(start, rx, kill));
    body
}

struct Watcher {
    store: Arc<Store>,
    spec: WatchSpec,
    tx: mpsc::Sender<Chunk>,
    /// Every event up to this version has been considered.
    last_rv: u64,
}

/// Why a watch stopped early.
enum Stop {
    /// The client went away.
    Gone,
    /// Abort the stream.
    Abort,
    /// An object could not be encoded (logged): end the stream, as kube-apiserver ends a
    /// watch whose event it cannot encode.
    Unencodable,
}

impl Watcher {
    async fn send(&self, bytes: Bytes) -> Result<(), Stop> {
        self.tx.send(Ok(bytes)).await.map_err(|_| Stop::Gone)
    }

    fn matches(&self, obj: &Value) -> bool {
        selected(obj, &self.spec.label, &self.spec.field)
    }

    fn render(&self, kind: EventType, obj: &Arc<Value>) -> Result<Bytes, Stop> {
        let obj = self.spec.target.present(obj.clone());
        match self.spec.table {
            Some(include) => {
                let rt = &self.spec.target.rt;
                let t = table::table(rt, vec![table::row(rt, &obj, include)], None, None);
                Ok(render_line(kind.as_str(), &t))
            }
            None => self.encode(kind.as_str(), &obj),
        }
    }

    /// One event of type `event_type` with `obj`, in the watch's encoding.
    fn encode(&self, event_type: &str, obj: &Value) -> Result<Bytes, Stop> {
        match self.spec.encoding {
            Encoding::Json => Ok(render_line(event_type, obj)),
            Encoding::Protobuf => crate::protobuf::encode::object(obj)
                .map(|object| crate::protobuf::encode::watch_frame(event_type, &object))
                .map_err(|e| self.unencodable(&e)),
        }
    }

    fn unencodable(&self, err: &crate::protobuf::encode::EncodeError) -> Stop {
        tracing::warn!(error = %err, resource = %self.spec.target.rt.qualified(), "a watch event cannot be encoded in protobuf; ending the watch");
        Stop::Unencodable
    }

    fn natural(&self) -> bool {
        self.spec.table.is_none() && self.spec.target.serves_storage_form()
    }

    /// The line (or frame) to send for an event, if this watch sees it.
    fn line_for(&self, ev: &Event) -> Result<Option<Bytes>, Stop> {
        if ev.resource != self.spec.target.rt.id {
            return Ok(None);
        }
        if let Some(ns) = &self.spec.target.namespace
            && &ev.key.0 != ns
        {
            return Ok(None);
        }
        let now = self.matches(&ev.object);
        let (kind, obj) = match ev.kind {
            EventType::Added | EventType::Deleted => {
                if !now {
                    return Ok(None);
                }
                (ev.kind, ev.object.clone())
            }
            EventType::Modified => {
                let before = ev.prev.as_deref().is_some_and(|p| self.matches(p));
                match (before, now) {
                    (true, true) => (EventType::Modified, ev.object.clone()),
                    (false, true) => (EventType::Added, ev.object.clone()),
                    (true, false) => {
                        let mut last = (**ev.prev.as_ref().expect("matched")).clone();
                        object::set_resource_version(&mut last, ev.rv);
                        (EventType::Deleted, Arc::new(last))
                    }
                    (false, false) => return Ok(None),
                }
            }
        };
        if kind == ev.kind && self.natural() {
            match self.spec.encoding {
                Encoding::Json => Ok(Some(ev.line())),
                Encoding::Protobuf => ev.frame().map(Some).map_err(|e| self.unencodable(&e)),
            }
        } else {
            self.render(kind, &obj).map(Some)
        }
    }

    async fn handle(&mut self, ev: &Event) -> Result<(), Stop> {
        if ev.rv <= self.last_rv {
            return Ok(());
        }
        self.last_rv = ev.rv;
        match self.line_for(ev)? {
            Some(line) => self.send(line).await,
            None => Ok(()),
        }
    }

    fn bookmark(&self, initial_end: bool) -> Result<Bytes, Stop> {
        let rt = &self.spec.target.rt;
        let mut metadata = json!({"resourceVersion": self.last_rv.to_string()});
        if initial_end {
            metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let obj = json!({
            "kind": rt.kind,
            "apiVersion": self.spec.target.api_version(),
            "metadata": metadata,
        });
        self.encode("BOOKMARK", &obj)
    }

    fn expired_line(&self, requested: u64, oldest: u64) -> Result<Bytes, Stop> {
        let err = ApiError::expired(format!("too old resource version: {requested} ({oldest})"));
        self.encode("ERROR", &err.to_status())
    }

    /// Replay a start: initial state or retained history. `Err` ends the watch.
    async fn replay(&mut self, start: WatchStart) -> Result<(), Stop> {
        match start {
            WatchStart::Expired { requested, oldest } => {
                let _ = self.send(self.expired_line(requested, oldest)?).await;
                Err(Stop::Gone)
            }
            WatchStart::Initial {
                objects,
                rv,
                end_bookmark,
            } => {
                for obj in objects.iter().filter(|o| self.matches(o)) {
                    let line = self.render(EventType::Added, obj)?;
                    self.send(line).await?;
                }
                self.last_rv = rv;
                if end_bookmark {
                    self.send(self.bookmark(true)?).await?;
                }
                Ok(())
            }
            WatchStart::History { events, from_rv } => {
                self.last_rv = self.last_rv.max(from_rv);
                for ev in events {
                    self.handle(&ev).await?;
                }
                Ok(())
            }
        }
    }

    async fn run(
        mut self,
        start: WatchStart,
        mut rx: broadcast::Receiver<Arc<Event>>,
        mut kill: watch::Receiver<u64>,
    ) {
        // The receiver was subscribed when the request was accepted, with
        // the value of then marked seen: a drop from that moment on ends
        // this watch, even one asked for before this task first ran.
        let result = self.run_inner(start, &mut rx, &mut kill).await;
        if let Err(Stop::Abort) = result {
            let abort = self
                .tx
                .send(Err(io::Error::other("watch dropped by the server")));
            let _ = tokio::time::timeout(Duration::from_secs(1), abort).await;
        }
    }

    async fn run_inner(
        &mut self,
        start: WatchStart,
        rx: &mut broadcast::Receiver<Arc<Event>>,
        kill: &mut watch::Receiver<u64>,
    ) -> Result<(), Stop> {
        self.replay(start).await?;
        let deadline = self.spec.timeout.map(|t| Instant::now() + t);
        let timeout = tokio::time::sleep_until(deadline.unwrap_or_else(Instant::now));
        tokio::pin!(timeout);
        let period = self.spec.bookmark_interval.max(Duration::from_millis(10));
        let mut bookmarks = tokio::time::interval_at(Instant::now() + period, period);
        loop {
            tokio::select! {
                biased;
                _ = kill.changed() => return Err(Stop::Abort),
                _ = self.tx.closed() => return Err(Stop::Gone),
                _ = &mut timeout, if deadline.is_some() => return Ok(()),
                received = rx.recv() => match received {
                    Ok(ev) => self.handle(&ev).await?,
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        let (start, fresh) = self.store.catch_up(&self.spec.target.rt.id, self.last_rv);
                        *rx = fresh;
                        self.replay(start).await?;
                    }
                    Err(broadcast::error::RecvError::Closed) => return Ok(()),
                },
                _ = bookmarks.tick(), if self.spec.bookmarks => {
                    self.send(self.bookmark(false)?).await?;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::FaultState;
    use crate::storage::WatchFrom;

    /// A watch whose request was accepted (its kill receiver subscribed)
    /// but whose task has not run yet, as when a test drops "every open
    /// watch" right after the server counted this one.
    #[tokio::test(flavor = "current_thread")]
    async fn a_drop_between_accepting_a_watch_and_running_it_still_ends_it() {
        let store = Arc::new(Store::new(100));
        store.ensure_default_namespaces();
        let target = Target {
            rt: store.lookup("", "v1", "namespaces").unwrap(),
            version: "v1".into(),
            namespace: None,
            view: None,
        };
        let (start, rx) = store
            .watch(
                &target,
                &WatchFrom {
                    resource_version: Some(store.current_rv().to_string()),
                    send_initial_events: false,
                },
            )
            .unwrap();
        let faults = FaultState::new();
        let kill = faults.kill_signal();
        faults.kill_watches();
        let spec = WatchSpec {
            target,
            label: LabelSelector::default(),
            field: FieldSelector::default(),
            bookmarks: false,
            bookmark_interval: Duration::from_secs(60),
            timeout: None,
            table: None,
            encoding: Encoding::Json,
        };
        let mut body = spawn(store, spec, start, rx, kill);
        let ended = tokio::time::timeout(Duration::from_secs(60), body.recv())
            .await
            .expect("the watch kept running after the drop");
        let error = ended
            .expect("a frame")
            .expect_err("an error that ends the stream");
        assert_eq!(error.to_string(), "watch dropped by the server");
    }
}
