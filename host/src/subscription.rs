//! What a plugin subscribes to: a kind, in a namespace or all, narrowed by
//! selectors, with its resync period and delivery mode. Shared vocabulary:
//! the plugin's manifest declares subscriptions, informers are keyed by
//! them, listeners deliver by them.

use crate::gvk::Gvk;
use crate::selector::{FieldSelector, LabelSelector};
use serde::Serialize;
use std::collections::BTreeSet;
use std::time::Duration;

/// Shortest resync period a subscription may ask for (client-go's minimum).
pub const MIN_RESYNC: Duration = Duration::from_secs(1);
/// Longest resync period accepted; anything longer is almost surely a unit mistake.
pub const MAX_RESYNC: Duration = Duration::from_secs(24 * 60 * 60);
/// How a subscription's notifications are queued for the plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Delivery {
    /// Every notification, in order (client-go's behaviour).
    EveryEvent,
    /// At most one pending notification per object key, merged.
    Coalesced,
}

/// One validated subscription.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Subscription {
    /// The watched kind.
    pub kind: Gvk,
    /// Restrict to one namespace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Label selector, as written by the plugin.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<String>,
    /// Field selector, as written by the plugin.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field_selector: Option<String>,
    /// Resync period, if any.
    #[serde(
        rename = "resyncPeriodMs",
        skip_serializing_if = "Option::is_none",
        with = "crate::units::duration::millis_option"
    )]
    pub resync_period: Option<Duration>,
    /// Queueing mode.
    pub delivery: Delivery,
}

impl Subscription {
    /// The label selector in canonical form: its requirements sorted, values
    /// sorted and deduplicated, `==` written `=`, spacing dropped; `None`
    /// when it selects everything. Two selectors with the same meaning have
    /// the same canonical form, so their subscriptions share an informer.
    pub fn canonical_label_selector(&self) -> Option<String> {
        canonical(label_requirements(self.label_selector.as_deref()))
    }

    /// The field selector in canonical form (see
    /// [`canonical_label_selector`](Self::canonical_label_selector)).
    pub fn canonical_field_selector(&self) -> Option<String> {
        canonical(field_terms(self.field_selector.as_deref()))
    }

    /// True when both watch exactly the same objects: same kind and scope,
    /// and selectors with the same requirements, however written (spacing,
    /// `==` for `=`, order, repeats).
    pub fn same_watch(&self, other: &Subscription) -> bool {
        self.kind == other.kind
            && self.namespace == other.namespace
            && label_requirements(self.label_selector.as_deref())
                == label_requirements(other.label_selector.as_deref())
            && field_terms(self.field_selector.as_deref())
                == field_terms(other.field_selector.as_deref())
    }
}

/// The refusal of subscription #`index` of `plugin`, which names
/// `namespace` for `kind`, a cluster-scoped kind: the informer would drop
/// the namespace and deliver (and cache) every object of the kind, so the
/// subscription is refused rather than narrowed by nothing. Said the same
/// way whether the manifest check (a built-in kind) or the daemon, once
/// discovery has named the resource (a custom kind), finds it.
pub fn cluster_scoped_refusal(plugin: &str, index: usize, kind: &Gvk, namespace: &str) -> String {
    let shown = crate::text::escape_controls(&kind.to_string());
    let name = crate::text::escape_controls(&kind.kind);
    format!(
        "plugin {plugin:?}: subscription #{index} ({shown}) names namespace {namespace:?}, but \
         {name} is cluster-scoped: a namespace never narrows it, so the subscription would \
         receive every {name}; subscribe without a namespace (a read the operator grants with \
         namespaces [\"*\"] in plugins.{plugin}.grants.reads, unless it is readable by default)"
    )
}

/// A label selector's requirements in a form that compares by meaning:
/// each displayed with its values sorted, sorted, without repeats. Text
/// that does not parse stands for itself.
fn label_requirements(selector: Option<&str>) -> BTreeSet<String> {
    let Some(text) = selector else {
        return BTreeSet::new();
    };
    match LabelSelector::parse(text) {
        Ok(parsed) => parsed
            .requirements
            .into_iter()
            .map(|mut requirement| {
                requirement.values.sort();
                requirement.values.dedup();
                requirement.to_string()
            })
            .collect(),
        Err(_) => BTreeSet::from([text.to_owned()]),
    }
}

/// Sorted terms joined by `,`, or `None` for none.
fn canonical(terms: BTreeSet<String>) -> Option<String> {
    (!terms.is_empty()).then(|| terms.into_iter().collect::<Vec<_>>().join(","))
}

/// A field selector's terms in a form that compares by meaning (see
/// [`label_requirements`]).
fn field_terms(selector: Option<&str>) -> BTreeSet<String> {
    let Some(text) = selector else {
        return BTreeSet::new();
    };
    match FieldSelector::parse(text) {
        Ok(parsed) => parsed.terms.iter().map(ToString::to_string).collect(),
        Err(_) => BTreeSet::from([text.to_owned()]),
    }
}
