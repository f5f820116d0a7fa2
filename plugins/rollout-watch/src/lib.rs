//! `rollout-watch`: reports Deployment rollouts (started, progressing,
//! completed), scaling and unavailable replicas, naming the new and old
//! ReplicaSets found through the host's cache; measures how long rollouts
//! take and counts those stuck past their progress deadline.

mod metrics;
mod replica_sets;
mod status;

use herald_sdk::k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use herald_sdk::{Error, Event, Handler, Manifest, Subscription, Update};

use crate::metrics::Rollouts;
use crate::status::Progress;

/// Watches Deployments, and ReplicaSets for the cache look-ups.
pub struct RolloutWatch {
    rollouts: Rollouts,
}

impl Default for RolloutWatch {
    fn default() -> Self {
        Self::with_clock(metrics::monotonic())
    }
}

impl RolloutWatch {
    /// A plugin timing rollouts with `clock` (tests use one they move).
    pub fn with_clock(clock: metrics::Clock) -> Self {
        Self {
            rollouts: Rollouts::new(clock),
        }
    }
}

fn namespace(deployment: &Deployment) -> &str {
    deployment.metadata.namespace.as_deref().unwrap_or_default()
}

impl Handler for RolloutWatch {
    fn manifest() -> Manifest {
        // ReplicaSets are watched only to be found through the owner index.
        let [duration, stuck] = metrics::definitions();
        Manifest::new("rollout-watch", env!("CARGO_PKG_VERSION"))
            .subscribe(Subscription::to::<Deployment>())
            .subscribe(Subscription::to::<ReplicaSet>())
            .index(replica_sets::owner_index())
            .metric(duration)
            .metric(stuck)
    }

    fn on_add(&mut self, event: &Event) -> Result<(), Error> {
        if !event.kind().is::<Deployment>() {
            return Ok(());
        }
        let deployment: Deployment = event.object()?;
        let progress = Progress::of(&deployment);
        let key = event.key();
        if event.is_initial_list() {
            herald_sdk::info!(
                "listed deployment={key} generation={} replicas={} updated={} available={} complete={}",
                progress.generation,
                progress.desired,
                progress.updated,
                progress.available,
                progress.is_complete()
            );
        } else {
            herald_sdk::info!(
                "created deployment={key} generation={} replicas={}",
                progress.generation,
                progress.desired
            );
        }
        if status::is_stuck(&deployment) {
            metrics::count_stuck(namespace(&deployment));
        }
        Ok(())
    }

    fn on_update(&mut self, event: &Update) -> Result<(), Error> {
        if !event.kind().is::<Deployment>() || event.is_resync() {
            return Ok(());
        }
        let (old, new): (Deployment, Deployment) = (event.old()?, event.new()?);
        let (before, after) = (Progress::of(&old), Progress::of(&new));
        let key = event.key();

        if status::template_changed(&old, &new) {
            herald_sdk::info!("started deployment={key} generation={}", after.generation);
            self.rollouts.start(key);
        }
        if before.desired != after.desired {
            herald_sdk::info!(
                "scaled deployment={key} from={} to={}",
                before.desired,
                after.desired
            );
        }
        if after.is_complete() && !before.is_complete() {
            let sets = replica_sets::describe(&new, key);
            herald_sdk::info!(
                "completed deployment={key} generation={} replicas={} new={}",
                after.generation,
                after.desired,
                sets.new
            );
            self.rollouts.complete(key, namespace(&new));
        } else if !after.is_complete() && after.counts() != before.counts() {
            let sets = replica_sets::describe(&new, key);
            herald_sdk::info!(
                "progressed deployment={key} updated={}/{} ready={} available={} new={} old={}",
                after.updated,
                after.desired,
                after.ready,
                after.available,
                sets.new,
                sets.old
            );
        }
        if after.unavailable > 0 && after.unavailable != before.unavailable {
            herald_sdk::warn!(
                "unavailable deployment={key} replicas={}",
                after.unavailable
            );
        }
        let (was_stuck, stuck) = (status::is_stuck(&old), status::is_stuck(&new));
        if stuck && !was_stuck {
            let deadline = new.spec.progress_deadline_seconds.unwrap_or(600);
            herald_sdk::warn!("stuck deployment={key} deadline={deadline}s");
        }
        if stuck != was_stuck {
            metrics::count_stuck(namespace(&new));
        }
        Ok(())
    }

    fn on_delete(&mut self, event: &Event) -> Result<(), Error> {
        if event.kind().is::<Deployment>() {
            let verb = if event.final_state_unknown() {
                "vanished"
            } else {
                "deleted"
            };
            herald_sdk::info!("{verb} deployment={}", event.key());
            self.rollouts.forget(event.key());
            // A last state that does not decode is no reason to fail a
            // delete: the count is then only corrected at the next change.
            if let Ok(deployment) = event.object::<Deployment>()
                && status::is_stuck(&deployment)
            {
                metrics::count_stuck(namespace(&deployment));
            }
        }
        Ok(())
    }
}

herald_sdk::export_plugin!(RolloutWatch);

// Native only: the SDK's stand-in host does not exist on wasm.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests;
