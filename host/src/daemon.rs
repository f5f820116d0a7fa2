//! The running set of plugins: for each one, the shared informers its
//! subscriptions use and, while this replica dispatches, its worker and its
//! listeners.
//!
//! # Dispatching and standing by
//!
//! A daemon either dispatches (it is the only replica, or the leader) or
//! stands by (a follower under leader election). Either way every plugin's
//! informers run, so the cache stays warm and synced. Only a dispatching
//! daemon gives plugins listeners and workers: when it starts dispatching,
//! each plugin joins its informers as a late listener (a snapshot of the
//! cache as initial-list adds, then live events); when it stops, every
//! listener is unregistered at once and its buffer dropped, undrained, so
//! nothing more is delivered once the call in flight ends. Starting,
//! swapping and stopping plugins work the same in both modes.
//!
//! # Sharded
//!
//! A sharded daemon ([`Daemon::sharded`], see `crate::shard`) dispatches
//! only the plugins this replica owns ([`Daemon::set_owned`]), and only
//! those take informers: a plugin it does not own is loaded and its kinds
//! resolved, but it subscribes to nothing, so the informers (and their
//! caches) follow ownership. A plugin it comes to own takes its informers
//! and joins them as a listener: on an informer that is already running
//! (another owned plugin uses it) it gets the cache as a snapshot, on a new
//! one the informer's first list; either way as initial-list adds, then live
//! events. A plugin it stops owning leaves at once, its buffer dropped, its
//! call in flight waited for, and an informer no other owned plugin uses
//! stops and drops its cache.
//!
//! # Plugin metrics
//!
//! The daemon holds the host-wide [`PluginMetricsRegistry`]: plugins are
//! loaded against it ([`Daemon::plugin_metrics`]), a version's metrics are
//! activated when it starts or is swapped in (under the same lock as the
//! swap, so a version refused before that point changes nothing), and a
//! stopped plugin's metrics are unregistered once its last call is over.

use crate::admission::AdmissionPlugins;
use crate::admission::plugins::Found;
use crate::admission::scan::{Scan, ScanTarget};
use crate::capability::Mode;
use crate::capability::metrics::PluginMetricsRegistry;
use crate::capability::reads::{ReadRule, ReadView};
use crate::cluster::ClusterName;
use crate::discovery::ResolveError;
use crate::dispatch::{
    CacheSync, Feed, LastError, Listener, PluginWorker, RetryPolicy, STOP_MARGIN, Stopped,
};
use crate::informer::{InformerKey, Informers, RequestFailure, SharedInformer};
use crate::plugin::{LoadedPlugin, Subscription};
use crate::readiness::{ForbiddenInformers, Hold, HoldKind, HoldPolicy, Readiness};
use crate::store::ObjectReader;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

/// A plugin could not be started.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A subscription's kind is not served.
    #[error("plugin {plugin:?}: {}{source}", cluster.as_ref().map(|c| format!("cluster {c:?}: ")).unwrap_or_default())]
    Resolve {
        /// The plugin.
        plugin: String,
        /// The cluster, when not the default one.
        cluster: Option<String>,
        /// Why.
        source: ResolveError,
    },
    /// A subscription in another cluster than the default one is not
    /// covered by the plugin's read grants there.
    #[error("{0}")]
    NotGranted(String),
    /// A subscription names a namespace for a kind discovery found to be
    /// cluster-scoped (a custom kind; built-in ones are refused with the
    /// manifest): the informer would drop the namespace.
    #[error("{0}")]
    ClusterScoped(String),
    /// A plugin of that name is already running.
    #[error("plugin {0:?} is already running")]
    Duplicate(String),
    /// There is no running plugin of that name to replace.
    #[error("plugin {0:?} is not running, so there is nothing to swap")]
    NotRunning(String),
}

/// One subscription of a plugin, with the informer it uses.
struct Subscribed {
    subscription: Subscription,
    key: InformerKey,
    informer: Arc<SharedInformer>,
}

/// What a plugin has while the daemon dispatches: a worker, and one listener
/// per subscription (in the order of `Entry::subscribed`).
struct Active {
    worker: PluginWorker,
    listeners: Vec<Arc<Listener>>,
    /// The scan of the objects it validates and subscribes to, if any.
    scan: Option<Scan>,
}

/// One running plugin.
struct Entry {
    plugin: LoadedPlugin,
    /// Every subscription with the informer key it resolved to.
    resolved: Vec<(Subscription, InformerKey)>,
    /// The informers taken: one per subscription while the plugin is owned
    /// (always, unless sharded), none otherwise.
    subscribed: Vec<Subscribed>,
    active: Option<Active>,
    since: SystemTime,
}

impl Entry {
    /// A plugin running from now.
    fn new(
        plugin: LoadedPlugin,
        resolved: Vec<(Subscription, InformerKey)>,
        subscribed: Vec<Subscribed>,
        active: Option<Active>,
    ) -> Self {
        Entry {
            plugin,
            resolved,
            subscribed,
            active,
            since: SystemTime::now(),
        }
    }

    /// Whether the plugin holds its informers (it is owned).
    fn is_subscribed(&self) -> bool {
        !self.subscribed.is_empty() || self.resolved.is_empty()
    }
}

struct State {
    plugins: BTreeMap<String, Entry>,
    dispatching: bool,
    /// Sharded: the plugins this replica owns; `None`: all of them.
    owned: Option<BTreeSet<String>>,
}

impl State {
    /// Whether `plugin` should hold its informers.
    fn owns(&self, plugin: &str) -> bool {
        self.owned
            .as_ref()
            .is_none_or(|owned| owned.contains(plugin))
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
    #[serde(with = "crate::units::time")]
    pub since: SystemTime,
    /// Receiving notifications (false on a replica standing by, and on a
    /// sharded replica that does not own it).
    pub dispatching: bool,
    /// The replica that owns it, under sharding (filled in by the
    /// endpoints from the sharding view; `None` otherwise).
    pub owner: Option<String>,
    /// Every listener's initial list handled.
    pub synced: bool,
    /// Whether the caches of every kind it subscribes to are complete, so
    /// its deliveries have started, or which it is waiting for (while
    /// dispatching; `None` otherwise).
    pub caches: Option<CacheSync>,
    /// Why the plugin is degraded (it skipped part of an initial list), if it is.
    pub degraded: Option<String>,
    /// `enforce`, or `dry-run` (shadow mode).
    pub mode: Mode,
    /// What it reads (its subscriptions, then its `get`s) and how each
    /// read is allowed: by the host's default, or by its own grant.
    pub reads: Vec<ReadView>,
    /// The operator's read grant of this plugin (`grants.reads`).
    pub read_grants: Vec<ReadRule>,
    /// One entry per subscription.
    pub subscriptions: Vec<SubscriptionStatus>,
    /// The last failure, if any.
    pub last_error: Option<LastError>,
    /// Its idle instance is dropped after this long with nothing to
    /// deliver (`plugins.<name>.reclaimIdleAfter`); `None`: never.
    #[serde(with = "crate::units::duration::option")]
    pub reclaim_idle_after: Option<std::time::Duration>,
    /// Times its idle instance was dropped since it last started
    /// dispatching.
    pub instances_reclaimed: u64,
    /// What its scan of the existing objects it validates found (`None`:
    /// it scans nothing here).
    pub scan: Option<crate::admission::findings::ScanReport>,
}

/// Status of one subscription's listener.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionStatus {
    /// The informer it listens to.
    pub informer: String,
    /// Its initial list handled.
    pub synced: bool,
    /// Why the plugin is degraded on this subscription, if it is.
    pub degraded: Option<String>,
    /// Notifications waiting.
    pub queue_depth: usize,
    /// Handled successfully.
    pub delivered: u64,
    /// Failed attempts.
    pub failed: u64,
    /// Given up on.
    pub skipped: u64,
    /// Time spent in handler calls (every attempt: `delivered + failed`
    /// calls), in microseconds.
    pub call_micros: u64,
}

/// A plugin worker that did not come back in time when it was stopped
/// (see [`PluginWorker::stop`]): detached, and reported here.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AbandonedWorker {
    /// The plugin.
    pub plugin: String,
    /// sha256 of the version it ran.
    pub sha256: String,
    /// When it was abandoned.
    #[serde(with = "crate::units::time")]
    pub at: SystemTime,
}

/// Abandoned workers kept for status; the count covers them all.
const ABANDONED_KEPT: usize = 32;

/// The plugins running in this process.
pub struct Daemon {
    informers: Arc<Informers>,
    retry: RetryPolicy,
    state: Mutex<State>,
    abandoned: Arc<Mutex<Abandoned>>,
    feed: Option<Arc<Feed>>,
    plugin_metrics: PluginMetricsRegistry,
    forbidden_informers: ForbiddenInformers,
    other_clusters: HoldPolicy,
    admission: Arc<AdmissionPlugins>,
}

/// The workers abandoned so far.
#[derive(Debug, Default)]
struct Abandoned {
    recent: std::collections::VecDeque<AbandonedWorker>,
    total: u64,
}

impl std::fmt::Debug for Daemon {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Daemon")
            .field("plugins", &self.names())
            .field("dispatching", &self.is_dispatching())
            .finish()
    }
}

impl Daemon {
    /// A dispatching daemon with no plugins yet.
    pub fn new(informers: Arc<Informers>, retry: RetryPolicy) -> Self {
        Self::with_dispatching(informers, retry, true)
    }

    /// A daemon standing by (see the module docs) with no plugins yet.
    pub fn standby(informers: Arc<Informers>, retry: RetryPolicy) -> Self {
        Self::with_dispatching(informers, retry, false)
    }

    /// A sharded daemon (see the module docs) owning no plugin yet: it
    /// dispatches, but only the plugins [`set_owned`](Daemon::set_owned)
    /// names.
    pub fn sharded(informers: Arc<Informers>, retry: RetryPolicy) -> Self {
        let daemon = Self::with_dispatching(informers, retry, true);
        daemon.lock().owned = Some(BTreeSet::new());
        daemon
    }

    fn with_dispatching(informers: Arc<Informers>, retry: RetryPolicy, dispatching: bool) -> Self {
        Daemon {
            informers,
            retry,
            state: Mutex::new(State {
                plugins: BTreeMap::new(),
                dispatching,
                owned: None,
            }),
            abandoned: Arc::default(),
            feed: None,
            plugin_metrics: PluginMetricsRegistry::new(),
            forbidden_informers: ForbiddenInformers::default(),
            other_clusters: HoldPolicy::default(),
            admission: Arc::default(),
        }
    }

    /// The plugins that admit: every started version that declares
    /// webhooks, whether or not this replica dispatches to it (any replica
    /// may be asked to review).
    pub fn admission(&self) -> &Arc<AdmissionPlugins> {
        &self.admission
    }

    /// This daemon, with `policy` for informers the API server forbids
    /// (`readiness.forbiddenInformers`).
    pub fn with_forbidden_informers(mut self, policy: ForbiddenInformers) -> Self {
        self.forbidden_informers = policy;
        self
    }

    /// This daemon, with `policy` for the informers of other clusters than
    /// the default one (`readiness.otherClusters`).
    pub fn with_other_clusters(mut self, policy: HoldPolicy) -> Self {
        self.other_clusters = policy;
        self
    }

    /// Its policy for informers the API server forbids.
    pub fn forbidden_informers(&self) -> ForbiddenInformers {
        self.forbidden_informers
    }

    /// This daemon, its plugins' workers publishing every finished delivery
    /// to `feed` (workers started from now on).
    pub fn with_feed(mut self, feed: Arc<Feed>) -> Self {
        self.feed = Some(feed);
        self
    }

    /// The feed of finished deliveries, if the daemon has one.
    pub fn feed(&self) -> Option<&Arc<Feed>> {
        self.feed.as_ref()
    }

    /// The metrics plugins define: load plugins with it
    /// ([`LoadOptions::metrics`](crate::plugin::LoadOptions::metrics)) and
    /// export it at `/metrics`.
    pub fn plugin_metrics(&self) -> &PluginMetricsRegistry {
        &self.plugin_metrics
    }

    /// The shared informers.
    pub fn informers(&self) -> &Arc<Informers> {
        &self.informers
    }

    /// True while plugins receive notifications.
    pub fn is_dispatching(&self) -> bool {
        self.lock().dispatching
    }

    /// Starts a plugin: resolves every subscription first (a kind the server
    /// does not serve refuses the plugin and starts nothing), then, if it is
    /// owned (always, unless sharded), takes the (shared) informers and,
    /// when dispatching, registers a listener per subscription. Listeners
    /// that join an informer which has already synced first receive its
    /// snapshot as initial-list adds.
    pub async fn start(&self, plugin: LoadedPlugin) -> Result<(), StartError> {
        let name = plugin.name().to_owned();
        if self.lock().plugins.contains_key(&name) {
            return Err(StartError::Duplicate(name));
        }
        let resolved = self.resolve(&plugin).await?;
        let mut state = self.lock();
        if state.plugins.contains_key(&name) {
            return Err(StartError::Duplicate(name));
        }
        let subscribed = if state.owns(&name) {
            self.acquire(&plugin, &resolved)
        } else {
            Vec::new()
        };
        plugin.context().metrics.defined.activate();
        self.admission.install(&plugin);
        let active =
            (state.dispatching && !subscribed.is_empty()).then(|| self.join(&plugin, &subscribed));
        state.plugins.insert(
            name.clone(),
            Entry::new(plugin, resolved, subscribed, active),
        );
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
        let resolved = self.resolve(&plugin).await?;
        let old = {
            let mut state = self.lock();
            let Some(old) = state.plugins.remove(&name) else {
                return Err(StartError::NotRunning(name));
            };
            let subscribed = if old.is_subscribed() {
                self.acquire(&plugin, &resolved)
            } else {
                Vec::new()
            };
            let active = old.active.as_ref().map(|previous| {
                let new = self.idle(&plugin, &subscribed);
                for (sub, listener) in subscribed.iter().zip(&new.listeners) {
                    match old.subscribed.iter().position(|o| o.key == sub.key) {
                        Some(at) => sub
                            .informer
                            .swap_listener(&previous.listeners[at], listener.clone()),
                        None => sub.informer.add_listener(listener.clone()),
                    }
                }
                for (sub, listener) in old.subscribed.iter().zip(&previous.listeners) {
                    if !subscribed.iter().any(|s| s.key == sub.key) {
                        sub.informer.remove_listener(listener);
                    }
                }
                new
            });
            // Unchanged metrics keep their series; the old version's updates
            // to the others are refused from here.
            plugin.context().metrics.defined.activate();
            // Reviews from here on go to the new version; those in flight
            // finish on the old one.
            self.admission.install(&plugin);
            // The new version judges every existing object again.
            if let Some(scan) = old.active.as_ref().and_then(|a| a.scan.as_ref()) {
                scan.stop();
            }
            let active = active.map(|active| Active {
                scan: self.scan(&plugin, &subscribed),
                ..active
            });
            // Not started yet: the old version's call in flight finishes first.
            state.plugins.insert(
                name.clone(),
                Entry::new(plugin, resolved, subscribed, active),
            );
            old
        };
        if let Some(previous) = old.active {
            self.stop_workers(vec![previous.worker]).await;
        }
        self.release(old.subscribed);
        if let Some(active) = self
            .lock()
            .plugins
            .get_mut(&name)
            .and_then(|e| e.active.as_mut())
        {
            active.worker.start();
        }
        tracing::debug!(plugin = %name, "plugin swapped to a new version");
        Ok(())
    }

    /// Stops a plugin: unregisters its listeners (their buffers are dropped),
    /// waits for the call in flight, releases informers nobody needs, and
    /// drops its metrics' series (the plugin is gone: its file removed,
    /// disabled, or running another plugin).
    pub async fn stop(&self, name: &str) -> bool {
        let Some(entry) = self.lock().plugins.remove(name) else {
            return false;
        };
        self.admission.remove(name);
        if let Some(active) = entry.active {
            leave(&entry.subscribed, &active);
            self.stop_workers(vec![active.worker]).await;
        }
        self.release(entry.subscribed);
        self.plugin_metrics.unregister(name);
        tracing::debug!(plugin = %name, "plugin stopped");
        true
    }

    /// Starts or stops dispatching (see the module docs). Starting makes
    /// every plugin a late listener of its informers; stopping unregisters
    /// every listener at once and waits for the calls in flight.
    pub async fn set_dispatching(&self, dispatching: bool) {
        let stopped: Vec<PluginWorker> = {
            let mut state = self.lock();
            if state.dispatching == dispatching {
                return;
            }
            state.dispatching = dispatching;
            let mut stopped = Vec::new();
            for entry in state.plugins.values_mut() {
                if dispatching {
                    if entry.active.is_none() && entry.is_subscribed() {
                        entry.active = Some(self.join(&entry.plugin, &entry.subscribed));
                    }
                } else if let Some(active) = entry.active.take() {
                    leave(&entry.subscribed, &active);
                    stopped.push(active.worker);
                }
            }
            stopped
        };
        self.stop_workers(stopped).await;
        tracing::info!(
            dispatching,
            "{}",
            if dispatching {
                "dispatching to plugins"
            } else {
                "stopped dispatching to plugins: standing by with warm caches"
            }
        );
    }

    /// Sharded: dispatches exactly the plugins in `owned` from now on (a
    /// plugin not running yet is taken up when it starts). A plugin newly
    /// owned takes its informers and joins them (initial list, then live
    /// events); one no longer owned leaves them at once, its buffer dropped,
    /// and returns once its call in flight is over (bounded as any stop);
    /// informers nobody uses any more stop. Unsharded, it makes the daemon
    /// sharded.
    pub async fn set_owned(&self, owned: BTreeSet<String>) {
        let (stopped, released) = {
            let mut state = self.lock();
            if state.owned.as_ref() == Some(&owned) {
                return;
            }
            let dispatching = state.dispatching;
            let mut stopped = Vec::new();
            let mut released = Vec::new();
            for (name, entry) in state.plugins.iter_mut() {
                let wanted = owned.contains(name);
                if wanted && !entry.is_subscribed() {
                    entry.subscribed = self.acquire(&entry.plugin, &entry.resolved);
                    if dispatching {
                        entry.active = Some(self.join(&entry.plugin, &entry.subscribed));
                    }
                    tracing::info!(plugin = %name, "owning the plugin: subscribed, with a fresh initial list");
                } else if !wanted && entry.is_subscribed() {
                    if let Some(active) = entry.active.take() {
                        leave(&entry.subscribed, &active);
                        stopped.push(active.worker);
                    }
                    released.push(std::mem::take(&mut entry.subscribed));
                    // Its look-ups must not keep the stores alive.
                    entry.plugin.cache_scope().bind(Vec::new());
                    tracing::info!(plugin = %name, "no longer owning the plugin: unsubscribed");
                }
            }
            state.owned = Some(owned);
            (stopped, released)
        };
        self.stop_workers(stopped).await;
        for subscribed in released {
            self.release(subscribed);
        }
    }

    /// The plugins this daemon dispatches under sharding (`None` unsharded).
    pub fn owned(&self) -> Option<BTreeSet<String>> {
        self.lock().owned.clone()
    }

    /// Stops every plugin, letting each drain its buffers until `deadline`.
    /// Returns by `deadline` plus [`STOP_MARGIN`]: a worker whose call is
    /// still in flight then is abandoned (the process is about to exit).
    /// Blocks: call it from a blocking thread.
    pub fn shutdown(&self, deadline: Instant) {
        let all = std::mem::take(&mut self.lock().plugins);
        for entry in all.values() {
            if let Some(active) = &entry.active {
                leave(&entry.subscribed, active);
            }
        }
        for (_, entry) in all {
            if let Some(active) = entry.active {
                let digest = active.worker.plugin().digest().to_owned();
                let name = active.worker.plugin().name().to_owned();
                let stopped = active.worker.stop(Some(deadline), deadline + STOP_MARGIN);
                record_stop(&self.abandoned, name, digest, stopped);
            }
            self.release(entry.subscribed);
        }
    }

    /// Stops workers off the async runtime, after their calls in flight,
    /// dropping what they still had buffered. Each is waited for at most its
    /// call deadline plus [`STOP_MARGIN`], then abandoned and reported.
    async fn stop_workers(&self, workers: Vec<PluginWorker>) {
        if workers.is_empty() {
            return;
        }
        let abandoned = self.abandoned.clone();
        let _ = tokio::task::spawn_blocking(move || {
            let started = Instant::now();
            for worker in workers {
                let digest = worker.plugin().digest().to_owned();
                let name = worker.plugin().name().to_owned();
                let give_up_at = started + worker.call_bound();
                record_stop(&abandoned, name, digest, worker.stop(None, give_up_at));
            }
        })
        .await;
    }

    /// Workers abandoned so far: the most recent, and how many in all.
    pub fn abandoned_workers(&self) -> (Vec<AbandonedWorker>, u64) {
        let abandoned = self.abandoned.lock().unwrap_or_else(|e| e.into_inner());
        (abandoned.recent.iter().cloned().collect(), abandoned.total)
    }

    /// Resolves every subscription of `plugin` in every cluster it runs on
    /// (the default one unless the operator names others, and only those
    /// configured): a kind one of them does not serve refuses the plugin,
    /// naming the cluster; so does a subscription in another cluster than
    /// the default one that the plugin's read grants do not cover there.
    /// Takes no informer. A namespace on a kind discovery names
    /// cluster-scoped refuses the plugin here, before any informer, delivery
    /// or cache look-up: the key would drop it, and the read check at load
    /// saw it.
    ///
    /// Another cluster than the default one whose discovery fails (it is
    /// unreachable, or does not serve a kind) is left out for now, logged,
    /// and tried again at the next [`refresh_clusters`](Self::refresh_clusters):
    /// one cluster never keeps a plugin from the others.
    async fn resolve(
        &self,
        plugin: &LoadedPlugin,
    ) -> Result<Vec<(Subscription, InformerKey)>, StartError> {
        self.resolve_in(plugin, &self.clusters_of(plugin)).await
    }

    /// [`resolve`](Self::resolve) in `clusters` alone.
    async fn resolve_in(
        &self,
        plugin: &LoadedPlugin,
        clusters: &[Option<ClusterName>],
    ) -> Result<Vec<(Subscription, InformerKey)>, StartError> {
        // Each cluster's discovery at once: start-up over several clusters
        // waits for the slowest, not for their sum.
        let resolved = futures::future::join_all(
            clusters
                .iter()
                .map(|cluster| self.resolve_one(plugin, cluster.as_ref())),
        )
        .await;
        let mut keys = Vec::new();
        for (cluster, outcome) in clusters.iter().zip(resolved) {
            match outcome {
                Ok(found) => keys.extend(found),
                Err(refused @ StartError::Resolve { .. }) if cluster.is_some() => {
                    tracing::warn!(
                        plugin = %plugin.name(),
                        "{refused}: not subscribing in that cluster for now"
                    );
                }
                Err(refused) => return Err(refused),
            }
        }
        Ok(keys)
    }

    /// The keys of `plugin`'s subscriptions in `cluster`.
    async fn resolve_one(
        &self,
        plugin: &LoadedPlugin,
        cluster: Option<&ClusterName>,
    ) -> Result<Vec<(Subscription, InformerKey)>, StartError> {
        let mut found = Vec::new();
        for (index, subscription) in plugin.manifest().subscriptions.iter().enumerate() {
            let key = self
                .informers
                .key_for(subscription, cluster)
                .await
                .map_err(|source| StartError::Resolve {
                    plugin: plugin.name().to_owned(),
                    cluster: cluster.map(|c| c.as_str().to_owned()),
                    source,
                })?;
            if let Some(namespace) = &subscription.namespace
                && key.namespace.is_none()
            {
                return Err(StartError::ClusterScoped(
                    crate::subscription::cluster_scoped_refusal(
                        plugin.name(),
                        index,
                        &subscription.kind,
                        namespace,
                    ),
                ));
            }
            if cluster.is_some() {
                let read = crate::capability::reads::Read {
                    group: &subscription.kind.group,
                    kind: &subscription.kind.kind,
                    namespace: key.namespace.as_deref(),
                    cluster,
                };
                let reads = plugin.kube().reads();
                if reads.allows(&read).is_none() {
                    return Err(StartError::NotGranted(reads.refusal(plugin.name(), &read)));
                }
            }
            found.push((subscription.clone(), key));
        }
        Ok(found)
    }

    /// Follows the clusters configured now (see `crate::fleet`): each
    /// plugin subscribes in the clusters it runs on where it does not yet
    /// (a late join: that cluster's objects as initial-list adds, delivered
    /// once its caches are in, while its other clusters go on), and leaves
    /// the clusters gone (its listeners there unregistered, what they held
    /// dropped, their informers released: nothing more is delivered from
    /// them). A cluster whose discovery failed before is tried again; one
    /// that fails again, or that the plugin's grants do not cover, is left
    /// out and logged.
    pub async fn refresh_clusters(&self) {
        for plugin in self.plugins() {
            let wanted = self.clusters_of(&plugin);
            let has: BTreeSet<Option<ClusterName>> = match self.lock().plugins.get(plugin.name()) {
                Some(entry) => entry
                    .resolved
                    .iter()
                    .map(|(_, k)| k.cluster.clone())
                    .collect(),
                None => continue,
            };
            let adding: Vec<Option<ClusterName>> = wanted
                .iter()
                .filter(|cluster| !has.contains(*cluster))
                .cloned()
                .collect();
            let removing = has.iter().any(|cluster| !wanted.contains(cluster));
            if !removing && (adding.is_empty() || plugin.manifest().subscriptions.is_empty()) {
                continue;
            }
            let added = match self.resolve_in(&plugin, &adding).await {
                Ok(keys) => keys,
                Err(refused) => {
                    tracing::error!(plugin = %plugin.name(), "{refused}");
                    Vec::new()
                }
            };
            let released = self.follow_clusters(&plugin, &wanted, added);
            self.release(released);
        }
    }

    /// Under the lock: `plugin`'s subscriptions outside `wanted` leave
    /// (returned, to be released), those of `added` join.
    fn follow_clusters(
        &self,
        plugin: &LoadedPlugin,
        wanted: &[Option<ClusterName>],
        added: Vec<(Subscription, InformerKey)>,
    ) -> Vec<Subscribed> {
        let mut state = self.lock();
        let Some(entry) = state.plugins.get_mut(plugin.name()) else {
            return Vec::new();
        };
        if !entry.plugin.same_version(plugin) {
            // Swapped meanwhile: the new version resolved its own clusters.
            return Vec::new();
        }
        let owned = entry.is_subscribed();
        entry
            .resolved
            .retain(|(_, key)| wanted.contains(&key.cluster));
        let listeners = entry
            .active
            .as_mut()
            .map(|active| std::mem::take(&mut active.listeners));
        let mut kept = Vec::new();
        let mut kept_listeners = Vec::new();
        let mut released = Vec::new();
        for (at, sub) in std::mem::take(&mut entry.subscribed)
            .into_iter()
            .enumerate()
        {
            let listener = listeners.as_ref().map(|l| l[at].clone());
            if wanted.contains(&sub.key.cluster) {
                kept.push(sub);
                kept_listeners.extend(listener);
                continue;
            }
            if let (Some(listener), Some(active)) = (listener, &entry.active) {
                sub.informer.remove_listener(&listener);
                active.worker.detach(&listener);
            }
            tracing::info!(plugin = %plugin.name(), "left {}: its cluster is gone", sub.key);
            released.push(sub);
        }
        if owned {
            for sub in self.take_informers(plugin, &added) {
                if let Some(active) = &entry.active {
                    let listener = active.worker.new_listener_in(
                        sub.key.cluster.clone(),
                        sub.subscription.clone(),
                        sub.key.resource.plural.as_str().into(),
                    );
                    active.worker.attach(listener.clone());
                    sub.informer.add_listener(listener.clone());
                    kept_listeners.push(listener);
                }
                tracing::info!(plugin = %plugin.name(), "joined {}", sub.key);
                kept.push(sub);
            }
        }
        entry.resolved.extend(added);
        if let Some(active) = entry.active.as_mut() {
            active.listeners = kept_listeners;
        }
        if owned {
            self.bind_cache(plugin, &kept);
        }
        entry.subscribed = kept;
        released
    }

    /// The clusters `plugin` runs on, the default one (`None`) first: those
    /// configured that `plugins.<name>.clusters` covers, by name or by a
    /// selector over their labels.
    fn clusters_of(&self, plugin: &LoadedPlugin) -> Vec<Option<ClusterName>> {
        let wanted = plugin.clusters();
        let default_name = self.informers.default_cluster_name();
        std::iter::once(None)
            .chain(self.informers.cluster_names().into_iter().map(Some))
            .filter(|cluster| {
                let labels = self.informers.labels(cluster.as_ref());
                wanted.covers_labelled(cluster.as_ref(), &default_name, &labels)
            })
            .collect()
    }

    /// Takes the informers of resolved subscriptions and binds the
    /// plugin's cache look-ups to their stores; registers nothing.
    fn acquire(
        &self,
        plugin: &LoadedPlugin,
        resolved: &[(Subscription, InformerKey)],
    ) -> Vec<Subscribed> {
        let subscribed = self.take_informers(plugin, resolved);
        self.bind_cache(plugin, &subscribed);
        subscribed
    }

    /// Takes the informers of resolved subscriptions.
    fn take_informers(
        &self,
        plugin: &LoadedPlugin,
        resolved: &[(Subscription, InformerKey)],
    ) -> Vec<Subscribed> {
        resolved
            .iter()
            .filter_map(|(subscription, key)| match self.informers.acquire(key) {
                Ok(informer) => Some(Subscribed {
                    informer,
                    subscription: subscription.clone(),
                    key: key.clone(),
                }),
                // Removed since the plugin was resolved: nothing to watch there.
                Err(gone) => {
                    tracing::warn!(plugin = %plugin.name(), "{gone}: not subscribing to {key}");
                    None
                }
            })
            .collect()
    }

    /// Binds `plugin`'s cache look-ups to the stores of `subscribed`.
    fn bind_cache(&self, plugin: &LoadedPlugin, subscribed: &[Subscribed]) {
        plugin.cache_scope().bind_clusters(
            self.informers.default_cluster().cloned(),
            subscribed
                .iter()
                .map(|s| {
                    (
                        s.key.cluster.clone(),
                        s.subscription.kind.clone(),
                        s.informer.store().clone() as Arc<dyn ObjectReader>,
                    )
                })
                .collect(),
        );
    }

    /// An idle worker for `plugin` with one listener per subscription,
    /// attached to the worker but registered with no informer.
    fn idle(&self, plugin: &LoadedPlugin, subscribed: &[Subscribed]) -> Active {
        let worker = PluginWorker::with_feed(plugin.clone(), self.retry, self.feed.clone());
        let listeners: Vec<Arc<Listener>> = subscribed
            .iter()
            .map(|s| {
                let listener = worker.new_listener_in(
                    s.key.cluster.clone(),
                    s.subscription.clone(),
                    s.key.resource.plural.as_str().into(),
                );
                worker.attach(listener.clone());
                listener
            })
            .collect();
        Active {
            worker,
            listeners,
            scan: None,
        }
    }

    /// Makes `plugin` a listener of its informers and starts its worker
    /// and its scan.
    fn join(&self, plugin: &LoadedPlugin, subscribed: &[Subscribed]) -> Active {
        let mut active = self.idle(plugin, subscribed);
        for (sub, listener) in subscribed.iter().zip(&active.listeners) {
            sub.informer.add_listener(listener.clone());
        }
        active.worker.start();
        active.scan = self.scan(plugin, subscribed);
        active
    }

    /// Starts the scan of the objects `plugin` both validates and
    /// subscribes to (see [`crate::admission::scan`]), if there are any.
    fn scan(&self, plugin: &LoadedPlugin, subscribed: &[Subscribed]) -> Option<Scan> {
        let Found::Admitting(admitting) = self.admission.find(plugin.name()) else {
            return None;
        };
        if !admitting.plugin.same_version(plugin) {
            return None;
        }
        let targets = subscribed
            .iter()
            .map(|s| ScanTarget {
                informer: s.informer.clone(),
                kind: s.subscription.kind.clone(),
                resource: s.key.resource.plural.as_str().to_owned(),
                cluster: s.key.cluster.clone(),
            })
            .collect();
        Scan::start(admitting, targets, self.admission.stats())
    }

    /// Gives back the informers of `subscribed`; each stops when unused.
    fn release(&self, subscribed: Vec<Subscribed>) {
        for sub in subscribed {
            self.informers.release(&sub.key);
        }
    }

    /// Names of the running plugins.
    pub fn names(&self) -> Vec<String> {
        self.lock().plugins.keys().cloned().collect()
    }

    /// True when every informer has synced and every dispatching plugin has
    /// handled its initial lists, or is degraded on them (it skipped a
    /// notification of one: a plugin that cannot get through its initial
    /// list does not hold the daemon back). A replica standing by is ready
    /// once its caches are synced. Under `hold-plugin`, an informer the API
    /// server forbids and the plugins subscribed to it do not count (see
    /// [`readiness`](Self::readiness)).
    pub fn ready(&self) -> bool {
        self.readiness().ready
    }

    /// What holds readiness, by name and why: every informer that has not
    /// synced (with the request the API server refused, if it did), then
    /// every dispatching plugin waiting for its caches or handling its
    /// initial list. Under `hold-plugin` an informer whose last request was
    /// refused `403 Forbidden`, and each plugin subscribed to such an
    /// informer, is listed as not holding it instead.
    pub fn readiness(&self) -> Readiness {
        let spare = self.forbidden_informers == ForbiddenInformers::HoldPlugin;
        let spare_clusters = self.other_clusters == HoldPolicy::HoldPlugin;
        let forbidden = |informer: &SharedInformer| {
            if informer.has_synced() {
                return None;
            }
            informer
                .stats()
                .last_failure()
                .filter(RequestFailure::is_forbidden)
        };
        // Under `otherClusters: hold-plugin`, an informer of another
        // cluster than the default one that has not synced holds only its
        // plugins.
        let elsewhere = |informer: &SharedInformer| {
            spare_clusters && informer.key().cluster.is_some() && !informer.has_synced()
        };
        let (mut holding, mut not_holding) = (Vec::new(), Vec::new());
        let state = self.lock();
        let mut informers = self.informers.all();
        informers.sort_by_cached_key(|informer| informer.key().to_string());
        for informer in informers.iter().filter(|i| !i.has_synced()) {
            let key = informer.key().to_string();
            let users: Vec<&str> = state
                .plugins
                .iter()
                .filter(|(_, e)| e.subscribed.iter().any(|s| s.key.to_string() == key))
                .map(|(name, _)| name.as_str())
                .collect();
            let failure = informer.stats().last_failure();
            let mut why = match &failure {
                Some(failure) => format!("not synced: {failure}"),
                None => "waiting for its first list".to_owned(),
            };
            if !users.is_empty() {
                why.push_str(&format!(" (subscribed: {})", users.join(", ")));
            }
            let spared = (spare && forbidden(informer).is_some()) || elsewhere(informer);
            let hold = Hold {
                kind: HoldKind::Informer,
                name: key,
                why,
                failure,
            };
            if spared {
                not_holding.push(hold);
            } else {
                holding.push(hold);
            }
        }
        for (name, entry) in &state.plugins {
            let Some(active) = &entry.active else {
                continue;
            };
            // A listener waiting on a cluster the policy spares (another
            // cluster than the default one, not synced) does not hold the
            // plugin: its other clusters deliver meanwhile.
            let spared_cluster = |listener: &Listener| {
                listener.cluster().is_some()
                    && entry.subscribed.iter().any(|s| {
                        s.key.cluster.as_ref() == listener.cluster() && elsewhere(&s.informer)
                    })
            };
            let unsettled: Vec<&Arc<Listener>> = active
                .listeners
                .iter()
                .filter(|listener| !listener.initial_list_settled())
                .collect();
            if unsettled.is_empty() {
                continue;
            }
            let holding_it: Vec<&Arc<Listener>> = unsettled
                .iter()
                .copied()
                .filter(|listener| !spared_cluster(listener))
                .collect();
            let blocked: Vec<(String, RequestFailure)> = entry
                .subscribed
                .iter()
                .filter_map(|s| Some((s.key.to_string(), forbidden(&s.informer)?)))
                .collect();
            let caches = active.worker.cache_sync();
            // Waiting for a cache of its own (one not spared), or handling its
            // initial list.
            let waiting = holding_it.is_empty()
                || holding_it
                    .iter()
                    .any(|listener| !listener.initial_list_received());
            let why = if waiting {
                // The caches it waits for, those of spared clusters too
                // only when nothing else holds it.
                let waiting_for = if holding_it.is_empty() {
                    caches.waiting_for.clone()
                } else {
                    holding_it
                        .iter()
                        .filter(|listener| !listener.initial_list_received())
                        .map(|listener| listener.waiting_name())
                        .collect()
                };
                let mut why = format!("waiting for caches: {}", waiting_for.join(", "));
                for (key, failure) in &blocked {
                    why.push_str(&format!(
                        "; informer {key} is forbidden to {} {}",
                        failure.verb, failure.resource
                    ));
                }
                why
            } else {
                let queued: usize = holding_it.iter().map(|l| l.depth()).sum();
                format!("handling its initial list ({queued} notifications queued)")
            };
            let hold = Hold {
                kind: HoldKind::Plugin,
                name: name.clone(),
                why,
                failure: blocked.first().map(|(_, failure)| failure.clone()),
            };
            // Spared when what it waits for is forbidden, or in another
            // cluster, and the policy says so.
            if (spare && !blocked.is_empty()) || holding_it.is_empty() {
                not_holding.push(hold);
            } else {
                holding.push(hold);
            }
        }
        Readiness::new(holding, not_holding)
    }

    /// Status of every running plugin.
    pub fn status(&self) -> Vec<PluginStatus> {
        self.lock()
            .plugins
            .iter()
            .map(|(name, entry)| {
                let subscriptions: Vec<SubscriptionStatus> = entry
                    .subscribed
                    .iter()
                    .enumerate()
                    .map(|(at, sub)| {
                        let listener = entry.active.as_ref().map(|a| &a.listeners[at]);
                        let count = |read: fn(&Listener) -> u64| listener.map_or(0, |l| read(l));
                        SubscriptionStatus {
                            informer: sub.key.to_string(),
                            synced: listener.is_some_and(|l| l.has_synced()),
                            degraded: listener.and_then(|l| l.degraded()),
                            queue_depth: listener.map_or(0, |l| l.depth()),
                            delivered: count(|l| l.stats.delivered.load(Ordering::Relaxed)),
                            failed: count(|l| l.stats.failed.load(Ordering::Relaxed)),
                            skipped: count(|l| l.stats.skipped.load(Ordering::Relaxed)),
                            call_micros: count(|l| l.stats.call_micros.load(Ordering::Relaxed)),
                        }
                    })
                    .collect();
                PluginStatus {
                    name: name.clone(),
                    version: entry.plugin.manifest().version.clone(),
                    sha256: entry.plugin.digest().to_owned(),
                    since: entry.since,
                    dispatching: entry.active.is_some(),
                    owner: None,
                    synced: entry.active.is_some() && subscriptions.iter().all(|s| s.synced),
                    caches: entry.active.as_ref().map(|a| a.worker.cache_sync()),
                    degraded: subscriptions
                        .iter()
                        .find_map(|s| s.degraded.as_ref())
                        .map(|reason| format!("initial list incomplete: {reason}")),
                    mode: entry.plugin.context().kube.mode(),
                    reads: entry
                        .plugin
                        .manifest()
                        .read_views(entry.plugin.context().kube.reads()),
                    read_grants: entry.plugin.context().kube.reads().granted.clone(),
                    subscriptions,
                    last_error: entry.active.as_ref().and_then(|a| a.worker.last_error()),
                    reclaim_idle_after: entry.plugin.idle_policy().reclaim_after,
                    instances_reclaimed: entry
                        .active
                        .as_ref()
                        .map_or(0, |a| a.worker.instances_reclaimed()),
                    scan: self
                        .admission
                        .stats()
                        .findings(name)
                        .map(|findings| findings.report()),
                }
            })
            .collect()
    }

    /// The running plugins.
    pub fn plugins(&self) -> Vec<LoadedPlugin> {
        self.lock()
            .plugins
            .values()
            .map(|e| e.plugin.clone())
            .collect()
    }

    /// The listeners of a running plugin (none while standing by).
    pub fn listeners(&self, name: &str) -> Vec<Arc<Listener>> {
        self.lock()
            .plugins
            .get(name)
            .and_then(|e| e.active.as_ref())
            .map(|a| a.listeners.clone())
            .unwrap_or_default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Unregisters an active plugin's listeners from their informers and
/// stops its scan.
fn leave(subscribed: &[Subscribed], active: &Active) {
    for (sub, listener) in subscribed.iter().zip(&active.listeners) {
        sub.informer.remove_listener(listener);
    }
    if let Some(scan) = &active.scan {
        scan.stop();
    }
}

/// Records how a worker stopped: an abandoned one is kept for status.
fn record_stop(abandoned: &Mutex<Abandoned>, plugin: String, sha256: String, stopped: Stopped) {
    if stopped == Stopped::Exited {
        return;
    }
    let mut abandoned = abandoned.lock().unwrap_or_else(|e| e.into_inner());
    abandoned.total += 1;
    if abandoned.recent.len() == ABANDONED_KEPT {
        abandoned.recent.pop_front();
    }
    abandoned.recent.push_back(AbandonedWorker {
        plugin,
        sha256,
        at: SystemTime::now(),
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::{LoadOptions, PluginEngine};
    use herald_test_artifacts::NOOP;
    use std::time::Duration;

    /// The `noop` fixture, loaded against `daemon`'s plugin metrics.
    fn noop(engine: &PluginEngine, daemon: &Daemon) -> LoadedPlugin {
        let options = LoadOptions {
            metrics: Some(daemon.plugin_metrics().clone()),
            ..LoadOptions::default()
        };
        LoadedPlugin::load(engine, &std::fs::read(NOOP).unwrap(), options).unwrap()
    }

    /// The `named-noop` fixture as plugin `name`.
    fn named(engine: &PluginEngine, daemon: &Daemon, name: &str) -> LoadedPlugin {
        let options = LoadOptions {
            metrics: Some(daemon.plugin_metrics().clone()),
            config: Some(serde_json::json!({ "name": name }).to_string()),
            ..LoadOptions::default()
        };
        let bytes = std::fs::read(herald_test_artifacts::NAMED_NOOP).unwrap();
        LoadedPlugin::load(engine, &bytes, options).unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_sharded_daemon_subscribes_only_the_plugins_it_owns_and_informers_follow() {
        let server = herald_apiserver::start(Default::default()).await.unwrap();
        let client = kube::Client::try_from(kube::Config::new(server.url().parse().unwrap()));
        let informers = Arc::new(Informers::new(client.unwrap(), Default::default()));
        let daemon = Daemon::sharded(informers.clone(), RetryPolicy::default());
        let engine = PluginEngine::new(Default::default()).unwrap();
        daemon.start(named(&engine, &daemon, "one")).await.unwrap();
        daemon.start(named(&engine, &daemon, "two")).await.unwrap();
        assert!(informers.all().is_empty(), "nothing owned, nothing watched");
        assert!(daemon.status().iter().all(|p| !p.dispatching));

        let owned = |names: &[&str]| names.iter().map(|n| (*n).to_owned()).collect();
        daemon.set_owned(owned(&["one"])).await;
        assert_eq!(informers.all().len(), 1);
        assert_eq!(daemon.listeners("one").len(), 1);
        assert!(daemon.listeners("two").is_empty());

        // A swap of a plugin not owned takes no informer either.
        daemon.swap(named(&engine, &daemon, "two")).await.unwrap();
        assert!(daemon.listeners("two").is_empty());
        assert_eq!(informers.all()[0].processor().listener_count(), 1);

        daemon.set_owned(owned(&["two"])).await;
        assert!(daemon.listeners("one").is_empty());
        assert_eq!(daemon.listeners("two").len(), 1);
        assert_eq!(informers.all().len(), 1);

        daemon.set_owned(owned(&[])).await;
        assert!(
            informers.all().is_empty(),
            "the last owned plugin gone, its informer stops"
        );
        assert!(daemon.status().iter().all(|p| !p.dispatching));
        // A plugin owned before it starts is subscribed when it does.
        daemon.set_owned(owned(&["three"])).await;
        daemon
            .start(named(&engine, &daemon, "three"))
            .await
            .unwrap();
        assert_eq!(daemon.listeners("three").len(), 1);
        daemon.shutdown(Instant::now() + Duration::from_secs(5));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_versions_metrics_go_live_when_it_starts_or_is_swapped_in_and_go_when_it_stops() {
        let server = herald_apiserver::start(Default::default()).await.unwrap();
        let client = kube::Client::try_from(kube::Config::new(server.url().parse().unwrap()));
        let informers = Informers::new(client.unwrap(), Default::default());
        let daemon = Daemon::new(Arc::new(informers), RetryPolicy::default());
        let engine = PluginEngine::new(Default::default()).unwrap();
        let registry = daemon.plugin_metrics().clone();
        let active = |plugin: &LoadedPlugin| plugin.context().metrics.defined.is_active();

        let v1 = noop(&engine, &daemon);
        assert!(registry.plugins().is_empty(), "loaded is not yet live");
        daemon.start(v1.clone()).await.unwrap();
        assert!(active(&v1));
        assert_eq!(registry.plugins(), ["noop"]);

        // Refused before it would go live: what runs keeps its metrics.
        let duplicate = noop(&engine, &daemon);
        assert!(daemon.start(duplicate.clone()).await.is_err());
        assert!(active(&v1) && !active(&duplicate));

        let v2 = noop(&engine, &daemon);
        daemon.swap(v2.clone()).await.unwrap();
        assert!(active(&v2) && !active(&v1));

        assert!(daemon.stop("noop").await);
        assert!(!active(&v2));
        assert!(registry.plugins().is_empty());
        daemon.shutdown(Instant::now() + Duration::from_secs(5));
    }
}
