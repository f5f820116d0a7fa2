//! The webhook configurations the API server needs to call Herald: one
//! ValidatingWebhookConfiguration and one MutatingWebhookConfiguration,
//! each with a webhook per plugin that declares one, its rules resolved to
//! resources, `sideEffects: None`, `admissionReviewVersions: [v1]`,
//! `matchPolicy: Equivalent`, the plugin's timeout and failure policy, and
//! a namespace selector that leaves out the namespaces the operator names
//! (Herald's own and `kube-system` by default) so that Herald never stands
//! between the cluster and its own repair.

use crate::discovery::{KindError, KindResolver};
use crate::plugin::Manifest;
use crate::selector::{LabelSelector as Selector, Operator};
use crate::webhook::{Decision, Webhook};
use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhook, MutatingWebhookConfiguration, RuleWithOperations, ServiceReference,
    ValidatingWebhook, ValidatingWebhookConfiguration, WebhookClientConfig,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, LabelSelectorRequirement, ObjectMeta,
};

/// The label the API server sets on every namespace to its name.
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// Where the API server reaches Herald.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// A URL, `https://host:port` (paths are appended).
    Url(String),
    /// A Service in the cluster.
    Service {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// Its port.
        port: i32,
    },
}

/// What the configurations are made from besides the plugins.
#[derive(Debug, Clone)]
pub struct Target {
    /// The name of both configurations.
    pub name: String,
    /// Where the API server reaches Herald.
    pub endpoint: Endpoint,
    /// The PEM of the CA that signed Herald's serving certificate.
    pub ca_bundle: Option<Vec<u8>>,
    /// Namespaces never sent to any plugin.
    pub excluded_namespaces: Vec<String>,
}

/// Why a configuration could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ConfigurationError {
    /// A kind that cannot be resolved to a resource.
    #[error(transparent)]
    Kind(#[from] KindError),
    /// A selector Kubernetes' LabelSelector cannot express.
    #[error("plugin {plugin}: {field} {selector:?}: {problem}")]
    Selector {
        /// The plugin.
        plugin: String,
        /// `namespaceSelector` or `objectSelector`.
        field: &'static str,
        /// The selector.
        selector: String,
        /// Why.
        #[source]
        problem: WebhookSelectorError,
    },
}

/// A selector a webhook's LabelSelector cannot hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebhookSelectorError {
    /// It does not parse.
    #[error(transparent)]
    Syntax(#[from] crate::selector::SelectorError),
    /// It compares with `>` or `<`.
    #[error("uses > or <, which a webhook's LabelSelector cannot express")]
    Comparison,
}

/// The two configurations for `manifests`' webhooks (either may have no
/// webhook).
pub async fn configurations(
    manifests: &[&Manifest],
    target: &Target,
    resolver: &KindResolver,
) -> Result<(ValidatingWebhookConfiguration, MutatingWebhookConfiguration), ConfigurationError> {
    let mut validating = Vec::new();
    let mut mutating = Vec::new();
    for manifest in manifests {
        let Some(webhooks) = &manifest.admission else {
            continue;
        };
        if let Some(webhook) = &webhooks.validating {
            let parts = parts(manifest, webhook, Decision::Validate, target, resolver).await?;
            validating.push(ValidatingWebhook {
                name: parts.name,
                client_config: parts.client_config,
                rules: Some(parts.rules),
                namespace_selector: Some(parts.namespace_selector),
                object_selector: parts.object_selector,
                failure_policy: Some(webhook.failure_policy.as_str().into()),
                match_policy: Some("Equivalent".into()),
                side_effects: "None".into(),
                timeout_seconds: Some(webhook.timeout.as_secs() as i32),
                admission_review_versions: vec!["v1".into()],
                match_conditions: None,
            });
        }
        if let Some(webhook) = &webhooks.mutating {
            let parts = parts(manifest, webhook, Decision::Mutate, target, resolver).await?;
            mutating.push(MutatingWebhook {
                name: parts.name,
                client_config: parts.client_config,
                rules: Some(parts.rules),
                namespace_selector: Some(parts.namespace_selector),
                object_selector: parts.object_selector,
                failure_policy: Some(webhook.failure_policy.as_str().into()),
                match_policy: Some("Equivalent".into()),
                side_effects: "None".into(),
                timeout_seconds: Some(webhook.timeout.as_secs() as i32),
                admission_review_versions: vec!["v1".into()],
                reinvocation_policy: Some("Never".into()),
                match_conditions: None,
            });
        }
    }
    let metadata = || ObjectMeta {
        name: Some(target.name.clone()),
        labels: Some([("app.kubernetes.io/managed-by".into(), "herald".into())].into()),
        ..ObjectMeta::default()
    };
    Ok((
        ValidatingWebhookConfiguration {
            metadata: metadata(),
            webhooks: Some(validating),
        },
        MutatingWebhookConfiguration {
            metadata: metadata(),
            webhooks: Some(mutating),
        },
    ))
}

/// What a validating and a mutating webhook share.
struct Parts {
    name: String,
    client_config: WebhookClientConfig,
    rules: Vec<RuleWithOperations>,
    namespace_selector: LabelSelector,
    object_selector: Option<LabelSelector>,
}

async fn parts(
    manifest: &Manifest,
    webhook: &Webhook,
    decision: Decision,
    target: &Target,
    resolver: &KindResolver,
) -> Result<Parts, ConfigurationError> {
    let plugin = &manifest.name;
    let path = format!("/{}/{plugin}", decision.as_str());
    let client_config = WebhookClientConfig {
        ca_bundle: target.ca_bundle.clone().map(ByteString),
        url: match &target.endpoint {
            Endpoint::Url(base) => Some(format!("{}{path}", base.trim_end_matches('/'))),
            Endpoint::Service { .. } => None,
        },
        service: match &target.endpoint {
            Endpoint::Service {
                namespace,
                name,
                port,
            } => Some(ServiceReference {
                namespace: namespace.clone(),
                name: name.clone(),
                path: Some(path),
                port: Some(*port),
            }),
            Endpoint::Url(_) => None,
        },
    };
    let mut rules = Vec::new();
    for rule in &webhook.rules {
        let resource = resolver.resolve(plugin, &rule.kind).await?;
        let resource = match &rule.subresource {
            Some(sub) => format!("{}/{sub}", resource.resource),
            None => resource.resource,
        };
        rules.push(RuleWithOperations {
            api_groups: Some(vec![rule.kind.group.clone()]),
            api_versions: Some(vec![rule.kind.version.clone()]),
            resources: Some(vec![resource]),
            operations: Some(
                rule.operations
                    .iter()
                    .map(|op| op.as_str().into())
                    .collect(),
            ),
            scope: Some("*".into()),
        });
    }
    let selector = |text: &Option<String>, field: &'static str| {
        text.as_deref()
            .map(label_selector)
            .transpose()
            .map_err(|problem| ConfigurationError::Selector {
                plugin: plugin.clone(),
                field,
                selector: text.clone().unwrap_or_default(),
                problem,
            })
    };
    let mut namespace_selector =
        selector(&webhook.namespace_selector, "namespaceSelector")?.unwrap_or_default();
    if !target.excluded_namespaces.is_empty() {
        namespace_selector
            .match_expressions
            .get_or_insert_default()
            .push(LabelSelectorRequirement {
                key: NAMESPACE_NAME_LABEL.into(),
                operator: "NotIn".into(),
                values: Some(target.excluded_namespaces.clone()),
            });
    }
    Ok(Parts {
        name: format!("{plugin}.{}.herald.dev", decision.as_str()),
        client_config,
        rules,
        namespace_selector,
        object_selector: selector(&webhook.object_selector, "objectSelector")?,
    })
}

/// A selector in the API's string syntax as a Kubernetes LabelSelector:
/// `=` and `!=` become `In` and `NotIn` of one value; `>` and `<` have no
/// equivalent and are refused.
pub fn label_selector(text: &str) -> Result<LabelSelector, WebhookSelectorError> {
    let parsed = Selector::parse(text)?;
    let mut expressions = Vec::new();
    for requirement in parsed.requirements {
        let (operator, values) = match requirement.operator {
            Operator::Equals | Operator::In => ("In", Some(requirement.values)),
            Operator::NotEquals | Operator::NotIn => ("NotIn", Some(requirement.values)),
            Operator::Exists => ("Exists", None),
            Operator::DoesNotExist => ("DoesNotExist", None),
            Operator::GreaterThan | Operator::LessThan => {
                return Err(WebhookSelectorError::Comparison);
            }
        };
        expressions.push(LabelSelectorRequirement {
            key: requirement.key,
            operator: operator.into(),
            values,
        });
    }
    Ok(LabelSelector {
        match_expressions: Some(expressions),
        match_labels: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_become_match_expressions_and_ordering_is_refused() {
        let selector = label_selector("app=web,tier!=db,env in (a,b),owned,!legacy").unwrap();
        let expressions = selector.match_expressions.unwrap();
        let shown: Vec<(String, String, Option<Vec<String>>)> = expressions
            .into_iter()
            .map(|e| (e.key, e.operator, e.values))
            .collect();
        assert_eq!(
            shown,
            [
                ("app".into(), "In".into(), Some(vec!["web".into()])),
                ("tier".into(), "NotIn".into(), Some(vec!["db".into()])),
                (
                    "env".into(),
                    "In".into(),
                    Some(vec!["a".into(), "b".into()])
                ),
                ("owned".into(), "Exists".into(), None),
                ("legacy".into(), "DoesNotExist".into(), None),
            ]
        );
        assert_eq!(
            label_selector("replicas>2"),
            Err(WebhookSelectorError::Comparison)
        );
    }
}
