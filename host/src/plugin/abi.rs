//! The raw records of the newest plugin world (`wit/0.3.0/herald.wit`, and
//! the 0.2.0 records it uses), as `bindgen!` generates them: what a
//! plugin's `manifest` export returns before [`Manifest::from_guest`]
//! validates it. Public so that tools outside the runtime (the fuzz targets,
//! tests) can build a guest's manifest without a guest.
//!
//! [`Manifest::from_guest`]: super::Manifest::from_guest

pub use super::bindings::v0_2::herald::plugin::types::{
    DeliveryMode, GroupVersionKind, Limits, Subscription, Verb, WriteRule,
};
pub use super::bindings::v0_3::herald::plugin0_3_0::types::{
    IndexBy, IndexDefinition, Manifest, MetricDefinition, MetricKind,
};
