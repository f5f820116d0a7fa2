//! The Kubernetes capability's part of the ClusterRole `herald plugin rbac`
//! prints: the verbs of a plugin's declared write rules (which the
//! operator's grant covers: a plugin declaring more is not loaded), on
//! each rule's resource or subresource.

use super::WriteRule;
use crate::discovery::{GroupResource, KindError, KindResolver, builtin};
use crate::gvk::Gvk;
use crate::subscription::Subscription;
use std::collections::{BTreeMap, BTreeSet};

/// Adds to `verbs` what `plugin`'s `writes` need. A rule's kind is
/// resolved at the version the plugin subscribes to it, if it does, else
/// as a built-in kind.
pub async fn write_verbs(
    plugin: &str,
    writes: &[WriteRule],
    subscriptions: &[Subscription],
    resolver: &KindResolver,
    verbs: &mut BTreeMap<GroupResource, BTreeSet<&'static str>>,
) -> Result<(), KindError> {
    for rule in writes {
        let subscribed = subscriptions
            .iter()
            .find(|s| s.kind.group == rule.group && s.kind.kind == rule.kind)
            .map(|s| s.kind.clone());
        let gvk = match subscribed {
            Some(gvk) => gvk,
            None => match builtin::lookup_kind(&rule.group, &rule.kind) {
                Some(kind) => Gvk::new(kind.group, kind.version, kind.kind),
                None => {
                    return Err(KindError::UnknownKind {
                        plugin: plugin.to_owned(),
                        gvk: Gvk::new(&rule.group, "?", &rule.kind),
                    });
                }
            },
        };
        let mut resource = resolver.resolve(plugin, &gvk).await?;
        if let Some(sub) = &rule.subresource {
            resource.resource = format!("{}/{sub}", resource.resource);
        }
        let entry = verbs.entry(resource).or_default();
        for verb in &rule.verbs {
            entry.extend(verb.rbac_verbs());
        }
    }
    Ok(())
}
