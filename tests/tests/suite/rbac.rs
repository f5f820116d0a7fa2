//! RBAC derived from what plugins watch (`herald plugin rbac`): the
//! ClusterRole shipped in `deploy/` is exactly the one generated for the
//! shipped plugins, and custom resources resolve through discovery.

use crate::deploy::one;
use herald::discovery::{KindError, KindResolver, Resolver};
use herald::gvk::Gvk;
use herald::rbac::{cluster_role, watched_resources};
use herald_tests::{artifacts, load};
use k8s_openapi::api::rbac::v1::ClusterRole;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, PostParams};

/// The plugins the Dockerfile puts in the plugin image, as (package, path).
const SHIPPED: [(&str, &str); 3] = [
    ("pod-lifecycle", artifacts::POD_LIFECYCLE),
    ("image-policy", artifacts::IMAGE_POLICY),
    ("rollout-watch", artifacts::ROLLOUT_WATCH),
];

#[tokio::test]
async fn the_deploy_cluster_role_is_what_plugin_rbac_generates_for_the_shipped_plugins() {
    let manifests: Vec<_> = SHIPPED
        .iter()
        .map(|(_, path)| load(path, None).0.manifest().clone())
        .collect();
    let resources = watched_resources(&manifests, &KindResolver::Builtin)
        .await
        .expect("the shipped plugins watch built-in kinds");
    let deployed: ClusterRole = one();
    let name = deployed.metadata.name.clone().unwrap();
    let generated = cluster_role(&name, &resources, &Default::default());
    assert_eq!(
        deployed.rules, generated.rules,
        "deploy/10-rbac.yaml's ClusterRole differs from `herald plugin rbac` for the shipped plugins: regenerate it"
    );
    // Sanity: the generated role grants list/watch and nothing that writes.
    for rule in generated.rules.unwrap() {
        for verb in &rule.verbs {
            assert!(["list", "watch", "get"].contains(&verb.as_str()), "{verb}");
        }
    }
}

#[test]
fn the_dockerfile_ships_the_plugins_the_cluster_role_was_derived_for() {
    let dockerfile = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../Dockerfile"))
        .expect("reading the Dockerfile");
    for (package, _) in SHIPPED {
        assert!(
            dockerfile.contains(&format!("-p {package}")),
            "the Dockerfile does not build {package} into the plugin image"
        );
    }
}

#[tokio::test]
async fn a_custom_resource_resolves_through_discovery_and_not_without_it() {
    let server = herald_apiserver::start(herald_apiserver::ApiServerConfig::default())
        .await
        .expect("embedded API server");
    let client = kube::Client::try_from(kube::Config::new(server.url().parse().unwrap())).unwrap();
    // A plural no rule could guess from the kind.
    let crd: CustomResourceDefinition = serde_json::from_value(serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gizmos.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gadget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                          "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]
        }
    }))
    .unwrap();
    Api::<CustomResourceDefinition>::all(client.clone())
        .create(&PostParams::default(), &crd)
        .await
        .expect("creating the CRD");
    let gadget = Gvk::new("example.com", "v1", "Gadget");

    let resolved = KindResolver::Discovery(Resolver::new(client))
        .resolve("gadget-watch", &gadget)
        .await
        .expect("discovery finds the CRD's resource");
    assert_eq!(resolved.group, "example.com");
    assert_eq!(resolved.resource, "gizmos");

    match KindResolver::Builtin.resolve("gadget-watch", &gadget).await {
        Err(err @ KindError::UnknownKind { .. }) => {
            let message = err.to_string();
            assert!(
                message.contains("gadget-watch") && message.contains("--kubeconfig"),
                "{message}"
            );
        }
        other => panic!("a custom kind must not resolve without discovery: {other:?}"),
    }
    server.shutdown().await;
}

#[tokio::test]
async fn plugins_that_act_get_exactly_the_verbs_they_declare() {
    use herald::capability::Grants;
    use herald::discovery::GroupResource;
    use herald::plugin::LoadOptions;
    use herald::rbac::write_verbs;
    let declared = |path: &str, config: Option<serde_json::Value>| {
        herald_tests::load_with(
            path,
            LoadOptions {
                config: config.map(|c| c.to_string()),
                grants: Grants::all_declared(),
                ..LoadOptions::default()
            },
        )
        .0
        .manifest()
        .clone()
    };
    let manifests = [
        declared(artifacts::NAMESPACE_DEFAULTS, None),
        declared(
            artifacts::IMAGE_POLICY,
            Some(serde_json::json!({"enforce": true})),
        ),
    ];
    let verbs = write_verbs(&manifests, &KindResolver::Builtin)
        .await
        .expect("built-in kinds");
    let of = |group: &str, resource: &str| -> Vec<&str> {
        verbs[&GroupResource::new(group, resource)]
            .iter()
            .copied()
            .collect()
    };
    // apply is a patch that may create; BTreeSet order.
    assert_eq!(
        of("networking.k8s.io", "networkpolicies"),
        ["create", "get", "patch"]
    );
    assert_eq!(of("", "resourcequotas"), ["create", "get", "patch"]);
    assert_eq!(of("", "pods"), ["patch"]);
    assert_eq!(of("events.k8s.io", "events"), ["create", "patch"]);
    assert_eq!(verbs.len(), 4, "nothing else: {verbs:?}");
}
