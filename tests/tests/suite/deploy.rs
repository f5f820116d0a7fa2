//! The `deploy/` manifests: every document parses into its k8s-openapi type
//! with no field dropped on the way (a misspelt field would be), the
//! Deployment is as locked down as the README says, the pieces agree with
//! each other and with the configuration, and the whole set applies to the
//! embedded API server.

use herald::config::Config;
use herald::logging::LogFormat;
use herald::source::SourceKind;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{
    ConfigMap, Container, Namespace, PodSpec, Service, ServiceAccount,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::discovery::Scope;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::PathBuf;

/// One YAML document of `deploy/`.
pub struct Document {
    /// File it came from, for messages.
    pub file: String,
    /// The document as written.
    pub value: Value,
}

impl Document {
    fn kind(&self) -> &str {
        self.value["kind"].as_str().unwrap_or_default()
    }

    fn api_version(&self) -> &str {
        self.value["apiVersion"].as_str().unwrap_or_default()
    }

    fn name(&self) -> &str {
        self.value["metadata"]["name"].as_str().unwrap_or_default()
    }

    /// Parses into `K`, failing if re-serializing loses or changes anything
    /// (k8s-openapi ignores unknown fields, so a misspelt one would vanish).
    pub fn parse<K: DeserializeOwned + Serialize>(&self) -> K {
        let typed: K = serde_json::from_value(self.value.clone())
            .unwrap_or_else(|e| panic!("{} {} {}: {e}", self.file, self.kind(), self.name()));
        let again = serde_json::to_value(&typed).unwrap();
        assert_eq!(
            again,
            self.value,
            "{} {} {}: a field was dropped or changed by parsing (misspelt?):\n{}",
            self.file,
            self.kind(),
            self.name(),
            differences(&self.value, &again, "").join("\n")
        );
        typed
    }
}

/// Paths where two JSON values differ.
fn differences(written: &Value, parsed: &Value, path: &str) -> Vec<String> {
    match (written, parsed) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            keys.into_iter()
                .flat_map(|k| {
                    let (x, y) = (
                        a.get(k).unwrap_or(&Value::Null),
                        b.get(k).unwrap_or(&Value::Null),
                    );
                    differences(x, y, &format!("{path}.{k}"))
                })
                .collect()
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => a
            .iter()
            .zip(b)
            .enumerate()
            .flat_map(|(i, (x, y))| differences(x, y, &format!("{path}[{i}]")))
            .collect(),
        (a, b) if a == b => Vec::new(),
        (a, b) => vec![format!("  {path}: written {a}, parsed {b}")],
    }
}

fn deploy_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy"))
}

/// Every document of every `deploy/*.yaml`, in the order `kubectl apply -f
/// deploy/` applies them (files by name).
pub fn documents() -> Vec<Document> {
    documents_in("")
}

/// Every document of every `deploy/<dir>/*.yaml`, in the order `kubectl
/// apply -f` applies them (files by name).
fn documents_in(dir: &str) -> Vec<Document> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(deploy_dir().join(dir))
        .expect("reading deploy/")
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    let mut documents = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let file = format!(
            "deploy/{}",
            path.strip_prefix(deploy_dir()).unwrap().to_string_lossy()
        );
        for document in serde_yaml::Deserializer::from_str(&text) {
            let value: Value = serde::Deserialize::deserialize(document)
                .unwrap_or_else(|e| panic!("{file}: not YAML: {e}"));
            if !value.is_null() {
                documents.push(Document {
                    file: file.clone(),
                    value,
                });
            }
        }
    }
    documents
}

/// The one document of `kind`, parsed.
pub fn one<K: DeserializeOwned + Serialize + k8s_openapi::Resource>() -> K {
    one_of(&documents())
}

/// The one document of `kind` among `documents`, parsed.
fn one_of<K: DeserializeOwned + Serialize + k8s_openapi::Resource>(documents: &[Document]) -> K {
    let matching: Vec<&Document> = documents
        .iter()
        .filter(|d| d.kind() == K::KIND && d.api_version() == K::API_VERSION)
        .collect();
    assert_eq!(
        matching.len(),
        1,
        "deploy/ must hold exactly one {}",
        K::KIND
    );
    matching[0].parse()
}

#[test]
fn every_deploy_document_parses_into_its_kubernetes_type_without_losing_a_field() {
    let documents = documents();
    let mut kinds = BTreeSet::new();
    for document in &documents {
        parse_typed(document);
        kinds.insert(document.kind().to_owned());
    }
    for wanted in [
        "Namespace",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "ConfigMap",
        "Deployment",
    ] {
        assert!(kinds.contains(wanted), "deploy/ has no {wanted}");
    }
}

/// Parses a document into its k8s-openapi type (see [`Document::parse`]).
fn parse_typed(document: &Document) {
    match (document.api_version(), document.kind()) {
        ("v1", "Namespace") => drop(document.parse::<Namespace>()),
        ("v1", "ServiceAccount") => drop(document.parse::<ServiceAccount>()),
        ("v1", "ConfigMap") => drop(document.parse::<ConfigMap>()),
        ("v1", "Service") => drop(document.parse::<Service>()),
        ("apps/v1", "Deployment") => drop(document.parse::<Deployment>()),
        ("policy/v1", "PodDisruptionBudget") => drop(document.parse::<PodDisruptionBudget>()),
        ("rbac.authorization.k8s.io/v1", "ClusterRole") => drop(document.parse::<ClusterRole>()),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding") => {
            drop(document.parse::<ClusterRoleBinding>())
        }
        ("rbac.authorization.k8s.io/v1", "Role") => drop(document.parse::<Role>()),
        ("rbac.authorization.k8s.io/v1", "RoleBinding") => drop(document.parse::<RoleBinding>()),
        (api_version, kind) => panic!(
            "{}: {api_version} {kind} has no typed check here: add one",
            document.file
        ),
    }
}

#[test]
fn a_misspelt_field_is_caught_by_the_round_trip() {
    let value: Value = serde_yaml::from_str(
        "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: x}\nautomountServiceAcountToken: false\n",
    )
    .unwrap();
    let document = Document {
        file: "test".into(),
        value,
    };
    let caught = std::panic::catch_unwind(|| drop(document.parse::<ServiceAccount>()));
    assert!(caught.is_err(), "a misspelt field went unnoticed");
}

fn herald_container(pod: &PodSpec) -> &Container {
    pod.containers
        .iter()
        .find(|c| c.name == "herald")
        .expect("a container named herald")
}

fn deployment_pod() -> (Deployment, PodSpec) {
    let deployment: Deployment = one();
    let pod = deployment
        .spec
        .template
        .spec
        .clone()
        .expect("a pod template");
    (deployment, pod)
}

#[test]
fn every_container_runs_locked_down_with_requests_and_limits() {
    let (_, pod) = deployment_pod();
    let pod_security = pod.security_context.as_ref().expect("pod securityContext");
    assert_eq!(pod_security.run_as_non_root, Some(true));
    assert!(pod_security.run_as_user.is_some_and(|uid| uid != 0));
    assert_eq!(
        pod_security
            .seccomp_profile
            .as_ref()
            .map(|p| p.type_.as_str()),
        Some("RuntimeDefault")
    );
    let containers: Vec<&Container> = pod
        .init_containers
        .iter()
        .flatten()
        .chain(&pod.containers)
        .collect();
    assert!(containers.len() >= 2, "the init container and herald");
    for container in containers {
        let name = &container.name;
        let security = container
            .security_context
            .as_ref()
            .unwrap_or_else(|| panic!("{name}: no securityContext"));
        assert_eq!(security.allow_privilege_escalation, Some(false), "{name}");
        assert_eq!(security.read_only_root_filesystem, Some(true), "{name}");
        assert_eq!(security.run_as_non_root, Some(true), "{name}");
        assert_ne!(security.privileged, Some(true), "{name}");
        let capabilities = security.capabilities.as_ref().expect("capabilities");
        assert_eq!(
            capabilities.drop.as_deref(),
            Some(&["ALL".to_owned()][..]),
            "{name}"
        );
        assert!(capabilities.add.is_none(), "{name} adds capabilities");
        let resources = container.resources.as_ref().expect("resources");
        for (what, set) in [
            ("requests", &resources.requests),
            ("limits", &resources.limits),
        ] {
            let set = set.as_ref().unwrap_or_else(|| panic!("{name}: no {what}"));
            assert!(
                set.contains_key("cpu") && set.contains_key("memory"),
                "{name}: {what} must give cpu and memory"
            );
        }
    }
}

#[test]
fn only_the_herald_container_gets_an_api_token() {
    let (_, pod) = deployment_pod();
    assert_eq!(pod.automount_service_account_token, Some(false));
    let account: ServiceAccount = one();
    assert_eq!(pod.service_account_name, account.metadata.name);
    let token_dir = "/var/run/secrets/kubernetes.io/serviceaccount";
    let herald = herald_container(&pod);
    let mount = herald
        .volume_mounts
        .iter()
        .flatten()
        .find(|m| m.mount_path == token_dir)
        .expect("herald mounts the API token where kube-rs reads it");
    assert_eq!(mount.read_only, Some(true));
    let volume = pod
        .volumes
        .iter()
        .flatten()
        .find(|v| v.name == mount.name)
        .expect("the token volume");
    let sources = &volume
        .projected
        .as_ref()
        .expect("a projected volume")
        .sources;
    let sources = sources.as_ref().expect("sources");
    assert!(sources.iter().any(|s| s.service_account_token.is_some()));
    for init in pod.init_containers.iter().flatten() {
        assert!(
            init.volume_mounts
                .iter()
                .flatten()
                .all(|m| m.name != mount.name),
            "the init container {} must not see the token",
            init.name
        );
    }
}

#[test]
fn the_deployment_agrees_with_its_config_and_its_service() {
    let (deployment, pod) = deployment_pod();
    assert_eq!(deployment.spec.replicas, Some(2));
    let config_map: ConfigMap = one();
    let text = &config_map.data.as_ref().unwrap()["herald.yaml"];
    let config = Config::parse(text, "deploy/20-config.yaml herald.yaml").unwrap();
    assert_eq!(config.source.kind, SourceKind::InCluster);
    assert_eq!(config.listen.to_string(), "0.0.0.0:9090");
    assert_eq!(config.log.format, LogFormat::Json);
    assert!(config.leader_election.enabled);

    let herald = herald_container(&pod);
    assert_eq!(
        herald.args.as_deref(),
        Some(
            &[
                "run".to_owned(),
                "--config".into(),
                "/etc/herald/herald.yaml".into()
            ][..]
        )
    );
    let mounts = herald.volume_mounts.as_ref().unwrap();
    let mount_at = |path: &str| {
        mounts
            .iter()
            .find(|m| m.mount_path == path)
            .unwrap_or_else(|| panic!("herald mounts nothing at {path}"))
    };
    let config_volume = pod
        .volumes
        .iter()
        .flatten()
        .find(|v| v.name == mount_at("/etc/herald").name)
        .unwrap();
    assert_eq!(
        config_volume.config_map.as_ref().map(|c| c.name.as_str()),
        config_map.metadata.name.as_deref()
    );
    let plugin_dir = config.plugin_dir.to_str().unwrap();
    let plugins = mount_at(plugin_dir);
    assert_eq!(
        plugins.read_only,
        Some(true),
        "herald only reads its plugins"
    );
    let plugin_volume = pod
        .volumes
        .iter()
        .flatten()
        .find(|v| v.name == plugins.name)
        .unwrap();
    assert!(plugin_volume.empty_dir.is_some(), "plugins: an emptyDir");
    let init = pod.init_containers.as_ref().unwrap();
    assert!(
        init.iter().any(|c| c
            .volume_mounts
            .iter()
            .flatten()
            .any(|m| m.name == plugins.name && m.read_only != Some(true))),
        "an init container fills the plugin directory"
    );

    // The lease identity is the pod name, through the downward API.
    let pod_name = herald
        .env
        .iter()
        .flatten()
        .find(|e| e.name == "POD_NAME")
        .and_then(|e| e.value_from.as_ref())
        .and_then(|v| v.field_ref.as_ref())
        .map(|f| f.field_path.as_str());
    assert_eq!(pod_name, Some("metadata.name"));

    // Probes on the listen port.
    let port = config.listen.port() as i32;
    let http = herald
        .ports
        .iter()
        .flatten()
        .find(|p| p.container_port == port)
        .expect("the listen port is declared");
    let probe_path = |probe: &Option<k8s_openapi::api::core::v1::Probe>| {
        let get = probe
            .as_ref()
            .and_then(|p| p.http_get.as_ref())
            .expect("an HTTP probe");
        match &get.port {
            IntOrString::Int(n) => assert_eq!(*n, port),
            IntOrString::String(name) => assert_eq!(Some(name), http.name.as_ref()),
        }
        get.path.clone().unwrap_or_default()
    };
    assert_eq!(probe_path(&herald.liveness_probe), "/healthz");
    assert_eq!(probe_path(&herald.readiness_probe), "/readyz");

    // Long enough to drain and release the Lease.
    let grace = pod.termination_grace_period_seconds.unwrap_or(30);
    assert!(grace as u64 > config.shutdown.grace_period.as_secs());

    // The Service reaches these pods on that port.
    let service: Service = one();
    let spec = service.spec.unwrap();
    let labels = deployment
        .spec
        .template
        .metadata
        .as_ref()
        .unwrap()
        .labels
        .clone()
        .unwrap();
    for (key, value) in spec.selector.unwrap() {
        assert_eq!(labels.get(&key), Some(&value), "Service selector {key}");
    }
    let target = spec.ports.unwrap()[0].target_port.clone().unwrap();
    assert_eq!(target, IntOrString::String(http.name.clone().unwrap()));
}

#[test]
fn the_lease_role_allows_exactly_the_configured_lease() {
    let config_map: ConfigMap = one();
    let config = Config::parse(&config_map.data.unwrap()["herald.yaml"], "herald.yaml").unwrap();
    let (deployment, _) = deployment_pod();
    let namespace = deployment.metadata.namespace.clone().unwrap();
    let lease_namespace = config
        .leader_election
        .lease_namespace
        .clone()
        .unwrap_or(namespace.clone());
    let role: Role = one();
    assert_eq!(role.metadata.namespace.as_ref(), Some(&lease_namespace));
    let rules = role.rules.unwrap();
    let mut verbs_on_name = BTreeSet::new();
    let mut create = false;
    for rule in &rules {
        assert_eq!(
            rule.api_groups.as_deref(),
            Some(&["coordination.k8s.io".to_owned()][..])
        );
        assert_eq!(rule.resources.as_deref(), Some(&["leases".to_owned()][..]));
        match &rule.resource_names {
            Some(names) => {
                assert_eq!(
                    names,
                    std::slice::from_ref(&config.leader_election.lease_name)
                );
                verbs_on_name.extend(rule.verbs.iter().cloned());
            }
            None => {
                assert_eq!(
                    rule.verbs,
                    ["create"],
                    "only create is unrestricted by name"
                );
                create = true;
            }
        }
    }
    assert!(create, "the elector creates the Lease when missing");
    assert_eq!(
        verbs_on_name,
        BTreeSet::from(["get".to_owned(), "update".to_owned()])
    );

    let binding: RoleBinding = one();
    assert_eq!(binding.role_ref.name, role.metadata.name.unwrap());
    let account: ServiceAccount = one();
    let subject = &binding.subjects.unwrap()[0];
    assert_eq!(Some(&subject.name), account.metadata.name.as_ref());
    assert_eq!(subject.namespace, account.metadata.namespace);
    let cluster_binding: ClusterRoleBinding = one();
    let cluster_role: ClusterRole = one();
    assert_eq!(
        Some(&cluster_binding.role_ref.name),
        cluster_role.metadata.name.as_ref()
    );
    assert_eq!(cluster_binding.subjects.unwrap()[0].name, subject.name);
}

#[tokio::test]
async fn the_deploy_manifests_apply_to_the_embedded_api_server() {
    apply_to_a_fresh_server(documents(), 2).await;
}

/// Applies `documents` to a new embedded API server and checks the stored
/// Deployment's replica count.
async fn apply_to_a_fresh_server(documents: Vec<Document>, replicas: i32) {
    let server = herald_apiserver::start(herald_apiserver::ApiServerConfig::default())
        .await
        .expect("embedded API server");
    let client = kube::Client::try_from(kube::Config::new(server.url().parse().unwrap())).unwrap();
    apply_all(&client, documents).await;
    let deployments: Api<Deployment> = Api::namespaced(client, "herald");
    let stored = deployments.get("herald").await.unwrap();
    assert_eq!(stored.spec.replicas, Some(replicas));
    server.shutdown().await;
}

/// Applies `documents` in order (server-side apply) and checks what is
/// stored; every kind of a Herald deployment must be among them.
async fn apply_all(client: &kube::Client, documents: Vec<Document>) {
    let discovery = kube::Discovery::new(client.clone()).run().await.unwrap();
    let mut applied = BTreeSet::new();
    let mut parse_only = BTreeSet::new();
    for document in documents {
        let gvk = kube::core::GroupVersionKind::try_from(&kube::core::TypeMeta {
            api_version: document.api_version().to_owned(),
            kind: document.kind().to_owned(),
        })
        .unwrap();
        // Kinds the embedded server does not serve (policy/v1 here) are
        // checked by the parse test only.
        let Some((resource, capabilities)) = discovery.resolve_gvk(&gvk) else {
            parse_only.insert(document.kind().to_owned());
            continue;
        };
        let api: Api<DynamicObject> = match capabilities.scope {
            Scope::Cluster => Api::all_with(client.clone(), &resource),
            Scope::Namespaced => {
                let namespace = document.value["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or_else(|| {
                        panic!("{}: {} needs a namespace", document.file, document.name())
                    });
                Api::namespaced_with(client.clone(), namespace, &resource)
            }
        };
        let params = PatchParams::apply("herald-deploy-test").force();
        api.patch(document.name(), &params, &Patch::Apply(&document.value))
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "{}: applying {} {}: {e}",
                    document.file,
                    document.kind(),
                    document.name()
                )
            });
        let stored = api.get(document.name()).await.unwrap();
        let stored = serde_json::to_value(&stored).unwrap();
        for field in ["spec", "data", "rules", "roleRef", "subjects"] {
            if let Some(written) = document.value.get(field) {
                assert_eq!(
                    stored.get(field),
                    Some(written),
                    "{} {}: {field} as stored",
                    document.kind(),
                    document.name()
                );
            }
        }
        applied.insert(document.kind().to_owned());
    }
    for wanted in [
        "Namespace",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "ConfigMap",
        "Deployment",
        "Service",
    ] {
        assert!(
            applied.contains(wanted),
            "{wanted} was not applied (parse-only: {parse_only:?})"
        );
    }
}

/// `deploy/00-namespace.yaml` then `deploy/sharded/`, as its README says to
/// apply them.
fn sharded_documents() -> Vec<Document> {
    let mut documents: Vec<Document> = documents()
        .into_iter()
        .filter(|d| d.kind() == "Namespace")
        .collect();
    documents.extend(documents_in("sharded"));
    documents
}

#[test]
fn the_sharded_variant_differs_from_the_base_only_where_sharding_needs_it() {
    let base = documents();
    let sharded = documents_in("sharded");
    for document in &sharded {
        parse_typed(document);
    }
    let base_deployment: Deployment = one_of(&base);
    let deployment: Deployment = one_of(&sharded);
    assert_eq!(deployment.spec.replicas, Some(3));
    let mut expected = base_deployment.clone();
    expected.spec.replicas = Some(3);
    assert_eq!(
        deployment, expected,
        "deploy/sharded/30-deployment.yaml must equal deploy/30-deployment.yaml but for replicas"
    );
    assert_eq!(
        one_of::<ClusterRole>(&sharded),
        one_of::<ClusterRole>(&base)
    );
    assert_eq!(
        one_of::<ClusterRoleBinding>(&sharded),
        one_of::<ClusterRoleBinding>(&base)
    );
    assert_eq!(
        one_of::<ServiceAccount>(&sharded),
        one_of::<ServiceAccount>(&base)
    );
    assert_eq!(one_of::<Service>(&sharded), one_of::<Service>(&base));

    // The configuration: the base one with sharding instead of leader election.
    let config_of = |documents: &[Document]| {
        let map: ConfigMap = one_of(documents);
        Config::parse(&map.data.unwrap()["herald.yaml"], "herald.yaml").unwrap()
    };
    let config = config_of(&sharded);
    assert!(config.sharding.enabled && !config.leader_election.enabled);
    let mut expected = config_of(&base);
    expected.sharding = expected.leader_election.clone();
    expected.leader_election.enabled = false;
    assert_eq!(config, expected);

    // The Lease Role: the verbs sharding uses, on Leases only, in the
    // namespace the Leases live in, bound to Herald's account.
    let namespace = deployment.metadata.namespace.clone().unwrap();
    let role: Role = one_of(&sharded);
    assert_eq!(
        role.metadata.namespace.as_ref(),
        Some(
            config
                .sharding
                .lease_namespace
                .as_ref()
                .unwrap_or(&namespace)
        )
    );
    let rules = role.rules.unwrap();
    assert_eq!(rules.len(), 1, "one rule: {rules:?}");
    let rule = &rules[0];
    assert_eq!(
        rule.api_groups.as_deref(),
        Some(&["coordination.k8s.io".to_owned()][..])
    );
    assert_eq!(rule.resources.as_deref(), Some(&["leases".to_owned()][..]));
    let verbs: BTreeSet<&str> = rule.verbs.iter().map(String::as_str).collect();
    assert_eq!(verbs, BTreeSet::from(["create", "get", "list", "update"]));
    let binding: RoleBinding = one_of(&sharded);
    assert_eq!(binding.role_ref.name, role.metadata.name.unwrap());
    let account: ServiceAccount = one_of(&sharded);
    assert_eq!(
        Some(&binding.subjects.unwrap()[0].name),
        account.metadata.name.as_ref()
    );

    // The PDB lets one replica at a time go (it hands its plugins over).
    let budget: PodDisruptionBudget = one_of(&sharded);
    let spec = budget.spec.unwrap();
    assert_eq!(spec.max_unavailable, Some(IntOrString::Int(1)));
    assert!(spec.min_available.is_none());
    let labels = deployment.spec.template.metadata.unwrap().labels.unwrap();
    for (key, value) in spec.selector.unwrap().match_labels.unwrap() {
        assert_eq!(labels.get(&key), Some(&value), "PDB selector {key}");
    }
}

#[tokio::test]
async fn the_sharded_manifests_apply_to_the_embedded_api_server() {
    apply_to_a_fresh_server(sharded_documents(), 3).await;
}
