//! What this replica knows of the sharding, for `/plugins`, the dashboard
//! and `/metrics`: who owns each plugin, how many members are alive, and how
//! often ownership changed here.

use std::collections::BTreeMap;
use std::sync::Mutex;

/// Why this replica's ownership of a plugin changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Change {
    /// It acquired the plugin's Lease (free, released or expired).
    Acquired,
    /// It released the Lease: rebalancing, the plugin unloaded, or shutdown.
    Released,
    /// It lost the Lease: another holder, or no renewal within `renewDeadline`.
    Lost,
}

impl Change {
    /// The metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            Change::Acquired => "acquired",
            Change::Released => "released",
            Change::Lost => "lost",
        }
    }
}

/// The shared view (see the module docs). Updated by the coordinator once
/// per round; read by the endpoints.
#[derive(Debug)]
pub struct ShardView {
    identity: String,
    state: Mutex<ViewState>,
}

#[derive(Debug, Default)]
struct ViewState {
    owners: BTreeMap<String, Option<String>>,
    members: usize,
    owned: usize,
    changes: BTreeMap<Change, u64>,
}

impl ShardView {
    /// An empty view for the replica `identity`.
    pub fn new(identity: impl Into<String>) -> Self {
        ShardView {
            identity: identity.into(),
            state: Mutex::default(),
        }
    }

    /// This replica's identity.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// The owner of `plugin` as last observed (`None`: nobody holds it, or
    /// it is not known).
    pub fn owner(&self, plugin: &str) -> Option<String> {
        self.lock().owners.get(plugin).cloned().flatten()
    }

    /// Every known plugin with its owner, as last observed.
    pub fn owners(&self) -> BTreeMap<String, Option<String>> {
        self.lock().owners.clone()
    }

    /// Live members as last observed, this replica included.
    pub fn members(&self) -> usize {
        self.lock().members
    }

    /// Plugins this replica owns and dispatches.
    pub fn owned(&self) -> usize {
        self.lock().owned
    }

    /// How many times ownership changed this way here.
    pub fn changes(&self, change: Change) -> u64 {
        self.lock().changes.get(&change).copied().unwrap_or(0)
    }

    /// Replaces the observation.
    pub(crate) fn observed(
        &self,
        owners: BTreeMap<String, Option<String>>,
        members: usize,
        owned: usize,
    ) {
        let mut state = self.lock();
        state.owners = owners;
        state.members = members;
        state.owned = owned;
    }

    /// Counts one change.
    pub(crate) fn count(&self, change: Change) {
        *self.lock().changes.entry(change).or_default() += 1;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ViewState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}
