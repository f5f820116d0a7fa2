//! What a plugin may do beyond logging and reading the cache: its
//! capabilities, each granted by the operator per plugin identity, denied by
//! default, checked on every call, audited, and bounded by the handler
//! call's deadline.
//!
//! One module per capability, holding its grant, its host side and its
//! tests ([`kube`]: Kubernetes reads and writes; [`events`]: Kubernetes
//! Events; [`metrics`]: metrics the plugin defines; [`http`]: outbound
//! HTTP to granted origins), plus what they share: the write rules
//! ([`grant`]), the per-plugin rate limit ([`rate`]) and the audit record
//! ([`audit`]).
//! [`Authority`] bundles what one loaded plugin was given.

pub mod audit;
mod authority;
pub mod events;
pub mod grant;
pub mod http;
pub mod kube;
pub mod metrics;
pub mod rate;

pub use audit::{ActionStats, ActionStatsCollector};
pub use authority::{Authority, ClusterAccess, Grants, Mode};

/// The capabilities a plugin may name in its manifest's `capabilities`.
/// Kubernetes writes are declared by write rules instead.
pub const KNOWN_CAPABILITIES: &[&str] = &[events::CAPABILITY, http::CAPABILITY];
