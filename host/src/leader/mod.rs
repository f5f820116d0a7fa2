//! Leader election on a `coordination.k8s.io/v1` Lease, so that several
//! replicas of Herald can run and only one dispatches to plugins while the
//! others keep their informers' caches warm; and the [`LeaseLock`] it is
//! built on, which sharding (`crate::shard`) holds once per plugin.
//!
//! # Protocol
//!
//! The semantics are client-go's `leaderelection` with a `LeaseLock`:
//!
//! - The Lease's spec is the record: `holderIdentity`, `leaseDurationSeconds`,
//!   `acquireTime`, `renewTime`, `leaseTransitions`.
//! - Every write is a PUT carrying the resourceVersion that was read, so two
//!   replicas can never both win the same round: the second gets 409
//!   Conflict, meaning someone else wrote first.
//! - A follower reads every `retryPeriod` (jittered) and takes the Lease over
//!   only when it has no holder, or when the follower has *itself* not seen
//!   it change for the holder's `leaseDurationSeconds`, measured on its own
//!   monotonic clock (not from the `renewTime` another machine wrote). A
//!   takeover sets `acquireTime` and increments `leaseTransitions`.
//! - The leader renews every `retryPeriod`. If it has not renewed for
//!   `renewDeadline` (shorter than `leaseDuration`) it publishes `false`
//!   *before* any follower may take over, and goes back to following. If a
//!   read shows another holder, it steps down at once.
//! - On graceful shutdown the leader clears `holderIdentity`, so a follower
//!   takes over at its next attempt instead of waiting for expiry.
//!
//! Identities must be unique among replicas: two replicas with the same
//! identity both believe they hold the Lease. The pod name is.
//!
//! # Why not a crate
//!
//! `kube-leader-election` is still on kube 4. `kube-lease-manager` 0.13 is on
//! kube 5 and k8s-openapi 0.29 but decides expiry from the `renewTime` written
//! by the holder's clock, relies on server-side-apply field-manager conflicts
//! rather than resourceVersion preconditions, and has no renew deadline; so
//! this small module implements client-go's rules directly.
//!
//! # Wiring it into the daemon
//!
//! ```no_run
//! # async fn wire(client: kube::Client, config: herald::config::Config) -> anyhow::Result<()> {
//! use herald::leader::LeaderElector;
//!
//! // Informers start regardless of leadership: followers keep warm caches.
//! if config.leader_election.enabled {
//!     let settings = config.leader_election.lease_settings("leaderElection")?; // names the key at fault
//!     let election = LeaderElector::new(client.clone(), settings)?.spawn();
//!     let mut leading = election.leadership();
//!     tokio::spawn(async move {
//!         // `changed()` fails only when the elector is gone.
//!         while leading.changed().await.is_ok() {
//!             if *leading.borrow_and_update() {
//!                 // Leader: start every plugin; its listeners join the running
//!                 // informers as late listeners (snapshot, then live events).
//!             } else {
//!                 // Not leader any more: unregister every plugin at once
//!                 // (stop its listeners; do not drain), so that no plugin
//!                 // dispatches while another replica may lead.
//!             }
//!         }
//!     });
//!     // ... on SIGTERM: drop readiness, stop the plugins (drain up to the
//!     // grace period), THEN release, so the next leader starts only once
//!     // this one has stopped dispatching:
//!     election.release().await?;
//! }
//! # Ok(()) }
//! ```
//!
//! Notes for the caller:
//!
//! - Leadership starts `false`; with election disabled, behave as leader.
//! - React to `false` promptly: the leader publishes it `renewDeadline` after
//!   its last renewal, and a follower may take over `leaseDuration` after it;
//!   the difference (5 s with the defaults) is the time the caller has to
//!   stop dispatching.
//! - Readiness should not depend on leadership (followers are ready: their
//!   caches are synced), or a follower would be taken out of its Service.
//! - On a second signal, [`Election::abort`] stops without releasing; the
//!   Lease then expires on its own.
//! - RBAC: `get`, `create` and `update` on `leases` in the Lease's namespace
//!   (see `deploy/`).

mod elector;
mod lock;
mod record;
mod settings;

pub use elector::{Election, LeaderElector};
pub use lock::{Attempt, LeaseLock};
pub use settings::{
    DEFAULT_LEASE_DURATION, DEFAULT_RENEW_DEADLINE, DEFAULT_RETRY_PERIOD, JITTER_FACTOR,
    LeaderElectionConfig, LeaseConfig, LeaseSettings, SERVICE_ACCOUNT_NAMESPACE_FILE,
    ShardingConfig, check_identity, check_lease_name, check_namespace, check_timings, jittered,
};

use std::time::Duration;

/// Leader election failed. Every variant but `InvalidSettings` and `Task`
/// is transient: [`LeaderElector::run`] logs it and retries.
#[derive(Debug, thiserror::Error)]
pub enum LeaderError {
    /// A setting is out of range; `setting` is its configuration key under
    /// `leaderElection` (e.g. `renewDeadline`).
    #[error("leaderElection.{setting}: {problem}")]
    InvalidSettings {
        /// The key at fault.
        setting: &'static str,
        /// What is wrong and what to do.
        problem: String,
    },
    /// Someone else wrote the Lease between our read and our write (409):
    /// another replica won this round.
    #[error("Lease {lease} was changed by someone else after we read it: another replica won")]
    Conflict {
        /// `namespace/name`.
        lease: String,
    },
    /// The service account may not read or write the Lease.
    #[error(
        "not allowed to read or write Lease {lease}: {message}; grant get, create and update on leases in its namespace (deploy/10-rbac.yaml has the Role)"
    )]
    Forbidden {
        /// `namespace/name`.
        lease: String,
        /// The API server's message.
        message: String,
    },
    /// Another API error (network, server).
    #[error("Lease {lease}: {source}")]
    Api {
        /// `namespace/name`.
        lease: String,
        /// The client error.
        source: kube::Error,
    },
    /// The API server did not answer in time.
    #[error("Lease {lease}: no answer within {after:?}")]
    Timeout {
        /// `namespace/name`.
        lease: String,
        /// How long we waited.
        after: Duration,
    },
    /// The election task panicked or was cancelled.
    #[error("the leader election task ended abnormally: {0}")]
    Task(String),
}
