//! Which builds may carry authority: a plugin granted writes, HTTP, Events
//! or a sensitive read loads only when the operator pinned its build, or its
//! build is signed with a key the operator trusts, or the operator said per
//! plugin that it may run unpinned.
//!
//! Grants and configuration follow the name a plugin's manifest gives, so
//! without this a file that claims a granted name would get that name's
//! grants (and its configuration: a token, a webhook URL). The evidence a
//! build may bring, any one of which is enough:
//!
//! - **Pinned**: its sha256 is listed in `plugins.<name>.sha256`, or it was
//!   pulled from a `pluginSources` reference pinned by digest
//!   (`…@sha256:…`, the layer verified against that manifest).
//! - **Signed**: a `<file>.sig` beside it holds a signature of the file by
//!   one of `pluginFiles.publicKeys`, in the format `cosign sign-blob`
//!   writes: base64 of the DER ECDSA P-256 signature over the file's
//!   SHA-256, checked offline against the PEM public key (`cosign.pub`) as
//!   `cosign verify-blob --key` would.
//! - **Trusted unpinned**: `plugins.<name>.allowUnpinned: true`, the
//!   operator's explicit opt-out for that one plugin.
//!
//! A plugin granted none of those (logging, its configuration, reading
//! ordinary kinds) needs no evidence: dropping it in stays one file.

use crate::capability::Grants;
use base64::Engine as _;
use std::path::{Path, PathBuf};

/// A build granted powers that brings no evidence the operator meant it;
/// the message names the plugin, its powers and each way to give it.
#[derive(Debug, thiserror::Error)]
#[error(
    "plugin {name:?} is granted {powers}, so it loads only as a build the operator pinned or \
     signed, and {lacks}: pin this build (plugins.{name}.sha256: [{digest}]), sign it with a key \
     in pluginFiles.publicKeys (cosign sign-blob --key cosign.key --output-signature FILE.sig \
     FILE), pull it by digest, or set plugins.{name}.allowUnpinned: true"
)]
pub struct TrustError {
    /// The plugin's name.
    pub name: String,
    /// What it is granted that needs evidence ([`powers`]).
    pub powers: String,
    /// The build's sha256.
    pub digest: String,
    /// What its evidence lacks.
    #[source]
    pub lacks: SignatureError,
}

/// Why a build's signature does not show the operator meant it.
#[derive(Debug, thiserror::Error)]
pub enum SignatureError {
    /// No `<file>.sig` beside it.
    #[error("it is not pinned and has no signature (<file>.sig)")]
    Unsigned,
    /// A signature, but no key to check it with.
    #[error("its signature file cannot be checked: pluginFiles.publicKeys lists no key")]
    NoKeys,
    /// The signature file is not base64.
    #[error("its signature file is not base64 ({0})")]
    NotBase64(#[source] base64::DecodeError),
    /// A key of `pluginFiles.publicKeys` cannot be used.
    #[error(transparent)]
    Key(#[from] KeyFileError),
    /// None of the keys (their number held here) made the signature.
    #[error("its signature is not by any key in pluginFiles.publicKeys ({0} keys)")]
    NoMatch(usize),
}

/// A public key file that cannot be used, naming the file.
#[derive(Debug, thiserror::Error)]
pub enum KeyFileError {
    /// The file cannot be read.
    #[error("cannot read the public key {}: {reason}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        reason: std::io::Error,
    },
    /// The file holds no ECDSA P-256 public key.
    #[error("public key {}: {reason}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// What it holds instead.
        #[source]
        reason: PublicKeyError,
    },
}

/// A PEM text that is not an ECDSA P-256 public key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PublicKeyError {
    /// No `-----BEGIN PUBLIC KEY-----` block.
    #[error("not a PEM public key (-----BEGIN PUBLIC KEY-----)")]
    NotPem,
    /// The block's body is not base64.
    #[error("its PEM body is not base64: {0}")]
    NotBase64(#[source] base64::DecodeError),
    /// Another kind of key.
    #[error("not an ECDSA P-256 public key (the kind cosign generate-key-pair makes)")]
    NotP256,
}

/// What a build brings to show it is the one the operator meant.
#[derive(Debug, Clone, Default)]
pub struct Evidence {
    /// Pulled from a source reference pinned by digest.
    pub pinned_by_source: bool,
    /// The text of the `<file>.sig` beside it, if there is one.
    pub signature: Option<String>,
}

/// The grants that need evidence: those that act outside the host or read
/// a sensitive kind. `None` when there are none.
pub fn powers(grants: &Grants) -> Option<String> {
    let mut powers = grants.powers();
    if grants.reads.grants_sensitive() {
        powers.push("a sensitive read");
    }
    (!powers.is_empty()).then(|| powers.join(", "))
}

/// Checks that the build of plugin `name` with sha256 `digest`, whose file
/// holds `bytes`, may carry `grants`; the error says what it lacks and
/// each way to give it.
#[allow(clippy::too_many_arguments)]
pub fn check(
    name: &str,
    digest: &str,
    bytes: &[u8],
    grants: &Grants,
    pinned: &[String],
    allow_unpinned: bool,
    public_keys: &[PathBuf],
    evidence: &Evidence,
) -> Result<(), TrustError> {
    let Some(powers) = powers(grants) else {
        return Ok(());
    };
    if allow_unpinned || evidence.pinned_by_source || pinned.iter().any(|p| p == digest) {
        return Ok(());
    }
    let signature = match &evidence.signature {
        Some(_) if public_keys.is_empty() => Err(SignatureError::NoKeys),
        Some(signature) => verify_with_any(bytes, signature, public_keys),
        None => Err(SignatureError::Unsigned),
    };
    signature.map_err(|lacks| TrustError {
        name: name.to_owned(),
        powers,
        digest: digest.to_owned(),
        lacks,
    })
}

/// Verifies `signature` (base64 DER) over `bytes` with one of the PEM keys
/// at `paths`.
fn verify_with_any(bytes: &[u8], signature: &str, paths: &[PathBuf]) -> Result<(), SignatureError> {
    let signature = base64::engine::general_purpose::STANDARD
        .decode(signature.trim())
        .map_err(SignatureError::NotBase64)?;
    for path in paths {
        let key = read_public_key(path)?;
        if verify(&key, bytes, &signature) {
            return Ok(());
        }
    }
    Err(SignatureError::NoMatch(paths.len()))
}

/// True when `signature` (DER) is a valid ECDSA P-256 SHA-256 signature of
/// `bytes` by the public key `point` (uncompressed SEC1).
pub fn verify(point: &[u8], bytes: &[u8], signature: &[u8]) -> bool {
    ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P256_SHA256_ASN1, point)
        .verify(bytes, signature)
        .is_ok()
}

/// The DER prefix of an ECDSA P-256 public key in SubjectPublicKeyInfo form
/// (the algorithm `id-ecPublicKey` with the curve `prime256v1`, and the
/// bit string's header), before its 65-byte uncompressed point.
const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

/// Reads a PEM public key (`-----BEGIN PUBLIC KEY-----`, as `cosign.pub`):
/// its ECDSA P-256 point. Any other kind of key is refused naming the file.
pub fn read_public_key(path: &Path) -> Result<Vec<u8>, KeyFileError> {
    let text = std::fs::read_to_string(path).map_err(|reason| KeyFileError::Read {
        path: path.to_owned(),
        reason,
    })?;
    parse_public_key(&text).map_err(|reason| KeyFileError::Parse {
        path: path.to_owned(),
        reason,
    })
}

/// The ECDSA P-256 point of a PEM public key.
pub fn parse_public_key(pem: &str) -> Result<Vec<u8>, PublicKeyError> {
    let body: String = pem
        .lines()
        .map(str::trim)
        .skip_while(|line| *line != "-----BEGIN PUBLIC KEY-----")
        .skip(1)
        .take_while(|line| *line != "-----END PUBLIC KEY-----")
        .collect();
    if body.is_empty() {
        return Err(PublicKeyError::NotPem);
    }
    let der = base64::engine::general_purpose::STANDARD
        .decode(body)
        .map_err(PublicKeyError::NotBase64)?;
    match der.strip_prefix(&P256_SPKI_PREFIX[..]) {
        Some(point) if point.len() == 65 && point[0] == 0x04 => Ok(point.to_vec()),
        _ => Err(PublicKeyError::NotP256),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = include_str!("testdata/cosign.pub");
    const BLOB: &[u8] = include_bytes!("testdata/blob");
    const SIGNATURE: &str = include_str!("testdata/blob.sig");

    fn decoded(signature: &str) -> Vec<u8> {
        base64::engine::general_purpose::STANDARD
            .decode(signature.trim())
            .unwrap()
    }

    #[test]
    fn a_signature_made_by_openssl_as_cosign_makes_them_verifies() {
        let point = parse_public_key(KEY).unwrap();
        assert!(verify(&point, BLOB, &decoded(SIGNATURE)));
        assert!(!verify(&point, b"another blob", &decoded(SIGNATURE)));
        let mut tampered = BLOB.to_vec();
        tampered[0] ^= 1;
        assert!(!verify(&point, &tampered, &decoded(SIGNATURE)));
    }

    #[test]
    fn other_keys_are_refused_saying_what_they_are_not() {
        assert_eq!(parse_public_key("hello"), Err(PublicKeyError::NotPem));
        let rsa = "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\n-----END PUBLIC KEY-----\n";
        assert_eq!(parse_public_key(rsa), Err(PublicKeyError::NotP256));
    }

    #[test]
    fn only_grants_that_act_or_read_secrets_need_evidence() {
        let mut grants = Grants::default();
        assert_eq!(powers(&grants), None);
        let nothing = Evidence::default();
        assert!(check("p", "d", BLOB, &grants, &[], false, &[], &nothing).is_ok());
        grants.events = Some(Default::default());
        let refused = check("p", "d", BLOB, &grants, &[], false, &[], &nothing)
            .unwrap_err()
            .to_string();
        assert!(refused.contains("granted Events"), "{refused}");
        assert!(refused.contains("plugins.p.sha256: [d]"), "{refused}");
        assert!(check("p", "d", BLOB, &grants, &["d".into()], false, &[], &nothing).is_ok());
        assert!(check("p", "d", BLOB, &grants, &[], true, &[], &nothing).is_ok());
        let pulled = Evidence {
            pinned_by_source: true,
            signature: None,
        };
        assert!(check("p", "d", BLOB, &grants, &[], false, &[], &pulled).is_ok());
    }

    #[test]
    fn a_signed_build_loads_with_a_trusted_key_and_not_with_another() {
        let dir = crate::scratch::ScratchDir::new("trust").unwrap();
        let key = dir.join("cosign.pub");
        std::fs::write(&key, KEY).unwrap();
        let grants = Grants {
            http: Some(crate::capability::http::HttpGrant::new(Vec::new())),
            ..Grants::default()
        };
        let signed = Evidence {
            pinned_by_source: false,
            signature: Some(SIGNATURE.to_owned()),
        };
        let keys = [key.clone()];
        assert!(check("p", "d", BLOB, &grants, &[], false, &keys, &signed).is_ok());
        let refused = check("p", "d", b"other", &grants, &[], false, &keys, &signed)
            .unwrap_err()
            .to_string();
        assert!(refused.contains("not by any key"), "{refused}");
        let unkeyed = check("p", "d", BLOB, &grants, &[], false, &[], &signed)
            .unwrap_err()
            .to_string();
        assert!(unkeyed.contains("lists no key"), "{unkeyed}");
    }
}
