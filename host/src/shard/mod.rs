//! Sharding: N replicas divide the plugins between them, each plugin
//! dispatched by exactly one replica at a time, owned through a
//! `coordination.k8s.io/v1` Lease of its own; Kubernetes is the only
//! coordinator.
//!
//! # Leases
//!
//! In the group `sharding.leaseName` (`G`), in `sharding.leaseNamespace`:
//!
//! - `G-plugin-<plugin>`, one per plugin: its holder dispatches it.
//! - `G-member-<hash of identity>`, one per replica, held by it: the
//!   replicas alive, so each knows N and its fair share, `ceil(plugins / N)`.
//!
//! Every Lease is labelled `herald.dev/shard-group: G` and
//! `herald.dev/shard-role: plugin|member`, and each round starts with one
//! list of the group by that label. Each Lease is held with leader
//! election's rules ([`LeaseLock`](crate::leader::LeaseLock)): PUTs
//! preconditioned on the resourceVersion read, expiry judged on this
//! replica's own monotonic clock from when it saw the record change, a
//! renew deadline shorter than the lease duration after which a plugin is
//! stopped before anyone else may take it, and release on graceful shutdown
//! by clearing `holderIdentity`. Who takes and gives up what is
//! [`balance`]'s policy.
//!
//! # Following ownership
//!
//! [`Sharding::owned`] publishes the plugins this replica may dispatch; the
//! service hands it to [`Daemon::set_owned`](crate::daemon::Daemon::set_owned),
//! which subscribes an owned plugin to its informers (a fresh initial list)
//! and unsubscribes one it no longer owns (its informers stop when no other
//! owned plugin uses them, so their caches go), then reports what it applied
//! back; a plugin given up to rebalance is released only once it has been
//! stopped.

pub mod balance;
mod coordinator;
mod metrics;
mod view;

pub use coordinator::{KnownPlugins, Sharding};
pub use metrics::ShardCollector;
pub use view::{Change, ShardView};

use crate::leader::LeaseSettings;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// The label naming a Lease's sharding group.
pub const GROUP_LABEL: &str = "herald.dev/shard-group";
/// The label saying whether a Lease is a plugin's or a member's.
pub const ROLE_LABEL: &str = "herald.dev/shard-role";
/// The longest group name: it is a label value (63) and prefixes names.
pub const MAX_GROUP_NAME: usize = 63;

/// Checks `sharding.leaseName` as the group's name: a label value that
/// prefixes every Lease's name; the error says what is wrong.
pub fn check_group_name(name: &str) -> Result<(), ShardError> {
    if name.len() > MAX_GROUP_NAME || name.contains('.') {
        return Err(ShardError::GroupName(name.to_owned()));
    }
    Ok(())
}

/// What a sharding Lease stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// One plugin: its holder dispatches it.
    Plugin,
    /// One replica: held while it is alive.
    Member,
}

impl Role {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Plugin => "plugin",
            Role::Member => "member",
        }
    }
}

/// Sharding is misconfigured.
#[derive(Debug, thiserror::Error)]
pub enum ShardError {
    /// A setting is out of range; `setting` is its key under `sharding`.
    #[error("sharding.{setting}: {problem}")]
    InvalidSettings {
        /// The key at fault.
        setting: &'static str,
        /// What is wrong and what to do.
        problem: String,
    },
    /// The group's name (`sharding.leaseName`, held here) is too long or
    /// holds a `.`.
    #[error(
        "{0:?} must be at most {max} characters without '.': it is a label value and prefixes \
         every Lease's name",
        max = MAX_GROUP_NAME
    )]
    GroupName(String),
}

/// Checks sharding's settings (leader election's checks, and a group name
/// short enough to be a label value); the error names the key under
/// `sharding`.
pub fn validate(settings: &LeaseSettings) -> Result<(), ShardError> {
    settings.validate().map_err(|err| match err {
        crate::leader::LeaderError::InvalidSettings { setting, problem } => {
            ShardError::InvalidSettings { setting, problem }
        }
        other => ShardError::InvalidSettings {
            setting: "leaseName",
            problem: other.to_string(),
        },
    })?;
    check_group_name(&settings.name).map_err(|err| ShardError::InvalidSettings {
        setting: "leaseName",
        problem: err.to_string(),
    })?;
    Ok(())
}

/// The labels of a group's Lease.
pub fn lease_labels(group: &str, role: Role) -> BTreeMap<String, String> {
    BTreeMap::from([
        (GROUP_LABEL.to_owned(), group.to_owned()),
        (ROLE_LABEL.to_owned(), role.as_str().to_owned()),
    ])
}

/// The name of `plugin`'s Lease: `G-plugin-<plugin>` when the plugin's name
/// can be part of an object name, else `G-plugin-x<hash>`.
pub fn plugin_lease(group: &str, plugin: &str) -> String {
    let readable = !plugin.is_empty()
        && plugin.len() <= 180
        && plugin
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !plugin.ends_with('-');
    if readable {
        format!("{group}-plugin-{plugin}")
    } else {
        format!("{group}-plugin-x{}", short_hash(plugin))
    }
}

/// The name of a replica's member Lease.
pub fn member_lease(group: &str, identity: &str) -> String {
    format!("{group}-member-{}", short_hash(identity))
}

fn short_hash(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    digest[..6].iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_names_are_valid_object_names_whatever_the_plugin_is_called() {
        for plugin in ["recorder", "Pod_Watcher", "a.b", "-x", ""] {
            let name = plugin_lease("herald-shard", plugin);
            crate::leader::check_lease_name(&name).unwrap();
        }
        assert_eq!(
            plugin_lease("herald-shard", "recorder"),
            "herald-shard-plugin-recorder"
        );
        assert_ne!(
            plugin_lease("g", "Pod_Watcher"),
            plugin_lease("g", "pod_watcher")
        );
        crate::leader::check_lease_name(&member_lease("g", "pod a/b")).unwrap();
    }

    #[test]
    fn a_group_name_that_cannot_be_a_label_value_is_refused_naming_the_key() {
        let mut settings = LeaseSettings::new("herald", "a".repeat(64), "pod-a");
        let err = validate(&settings).unwrap_err().to_string();
        assert!(err.starts_with("sharding.leaseName"), "{err}");
        settings.name = "herald-shard".into();
        validate(&settings).unwrap();
    }
}
