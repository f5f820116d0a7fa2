//! Admission: plugins deciding on writes at the API server's door. The
//! daemon keeps the plugins that admit ([`AdmissionPlugins`], installed as
//! it starts, swaps and stops them); the server ([`server::serve`]) reads
//! each AdmissionReview ([`review`]), routes it to its plugin's version,
//! calls the plugin's `validate` or `mutate` in an instance of its own that
//! may read the cache and nothing else ([`decide`]), checks what a mutation
//! changes ([`change`]) and answers by the plugin's mode and failure
//! policy, counted ([`metrics`]) and audited. The same validate judges the
//! objects already in the plugin's caches ([`scan`]). Its certificate comes from
//! files followed for changes or is made at start ([`tls`]); the API
//! server's webhook configurations are made from the manifests
//! ([`configuration`]).

pub mod change;
pub mod configuration;
pub mod decide;
pub mod findings;
pub mod instances;
pub mod metrics;
pub mod plugins;
pub mod review;
pub mod scan;
pub mod server;
pub mod settings;
pub mod tls;

pub use plugins::{AdmissionPlugins, Admitting};
pub use settings::AdmissionConfig;
