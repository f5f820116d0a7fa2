//! The policy: which container images to flag, and why.

use std::fmt;

use serde::Deserialize;

use crate::reference::{DEFAULT_REGISTRY, ImageReference};

/// The plugin's configuration, e.g.
/// `{"allowedRegistries": ["docker.io", "ghcr.io"], "enforce": true}`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Settings {
    /// Registries images may come from (hosts, with port if any; `docker.io`
    /// covers Docker Hub). `None` allows every registry.
    pub allowed_registries: Option<Vec<String>>,
    /// Act on violations: a Warning Event on the Pod and the label
    /// `herald.dev/image-policy=violation` (default `false`: only log).
    #[serde(default)]
    pub enforce: bool,
}

impl Settings {
    fn allows(&self, registry: &str) -> bool {
        let normalize = |host: &str| match host.to_ascii_lowercase().as_str() {
            "index.docker.io" | "registry-1.docker.io" => DEFAULT_REGISTRY.to_owned(),
            other => other.to_owned(),
        };
        self.allowed_registries
            .as_ref()
            .is_none_or(|allowed| allowed.iter().any(|host| normalize(host) == registry))
    }
}

/// Why an image was flagged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reason {
    /// Neither tag nor digest: the runtime pulls `:latest`.
    NoTag,
    /// Tagged `:latest` without a digest: a moving target.
    LatestTag,
    /// Pulled from a registry outside the allow-list.
    RegistryNotAllowed(String),
    /// The reference does not parse.
    InvalidReference,
}

impl Reason {
    /// The reason in words, completing "image <image> …" in an Event's note.
    pub fn explain(&self) -> String {
        match self {
            Self::NoTag => "has neither tag nor digest".to_owned(),
            Self::LatestTag => "is tagged :latest without a digest".to_owned(),
            Self::RegistryNotAllowed(registry) => {
                format!("comes from registry {registry}, which is not allowed")
            }
            Self::InvalidReference => "is not a valid image reference".to_owned(),
        }
    }
}

/// Formats as the log line's `reason=...` value (plus `registry=...`).
impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoTag => f.write_str("reason=no-tag"),
            Self::LatestTag => f.write_str("reason=latest-tag"),
            Self::RegistryNotAllowed(registry) => {
                write!(f, "reason=registry-not-allowed registry={registry}")
            }
            Self::InvalidReference => f.write_str("reason=invalid-reference"),
        }
    }
}

/// Everything wrong with one image reference, in a stable order.
pub fn check(image: &str, settings: &Settings) -> Vec<Reason> {
    let Ok(reference) = ImageReference::parse(image) else {
        return vec![Reason::InvalidReference];
    };
    let mut reasons = Vec::new();
    // A digest pins the image whatever the tag says.
    if !reference.is_pinned() {
        match reference.tag.as_deref() {
            None => reasons.push(Reason::NoTag),
            Some("latest") => reasons.push(Reason::LatestTag),
            Some(_) => {}
        }
    }
    if !settings.allows(&reference.registry) {
        reasons.push(Reason::RegistryNotAllowed(reference.registry));
    }
    reasons
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowing(registries: &[&str]) -> Settings {
        Settings {
            allowed_registries: Some(registries.iter().map(|host| (*host).to_owned()).collect()),
            enforce: false,
        }
    }

    #[test]
    fn untagged_and_latest_are_flagged_unless_pinned() {
        let open = Settings::default();
        assert_eq!(check("nginx", &open), [Reason::NoTag]);
        assert_eq!(check("nginx:latest", &open), [Reason::LatestTag]);
        assert_eq!(check("nginx:1.27", &open), []);
        let digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        assert_eq!(check(&format!("nginx@{digest}"), &open), []);
        assert_eq!(check(&format!("nginx:latest@{digest}"), &open), []);
        assert_eq!(check("localhost:5000/app", &open), [Reason::NoTag]);
    }

    #[test]
    fn registries_outside_the_allow_list_are_flagged() {
        let settings = allowing(&["docker.io", "GHCR.io", "registry.local:5000"]);
        assert_eq!(check("nginx:1", &settings), []);
        assert_eq!(check("ghcr.io/acme/api:1", &settings), []);
        assert_eq!(check("registry.local:5000/app:1", &settings), []);
        assert_eq!(
            check("registry.local/app:1", &settings),
            [Reason::RegistryNotAllowed("registry.local".into())]
        );
        assert_eq!(
            check("quay.io/org/app", &settings),
            [Reason::NoTag, Reason::RegistryNotAllowed("quay.io".into())]
        );
        assert_eq!(check("nginx:1", &allowing(&["index.docker.io"])), []);
        assert_eq!(
            check("nginx:1", &allowing(&[])),
            [Reason::RegistryNotAllowed("docker.io".into())]
        );
    }

    #[test]
    fn malformed_references_are_flagged_once() {
        assert_eq!(
            check("Nginx:1", &allowing(&["ghcr.io"])),
            [Reason::InvalidReference]
        );
    }

    #[test]
    fn settings_parse_from_config_json() {
        let settings: Settings =
            herald_sdk::serde_json::from_str(r#"{"allowedRegistries":["docker.io","ghcr.io"]}"#)
                .unwrap();
        assert_eq!(settings, allowing(&["docker.io", "ghcr.io"]));
        assert!(herald_sdk::serde_json::from_str::<Settings>(r#"{"allowedRegistry":[]}"#).is_err());
        assert_eq!(
            herald_sdk::serde_json::from_str::<Settings>("{}").unwrap(),
            Settings::default()
        );
        assert!(
            herald_sdk::serde_json::from_str::<Settings>(r#"{"enforce":true}"#)
                .unwrap()
                .enforce
        );
    }

    #[test]
    fn reasons_render_as_log_fields() {
        assert_eq!(Reason::NoTag.to_string(), "reason=no-tag");
        assert_eq!(
            Reason::RegistryNotAllowed("quay.io".into()).to_string(),
            "reason=registry-not-allowed registry=quay.io"
        );
    }
}
