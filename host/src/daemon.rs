//! The running set of plugins: each one's worker, listeners and the shared
//! informers they are registered with.

use crate::dispatch::{LastError, Listener, PluginWorker, RetryPolicy};
use crate::informer::{InformerKey, Informers, ResolveError, SharedInformer};
use crate::plugin::{LoadedPlugin, ObjectReader};
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// A plugin could not be started.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A subscription's kind is not served.
    #[error("plugin {plugin:?}: {source}")]
    Resolve {
        /// The plugin.
        plugin: String,
        /// Why.
        source: ResolveError,
    },
    /// A plugin of that name is already running.
    #[error("plugin {0:?} is already running")]
    Duplicate(String),
    /// There is no running plugin of that name to replace.
    #[error("plugin {0:?} is not running, so there is nothing to swap")]
    NotRunning(String),
}

/// How long stopping a worker waits for its call in flight. Calls end at
/// their own deadline (at most `limits.max.callDeadline`) well before this.
const STOP_PATIENCE: Duration = Duration::from_secs(60);

struct Binding {
    key: InformerKey,
    informer: Arc<SharedInformer>,
    listener: Arc<Listener>,
}

struct Running {
    worker: PluginWorker,
    bindings: Vec<Binding>,
    since: SystemTime,
}

/// A plugin ready to be registered: an idle worker and its bindings.
struct Prepared {
    worker: PluginWorker,
    bindings: Vec<Binding>,
}

impl Prepared {
    fn into_running(self) -> Running {
        Running {
            worker: self.worker,
            bindings: self.bindings,
            since: SystemTime::now(),
        }
    }
}

/// Status of one running plugin, as `/plugins` reports it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PluginStatus {
    /// Plugin name.
    pub name: String,
    /// Plugin version (from its manifest).
    pub version: String,
    /// sha256 of its file.
    pub sha256: String,
    /// Loaded since.
    #[serde(with = "crate::time_serde")]
    pub since: SystemTime,
    /// Every listener's initial list handled.
    pub synced: bool,
    /// One entry per subscription.
    pub subscriptions: Vec<SubscriptionStatus>,
    /// The last failure, if any.
    pub last_error: Option<LastError>,
}

/// Status of one subscription's listener.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionStatus {
    /// The informer it listens to.
    pub informer: String,
    /// Its initial list handled.
    pub synced: bool,
    /// Notifications waiting.
    pub queue_depth: usize,
    /// Handled successfully.
    pub delivered: u64,
    /// Failed attempts.
    pub failed: u64,
    /// Given up on.
    pub skipped: u64,
}

/// The plugins running in this process.
pub struct Daemon {
    informers: Arc<Informers>,
    retry: RetryPolicy,
    running: Mutex<BTreeMap<String, Running>>,
}

impl std::fmt::Debug for Daemon {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Daemon")
            .field("plugins", &self.names())
            .finish()
    }
}

impl Daemon {
    /// A daemon with no plugins yet.
    pub fn new(informers: Arc<Informers>, retry: RetryPolicy) -> Self {
        Daemon {
            informers,
            retry,
            running: Mutex::new(BTreeMap::new()),
        }
    }

    /// The shared informers.
    pub fn informers(&self) -> &Arc<Informers> {
        &self.informers
    }

    /// Starts a plugin: resolves every subscription first (a kind the server
    /// does not serve refuses the plugin and starts nothing), then registers a
    /// listener per subscription with its (shared) informer. Listeners that
    /// join an informer which has already synced first receive its snapshot
    /// as initial-list adds.
    pub async fn start(&self, plugin: LoadedPlugin) -> Result<(), StartError> {
        let name = plugin.name().to_owned();
        if self.lock().contains_key(&name) {
            return Err(StartError::Duplicate(name));
        }
        let mut prepared = self.prepare(plugin).await?;
        {
            let mut running = self.lock();
            if running.contains_key(&name) {
                drop(running);
                self.release(prepared.bindings);
                return Err(StartError::Duplicate(name));
            }
            for binding in &prepared.bindings {
                binding.informer.add_listener(binding.listener.clone());
            }
            prepared.worker.start();
            running.insert(name.clone(), prepared.into_running());
        }
        tracing::debug!(plugin = %name, "plugin started");
        Ok(())
    }

    /// Replaces the running plugin of the same name by `plugin`, atomically
    /// with respect to each informer: under the informer's lock the old
    /// version's listener leaves and the new one joins with a snapshot of the
    /// cache, so every event after that point goes to the new version once and
    /// the snapshot reflects every event before it. The old version's call in
    /// flight finishes (or hits its deadline) before the new version makes its
    /// first call; what the old version still had buffered is dropped (the
    /// snapshot covers it). If the new version cannot be started (a kind the
    /// server does not serve), the old one keeps running untouched.
    pub async fn swap(&self, plugin: LoadedPlugin) -> Result<(), StartError> {
        let name = plugin.name().to_owned();
        let prepared = self.prepare(plugin).await?;
        let old = {
            let mut running = self.lock();
            let Some(old) = running.remove(&name) else {
                drop(running);
                self.release(prepared.bindings);
                return Err(StartError::NotRunning(name));
            };
            for binding in &prepared.bindings {
                match old.bindings.iter().find(|b| b.key == binding.key) {
                    Some(previous) => binding
                        .informer
                        .swap_listener(&previous.listener, binding.listener.clone()),
                    None => binding.informer.add_listener(binding.listener.clone()),
                }
            }
            for previous in &old.bindings {
                if !prepared.bindings.iter().any(|b| b.key == previous.key) {
                    previous.informer.remove_listener(&previous.listener);
                }
            }
            // Not started: the old version's call in flight finishes first.
            running.insert(name.clone(), prepared.into_running());
            old
        };
        let Running {
            worker, bindings, ..
        } = old;
        let _ = tokio::task::spawn_blocking(move || {
            worker.stop(false, Instant::now() + STOP_PATIENCE);
        })
        .await;
        self.release(bindings);
        if let Some(running) = self.lock().get_mut(&name) {
            running.worker.start();
        }
        tracing::debug!(plugin = %name, "plugin swapped to a new version");
        Ok(())
    }

    /// Resolves a plugin's subscriptions, takes its informers and makes an
    /// idle worker with one listener per subscription; registers nothing.
    async fn prepare(&self, plugin: LoadedPlugin) -> Result<Prepared, StartError> {
        let name = plugin.name().to_owned();
        let mut keys = Vec::new();
        for subscription in &plugin.manifest().subscriptions {
            let key = self
                .informers
                .key_for(subscription)
                .await
                .map_err(|source| StartError::Resolve {
                    plugin: name.clone(),
                    source,
                })?;
            keys.push((subscription.clone(), key));
        }
        let worker = PluginWorker::new(plugin.clone(), self.retry);
        let bindings: Vec<Binding> = keys
            .into_iter()
            .map(|(subscription, key)| Binding {
                informer: self.informers.acquire(&key),
                listener: worker.new_listener(subscription, key.resource.plural.as_str().into()),
                key,
            })
            .collect();
        plugin.cache_scope().bind(
            bindings
                .iter()
                .map(|b| {
                    (
                        b.listener.subscription().kind.clone(),
                        b.informer.store().clone() as Arc<dyn ObjectReader>,
                    )
                })
                .collect(),
        );
        for binding in &bindings {
            worker.attach(binding.listener.clone());
        }
        Ok(Prepared { worker, bindings })
    }

    /// Stops a plugin: unregisters its listeners (their buffers are dropped),
    /// waits for the call in flight, and releases informers nobody needs.
    pub async fn stop(&self, name: &str) -> bool {
        let Some(running) = self.lock().remove(name) else {
            return false;
        };
        for binding in &running.bindings {
            binding.informer.remove_listener(&binding.listener);
        }
        let Running {
            worker, bindings, ..
        } = running;
        let _ = tokio::task::spawn_blocking(move || {
            worker.stop(false, Instant::now() + STOP_PATIENCE);
        })
        .await;
        self.release(bindings);
        tracing::debug!(plugin = %name, "plugin stopped");
        true
    }

    /// Gives back the informers of `bindings`; each stops when unused.
    fn release(&self, bindings: Vec<Binding>) {
        for binding in bindings {
            self.informers.release(&binding.key);
        }
    }

    /// Stops every plugin, letting each drain its buffers until `deadline`.
    /// Blocks: call it from a blocking thread.
    pub fn shutdown(&self, deadline: Instant) {
        let all = std::mem::take(&mut *self.lock());
        for running in all.values() {
            for binding in &running.bindings {
                binding.informer.remove_listener(&binding.listener);
            }
        }
        for (_, running) in all {
            running.worker.stop(true, deadline);
            self.release(running.bindings);
        }
    }

    /// Names of the running plugins.
    pub fn names(&self) -> Vec<String> {
        self.lock().keys().cloned().collect()
    }

    /// True when every informer has synced and every plugin has handled its initial lists.
    pub fn ready(&self) -> bool {
        self.informers.all_synced() && self.lock().values().all(|r| r.worker.has_synced())
    }

    /// Status of every running plugin.
    pub fn status(&self) -> Vec<PluginStatus> {
        self.lock()
            .iter()
            .map(|(name, running)| {
                let plugin = running.worker.plugin();
                let subscriptions: Vec<SubscriptionStatus> = running
                    .bindings
                    .iter()
                    .map(|b| SubscriptionStatus {
                        informer: b.key.to_string(),
                        synced: b.listener.has_synced(),
                        queue_depth: b.listener.depth(),
                        delivered: b.listener.stats.delivered.load(Ordering::Relaxed),
                        failed: b.listener.stats.failed.load(Ordering::Relaxed),
                        skipped: b.listener.stats.skipped.load(Ordering::Relaxed),
                    })
                    .collect();
                PluginStatus {
                    name: name.clone(),
                    version: plugin.manifest().version.clone(),
                    sha256: plugin.digest().to_owned(),
                    since: running.since,
                    synced: subscriptions.iter().all(|s| s.synced),
                    subscriptions,
                    last_error: running.worker.last_error(),
                }
            })
            .collect()
    }

    /// The running plugins.
    pub fn plugins(&self) -> Vec<LoadedPlugin> {
        self.lock()
            .values()
            .map(|r| r.worker.plugin().clone())
            .collect()
    }

    /// The listeners of a running plugin (for tests and metrics).
    pub fn listeners(&self, name: &str) -> Vec<Arc<Listener>> {
        self.lock()
            .get(name)
            .map(|r| r.bindings.iter().map(|b| b.listener.clone()).collect())
            .unwrap_or_default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Running>> {
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }
}
