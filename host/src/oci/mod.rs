//! Plugins as OCI artifacts: publishing a plugin to a registry and pulling
//! it back, digest-verified, in the CNCF Wasm OCI artifact layout.
//!
//! The layout (CNCF TAG Runtime, "Wasm OCI Artifact"): an OCI image manifest
//! whose config has media type `application/vnd.wasm.config.v0+json` (a
//! small JSON document: architecture `wasm`, os `wasip2`, the layer digests
//! and the component's imports and exports) and exactly one layer,
//! `application/wasm`, holding the component as it is. `herald plugin push`
//! writes that; pulling also accepts the older wasm-to-oci media types
//! (`application/vnd.wasm.config.v1+json`, `application/vnd.wasm.content.layer.v1+wasm`)
//! that Kubewarden and Istio publish.
//!
//! Talking to registries is [`oci_client`]'s business (the ORAS project's
//! client). What Herald adds, and guarantees itself whatever the client
//! checks: the manifest's bytes hash to the digest the registry announced
//! and, for a reference pinned `@sha256:…`, to the pinned one; the layer's
//! bytes hash to the digest and have the size the manifest gives; nothing
//! larger than the size cap is downloaded.
//!
//! [`auth`] reads credentials from a Docker `config.json` (the format of a
//! Kubernetes `kubernetes.io/dockerconfigjson` pull secret).

pub mod artifact;
pub mod auth;
pub mod transfer;

pub use artifact::{ComponentInfo, PluginArtifact, WasmConfig};
pub use auth::{AuthError, DockerConfig, HelperFailure, default_docker_config};
pub use transfer::{Pulled, Pushed, Registry, RegistryOptions};

/// The media type of the config of a Wasm artifact (CNCF layout).
pub const WASM_CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// The media type of the layer holding the component (CNCF layout).
pub const WASM_LAYER_MEDIA_TYPE: &str = "application/wasm";
/// The config media type of the older wasm-to-oci layout, accepted on pull.
pub const LEGACY_CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v1+json";
/// The layer media type of the older wasm-to-oci layout, accepted on pull.
pub const LEGACY_LAYER_MEDIA_TYPE: &str = "application/vnd.wasm.content.layer.v1+wasm";
/// The media type of an OCI image manifest.
pub const OCI_MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";

/// The prefix a reference may carry in configuration: `oci://`.
pub const SCHEME: &str = "oci://";

/// Why a push or a pull failed. [`OciError::is_transient`] says which may
/// pass by themselves (the registry is down or answers 5xx): those are
/// retried with backoff, the others wait for the reference to change.
#[derive(Debug, thiserror::Error)]
pub enum OciError {
    /// The reference does not parse.
    #[error(
        "{reference:?} is not an OCI reference (registry/repository:tag or @sha256:digest): {reason}"
    )]
    Reference {
        /// What was given.
        reference: String,
        /// Why it does not parse.
        reason: String,
    },
    /// The registry could not be reached or answered an error.
    #[error("registry {registry}: {message}")]
    Registry {
        /// The registry host.
        registry: String,
        /// What the client reported.
        message: String,
        /// True when retrying may help (connection refused, timeout, 5xx).
        transient: bool,
    },
    /// Content did not hash to its digest.
    #[error("{what}: digest mismatch: expected {expected}, got {actual}")]
    Digest {
        /// Which content (`manifest`, `layer`).
        what: &'static str,
        /// The digest it should have.
        expected: String,
        /// The digest it has.
        actual: String,
    },
    /// The artifact is not a Wasm plugin in a layout Herald reads.
    #[error("not a Wasm plugin artifact: {0}")]
    Layout(String),
    /// The layer is larger than the size cap.
    #[error("the plugin is {size} bytes, above the cap of {max} bytes (pluginFiles.maxSize)")]
    TooLarge {
        /// Its size.
        size: u64,
        /// The cap.
        max: u64,
    },
    /// Credentials could not be read.
    #[error("registry credentials {path}: {reason}")]
    Auth {
        /// The Docker config file.
        path: String,
        /// Why.
        #[source]
        reason: auth::AuthError,
    },
}

impl OciError {
    /// True for failures that may pass by themselves (an unreachable or
    /// failing registry), worth retrying with backoff.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            OciError::Registry {
                transient: true,
                ..
            }
        )
    }
}

/// The result of this module's operations.
pub type Result<T, E = OciError> = std::result::Result<T, E>;

/// Parses a reference, with or without `oci://`. A reference without a
/// registry host means Docker Hub (`docker.io`), as everywhere else.
pub fn parse_reference(text: &str) -> Result<oci_client::Reference> {
    let bare = text.strip_prefix(SCHEME).unwrap_or(text);
    bare.parse()
        .map_err(|e: oci_client::ParseError| OciError::Reference {
            reference: text.to_owned(),
            reason: e.to_string(),
        })
}

/// `sha256:<hex>` of `bytes`.
pub fn sha256_digest(bytes: &[u8]) -> String {
    format!("sha256:{}", crate::plugin::digest(bytes))
}

/// Installs ring as the process's rustls provider (kube's, so no second
/// crypto stack is linked), once, before the first client is built.
fn install_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Someone else (a test, a future caller) may have installed one.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_parse_with_or_without_the_scheme() {
        let tag = parse_reference("oci://registry.local:5000/team/plugin:1.2").unwrap();
        assert_eq!(tag.registry(), "registry.local:5000");
        assert_eq!(tag.repository(), "team/plugin");
        assert_eq!(tag.tag(), Some("1.2"));
        let pinned = format!("127.0.0.1:5000/p@sha256:{}", "a".repeat(64));
        let pinned = parse_reference(&pinned).unwrap();
        assert_eq!(
            pinned.digest(),
            Some(format!("sha256:{}", "a".repeat(64)).as_str())
        );
        let err = parse_reference("oci://Not A Ref").unwrap_err();
        assert!(err.to_string().contains("not an OCI reference"), "{err}");
    }

    #[test]
    fn digests_are_prefixed_sha256() {
        assert_eq!(
            sha256_digest(b""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
