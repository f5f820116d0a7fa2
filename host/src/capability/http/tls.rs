//! TLS for plugins' `https` requests: rustls with ring (the provider kube
//! and the OCI client use, so no second crypto stack is linked), trusting
//! the platform's root certificates as kube's connector does (the system
//! store, or `SSL_CERT_FILE` / `SSL_CERT_DIR`, which is how an operator
//! adds an internal CA). HTTP/1.1 only.

use std::io;
use std::sync::{Arc, OnceLock};
use wasmtime_wasi_http::Error;

/// The client configuration of `https` requests.
#[derive(Debug, Clone)]
pub(super) enum Config {
    /// Ready to connect.
    Ready(Arc<rustls::ClientConfig>),
    /// No root certificates could be loaded: why.
    Unavailable(String),
}

/// The platform's roots, loaded once per process (on the first load of a
/// plugin granted an `https` origin, not on a plugin's call).
pub(super) fn platform() -> Config {
    static CONFIG: OnceLock<Config> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let found = rustls_native_certs::load_native_certs();
            let mut roots = rustls::RootCertStore::empty();
            let (added, _unparsable) = roots.add_parsable_certificates(found.certs);
            if added == 0 {
                let errors: Vec<String> = found.errors.iter().map(|e| e.to_string()).collect();
                let why = format!(
                    "no trusted root certificates found on this host (set SSL_CERT_FILE or \
                     SSL_CERT_DIR){}",
                    if errors.is_empty() {
                        String::new()
                    } else {
                        format!(": {}", errors.join("; "))
                    }
                );
                tracing::warn!("plugins' https requests will fail: {why}");
                return Config::Unavailable(why);
            }
            with_roots(roots)
        })
        .clone()
}

/// A configuration trusting `roots`.
pub(super) fn with_roots(roots: rustls::RootCertStore) -> Config {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    match rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
    {
        Ok(builder) => {
            let mut config = builder.with_root_certificates(roots).with_no_client_auth();
            config.alpn_protocols = vec![b"http/1.1".to_vec()];
            Config::Ready(Arc::new(config))
        }
        Err(error) => Config::Unavailable(format!("TLS configuration: {error}")),
    }
}

/// The `wasi:http` error code of a failed TLS handshake.
pub(super) fn error_code(error: &io::Error) -> Error {
    let Some(tls) = error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
    else {
        return Error::TlsProtocolError;
    };
    match tls {
        rustls::Error::InvalidCertificate(_) | rustls::Error::NoCertificatesPresented => {
            Error::TlsCertificateError
        }
        rustls::Error::AlertReceived(alert) => Error::TlsAlertReceived {
            alert_id: Some(u8::from(*alert)),
            alert_message: Some(format!("{alert:?}")),
        },
        _ => Error::TlsProtocolError,
    }
}
