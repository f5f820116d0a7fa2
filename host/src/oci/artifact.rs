//! The CNCF Wasm OCI artifact layout: what `herald plugin push` writes and
//! what a pull accepts.

use super::{
    LEGACY_CONFIG_MEDIA_TYPE, LEGACY_LAYER_MEDIA_TYPE, OCI_MANIFEST_MEDIA_TYPE, OciError,
    WASM_CONFIG_MEDIA_TYPE, WASM_LAYER_MEDIA_TYPE, sha256_digest,
};
use oci_client::manifest::{OciDescriptor, OciImageManifest};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The component's world as the config describes it: the fully qualified
/// names of the interfaces it imports and exports.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ComponentInfo {
    /// Exported interfaces, e.g. `herald:plugin/handler@0.2.0`.
    pub exports: Vec<String>,
    /// Imported interfaces, e.g. `herald:plugin/log@0.2.0`.
    pub imports: Vec<String>,
    /// The world it targets, e.g. `herald:plugin/plugin@0.2.0`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

/// The config blob (`application/vnd.wasm.config.v0+json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WasmConfig {
    /// When the artifact was made (RFC 3339).
    pub created: String,
    /// Who made it, if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    /// Always `wasm`.
    pub architecture: String,
    /// `wasip2` for a component.
    pub os: String,
    /// The digest of each layer, in manifest order (this makes the config,
    /// and so the artifact, unique to its content).
    pub layer_digests: Vec<String>,
    /// The component's imports and exports.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub component: Option<ComponentInfo>,
}

/// A plugin ready to push: its config, its one layer and the manifest that
/// ties them together.
#[derive(Debug, Clone)]
pub struct PluginArtifact {
    /// The component's bytes (the layer).
    pub layer: Vec<u8>,
    /// The config blob, serialized.
    pub config: Vec<u8>,
    /// The image manifest.
    pub manifest: OciImageManifest,
}

impl PluginArtifact {
    /// Lays out `component` as a Wasm artifact. `annotations` go on the
    /// manifest (e.g. `org.opencontainers.image.title` and `.version`).
    pub fn new(
        component: Vec<u8>,
        info: ComponentInfo,
        created: String,
        annotations: BTreeMap<String, String>,
    ) -> Self {
        let layer_digest = sha256_digest(&component);
        let config = WasmConfig {
            created,
            author: None,
            architecture: "wasm".into(),
            os: "wasip2".into(),
            layer_digests: vec![layer_digest.clone()],
            component: Some(info),
        };
        let config = serde_json::to_vec(&config).expect("the config serializes");
        let manifest = OciImageManifest {
            schema_version: 2,
            media_type: Some(OCI_MANIFEST_MEDIA_TYPE.into()),
            config: OciDescriptor {
                media_type: WASM_CONFIG_MEDIA_TYPE.into(),
                digest: sha256_digest(&config),
                size: config.len() as i64,
                ..OciDescriptor::default()
            },
            layers: vec![OciDescriptor {
                media_type: WASM_LAYER_MEDIA_TYPE.into(),
                digest: layer_digest,
                size: component.len() as i64,
                ..OciDescriptor::default()
            }],
            annotations: (!annotations.is_empty()).then_some(annotations),
            ..OciImageManifest::default()
        };
        PluginArtifact {
            layer: component,
            config,
            manifest,
        }
    }
}

/// Checks a pulled manifest is a Wasm plugin artifact and returns its one
/// layer: config and layer of the CNCF layout (or the older wasm-to-oci
/// one), exactly one Wasm layer, a sha256 digest, a size within `max_size`.
pub fn plugin_layer(manifest: &OciImageManifest, max_size: u64) -> Result<OciDescriptor, OciError> {
    let config = &manifest.config.media_type;
    if config != WASM_CONFIG_MEDIA_TYPE && config != LEGACY_CONFIG_MEDIA_TYPE {
        return Err(OciError::Layout(format!(
            "config media type {config:?}, expected {WASM_CONFIG_MEDIA_TYPE:?} (is this a container image?)"
        )));
    }
    let wasm: Vec<&OciDescriptor> = manifest
        .layers
        .iter()
        .filter(|l| {
            l.media_type == WASM_LAYER_MEDIA_TYPE || l.media_type == LEGACY_LAYER_MEDIA_TYPE
        })
        .collect();
    let [layer] = wasm.as_slice() else {
        return Err(OciError::Layout(format!(
            "{} layers of media type {WASM_LAYER_MEDIA_TYPE:?}, expected exactly one",
            wasm.len()
        )));
    };
    let hex = layer.digest.strip_prefix("sha256:").unwrap_or_default();
    if hex.len() != 64
        || !hex
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    {
        return Err(OciError::Layout(format!(
            "layer digest {:?} is not sha256:<64 lowercase hex>",
            layer.digest
        )));
    }
    let size =
        u64::try_from(layer.size).map_err(|_| OciError::Layout("negative layer size".into()))?;
    if size > max_size {
        return Err(OciError::TooLarge {
            size,
            max: max_size,
        });
    }
    Ok((*layer).clone())
}

/// Checks `bytes` hash to `expected` (`sha256:<hex>`).
pub fn verify(what: &'static str, bytes: &[u8], expected: &str) -> Result<(), OciError> {
    let actual = sha256_digest(bytes);
    if actual == expected {
        Ok(())
    } else {
        Err(OciError::Digest {
            what,
            expected: expected.to_owned(),
            actual,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn artifact() -> PluginArtifact {
        PluginArtifact::new(
            b"\0asm component".to_vec(),
            ComponentInfo {
                exports: vec!["herald:plugin/handler@0.2.0".into()],
                imports: vec!["herald:plugin/log@0.2.0".into()],
                target: Some("herald:plugin/plugin@0.2.0".into()),
            },
            "2025-01-01T00:00:00Z".into(),
            BTreeMap::from([("org.opencontainers.image.title".into(), "hello".into())]),
        )
    }

    #[test]
    fn a_pushed_artifact_has_the_cncf_layout() {
        let artifact = artifact();
        let manifest = serde_json::to_value(&artifact.manifest).unwrap();
        assert_eq!(manifest["schemaVersion"], 2);
        assert_eq!(manifest["mediaType"], OCI_MANIFEST_MEDIA_TYPE);
        assert_eq!(
            manifest["config"]["mediaType"],
            "application/vnd.wasm.config.v0+json"
        );
        assert_eq!(manifest["layers"][0]["mediaType"], "application/wasm");
        let layer_digest = sha256_digest(&artifact.layer);
        assert_eq!(manifest["layers"][0]["digest"], layer_digest.as_str());
        let config: serde_json::Value = serde_json::from_slice(&artifact.config).unwrap();
        assert_eq!(config["architecture"], "wasm");
        assert_eq!(config["os"], "wasip2");
        assert_eq!(config["layerDigests"][0], layer_digest.as_str());
        assert_eq!(
            config["component"]["exports"][0],
            "herald:plugin/handler@0.2.0"
        );
        assert_eq!(
            manifest["config"]["digest"],
            sha256_digest(&artifact.config).as_str()
        );
    }

    #[test]
    fn pulls_accept_only_one_wasm_layer_within_the_cap() {
        let artifact = artifact();
        let layer = plugin_layer(&artifact.manifest, 1 << 20).unwrap();
        assert_eq!(layer.digest, sha256_digest(&artifact.layer));
        let err = plugin_layer(&artifact.manifest, 4).unwrap_err();
        assert!(err.to_string().contains("pluginFiles.maxSize"), "{err}");

        let mut image = artifact.manifest.clone();
        image.config.media_type = "application/vnd.oci.image.config.v1+json".into();
        assert!(
            plugin_layer(&image, 1 << 20)
                .unwrap_err()
                .to_string()
                .contains("container image")
        );

        let mut two = artifact.manifest.clone();
        two.layers.push(two.layers[0].clone());
        assert!(
            plugin_layer(&two, 1 << 20)
                .unwrap_err()
                .to_string()
                .contains("exactly one")
        );

        let mut legacy = artifact.manifest.clone();
        legacy.config.media_type = LEGACY_CONFIG_MEDIA_TYPE.into();
        legacy.layers[0].media_type = LEGACY_LAYER_MEDIA_TYPE.into();
        assert!(plugin_layer(&legacy, 1 << 20).is_ok());
    }

    #[test]
    fn content_that_does_not_hash_to_its_digest_is_refused() {
        let expected = sha256_digest(b"one");
        assert!(verify("layer", b"one", &expected).is_ok());
        let err = verify("layer", b"two", &expected).unwrap_err();
        assert!(
            matches!(err, OciError::Digest { what: "layer", .. }),
            "{err}"
        );
    }
}
