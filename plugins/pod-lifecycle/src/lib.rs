//! `pod-lifecycle`: one log line per fact in a Pod's life: created (or
//! listed on replay), phase transitions, container restarts, deletion.
//!
//! It reads only the Pods' status, through the SDK's lazy view: the spec,
//! most of a Pod's bytes, is scanned but never decoded.

use herald_sdk::k8s_openapi::api::core::v1::{ContainerStatus, Pod, PodStatus};
use herald_sdk::view::ObjectView;
use herald_sdk::{Error, Event, Handler, Manifest, Subscription, Update};

/// Logs the life of every Pod in the cluster.
#[derive(Default)]
pub struct PodLifecycle;

/// A Pod's status, the one part of it this plugin reads.
fn status(pod: &ObjectView) -> Result<PodStatus, Error> {
    Ok(pod.status()?.unwrap_or_default())
}

/// `status.phase`, or `none` while the API server has not set one.
fn phase(status: &PodStatus) -> &str {
    status.phase.as_deref().unwrap_or("none")
}

/// Restart counts of init and app containers, by name, in spec order.
fn restart_counts(status: &PodStatus) -> impl Iterator<Item = (&str, i32)> {
    let init = status
        .init_container_statuses
        .as_deref()
        .unwrap_or_default();
    let app = status.container_statuses.as_deref().unwrap_or_default();
    init.iter()
        .chain(app)
        .map(|container: &ContainerStatus| (container.name.as_str(), container.restart_count))
}

impl Handler for PodLifecycle {
    fn manifest() -> Manifest {
        Manifest::new("pod-lifecycle", env!("CARGO_PKG_VERSION"))
            .subscribe(Subscription::to::<Pod>())
    }

    fn on_add(&mut self, event: &Event) -> Result<(), Error> {
        let status = status(&event.view()?)?;
        // A replayed add is a Pod that already existed when the plugin
        // joined: report it, but not as a creation.
        let verb = if event.is_initial_list() {
            "listed"
        } else {
            "created"
        };
        herald_sdk::info!("{verb} pod={} phase={}", event.key(), phase(&status));
        Ok(())
    }

    fn on_update(&mut self, event: &Update) -> Result<(), Error> {
        if event.is_resync() {
            return Ok(());
        }
        let (old, new) = (status(&event.old_view()?)?, status(&event.new_view()?)?);
        let key = event.key();
        if phase(&old) != phase(&new) {
            herald_sdk::info!(
                "transitioned pod={key} from={} to={}",
                phase(&old),
                phase(&new)
            );
        }
        for (container, count) in restart_counts(&new) {
            let before = restart_counts(&old)
                .find(|(name, _)| *name == container)
                .map_or(0, |(_, count)| count);
            if count > before {
                herald_sdk::warn!("restarted pod={key} container={container} count={count}");
            }
        }
        Ok(())
    }

    fn on_delete(&mut self, event: &Event) -> Result<(), Error> {
        let status = status(&event.view()?)?;
        // A tombstone: the deletion happened while the watch was down, and
        // the phase is only the last one the cache knew.
        let verb = if event.final_state_unknown() {
            "vanished"
        } else {
            "deleted"
        };
        herald_sdk::info!("{verb} pod={} phase={}", event.key(), phase(&status));
        Ok(())
    }
}

herald_sdk::export_plugin!(PodLifecycle);

// Native only: the SDK's stand-in host does not exist on wasm.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use herald_sdk::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use herald_sdk::testing;

    use super::*;

    fn pod(phase: Option<&str>, restarts: &[(&str, i32)]) -> Pod {
        let statuses = restarts
            .iter()
            .map(|(name, count)| ContainerStatus {
                name: (*name).into(),
                restart_count: *count,
                ..ContainerStatus::default()
            })
            .collect();
        Pod {
            metadata: ObjectMeta {
                name: Some("web-0".into()),
                namespace: Some("shop".into()),
                ..ObjectMeta::default()
            },
            status: Some(PodStatus {
                phase: phase.map(str::to_owned),
                container_statuses: Some(statuses),
                ..PodStatus::default()
            }),
            ..Pod::default()
        }
    }

    #[test]
    fn adds_distinguish_creation_from_replay() {
        testing::reset();
        let mut plugin = PodLifecycle;
        plugin
            .on_add(&testing::added(&pod(Some("Pending"), &[])))
            .unwrap();
        plugin
            .on_add(&testing::listed(&pod(Some("Running"), &[])))
            .unwrap();
        plugin.on_add(&testing::added(&pod(None, &[]))).unwrap();
        assert_eq!(
            testing::take_messages(),
            [
                "created pod=shop/web-0 phase=Pending",
                "listed pod=shop/web-0 phase=Running",
                "created pod=shop/web-0 phase=none"
            ]
        );
    }

    #[test]
    fn updates_report_phase_changes_and_restarts() {
        testing::reset();
        let mut plugin = PodLifecycle;
        let pending = pod(Some("Pending"), &[("app", 0), ("sidecar", 0)]);
        let running = pod(Some("Running"), &[("app", 0), ("sidecar", 0)]);
        let restarted = pod(Some("Running"), &[("app", 2), ("sidecar", 0)]);
        let failed = pod(Some("Failed"), &[("app", 3), ("sidecar", 1)]);
        plugin
            .on_update(&testing::updated(&pending, &running))
            .unwrap();
        plugin
            .on_update(&testing::updated(&running, &running))
            .unwrap();
        plugin
            .on_update(&testing::updated(&running, &restarted))
            .unwrap();
        plugin
            .on_update(&testing::updated(&restarted, &failed))
            .unwrap();
        assert_eq!(
            testing::take_messages(),
            [
                "transitioned pod=shop/web-0 from=Pending to=Running",
                "restarted pod=shop/web-0 container=app count=2",
                "transitioned pod=shop/web-0 from=Running to=Failed",
                "restarted pod=shop/web-0 container=app count=3",
                "restarted pod=shop/web-0 container=sidecar count=1",
            ]
        );
    }

    #[test]
    fn a_container_first_seen_with_restarts_counts_from_zero() {
        testing::reset();
        let before = pod(Some("Running"), &[]);
        let after = pod(Some("Running"), &[("app", 1)]);
        PodLifecycle
            .on_update(&testing::updated(&before, &after))
            .unwrap();
        assert_eq!(
            testing::take_messages(),
            ["restarted pod=shop/web-0 container=app count=1"]
        );
    }

    #[test]
    fn resyncs_are_silent() {
        testing::reset();
        PodLifecycle
            .on_update(&testing::resynced(&pod(Some("Running"), &[("app", 4)])))
            .unwrap();
        assert!(testing::take_messages().is_empty());
    }

    #[test]
    fn deletes_mark_tombstones() {
        testing::reset();
        let mut plugin = PodLifecycle;
        let gone = pod(Some("Succeeded"), &[]);
        plugin.on_delete(&testing::deleted(&gone)).unwrap();
        plugin.on_delete(&testing::vanished(&gone)).unwrap();
        assert_eq!(
            testing::take_messages(),
            [
                "deleted pod=shop/web-0 phase=Succeeded",
                "vanished pod=shop/web-0 phase=Succeeded"
            ]
        );
    }

    #[test]
    fn manifest_watches_all_pods() {
        let manifest = PodLifecycle::manifest();
        assert_eq!(manifest.name, "pod-lifecycle");
        assert_eq!(manifest.subscriptions, [Subscription::to::<Pod>()]);
    }
}
