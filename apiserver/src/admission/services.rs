//! Where webhooks' `clientConfig.service` references lead: the embedded server has no
//! cluster network, so the program embedding it says which address stands for which
//! service.

use std::collections::BTreeMap;
use std::net::SocketAddr;

/// Addresses for webhooks' `clientConfig.service` references, by `(namespace, name, port)`.
///
/// A real API server reaches `service: {namespace, name, port}` through the cluster's
/// network; this one calls the address given here instead, still checking the webhook's
/// certificate against the name a real server would use, `<name>.<namespace>.svc`. A
/// service with no address here fails to be called (and the webhook's `failurePolicy`
/// decides). Webhooks given by `clientConfig.url` need nothing here.
///
/// ```
/// # use std::net::SocketAddr;
/// let admission: SocketAddr = "127.0.0.1:8443".parse().unwrap();
/// let config = herald_apiserver::ApiServerConfig {
///     webhook_services: herald_apiserver::WebhookServices::new()
///         .with("herald", "herald-admission", 443, admission),
///     ..Default::default()
/// };
/// # assert_eq!(config.webhook_services.resolve("herald", "herald-admission", 443), Some(admission));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WebhookServices {
    addresses: BTreeMap<(String, String, u16), SocketAddr>,
}

impl WebhookServices {
    /// No services: every service reference fails to be called.
    pub fn new() -> Self {
        Self::default()
    }

    /// These services and `namespace/name:port` at `addr`.
    pub fn with(mut self, namespace: &str, name: &str, port: u16, addr: SocketAddr) -> Self {
        self.addresses
            .insert((namespace.to_string(), name.to_string(), port), addr);
        self
    }

    /// The address of `namespace/name:port`, if given.
    pub fn resolve(&self, namespace: &str, name: &str, port: u16) -> Option<SocketAddr> {
        self.addresses
            .get(&(namespace.to_string(), name.to_string(), port))
            .copied()
    }
}
