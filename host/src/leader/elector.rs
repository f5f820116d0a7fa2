//! The election loop: read the Lease, decide, write it back conditionally on
//! its resourceVersion, publish leadership; and the handle that stops it.

use super::LeaderError;
use super::record::{Decision, Observed, claim, decide, released};
use super::settings::{JITTER_FACTOR, LeaseSettings};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, PostParams};
use std::future::Future;
use std::time::Duration;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// Contends for one Lease. Build it with [`LeaderElector::new`], take a
/// [`leadership`](LeaderElector::leadership) receiver, then drive it with
/// [`run`](LeaderElector::run) or [`spawn`](LeaderElector::spawn).
pub struct LeaderElector {
    api: Api<Lease>,
    settings: LeaseSettings,
    observed: Option<Observed>,
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

/// What one attempt found.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Attempt {
    /// We hold the Lease: acquired or renewed just now.
    Leading,
    /// Someone else holds a claim that has not expired.
    Following {
        /// Their identity.
        holder: String,
    },
}

impl LeaderElector {
    /// An elector for `settings.namespace/settings.name` through `client`.
    /// Checks the settings; makes no request yet.
    pub fn new(client: kube::Client, settings: LeaseSettings) -> Result<Self, LeaderError> {
        settings.validate()?;
        Ok(LeaderElector {
            api: Api::namespaced(client, &settings.namespace),
            settings,
            observed: None,
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
                Ok(Attempt::Leading) => {
                    if renewed.is_none() {
                        tracing::info!(%lease, identity = %self.settings.identity, "acquired the leader Lease: this replica now dispatches to plugins");
                    }
                    renewed = Some(started);
                }
                Ok(Attempt::Following { holder }) => {
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
        let lease = self.settings.lease_key();
        let deadline = self.settings.renew_deadline;
        let attempt = async {
            let Some(current) = self.get().await? else {
                return Ok(false);
            };
            let spec = current.spec.clone().unwrap_or_default();
            if spec.holder_identity.as_deref() != Some(self.settings.identity.as_str()) {
                return Ok(false);
            }
            let mut next = current;
            next.spec = Some(released(&spec, Timestamp::now()));
            self.replace(&next).await?;
            tracing::info!(lease = %self.settings.lease_key(), "released the leader Lease");
            Ok(true)
        };
        tokio::time::timeout(deadline, attempt)
            .await
            .unwrap_or_else(|_| {
                Err(LeaderError::Timeout {
                    lease,
                    after: deadline,
                })
            })
    }

    /// One round of client-go's `tryAcquireOrRenew`: read (or create) the
    /// Lease, decide, and write conditionally on the resourceVersion read.
    async fn try_acquire_or_renew(&mut self) -> Result<Attempt, LeaderError> {
        let Some(current) = self.get().await? else {
            let spec = claim(
                &self.settings.identity,
                self.settings.lease_duration,
                Timestamp::now(),
            );
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.settings.name.clone()),
                    namespace: Some(self.settings.namespace.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(spec),
            };
            let created = self.create(&lease).await?;
            self.observe(created.spec.unwrap_or_default());
            return Ok(Attempt::Leading);
        };
        self.observe(current.spec.clone().unwrap_or_default());
        let observed = self.observed.as_ref().expect("just observed");
        match decide(
            observed,
            &self.settings.identity,
            self.settings.lease_duration,
            Instant::now(),
            Timestamp::now(),
        ) {
            Decision::HeldBy { holder, .. } => Ok(Attempt::Following { holder }),
            Decision::Write(spec) => {
                let mut next = current;
                next.spec = Some(spec);
                let written = self.replace(&next).await?;
                self.observe(written.spec.unwrap_or_default());
                Ok(Attempt::Leading)
            }
        }
    }

    fn observe(&mut self, spec: k8s_openapi::api::coordination::v1::LeaseSpec) {
        self.observed = Some(Observed::update(self.observed.take(), spec, Instant::now()));
    }

    fn publish(&self, leading: bool) {
        self.leading.send_if_modified(|current| {
            let changed = *current != leading;
            *current = leading;
            changed
        });
    }

    async fn get(&self) -> Result<Option<Lease>, LeaderError> {
        self.api
            .get_opt(&self.settings.name)
            .await
            .map_err(|e| self.api_error(e))
    }

    async fn create(&self, lease: &Lease) -> Result<Lease, LeaderError> {
        self.api
            .create(&PostParams::default(), lease)
            .await
            .map_err(|e| self.api_error(e))
    }

    /// PUT with the resourceVersion the object was read at: the server
    /// refuses it with 409 if anyone wrote the Lease in between.
    async fn replace(&self, lease: &Lease) -> Result<Lease, LeaderError> {
        self.api
            .replace(&self.settings.name, &PostParams::default(), lease)
            .await
            .map_err(|e| self.api_error(e))
    }

    fn api_error(&self, err: kube::Error) -> LeaderError {
        let lease = self.settings.lease_key();
        match err {
            kube::Error::Api(status) if status.code == 409 => LeaderError::Conflict { lease },
            kube::Error::Api(status) if status.code == 403 => LeaderError::Forbidden {
                lease,
                message: status.message.clone(),
            },
            source => LeaderError::Api { lease, source },
        }
    }
}

/// `period` stretched by a random factor in `[1, 1 + JITTER_FACTOR)`, as
/// client-go spaces a follower's attempts.
fn jittered(period: Duration) -> Duration {
    use std::hash::{BuildHasher, Hasher as _};
    // Each RandomState has fresh keys: hashing nothing gives a random u64.
    let random = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    let unit = (random >> 11) as f64 / (1u64 << 53) as f64;
    period.mul_f64(1.0 + JITTER_FACTOR * unit)
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
