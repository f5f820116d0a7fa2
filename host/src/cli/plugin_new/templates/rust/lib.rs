//! `{{name}}`: a Herald plugin that logs Pods being added, changing phase
//! and being deleted.

use herald_sdk::k8s_openapi::api::core::v1::{Pod, PodStatus};
use herald_sdk::view::ObjectView;
use herald_sdk::{Error, Event, Handler, Manifest, Subscription, Update};

/// The plugin: no state of its own.
#[derive(Default)]
pub struct Plugin;

/// A Pod's `status.phase`, or `none` before the API server sets one.
///
/// Through the lazy view only the status is decoded; the rest of the Pod
/// is skipped. (`event.object::<Pod>()` would build all of it.)
fn phase(pod: &ObjectView) -> Result<String, Error> {
    let status: Option<PodStatus> = pod.status()?;
    Ok(status
        .and_then(|status| status.phase)
        .unwrap_or_else(|| "none".into()))
}

impl Handler for Plugin {
    fn manifest() -> Manifest {
        Manifest::new("{{name}}", env!("CARGO_PKG_VERSION")).subscribe(Subscription::to::<Pod>())
    }

    fn on_add(&mut self, event: &Event) -> Result<(), Error> {
        let phase = phase(&event.view()?)?;
        let verb = if event.is_initial_list() { "listed" } else { "added" };
        herald_sdk::info!("{verb} pod={} phase={phase}", event.key());
        Ok(())
    }

    fn on_update(&mut self, event: &Update) -> Result<(), Error> {
        let (old, new) = (phase(&event.old_view()?)?, phase(&event.new_view()?)?);
        if old != new {
            herald_sdk::info!("phase pod={} from={old} to={new}", event.key());
        }
        Ok(())
    }

    fn on_delete(&mut self, event: &Event) -> Result<(), Error> {
        herald_sdk::info!("deleted pod={}", event.key());
        Ok(())
    }
}

herald_sdk::export_plugin!(Plugin);

#[cfg(test)]
mod tests {
    use super::*;
    use herald_sdk::testing;

    fn pod(phase: &str) -> Pod {
        let mut pod = Pod::default();
        pod.metadata.name = Some("web-0".into());
        pod.metadata.namespace = Some("shop".into());
        pod.status = Some(PodStatus {
            phase: Some(phase.into()),
            ..PodStatus::default()
        });
        pod
    }

    #[test]
    fn logs_adds_phase_changes_and_deletions() {
        testing::reset();
        let mut plugin = Plugin;
        plugin.on_add(&testing::added(&pod("Pending"))).unwrap();
        plugin
            .on_update(&testing::updated(&pod("Pending"), &pod("Running")))
            .unwrap();
        plugin
            .on_update(&testing::updated(&pod("Running"), &pod("Running")))
            .unwrap();
        plugin.on_delete(&testing::deleted(&pod("Running"))).unwrap();
        assert_eq!(
            testing::take_messages(),
            [
                "added pod=shop/web-0 phase=Pending",
                "phase pod=shop/web-0 from=Pending to=Running",
                "deleted pod=shop/web-0",
            ]
        );
    }
}
