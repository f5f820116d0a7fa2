//! Webhook configurations: the `MutatingWebhookConfiguration`s and
//! `ValidatingWebhookConfiguration`s stored in the server, read into [`Webhook`]s with the
//! real server's defaults, and checked when they are written.
//!
//! Defaults, as `admissionregistration.k8s.io/v1` sets them: `failurePolicy: Fail`,
//! `matchPolicy: Equivalent`, empty (match-all) selectors, `timeoutSeconds: 10`, a rule's
//! `scope: "*"`. They are applied when a configuration is read, not written into the stored
//! object (a real server stores them; `kubectl get -o yaml` here shows what was written).
//!
//! Checked on write (`422 Invalid`, worded as the real server's validation words it): names
//! (a domain of three segments or more, unique in the configuration), `clientConfig` (one
//! of an `https` URL without query or fragment, or a service), `sideEffects` (`None` or
//! `NoneOnDryRun`, the only classes `v1` accepts), `admissionReviewVersions` (`v1` or
//! `v1beta1` among them), `timeoutSeconds` (1 to 30), the policies' and rules' values, the
//! selectors' operators. `matchConditions` are refused: this server evaluates no CEL, and a
//! webhook called where its conditions would have excluded it is a test passing for the
//! wrong reason.

use std::time::Duration;

use base64::Engine;
use serde_json::Value;

use crate::selector::{LabelSelector, Operator, Requirement};
use crate::status::cause_reason;

/// The group of the webhook configurations.
pub(crate) const GROUP: &str = "admissionregistration.k8s.io";
/// The plural of `MutatingWebhookConfiguration`.
pub(crate) const MUTATING: &str = "mutatingwebhookconfigurations";
/// The plural of `ValidatingWebhookConfiguration`.
pub(crate) const VALIDATING: &str = "validatingwebhookconfigurations";

/// The default and the largest `timeoutSeconds`.
const DEFAULT_TIMEOUT: u64 = 10;
const MAX_TIMEOUT: i64 = 30;

/// One invalid field: `(field, reason, problem)`, as `ApiError::invalid_causes` takes them.
pub(crate) type Cause = (String, &'static str, String);

/// Whether `group`/`plural` is a webhook configuration (never itself subject to webhooks,
/// as on the real server: a broken webhook could otherwise lock its own fix out).
pub(crate) fn is_configuration(group: &str, plural: &str) -> bool {
    group == GROUP && (plural == MUTATING || plural == VALIDATING)
}

/// Where a webhook is called.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Endpoint {
    /// `clientConfig.url`.
    Url(String),
    /// `clientConfig.service`, reached through [`WebhookServices`](super::WebhookServices).
    Service {
        /// The service's namespace.
        namespace: String,
        /// The service's name.
        name: String,
        /// The URL path (`/` by default).
        path: String,
        /// The port (443 by default).
        port: u16,
    },
}

/// `failurePolicy`: what a call that fails (unreachable, timed out, a bad answer) does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FailurePolicy {
    /// The write is refused with a 500 (the default).
    Fail,
    /// The write goes on as if the webhook had allowed it.
    Ignore,
}

/// `matchPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MatchPolicy {
    /// Only the rules' own versions.
    Exact,
    /// Other versions of the same resource too (the default).
    Equivalent,
}

/// A rule's `scope`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// Cluster-scoped resources (and Namespaces).
    Cluster,
    /// Namespaced resources.
    Namespaced,
    /// Either (`*`, the default).
    All,
}

/// One of a webhook's `rules`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rule {
    /// `CREATE`, `UPDATE`, `DELETE`, `CONNECT` or `*`.
    pub operations: Vec<String>,
    /// Groups (`""` for core) or `*`.
    pub api_groups: Vec<String>,
    /// Versions or `*`.
    pub api_versions: Vec<String>,
    /// Resources: `pods`, `pods/status`, `*`, `*/status`, `pods/*`, `*/*`.
    pub resources: Vec<String>,
    /// The scope.
    pub scope: Scope,
}

/// One webhook of a configuration, with defaults applied.
#[derive(Debug, Clone)]
pub(crate) struct Webhook {
    /// The configuration's name (webhooks run ordered by it, then by their place in it).
    pub configuration: String,
    /// The webhook's name (named in every error it causes).
    pub name: String,
    /// Where it is called.
    pub endpoint: Endpoint,
    /// `clientConfig.caBundle`, decoded: PEM certificates to trust (empty: the system's).
    pub ca_bundle: Vec<u8>,
    /// The rules; the webhook is called when one matches.
    pub rules: Vec<Rule>,
    /// What a failed call does.
    pub failure_policy: FailurePolicy,
    /// Whether other versions of a resource match.
    pub match_policy: MatchPolicy,
    /// Selects the namespaces (by their labels) whose objects the webhook sees.
    pub namespace_selector: LabelSelector,
    /// Selects the objects (by their labels, old or new) the webhook sees.
    pub object_selector: LabelSelector,
    /// `sideEffects`: a webhook not `None` or `NoneOnDryRun` refuses dry runs.
    pub side_effects: String,
    /// How long a call may take.
    pub timeout: Duration,
    /// `admissionReviewVersions`.
    pub review_versions: Vec<String>,
}

impl Webhook {
    /// Whether a dry run may call this webhook.
    pub fn allows_dry_run(&self) -> bool {
        matches!(self.side_effects.as_str(), "None" | "NoneOnDryRun")
    }
}

/// The webhooks of a stored configuration (defaults applied), or why it is invalid.
pub(crate) fn webhooks(configuration: &Value, mutating: bool) -> Result<Vec<Webhook>, Vec<Cause>> {
    let name = crate::object::name(configuration).unwrap_or_default();
    let mut causes = Vec::new();
    let mut hooks = Vec::new();
    let list = match &configuration["webhooks"] {
        Value::Null => &Vec::new(),
        Value::Array(list) => list,
        other => {
            return Err(vec![invalid("webhooks", other, "must be a list")]);
        }
    };
    let mut seen: Vec<&str> = Vec::new();
    for (i, hook) in list.iter().enumerate() {
        let path = format!("webhooks[{i}]");
        if let Some(n) = hook["name"].as_str() {
            if seen.contains(&n) {
                causes.push(cause(
                    format!("{path}.name"),
                    format!("Duplicate value: {n:?}"),
                ));
            }
            seen.push(n);
        }
        if let Some(h) = webhook(name, hook, &path, mutating, &mut causes) {
            hooks.push(h);
        }
    }
    if causes.is_empty() {
        Ok(hooks)
    } else {
        Err(causes)
    }
}

/// A webhook configuration's problems (empty: valid), for a write of one.
pub(crate) fn check(configuration: &Value, mutating: bool) -> Vec<Cause> {
    webhooks(configuration, mutating).err().unwrap_or_default()
}

fn cause(field: String, problem: String) -> Cause {
    (field, cause_reason(&problem), problem)
}

fn invalid(field: &str, value: &Value, problem: &str) -> Cause {
    cause(
        field.to_string(),
        format!("Invalid value: {value}: {problem}"),
    )
}

fn required(field: String, detail: &str) -> Cause {
    let problem = if detail.is_empty() {
        "Required value".to_string()
    } else {
        format!("Required value: {detail}")
    };
    cause(field, problem)
}

fn unsupported(field: String, value: &str, supported: &[&str]) -> Cause {
    let supported: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
    cause(
        field,
        format!(
            "Unsupported value: {value:?}: supported values: {}",
            supported.join(", ")
        ),
    )
}

/// A string field, or `default` when absent; a non-string is a cause.
fn string_or<'a>(
    hook: &'a Value,
    key: &str,
    path: &str,
    default: &'a str,
    causes: &mut Vec<Cause>,
) -> &'a str {
    match &hook[key] {
        Value::Null => default,
        Value::String(s) => s,
        other => {
            causes.push(invalid(&format!("{path}.{key}"), other, "must be a string"));
            default
        }
    }
}

/// A list of strings (absent: empty).
fn strings(value: &Value, path: &str, causes: &mut Vec<Cause>) -> Vec<String> {
    match value {
        Value::Null => Vec::new(),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .filter_map(|(i, v)| match v.as_str() {
                Some(s) => Some(s.to_string()),
                None => {
                    causes.push(invalid(&format!("{path}[{i}]"), v, "must be a string"));
                    None
                }
            })
            .collect(),
        other => {
            causes.push(invalid(path, other, "must be a list of strings"));
            Vec::new()
        }
    }
}

fn webhook(
    configuration: &str,
    hook: &Value,
    path: &str,
    mutating: bool,
    causes: &mut Vec<Cause>,
) -> Option<Webhook> {
    let before = causes.len();
    let name = string_or(hook, "name", path, "", causes).to_string();
    if name.is_empty() {
        causes.push(required(format!("{path}.name"), ""));
    } else if !herald_grammar::name::is_dns1123_subdomain(&name) {
        causes.push(invalid(
            &format!("{path}.name"),
            &Value::String(name.clone()),
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, \
             '-' or '.', and must start and end with an alphanumeric character",
        ));
    } else if name.split('.').count() < 3 {
        causes.push(invalid(
            &format!("{path}.name"),
            &Value::String(name.clone()),
            "should be a domain with at least three segments separated by dots",
        ));
    }
    if hook
        .get("matchConditions")
        .is_some_and(|c| c.as_array().is_none_or(|c| !c.is_empty()))
    {
        causes.push(cause(
            format!("{path}.matchConditions"),
            "Forbidden: matchConditions are not supported by the embedded API server (it \
             evaluates no CEL); select with rules, namespaceSelector and objectSelector"
                .into(),
        ));
    }
    let endpoint = endpoint(
        &hook["clientConfig"],
        &format!("{path}.clientConfig"),
        causes,
    );
    let ca_bundle = match &hook["clientConfig"]["caBundle"] {
        Value::Null => Vec::new(),
        Value::String(b64) => base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap_or_else(|e| {
                causes.push(invalid(
                    &format!("{path}.clientConfig.caBundle"),
                    &Value::String("<bytes>".into()),
                    &format!("illegal base64 data: {e}"),
                ));
                Vec::new()
            }),
        other => {
            causes.push(invalid(
                &format!("{path}.clientConfig.caBundle"),
                other,
                "must be base64 bytes",
            ));
            Vec::new()
        }
    };
    let rules = match &hook["rules"] {
        Value::Null => Vec::new(),
        Value::Array(rules) => rules
            .iter()
            .enumerate()
            .map(|(j, r)| rule(r, &format!("{path}.rules[{j}]"), causes))
            .collect(),
        other => {
            causes.push(invalid(&format!("{path}.rules"), other, "must be a list"));
            Vec::new()
        }
    };
    let failure_policy = match string_or(hook, "failurePolicy", path, "Fail", causes) {
        "Fail" => FailurePolicy::Fail,
        "Ignore" => FailurePolicy::Ignore,
        other => {
            causes.push(unsupported(
                format!("{path}.failurePolicy"),
                other,
                &["Fail", "Ignore"],
            ));
            FailurePolicy::Fail
        }
    };
    let match_policy = match string_or(hook, "matchPolicy", path, "Equivalent", causes) {
        "Exact" => MatchPolicy::Exact,
        "Equivalent" => MatchPolicy::Equivalent,
        other => {
            causes.push(unsupported(
                format!("{path}.matchPolicy"),
                other,
                &["Equivalent", "Exact"],
            ));
            MatchPolicy::Equivalent
        }
    };
    if mutating {
        let policy = string_or(hook, "reinvocationPolicy", path, "Never", causes);
        if !matches!(policy, "Never" | "IfNeeded") {
            causes.push(unsupported(
                format!("{path}.reinvocationPolicy"),
                policy,
                &["IfNeeded", "Never"],
            ));
        }
    }
    let side_effects = string_or(hook, "sideEffects", path, "", causes).to_string();
    match side_effects.as_str() {
        "None" | "NoneOnDryRun" => {}
        "" => causes.push(required(
            format!("{path}.sideEffects"),
            "must specify one of None, NoneOnDryRun",
        )),
        other => causes.push(unsupported(
            format!("{path}.sideEffects"),
            other,
            &["None", "NoneOnDryRun"],
        )),
    }
    let review_versions = strings(
        &hook["admissionReviewVersions"],
        &format!("{path}.admissionReviewVersions"),
        causes,
    );
    if review_versions.is_empty() {
        causes.push(required(
            format!("{path}.admissionReviewVersions"),
            "must specify one of v1, v1beta1",
        ));
    } else if !review_versions.iter().any(|v| v == "v1" || v == "v1beta1") {
        causes.push(invalid(
            &format!("{path}.admissionReviewVersions"),
            &Value::from(review_versions.clone()),
            "must include at least one of v1, v1beta1",
        ));
    }
    let timeout = match &hook["timeoutSeconds"] {
        Value::Null => DEFAULT_TIMEOUT,
        v => match v.as_i64() {
            Some(t) if (1..=MAX_TIMEOUT).contains(&t) => t as u64,
            _ => {
                causes.push(invalid(
                    &format!("{path}.timeoutSeconds"),
                    v,
                    "the timeout value must be between 1 and 30 seconds",
                ));
                DEFAULT_TIMEOUT
            }
        },
    };
    let namespace_selector = selector(
        &hook["namespaceSelector"],
        &format!("{path}.namespaceSelector"),
        causes,
    );
    let object_selector = selector(
        &hook["objectSelector"],
        &format!("{path}.objectSelector"),
        causes,
    );
    if causes.len() > before {
        return None;
    }
    Some(Webhook {
        configuration: configuration.to_string(),
        name,
        endpoint: endpoint?,
        ca_bundle,
        rules,
        failure_policy,
        match_policy,
        namespace_selector,
        object_selector,
        side_effects,
        timeout: Duration::from_secs(timeout),
        review_versions,
    })
}

fn endpoint(client: &Value, path: &str, causes: &mut Vec<Cause>) -> Option<Endpoint> {
    match (&client["url"], &client["service"]) {
        (Value::String(url), Value::Null) => {
            let field = format!("{path}.url");
            let shown = Value::String(url.clone());
            let Ok(uri) = url.parse::<http::Uri>() else {
                causes.push(invalid(&field, &shown, "url must be a valid URL"));
                return None;
            };
            let problem = if uri.scheme_str() != Some("https") {
                Some("'https' is the only allowed URL scheme")
            } else if uri.host().is_none_or(str::is_empty) {
                Some("host must be specified")
            } else if uri.authority().is_some_and(|a| a.as_str().contains('@')) {
                Some("user information is not permitted in the URL")
            } else if url.contains('#') {
                Some("fragments are not permitted in the URL")
            } else if uri.query().is_some() {
                Some("query parameters are not permitted in the URL")
            } else {
                None
            };
            match problem {
                Some(p) => {
                    causes.push(invalid(&field, &shown, p));
                    None
                }
                None => Some(Endpoint::Url(url.clone())),
            }
        }
        (Value::Null, Value::Object(service)) => {
            let text = |k: &str| service.get(k).and_then(Value::as_str).unwrap_or_default();
            let (namespace, name) = (text("namespace"), text("name"));
            if name.is_empty() {
                causes.push(required(
                    format!("{path}.service.name"),
                    "service name is required",
                ));
            }
            if namespace.is_empty() {
                causes.push(required(
                    format!("{path}.service.namespace"),
                    "service namespace is required",
                ));
            }
            let port = match service.get("port") {
                None | Some(Value::Null) => 443,
                Some(p) => match p.as_u64() {
                    Some(p @ 1..=65535) => p as u16,
                    _ => {
                        causes.push(invalid(
                            &format!("{path}.service.port"),
                            p,
                            "port is not valid: must be between 1 and 65535, inclusive",
                        ));
                        443
                    }
                },
            };
            let route = match text("path") {
                "" => "/".to_string(),
                p if p.starts_with('/') => p.to_string(),
                p => {
                    causes.push(invalid(
                        &format!("{path}.service.path"),
                        &Value::String(p.into()),
                        "must start with a '/'",
                    ));
                    "/".to_string()
                }
            };
            Some(Endpoint::Service {
                namespace: namespace.to_string(),
                name: name.to_string(),
                path: route,
                port,
            })
        }
        _ => {
            causes.push(required(
                path.to_string(),
                "exactly one of url or service is required",
            ));
            None
        }
    }
}

fn rule(rule: &Value, path: &str, causes: &mut Vec<Cause>) -> Rule {
    let operations = strings(&rule["operations"], &format!("{path}.operations"), causes);
    if operations.is_empty() {
        causes.push(required(format!("{path}.operations"), ""));
    }
    for (i, op) in operations.iter().enumerate() {
        if !matches!(
            op.as_str(),
            "*" | "CREATE" | "UPDATE" | "DELETE" | "CONNECT"
        ) {
            causes.push(unsupported(
                format!("{path}.operations[{i}]"),
                op,
                &["*", "CONNECT", "CREATE", "DELETE", "UPDATE"],
            ));
        }
    }
    let mut list = |key: &str| {
        let items = strings(&rule[key], &format!("{path}.{key}"), causes);
        if items.is_empty() {
            causes.push(required(format!("{path}.{key}"), ""));
        }
        items
    };
    let api_groups = list("apiGroups");
    let api_versions = list("apiVersions");
    let resources = list("resources");
    let scope = match rule["scope"].as_str() {
        None | Some("*") => Scope::All,
        Some("Cluster") => Scope::Cluster,
        Some("Namespaced") => Scope::Namespaced,
        Some(other) => {
            causes.push(unsupported(
                format!("{path}.scope"),
                other,
                &["*", "Cluster", "Namespaced"],
            ));
            Scope::All
        }
    };
    Rule {
        operations,
        api_groups,
        api_versions,
        resources,
        scope,
    }
}

/// A `metav1.LabelSelector` (`matchLabels` and `matchExpressions`) as a selector; absent or
/// empty, one that selects everything.
pub(crate) fn selector(value: &Value, path: &str, causes: &mut Vec<Cause>) -> LabelSelector {
    let mut requirements = Vec::new();
    if let Some(labels) = value["matchLabels"].as_object() {
        for (key, v) in labels {
            requirements.push(Requirement {
                key: key.clone(),
                operator: Operator::Equals,
                values: vec![v.as_str().unwrap_or_default().to_string()],
            });
        }
    }
    if let Some(expressions) = value["matchExpressions"].as_array() {
        for (i, e) in expressions.iter().enumerate() {
            let at = format!("{path}.matchExpressions[{i}]");
            let values = strings(&e["values"], &format!("{at}.values"), causes);
            let op = e["operator"].as_str().unwrap_or_default();
            let operator = match op {
                "In" => Operator::In,
                "NotIn" => Operator::NotIn,
                "Exists" => Operator::Exists,
                "DoesNotExist" => Operator::DoesNotExist,
                other => {
                    causes.push(unsupported(
                        format!("{at}.operator"),
                        other,
                        &["DoesNotExist", "Exists", "In", "NotIn"],
                    ));
                    continue;
                }
            };
            let listed = matches!(operator, Operator::In | Operator::NotIn);
            if listed && values.is_empty() {
                causes.push(required(
                    format!("{at}.values"),
                    "must be specified when `operator` is 'In' or 'NotIn'",
                ));
            } else if !listed && !values.is_empty() {
                causes.push(cause(
                    format!("{at}.values"),
                    "Forbidden: may not be specified when `operator` is 'Exists' or \
                     'DoesNotExist'"
                        .into(),
                ));
            }
            requirements.push(Requirement {
                key: e["key"].as_str().unwrap_or_default().to_string(),
                operator,
                values,
            });
        }
    }
    LabelSelector { requirements }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config(hook: Value) -> Value {
        json!({"metadata": {"name": "policy"}, "webhooks": [hook]})
    }

    fn minimal() -> Value {
        json!({
            "name": "check.herald.example",
            "clientConfig": {"url": "https://127.0.0.1:8443/check"},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                       "resources": ["configmaps"]}],
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        })
    }

    fn problems(hook: Value) -> Vec<String> {
        check(&config(hook), true)
            .into_iter()
            .map(|(f, _, p)| format!("{f}: {p}"))
            .collect()
    }

    #[test]
    fn a_minimal_webhook_gets_the_real_servers_defaults() {
        let hooks = webhooks(&config(minimal()), true).unwrap();
        let hook = &hooks[0];
        assert_eq!(hook.configuration, "policy");
        assert_eq!(hook.failure_policy, FailurePolicy::Fail);
        assert_eq!(hook.match_policy, MatchPolicy::Equivalent);
        assert_eq!(hook.timeout, Duration::from_secs(10));
        assert!(hook.namespace_selector.is_empty() && hook.object_selector.is_empty());
        assert_eq!(hook.rules[0].scope, Scope::All);
    }

    #[test]
    fn match_conditions_are_refused_naming_the_field() {
        let mut hook = minimal();
        hook["matchConditions"] = json!([{"name": "x", "expression": "true"}]);
        let found = problems(hook);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].starts_with(
                "webhooks[0].matchConditions: Forbidden: matchConditions are not supported"
            ),
            "{found:?}"
        );
    }

    #[test]
    fn side_effects_other_than_none_are_refused_as_v1_refuses_them() {
        let mut hook = minimal();
        hook["sideEffects"] = json!("Some");
        assert_eq!(
            problems(hook),
            [
                r#"webhooks[0].sideEffects: Unsupported value: "Some": supported values: "None", "NoneOnDryRun""#
            ]
        );
        let mut hook = minimal();
        hook.as_object_mut().unwrap().remove("sideEffects");
        assert_eq!(
            problems(hook),
            ["webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun"]
        );
    }

    #[test]
    fn urls_must_be_https_without_query_and_timeouts_at_most_thirty_seconds() {
        let mut hook = minimal();
        hook["clientConfig"]["url"] = json!("http://127.0.0.1/check");
        hook["timeoutSeconds"] = json!(31);
        assert_eq!(
            problems(hook),
            [
                r#"webhooks[0].clientConfig.url: Invalid value: "http://127.0.0.1/check": 'https' is the only allowed URL scheme"#,
                "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds",
            ]
        );
        let mut hook = minimal();
        hook["clientConfig"]["url"] = json!("https://127.0.0.1/check?x=1");
        assert_eq!(problems(hook).len(), 1);
    }

    #[test]
    fn names_need_three_segments_and_must_be_unique() {
        let mut short = minimal();
        short["name"] = json!("check.example");
        assert_eq!(
            problems(short),
            [
                r#"webhooks[0].name: Invalid value: "check.example": should be a domain with at least three segments separated by dots"#
            ]
        );
        let twice = json!({"metadata": {"name": "p"}, "webhooks": [minimal(), minimal()]});
        let found: Vec<String> = check(&twice, false).into_iter().map(|c| c.2).collect();
        assert_eq!(found, [r#"Duplicate value: "check.herald.example""#]);
    }

    #[test]
    fn selectors_read_match_labels_and_expressions() {
        let mut causes = Vec::new();
        let sel = selector(
            &json!({"matchLabels": {"team": "a"},
                    "matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["prod"]}]}),
            "s",
            &mut causes,
        );
        assert!(causes.is_empty());
        assert_eq!(sel.to_string(), "team=a,env notin (prod)");
        selector(
            &json!({"matchExpressions": [{"key": "env", "operator": "Near"}]}),
            "s",
            &mut causes,
        );
        assert_eq!(causes.len(), 1);
    }

    #[test]
    fn a_service_reference_defaults_its_port_and_path() {
        let mut hook = minimal();
        hook["clientConfig"] = json!({"service": {"namespace": "herald", "name": "admission"}});
        let hooks = webhooks(&config(hook), false).unwrap();
        assert_eq!(
            hooks[0].endpoint,
            Endpoint::Service {
                namespace: "herald".into(),
                name: "admission".into(),
                path: "/".into(),
                port: 443
            }
        );
    }
}
