//! Shared helpers: starting servers, clients, temporary directories, event-driven waiting.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use herald_apiserver::{ApiServer, ApiServerConfig};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, ObjectMeta, PostParams};
use kube::runtime::watcher;
use kube::{Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;

/// The safety-net timeout for anything awaited in tests.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// Await `fut`, failing the test with `what` if it takes longer than [`PATIENCE`].
pub async fn within<F: Future>(what: &str, fut: F) -> F::Output {
    tokio::time::timeout(PATIENCE, fut)
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
}

/// A server on a free loopback port with fast bookmarks.
pub async fn server() -> ApiServer {
    server_with(|_| {}).await
}

/// A server with a customised configuration.
pub async fn server_with(customise: impl FnOnce(&mut ApiServerConfig)) -> ApiServer {
    let mut config = ApiServerConfig {
        bookmark_interval: Duration::from_millis(100),
        ..ApiServerConfig::default()
    };
    customise(&mut config);
    herald_apiserver::start(config)
        .await
        .expect("server starts")
}

/// A kube client for `server`, configured the documented way.
pub fn client(server: &ApiServer) -> Client {
    let config = kube::Config::new(server.url().parse().expect("server URL parses"));
    Client::try_from(config).expect("client builds")
}

/// The API error inside a kube error.
pub fn status(err: kube::Error) -> Box<kube::core::Status> {
    match err {
        kube::Error::Api(s) => s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// A ConfigMap with labels and one data entry.
pub fn config_map(name: &str, labels: &[(&str, &str)], value: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: (!labels.is_empty()).then(|| {
                labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect()
            }),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("value".to_string(), value.to_string())])),
        ..ConfigMap::default()
    }
}

/// Create a namespace.
pub async fn namespace(client: &Client, name: &str) {
    let api: Api<Namespace> = Api::all(client.clone());
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    api.create(&PostParams::default(), &ns)
        .await
        .expect("namespace created");
}

/// A unique temporary directory, removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    /// Create one.
    pub fn new(tag: &str) -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "herald-apiserver-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        TempDir(dir)
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A minimal reflector over a kube-runtime watcher stream, polled only when the test asks,
/// so a test can change things while the watcher is not looking.
pub struct Tracker<K> {
    stream: BoxStream<'static, Result<watcher::Event<K>, watcher::Error>>,
    buffer: Option<BTreeMap<String, K>>,
    /// The objects, by `namespace/name`, as the watcher last presented them.
    pub state: BTreeMap<String, K>,
    /// How many times the watcher (re)started with a full list.
    pub inits: usize,
    /// How many errors the stream reported.
    pub errors: Vec<String>,
}

fn key<K: Resource>(obj: &K) -> String {
    format!("{}/{}", obj.namespace().unwrap_or_default(), obj.name_any())
}

impl<K> Tracker<K>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    /// Track `api` with `config`.
    pub fn new(api: Api<K>, config: watcher::Config) -> Self {
        Tracker {
            stream: watcher(api, config).boxed(),
            buffer: None,
            state: BTreeMap::new(),
            inits: 0,
            errors: Vec::new(),
        }
    }

    fn apply(&mut self, event: watcher::Event<K>) {
        match event {
            watcher::Event::Init => {
                self.inits += 1;
                self.buffer = Some(BTreeMap::new());
            }
            watcher::Event::InitApply(o) => {
                self.buffer
                    .get_or_insert_with(BTreeMap::new)
                    .insert(key(&o), o);
            }
            watcher::Event::InitDone => self.state = self.buffer.take().unwrap_or_default(),
            watcher::Event::Apply(o) => {
                self.state.insert(key(&o), o);
            }
            watcher::Event::Delete(o) => {
                self.state.remove(&key(&o));
            }
        }
    }

    /// Consume events until `done` holds for the tracked state (checked after every event
    /// outside an initial listing).
    pub async fn until(&mut self, what: &str, done: impl Fn(&Self) -> bool) {
        within(what, async {
            loop {
                if self.buffer.is_none() && done(self) {
                    return;
                }
                match self.stream.next().await {
                    Some(Ok(event)) => self.apply(event),
                    Some(Err(e)) => self.errors.push(e.to_string()),
                    None => panic!("watcher stream ended"),
                }
            }
        })
        .await
    }

    /// The tracked names, sorted.
    pub fn names(&self) -> Vec<String> {
        self.state.keys().cloned().collect()
    }
}
