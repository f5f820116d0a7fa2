//! `herald plugin webhooks`: the webhook configurations the API server
//! needs, made from the plugins' manifests.

use super::process::run;
use herald_test_artifacts as artifacts;

#[test]
fn the_configurations_send_each_plugin_what_it_admits_and_leave_out_the_system() {
    let output = run(&[
        "plugin",
        "webhooks",
        artifacts::IMAGE_POLICY,
        artifacts::ADMISSION_PROBE,
        "--service",
        "platform/herald:8443",
    ]);
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let documents: Vec<serde_json::Value> = stdout
        .split("---\n")
        .filter(|doc| doc.contains("kind:"))
        .map(|doc| serde_yaml::from_str(doc).unwrap())
        .collect();
    let [validating, mutating] = &documents[..] else {
        panic!("two configurations: {stdout}")
    };
    assert_eq!(validating["kind"], "ValidatingWebhookConfiguration");
    assert_eq!(mutating["kind"], "MutatingWebhookConfiguration");
    let webhooks = validating["webhooks"].as_array().unwrap();
    let names: Vec<&str> = webhooks
        .iter()
        .map(|w| w["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "image-policy.validate.herald.dev",
            "admission-probe.validate.herald.dev"
        ]
    );
    let image_policy = &webhooks[0];
    assert_eq!(image_policy["rules"][0]["resources"][0], "pods");
    assert_eq!(
        image_policy["rules"][0]["operations"],
        serde_json::json!(["CREATE", "UPDATE"])
    );
    assert_eq!(image_policy["sideEffects"], "None");
    assert_eq!(
        image_policy["admissionReviewVersions"],
        serde_json::json!(["v1"])
    );
    assert_eq!(image_policy["matchPolicy"], "Equivalent");
    assert_eq!(image_policy["failurePolicy"], "Fail");
    assert_eq!(image_policy["timeoutSeconds"], 10);
    let service = &image_policy["clientConfig"]["service"];
    assert_eq!(service["namespace"], "platform");
    assert_eq!(service["path"], "/validate/image-policy");
    assert_eq!(service["port"], 8443);
    let excluded = &image_policy["namespaceSelector"]["matchExpressions"][0];
    assert_eq!(excluded["key"], "kubernetes.io/metadata.name");
    assert_eq!(excluded["operator"], "NotIn");
    assert_eq!(
        excluded["values"],
        serde_json::json!(["platform", "kube-system"])
    );
    let probe = &mutating["webhooks"][0];
    assert_eq!(probe["name"], "admission-probe.mutate.herald.dev");
    assert_eq!(
        probe["clientConfig"]["service"]["path"],
        "/mutate/admission-probe"
    );
    assert_eq!(probe["timeoutSeconds"], 2);
    assert_eq!(probe["reinvocationPolicy"], "Never");
}

#[test]
fn plugins_that_admit_nothing_get_a_clear_refusal() {
    let output = run(&["plugin", "webhooks", artifacts::NOOP]);
    assert!(!output.status.success());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains("none of these plugins declares a webhook"),
        "{stderr}"
    );
    let output = run(&[
        "plugin",
        "webhooks",
        artifacts::IMAGE_POLICY,
        "--url",
        "http://x",
    ]);
    assert!(!output.status.success());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("over https://"), "{stderr}");
}

#[test]
fn with_the_daemons_configuration_each_plugin_admits_what_its_configuration_makes_it() {
    // namespace-defaults mutates Namespaces only when configured with
    // labels to fill in: unconfigured it admits nothing; read with the
    // configuration the daemon will give it, it mutates.
    let webhooks = |extra: &[&str]| {
        let mut args = vec!["plugin", "webhooks", artifacts::NAMESPACE_DEFAULTS];
        args.extend(extra);
        run(&args)
    };
    let unconfigured = webhooks(&[]);
    assert!(!unconfigured.status.success());
    assert!(
        String::from_utf8_lossy(&unconfigured.stderr)
            .contains("none of these plugins declares a webhook"),
        "{}",
        String::from_utf8_lossy(&unconfigured.stderr)
    );
    let mutating_webhooks = |extra: &[&str]| {
        let output = webhooks(extra);
        let stdout = String::from_utf8(output.stdout).unwrap();
        assert!(
            output.status.success(),
            "{stdout}{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let mutating: serde_json::Value = stdout
            .split("---\n")
            .filter(|doc| doc.contains("kind: MutatingWebhookConfiguration"))
            .map(|doc| serde_yaml::from_str(doc).unwrap())
            .next()
            .expect("a MutatingWebhookConfiguration");
        mutating["webhooks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["name"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    let dir = super::process::temp_dir("webhooks-config");
    let config = dir.join("herald.yaml");
    std::fs::write(
        &config,
        "plugins:\n  namespace-defaults:\n    config: {defaultLabels: {cost-center: unassigned}}\n",
    )
    .unwrap();
    assert_eq!(
        mutating_webhooks(&["--config", config.to_str().unwrap()]),
        ["namespace-defaults.mutate.herald.dev"]
    );
    // A configuration the daemon would refuse is refused here, naming it.
    std::fs::write(&config, "plugins: [not, a, map]\n").unwrap();
    let output = webhooks(&["--config", config.to_str().unwrap()]);
    assert!(!output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("herald.yaml"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
