//! One Lease held with client-go's `LeaseLock` rules: read (or create) it,
//! decide from what this replica observed, write it back conditionally on
//! the resourceVersion read, release it by clearing `holderIdentity`. The
//! leader elector drives one lock; sharding drives one per plugin and one
//! per replica (`crate::shard`), fed from a single list of the Leases.

use super::LeaderError;
use super::record::{Decision, Observed, claim, decide, released};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, PostParams};
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::time::Instant;

/// What one attempt to acquire or renew found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempt {
    /// We hold the Lease: acquired or renewed just now.
    Held,
    /// Someone else holds a claim that has not expired by our clock.
    HeldBy {
        /// Their identity.
        holder: String,
    },
}

/// One Lease, contended for as one identity (see the module docs).
pub struct LeaseLock {
    api: Api<Lease>,
    namespace: String,
    name: String,
    identity: String,
    lease_duration: Duration,
    labels: BTreeMap<String, String>,
    observed: Option<Observed>,
}

impl std::fmt::Debug for LeaseLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaseLock")
            .field("lease", &self.key())
            .field("identity", &self.identity)
            .finish_non_exhaustive()
    }
}

impl LeaseLock {
    /// The Lease `namespace/name` through `client`, held as `identity` for
    /// `lease_duration` per claim. Makes no request.
    pub fn new(
        client: kube::Client,
        namespace: &str,
        name: &str,
        identity: &str,
        lease_duration: Duration,
    ) -> Self {
        LeaseLock {
            api: Api::namespaced(client, namespace),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            identity: identity.to_owned(),
            lease_duration,
            labels: BTreeMap::new(),
            observed: None,
        }
    }

    /// This lock, labelling the Lease with `labels` when it creates it (so
    /// that a list by label selector finds it).
    pub fn with_labels(mut self, labels: BTreeMap<String, String>) -> Self {
        self.labels = labels;
        self
    }

    /// `namespace/name`, for messages.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// The Lease's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Records a spec read by someone else on our behalf (a list of the
    /// Leases): the observation clock moves only if the spec changed.
    pub fn observe(&mut self, spec: LeaseSpec) {
        self.observed = Some(Observed::update(self.observed.take(), spec, Instant::now()));
    }

    /// The holder whose claim is valid by our clock right now, if any: the
    /// Lease names one and we have seen it change within its duration (our
    /// own identity counts whatever the clock says: we know when we wrote).
    pub fn valid_holder(&self) -> Option<&str> {
        let observed = self.observed.as_ref()?;
        let holder = observed.holder()?;
        (holder == self.identity || observed.expires_at(self.lease_duration) > Instant::now())
            .then_some(holder)
    }

    /// Whether we have seen the Lease free (no holder, or a holder whose
    /// claim expired by our clock) for at least `for_at_least`.
    pub fn free_for(&self, for_at_least: Duration) -> bool {
        let Some(observed) = &self.observed else {
            return false;
        };
        let free_since = match observed.holder() {
            None => observed.since,
            Some(_) => observed.expires_at(self.lease_duration),
        };
        Instant::now() >= free_since + for_at_least
    }

    /// Reads the Lease.
    pub async fn get(&self) -> Result<Option<Lease>, LeaderError> {
        self.api
            .get_opt(&self.name)
            .await
            .map_err(|e| self.api_error(e))
    }

    /// One round of client-go's `tryAcquireOrRenew` on `current`, the Lease
    /// as just read (`None`: it does not exist and is created): decide, and
    /// write conditionally on the resourceVersion read.
    pub async fn try_acquire_or_renew(
        &mut self,
        current: Option<Lease>,
    ) -> Result<Attempt, LeaderError> {
        let Some(current) = current else {
            let spec = claim(&self.identity, self.lease_duration, Timestamp::now());
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.name.clone()),
                    namespace: Some(self.namespace.clone()),
                    labels: (!self.labels.is_empty()).then(|| self.labels.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(spec),
            };
            let created = self.create(&lease).await?;
            self.observe(created.spec.unwrap_or_default());
            return Ok(Attempt::Held);
        };
        self.observe(current.spec.clone().unwrap_or_default());
        let observed = self.observed.as_ref().expect("just observed");
        match decide(
            observed,
            &self.identity,
            self.lease_duration,
            Instant::now(),
            Timestamp::now(),
        ) {
            Decision::HeldBy { holder, .. } => Ok(Attempt::HeldBy { holder }),
            Decision::Write(spec) => {
                let mut next = current;
                next.spec = Some(spec);
                let written = self.replace(&next).await?;
                self.observe(written.spec.unwrap_or_default());
                Ok(Attempt::Held)
            }
        }
    }

    /// Gives the Lease up if `current` (the Lease as just read) names us:
    /// clears `holderIdentity`, conditionally on its resourceVersion, so
    /// that another replica takes it at its next attempt instead of waiting
    /// for expiry. Returns whether a release was written. The caller must
    /// have stopped acting as holder.
    pub async fn release(&mut self, current: Option<Lease>) -> Result<bool, LeaderError> {
        let Some(current) = current else {
            return Ok(false);
        };
        let spec = current.spec.clone().unwrap_or_default();
        if spec.holder_identity.as_deref() != Some(self.identity.as_str()) {
            return Ok(false);
        }
        let mut next = current;
        next.spec = Some(released(&spec, Timestamp::now()));
        let written = self.replace(&next).await?;
        self.observe(written.spec.unwrap_or_default());
        Ok(true)
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
            .replace(&self.name, &PostParams::default(), lease)
            .await
            .map_err(|e| self.api_error(e))
    }

    fn api_error(&self, err: kube::Error) -> LeaderError {
        let lease = self.key();
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
