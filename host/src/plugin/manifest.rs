//! A plugin's manifest, validated: what it watches, how, and what it asks for.

use crate::capability::cache::IndexDefinition;
use crate::capability::kube::{Verb, WriteRule};
use crate::gvk::Gvk;
use crate::selector::{FieldSelector, LabelSelector};
pub use crate::subscription::{Delivery, MAX_RESYNC, MIN_RESYNC, Subscription};
use crate::text::is_dns_label;
use crate::webhook::{WebhookError, Webhooks};
use crate::wit::abi;
use crate::wit::v0_5::exports::herald::plugin0_5_0::admission;
use serde::Serialize;
use std::time::Duration;

/// Most subscriptions one plugin may declare.
pub const MAX_SUBSCRIPTIONS: usize = 32;

/// Limits a plugin asked for; `None` takes the operator's default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestedLimits {
    /// Per-call deadline.
    #[serde(
        rename = "callDeadlineMs",
        skip_serializing_if = "Option::is_none",
        with = "crate::units::duration::millis_option"
    )]
    pub call_deadline: Option<Duration>,
    /// Linear memory cap in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
}

/// A validated plugin manifest.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    /// Unique plugin name.
    pub name: String,
    /// The plugin's own version.
    pub version: String,
    /// What it watches; never empty.
    pub subscriptions: Vec<Subscription>,
    /// Requested limits.
    pub limits: RequestedLimits,
    /// Requested capabilities beyond logging and cache reads.
    pub capabilities: Vec<String>,
    /// Kubernetes writes (and API reads) it will make.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub writes: Vec<WriteRule>,
    /// The metrics it defines (checked against Prometheus' rules when the
    /// plugin is registered with the host's metrics).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<crate::capability::metrics::MetricDefinition>,
    /// The cache indexes it looks objects up by.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub indexes: Vec<IndexDefinition>,
    /// What it admits; `None` for a plugin that makes no admission
    /// decision.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admission: Option<Webhooks>,
    /// The most notifications one call may carry: what a world 0.7.0
    /// plugin's delivery options ask for (1 for older worlds, whose
    /// handler takes one per call). Above 1, every-event notifications
    /// are delivered in batches.
    #[serde(skip_serializing_if = "is_one")]
    pub max_batch: u32,
}

fn is_one(value: &u32) -> bool {
    *value == 1
}

impl Manifest {
    /// What its subscriptions read: each kind, in its namespace (or in
    /// every namespace); and what its webhooks see: the objects of each kind
    /// they admit, in every namespace (a review carries the object, so
    /// admitting a kind is reading it). For the read grant to cover.
    pub fn reads(&self) -> Vec<crate::capability::reads::Read<'_>> {
        let admitted = self.admission.iter().flat_map(|webhooks| {
            [&webhooks.validating, &webhooks.mutating]
                .into_iter()
                .flatten()
                .flat_map(|webhook| &webhook.rules)
        });
        let mut reads: Vec<crate::capability::reads::Read<'_>> = Vec::new();
        let subscribed = self
            .subscriptions
            .iter()
            .map(|s| crate::capability::reads::Read {
                group: &s.kind.group,
                kind: &s.kind.kind,
                namespace: s.namespace.as_deref(),
                cluster: None,
            });
        let admitted = admitted.map(|rule| crate::capability::reads::Read {
            group: &rule.kind.group,
            kind: &rule.kind.kind,
            namespace: None,
            cluster: None,
        });
        for read in subscribed.chain(admitted) {
            if !reads.contains(&read) {
                reads.push(read);
            }
        }
        reads
    }

    /// Everything it reads (its subscriptions, then its `get`s), each with
    /// how `reads` allows it: what `/plugins` and `herald plugin check` show.
    pub fn read_views(
        &self,
        reads: &crate::capability::reads::Reads,
    ) -> Vec<crate::capability::reads::ReadView> {
        let mut views: Vec<_> = self
            .reads()
            .iter()
            .chain(&self.gets())
            .map(|read| reads.view(read))
            .collect();
        views.dedup();
        views
    }

    /// What its declared `get`s read, for the read grant to cover at each
    /// call: each kind a write rule lets it get, in each of the rule's
    /// namespaces (`None` for `*`).
    pub fn gets(&self) -> Vec<crate::capability::reads::Read<'_>> {
        self.writes
            .iter()
            .filter(|rule| {
                rule.subresource.is_none()
                    && rule.verbs.contains(&crate::capability::kube::Verb::Get)
            })
            .flat_map(|rule| {
                rule.namespaces
                    .iter()
                    .map(|namespace| crate::capability::reads::Read {
                        group: &rule.group,
                        kind: &rule.kind,
                        namespace: (namespace != crate::capability::kube::ALL_NAMESPACES)
                            .then_some(namespace.as_str()),
                        cluster: None,
                    })
            })
            .collect()
    }
}

/// What is wrong with a manifest.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManifestError {
    /// A webhook its `admission.declare` export declared is invalid.
    #[error(transparent)]
    Webhook(#[from] WebhookError),
    /// Bad plugin name.
    #[error(
        "plugin name {0:?} is invalid: use 1-63 lowercase letters, digits and '-', starting and ending with a letter or digit"
    )]
    Name(String),
    /// Bad or missing version string.
    #[error(
        "plugin version {0:?} is invalid: give a non-empty version of at most 64 printable characters"
    )]
    Version(String),
    /// No subscriptions.
    #[error(
        "the manifest subscribes to nothing and admits nothing: add at least one subscription or webhook"
    )]
    NoSubscriptions,
    /// Too many subscriptions.
    #[error("the manifest has {0} subscriptions, more than the {MAX_SUBSCRIPTIONS} allowed")]
    TooManySubscriptions(usize),
    /// A subscription's kind is incomplete.
    #[error("subscription #{index}: kind {kind:?} is incomplete: version and kind are required")]
    Kind {
        /// Position of the subscription.
        index: usize,
        /// The kind as given.
        kind: String,
    },
    /// A subscription's kind breaks the grammar of Kubernetes kinds.
    #[error("subscription #{index}: {reason}")]
    BadKind {
        /// Position of the subscription.
        index: usize,
        /// The field, value and rule at fault.
        reason: String,
    },
    /// A subscription's namespace is not a valid namespace name.
    #[error(
        "subscription #{index} ({kind}): namespace {namespace:?} is not a valid namespace name"
    )]
    Namespace {
        /// Position of the subscription.
        index: usize,
        /// The kind, as `group/version/Kind`.
        kind: String,
        /// The namespace as given.
        namespace: String,
    },
    /// A subscription's label selector does not parse.
    #[error("subscription #{index} ({kind}): label selector {selector:?} is invalid: {reason}")]
    LabelSelector {
        /// Position of the subscription.
        index: usize,
        /// The kind, as `group/version/Kind`.
        kind: String,
        /// The selector as given.
        selector: String,
        /// Why it is invalid.
        reason: String,
    },
    /// A subscription's field selector does not parse.
    #[error("subscription #{index} ({kind}): field selector {selector:?} is invalid: {reason}")]
    FieldSelector {
        /// Position of the subscription.
        index: usize,
        /// The kind, as `group/version/Kind`.
        kind: String,
        /// The selector as given.
        selector: String,
        /// Why it is invalid.
        reason: String,
    },
    /// A subscription's resync period is out of range.
    #[error(
        "subscription #{index} ({kind}): resync period of {millis} ms is out of range: use 1000 ms to 24 h, or none"
    )]
    Resync {
        /// Position of the subscription.
        index: usize,
        /// The kind, as `group/version/Kind`.
        kind: String,
        /// The period as given.
        millis: u64,
    },
    /// Two subscriptions are identical.
    #[error("subscription #{index} ({kind}) duplicates an earlier subscription")]
    Duplicate {
        /// Position of the second one.
        index: usize,
        /// The kind, as `group/version/Kind`.
        kind: String,
    },
    /// A requested limit is above the operator's maximum.
    #[error("plugin {plugin:?}: {reason}")]
    Limit {
        /// The plugin.
        plugin: String,
        /// What is over the maximum.
        reason: String,
    },
    /// A capability this host does not know.
    #[error(
        "requested capability {0:?} does not exist in this host (it knows: {known})",
        known = crate::capability::known_capabilities().join(", ")
    )]
    UnknownCapability(String),
    /// A write rule that cannot be used.
    #[error("{0}")]
    WriteRule(#[from] crate::capability::kube::RuleError),
    /// The plugin asks for more than the operator granted.
    #[error("{0}")]
    NotGranted(#[from] crate::capability::NotGranted),
    /// A metric definition breaks a rule or contradicts another plugin's
    /// (see [`crate::capability::metrics`]).
    #[error("{0}")]
    Metrics(String),
    /// A requested limit is zero.
    #[error("requested {0} of zero is invalid: leave it unset to take the default")]
    ZeroLimit(&'static str),
    /// A cache index that cannot be kept.
    #[error("index {index} ({name:?}) is invalid: {reason}")]
    Index {
        /// Its position in the manifest.
        index: usize,
        /// Its name.
        name: String,
        /// What is wrong.
        #[source]
        reason: crate::capability::cache::IndexError,
    },
    /// Two indexes share a name.
    #[error("index name {0:?} is declared twice")]
    DuplicateIndex(String),
    /// A subscription or write rule names namespaces for a cluster-scoped
    /// kind, which no namespace narrows: it would reach every object of
    /// the kind, so it is refused rather than silently widened.
    #[error("{0}")]
    ClusterScoped(String),
}

/// A metric definition from its WIT record.
fn metric_definition(raw: abi::MetricDefinition) -> crate::capability::metrics::MetricDefinition {
    use crate::capability::metrics::MetricKind;
    crate::capability::metrics::MetricDefinition {
        name: raw.name,
        help: raw.help,
        kind: match raw.kind {
            abi::MetricKind::Counter => MetricKind::Counter,
            abi::MetricKind::Gauge => MetricKind::Gauge,
            abi::MetricKind::Histogram => MetricKind::Histogram,
        },
        label_names: raw.label_names,
        buckets: raw.buckets,
    }
}

impl Manifest {
    /// Validates the manifest a plugin returned, and what its
    /// `admission.declare` export declared (`None` for a plugin built for a
    /// world without admission). A plugin that admits may subscribe to
    /// nothing.
    pub fn from_guest(
        raw: abi::Manifest,
        declared: Option<admission::Webhooks>,
    ) -> Result<Self, ManifestError> {
        let admission = match declared {
            Some(declared) => Webhooks::from_guest(declared)?,
            None => None,
        };
        if !is_dns_label(&raw.name) {
            return Err(ManifestError::Name(raw.name));
        }
        if raw.version.is_empty()
            || raw.version.len() > 64
            || raw
                .version
                .chars()
                .any(|c| c.is_control() || c.is_whitespace())
        {
            return Err(ManifestError::Version(raw.version));
        }
        if raw.subscriptions.is_empty() && admission.is_none() {
            return Err(ManifestError::NoSubscriptions);
        }
        if raw.subscriptions.len() > MAX_SUBSCRIPTIONS {
            return Err(ManifestError::TooManySubscriptions(raw.subscriptions.len()));
        }
        let mut subscriptions: Vec<Subscription> = Vec::with_capacity(raw.subscriptions.len());
        for (index, sub) in raw.subscriptions.into_iter().enumerate() {
            let sub = checked_subscription(index, sub)?;
            // The informer drops the namespace of a cluster-scoped kind, so
            // the read check must not see one: refused here for a built-in
            // kind, by the daemon once discovery names a custom one.
            if let Some(namespace) = &sub.namespace
                && crate::discovery::builtin::is_cluster_scoped(&sub.kind.group, &sub.kind.kind)
            {
                return Err(ManifestError::ClusterScoped(
                    crate::subscription::cluster_scoped_refusal(
                        &raw.name, index, &sub.kind, namespace,
                    ),
                ));
            }
            if subscriptions.iter().any(|earlier| earlier.same_watch(&sub)) {
                return Err(ManifestError::Duplicate {
                    index,
                    kind: shown(&sub.kind),
                });
            }
            subscriptions.push(sub);
        }
        let limits = RequestedLimits {
            call_deadline: match raw.limits.call_deadline_ms {
                Some(0) => return Err(ManifestError::ZeroLimit("call deadline")),
                ms => ms.map(|ms| Duration::from_millis(ms.into())),
            },
            memory_bytes: match raw.limits.memory_bytes {
                Some(0) => return Err(ManifestError::ZeroLimit("memory")),
                bytes => bytes,
            },
        };
        for capability in &raw.capabilities {
            if !crate::capability::known_capabilities().contains(&capability.as_str()) {
                return Err(ManifestError::UnknownCapability(capability.clone()));
            }
        }
        let writes = raw.writes.into_iter().map(write_rule).collect::<Vec<_>>();
        for (index, rule) in writes.iter().enumerate() {
            rule.validate(index)?;
            let named: Vec<&String> = rule
                .namespaces
                .iter()
                .filter(|ns| *ns != crate::capability::kube::ALL_NAMESPACES)
                .collect();
            if !named.is_empty()
                && crate::discovery::builtin::is_cluster_scoped(&rule.group, &rule.kind)
            {
                return Err(ManifestError::ClusterScoped(format!(
                    "plugin {plugin:?}: write rule #{index} ({kind}) names namespaces {named:?}, \
                     but {kind} is cluster-scoped: a rule naming namespaces never covers its \
                     objects; declare namespaces [\"*\"] (which the operator grants in \
                     plugins.{plugin}.grants.writes)",
                    plugin = raw.name,
                    kind = crate::text::escape_controls(&rule.kind),
                )));
            }
        }
        let mut indexes: Vec<IndexDefinition> = Vec::with_capacity(raw.indexes.len());
        for (index, raw) in raw.indexes.into_iter().enumerate() {
            let name = raw.name.clone();
            let kinds: Vec<&Gvk> = subscriptions.iter().map(|s| &s.kind).collect();
            let definition = IndexDefinition::from_guest(raw, &kinds).map_err(|reason| {
                ManifestError::Index {
                    index,
                    name,
                    reason,
                }
            })?;
            if indexes
                .iter()
                .any(|earlier| earlier.name == definition.name)
            {
                return Err(ManifestError::DuplicateIndex(definition.name));
            }
            indexes.push(definition);
        }
        Ok(Manifest {
            name: raw.name,
            version: raw.version,
            subscriptions,
            limits,
            capabilities: raw.capabilities,
            writes,
            metrics: raw.metrics.into_iter().map(metric_definition).collect(),
            indexes,
            admission,
            max_batch: 1,
        })
    }
}

/// A declared write rule, host-side.
fn write_rule(raw: abi::WriteRule) -> WriteRule {
    WriteRule {
        verbs: raw
            .verbs
            .into_iter()
            .map(|verb| match verb {
                abi::Verb::Get => Verb::Get,
                abi::Verb::Create => Verb::Create,
                abi::Verb::Update => Verb::Update,
                abi::Verb::Patch => Verb::Patch,
                abi::Verb::Apply => Verb::Apply,
                abi::Verb::Delete => Verb::Delete,
            })
            .collect(),
        group: raw.group,
        kind: raw.kind,
        subresource: non_empty(raw.subresource),
        namespaces: raw.namespaces.into_iter().collect(),
        clusters: Default::default(),
    }
}

/// A guest's subscription, checked field by field.
fn checked_subscription(
    index: usize,
    raw: abi::Subscription,
) -> Result<Subscription, ManifestError> {
    let kind = Gvk::new(raw.kind.group, raw.kind.version, raw.kind.kind);
    if kind.version.is_empty() || kind.kind.is_empty() {
        return Err(ManifestError::Kind {
            index,
            kind: kind.to_string(),
        });
    }
    kind.check("kind")
        .map_err(|refused| ManifestError::BadKind {
            index,
            reason: refused.to_string(),
        })?;
    let namespace = non_empty(raw.namespace);
    if let Some(ns) = &namespace
        && !is_dns_label(ns)
    {
        return Err(ManifestError::Namespace {
            index,
            kind: shown(&kind),
            namespace: ns.clone(),
        });
    }
    let label_selector = non_empty(raw.label_selector);
    if let Some(selector) = &label_selector
        && let Err(reason) = LabelSelector::parse(selector)
    {
        return Err(ManifestError::LabelSelector {
            index,
            kind: shown(&kind),
            selector: selector.clone(),
            reason: reason.to_string(),
        });
    }
    let field_selector = non_empty(raw.field_selector);
    if let Some(selector) = &field_selector
        && let Err(reason) = FieldSelector::parse(selector)
    {
        return Err(ManifestError::FieldSelector {
            index,
            kind: shown(&kind),
            selector: selector.clone(),
            reason: reason.to_string(),
        });
    }
    let resync_period = match raw.resync_period_ms {
        None => None,
        Some(millis) => {
            let period = Duration::from_millis(millis);
            if !(MIN_RESYNC..=MAX_RESYNC).contains(&period) {
                return Err(ManifestError::Resync {
                    index,
                    kind: shown(&kind),
                    millis,
                });
            }
            Some(period)
        }
    };
    let delivery = match raw.delivery {
        abi::DeliveryMode::EveryEvent => Delivery::EveryEvent,
        abi::DeliveryMode::Coalesced => Delivery::Coalesced,
    };
    Ok(Subscription {
        kind,
        namespace,
        label_selector,
        field_selector,
        resync_period,
        delivery,
    })
}

/// A kind as errors show it: the guest wrote it, so it may hold line breaks.
fn shown(kind: &Gvk) -> String {
    crate::text::escape_controls(&kind.to_string())
}

fn non_empty(value: Option<String>) -> Option<String> {
    value.filter(|v| !v.trim().is_empty())
}

/// True for a valid plugin name: an RFC 1123 label.
pub fn is_plugin_name(name: &str) -> bool {
    is_dns_label(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subscription(group: &str, version: &str, kind: &str) -> abi::Subscription {
        abi::Subscription {
            kind: abi::GroupVersionKind {
                group: group.into(),
                version: version.into(),
                kind: kind.into(),
            },
            namespace: None,
            label_selector: None,
            field_selector: None,
            resync_period_ms: None,
            delivery: abi::DeliveryMode::EveryEvent,
        }
    }

    fn manifest(subscriptions: Vec<abi::Subscription>) -> abi::Manifest {
        abi::Manifest {
            name: "probe".into(),
            version: "0.1.0".into(),
            subscriptions,
            limits: abi::Limits {
                call_deadline_ms: None,
                memory_bytes: None,
            },
            capabilities: vec![],
            writes: vec![],
            metrics: vec![],
            indexes: vec![],
        }
    }

    #[test]
    fn a_valid_manifest_keeps_what_the_plugin_asked_for() {
        let mut pods = subscription("", "v1", "Pod");
        pods.label_selector = Some("app=web".into());
        pods.resync_period_ms = Some(30_000);
        let validated = Manifest::from_guest(manifest(vec![pods]), None).unwrap();
        let sub = &validated.subscriptions[0];
        assert_eq!(sub.kind, Gvk::new("", "v1", "Pod"));
        assert_eq!(sub.label_selector.as_deref(), Some("app=web"));
        assert_eq!(sub.resync_period, Some(Duration::from_secs(30)));
    }

    #[test]
    fn indexes_must_name_a_subscribed_kind_once_with_a_usable_key() {
        let index = |name: &str, kind: &str, by: abi::IndexBy| abi::IndexDefinition {
            name: name.into(),
            kind: abi::GroupVersionKind {
                group: "apps".into(),
                version: "v1".into(),
                kind: kind.into(),
            },
            by,
        };
        let with = |indexes: Vec<abi::IndexDefinition>| {
            let mut raw = manifest(vec![subscription("apps", "v1", "ReplicaSet")]);
            raw.indexes = indexes;
            Manifest::from_guest(raw, None)
        };
        let valid = with(vec![
            index("owner", "ReplicaSet", abi::IndexBy::Owner),
            index("by-app", "ReplicaSet", abi::IndexBy::Label("app".into())),
            index(
                "replicas",
                "ReplicaSet",
                abi::IndexBy::Field("spec.replicas".into()),
            ),
        ])
        .unwrap();
        assert_eq!(
            valid
                .indexes
                .iter()
                .map(|i| i.by.to_string())
                .collect::<Vec<_>>(),
            ["owner", "label app", "field spec.replicas"]
        );
        let refused = |indexes| with(indexes).unwrap_err().to_string();
        assert_eq!(
            refused(vec![index("x", "Deployment", abi::IndexBy::Owner)]),
            "index 0 (\"x\") is invalid: it indexes apps/v1 Deployment, which the plugin does not subscribe to"
        );
        assert!(
            refused(vec![index(
                "x",
                "ReplicaSet",
                abi::IndexBy::Field("spec..x".into())
            )])
            .contains("field path \"spec..x\""),
        );
        assert!(refused(vec![index("", "ReplicaSet", abi::IndexBy::Owner)]).contains("1 to 63"));
        assert_eq!(
            refused(vec![
                index("x", "ReplicaSet", abi::IndexBy::Owner),
                index("x", "ReplicaSet", abi::IndexBy::Label("app".into())),
            ]),
            "index name \"x\" is declared twice"
        );
    }

    #[test]
    fn a_kind_that_breaks_its_grammar_is_refused_on_one_line_naming_the_field() {
        // Found by the manifest fuzz target: the kind, written by the
        // plugin, was shown as is, so a line break in it split the host's
        // log line. Kinds are now checked by their grammar first.
        let sub = subscription("\n", "v1\r", "Pod\u{1b}[2J");
        let err = Manifest::from_guest(manifest(vec![sub]), None).unwrap_err();
        let message = err.to_string();
        assert!(!message.contains(char::is_control), "{message:?}");
        assert!(
            message.starts_with("subscription #0: kind.group \"\\n\" is not an API group"),
            "{message}"
        );
        for (group, version, kind, field) in [
            ("apps/v1", "v1", "Deployment", "kind.group"),
            ("", "v1/namespaces", "Pod", "kind.version"),
            ("", "v1", "Pod/status", "kind.kind"),
        ] {
            let err =
                Manifest::from_guest(manifest(vec![subscription(group, version, kind)]), None)
                    .unwrap_err()
                    .to_string();
            assert!(err.contains(field), "{err}");
        }
    }

    #[test]
    fn a_namespace_on_a_cluster_scoped_kind_is_refused_rather_than_dropped() {
        // Issue 38: "Namespaces in allowed" passed the read check for
        // `allowed`, and the informer, dropping the namespace of a
        // cluster-scoped kind, delivered every Namespace.
        for (group, kind) in [
            ("", "Namespace"),
            ("", "Node"),
            ("rbac.authorization.k8s.io", "ClusterRole"),
        ] {
            let mut sub = subscription(group, "v1", kind);
            sub.namespace = Some("allowed".into());
            let err =
                Manifest::from_guest(manifest(vec![subscription("", "v1", "Pod"), sub]), None)
                    .unwrap_err();
            assert!(matches!(err, ManifestError::ClusterScoped(_)), "{err}");
            let message = err.to_string();
            for part in [
                "plugin \"probe\"",
                "subscription #1",
                &format!("{kind} is cluster-scoped"),
                "namespace \"allowed\"",
                "plugins.probe.grants.reads",
            ] {
                assert!(message.contains(part), "{part:?} in {message}");
            }
            assert!(
                Manifest::from_guest(manifest(vec![subscription(group, "v1", kind)]), None).is_ok(),
                "without a namespace, {kind} is subscribed to as what it is"
            );
        }
        let mut pods = subscription("", "v1", "Pod");
        pods.namespace = Some("allowed".into());
        let mut widgets = subscription("example.com", "v1", "Widget");
        widgets.namespace = Some("allowed".into());
        assert!(
            Manifest::from_guest(manifest(vec![pods, widgets]), None).is_ok(),
            "namespaced kinds keep their namespace; a custom kind is checked once discovered"
        );
    }

    #[test]
    fn a_write_rule_naming_namespaces_for_a_cluster_scoped_kind_is_refused() {
        let rule = |kind: &str, namespaces: &[&str]| abi::WriteRule {
            verbs: vec![abi::Verb::Get],
            group: String::new(),
            kind: kind.into(),
            subresource: None,
            namespaces: namespaces.iter().map(|n| n.to_string()).collect(),
        };
        let with = |rules| {
            let mut raw = manifest(vec![subscription("", "v1", "Pod")]);
            raw.writes = rules;
            Manifest::from_guest(raw, None)
        };
        let err = with(vec![rule("Node", &["allowed"])])
            .unwrap_err()
            .to_string();
        assert!(err.contains("Node is cluster-scoped"), "{err}");
        assert!(err.contains("plugins.probe.grants.writes"), "{err}");
        assert!(with(vec![rule("Node", &["*"])]).is_ok());
        assert!(with(vec![rule("Pod", &["allowed"])]).is_ok());
    }

    #[test]
    fn subscriptions_whose_selectors_differ_only_in_writing_are_duplicates() {
        // Found by the manifest fuzz target: "app=web" and "app==web" were
        // two watches, so the plugin would have had every event twice.
        for (first, second) in [
            ("app=web", "app==web"),
            ("app=web,tier in (a,b)", " tier in (b,a,a) , app = web"),
            ("!canary", "!canary,!canary"),
        ] {
            let mut a = subscription("", "v1", "Pod");
            a.label_selector = Some(first.into());
            let mut b = subscription("", "v1", "Pod");
            b.label_selector = Some(second.into());
            let err = Manifest::from_guest(manifest(vec![a, b]), None).unwrap_err();
            assert!(
                matches!(err, ManifestError::Duplicate { index: 1, .. }),
                "{first:?} {second:?}: {err}"
            );
        }
        let mut a = subscription("", "v1", "Pod");
        a.field_selector = Some("metadata.name=a,spec.nodeName=n".into());
        let mut b = subscription("", "v1", "Pod");
        b.field_selector = Some("spec.nodeName==n,metadata.name=a".into());
        let err = Manifest::from_guest(manifest(vec![a, b.clone()]), None).unwrap_err();
        assert!(
            matches!(err, ManifestError::Duplicate { index: 1, .. }),
            "{err}"
        );

        let mut c = subscription("", "v1", "Pod");
        c.field_selector = Some("spec.nodeName=n".into());
        let mut d = subscription("", "v1", "Pod");
        d.label_selector = Some("app in (web,db)".into());
        let mut e = subscription("", "v1", "Pod");
        e.label_selector = Some("app in (web)".into());
        let distinct = Manifest::from_guest(manifest(vec![b, c, d, e]), None).unwrap();
        assert_eq!(distinct.subscriptions.len(), 4);
    }
}
