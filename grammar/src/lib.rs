//! Kubernetes' own grammars, in one place so that every part of Herald that
//! reads or checks them agrees with every other and with the API server:
//!
//! - [`selector`]: label and field selectors, parsed and matched as the API
//!   server does (the host's informers and cache look-ups, the embedded API
//!   server's lists and watches, the SDK's test host, the fuzz targets);
//! - [`name`]: the rules an identifier must follow for the field it fills
//!   (namespaces, object names per kind, API groups, versions, kinds,
//!   plurals, subresources), each refusal naming the field and the rule.
//!
//! The crate has no I/O and two small dependencies, so everything above it
//! may link it, the SDK's native test host included.

pub mod name;
pub mod selector;
