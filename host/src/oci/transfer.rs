//! Pushing a plugin artifact to a registry and pulling one back.

use super::artifact::{PluginArtifact, plugin_layer, verify};
use super::auth::DockerConfig;
use super::{OCI_MANIFEST_MEDIA_TYPE, OciError, parse_reference, sha256_digest};
use futures::StreamExt as _;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::errors::{DigestError, OciDistributionError};
use oci_client::manifest::OciImageManifest;
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use std::path::PathBuf;
use std::time::Duration;

/// How to reach a registry.
#[derive(Debug, Clone)]
pub struct RegistryOptions {
    /// Plain HTTP instead of HTTPS (a registry on loopback or a lab network).
    pub plain_http: bool,
    /// A Docker `config.json` (or a mounted `dockerconfigjson` pull secret)
    /// with credentials for the registry; `None`: anonymous.
    pub docker_config: Option<PathBuf>,
    /// Bound on connecting, and on each read.
    pub timeout: Duration,
}

impl Default for RegistryOptions {
    fn default() -> Self {
        RegistryOptions {
            plain_http: false,
            docker_config: None,
            timeout: Duration::from_secs(30),
        }
    }
}

/// Added to a TLS failure that means the registry answered in plain HTTP
/// (rustls reads the answer as a record of an invalid content type).
const PLAIN_HTTP_HINT: &str = " (the registry answered in plain HTTP, not TLS: if it serves plain \
     HTTP, pass --plain-http, or set plainHttp: true on the pluginSources entry)";

/// One reference in one registry, with a client and credentials for it.
pub struct Registry {
    client: Client,
    reference: Reference,
    auth: RegistryAuth,
    plain_http: bool,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("reference", &self.reference.whole())
            .field("auth", &self.auth)
            .finish()
    }
}

/// What a push stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pushed {
    /// The manifest's digest: pin the artifact with `…@<this>`.
    pub manifest_digest: String,
    /// The layer's digest: `sha256:` and the plugin file's sha256.
    pub layer_digest: String,
}

/// A pulled, verified plugin.
#[derive(Debug, Clone)]
pub struct Pulled {
    /// The manifest's digest.
    pub manifest_digest: String,
    /// The layer's digest.
    pub layer_digest: String,
    /// The component, which hashes to `layer_digest`.
    pub bytes: Vec<u8>,
}

impl Registry {
    /// A client for `reference` (`oci://` optional).
    pub fn new(reference: &str, options: &RegistryOptions) -> Result<Self, OciError> {
        let reference = parse_reference(reference)?;
        let auth = match &options.docker_config {
            None => RegistryAuth::Anonymous,
            Some(path) => DockerConfig::load(path)?
                .auth_for(reference.resolve_registry())
                .map_err(|reason| OciError::Auth {
                    path: path.display().to_string(),
                    reason,
                })?,
        };
        super::install_crypto_provider();
        let client = Client::new(ClientConfig {
            protocol: if options.plain_http {
                ClientProtocol::Http
            } else {
                ClientProtocol::Https
            },
            connect_timeout: Some(options.timeout),
            read_timeout: Some(options.timeout),
            // An index is not a plugin: refuse it rather than pick a platform.
            platform_resolver: None,
            ..ClientConfig::default()
        });
        Ok(Registry {
            client,
            reference,
            auth,
            plain_http: options.plain_http,
        })
    }

    /// The reference, as parsed (registry, repository, tag and/or digest).
    pub fn reference(&self) -> &Reference {
        &self.reference
    }

    /// Uploads the layer and the config, then the manifest under the
    /// reference's tag (or digest).
    pub async fn push(&self, artifact: &PluginArtifact) -> Result<Pushed, OciError> {
        let reference = &self.reference;
        self.client
            .store_auth_if_needed(reference.resolve_registry(), &self.auth)
            .await;
        let manifest = &artifact.manifest;
        let layer_digest = manifest.layers[0].digest.clone();
        self.client
            .push_blob(reference, artifact.layer.clone(), &layer_digest)
            .await
            .map_err(|e| self.failed("layer", e))?;
        self.client
            .push_blob(reference, artifact.config.clone(), &manifest.config.digest)
            .await
            .map_err(|e| self.failed("config", e))?;
        let body = serde_json::to_vec(manifest).expect("the manifest serializes");
        let manifest_digest = sha256_digest(&body);
        self.client
            .push_manifest_raw(
                reference,
                body,
                http::HeaderValue::from_static(OCI_MANIFEST_MEDIA_TYPE),
            )
            .await
            .map_err(|e| self.failed("manifest", e))?;
        Ok(Pushed {
            manifest_digest,
            layer_digest,
        })
    }

    /// The digest of the manifest the reference names now (a `HEAD`
    /// request: cheap enough to poll).
    pub async fn manifest_digest(&self) -> Result<String, OciError> {
        let digest = self
            .client
            .fetch_manifest_digest(&self.reference, &self.auth)
            .await
            .map_err(|e| self.failed("manifest", e))?;
        self.check_pin("manifest", &digest)?;
        Ok(digest)
    }

    /// Pulls the manifest and the plugin layer, verifying both: the
    /// manifest hashes to the digest the registry announced (and to the
    /// pinned one), it is a Wasm artifact whose layer is at most `max_size`
    /// bytes, and the layer hashes to the digest the manifest gives.
    pub async fn pull(&self, max_size: u64) -> Result<Pulled, OciError> {
        let (body, announced) = self
            .client
            .pull_manifest_raw(&self.reference, &self.auth, &[OCI_MANIFEST_MEDIA_TYPE])
            .await
            .map_err(|e| self.failed("manifest", e))?;
        verify("manifest", &body, &announced)?;
        self.check_pin("manifest", &announced)?;
        let manifest: OciImageManifest = serde_json::from_slice(&body)
            .map_err(|e| OciError::Layout(format!("the manifest does not parse: {e}")))?;
        let layer = plugin_layer(&manifest, max_size)?;
        let size = layer.size as u64;
        let mut stream = self
            .client
            .pull_blob_stream(&self.reference, &layer)
            .await
            .map_err(|e| self.failed("layer", e))?;
        let mut bytes = Vec::with_capacity(size as usize);
        while let Some(chunk) = stream.next().await {
            match chunk {
                Ok(chunk) => {
                    bytes.extend_from_slice(&chunk);
                    if bytes.len() as u64 > size {
                        return Err(OciError::Layout(format!(
                            "the registry sent more than the {size} bytes the manifest gives"
                        )));
                    }
                }
                // The client checks the digest too, failing the last read:
                // report the mismatch as such.
                Err(error) => {
                    verify("layer", &bytes, &layer.digest)?;
                    return Err(self.failed("layer", OciDistributionError::IoError(error)));
                }
            }
        }
        verify("layer", &bytes, &layer.digest)?;
        if bytes.len() as u64 != size {
            return Err(OciError::Layout(format!(
                "the layer is {} bytes, the manifest says {size}",
                bytes.len()
            )));
        }
        Ok(Pulled {
            manifest_digest: announced,
            layer_digest: layer.digest,
            bytes,
        })
    }

    /// A digest the registry gave must be the pinned one, if pinned.
    fn check_pin(&self, what: &'static str, digest: &str) -> Result<(), OciError> {
        match self.reference.digest() {
            Some(pinned) if pinned != digest => Err(OciError::Digest {
                what,
                expected: pinned.to_owned(),
                actual: digest.to_owned(),
            }),
            _ => Ok(()),
        }
    }

    /// `error` of the client, met on `what` (`manifest`, `layer`,
    /// `config`), as an [`OciError`]: a digest the client found wrong is a
    /// [`OciError::Digest`] naming both digests; an HTTPS request answered
    /// in plain HTTP says so and names `--plain-http`.
    fn failed(&self, what: &'static str, error: OciDistributionError) -> OciError {
        let transient = match &error {
            OciDistributionError::RequestError(_) | OciDistributionError::IoError(_) => true,
            OciDistributionError::ServerError { code, .. } => *code >= 500 || *code == 429,
            _ => false,
        };
        match error {
            OciDistributionError::DigestError(DigestError::VerificationError {
                expected,
                actual,
            }) => {
                return OciError::Digest {
                    what,
                    expected,
                    actual,
                };
            }
            OciDistributionError::DigestError(other) => {
                return OciError::Layout(format!("{what} digest: {other}"));
            }
            _ => {}
        }
        // reqwest's messages say "error sending request" and hide the cause
        // (connection refused, timeout) in the source chain.
        let mut message = error.to_string();
        let mut source = std::error::Error::source(&error);
        while let Some(cause) = source {
            let cause_text = cause.to_string();
            if !message.contains(&cause_text) {
                message.push_str(": ");
                message.push_str(&cause_text);
            }
            source = cause.source();
        }
        if !self.plain_http && message.contains("InvalidContentType") {
            message.push_str(PLAIN_HTTP_HINT);
        }
        OciError::Registry {
            registry: self.reference.resolve_registry().to_owned(),
            message,
            transient,
        }
    }
}
