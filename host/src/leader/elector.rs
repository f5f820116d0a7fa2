//! The election loop: one [`LeaseLock`] tried every `retryPeriod`,
//! leadership published as it comes and goes; and the handle that stops it.

use super::LeaderError;
use super::lock::{Attempt, LeaseLock};
use super::settings::{LeaseSettings, jittered};
use std::future::Future;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// Contends for one Lease. Build it with [`LeaderElector::new`], take a
/// [`leadership`](LeaderElector::leadership) receiver, then drive it with
/// [`run`](LeaderElector::run) or [`spawn`](LeaderElector::spawn).
pub struct LeaderElector {
    lock: LeaseLock,
    settings: LeaseSettings,
    leading: watch::Sender<bool>,
}

impl std::fmt::Debug for LeaderElector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderElector")
            .field("settings", &self.settings)
            .field("leading", &*self.leading.borrow())
            .finish_non_exhaustive()
    }
}

impl LeaderElector {
    /// An elector for `settings.namespace/settings.name` through `client`.
    /// Checks the settings; makes no request yet.
    pub fn new(client: kube::Client, settings: LeaseSettings) -> Result<Self, LeaderError> {
        settings.validate()?;
        Ok(LeaderElector {
            lock: LeaseLock::new(
                client,
                &settings.namespace,
                &settings.name,
                &settings.identity,
                settings.lease_duration,
            ),
            settings,
            leading: watch::Sender::new(false),
        })
    }

    /// The settings it runs with.
    pub fn settings(&self) -> &LeaseSettings {
        &self.settings
    }

    /// Leadership as it changes: `true` from the moment the Lease is
    /// acquired until the moment this replica stops leading (it could not
    /// renew within `renewDeadline`, someone else holds the Lease, or it was
    /// released). Starts `false`. Closed when the elector is dropped.
    pub fn leadership(&self) -> watch::Receiver<bool> {
        self.leading.subscribe()
    }

    /// Runs in a task of its own; the returned [`Election`] stops it, with
    /// or without releasing the Lease.
    pub fn spawn(self) -> Election {
        let leadership = self.leadership();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(self.run(async move {
            // Resolves on `send` and when the handle is dropped alike.
            let _ = stopped.await;
        }));
        Election {
            leadership,
            stop: Some(stop),
            task,
        }
    }

    /// Contends for the Lease until `stop` resolves, then releases it if
    /// this replica holds it and publishes `false`.
    ///
    /// A follower tries every `retryPeriod` (with client-go's jitter) and
    /// takes the Lease over only once it has not seen it change for the
    /// holder's `leaseDurationSeconds`. The leader renews every
    /// `retryPeriod`; if it has not renewed for `renewDeadline` it publishes
    /// `false` before anyone else may take over, and goes back to
    /// following. API errors are logged and retried; the only error returned
    /// is one from the final release.
    pub async fn run(mut self, stop: impl Future<Output = ()>) -> Result<(), LeaderError> {
        tokio::pin!(stop);
        let lease = self.settings.lease_key();
        let renew_deadline = self.settings.renew_deadline;
        // Some(time the last successful renewal was sent) while leading.
        let mut renewed: Option<Instant> = None;
        let mut just_conflicted = false;
        loop {
            let started = Instant::now();
            let budget = match renewed {
                Some(at) => (at + renew_deadline).saturating_duration_since(started),
                None => renew_deadline,
            };
            let outcome = tokio::select! {
                biased;
                () = &mut stop => break,
                outcome = tokio::time::timeout(budget, self.try_acquire_or_renew()) => {
                    outcome.unwrap_or_else(|_| Err(LeaderError::Timeout {
                        lease: lease.clone(),
                        after: budget,
                    }))
                }
            };
            let mut retry_at_once = false;
            match outcome {
                Ok(Attempt::Held) => {
                    if renewed.is_none() {
                        tracing::info!(%lease, identity = %self.settings.identity, "acquired the leader Lease: this replica now dispatches to plugins");
                    }
                    renewed = Some(started);
                }
                Ok(Attempt::HeldBy { holder }) => {
                    if renewed.take().is_some() {
                        tracing::warn!(%lease, %holder, "lost the leader Lease to another replica: stepping down");
                    } else {
                        tracing::debug!(%lease, %holder, "the Lease is held by another replica");
                    }
                }
                // Someone wrote the Lease after we read it. While leading,
                // re-read at once: the next attempt either renews (it was a
                // harmless write) or sees the new holder and steps down.
                Err(LeaderError::Conflict { .. }) if renewed.is_some() && !just_conflicted => {
                    tracing::debug!(%lease, "the Lease changed under our renewal; reading it again");
                    retry_at_once = true;
                }
                Err(err) if renewed.is_some() => {
                    tracing::warn!(%lease, "could not renew the leader Lease (will retry until renewDeadline): {err}");
                }
                Err(err) => tracing::debug!(%lease, "did not acquire the leader Lease: {err}"),
            }
            just_conflicted = retry_at_once;
            if let Some(at) = renewed
                && Instant::now() >= at + renew_deadline
            {
                tracing::warn!(%lease, deadline = ?renew_deadline, "could not renew the leader Lease within renewDeadline: stepping down");
                renewed = None;
            }
            self.publish(renewed.is_some());
            if retry_at_once {
                continue;
            }
            let wait = match renewed {
                Some(_) => self.settings.retry_period,
                None => jittered(self.settings.retry_period),
            };
            tokio::select! {
                biased;
                () = &mut stop => break,
                () = tokio::time::sleep(wait) => {}
            }
        }
        self.publish(false);
        self.release().await.map(|_| ())
    }

    /// Gives the Lease up if this replica holds it: clears
    /// `holderIdentity` (conditionally on the resourceVersion read) so that
    /// a follower takes over at its next attempt instead of waiting for the
    /// lease to expire. Publishes `false` first. Returns whether a release
    /// was written. Bounded by `renewDeadline`.
    ///
    /// The caller ([`Election::release`], or `run`'s stop) must have stopped
    /// acting as leader: from here on another replica may lead.
    async fn release(&mut self) -> Result<bool, LeaderError> {
        self.publish(false);
        let lease = self.lock.key();
        let deadline = self.settings.renew_deadline;
        let attempt = async {
            let current = self.lock.get().await?;
            let released = self.lock.release(current).await?;
            if released {
                tracing::info!(%lease, "released the leader Lease");
            }
            Ok(released)
        };
        tokio::time::timeout(deadline, attempt)
            .await
            .unwrap_or_else(|_| {
                Err(LeaderError::Timeout {
                    lease: self.lock.key(),
                    after: deadline,
                })
            })
    }

    /// One round of client-go's `tryAcquireOrRenew`: read (or create) the
    /// Lease, decide, and write conditionally on the resourceVersion read.
    async fn try_acquire_or_renew(&mut self) -> Result<Attempt, LeaderError> {
        let current = self.lock.get().await?;
        self.lock.try_acquire_or_renew(current).await
    }

    fn publish(&self, leading: bool) {
        self.leading.send_if_modified(|current| {
            let changed = *current != leading;
            *current = leading;
            changed
        });
    }
}

/// A running election (see [`LeaderElector::spawn`]).
///
/// Dropping it stops the election and releases the Lease in the
/// background; [`release`](Election::release) does the same and waits for
/// it; [`abort`](Election::abort) stops without releasing, as a crash would.
#[derive(Debug)]
pub struct Election {
    leadership: watch::Receiver<bool>,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<Result<(), LeaderError>>,
}

impl Election {
    /// Leadership as it changes (see [`LeaderElector::leadership`]).
    pub fn leadership(&self) -> watch::Receiver<bool> {
        self.leadership.clone()
    }

    /// Whether this replica leads right now.
    pub fn is_leader(&self) -> bool {
        *self.leadership.borrow()
    }

    /// Stops contending and gives the Lease up if this replica holds it, so
    /// that a follower takes over at its next attempt. Call it after this
    /// replica has stopped dispatching. Bounded by `renewDeadline`.
    pub async fn release(mut self) -> Result<(), LeaderError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match (&mut self.task).await {
            Ok(result) => result,
            Err(err) => Err(LeaderError::Task(err.to_string())),
        }
    }

    /// Stops at once without releasing: the Lease stays held until it
    /// expires, and followers take over after `leaseDuration`. For a second
    /// signal, and for tests of failover. The leadership channel closes
    /// without a last `false`: stop dispatching before calling this.
    pub fn abort(self) {
        self.task.abort();
    }
}
