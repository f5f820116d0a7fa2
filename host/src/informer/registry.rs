//! Shares informers between subscriptions: one per [`InformerKey`], started
//! on first use and stopped when its last subscription leaves.

use super::SharedInformer;
use super::reflector::ReflectorConfig;
use super::resource::InformerKey;
use crate::discovery::{ResolveError, Resolver};
use crate::subscription::Subscription;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

struct Entry {
    informer: Arc<SharedInformer>,
    users: usize,
}

/// Every running informer of the process.
pub struct Informers {
    client: kube::Client,
    resolver: Resolver,
    config: ReflectorConfig,
    running: Mutex<HashMap<InformerKey, Entry>>,
}

impl std::fmt::Debug for Informers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Informers")
            .field("running", &self.all().len())
            .finish()
    }
}

impl Informers {
    /// A registry creating informers with `client` and `config`.
    pub fn new(client: kube::Client, config: ReflectorConfig) -> Self {
        Informers {
            resolver: Resolver::new(client.clone()),
            client,
            config,
            running: Mutex::new(HashMap::new()),
        }
    }

    /// Resolves a subscription's kind and returns its informer key.
    pub async fn key_for(&self, subscription: &Subscription) -> Result<InformerKey, ResolveError> {
        let resource = self.resolver.resolve(&subscription.kind).await?;
        Ok(InformerKey::for_subscription(resource, subscription))
    }

    /// The informer for `key`, started if needed; counts one more user.
    /// Must be called within a tokio runtime.
    pub fn acquire(&self, key: &InformerKey) -> Arc<SharedInformer> {
        let mut running = self.lock();
        let entry = running.entry(key.clone()).or_insert_with(|| Entry {
            informer: Arc::new(SharedInformer::start(
                self.client.clone(),
                key.clone(),
                self.config,
            )),
            users: 0,
        });
        entry.users += 1;
        entry.informer.clone()
    }

    /// Counts one user less; the informer stops when none is left.
    pub fn release(&self, key: &InformerKey) {
        let mut running = self.lock();
        if let Some(entry) = running.get_mut(key) {
            entry.users -= 1;
            if entry.users == 0 {
                running.remove(key);
            }
        }
    }

    /// Every running informer.
    pub fn all(&self) -> Vec<Arc<SharedInformer>> {
        self.lock().values().map(|e| e.informer.clone()).collect()
    }

    /// True when every running informer has synced.
    pub fn all_synced(&self) -> bool {
        self.lock().values().all(|e| e.informer.has_synced())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<InformerKey, Entry>> {
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }
}
