//! What a plugin admits: its validating and mutating webhooks (kinds and
//! operations, namespace and object selectors, failure policy, timeout),
//! declared by its `admission.declare` export and checked here. Shared
//! vocabulary: the manifest holds them, the admission server routes by
//! them, and `herald admission webhooks` prints the API server's
//! configurations from them.

use crate::gvk::Gvk;
use crate::selector::LabelSelector;
use crate::wit::v0_5::exports::herald::plugin0_5_0::admission as abi;
use herald_grammar::name::{Rule as NameRule, check};
use serde::Serialize;
use std::collections::BTreeSet;
use std::time::Duration;

/// The longest an API server waits for a webhook (Kubernetes' maximum).
pub const MAX_TIMEOUT: Duration = Duration::from_secs(30);
/// How long an API server waits when a webhook names no timeout
/// (Kubernetes' default).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// The operation a review is about, as AdmissionReview spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Operation {
    /// `CREATE`.
    Create,
    /// `UPDATE`.
    Update,
    /// `DELETE`.
    Delete,
    /// `CONNECT`: exec, attach, port-forward and other connect subresources.
    Connect,
}

impl Operation {
    /// `CREATE`, `UPDATE`, `DELETE` or `CONNECT`.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }

    /// The operation AdmissionReview names `name`, if any.
    pub fn parse(name: &str) -> Option<Self> {
        [
            Operation::Create,
            Operation::Update,
            Operation::Delete,
            Operation::Connect,
        ]
        .into_iter()
        .find(|op| op.as_str() == name)
    }

    /// As the plugin ABI spells it.
    pub fn to_abi(self) -> abi::Operation {
        match self {
            Operation::Create => abi::Operation::Create,
            Operation::Update => abi::Operation::Update,
            Operation::Delete => abi::Operation::Delete,
            Operation::Connect => abi::Operation::Connect,
        }
    }

    fn from_abi(op: abi::Operation) -> Self {
        match op {
            abi::Operation::Create => Operation::Create,
            abi::Operation::Update => Operation::Update,
            abi::Operation::Delete => Operation::Delete,
            abi::Operation::Connect => Operation::Connect,
        }
    }
}

/// What the API server does when the plugin cannot answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum FailurePolicy {
    /// Refuse the write.
    Fail,
    /// Let the write through.
    Ignore,
}

impl FailurePolicy {
    /// `Fail` or `Ignore`, as webhook configurations spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            FailurePolicy::Fail => "Fail",
            FailurePolicy::Ignore => "Ignore",
        }
    }
}

/// The two kinds of decision a plugin can make at admission.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// Allow or refuse (a ValidatingWebhookConfiguration's webhook).
    Validate,
    /// Allow or refuse, and change the object (a
    /// MutatingWebhookConfiguration's webhook).
    Mutate,
}

impl Decision {
    /// `validate` or `mutate`: the path segment and metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Validate => "validate",
            Decision::Mutate => "mutate",
        }
    }

    /// The decision a path segment names.
    pub fn parse(segment: &str) -> Option<Self> {
        match segment {
            "validate" => Some(Decision::Validate),
            "mutate" => Some(Decision::Mutate),
            _ => None,
        }
    }
}

/// One kind of write a webhook covers.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Rule {
    /// The kind.
    pub kind: Gvk,
    /// Its operations; never empty.
    pub operations: BTreeSet<Operation>,
    /// The subresource; `None` for the object itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subresource: Option<String>,
}

/// One validated webhook.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Webhook {
    /// What it covers; never empty.
    pub rules: Vec<Rule>,
    /// Namespaces by their labels, as written by the plugin.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<String>,
    /// Objects by their labels, as written by the plugin.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object_selector: Option<String>,
    /// What the API server does when the plugin cannot answer.
    pub failure_policy: FailurePolicy,
    /// How long the API server waits.
    #[serde(rename = "timeoutSeconds", with = "seconds")]
    pub timeout: Duration,
}

impl Webhook {
    /// True when a write of `kind`'s `subresource` by `operation` is one
    /// this webhook covers.
    pub fn covers(&self, kind: &Gvk, subresource: Option<&str>, operation: Operation) -> bool {
        self.rules.iter().any(|rule| {
            rule.kind == *kind
                && rule.subresource.as_deref() == subresource
                && rule.operations.contains(&operation)
        })
    }

    /// True when its object selector lets the API server send it a write
    /// of `object` over `old` (each the object's JSON, absent on a create
    /// or a delete): with no selector, always; otherwise when either
    /// object's labels match, as Kubernetes evaluates `objectSelector` (an
    /// absent object, or one that is not JSON, matches nothing).
    pub fn selects(&self, object: Option<&str>, old: Option<&str>) -> bool {
        let Some(selector) = &self.object_selector else {
            return true;
        };
        let Ok(selector) = LabelSelector::parse(selector) else {
            return false;
        };
        [object, old].into_iter().flatten().any(|text| {
            serde_json::from_str::<serde_json::Value>(text).is_ok_and(|object| {
                object.is_object()
                    && selector.matches_json(object["metadata"]["labels"].as_object())
            })
        })
    }
}

/// What a plugin admits; at least one of the two.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize)]
pub struct Webhooks {
    /// The writes its `validate` decides on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub validating: Option<Webhook>,
    /// The writes its `mutate` decides on and may change.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mutating: Option<Webhook>,
}

impl Webhooks {
    /// The webhook of `decision`, if the plugin declared one.
    pub fn get(&self, decision: Decision) -> Option<&Webhook> {
        match decision {
            Decision::Validate => self.validating.as_ref(),
            Decision::Mutate => self.mutating.as_ref(),
        }
    }

    /// True when it declares neither.
    pub fn is_empty(&self) -> bool {
        self.validating.is_none() && self.mutating.is_none()
    }

    /// Checks what a plugin's `declare` returned: `None` when it admits
    /// nothing.
    pub fn from_guest(raw: abi::Webhooks) -> Result<Option<Self>, WebhookError> {
        let webhooks = Webhooks {
            validating: raw
                .validating
                .map(|w| webhook(w, "validating"))
                .transpose()?,
            mutating: raw.mutating.map(|w| webhook(w, "mutating")).transpose()?,
        };
        Ok((!webhooks.is_empty()).then_some(webhooks))
    }
}

/// Why a declared webhook was refused, naming the field at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebhookError {
    /// A webhook with no rule.
    #[error("admission.{0}.rules is empty: a webhook admits at least one kind")]
    NoRules(&'static str),
    /// A rule with no operation.
    #[error("admission.{field}.operations is empty: name at least one")]
    NoOperations {
        /// `validating.rules[0]`.
        field: String,
    },
    /// A name that breaks its grammar.
    #[error(transparent)]
    Name(#[from] herald_grammar::name::Invalid),
    /// A selector that does not parse.
    #[error("admission.{field} {selector:?} is not a label selector: {problem}")]
    Selector {
        /// `validating.namespaceSelector`.
        field: String,
        /// What the plugin wrote (escaped when shown).
        selector: String,
        /// What is wrong with it.
        problem: String,
    },
    /// A timeout outside 1 to 30 seconds.
    #[error("admission.{0}.timeoutSeconds must be 1 to 30 (Kubernetes' bounds)")]
    Timeout(&'static str),
}

fn webhook(raw: abi::Webhook, which: &'static str) -> Result<Webhook, WebhookError> {
    if raw.rules.is_empty() {
        return Err(WebhookError::NoRules(which));
    }
    let rules = raw
        .rules
        .into_iter()
        .enumerate()
        .map(|(i, raw)| {
            let field = format!("admission.{which}.rules[{i}]");
            let kind = Gvk::new(raw.kind.group, raw.kind.version, raw.kind.kind);
            kind.check(&format!("{field}.kind"))?;
            if let Some(sub) = &raw.subresource {
                check(&format!("{field}.subresource"), sub, NameRule::Dns1035Label)?;
            }
            let operations: BTreeSet<Operation> = raw
                .operations
                .into_iter()
                .map(Operation::from_abi)
                .collect();
            if operations.is_empty() {
                return Err(WebhookError::NoOperations {
                    field: format!("{which}.rules[{i}]"),
                });
            }
            Ok(Rule {
                kind,
                operations,
                subresource: raw.subresource,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let selector = |raw: Option<String>, name: &str| -> Result<Option<String>, WebhookError> {
        let Some(text) = raw.filter(|s| !s.trim().is_empty()) else {
            return Ok(None);
        };
        let refused = |problem: String| WebhookError::Selector {
            field: format!("{which}.{name}"),
            selector: text.clone(),
            problem,
        };
        let parsed = LabelSelector::parse(&text).map_err(|e| refused(e.to_string()))?;
        if parsed.requirements.iter().any(|r| {
            matches!(
                r.operator,
                crate::selector::Operator::GreaterThan | crate::selector::Operator::LessThan
            )
        }) {
            return Err(refused(
                "uses > or <, which a webhook's LabelSelector cannot express".into(),
            ));
        }
        Ok(Some(text))
    };
    let timeout = match raw.timeout_seconds {
        None => DEFAULT_TIMEOUT,
        Some(s) if (1..=MAX_TIMEOUT.as_secs()).contains(&u64::from(s)) => {
            Duration::from_secs(u64::from(s))
        }
        Some(_) => return Err(WebhookError::Timeout(which)),
    };
    Ok(Webhook {
        rules,
        namespace_selector: selector(raw.namespace_selector, "namespaceSelector")?,
        object_selector: selector(raw.object_selector, "objectSelector")?,
        failure_policy: match raw.failure_policy {
            abi::FailurePolicy::Fail => FailurePolicy::Fail,
            abi::FailurePolicy::Ignore => FailurePolicy::Ignore,
        },
        timeout,
    })
}

/// Durations as whole seconds.
mod seconds {
    use serde::Serializer;
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_secs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wit::v0_2::herald::plugin::types::GroupVersionKind;

    fn pods(operations: Vec<abi::Operation>) -> abi::Rule {
        abi::Rule {
            kind: GroupVersionKind {
                group: String::new(),
                version: "v1".into(),
                kind: "Pod".into(),
            },
            operations,
            subresource: None,
        }
    }

    fn raw(rules: Vec<abi::Rule>) -> abi::Webhook {
        abi::Webhook {
            rules,
            namespace_selector: None,
            object_selector: None,
            failure_policy: abi::FailurePolicy::Fail,
            timeout_seconds: None,
        }
    }

    #[test]
    fn a_plugin_declaring_no_webhook_admits_nothing() {
        let none = abi::Webhooks {
            validating: None,
            mutating: None,
        };
        assert_eq!(Webhooks::from_guest(none), Ok(None));
    }

    #[test]
    fn a_webhook_covers_its_kinds_operations_and_subresource_only() {
        let declared = Webhooks::from_guest(abi::Webhooks {
            validating: Some(raw(vec![pods(vec![abi::Operation::Create])])),
            mutating: None,
        })
        .unwrap()
        .unwrap();
        let hook = declared.get(Decision::Validate).unwrap();
        let pod = Gvk::new("", "v1", "Pod");
        assert!(hook.covers(&pod, None, Operation::Create));
        assert!(!hook.covers(&pod, None, Operation::Update));
        assert!(!hook.covers(&pod, Some("status"), Operation::Create));
        assert!(!hook.covers(&Gvk::new("apps", "v1", "Pod"), None, Operation::Create));
        assert_eq!(hook.timeout, DEFAULT_TIMEOUT);
        assert!(declared.get(Decision::Mutate).is_none());
    }

    #[test]
    fn an_object_selector_matches_the_new_or_the_old_object_and_never_a_missing_one() {
        let mut selecting = raw(vec![pods(vec![abi::Operation::Update])]);
        selecting.object_selector = Some("tier=web,!legacy".into());
        let declared = Webhooks::from_guest(abi::Webhooks {
            validating: Some(selecting),
            mutating: Some(raw(vec![pods(vec![abi::Operation::Create])])),
        })
        .unwrap()
        .unwrap();
        let hook = declared.get(Decision::Validate).unwrap();
        let web = r#"{"metadata":{"labels":{"tier":"web"}}}"#;
        let db = r#"{"metadata":{"labels":{"tier":"db"}}}"#;
        let legacy = r#"{"metadata":{"labels":{"tier":"web","legacy":"yes"}}}"#;
        let bare = r#"{"metadata":{}}"#;
        assert!(hook.selects(Some(web), None));
        assert!(hook.selects(Some(db), Some(web)), "either object");
        assert!(hook.selects(None, Some(web)), "a delete's old object");
        assert!(!hook.selects(Some(db), Some(legacy)));
        assert!(!hook.selects(Some(bare), None));
        assert!(!hook.selects(None, None));
        assert!(!hook.selects(Some("[1]"), Some("not json")));
        let unselecting = declared.get(Decision::Mutate).unwrap();
        assert!(unselecting.selects(None, None), "no selector: every write");
    }

    #[test]
    fn bad_declarations_are_refused_naming_the_field() {
        let refuse = |validating: abi::Webhook| {
            Webhooks::from_guest(abi::Webhooks {
                validating: Some(validating),
                mutating: None,
            })
            .unwrap_err()
            .to_string()
        };
        assert!(refuse(raw(vec![])).contains("admission.validating.rules is empty"));
        assert!(refuse(raw(vec![pods(vec![])])).contains("validating.rules[0].operations"));
        let mut bad_kind = pods(vec![abi::Operation::Create]);
        bad_kind.kind.kind = "Pod\u{1b}[2J".into();
        assert!(refuse(raw(vec![bad_kind])).contains("admission.validating.rules[0].kind.kind"));
        let mut bad_sub = pods(vec![abi::Operation::Create]);
        bad_sub.subresource = Some("../status".into());
        assert!(refuse(raw(vec![bad_sub])).contains("rules[0].subresource"));
        let mut selector = raw(vec![pods(vec![abi::Operation::Create])]);
        selector.object_selector = Some("app in (".into());
        assert!(refuse(selector).contains("validating.objectSelector"));
        let mut ordering = raw(vec![pods(vec![abi::Operation::Create])]);
        ordering.namespace_selector = Some("tier>2".into());
        assert!(refuse(ordering).contains("cannot express"));
        for seconds in [0, 31] {
            let mut slow = raw(vec![pods(vec![abi::Operation::Create])]);
            slow.timeout_seconds = Some(seconds);
            assert!(refuse(slow).contains("timeoutSeconds must be 1 to 30"));
        }
    }
}
