//! The handler against the SDK's test host: which applies it makes, exactly.

use herald_sdk::k8s_openapi::api::core::v1::{NamespaceStatus, ResourceQuotaSpec};
use herald_sdk::k8s_openapi::api::networking::v1::{NetworkPolicyIngressRule, NetworkPolicySpec};
use herald_sdk::k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use herald_sdk::k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, Time};
use herald_sdk::kube::{KubeError, Verb};
use herald_sdk::testing::{self, KubeCall};

use super::*;

fn namespace(name: &str) -> Namespace {
    Namespace {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some([("team".to_owned(), "a".to_owned())].into()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    }
}

fn managed(name: &str, namespace: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: Some(namespace.into()),
        labels: Some([(MANAGED_BY.0.to_owned(), MANAGED_BY.1.to_owned())].into()),
        resource_version: Some("10".into()),
        ..ObjectMeta::default()
    }
}

/// The NetworkPolicy as the server stores the plugin's apply.
fn policy(namespace: &str) -> NetworkPolicy {
    NetworkPolicy {
        metadata: managed("herald-default-deny", namespace),
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(LabelSelector::default()),
            policy_types: Some(vec!["Ingress".into(), "Egress".into()]),
            ..NetworkPolicySpec::default()
        }),
    }
}

/// The ResourceQuota as the server stores the plugin's apply.
fn quota(namespace: &str) -> ResourceQuota {
    ResourceQuota {
        metadata: managed("herald-default-quota", namespace),
        spec: Some(ResourceQuotaSpec {
            hard: Some(
                [
                    ("pods", "20"),
                    ("requests.cpu", "4"),
                    ("requests.memory", "8Gi"),
                ]
                .map(|(resource, value)| (resource.to_owned(), Quantity(value.to_owned())))
                .into(),
            ),
            ..ResourceQuotaSpec::default()
        }),
        status: None,
    }
}

fn policy_apply(namespace: &str) -> Value {
    json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "herald-default-deny", "namespace": namespace,
                     "labels": {"app.kubernetes.io/managed-by": "herald.namespace-defaults"}},
        "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"], "ingress": [], "egress": []},
    })
}

fn quota_apply(namespace: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "herald-default-quota", "namespace": namespace,
                     "labels": {"app.kubernetes.io/managed-by": "herald.namespace-defaults"}},
        "spec": {"hard": {"pods": "20", "requests.cpu": "4", "requests.memory": "8Gi"}},
    })
}

/// The applies made since the last call, as (target, body), each checked to
/// be forced; reads are dropped.
fn applies() -> Vec<(String, Value)> {
    testing::take_writes()
        .into_iter()
        .filter(|call| call.verb != Verb::Get)
        .map(|call: KubeCall| {
            assert_eq!(call.verb, Verb::Apply, "{call:?}");
            assert!(call.force, "applies are forced: {call:?}");
            (call.target.to_string(), call.body.unwrap())
        })
        .collect()
}

/// The info and warn lines logged since the last call (debug lines say
/// what was left unchanged).
fn messages() -> Vec<String> {
    testing::take_logs()
        .into_iter()
        .filter(|line| line.level >= herald_sdk::log::Level::Info)
        .map(|line| line.message)
        .collect()
}

/// A fresh test host that has subscribed to the three kinds.
fn host() {
    testing::reset();
    testing::subscribe(herald_sdk::GroupVersionKind::of::<Namespace>());
    testing::subscribe(herald_sdk::GroupVersionKind::of::<NetworkPolicy>());
    testing::subscribe(herald_sdk::GroupVersionKind::of::<ResourceQuota>());
}

#[test]
fn manifest_declares_get_and_apply_on_both_kinds() {
    testing::reset();
    testing::set_config(r#"{"namespaceSelector": "team", "networkPolicy": {"name": "deny"}}"#);
    let manifest = NamespaceDefaults::manifest();
    assert_eq!(manifest.name, "namespace-defaults");
    let selectors: Vec<(&str, Option<&str>, Option<&str>)> = manifest
        .subscriptions
        .iter()
        .map(|subscription| {
            (
                subscription.kind.kind.as_str(),
                subscription.label_selector.as_deref(),
                subscription.field_selector.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        selectors,
        [
            ("Namespace", Some("team"), None),
            ("NetworkPolicy", None, Some("metadata.name=deny")),
            (
                "ResourceQuota",
                None,
                Some("metadata.name=herald-default-quota")
            ),
        ]
    );
    assert_eq!(
        manifest.writes,
        [
            WriteRule::for_kind("networking.k8s.io", "NetworkPolicy")
                .verbs([Verb::Get, Verb::Apply])
                .namespaces(["*"]),
            WriteRule::for_kind("", "ResourceQuota")
                .verbs([Verb::Get, Verb::Apply])
                .namespaces(["*"]),
        ]
    );
    assert!(manifest.capabilities.is_empty());
}

#[test]
fn a_new_namespace_gets_both_objects_applied() {
    host();
    NamespaceDefaults::default()
        .on_add(&testing::added(&namespace("team-a")))
        .unwrap();
    assert_eq!(
        applies(),
        [
            (
                "networking.k8s.io/v1/NetworkPolicy team-a/herald-default-deny".to_owned(),
                policy_apply("team-a")
            ),
            (
                "v1/ResourceQuota team-a/herald-default-quota".to_owned(),
                quota_apply("team-a")
            ),
        ]
    );
    assert_eq!(
        messages(),
        [
            "applied kind=NetworkPolicy object=team-a/herald-default-deny reason=namespace resourceVersion=-",
            "applied kind=ResourceQuota object=team-a/herald-default-quota reason=namespace resourceVersion=-",
        ]
    );
}

#[test]
fn configured_names_and_limits_are_applied() {
    host();
    testing::set_config(
        r#"{"networkPolicy": {"name": "deny"}, "resourceQuota": {"name": "q", "hard": {"pods": "3"}}}"#,
    );
    NamespaceDefaults::default()
        .on_add(&testing::added(&namespace("team-a")))
        .unwrap();
    let applies = applies();
    assert_eq!(
        applies[0].0,
        "networking.k8s.io/v1/NetworkPolicy team-a/deny"
    );
    assert_eq!(applies[1].0, "v1/ResourceQuota team-a/q");
    assert_eq!(applies[1].1["spec"], json!({"hard": {"pods": "3"}}));
}

#[test]
fn nothing_is_written_when_the_objects_already_match() {
    host();
    testing::cache_insert(&policy("team-a"));
    // Not cached: read from the API server, which has it as wanted.
    testing::respond(
        Verb::Get,
        "ResourceQuota team-a/herald-default-quota",
        Ok(herald_sdk::serde_json::to_value(quota("team-a")).unwrap()),
    );
    let mut plugin = NamespaceDefaults::default();
    plugin
        .on_add(&testing::added(&namespace("team-a")))
        .unwrap();
    plugin
        .on_update(&testing::resynced(&namespace("team-a")))
        .unwrap();
    plugin.on_add(&testing::added(&policy("team-a"))).unwrap();
    let calls = testing::take_writes();
    assert!(
        calls.iter().all(|call| call.verb == Verb::Get),
        "{calls:#?}"
    );
    assert_eq!(calls.len(), 2, "one read per namespace notification");
    assert!(messages().is_empty());
}

#[test]
fn excluded_and_terminating_namespaces_are_left_alone() {
    host();
    let mut plugin = NamespaceDefaults::default();
    plugin
        .on_add(&testing::added(&namespace("kube-system")))
        .unwrap();
    let mut leaving = namespace("team-a");
    leaving.status = Some(NamespaceStatus {
        phase: Some("Terminating".into()),
        ..NamespaceStatus::default()
    });
    plugin
        .on_update(&testing::updated(&namespace("team-a"), &leaving))
        .unwrap();
    let mut deleted = namespace("team-b");
    deleted.metadata.deletion_timestamp = Some(Time(Default::default()));
    plugin.on_add(&testing::added(&deleted)).unwrap();
    assert_eq!(testing::take_writes(), []);
}

#[test]
fn a_deleted_policy_comes_back_while_its_namespace_is_selected() {
    host();
    testing::cache_insert(&namespace("team-a"));
    let mut plugin = NamespaceDefaults::default();
    plugin
        .on_delete(&testing::deleted(&policy("team-a")))
        .unwrap();
    assert_eq!(
        applies(),
        [(
            "networking.k8s.io/v1/NetworkPolicy team-a/herald-default-deny".to_owned(),
            policy_apply("team-a")
        )]
    );
    assert_eq!(
        messages(),
        [
            "applied kind=NetworkPolicy object=team-a/herald-default-deny reason=deleted resourceVersion=-"
        ]
    );

    // Not selected (absent from the cache), or being deleted: no repair.
    plugin
        .on_delete(&testing::deleted(&quota("team-b")))
        .unwrap();
    let mut leaving = namespace("team-a");
    leaving.metadata.deletion_timestamp = Some(Time(Default::default()));
    testing::cache_insert(&leaving);
    plugin
        .on_delete(&testing::deleted(&quota("team-a")))
        .unwrap();
    assert_eq!(testing::take_writes(), []);
}

#[test]
fn drift_is_repaired_and_other_objects_ignored() {
    host();
    testing::cache_insert(&namespace("team-a"));
    let mut plugin = NamespaceDefaults::default();

    let mut opened = policy("team-a");
    opened.spec.as_mut().unwrap().ingress = Some(vec![NetworkPolicyIngressRule::default()]);
    plugin
        .on_update(&testing::updated(&policy("team-a"), &opened))
        .unwrap();

    let mut raised = quota("team-a");
    let hard = raised.spec.as_mut().unwrap().hard.as_mut().unwrap();
    hard.insert("pods".into(), Quantity("200".into()));
    plugin
        .on_update(&testing::updated(&quota("team-a"), &raised))
        .unwrap();

    // A limit someone else added is theirs: not drift.
    let mut extended = quota("team-a");
    let hard = extended.spec.as_mut().unwrap().hard.as_mut().unwrap();
    hard.insert("secrets".into(), Quantity("10".into()));
    plugin
        .on_update(&testing::updated(&quota("team-a"), &extended))
        .unwrap();

    // Another NetworkPolicy in the namespace is none of its business.
    let mut other = opened.clone();
    other.metadata.name = Some("allow-web".into());
    plugin.on_add(&testing::added(&other)).unwrap();

    let targets: Vec<String> = applies().into_iter().map(|(target, _)| target).collect();
    assert_eq!(
        targets,
        [
            "networking.k8s.io/v1/NetworkPolicy team-a/herald-default-deny",
            "v1/ResourceQuota team-a/herald-default-quota",
        ]
    );
    let messages = messages();
    assert!(
        messages.iter().all(|line| line.contains("reason=drifted")),
        "{messages:?}"
    );
}

#[test]
fn a_removed_label_is_drift() {
    host();
    testing::cache_insert(&namespace("team-a"));
    let mut unlabelled = policy("team-a");
    unlabelled.metadata.labels = None;
    NamespaceDefaults::default()
        .on_update(&testing::updated(&policy("team-a"), &unlabelled))
        .unwrap();
    assert_eq!(applies().len(), 1);
}

#[test]
fn retryable_failures_fail_the_call_and_permanent_ones_are_logged() {
    host();
    testing::respond_once(
        Verb::Apply,
        "NetworkPolicy *",
        Err(KubeError::Unavailable("down".into())),
    );
    let error = NamespaceDefaults::default()
        .on_add(&testing::added(&namespace("team-a")))
        .unwrap_err();
    assert_eq!(
        error.message(),
        "applying NetworkPolicy team-a/herald-default-deny: unavailable: down"
    );

    testing::respond(
        Verb::Apply,
        "*",
        Err(KubeError::NotGranted(
            "no rule grants apply on networking.k8s.io/NetworkPolicy".into(),
        )),
    );
    messages();
    NamespaceDefaults::default()
        .on_add(&testing::added(&namespace("team-b")))
        .unwrap();
    let messages = messages();
    assert_eq!(
        messages[0],
        "failed kind=NetworkPolicy object=team-b/herald-default-deny reason=namespace outcome=not-granted detail=no rule grants apply on networking.k8s.io/NetworkPolicy"
    );
    assert_eq!(
        messages.len(),
        2,
        "the quota is still attempted: {messages:?}"
    );
}

#[test]
fn the_answer_s_resource_version_is_logged() {
    host();
    let mut stored = policy_apply("team-a");
    stored["metadata"]["resourceVersion"] = json!("77");
    testing::respond(Verb::Apply, "NetworkPolicy *", Ok(stored));
    NamespaceDefaults::default()
        .on_add(&testing::added(&namespace("team-a")))
        .unwrap();
    assert!(messages()[0].ends_with("resourceVersion=77"));
}

#[test]
fn with_default_labels_a_created_namespace_gets_those_it_lacks() {
    testing::reset();
    testing::set_config(r#"{"defaultLabels": {"cost-center": "unassigned", "team": "none"}}"#);
    let manifest = NamespaceDefaults::manifest();
    let webhook = manifest.mutating.as_ref().expect("a mutating webhook");
    assert_eq!(webhook.failure_policy, FailurePolicy::Ignore);
    assert!(manifest.validating.is_none());
    let mut plugin = NamespaceDefaults::default();
    // `team` is set already: only `cost-center` is filled in.
    let mutation = plugin
        .mutate(&testing::creating(&namespace("team-a")))
        .unwrap();
    assert!(mutation.verdict.allowed);
    let herald_sdk::admission::Change::Object(json) = &mutation.change else {
        panic!("the changed object: {:?}", mutation.change)
    };
    let changed: Namespace = herald_sdk::serde_json::from_value(json.clone()).unwrap();
    let labels = changed.metadata.labels.unwrap();
    assert_eq!(labels["cost-center"], "unassigned");
    assert_eq!(labels["team"], "a", "a label of its own is kept");
    assert_eq!(
        messages(),
        ["defaulted namespace=team-a labels=cost-center=unassigned"]
    );
    // Nothing to fill in, or an excluded namespace: no change.
    let mut labelled = namespace("team-b");
    labelled
        .metadata
        .labels
        .as_mut()
        .unwrap()
        .insert("cost-center".into(), "shop".into());
    let unchanged = plugin.mutate(&testing::creating(&labelled)).unwrap();
    assert!(matches!(
        unchanged.change,
        herald_sdk::admission::Change::None
    ));
    let excluded = plugin
        .mutate(&testing::creating(&namespace("kube-system")))
        .unwrap();
    assert!(matches!(
        excluded.change,
        herald_sdk::admission::Change::None
    ));
}

#[test]
fn without_default_labels_it_admits_nothing() {
    testing::reset();
    let manifest = NamespaceDefaults::manifest();
    assert!(manifest.mutating.is_none() && manifest.validating.is_none());
}
