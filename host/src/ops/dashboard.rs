//! The live dashboard: one static page compiled into the binary (HTML, CSS
//! and vanilla JavaScript, no framework, nothing fetched from elsewhere),
//! the JSON snapshot it polls (`/api/dashboard`) and the server-sent event
//! stream of finished deliveries it follows (`/events/stream`).
//!
//! Read-only: nothing here changes the daemon. What it costs the daemon:
//! a snapshot is what `/plugins` costs plus the kept log lines; the stream
//! costs a dispatching worker one non-blocking send per finished delivery
//! while someone watches, and one atomic load otherwise (see
//! [`Feed`](crate::dispatch::Feed)).

use super::OpsState;
use crate::capability::log::RecentLine;
use crate::daemon::{AbandonedWorker, PluginStatus};
use crate::dispatch::{FEED_BUFFER, MAX_WATCHERS, Received, Watcher};
use crate::informer::RequestFailure;
use crate::readiness::Readiness;
use crate::reload::{FileState, ReloadRecord};
use bytes::Bytes;
use serde::Serialize;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

/// The page.
pub const INDEX_HTML: &str = include_str!("assets/index.html");
/// Its script.
pub const DASHBOARD_JS: &str = include_str!("assets/dashboard.js");
/// Its style sheet.
pub const DASHBOARD_CSS: &str = include_str!("assets/dashboard.css");

/// The page's content security policy: its own script, style and requests
/// only, nothing inline, no frames, no forms.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; img-src 'self' data:; \
     base-uri 'none'; frame-ancestors 'none'; form-action 'none'";

/// How often the stream sends a `heartbeat` event when there is nothing to
/// say: proxies keep it open, a gone client is noticed, and the page can
/// tell a quiet stream from a dead one (it marks its feed stale after 12 s
/// of silence; a comment would not reach its script).
pub const KEEP_ALIVE: Duration = Duration::from_secs(5);

/// Who this replica is.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Replica {
    /// Its identity (`leaderElection.identity`, else `POD_NAME`, else the
    /// host name), when known.
    pub identity: Option<String>,
    /// The Lease contended for, `namespace/name`, under leader election.
    pub lease: Option<String>,
}

/// Everything the dashboard shows but the live feed.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    /// When it was taken, in milliseconds since the Unix epoch.
    pub now_ms: u64,
    /// The daemon's version.
    pub version: &'static str,
    /// This replica.
    pub replica: ReplicaStatus,
    /// Each running plugin.
    pub plugins: Vec<PluginView>,
    /// The default cluster's name: the cluster of a feed event that names
    /// none.
    pub default_cluster: String,
    /// Each running informer, by key.
    pub informers: Vec<InformerView>,
    /// What the reloader did, newest first.
    pub reloads: Vec<ReloadRecord>,
    /// Plugin files whose content does not run (refused, disabled, being
    /// loaded), with why.
    pub files: Vec<FileView>,
    /// The live feed's counters.
    pub feed: FeedView,
    /// Workers that did not stop in time, most recent last.
    pub abandoned_workers: Vec<AbandonedWorker>,
}

/// This replica, now.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplicaStatus {
    /// Who it is.
    #[serde(flatten)]
    pub replica: Replica,
    /// True while it dispatches to plugins (`herald_dispatching`): always
    /// without leader election, only on the leader with it.
    pub dispatching: bool,
    /// True when `/readyz` answers 200.
    pub ready: bool,
    /// What holds readiness, and what waits without holding it, as
    /// `/readyz` says it.
    pub readiness: Readiness,
    /// True once shutdown began.
    pub shutting_down: bool,
}

/// One plugin as the dashboard shows it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PluginView {
    /// Its status, as `/plugins` reports it.
    #[serde(flatten)]
    pub status: PluginStatus,
    /// The file it runs from.
    pub file: Option<String>,
    /// Its recent log lines, oldest first.
    pub logs: Vec<RecentLine>,
}

/// One informer as the dashboard shows it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InformerView {
    /// Its key: resource, and the selectors that narrow it.
    pub key: String,
    /// Plural resource.
    pub resource: String,
    /// API group (empty for the core group).
    pub group: String,
    /// The cluster it watches.
    pub cluster: String,
    /// Objects in its cache.
    pub objects: usize,
    /// Its first list is in the cache.
    pub synced: bool,
    /// Watch requests restarted.
    pub watch_restarts: u64,
    /// Complete lists applied.
    pub relists: u64,
    /// List/watch errors.
    pub errors: u64,
    /// Watch events received.
    pub events: u64,
    /// Listeners (plugin subscriptions) it feeds.
    pub listeners: usize,
    /// Its last list or watch request that failed, while none has
    /// succeeded since (a `403` is a missing RBAC rule).
    pub failure: Option<RequestFailure>,
    /// How the API server's last answer was encoded: `protobuf` (a
    /// built-in kind, transcoded to JSON) or `json`.
    pub encoding: &'static str,
    /// Why the kind's protobuf could not be read, if it could not: it is
    /// read as JSON since.
    pub protobuf_fallback: Option<String>,
}

/// A plugin file that does not run as it is.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileView {
    /// The file.
    pub file: String,
    /// Where it stands.
    pub state: FileState,
    /// The plugin running from it (an older version), if any.
    pub plugin: Option<String>,
    /// Why it was refused.
    pub last_error: Option<String>,
}

/// The live feed's counters.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FeedView {
    /// Streams open now.
    pub watchers: usize,
    /// Most streams open at once.
    pub max_watchers: usize,
    /// Events a stream may fall behind by before it loses the oldest.
    pub buffer: usize,
    /// Events published while someone watched.
    pub published: u64,
    /// Events streams lost by falling behind.
    pub dropped: u64,
}

impl OpsState {
    /// The dashboard's snapshot.
    pub fn snapshot(&self) -> Snapshot {
        let files = self.files.snapshot();
        let file_of = |plugin: &str| {
            files
                .iter()
                .find(|(_, status)| status.plugin.as_deref() == Some(plugin))
                .map(|(path, _)| path.display().to_string())
        };
        let plugins = self
            .plugin_status()
            .into_iter()
            .map(|status| PluginView {
                file: file_of(&status.name),
                logs: self
                    .logs
                    .as_ref()
                    .map(|logs| logs.lines(&status.name))
                    .unwrap_or_default(),
                status,
            })
            .collect();
        let default_cluster = self.daemon.informers().default_cluster_name();
        let mut informers: Vec<InformerView> = self
            .daemon
            .informers()
            .all()
            .iter()
            .map(|informer| {
                let key = informer.key();
                let stats = informer.stats();
                InformerView {
                    key: key.to_string(),
                    resource: key.resource.plural.clone(),
                    group: key.resource.gvk.group.clone(),
                    cluster: key
                        .cluster
                        .as_ref()
                        .map_or_else(|| default_cluster.clone(), |c| c.to_string()),
                    objects: informer.store().len(),
                    synced: informer.has_synced(),
                    watch_restarts: stats.watch_restarts.load(Ordering::Relaxed),
                    relists: informer.processor().stats.relists.load(Ordering::Relaxed),
                    errors: stats.errors.load(Ordering::Relaxed),
                    events: stats.events_received(),
                    listeners: informer.processor().listener_count(),
                    failure: stats.last_failure(),
                    encoding: if stats.protobuf.load(Ordering::Relaxed) {
                        "protobuf"
                    } else {
                        "json"
                    },
                    protobuf_fallback: stats.protobuf_fallback(),
                }
            })
            .collect();
        informers.sort_by(|a, b| a.key.cmp(&b.key));
        let mut reloads = self.files.history();
        reloads.reverse();
        let feed = self.daemon.feed();
        let readiness = self.readiness();
        Snapshot {
            now_ms: crate::dispatch::FeedEvent::epoch_ms(SystemTime::now()),
            version: env!("CARGO_PKG_VERSION"),
            replica: ReplicaStatus {
                replica: self.replica.clone(),
                dispatching: self.daemon.is_dispatching(),
                ready: readiness.ready,
                readiness,
                shutting_down: self.shutting_down.load(Ordering::Acquire),
            },
            plugins,
            default_cluster,
            informers,
            reloads,
            files: files
                .iter()
                .filter(|(_, status)| status.state != FileState::Loaded)
                .map(|(path, status)| FileView {
                    file: path.display().to_string(),
                    state: status.state,
                    plugin: status.plugin.clone(),
                    last_error: status.last_error.clone(),
                })
                .collect(),
            feed: FeedView {
                watchers: feed.map_or(0, |f| f.watchers()),
                max_watchers: MAX_WATCHERS,
                buffer: FEED_BUFFER,
                published: feed.map_or(0, |f| f.published()),
                dropped: feed.map_or(0, |f| f.dropped()),
            },
            abandoned_workers: self.daemon.abandoned_workers().0,
        }
    }
}

/// The server-sent events of one watcher: `event: delivery` with a
/// [`FeedEvent`](crate::dispatch::FeedEvent) as JSON per finished delivery,
/// `event: dropped` with `{"dropped": N}` when the watcher fell behind and
/// lost N, and `event: heartbeat` every [`KEEP_ALIVE`] when nothing
/// happens. Ends when the feed does.
pub fn event_stream(watcher: Watcher) -> impl futures::Stream<Item = Bytes> + Send {
    let opening = Bytes::from_static(b"retry: 2000\n: herald delivery feed\n\n");
    let events = futures::stream::unfold(watcher, |mut watcher| async move {
        let message = match tokio::time::timeout(KEEP_ALIVE, watcher.recv()).await {
            Err(_elapsed) => Bytes::from_static(b"event: heartbeat\ndata: {}\n\n"),
            Ok(None) => return None,
            Ok(Some(Received::Event(event))) => Bytes::from(format!(
                "event: delivery\ndata: {}\n\n",
                serde_json::to_string(&*event).expect("a feed event serializes")
            )),
            Ok(Some(Received::Dropped(lost))) => {
                Bytes::from(format!("event: dropped\ndata: {{\"dropped\":{lost}}}\n\n"))
            }
        };
        Some((message, watcher))
    });
    futures::StreamExt::chain(futures::stream::once(async { opening }), events)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dispatch::{Feed, FeedEvent, Outcome};
    use futures::StreamExt;

    #[tokio::test]
    async fn the_stream_sends_each_delivery_as_a_server_sent_event() {
        let feed = Feed::default();
        let mut stream = Box::pin(event_stream(feed.watch().unwrap()));
        let opening = stream.next().await.unwrap();
        assert!(opening.starts_with(b"retry: "), "{opening:?}");
        feed.publish(|| FeedEvent {
            at_ms: 1,
            plugin: "pod-lifecycle".into(),
            resource: "pods".into(),
            cluster: Some(crate::cluster::ClusterName::parse("cluster", "west").unwrap()),
            event: "delete",
            key: "shop/web-1".into(),
            initial: false,
            outcome: Outcome::Delivered,
            attempts: 1,
            micros: 42,
            error: None,
        });
        let event = String::from_utf8(stream.next().await.unwrap().to_vec()).unwrap();
        assert_eq!(
            event,
            "event: delivery\ndata: {\"atMs\":1,\"plugin\":\"pod-lifecycle\",\"resource\":\"pods\",\
             \"cluster\":\"west\",\"event\":\"delete\",\"key\":\"shop/web-1\",\"initial\":false,\"outcome\":\"delivered\",\
             \"attempts\":1,\"micros\":42,\"error\":null}\n\n"
        );
    }

    #[test]
    fn the_assets_reference_only_each_other() {
        assert!(INDEX_HTML.contains("src=\"dashboard.js\""));
        assert!(INDEX_HTML.contains("href=\"dashboard.css\""));
        for asset in [INDEX_HTML, DASHBOARD_JS, DASHBOARD_CSS] {
            assert!(
                !asset.contains("http://") && !asset.contains("https://"),
                "nothing is fetched from elsewhere"
            );
        }
        assert!(
            !DASHBOARD_JS.contains("innerHTML"),
            "plugin output reaches the page as text only"
        );
    }
}
