//! The Helm chart, `deploy/helm/herald`, through the real `helm` (built from
//! `tools/helm` at the version its go.mod pins): it lints strictly and renders
//! with the default values and every value set in its `ci/`; the herald.yaml
//! it renders is accepted by the daemon's own loader; bad values are refused
//! naming the key; its ClusterRole is what `herald plugin rbac` computes for
//! its plugins; every object it renders passes a server-side dry run on the
//! embedded API server; its README's values reference is the schema's.
//!
//! Building helm needs Go: without it the tests are skipped, saying so,
//! except under `CI`, where they fail.

use super::process::{Running, repo, run, temp_dir};
use herald_test_artifacts as artifacts;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The chart's directory.
pub(super) fn chart() -> PathBuf {
    repo().join("deploy/helm/herald")
}

/// The value sets the chart is tested with: the defaults (no file) and each
/// file of `ci/`.
const VALUE_SETS: [Option<&str>; 6] = [
    None,
    Some("ci/single-values.yaml"),
    Some("ci/ha-values.yaml"),
    Some("ci/sharded-values.yaml"),
    Some("ci/admission-values.yaml"),
    Some("ci/fleet-values.yaml"),
];

/// The `helm` built from `tools/helm`, once per test run; `None` (a skip)
/// where Go is missing, a failure under `CI`.
pub(super) fn helm() -> Option<&'static Path> {
    static HELM: OnceLock<Option<PathBuf>> = OnceLock::new();
    HELM.get_or_init(|| {
        let go = Command::new("go")
            .arg("version")
            .output()
            .or_else(|_| Command::new("/usr/local/go/bin/go").arg("version").output())
            .is_ok_and(|o| o.status.success());
        assert!(
            go || std::env::var_os("CI").is_none(),
            "Go is not installed, and CI is set: the Helm chart's tests must run in CI"
        );
        if !go {
            eprintln!("skipped: Go is not installed, so helm cannot be built from tools/helm");
            return None;
        }
        let started = std::time::Instant::now();
        let output = Command::new("bash")
            .arg(repo().join("tools/helm/build.sh"))
            .output()
            .expect("running tools/helm/build.sh");
        assert!(
            output.status.success(),
            "tools/helm/build.sh failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        eprintln!("helm ready in {:?}", started.elapsed());
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| repo().join("target"));
        Some(target.join("tools/helm"))
    })
    .as_deref()
}

/// Runs `helm args…` with a home of its own (no user's repositories or
/// registry logins).
pub(super) fn run_helm(helm: &Path, args: &[&str]) -> Output {
    let home = temp_dir("helm-home");
    Command::new(helm)
        .args(args)
        .env("HELM_CONFIG_HOME", home.join("config"))
        .env("HELM_CACHE_HOME", home.join("cache"))
        .env("HELM_DATA_HOME", home.join("data"))
        .env_remove("KUBECONFIG")
        .output()
        .expect("running helm")
}

/// `-f <file>` for a value set, or nothing for the defaults.
fn values_args(values: Option<&str>) -> Vec<String> {
    values
        .map(|file| vec!["-f".into(), chart().join(file).display().to_string()])
        .unwrap_or_default()
}

/// `helm template herald <chart> --namespace herald` with `values` and `extra`
/// arguments; its output, success or not.
pub(super) fn template(helm: &Path, values: Option<&str>, extra: &[&str]) -> Output {
    let chart = chart().display().to_string();
    let mut args = vec![
        "template",
        "herald",
        chart.as_str(),
        "--namespace",
        "herald",
    ];
    let files = values_args(values);
    args.extend(files.iter().map(String::as_str));
    args.extend(extra);
    run_helm(helm, &args)
}

/// The objects `helm template` renders for `values`.
pub(super) fn render(helm: &Path, values: Option<&str>, extra: &[&str]) -> Vec<Value> {
    let output = template(helm, values, extra);
    assert!(
        output.status.success(),
        "helm template with {values:?} {extra:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    documents(&String::from_utf8(output.stdout).unwrap())
}

/// The non-empty documents of a YAML stream.
pub(super) fn documents(text: &str) -> Vec<Value> {
    use serde::Deserialize;
    serde_yaml::Deserializer::from_str(text)
        .map(|document| Value::deserialize(document).unwrap())
        .filter(|value| !value.is_null())
        .collect()
}

/// The one object of `kind` among `objects`.
pub(super) fn one<'a>(objects: &'a [Value], kind: &str) -> &'a Value {
    let found: Vec<&Value> = objects.iter().filter(|o| o["kind"] == kind).collect();
    assert_eq!(found.len(), 1, "one {kind} expected, found {}", found.len());
    found[0]
}

/// The herald.yaml of the rendered ConfigMap.
pub(super) fn herald_yaml(objects: &[Value]) -> String {
    one(objects, "ConfigMap")["data"]["herald.yaml"]
        .as_str()
        .expect("the ConfigMap holds herald.yaml")
        .to_owned()
}

/// The rendered ConfigMap as the Pod sees it at /etc/herald (here a fresh
/// directory, its paths in herald.yaml moved with it), loaded by the
/// daemon's own loader.
fn load_config(objects: &[Value], what: &str) -> Result<herald::config::Config, String> {
    let dir = temp_dir("helm-config");
    let mount = format!("{}/", dir.display());
    let data = one(objects, "ConfigMap")["data"].as_object().unwrap();
    for (file, text) in data {
        let text = text.as_str().unwrap().replace("/etc/herald/", &mount);
        std::fs::write(dir.join(file), text).unwrap();
    }
    herald::config::Config::load(&dir.join("herald.yaml")).map_err(|err| format!("{what}: {err}"))
}

pub(super) fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn helm_lint_strict_passes_with_the_default_values_and_every_value_set() {
    let Some(helm) = helm() else { return };
    for values in VALUE_SETS {
        let chart = chart().display().to_string();
        let mut args = vec!["lint", "--strict", chart.as_str()];
        let files = values_args(values);
        args.extend(files.iter().map(String::as_str));
        let output = run_helm(helm, &args);
        assert!(
            output.status.success(),
            "helm lint --strict with {values:?}:\n{}{}",
            String::from_utf8_lossy(&output.stdout),
            stderr(&output)
        );
    }
}

#[test]
fn every_value_set_renders_a_config_the_daemons_loader_accepts() {
    let Some(helm) = helm() else { return };
    for values in VALUE_SETS {
        let objects = render(helm, values, &[]);
        let text = herald_yaml(&objects);
        if let Err(err) = load_config(&objects, &format!("{values:?}")) {
            panic!("{err}\n{text}");
        }
        // The Deployment runs the daemon on the file the ConfigMap holds.
        let deployment = one(&objects, "Deployment");
        let pod = &deployment["spec"]["template"]["spec"];
        let herald = &pod["containers"][0];
        assert_eq!(
            herald["args"],
            serde_json::json!(["run", "--config", "/etc/herald/herald.yaml"])
        );
        let config: Value = serde_yaml::from_str(&text).unwrap();
        let replicas = deployment["spec"]["replicas"].as_i64().unwrap();
        let leader = config["leaderElection"]["enabled"] == true;
        let sharded = config["sharding"]["enabled"] == true;
        assert!(
            replicas == 1 || leader || sharded,
            "{values:?}: {replicas} replicas without leader election or sharding"
        );
        // Every plugin source is pinned or followed in a cache the Pod mounts.
        if config["pluginSources"].is_array() {
            let mounts = herald["volumeMounts"].as_array().unwrap();
            let cache = config["pluginSourceCache"].as_str().unwrap();
            assert!(
                mounts.iter().any(|m| m["mountPath"] == cache),
                "{values:?}: pluginSourceCache {cache} is not a mounted volume"
            );
        }
    }
}

#[test]
fn the_fleet_value_set_follows_other_clusters_with_only_the_access_it_needs() {
    let Some(helm) = helm() else { return };
    let objects = render(helm, Some("ci/fleet-values.yaml"), &[]);
    let config = load_config(&objects, "fleet").unwrap();
    assert_eq!(config.default_cluster_name(), "east");
    assert!(config.source.name.is_some());
    let rendered: Value = serde_yaml::from_str(&herald_yaml(&objects)).unwrap();
    assert_eq!(rendered["clusterDirectory"], "/etc/herald/clusters");
    let secrets = config.cluster_secrets.as_ref().expect("clusterSecrets");
    assert_eq!(
        (secrets.namespace.as_str(), secrets.poll_interval),
        ("fleet-registry", std::time::Duration::from_secs(30))
    );
    assert_eq!(
        config.plugins["fleet-fanout"].clusters.to_string(),
        "every cluster"
    );
    // The kubeconfig Secret is the cluster directory, read-only.
    let deployment = one(&objects, "Deployment");
    let spec = &deployment["spec"]["template"]["spec"];
    let volume = spec["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "clusters")
        .expect("a clusters volume");
    assert_eq!(volume["secret"]["secretName"], "herald-clusters");
    let mount = spec["containers"][0]["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "clusters")
        .expect("mounted");
    assert_eq!(
        (&mount["mountPath"], &mount["readOnly"]),
        (&Value::from("/etc/herald/clusters"), &Value::from(true))
    );
    // Listing Secrets in fleet-registry, and nothing else there.
    let role = objects
        .iter()
        .find(|o| o["kind"] == "Role" && o["metadata"]["namespace"] == "fleet-registry")
        .expect("a Role in the Secrets' namespace");
    assert_eq!(
        role["rules"],
        serde_json::json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]}])
    );
    assert!(objects.iter().any(|o| o["kind"] == "RoleBinding"
        && o["metadata"]["namespace"] == "fleet-registry"
        && o["roleRef"]["name"] == role["metadata"]["name"]));
}

#[test]
fn the_sharded_value_set_renders_its_oci_plugins_with_their_grants_and_modes() {
    let Some(helm) = helm() else { return };
    let objects = render(helm, Some("ci/sharded-values.yaml"), &[]);
    let config = load_config(&objects, "sharded").unwrap();
    assert!(config.sharding.enabled && !config.leader_election.enabled);
    assert_eq!(config.plugin_sources.len(), 3);
    for source in &config.plugin_sources {
        assert!(source.oci.contains("@sha256:"), "{}", source.oci);
    }
    assert_eq!(
        config.plugins["pod-lifecycle"].mode,
        Some(herald::capability::Mode::DryRun)
    );
    assert!(!config.plugins["namespace-defaults"].grants.is_empty());
    assert!(!config.plugins["pod-lifecycle"].grants.is_empty());
    // The key was read through the path the ConfigMap mounts.
    assert_eq!(config.plugin_files.public_keys.len(), 1);
    // The writer's grants are the ones it declares (`herald plugin check`).
    let rendered: Value = serde_yaml::from_str(&herald_yaml(&objects)).unwrap();
    let writes = &rendered["plugins"]["namespace-defaults"]["grants"]["writes"];
    assert_eq!(writes.as_array().map(Vec::len), Some(2), "{writes}");
}

#[test]
fn a_sources_pull_secret_is_mounted_once_and_named_as_its_docker_config() {
    let Some(helm) = helm() else { return };
    let objects = render(helm, Some("ci/sharded-values.yaml"), &[]);
    let config = load_config(&objects, "sharded").unwrap();
    let pod = &one(&objects, "Deployment")["spec"]["template"]["spec"];
    let volumes: Vec<&Value> = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["secret"]["secretName"] == "registry-credentials")
        .collect();
    assert_eq!(
        volumes.len(),
        1,
        "one volume for the two sources: {volumes:?}"
    );
    assert_eq!(
        volumes[0]["secret"]["items"],
        serde_json::json!([{"key": ".dockerconfigjson", "path": "config.json"}])
    );
    let mount = pod["containers"][0]["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == volumes[0]["name"])
        .expect("the Secret's volume is mounted");
    assert_eq!(mount["readOnly"], true);
    let file = PathBuf::from(mount["mountPath"].as_str().unwrap()).join("config.json");
    for source in &config.plugin_sources {
        let expected = ["rollout-watch", "namespace-defaults"]
            .iter()
            .any(|name| source.oci.contains(name))
            .then_some(&file);
        assert_eq!(source.docker_config.as_ref(), expected, "{}", source.oci);
    }
}

#[test]
fn an_unknown_key_is_refused_by_the_schema_naming_it() {
    let Some(helm) = helm() else { return };
    let output = template(helm, None, &["--set", "replicaCount=3"]);
    assert!(!output.status.success());
    let message = stderr(&output);
    assert!(message.contains("replicaCount"), "{message}");
    // A key of the daemon's config the chart does not know at the top…
    let output = template(helm, None, &["--set", "config.listen=0.0.0.0:80"]);
    assert!(!output.status.success());
    let message = stderr(&output);
    assert!(message.contains("listen"), "{message}");
}

#[test]
fn an_unknown_key_inside_the_daemons_config_is_refused_by_its_loader_naming_it() {
    let Some(helm) = helm() else { return };
    let objects = render(helm, None, &["--set", "config.log.colour=red"]);
    let err = load_config(&objects, "log.colour").expect_err("log.colour is not a key");
    assert!(err.contains("log.colour"), "{err}");
}

#[test]
fn a_plugin_that_writes_without_a_digest_pin_is_refused_naming_the_plugin() {
    let Some(helm) = helm() else { return };
    let work = temp_dir("helm-unpinned");
    let values = work.join("values.yaml");
    let plugin = "plugins:\n  cleaner:\n    source:\n      oci: registry.example.com/cleaner:1.0\n    grants:\n      writes:\n      - {verbs: [delete], group: \"\", kind: Pod, namespaces: [\"*\"]}\n";
    std::fs::write(&values, plugin).unwrap();
    let output = template(helm, None, &["-f", values.to_str().unwrap()]);
    assert!(!output.status.success(), "an unpinned writer rendered");
    let message = stderr(&output);
    assert!(
        message.contains("plugins.cleaner.grants.writes")
            && message.contains("registry.example.com/cleaner:1.0"),
        "{message}"
    );
    // The same plugin pinned by digest renders.
    let pinned = plugin.replace(":1.0", &format!("@sha256:{}", "ab".repeat(32)));
    std::fs::write(&values, pinned).unwrap();
    render(helm, None, &["-f", values.to_str().unwrap()]);
}

#[test]
fn more_than_one_replica_needs_leader_election_or_sharding() {
    let Some(helm) = helm() else { return };
    let output = template(helm, None, &["--set", "replicas=2"]);
    assert!(!output.status.success());
    let message = stderr(&output);
    assert!(message.contains("replication.mode"), "{message}");
}

#[test]
fn a_config_change_changes_the_checksum_that_rolls_the_pods() {
    let Some(helm) = helm() else { return };
    let checksum = |extra: &[&str]| {
        let objects = render(helm, None, extra);
        one(&objects, "Deployment")["spec"]["template"]["metadata"]["annotations"]
            ["checksum/config"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let before = checksum(&[]);
    assert_eq!(before, checksum(&[]), "the checksum is stable");
    assert_ne!(before, checksum(&["--set", "config.log.level=debug"]));
}

#[test]
fn the_rendered_cluster_role_is_what_plugin_rbac_computes_for_the_plugins() {
    let Some(helm) = helm() else { return };
    let values: Value = serde_yaml::from_str(
        &std::fs::read_to_string(chart().join("ci/sharded-values.yaml")).unwrap(),
    )
    .unwrap();
    let names: Vec<&str> = values["plugins"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let mut args = vec!["plugin", "rbac", "--name", "herald"];
    for name in &names {
        let (_, path) = artifacts::ALL
            .iter()
            .find(|(plugin, _)| plugin == name)
            .unwrap_or_else(|| panic!("no built plugin named {name}"));
        args.push(path);
    }
    let output = run(&args);
    assert!(output.status.success(), "{}", stderr(&output));
    let computed: Value = serde_yaml::from_slice(&output.stdout).unwrap();
    let objects = render(helm, Some("ci/sharded-values.yaml"), &[]);
    let rendered = one(&objects, "ClusterRole");
    let rules = |role: &Value| {
        let role: k8s_openapi::api::rbac::v1::ClusterRole =
            serde_json::from_value(role.clone()).unwrap();
        role.rules.unwrap_or_default()
    };
    assert_eq!(
        rules(rendered),
        rules(&computed),
        "ci/sharded-values.yaml's rbac.rules differ from `herald plugin rbac` for {names:?}: paste its rules"
    );
}

#[test]
fn every_rendered_object_passes_a_server_side_dry_run_on_the_embedded_api_server() {
    let Some(helm) = helm() else { return };
    let mut sets = Vec::new();
    for values in VALUE_SETS {
        sets.push((values, render(helm, values, &[])));
    }
    // Every optional object too.
    sets.push((
        Some("ci/ha-values.yaml + options"),
        render(
            helm,
            Some("ci/ha-values.yaml"),
            &[
                "--set",
                "networkPolicy.enabled=true,serviceMonitor.enabled=true",
            ],
        ),
    ));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let unserved = runtime.block_on(async {
        let server = herald_apiserver::start(herald_apiserver::ApiServerConfig::default())
            .await
            .expect("embedded API server");
        let client =
            kube::Client::try_from(kube::Config::new(server.url().parse().unwrap())).unwrap();
        // A dry run persists nothing, so the namespaces are created for
        // real: the release's, and any other an object names (the fleet's
        // Secrets namespace).
        let namespaces: kube::Api<k8s_openapi::api::core::v1::Namespace> =
            kube::Api::all(client.clone());
        let named: BTreeSet<&str> = std::iter::once("herald")
            .chain(sets.iter().flat_map(|(_, objects)| {
                objects
                    .iter()
                    .filter_map(|o| o["metadata"]["namespace"].as_str())
            }))
            .collect();
        for name in named {
            let namespace = serde_json::from_value(serde_json::json!({
                "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}
            }))
            .unwrap();
            namespaces
                .create(&kube::api::PostParams::default(), &namespace)
                .await
                .unwrap();
        }
        let discovery = kube::Discovery::new(client.clone()).run().await.unwrap();
        let mut unserved = BTreeSet::new();
        let mut checked = 0;
        for (values, objects) in &sets {
            for object in objects {
                let kind = object["kind"].as_str().unwrap();
                let name = object["metadata"]["name"].as_str().unwrap();
                let gvk = kube::core::GroupVersionKind::try_from(&kube::core::TypeMeta {
                    api_version: object["apiVersion"].as_str().unwrap().to_owned(),
                    kind: kind.to_owned(),
                })
                .unwrap();
                let Some((resource, capabilities)) = discovery.resolve_gvk(&gvk) else {
                    unserved.insert(kind.to_owned());
                    continue;
                };
                let api: kube::Api<kube::api::DynamicObject> = match capabilities.scope {
                    kube::discovery::Scope::Cluster => {
                        kube::Api::all_with(client.clone(), &resource)
                    }
                    kube::discovery::Scope::Namespaced => {
                        let namespace =
                            object["metadata"]["namespace"].as_str().unwrap_or("herald");
                        kube::Api::namespaced_with(client.clone(), namespace, &resource)
                    }
                };
                let dynamic: kube::api::DynamicObject =
                    serde_json::from_value(object.clone()).unwrap();
                let params = kube::api::PostParams {
                    dry_run: true,
                    field_manager: Some("herald-helm-test".into()),
                };
                api.create(&params, &dynamic).await.unwrap_or_else(|e| {
                    panic!("{values:?}: dry-run create of {kind} {name} refused: {e}")
                });
                // Dry run: nothing was stored.
                assert!(
                    api.get_opt(name).await.unwrap().is_none(),
                    "{values:?}: the dry run stored {kind} {name}"
                );
                checked += 1;
            }
        }
        assert!(checked >= 25, "only {checked} objects dry-run");
        server.shutdown().await;
        unserved
    });
    // The kinds the embedded server does not serve are known, never more.
    let expected: BTreeSet<String> = ["PodDisruptionBudget", "ServiceMonitor"]
        .into_iter()
        .map(String::from)
        .collect();
    assert!(
        unserved.is_subset(&expected),
        "kinds not served by the embedded API server: {unserved:?}"
    );
}

/// The values reference, one row per key, from the schema and values.yaml.
fn values_reference() -> String {
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(chart().join("values.schema.json")).unwrap())
            .unwrap();
    let defaults: Value =
        serde_yaml::from_str(&std::fs::read_to_string(chart().join("values.yaml")).unwrap())
            .unwrap();
    let mut rows = vec![
        "| key | type | default | description |".to_owned(),
        "|---|---|---|---|".to_owned(),
    ];
    fn walk(node: &Value, key: &str, default: Option<&Value>, rows: &mut Vec<String>) {
        if let Some(properties) = node["properties"].as_object() {
            for (name, child) in properties {
                let key = if key.is_empty() {
                    name.clone()
                } else {
                    format!("{key}.{name}")
                };
                walk(child, &key, default.and_then(|d| d.get(name)), rows);
            }
            return;
        }
        let kind = match &node["type"] {
            Value::String(kind) => kind.clone(),
            Value::Null => "any".into(),
            other => other.to_string(),
        };
        let kind = match node["enum"].as_array() {
            Some(values) => values
                .iter()
                .map(|v| format!("`{}`", v.as_str().unwrap_or_default()))
                .collect::<Vec<_>>()
                .join(", "),
            None => kind,
        };
        let default = default
            .map(|d| format!("`{}`", serde_json::to_string(d).unwrap()))
            .unwrap_or_default();
        let description = node["description"].as_str().unwrap_or_default();
        rows.push(format!(
            "| `{key}` | {kind} | {} | {} |",
            default.replace('|', "\\|"),
            description.replace('|', "\\|")
        ));
        // A map of entries with keys of their own (plugins.<name>.…).
        if node["additionalProperties"]["properties"].is_object() {
            walk(
                &node["additionalProperties"],
                &format!("{key}.<name>"),
                None,
                rows,
            );
        }
    }
    walk(&schema, "", Some(&defaults), &mut rows);
    rows.join("\n") + "\n"
}

const BEGIN: &str =
    "<!-- values reference: generated from values.schema.json by host/tests/cli/helm.rs -->\n";
const END: &str = "<!-- end of the values reference -->";

#[test]
fn the_readmes_values_reference_is_generated_from_the_schema() {
    let path = chart().join("README.md");
    let readme = std::fs::read_to_string(&path).unwrap();
    let (before, rest) = readme.split_once(BEGIN).expect("the README's BEGIN marker");
    let (written, after) = rest.split_once(END).expect("the README's END marker");
    let generated = values_reference();
    if written != generated {
        if std::env::var_os("HERALD_REGENERATE").is_some() {
            std::fs::write(&path, format!("{before}{BEGIN}{generated}{END}{after}")).unwrap();
        } else {
            panic!(
                "deploy/helm/herald/README.md's values reference is not the schema's: run \
                 HERALD_REGENERATE=1 cargo test -p herald --test cli -- helm::the_readmes"
            );
        }
    }
}

/// Every document of `deploy/<dir>/*.yaml`, the plain manifests.
fn plain_manifests(dir: &str) -> Vec<Value> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo().join("deploy").join(dir))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
        .iter()
        .flat_map(|file| documents(&std::fs::read_to_string(file).unwrap()))
        .collect()
}

#[test]
fn the_plain_manifests_in_deploy_agree_with_the_chart_rendered_with_the_ha_values() {
    let Some(helm) = helm() else { return };
    let chart = render(helm, Some("ci/ha-values.yaml"), &[]);
    agree(&chart, &plain_manifests(""), "minAvailable");
}

#[test]
fn the_sharded_plain_manifests_agree_with_the_chart_sharding_three_replicas() {
    let Some(helm) = helm() else { return };
    let chart = render(
        helm,
        Some("ci/ha-values.yaml"),
        &["--set", "replicas=3,replication.mode=sharding"],
    );
    agree(&chart, &plain_manifests("sharded"), "maxUnavailable");
}

/// Checks that the chart's `chart` objects do what the plain manifests
/// `plain` do; `budget` is the PodDisruptionBudget's field.
fn agree(chart: &[Value], plain: &[Value], budget: &str) {
    let field = |objects: &[Value], kind: &str, pointer: &str| {
        one(objects, kind)
            .pointer(pointer)
            .cloned()
            .unwrap_or_else(|| panic!("{kind} has no {pointer}"))
    };
    // What the objects do; names and labels differ (the chart's are
    // Helm's), images too (the value set pins them by digest).
    for (kind, pointer) in [
        ("ClusterRole", "/rules"),
        ("Role", "/rules"),
        ("Service", "/spec/ports"),
        ("Deployment", "/spec/replicas"),
        ("Deployment", "/spec/strategy"),
        ("Deployment", "/spec/template/spec/securityContext"),
        (
            "Deployment",
            "/spec/template/spec/automountServiceAccountToken",
        ),
        (
            "Deployment",
            "/spec/template/spec/terminationGracePeriodSeconds",
        ),
        ("Deployment", "/spec/template/spec/volumes"),
        ("Deployment", "/spec/template/spec/initContainers/0/command"),
        (
            "Deployment",
            "/spec/template/spec/initContainers/0/securityContext",
        ),
        (
            "Deployment",
            "/spec/template/spec/initContainers/0/resources",
        ),
        (
            "Deployment",
            "/spec/template/spec/initContainers/0/volumeMounts",
        ),
    ] {
        assert_eq!(
            field(chart, kind, pointer),
            field(plain, kind, pointer),
            "{kind} {pointer}: the chart and the plain manifests differ"
        );
    }
    let container = |objects: &[Value]| {
        let mut herald = field(objects, "Deployment", "/spec/template/spec/containers/0");
        herald.as_object_mut().unwrap().remove("image");
        herald
    };
    assert_eq!(container(chart), container(plain), "the herald container");
    let config =
        |objects: &[Value]| -> Value { serde_yaml::from_str(&herald_yaml(objects)).unwrap() };
    assert_eq!(config(chart), config(plain), "herald.yaml");
    let pointer = format!("/spec/{budget}");
    assert_eq!(
        field(chart, "PodDisruptionBudget", &pointer),
        field(plain, "PodDisruptionBudget", &pointer)
    );
}

#[test]
fn helm_installs_upgrades_and_uninstalls_herald_on_the_embedded_api_server() {
    let Some(helm) = helm() else { return };
    let work = temp_dir("helm-install");
    let kubeconfig = work.join("kubeconfig");
    let mut server = Running::apiserver(&kubeconfig);
    let helm_on = |verb: &str, values: &str, extra: &[&str]| {
        helm_on_cluster(helm, &kubeconfig, verb, values, extra)
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = client_of(&runtime, &kubeconfig);
    let deployment = |client: &kube::Client| {
        let api: kube::Api<k8s_openapi::api::apps::v1::Deployment> =
            kube::Api::namespaced(client.clone(), "herald");
        runtime
            .block_on(api.get_opt("herald"))
            .unwrap()
            .map(|d| serde_json::to_value(d).unwrap())
    };
    // A server-side dry run of the install checks every object and stores none.
    let dry = helm_on(
        "install",
        "ci/single-values.yaml",
        &["--create-namespace", "--dry-run=server"],
    );
    assert!(dry.contains("Dry run complete"), "{dry}");
    assert!(
        deployment(&client).is_none(),
        "the dry run stored the Deployment"
    );
    let installed = helm_on("install", "ci/single-values.yaml", &["--create-namespace"]);
    assert!(installed.contains("STATUS: deployed"), "{installed}");
    assert!(
        installed.contains("/readyz"),
        "NOTES.txt says how to see it works"
    );
    let first = deployment(&client).expect("the Deployment is stored");
    assert_eq!(first["spec"]["replicas"], 1);
    let checksum =
        |d: &Value| d["spec"]["template"]["metadata"]["annotations"]["checksum/config"].clone();
    assert!(checksum(&first).is_string(), "{first}");
    // Upgrade to two replicas with leader election (the embedded server
    // serves no policy/v1, hence no budget): the config changes, so does the
    // checksum that rolls the Pods.
    let upgraded = helm_on(
        "upgrade",
        "ci/ha-values.yaml",
        &["--set", "podDisruptionBudget.enabled=false"],
    );
    assert!(upgraded.contains("REVISION: 2"), "{upgraded}");
    let second = deployment(&client).expect("the Deployment is still there");
    assert_eq!(second["spec"]["replicas"], 2);
    assert_ne!(checksum(&first), checksum(&second));
    let uninstalled = run_helm(
        helm,
        &[
            "uninstall",
            "herald",
            "--namespace",
            "herald",
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
        ],
    );
    assert!(uninstalled.status.success(), "{}", stderr(&uninstalled));
    assert!(
        deployment(&client).is_none(),
        "uninstall left the Deployment"
    );
    // Purging the history deletes the release's Secrets with a protobuf
    // DeleteOptions body, as client-go sends it.
    let releases: kube::Api<k8s_openapi::api::core::v1::Secret> =
        kube::Api::namespaced(client.clone(), "herald");
    let left = runtime
        .block_on(releases.list(&kube::api::ListParams::default().labels("owner=helm")))
        .unwrap();
    assert!(
        left.items.is_empty(),
        "uninstall left the release history: {:?}",
        left.items
            .iter()
            .map(|s| &s.metadata.name)
            .collect::<Vec<_>>()
    );
    server.terminate();
    let (code, _) = server.wait();
    assert_eq!(code, Some(0));
}

/// `helm <verb> herald <chart> -f <values> …` (values: a file of the
/// chart's folder) in the namespace `herald` of the cluster of `kubeconfig`;
/// its output, or a failure naming the arguments.
pub(super) fn helm_chart_on_cluster(
    helm: &Path,
    kubeconfig: &Path,
    verb: &str,
    chart: &str,
    values: &str,
    extra: &[&str],
) -> String {
    let (values, kubeconfig) = (chart_file(values), kubeconfig.display().to_string());
    let mut args = vec![
        verb,
        "herald",
        chart,
        "--namespace",
        "herald",
        "--kubeconfig",
        kubeconfig.as_str(),
        "-f",
        values.as_str(),
    ];
    args.extend(extra);
    let output = run_helm(helm, &args);
    assert!(
        output.status.success(),
        "helm {args:?}: {}",
        stderr(&output)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// [`helm_chart_on_cluster`] with this chart.
pub(super) fn helm_on_cluster(
    helm: &Path,
    kubeconfig: &Path,
    verb: &str,
    values: &str,
    extra: &[&str],
) -> String {
    let chart = chart().display().to_string();
    helm_chart_on_cluster(helm, kubeconfig, verb, &chart, values, extra)
}

/// A kube client for the cluster of `kubeconfig`.
pub(super) fn client_of(runtime: &tokio::runtime::Runtime, kubeconfig: &Path) -> kube::Client {
    runtime.block_on(async {
        let config = kube::Config::from_custom_kubeconfig(
            kube::config::Kubeconfig::read_from(kubeconfig).unwrap(),
            &Default::default(),
        )
        .await
        .unwrap();
        kube::Client::try_from(config).unwrap()
    })
}

/// The path of a file of the chart.
pub(super) fn chart_file(file: &str) -> String {
    chart().join(file).display().to_string()
}
