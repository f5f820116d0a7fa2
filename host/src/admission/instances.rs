//! The instances one plugin version's admission calls run in: a few, made
//! on demand, each deciding one review at a time, so reviews that arrive
//! together are decided together (as a Go webhook server decides them on
//! goroutines) instead of queueing behind one instance. A call leases a
//! free instance, or a new one while fewer than the bound exist, or waits
//! for the first one given back.

use crate::plugin::{LoadedPlugin, PluginInstance};
use std::sync::Mutex;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The most instances one plugin's admission calls use: one per core, up
/// to four (each holds its own memory once used).
pub fn bound() -> usize {
    crate::plugin::default_workers().clamp(1, 4)
}

/// The admission instances of one plugin version.
#[derive(Debug)]
pub struct Instances {
    plugin: LoadedPlugin,
    /// Instances not in use (made, perhaps not yet instantiated).
    free: Mutex<Vec<PluginInstance>>,
    /// One permit per instance that may be in use at once.
    slots: std::sync::Arc<Semaphore>,
}

/// An instance leased for one call; given back when dropped.
pub struct Lease<'a> {
    instance: Option<PluginInstance>,
    instances: &'a Instances,
    _slot: OwnedSemaphorePermit,
}

impl Instances {
    /// The instances of `plugin`, at most `bound` at once; `None` when it
    /// admits nothing.
    pub fn new(plugin: &LoadedPlugin, bound: usize) -> Option<Self> {
        let first = PluginInstance::for_admission(plugin.clone())?;
        Some(Instances {
            plugin: plugin.clone(),
            free: Mutex::new(vec![first]),
            slots: std::sync::Arc::new(Semaphore::new(bound.max(1))),
        })
    }

    /// A free instance, waiting for one while `bound` are in use.
    pub async fn lease(&self) -> Lease<'_> {
        let slot = self
            .slots
            .clone()
            .acquire_owned()
            .await
            .expect("the semaphore is never closed");
        let free = self.free.lock().unwrap_or_else(|e| e.into_inner()).pop();
        // A permit with no free instance means fewer than the bound were
        // made: make one (cheap: it instantiates on its first call).
        let instance = free.unwrap_or_else(|| {
            PluginInstance::for_admission(self.plugin.clone())
                .expect("the plugin admits: Instances::new made one already")
        });
        Lease {
            instance: Some(instance),
            instances: self,
            _slot: slot,
        }
    }
}

impl Lease<'_> {
    /// The leased instance.
    pub fn instance(&mut self) -> &mut PluginInstance {
        self.instance
            .as_mut()
            .expect("a lease holds its instance until dropped")
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        if let Some(instance) = self.instance.take() {
            self.instances
                .free
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(instance);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admitting_plugin() -> LoadedPlugin {
        let engine = crate::plugin::PluginEngine::new(Default::default()).unwrap();
        let bytes = std::fs::read(herald_test_artifacts::ADMISSION_BENCH).unwrap();
        LoadedPlugin::load(&engine, &bytes, crate::plugin::LoadOptions::default()).unwrap()
    }

    #[tokio::test]
    async fn calls_lease_up_to_the_bound_at_once_and_reuse_what_is_given_back() {
        let instances = Instances::new(&admitting_plugin(), 2).expect("it admits");
        let first = instances.lease().await;
        let second = instances.lease().await;
        // Both slots taken: a third waits until one is given back.
        let third = instances.lease();
        tokio::pin!(third);
        assert!(
            futures::poll!(third.as_mut()).is_pending(),
            "a third lease waits"
        );
        drop(first);
        let third = third.await;
        drop((second, third));
        assert_eq!(
            instances.free.lock().unwrap().len(),
            2,
            "two instances made, both given back"
        );
    }
}
