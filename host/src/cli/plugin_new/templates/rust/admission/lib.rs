//! `{{name}}`: a Herald admission plugin that refuses Pods whose images
//! are not pinned (no tag, or `:latest`), at the door, before they exist.

use herald_sdk::admission::{AdmissionReview, AdmissionRule, Verdict, Webhook};
use herald_sdk::k8s_openapi::api::core::v1::Pod;
use herald_sdk::{Error, Handler, Manifest};

/// The plugin: no state of its own.
#[derive(Default)]
pub struct Plugin;

/// Whether `image` names a tag other than `latest`, or a digest.
fn pinned(image: &str) -> bool {
    if image.contains('@') {
        return true;
    }
    // The tag follows the last ':' after the last '/' (a registry's port
    // is not a tag).
    let last = image.rsplit('/').next().unwrap_or(image);
    matches!(last.rsplit_once(':'), Some((_, tag)) if tag != "latest")
}

impl Handler for Plugin {
    fn manifest() -> Manifest {
        Manifest::new("{{name}}", env!("CARGO_PKG_VERSION"))
            .validating(Webhook::new().rule(AdmissionRule::to::<Pod>().create().update()))
    }

    fn validate(&mut self, review: &AdmissionReview) -> Result<Verdict, Error> {
        let pod: Pod = review.object()?;
        let spec = pod.spec.unwrap_or_default();
        let unpinned: Vec<&str> = spec
            .init_containers
            .iter()
            .flatten()
            .chain(&spec.containers)
            .filter_map(|container| container.image.as_deref())
            .filter(|image| !pinned(image))
            .collect();
        Ok(if unpinned.is_empty() {
            Verdict::allow()
        } else {
            Verdict::deny(format!(
                "images must be pinned to a tag or digest, not latest: {}",
                unpinned.join(", ")
            ))
        })
    }
}

herald_sdk::export_plugin!(Plugin);

#[cfg(test)]
mod tests {
    use super::*;
    use herald_sdk::k8s_openapi::api::core::v1::{Container, PodSpec};
    use herald_sdk::testing;

    fn pod(image: &str) -> Pod {
        let mut pod = Pod::default();
        pod.metadata.name = Some("web-0".into());
        pod.metadata.namespace = Some("shop".into());
        pod.spec = Some(PodSpec {
            containers: vec![Container {
                name: "app".into(),
                image: Some(image.into()),
                ..Container::default()
            }],
            ..PodSpec::default()
        });
        pod
    }

    #[test]
    fn refuses_unpinned_images_and_allows_pinned_ones() {
        let mut plugin = Plugin;
        for image in ["shop/web:1.4.2", "registry:5000/web:2", "web@sha256:0123abcd"] {
            let verdict = plugin.validate(&testing::creating(&pod(image))).unwrap();
            assert!(verdict.allowed, "{image}: {}", verdict.message);
        }
        for image in ["shop/web", "shop/web:latest", "registry:5000/web"] {
            let verdict = plugin.validate(&testing::creating(&pod(image))).unwrap();
            assert!(!verdict.allowed, "{image} was allowed");
            assert!(verdict.message.contains(image), "{}", verdict.message);
        }
        let verdict = plugin
            .validate(&testing::updating(&pod("web:1"), &pod("web:latest")))
            .unwrap();
        assert!(!verdict.allowed, "an update to :latest was allowed");
    }
}
