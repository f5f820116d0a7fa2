//! A Deployment's rollout state, read from its spec and status.

use herald_sdk::k8s_openapi::api::apps::v1::Deployment;

/// The numbers that say how far a rollout has got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// `metadata.generation`: bumped by every spec change.
    pub generation: i64,
    /// `status.observedGeneration`: the generation the controller acted on.
    pub observed_generation: i64,
    /// `spec.replicas` (default 1).
    pub desired: i32,
    /// `status.replicas`: Pods of every revision.
    pub replicas: i32,
    /// `status.updatedReplicas`: Pods of the current template.
    pub updated: i32,
    /// `status.readyReplicas`.
    pub ready: i32,
    /// `status.availableReplicas`.
    pub available: i32,
    /// `status.unavailableReplicas`.
    pub unavailable: i32,
}

impl Progress {
    /// Reads the numbers; absent ones count as zero.
    pub fn of(deployment: &Deployment) -> Self {
        let status = deployment.status.clone().unwrap_or_default();
        Self {
            generation: deployment.metadata.generation.unwrap_or_default(),
            observed_generation: status.observed_generation.unwrap_or_default(),
            desired: deployment.spec.replicas.unwrap_or(1),
            replicas: status.replicas.unwrap_or_default(),
            updated: status.updated_replicas.unwrap_or_default(),
            ready: status.ready_replicas.unwrap_or_default(),
            available: status.available_replicas.unwrap_or_default(),
            unavailable: status.unavailable_replicas.unwrap_or_default(),
        }
    }

    /// Whether the rollout is done, as `kubectl rollout status` judges it:
    /// the controller saw the latest spec, every desired replica runs the
    /// current template, no old replica is left, and all updated replicas
    /// are available.
    pub fn is_complete(&self) -> bool {
        self.observed_generation >= self.generation
            && self.updated >= self.desired
            && self.replicas <= self.updated
            && self.available >= self.updated
    }

    /// The counts a progress line reports: updated, ready, available.
    pub fn counts(&self) -> (i32, i32, i32) {
        (self.updated, self.ready, self.available)
    }
}

/// Whether the Pod template changed: what starts a rollout (a replica count
/// change alone only scales).
pub fn template_changed(old: &Deployment, new: &Deployment) -> bool {
    old.spec.template != new.spec.template
}

/// Whether the Deployment controller gave up waiting for the rollout: the
/// `Progressing` condition is `False` with reason
/// `ProgressDeadlineExceeded`, which it sets once the rollout has made no
/// progress for `spec.progressDeadlineSeconds` (default 600).
pub fn is_stuck(deployment: &Deployment) -> bool {
    deployment
        .status
        .as_ref()
        .and_then(|status| status.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|condition| {
            condition.type_.as_deref() == Some("Progressing")
                && condition.status.as_deref() == Some("False")
                && condition.reason.as_deref() == Some("ProgressDeadlineExceeded")
        })
}
