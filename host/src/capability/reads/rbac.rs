//! Reads' part of the ClusterRole `herald plugin rbac` prints: the
//! informers behind a plugin's subscriptions list and watch each
//! subscribed resource.

use crate::discovery::{GroupResource, KindError, KindResolver};
use crate::subscription::Subscription;
use std::collections::BTreeSet;

/// The verbs an informer needs on a watched resource.
pub const WATCH_VERBS: [&str; 2] = ["list", "watch"];

/// Adds to `watched` the resource of each of `plugin`'s subscriptions.
pub async fn watched_resources(
    plugin: &str,
    subscriptions: &[Subscription],
    resolver: &KindResolver,
    watched: &mut BTreeSet<GroupResource>,
) -> Result<(), KindError> {
    for subscription in subscriptions {
        watched.insert(resolver.resolve(plugin, &subscription.kind).await?);
    }
    Ok(())
}
