//! Events' part of the ClusterRole `herald plugin rbac` prints: a plugin
//! declaring `events` creates `events.k8s.io` Events and patches them to
//! count repeats.

use crate::discovery::GroupResource;
use std::collections::{BTreeMap, BTreeSet};

/// The verbs publishing Events needs.
pub const EVENT_VERBS: [&str; 2] = ["create", "patch"];

/// Adds to `verbs` what Events need, if `capabilities` declares them.
pub fn event_verbs(
    capabilities: &[String],
    verbs: &mut BTreeMap<GroupResource, BTreeSet<&'static str>>,
) {
    if capabilities.iter().any(|c| c == super::CAPABILITY) {
        verbs
            .entry(GroupResource::new("events.k8s.io", "events"))
            .or_default()
            .extend(EVENT_VERBS);
    }
}
