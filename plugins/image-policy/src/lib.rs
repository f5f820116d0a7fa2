//! `image-policy`: warns about Pod containers whose image has no tag, uses
//! `:latest`, or comes from a registry outside the configured allow-list.

pub mod policy;
pub mod reference;

use herald_sdk::k8s_openapi::api::core::v1::{Container, Pod};
use herald_sdk::{Error, Event, Handler, Manifest, Subscription, Update};

use crate::policy::{Reason, Settings};

/// Checks the images of every Pod as it appears or changes.
#[derive(Default)]
pub struct ImagePolicy {
    /// The operator's settings, read on the first notification.
    settings: Option<Settings>,
}

/// One flagged image: which container, and why.
#[derive(Debug, PartialEq, Eq)]
struct Finding {
    /// `container` or `init-container`.
    role: &'static str,
    container: String,
    image: String,
    reason: Reason,
}

fn findings(pod: &Pod, settings: &Settings) -> Vec<Finding> {
    let Some(spec) = &pod.spec else {
        return Vec::new();
    };
    let init = spec
        .init_containers
        .iter()
        .flatten()
        .map(|container| ("init-container", container));
    let app = spec
        .containers
        .iter()
        .map(|container| ("container", container));
    init.chain(app)
        .flat_map(|(role, container): (&'static str, &Container)| {
            let image = container.image.clone().unwrap_or_default();
            policy::check(&image, settings)
                .into_iter()
                .map(move |reason| Finding {
                    role,
                    container: container.name.clone(),
                    image: image.clone(),
                    reason,
                })
        })
        .collect()
}

impl ImagePolicy {
    fn settings(&mut self) -> Result<&Settings, Error> {
        if self.settings.is_none() {
            self.settings = Some(herald_sdk::config::get::<Settings>()?.unwrap_or_default());
        }
        Ok(self.settings.get_or_insert_default())
    }

    fn report(key: &str, findings: impl IntoIterator<Item = Finding>) {
        for Finding {
            role,
            container,
            image,
            reason,
        } in findings
        {
            herald_sdk::warn!("flagged pod={key} {role}={container} image={image} {reason}");
        }
    }
}

impl Handler for ImagePolicy {
    fn manifest() -> Manifest {
        Manifest::new("image-policy", env!("CARGO_PKG_VERSION"))
            .subscribe(Subscription::to::<Pod>())
    }

    fn on_add(&mut self, event: &Event) -> Result<(), Error> {
        let pod: Pod = event.object()?;
        let settings = self.settings()?;
        Self::report(event.key(), findings(&pod, settings));
        Ok(())
    }

    fn on_update(&mut self, event: &Update) -> Result<(), Error> {
        if event.is_resync() {
            return Ok(());
        }
        let (old, new): (Pod, Pod) = (event.old()?, event.new()?);
        let settings = self.settings()?;
        // Only what the update introduced: a status change must not repeat
        // the warnings logged when the Pod appeared.
        let before = findings(&old, settings);
        let introduced = findings(&new, settings)
            .into_iter()
            .filter(|finding| !before.contains(finding));
        Self::report(event.key(), introduced);
        Ok(())
    }
}

herald_sdk::export_plugin!(ImagePolicy);

// Native only: the SDK's stand-in host does not exist on wasm.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use herald_sdk::k8s_openapi::api::core::v1::PodSpec;
    use herald_sdk::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use herald_sdk::testing;

    use super::*;

    fn container(name: &str, image: &str) -> Container {
        Container {
            name: name.into(),
            image: Some(image.into()),
            ..Container::default()
        }
    }

    fn pod(init: &[(&str, &str)], app: &[(&str, &str)]) -> Pod {
        let containers = |list: &[(&str, &str)]| {
            list.iter()
                .map(|(name, image)| container(name, image))
                .collect()
        };
        Pod {
            metadata: ObjectMeta {
                name: Some("web-0".into()),
                namespace: Some("shop".into()),
                ..ObjectMeta::default()
            },
            spec: Some(PodSpec {
                init_containers: Some(containers(init)),
                containers: containers(app),
                ..PodSpec::default()
            }),
            ..Pod::default()
        }
    }

    #[test]
    fn without_config_all_registries_pass_but_tags_are_checked() {
        testing::reset();
        let pod = pod(
            &[("setup", "busybox")],
            &[("app", "quay.io/acme/app:1.0"), ("proxy", "envoy:latest")],
        );
        ImagePolicy::default()
            .on_add(&testing::added(&pod))
            .unwrap();
        assert_eq!(
            testing::take_messages(),
            [
                "flagged pod=shop/web-0 init-container=setup image=busybox reason=no-tag",
                "flagged pod=shop/web-0 container=proxy image=envoy:latest reason=latest-tag",
            ]
        );
    }

    #[test]
    fn configured_allow_list_flags_other_registries() {
        testing::reset();
        testing::set_config(r#"{"allowedRegistries": ["docker.io", "ghcr.io"]}"#);
        let pod = pod(
            &[],
            &[
                ("app", "quay.io/acme/app"),
                ("web", "nginx:1.27"),
                ("api", "ghcr.io/acme/api:2"),
            ],
        );
        ImagePolicy::default()
            .on_add(&testing::listed(&pod))
            .unwrap();
        assert_eq!(
            testing::take_messages(),
            [
                "flagged pod=shop/web-0 container=app image=quay.io/acme/app reason=no-tag",
                "flagged pod=shop/web-0 container=app image=quay.io/acme/app reason=registry-not-allowed registry=quay.io",
            ]
        );
    }

    #[test]
    fn updates_report_only_new_findings() {
        testing::reset();
        let mut plugin = ImagePolicy::default();
        let before = pod(&[], &[("app", "nginx")]);
        let after = pod(&[], &[("app", "nginx"), ("debug", "Busybox")]);
        plugin
            .on_update(&testing::updated(&before, &before))
            .unwrap();
        plugin
            .on_update(&testing::updated(&before, &after))
            .unwrap();
        plugin.on_update(&testing::resynced(&after)).unwrap();
        assert_eq!(
            testing::take_messages(),
            ["flagged pod=shop/web-0 container=debug image=Busybox reason=invalid-reference"]
        );
    }

    #[test]
    fn bad_config_is_a_handler_error() {
        testing::reset();
        testing::set_config(r#"{"allowedRegistries": "docker.io"}"#);
        let error = ImagePolicy::default()
            .on_add(&testing::added(&pod(&[], &[])))
            .unwrap_err();
        assert!(
            error
                .message()
                .starts_with("decoding the plugin configuration: "),
            "{error}"
        );
    }
}
