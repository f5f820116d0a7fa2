//! The admission server's certificate: from files (cert-manager's Secret
//! layout, `tls.crt` and `tls.key`, mounted into the Pod), read again when
//! they change, with no handshake refused while they do; or, for
//! development, made at start: a CA of its own and a serving certificate it
//! signs, the CA printed for the webhook configurations' `caBundle`.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// How often the files are looked at for a change, at most: a rotation is
/// served from the next handshake after this.
pub const RELOAD_CHECK: Duration = Duration::from_secs(1);

/// Why a certificate could not be used, naming the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TlsError {
    /// A file that cannot be read.
    #[error("cannot read {path}: {problem}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        problem: String,
    },
    /// A file without a certificate or key in it, or one rustls refuses.
    #[error("{path}: {problem}")]
    Invalid {
        /// The file.
        path: String,
        /// What is wrong.
        problem: String,
    },
    /// The development certificate could not be made.
    #[error("cannot make the development certificate: {0}")]
    Generate(String),
}

/// A certificate and key read from two PEM files.
fn read_pair(cert: &Path, key: &Path) -> Result<Arc<CertifiedKey>, TlsError> {
    let read = |path: &Path| {
        std::fs::read(path).map_err(|e| TlsError::Read {
            path: path.display().to_string(),
            problem: e.to_string(),
        })
    };
    let invalid = |path: &Path, problem: String| TlsError::Invalid {
        path: path.display().to_string(),
        problem,
    };
    let cert_pem = read(cert)?;
    let key_pem = read(key)?;
    let chain = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| invalid(cert, format!("not PEM certificates: {e}")))?;
    if chain.is_empty() {
        return Err(invalid(cert, "holds no certificate".into()));
    }
    let key_der = PrivateKeyDer::from_pem_slice(&key_pem)
        .map_err(|e| invalid(key, format!("holds no private key: {e}")))?;
    certified(chain, key_der).map_err(|problem| invalid(key, problem.to_string()))
}

/// A private key rustls cannot serve with the certificate. Carried as text
/// in [`TlsError`], which is `Eq` where rustls' errors are not.
#[derive(Debug, thiserror::Error)]
enum KeyError {
    /// rustls cannot sign with it.
    #[error("the key is not usable: {0}")]
    Unusable(#[source] rustls::Error),
    /// It is not the certificate's key.
    #[error("the key does not match the certificate: {0}")]
    Mismatch(#[source] rustls::Error),
}

fn certified(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<Arc<CertifiedKey>, KeyError> {
    let provider = rustls::crypto::ring::default_provider();
    let signing = provider
        .key_provider
        .load_private_key(key)
        .map_err(KeyError::Unusable)?;
    let certified = CertifiedKey::new(chain, signing);
    certified.keys_match().map_err(KeyError::Mismatch)?;
    Ok(Arc::new(certified))
}

/// The serving certificate, from files followed for changes or made at
/// start.
#[derive(Debug)]
pub struct ServingCert {
    source: Source,
    current: Mutex<Current>,
    /// How often the files are looked at: [`RELOAD_CHECK`].
    check_every: Duration,
}

#[derive(Debug)]
enum Source {
    Files { cert: PathBuf, key: PathBuf },
    Generated { ca_pem: String },
}

#[derive(Debug)]
struct Current {
    key: Arc<CertifiedKey>,
    stamp: Option<(FileStamp, FileStamp)>,
    checked: Instant,
}

impl ServingCert {
    /// The certificate in `cert` (PEM, the chain) and its key in `key`,
    /// read now (an error names the file at fault) and again whenever
    /// either file changes; a change that cannot be read keeps the last
    /// good certificate and logs why.
    pub fn from_files(cert: &Path, key: &Path) -> Result<Self, TlsError> {
        Self::from_files_checked_every(cert, key, RELOAD_CHECK)
    }

    /// As [`Self::from_files`], the files looked at every `check_every`.
    pub fn from_files_checked_every(
        cert: &Path,
        key: &Path,
        check_every: Duration,
    ) -> Result<Self, TlsError> {
        let pair = read_pair(cert, key)?;
        Ok(ServingCert {
            check_every,
            current: Mutex::new(Current {
                key: pair,
                stamp: stamp(cert, key),
                checked: Instant::now(),
            }),
            source: Source::Files {
                cert: cert.to_owned(),
                key: key.to_owned(),
            },
        })
    }

    /// A development certificate for `names` (DNS names or IP addresses),
    /// signed by a CA made with it, valid for a year.
    pub fn generate(names: &[String]) -> Result<Self, TlsError> {
        use rcgen::{
            BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
            KeyPair, KeyUsagePurpose,
        };
        let error = |e: rcgen::Error| TlsError::Generate(e.to_string());
        let now = time::OffsetDateTime::now_utc();
        let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(error)?;
        ca.distinguished_name
            .push(DnType::CommonName, "herald admission development CA");
        ca.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        ca.not_before = now - time::Duration::minutes(5);
        ca.not_after = now + time::Duration::days(365);
        let ca_key = KeyPair::generate().map_err(error)?;
        let ca_cert = ca.self_signed(&ca_key).map_err(error)?;
        let issuer = Issuer::new(ca, ca_key);
        let mut leaf = CertificateParams::new(names.to_vec()).map_err(error)?;
        leaf.distinguished_name.push(
            DnType::CommonName,
            names.first().map_or("herald", String::as_str),
        );
        leaf.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        leaf.not_before = now - time::Duration::minutes(5);
        leaf.not_after = now + time::Duration::days(365);
        let leaf_key = KeyPair::generate().map_err(error)?;
        let leaf_cert = leaf.signed_by(&leaf_key, &issuer).map_err(error)?;
        let key = PrivateKeyDer::try_from(leaf_key.serialize_der())
            .map_err(|e| TlsError::Generate(e.to_string()))?;
        let chain = vec![leaf_cert.der().clone()];
        let key = certified(chain, key).map_err(|e| TlsError::Generate(e.to_string()))?;
        Ok(ServingCert {
            check_every: RELOAD_CHECK,
            source: Source::Generated {
                ca_pem: ca_cert.pem(),
            },
            current: Mutex::new(Current {
                key,
                stamp: None,
                checked: Instant::now(),
            }),
        })
    }

    /// The PEM of the CA a development certificate was signed by (the
    /// webhook configurations' `caBundle`, base64-encoded); `None` for
    /// certificates from files (their CA is the issuer's: cert-manager's
    /// `ca.crt`).
    pub fn ca_pem(&self) -> Option<&str> {
        match &self.source {
            Source::Generated { ca_pem } => Some(ca_pem),
            Source::Files { .. } => None,
        }
    }

    /// The certificate to serve now, read again first if the files changed
    /// and the last look is [`RELOAD_CHECK`] old (or as configured).
    pub fn current(&self) -> Arc<CertifiedKey> {
        let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        if let Source::Files { cert, key } = &self.source
            && current.checked.elapsed() >= self.check_every
        {
            current.checked = Instant::now();
            let now = stamp(cert, key);
            if now != current.stamp {
                match read_pair(cert, key) {
                    Ok(pair) => {
                        current.key = pair;
                        current.stamp = now;
                        tracing::info!(cert = %cert.display(), "admission: serving certificate reloaded");
                    }
                    // Mid-rotation one file may be new and the other not
                    // yet: the next look tries again.
                    Err(error) => {
                        tracing::warn!("admission: keeping the serving certificate in use: {error}")
                    }
                }
            }
        }
        current.key.clone()
    }

    /// A rustls configuration serving this certificate over HTTP/2 and
    /// HTTP/1.1.
    pub fn server_config(self: &Arc<Self>) -> rustls::ServerConfig {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("ring supports the default protocol versions")
            .with_no_client_auth()
            .with_cert_resolver(Arc::new(Resolver(self.clone())));
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        config
    }
}

/// What tells a file changed: its modification time and length.
type FileStamp = (SystemTime, u64);

/// Both files' stamps: a change of either is a change.
fn stamp(cert: &Path, key: &Path) -> Option<(FileStamp, FileStamp)> {
    let of = |path: &Path| {
        let meta = std::fs::metadata(path).ok()?;
        Some((meta.modified().ok()?, meta.len()))
    };
    Some((of(cert)?, of(key)?))
}

#[derive(Debug)]
struct Resolver(Arc<ServingCert>);

impl ResolvesServerCert for Resolver {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.current())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_development_certificate_is_signed_by_the_ca_it_prints() {
        use rustls::client::danger::ServerCertVerifier;
        let cert = ServingCert::generate(&["localhost".into(), "127.0.0.1".into()]).unwrap();
        let ca = cert.ca_pem().unwrap();
        let ca = CertificateDer::from_pem_slice(ca.as_bytes()).unwrap();
        let mut roots = rustls::RootCertStore::empty();
        roots.add(ca).unwrap();
        let verifier = rustls::client::WebPkiServerVerifier::builder_with_provider(
            Arc::new(roots),
            Arc::new(rustls::crypto::ring::default_provider()),
        )
        .build()
        .unwrap();
        let served = cert.current();
        let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
        verifier
            .verify_server_cert(
                &served.cert[0],
                &[],
                &name,
                &[],
                rustls::pki_types::UnixTime::now(),
            )
            .expect("the serving certificate verifies against the printed CA");
    }

    /// Writes a fresh development certificate's leaf and key as PEM files,
    /// returning the leaf's DER.
    fn write_pair(cert: &Path, key: &Path) -> Vec<u8> {
        let made = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
        std::fs::write(cert, made.cert.pem()).unwrap();
        std::fs::write(key, made.signing_key.serialize_pem()).unwrap();
        made.cert.der().to_vec()
    }

    #[test]
    fn a_rotated_certificate_is_served_and_a_half_written_one_is_not() {
        let dir = crate::scratch::ScratchDir::new("tls-rotate").unwrap();
        let (cert, key) = (dir.join("tls.crt"), dir.join("tls.key"));
        let first = write_pair(&cert, &key);
        let serving = ServingCert::from_files_checked_every(&cert, &key, Duration::ZERO).unwrap();
        assert_eq!(serving.current().cert[0].as_ref(), first.as_slice());
        // Mid-rotation: a new certificate whose key has not been written yet.
        let second = write_pair(&dir.join("next.crt"), &dir.join("next.key"));
        std::fs::copy(dir.join("next.crt"), &cert).unwrap();
        assert_eq!(
            serving.current().cert[0].as_ref(),
            first.as_slice(),
            "a certificate without its key is not served"
        );
        std::fs::copy(dir.join("next.key"), &key).unwrap();
        assert_eq!(serving.current().cert[0].as_ref(), second.as_slice());
    }

    #[test]
    fn files_that_do_not_hold_a_certificate_are_refused_naming_the_file() {
        let dir = crate::scratch::ScratchDir::new("tls").unwrap();
        let cert = dir.join("tls.crt");
        let key = dir.join("tls.key");
        std::fs::write(&cert, "not a certificate").unwrap();
        std::fs::write(&key, "not a key").unwrap();
        let error = ServingCert::from_files(&cert, &key)
            .unwrap_err()
            .to_string();
        assert!(error.contains("tls.crt"), "{error}");
        let missing = ServingCert::from_files(&dir.join("nope.crt"), &key)
            .unwrap_err()
            .to_string();
        assert!(missing.contains("cannot read") && missing.contains("nope.crt"));
    }
}
