//! `admission`: whether the daemon serves admission reviews, where, and
//! with which certificate (docs/config.md).

use super::tls::{ServingCert, TlsError};
use crate::yaml::Invalid;
use serde::Deserialize;
use std::net::SocketAddr;
use std::path::PathBuf;

/// The `admission` section.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct AdmissionConfig {
    /// Serve reviews. Off by default: a daemon without webhooks needs no
    /// port and no certificate.
    pub enabled: bool,
    /// The HTTPS address reviews come to.
    pub listen: SocketAddr,
    /// The serving certificate chain (PEM), e.g. cert-manager's `tls.crt`
    /// mounted from its Secret; read again when it changes. Unset: a
    /// development certificate made at start.
    pub cert_file: Option<PathBuf>,
    /// Its private key (PEM), e.g. `tls.key`.
    pub key_file: Option<PathBuf>,
    /// The names (DNS names or IP addresses) a development certificate is
    /// made for: the Service's DNS name in a cluster.
    pub development_names: Vec<String>,
}

impl Default for AdmissionConfig {
    fn default() -> Self {
        AdmissionConfig {
            enabled: false,
            listen: SocketAddr::from(([0, 0, 0, 0], 8443)),
            cert_file: None,
            key_file: None,
            development_names: vec!["localhost".into(), "127.0.0.1".into()],
        }
    }
}

impl AdmissionConfig {
    /// Checks the section; keys are relative to it.
    pub fn validate(&self) -> Result<(), Invalid> {
        match (&self.cert_file, &self.key_file) {
            (Some(_), None) => Err(Invalid::new("keyFile", "is needed with certFile")),
            (None, Some(_)) => Err(Invalid::new("certFile", "is needed with keyFile")),
            (None, None) if self.development_names.is_empty() => Err(Invalid::new(
                "developmentNames",
                "needs at least one name when no certFile is given",
            )),
            _ => Ok(()),
        }
    }

    /// The serving certificate: the files' or a development one.
    pub fn serving_cert(&self) -> Result<ServingCert, TlsError> {
        match (&self.cert_file, &self.key_file) {
            (Some(cert), Some(key)) => ServingCert::from_files(cert, key),
            _ => ServingCert::generate(&self.development_names),
        }
    }
}
