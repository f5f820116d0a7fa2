//! The plugins that admit, by name: the daemon installs each version it
//! starts or swaps in and removes the ones it stops, and every review looks
//! its plugin up here once. A review holds the version it found until it
//! is answered, so a swap never answers one twice or drops one: reviews
//! already in flight finish on the old version, later ones go to the new.

use super::instances::Instances;
use super::metrics::AdmissionStats;
use crate::plugin::LoadedPlugin;
use crate::webhook::{FailurePolicy, Webhooks};
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

/// One version of a plugin that admits: its webhooks, its mode and the
/// instances its admission calls run in (a few, each one call at a time,
/// beside its handlers' instance; their writes, Events and HTTP refused).
pub struct Admitting {
    /// The plugin.
    pub plugin: LoadedPlugin,
    /// What it admits.
    pub webhooks: Webhooks,
    /// In audit mode (`plugins.<name>.admission: audit`, the default of
    /// `mode: dry-run`) a refusal becomes a warning and a change is not
    /// made.
    pub audit: bool,
    /// The instances admission calls run in.
    pub(super) instances: Instances,
}

impl std::fmt::Debug for Admitting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admitting")
            .field("plugin", &self.plugin)
            .field("webhooks", &self.webhooks)
            .field("audit", &self.audit)
            .finish_non_exhaustive()
    }
}

/// What a plugin's path answers once the plugin is gone: the failure
/// policies it last declared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gone {
    /// Its validating webhook's policy, if it had one.
    pub validating: Option<FailurePolicy>,
    /// Its mutating webhook's policy, if it had one.
    pub mutating: Option<FailurePolicy>,
}

impl Gone {
    /// The policy it last declared for `decision`, if it had that webhook.
    pub fn policy(&self, decision: crate::webhook::Decision) -> Option<FailurePolicy> {
        match decision {
            crate::webhook::Decision::Validate => self.validating,
            crate::webhook::Decision::Mutate => self.mutating,
        }
    }
}

/// Every plugin that admits, by name, and the ones that did.
#[derive(Debug, Default)]
pub struct AdmissionPlugins {
    admitting: RwLock<BTreeMap<String, Arc<Admitting>>>,
    gone: RwLock<BTreeMap<String, Gone>>,
    stats: Arc<AdmissionStats>,
}

/// What a review finds under a plugin's name.
#[derive(Debug, Clone)]
pub enum Found {
    /// The version that answers it.
    Admitting(Arc<Admitting>),
    /// A plugin that admitted once and is gone: answered by its last
    /// failure policies.
    Gone(Gone),
    /// No plugin of that name ever admitted here.
    Unknown,
}

impl AdmissionPlugins {
    /// No plugin yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Makes `plugin` the version of its name that answers reviews from
    /// now on; a version that admits nothing removes the name (its path
    /// then answers by the last failure policies).
    pub fn install(&self, plugin: &LoadedPlugin) {
        let name = plugin.name().to_owned();
        let (Some(webhooks), Some(instances)) = (
            plugin.manifest().admission.clone(),
            Instances::new(plugin, super::instances::bound()),
        ) else {
            self.remove(&name);
            return;
        };
        let admitting = Arc::new(Admitting {
            plugin: plugin.clone(),
            audit: plugin.admission_mode() == crate::capability::AdmissionMode::Audit,
            webhooks,
            instances,
        });
        lock_write(&self.gone).remove(&name);
        lock_write(&self.admitting).insert(name, admitting);
    }

    /// Removes the plugin `name`; its path answers by its last failure
    /// policies from now on.
    pub fn remove(&self, name: &str) {
        if let Some(old) = lock_write(&self.admitting).remove(name) {
            let policy = |w: &Option<crate::webhook::Webhook>| w.as_ref().map(|w| w.failure_policy);
            lock_write(&self.gone).insert(
                name.to_owned(),
                Gone {
                    validating: policy(&old.webhooks.validating),
                    mutating: policy(&old.webhooks.mutating),
                },
            );
        }
    }

    /// What answers reviews for `name`.
    pub fn find(&self, name: &str) -> Found {
        if let Some(admitting) = lock_read(&self.admitting).get(name) {
            return Found::Admitting(admitting.clone());
        }
        match lock_read(&self.gone).get(name) {
            Some(gone) => Found::Gone(*gone),
            None => Found::Unknown,
        }
    }

    /// The versions answering reviews now, by name.
    pub fn admitting(&self) -> Vec<Arc<Admitting>> {
        lock_read(&self.admitting).values().cloned().collect()
    }

    /// The counts and durations of the reviews answered.
    pub fn stats(&self) -> &Arc<AdmissionStats> {
        &self.stats
    }
}

fn lock_read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|e| e.into_inner())
}

fn lock_write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|e| e.into_inner())
}
