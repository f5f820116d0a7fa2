//! The sharding loop: every `retryPeriod`, one list of the group's Leases,
//! the member Lease renewed, the plan of [`balance`](super::balance) carried
//! out through one [`LeaseLock`] per plugin, and the owned set published;
//! and the handle that stops it.

use super::balance::{self, Holding, View};
use super::view::{Change, ShardView};
use super::{GROUP_LABEL, ROLE_LABEL, Role, ShardError, lease_labels, member_lease, plugin_lease};
use crate::leader::{Attempt, LeaderError, LeaseLock, LeaseSettings};
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, ListParams};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// The plugins this replica runs (loaded), asked once per round.
pub type KnownPlugins = Arc<dyn Fn() -> BTreeSet<String> + Send + Sync>;

/// One plugin's Lease as this replica handles it.
struct PluginLease {
    lock: LeaseLock,
    /// When the last successful acquire or renewal was sent, while held.
    renewed: Option<Instant>,
    /// Being given up: no longer published as owned; released once the
    /// daemon has stopped dispatching it.
    releasing: bool,
}

/// Takes and keeps this replica's share of the plugins.
struct Coordinator {
    settings: LeaseSettings,
    api: Api<Lease>,
    client: kube::Client,
    member: LeaseLock,
    members: BTreeMap<String, LeaseLock>,
    plugins: BTreeMap<String, PluginLease>,
    known: KnownPlugins,
    owned: watch::Sender<BTreeSet<String>>,
    applied: watch::Receiver<BTreeSet<String>>,
    view: Arc<ShardView>,
}

/// A running sharding coordinator (see [`Sharding::spawn`]).
#[derive(Debug)]
pub struct Sharding {
    owned: watch::Receiver<BTreeSet<String>>,
    view: Arc<ShardView>,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

impl Sharding {
    /// Starts contending, as `settings.identity`, for the plugins `known`
    /// returns, in the group `settings.name` (the prefix of every Lease it
    /// writes). Publishes the plugins this replica may dispatch on
    /// [`owned`](Sharding::owned); whoever applies them reports what it
    /// applied on `applied`, and a plugin is only released once `applied`
    /// no longer holds it (it has stopped dispatching).
    pub fn spawn(
        client: kube::Client,
        settings: LeaseSettings,
        known: KnownPlugins,
        applied: watch::Receiver<BTreeSet<String>>,
    ) -> Result<Self, ShardError> {
        super::validate(&settings)?;
        let view = Arc::new(ShardView::new(settings.identity.clone()));
        let member = LeaseLock::new(
            client.clone(),
            &settings.namespace,
            &member_lease(&settings.name, &settings.identity),
            &settings.identity,
            settings.lease_duration,
        )
        .with_labels(lease_labels(&settings.name, Role::Member));
        let (owned, owned_rx) = watch::channel(BTreeSet::new());
        let coordinator = Coordinator {
            api: Api::namespaced(client.clone(), &settings.namespace),
            client,
            settings,
            member,
            members: BTreeMap::new(),
            plugins: BTreeMap::new(),
            known,
            owned,
            applied,
            view: view.clone(),
        };
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(coordinator.run(async move {
            let _ = stopped.await;
        }));
        Ok(Sharding {
            owned: owned_rx,
            view,
            stop: Some(stop),
            task,
        })
    }

    /// The plugins this replica owns and may dispatch, as they change.
    /// Starts empty; a plugin leaves it `renewDeadline` after its last
    /// renewal at the latest, before any other replica may take it.
    pub fn owned(&self) -> watch::Receiver<BTreeSet<String>> {
        self.owned.clone()
    }

    /// Who owns what, as this replica last observed it.
    pub fn view(&self) -> &Arc<ShardView> {
        &self.view
    }

    /// Stops contending and releases every Lease this replica holds (its
    /// plugins' and its membership), so others take them at their next
    /// round. Call it once nothing dispatches any more. Bounded by
    /// `renewDeadline`.
    pub async fn release(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = (&mut self.task).await;
    }

    /// Stops at once without releasing, as a crash would: the Leases expire
    /// on their own. Stop dispatching first.
    pub fn abort(self) {
        self.task.abort();
    }
}

impl Coordinator {
    async fn run(mut self, stop: impl std::future::Future<Output = ()>) {
        tokio::pin!(stop);
        let identity = self.settings.identity.clone();
        tracing::info!(%identity, group = %self.settings.name, namespace = %self.settings.namespace, "sharding on: dispatching only the plugins whose Lease this replica holds");
        loop {
            let budget = self.round_budget();
            tokio::select! {
                biased;
                () = &mut stop => break,
                finished = tokio::time::timeout(budget, self.round()) => {
                    if finished.is_err() {
                        tracing::warn!(after = ?budget, "a sharding round did not finish in time");
                    }
                }
            }
            self.drop_overdue();
            self.publish();
            tokio::select! {
                biased;
                () = &mut stop => break,
                () = tokio::time::sleep(self.settings.retry_period) => {}
                // A plugin being given up is released as soon as the daemon
                // has stopped it, not a retry period later.
                Ok(()) = self.applied.changed(), if self.plugins.values().any(|p| p.releasing) => {}
            }
        }
        self.release_all().await;
    }

    /// How long a round may take: until the earliest renew deadline of a
    /// held plugin (or one renew deadline).
    fn round_budget(&self) -> std::time::Duration {
        let now = Instant::now();
        self.plugins
            .values()
            .filter_map(|p| p.renewed)
            .map(|at| (at + self.settings.renew_deadline).saturating_duration_since(now))
            .min()
            .unwrap_or(self.settings.renew_deadline)
    }

    async fn round(&mut self) {
        let started = Instant::now();
        let known = (self.known)();
        let selector = format!("{GROUP_LABEL}={}", self.settings.name);
        let listed = match self
            .api
            .list(&ListParams::default().labels(&selector))
            .await
        {
            Ok(list) => list.items,
            Err(err) => {
                tracing::warn!(group = %self.settings.name, "could not list the sharding Leases (will retry): {err}");
                return;
            }
        };
        let mut leases: BTreeMap<String, Lease> = listed
            .into_iter()
            .filter_map(|l| Some((l.metadata.name.clone()?, l)))
            .collect();

        // Membership: ours renewed, the others observed.
        let ours = leases.remove(self.member.name());
        if let Err(err) = self.member.try_acquire_or_renew(ours).await {
            tracing::warn!("could not renew this replica's member Lease: {err}");
        }
        let mut members = BTreeSet::from([self.settings.identity.clone()]);
        for (name, lease) in &leases {
            if !is_role(lease, Role::Member) {
                continue;
            }
            let lock = self.members.entry(name.clone()).or_insert_with(|| {
                LeaseLock::new(
                    self.client.clone(),
                    &self.settings.namespace,
                    name,
                    &self.settings.identity,
                    self.settings.lease_duration,
                )
            });
            lock.observe(lease.spec.clone().unwrap_or_default());
            if let Some(holder) = lock.valid_holder() {
                members.insert(holder.to_owned());
            }
        }
        self.members.retain(|name, _| leases.contains_key(name));

        // Plugins: every known one observed (a missing Lease is free).
        for name in &known {
            let lease_name = plugin_lease(&self.settings.name, name);
            let plugin = self
                .plugins
                .entry(name.clone())
                .or_insert_with(|| PluginLease {
                    lock: LeaseLock::new(
                        self.client.clone(),
                        &self.settings.namespace,
                        &lease_name,
                        &self.settings.identity,
                        self.settings.lease_duration,
                    )
                    .with_labels(lease_labels(&self.settings.name, Role::Plugin)),
                    renewed: None,
                    releasing: false,
                });
            let spec = leases
                .get(&lease_name)
                .and_then(|l| l.spec.clone())
                .unwrap_or_default();
            plugin.lock.observe(spec);
        }
        let view = View {
            me: self.settings.identity.clone(),
            members: members.clone(),
            plugins: known
                .iter()
                .map(|name| (name.clone(), self.holding(&self.plugins[name])))
                .collect(),
        };
        let plan = balance::plan(&view);
        for name in &plan.release {
            if let Some(plugin) = self.plugins.get_mut(name) {
                if !plugin.releasing {
                    tracing::info!(plugin = %name, members = members.len(), share = view.share(), "giving a plugin up to rebalance");
                }
                plugin.releasing = true;
            }
        }
        for (name, plugin) in &mut self.plugins {
            if !known.contains(name) && plugin.renewed.is_some() {
                plugin.releasing = true;
            }
        }
        self.publish();

        // Writes, all at once: renewals, releases, acquisitions.
        let applied = &self.applied.borrow().clone();
        let acquire: BTreeSet<&String> = plan.acquire.iter().collect();
        let namespace_leases = &leases;
        let settings = &self.settings;
        let view_handle = &self.view;
        let writes = self.plugins.iter_mut().filter_map(|(name, plugin)| {
            let wanted = acquire.contains(name);
            if plugin.renewed.is_none() && !wanted {
                return None;
            }
            let current = namespace_leases
                .get(&plugin_lease(&settings.name, name))
                .cloned();
            Some(async move {
                let result = if plugin.renewed.is_some()
                    && plugin.releasing
                    && !applied.contains(name)
                {
                    plugin.renewed = None;
                    plugin.releasing = false;
                    match plugin.lock.release(current).await {
                        Ok(_) => {
                            tracing::info!(plugin = %name, "released the plugin's Lease");
                            view_handle.count(Change::Released);
                            Ok(())
                        }
                        Err(err) => Err(err),
                    }
                } else {
                    match plugin.lock.try_acquire_or_renew(current).await {
                        Ok(Attempt::Held) => {
                            if plugin.renewed.is_none() {
                                tracing::info!(plugin = %name, "acquired the plugin's Lease: this replica now dispatches it");
                                view_handle.count(Change::Acquired);
                            }
                            plugin.renewed = Some(started);
                            Ok(())
                        }
                        Ok(Attempt::HeldBy { holder }) => {
                            if plugin.renewed.take().is_some() {
                                tracing::warn!(plugin = %name, %holder, "lost the plugin's Lease to another replica: stopping it");
                                view_handle.count(Change::Lost);
                                plugin.releasing = false;
                            }
                            Ok(())
                        }
                        Err(err) => Err(err),
                    }
                };
                if let Err(err) = result {
                    log_write_error(name, plugin.renewed.is_some(), &err);
                }
            })
        });
        futures::future::join_all(writes).await;
        self.plugins
            .retain(|name, plugin| known.contains(name) || plugin.renewed.is_some());
        let owners = known
            .iter()
            .map(|name| {
                let owner = match self.holding(&self.plugins[name]) {
                    Holding::Mine => Some(self.settings.identity.clone()),
                    Holding::Other(other) => Some(other),
                    Holding::Free { .. } => None,
                };
                (name.clone(), owner)
            })
            .collect();
        let owned = self
            .plugins
            .values()
            .filter(|p| p.renewed.is_some() && !p.releasing)
            .count();
        self.view.observed(owners, members.len(), owned);
    }

    /// Who holds `plugin`, by our clock.
    fn holding(&self, plugin: &PluginLease) -> Holding {
        if plugin.renewed.is_some() {
            return Holding::Mine;
        }
        match plugin.lock.valid_holder() {
            // Our identity on a Lease we do not hold: a previous run of
            // this replica that did not release it. Ours to take back.
            Some(holder) if holder == self.settings.identity => Holding::Free { orphaned: false },
            Some(holder) => Holding::Other(holder.to_owned()),
            None => Holding::Free {
                orphaned: plugin.lock.free_for(self.settings.lease_duration),
            },
        }
    }

    /// Stops owning what was not renewed within `renewDeadline`, before
    /// anyone else may take it over.
    fn drop_overdue(&mut self) {
        let now = Instant::now();
        for (name, plugin) in &mut self.plugins {
            if let Some(at) = plugin.renewed
                && now >= at + self.settings.renew_deadline
            {
                tracing::warn!(plugin = %name, deadline = ?self.settings.renew_deadline, "could not renew the plugin's Lease within renewDeadline: stopping it");
                plugin.renewed = None;
                plugin.releasing = false;
                self.view.count(Change::Lost);
            }
        }
    }

    /// Publishes what this replica may dispatch: held and not being given up.
    fn publish(&self) {
        let owned: BTreeSet<String> = self
            .plugins
            .iter()
            .filter(|(_, p)| p.renewed.is_some() && !p.releasing)
            .map(|(name, _)| name.clone())
            .collect();
        self.owned.send_if_modified(|current| {
            let changed = *current != owned;
            *current = owned;
            changed
        });
    }

    /// On stop: nothing is published as owned any more; every held Lease
    /// is released, bounded by `renewDeadline`.
    async fn release_all(mut self) {
        self.owned.send_replace(BTreeSet::new());
        let deadline = self.settings.renew_deadline;
        let view = self.view.clone();
        let releases = self
            .plugins
            .iter_mut()
            .filter(|(_, p)| p.renewed.is_some())
            .map(|(name, plugin)| {
                let view = view.clone();
                async move {
                    let current = plugin.lock.get().await?;
                    if plugin.lock.release(current).await? {
                        view.count(Change::Released);
                        tracing::info!(plugin = %name, "released the plugin's Lease");
                    }
                    Ok::<(), LeaderError>(())
                }
            });
        let member = &mut self.member;
        let all = async {
            let results = futures::future::join_all(releases).await;
            let member_result = async {
                let current = member.get().await?;
                member.release(current).await
            }
            .await;
            (results, member_result)
        };
        match tokio::time::timeout(deadline, all).await {
            Ok((results, member_result)) => {
                for err in results.into_iter().filter_map(Result::err) {
                    tracing::warn!(
                        "could not release a plugin's Lease (it expires on its own): {err}"
                    );
                }
                if let Err(err) = member_result {
                    tracing::warn!(
                        "could not release this replica's member Lease (it expires on its own): {err}"
                    );
                }
            }
            Err(_) => tracing::warn!(
                ?deadline,
                "releasing the sharding Leases took too long: what is left expires on its own"
            ),
        }
        self.view.observed(BTreeMap::new(), 0, 0);
    }
}

fn is_role(lease: &Lease, role: Role) -> bool {
    lease
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(ROLE_LABEL))
        .is_some_and(|r| r == role.as_str())
}

fn log_write_error(plugin: &str, held: bool, err: &LeaderError) {
    match err {
        LeaderError::Conflict { .. } if !held => {
            tracing::debug!(%plugin, "another replica took the plugin's Lease first")
        }
        _ if held => {
            tracing::warn!(%plugin, "could not renew the plugin's Lease (will retry until renewDeadline): {err}")
        }
        _ => tracing::debug!(%plugin, "did not acquire the plugin's Lease: {err}"),
    }
}
