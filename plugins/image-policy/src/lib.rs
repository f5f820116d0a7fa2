//! `image-policy`: warns about Pod containers whose image has no tag, uses
//! `:latest`, or comes from a registry outside the configured allow-list.
//! With `"enforce": true` it also acts: a Warning Event on the Pod per new
//! finding, and the label `herald.dev/image-policy=violation` on it. At
//! admission it refuses a Pod with a finding before it exists (its
//! validating webhook, once the operator installs the webhook configuration
//! `herald admission webhooks` prints).

pub mod policy;
pub mod reference;

use herald_sdk::admission::{AdmissionReview, AdmissionRule, Verdict, Webhook};
use herald_sdk::events::Event as KubeEvent;
use herald_sdk::k8s_openapi::api::core::v1::{Container, Pod};
use herald_sdk::kube::{Api, KubeError, Patch};
use herald_sdk::serde_json::json;
use herald_sdk::{Error, Event, Handler, Manifest, Subscription, Update, Verb, WriteRule};

use crate::policy::{Reason, Settings};

/// The label an enforcing plugin puts on a violating Pod.
pub const LABEL: (&str, &str) = ("herald.dev/image-policy", "violation");

/// The reason of the Warning Events an enforcing plugin publishes.
pub const EVENT_REASON: &str = "DisallowedImage";

/// An Event's note is at most 1 KiB.
const NOTE_LIMIT: usize = 1024;

/// Checks the images of every Pod as it appears or changes.
#[derive(Default)]
pub struct ImagePolicy {
    /// The operator's settings, read on the first notification.
    settings: Option<Settings>,
}

/// One flagged image: which container, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
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

    fn report(key: &str, findings: &[Finding]) {
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

    /// Enforcement: labels `pod` if it has findings and is not labelled yet,
    /// then publishes one Warning Event per finding in `introduced`. A
    /// retryable failure fails the call (the host retries it); the others
    /// are logged and the rest goes on.
    fn enforce(key: &str, pod: &Pod, all: &[Finding], introduced: &[Finding]) -> Result<(), Error> {
        let mut retry: Option<Error> = None;
        let mut failed = |call: &str, error: KubeError| {
            herald_sdk::warn!(
                "enforce-failed pod={key} call={call} outcome={} detail={}",
                error.outcome(),
                error
                    .message()
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
            );
            if error.is_retryable() && retry.is_none() {
                retry = Some(Error::from(error).context(format_args!("{call} on pod {key}")));
            }
        };
        let labelled = pod
            .metadata
            .labels
            .as_ref()
            .and_then(|labels| labels.get(LABEL.0))
            .is_some_and(|value| value == LABEL.1);
        if !all.is_empty() && !labelled {
            let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
            let name = pod.metadata.name.as_deref().unwrap_or_default();
            let patch = Patch::Merge(json!({"metadata": {"labels": {LABEL.0: LABEL.1}}}));
            match Api::<Pod>::namespaced(namespace).patch(name, &patch) {
                Ok(_) => herald_sdk::info!("labelled pod={key} {}={}", LABEL.0, LABEL.1),
                Err(error) => failed("patch", error),
            }
        }
        for finding in introduced {
            let mut note = format!(
                "{} {}: image {} {}",
                finding.role,
                finding.container,
                finding.image,
                finding.reason.explain()
            );
            truncate(&mut note, NOTE_LIMIT);
            if let Err(error) = KubeEvent::warning(pod, EVENT_REASON, note)
                .action("Flagged")
                .publish()
            {
                failed("event", error);
            }
        }
        retry.map_or(Ok(()), Err)
    }
}

/// Cuts `text` to at most `limit` bytes, on a character boundary.
fn truncate(text: &mut String, limit: usize) {
    if text.len() > limit {
        let mut end = limit;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
}

impl Handler for ImagePolicy {
    /// Enforcing needs more than watching: the Pod patch write rule and the
    /// `events` capability are declared only with `"enforce": true`, so a
    /// setup without those grants keeps loading the plugin. (A configuration
    /// that does not decode declares nothing more; the first notification
    /// reports it.)
    fn manifest() -> Manifest {
        let manifest = Manifest::new("image-policy", env!("CARGO_PKG_VERSION"))
            .subscribe(Subscription::to::<Pod>())
            .validating(Webhook::new().rule(AdmissionRule::to::<Pod>().create().update()));
        let enforce = herald_sdk::config::get::<Settings>()
            .ok()
            .flatten()
            .is_some_and(|settings| settings.enforce);
        if enforce {
            manifest
                .write(WriteRule::new::<Pod>().verb(Verb::Patch).all_namespaces())
                .capability("events")
        } else {
            manifest
        }
    }

    /// Refuses a Pod with a finding, naming each; an update only for what
    /// it introduces (a Pod admitted before the policy changed can still
    /// have its labels edited).
    fn validate(&mut self, review: &AdmissionReview) -> Result<Verdict, Error> {
        let pod: Pod = review.object()?;
        let settings = self.settings()?;
        let mut found = findings(&pod, settings);
        if let Ok(old) = review.old_object::<Pod>() {
            let before = findings(&old, settings);
            found.retain(|finding| !before.contains(finding));
        }
        if found.is_empty() {
            return Ok(Verdict::allow());
        }
        let reasons: Vec<String> = found
            .iter()
            .map(|f| {
                format!(
                    "{} {}: image {} {}",
                    f.role,
                    f.container,
                    f.image,
                    f.reason.explain()
                )
            })
            .collect();
        Ok(Verdict::deny(format!(
            "image-policy: {}",
            reasons.join("; ")
        )))
    }

    fn on_add(&mut self, event: &Event) -> Result<(), Error> {
        let pod: Pod = event.object()?;
        let settings = self.settings()?;
        let found = findings(&pod, settings);
        Self::report(event.key(), &found);
        if settings.enforce {
            Self::enforce(event.key(), &pod, &found, &found)?;
        }
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
        let now = findings(&new, settings);
        let introduced: Vec<Finding> = now
            .iter()
            .filter(|finding| !before.contains(finding))
            .cloned()
            .collect();
        Self::report(event.key(), &introduced);
        if settings.enforce {
            // The label follows the Pod's state (put back if removed); the
            // Events only announce what is new.
            Self::enforce(event.key(), &new, &now, &introduced)?;
        }
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
    fn admission_refuses_a_pod_with_a_finding_naming_it_and_allows_a_clean_one() {
        testing::reset();
        testing::set_config(r#"{"allowedRegistries": ["docker.io"]}"#);
        let mut plugin = ImagePolicy::default();
        let bad = pod(&[], &[("app", "evil.example.com/x:1")]);
        let verdict = plugin.validate(&testing::creating(&bad)).unwrap();
        assert!(!verdict.allowed);
        assert_eq!(
            verdict.message,
            "image-policy: container app: image evil.example.com/x:1 comes from registry evil.example.com, which is not allowed"
        );
        let good = pod(&[], &[("app", "nginx:1.27")]);
        assert!(plugin.validate(&testing::creating(&good)).unwrap().allowed);
        // An update that introduces nothing passes, even on a violator.
        assert!(
            plugin
                .validate(&testing::updating(&bad, &bad))
                .unwrap()
                .allowed
        );
        assert!(
            !plugin
                .validate(&testing::updating(&good, &bad))
                .unwrap()
                .allowed
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

    fn enforcing() {
        testing::reset();
        testing::set_config(r#"{"allowedRegistries": ["docker.io"], "enforce": true}"#);
    }

    fn uid(mut pod: Pod) -> Pod {
        pod.metadata.uid = Some("uid-web-0".into());
        pod
    }

    #[test]
    fn the_manifest_asks_for_writes_only_when_enforcing() {
        testing::reset();
        let manifest = ImagePolicy::manifest();
        assert!(manifest.writes.is_empty() && manifest.capabilities.is_empty());
        testing::set_config(r#"{"enforce": false}"#);
        assert!(ImagePolicy::manifest().writes.is_empty());
        testing::set_config(r#"{"enforce": "yes"}"#);
        assert!(
            ImagePolicy::manifest().writes.is_empty(),
            "a bad config asks for nothing"
        );

        enforcing();
        let manifest = ImagePolicy::manifest();
        assert_eq!(
            manifest.writes,
            [WriteRule::for_kind("", "Pod")
                .verb(Verb::Patch)
                .namespaces(["*"])]
        );
        assert_eq!(manifest.capabilities, ["events"]);
    }

    #[test]
    fn without_enforce_nothing_is_written() {
        testing::reset();
        ImagePolicy::default()
            .on_add(&testing::added(&pod(&[], &[("app", "nginx")])))
            .unwrap();
        assert_eq!(testing::take_writes(), []);
        assert_eq!(testing::take_events(), []);
    }

    #[test]
    fn enforcing_labels_the_pod_and_warns_per_finding() {
        enforcing();
        let pod = uid(pod(
            &[("setup", "busybox")],
            &[("app", "quay.io/acme/app:1.0")],
        ));
        ImagePolicy::default()
            .on_add(&testing::added(&pod))
            .unwrap();

        let calls = testing::take_writes();
        assert_eq!(calls.len(), 1, "{calls:#?}");
        assert_eq!(calls[0].verb, Verb::Patch);
        assert_eq!(calls[0].target.to_string(), "v1/Pod shop/web-0");
        assert_eq!(
            calls[0].patch_type,
            Some(herald_sdk::kube::PatchType::Merge)
        );
        assert_eq!(
            calls[0].body,
            Some(json!({"metadata": {"labels": {"herald.dev/image-policy": "violation"}}}))
        );

        let events = testing::take_events();
        let notes: Vec<&str> = events.iter().map(|event| event.note.as_str()).collect();
        assert_eq!(
            notes,
            [
                "init-container setup: image busybox has neither tag nor digest",
                "container app: image quay.io/acme/app:1.0 comes from registry quay.io, which is not allowed",
            ]
        );
        for event in &events {
            assert_eq!(event.event_type, herald_sdk::events::EventType::Warning);
            assert_eq!(
                (event.reason.as_str(), event.action.as_str()),
                ("DisallowedImage", "Flagged")
            );
            assert_eq!(event.regarding.key(), "shop/web-0");
            assert_eq!(event.regarding.uid.as_deref(), Some("uid-web-0"));
        }
        assert!(
            testing::take_messages()
                .contains(&"labelled pod=shop/web-0 herald.dev/image-policy=violation".to_owned())
        );
    }

    #[test]
    fn a_labelled_pod_is_not_patched_again_and_clean_pods_are_left_alone() {
        enforcing();
        let mut plugin = ImagePolicy::default();
        let mut labelled = uid(pod(&[], &[("app", "nginx")]));
        labelled.metadata.labels = Some([(LABEL.0.to_owned(), LABEL.1.to_owned())].into());
        plugin.on_add(&testing::added(&labelled)).unwrap();
        assert_eq!(testing::take_writes(), []);
        assert_eq!(testing::take_events().len(), 1);

        plugin
            .on_add(&testing::added(&uid(pod(&[], &[("app", "nginx:1.27")]))))
            .unwrap();
        assert_eq!(testing::take_writes(), []);
        assert_eq!(testing::take_events(), []);
    }

    #[test]
    fn updates_relabel_but_only_announce_new_findings() {
        enforcing();
        let mut plugin = ImagePolicy::default();
        let before = uid(pod(&[], &[("app", "nginx")]));
        // The label was removed; the finding is old.
        plugin
            .on_update(&testing::updated(&before, &before))
            .unwrap();
        assert_eq!(testing::take_writes().len(), 1, "the label is put back");
        assert_eq!(testing::take_events(), [], "nothing new to announce");

        let mut after = uid(pod(&[], &[("app", "nginx"), ("debug", "busybox:latest")]));
        after.metadata.labels = Some([(LABEL.0.to_owned(), LABEL.1.to_owned())].into());
        plugin
            .on_update(&testing::updated(&before, &after))
            .unwrap();
        assert_eq!(testing::take_writes(), []);
        let events = testing::take_events();
        assert_eq!(events.len(), 1);
        assert!(
            events[0].note.starts_with("container debug: "),
            "{:?}",
            events[0]
        );
    }

    #[test]
    fn enforcement_failures_are_logged_and_retryable_ones_fail_the_call() {
        enforcing();
        testing::respond(
            Verb::Patch,
            "*",
            Err(KubeError::NotGranted(
                "no rule grants patch on Pod in shop".into(),
            )),
        );
        testing::respond_events(Err(KubeError::NotGranted("capability events".into())));
        let pod = uid(pod(&[], &[("app", "nginx")]));
        ImagePolicy::default()
            .on_add(&testing::added(&pod))
            .unwrap();
        let messages = testing::take_messages();
        assert_eq!(
            &messages[1..],
            [
                "enforce-failed pod=shop/web-0 call=patch outcome=not-granted detail=no rule grants patch on Pod in shop",
                "enforce-failed pod=shop/web-0 call=event outcome=not-granted detail=capability events",
            ]
        );

        testing::respond(Verb::Patch, "*", Err(KubeError::Timeout("deadline".into())));
        testing::respond_events(Ok(()));
        let error = ImagePolicy::default()
            .on_add(&testing::added(&pod))
            .unwrap_err();
        assert_eq!(
            error.message(),
            "patch on pod shop/web-0: timeout: deadline"
        );
        assert_eq!(
            testing::take_events().len(),
            2,
            "events are still published"
        );
    }

    #[test]
    fn notes_are_cut_to_one_kibibyte_on_a_character_boundary() {
        let mut text = "é".repeat(600);
        truncate(&mut text, NOTE_LIMIT);
        assert_eq!(text.len(), 1024);
        let mut short = "abc".to_owned();
        truncate(&mut short, NOTE_LIMIT);
        assert_eq!(short, "abc");
    }
}
