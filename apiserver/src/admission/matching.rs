//! Which webhooks a request calls: the rules (operations, groups, versions, resources with
//! their subresources, scope), `matchPolicy`, and the namespace and object selectors, as
//! kube-apiserver decides it (`admission/plugin/webhook/predicates/{rules,namespace,object}`
//! and `generic/webhook.go`'s `ShouldCallHook`).
//!
//! `matchPolicy: Equivalent` is followed between the versions one resource is served at (a
//! CRD's): the webhook is called with the object at the version its rule names. The one
//! equivalence between resources of different groups this server has, `events.k8s.io/v1`
//! Events stored as core `v1` Events, is not followed: there each resource is matched
//! exactly.

use serde_json::{Map, Value};

use super::config::{MatchPolicy, Rule, Scope, Webhook};
use crate::selector::LabelSelector;

/// An admission operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operation {
    /// A create (or a server-side apply creating).
    Create,
    /// An update, patch or apply, or a subresource write.
    Update,
    /// A delete.
    Delete,
}

impl Operation {
    /// The wire name (`CREATE`).
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
        }
    }
}

/// What a request is, as admission sees it (kube-apiserver's `admission.Attributes`).
#[derive(Debug, Clone)]
pub(crate) struct Attributes {
    /// The operation.
    pub operation: Operation,
    /// The resource's group (`""` for core).
    pub group: String,
    /// The version of the request.
    pub version: String,
    /// The plural resource name.
    pub resource: String,
    /// The subresource (`status`), or empty.
    pub subresource: String,
    /// The kind of the object.
    pub kind: String,
    /// The namespace: empty for cluster-scoped objects, a Namespace's own name for one.
    pub namespace: String,
    /// The object's name (empty for a create by `generateName`).
    pub name: String,
    /// The versions the resource is served at (for `matchPolicy: Equivalent`).
    pub served_versions: Vec<String>,
    /// `dryRun=All`.
    pub dry_run: bool,
    /// The `CreateOptions`, `UpdateOptions` or `DeleteOptions` of the request.
    pub options: Value,
}

impl Attributes {
    /// Whether the request is about a Namespace object itself.
    pub fn is_namespace(&self) -> bool {
        self.group.is_empty() && self.resource == "namespaces"
    }
}

fn exact_or_wildcard(items: &[String], requested: &str) -> bool {
    items.iter().any(|i| i == "*" || i == requested)
}

impl Rule {
    /// Whether the rule matches the request at `version`.
    fn matches(&self, attrs: &Attributes, version: &str) -> bool {
        let scope = match self.scope {
            Scope::All => true,
            // A Namespace is cluster-scoped though its requests carry its name as namespace.
            Scope::Namespaced => !attrs.is_namespace() && !attrs.namespace.is_empty(),
            Scope::Cluster => attrs.is_namespace() || attrs.namespace.is_empty(),
        };
        let operation = self
            .operations
            .iter()
            .any(|o| o == "*" || o == attrs.operation.as_str());
        let resource = self.resources.iter().any(|r| {
            let (res, sub) = r.split_once('/').unwrap_or((r, ""));
            (res == "*" || res == attrs.resource) && (sub == "*" || sub == attrs.subresource)
        });
        scope
            && operation
            && exact_or_wildcard(&self.api_groups, &attrs.group)
            && exact_or_wildcard(&self.api_versions, version)
            && resource
    }
}

/// The version a webhook is to be called at, if one of its rules matches the request:
/// the request's own, else (with `matchPolicy: Equivalent`) the first other served version
/// a rule names, rules taken in order.
pub(crate) fn invocation_version(hook: &Webhook, attrs: &Attributes) -> Option<String> {
    if hook.rules.iter().any(|r| r.matches(attrs, &attrs.version)) {
        return Some(attrs.version.clone());
    }
    if hook.match_policy != MatchPolicy::Equivalent {
        return None;
    }
    hook.rules.iter().find_map(|r| {
        attrs
            .served_versions
            .iter()
            .filter(|v| **v != attrs.version)
            .find(|v| r.matches(attrs, v))
            .cloned()
    })
}

/// Whether the namespace selector applies at all: every cluster-scoped object but a
/// Namespace is called whatever the selector says, as on the real server.
pub(crate) fn namespace_selector_applies(hook: &Webhook, attrs: &Attributes) -> bool {
    !hook.namespace_selector.is_empty() && (!attrs.namespace.is_empty() || attrs.is_namespace())
}

/// Whether `labels` (of the request's namespace) pass the webhook's namespace selector.
pub(crate) fn namespace_selected(hook: &Webhook, labels: Option<&Map<String, Value>>) -> bool {
    hook.namespace_selector.matches_json(labels)
}

/// Whether the object selector passes the new object's labels or the old object's, as on
/// the real server (a delete has only the old one, a create only the new one).
pub(crate) fn object_selected(
    selector: &LabelSelector,
    object: Option<&Value>,
    old: Option<&Value>,
) -> bool {
    selector.is_empty()
        || [object, old]
            .into_iter()
            .flatten()
            .any(|o| selector.matches_json(crate::object::labels(o)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::config;
    use serde_json::json;

    fn hook(rules: Value, extra: Value) -> Webhook {
        let mut h = json!({
            "name": "check.herald.example",
            "clientConfig": {"url": "https://127.0.0.1/"},
            "rules": rules,
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        });
        for (k, v) in extra.as_object().unwrap() {
            h[k] = v.clone();
        }
        let cfg = json!({"metadata": {"name": "c"}, "webhooks": [h]});
        config::webhooks(&cfg, true).unwrap().remove(0)
    }

    fn rule(ops: &[&str], groups: &[&str], versions: &[&str], resources: &[&str]) -> Value {
        json!([{"operations": ops, "apiGroups": groups, "apiVersions": versions, "resources": resources}])
    }

    fn attrs(op: Operation, resource: &str, sub: &str, namespace: &str) -> Attributes {
        Attributes {
            operation: op,
            group: String::new(),
            version: "v1".into(),
            resource: resource.into(),
            subresource: sub.into(),
            kind: "Pod".into(),
            namespace: namespace.into(),
            name: "web".into(),
            served_versions: vec!["v1".into()],
            dry_run: false,
            options: Value::Null,
        }
    }

    #[test]
    fn resources_match_with_their_subresources_and_wildcards() {
        let update = |sub| attrs(Operation::Update, "pods", sub, "shop");
        let pods = hook(rule(&["UPDATE"], &[""], &["v1"], &["pods"]), json!({}));
        assert!(invocation_version(&pods, &update("")).is_some());
        assert!(invocation_version(&pods, &update("status")).is_none());
        let status = hook(rule(&["*"], &["*"], &["*"], &["pods/status"]), json!({}));
        assert!(invocation_version(&status, &update("status")).is_some());
        assert!(invocation_version(&status, &update("")).is_none());
        let all = hook(rule(&["*"], &["*"], &["*"], &["*/*"]), json!({}));
        assert!(invocation_version(&all, &update("status")).is_some());
        assert!(invocation_version(&all, &update("")).is_some());
        let main_only = hook(rule(&["*"], &["*"], &["*"], &["*"]), json!({}));
        assert!(invocation_version(&main_only, &update("status")).is_none());
    }

    #[test]
    fn operations_groups_and_versions_must_match() {
        let h = hook(rule(&["CREATE"], &["apps"], &["v1"], &["pods"]), json!({}));
        assert!(invocation_version(&h, &attrs(Operation::Create, "pods", "", "a")).is_none());
        let h = hook(rule(&["CREATE"], &[""], &["v1"], &["pods"]), json!({}));
        assert!(invocation_version(&h, &attrs(Operation::Delete, "pods", "", "a")).is_none());
        assert!(invocation_version(&h, &attrs(Operation::Create, "pods", "", "a")).is_some());
    }

    #[test]
    fn scope_treats_namespaces_as_cluster_scoped() {
        let mut r = rule(&["*"], &["*"], &["*"], &["*"]);
        r[0]["scope"] = json!("Namespaced");
        let namespaced = hook(r.clone(), json!({}));
        r[0]["scope"] = json!("Cluster");
        let cluster = hook(r, json!({}));
        let ns = attrs(Operation::Create, "namespaces", "", "shop");
        let pod = attrs(Operation::Create, "pods", "", "shop");
        let node = attrs(Operation::Create, "nodes", "", "");
        assert!(invocation_version(&namespaced, &ns).is_none());
        assert!(invocation_version(&cluster, &ns).is_some());
        assert!(invocation_version(&namespaced, &pod).is_some());
        assert!(invocation_version(&cluster, &pod).is_none());
        assert!(invocation_version(&cluster, &node).is_some());
    }

    #[test]
    fn equivalent_finds_another_served_version_and_exact_does_not() {
        let mut a = attrs(Operation::Create, "widgets", "", "a");
        a.group = "example.com".into();
        a.version = "v2".into();
        a.served_versions = vec!["v2".into(), "v1".into()];
        let rules = rule(&["CREATE"], &["example.com"], &["v1"], &["widgets"]);
        let equivalent = hook(rules.clone(), json!({}));
        assert_eq!(invocation_version(&equivalent, &a).as_deref(), Some("v1"));
        let exact = hook(rules, json!({"matchPolicy": "Exact"}));
        assert_eq!(invocation_version(&exact, &a), None);
    }

    #[test]
    fn the_namespace_selector_skips_cluster_scoped_objects_but_not_namespaces() {
        let h = hook(
            rule(&["*"], &["*"], &["*"], &["*"]),
            json!({"namespaceSelector": {"matchLabels": {"team": "a"}}}),
        );
        assert!(!namespace_selector_applies(
            &h,
            &attrs(Operation::Create, "nodes", "", "")
        ));
        assert!(namespace_selector_applies(
            &h,
            &attrs(Operation::Create, "namespaces", "", "shop")
        ));
        assert!(namespace_selected(&h, json!({"team": "a"}).as_object()));
        assert!(!namespace_selected(&h, None));
    }

    #[test]
    fn the_object_selector_passes_on_either_the_old_or_the_new_labels() {
        let mut causes = Vec::new();
        let sel = config::selector(&json!({"matchLabels": {"watch": "yes"}}), "s", &mut causes);
        let labelled = json!({"metadata": {"labels": {"watch": "yes"}}});
        let plain = json!({"metadata": {}});
        assert!(object_selected(&sel, Some(&plain), Some(&labelled)));
        assert!(object_selected(&sel, None, Some(&labelled)));
        assert!(!object_selected(&sel, Some(&plain), None));
        assert!(object_selected(&LabelSelector::default(), None, None));
    }
}
