//! The chart's admission section, through the real `helm`: the serving
//! certificate it generates is one the daemon loads and a client trusting
//! the webhooks' caBundle accepts for the Service's name; the webhooks are
//! what `herald plugin webhooks` prints, pointed at the release's Service;
//! cert-manager's objects and CA injection when it issues; bad values
//! refused naming the key. (Lint, the loader and the dry run of
//! `ci/admission-values.yaml` are in `helm.rs`, with every value set.)

use super::helm::{client_of, helm, helm_on_cluster, herald_yaml, one, render, stderr, template};
use super::process::{Running, run, temp_dir};
use herald_test_artifacts as artifacts;
use serde_json::Value;
use std::sync::Arc;

const VALUES: Option<&str> = Some("ci/admission-values.yaml");

/// The base64 value `key` of a rendered Secret's data, decoded.
fn secret_data(secret: &Value, key: &str) -> Vec<u8> {
    use base64::Engine;
    let text = secret["data"][key]
        .as_str()
        .unwrap_or_else(|| panic!("the Secret has no {key}"));
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .unwrap()
}

/// Whether a client trusting `ca` (PEM) completes a TLS handshake with
/// `cert` served for `name`.
fn handshake(cert: Arc<herald::admission::tls::ServingCert>, ca: &[u8], name: &str) -> bool {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(rustls::pki_types::CertificateDer::from_pem_slice(ca).unwrap())
        .unwrap();
    let client = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let server = cert.server_config();
    let name = rustls::pki_types::ServerName::try_from(name.to_owned()).unwrap();
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(async {
            let (near, far) = tokio::io::duplex(64 * 1024);
            let accept = tokio_rustls::TlsAcceptor::from(Arc::new(server)).accept(far);
            let connect = tokio_rustls::TlsConnector::from(Arc::new(client)).connect(name, near);
            let (accepted, connected) = tokio::join!(accept, connect);
            accepted.is_ok() && connected.is_ok()
        })
}

#[test]
fn the_generated_certificate_is_served_by_the_daemon_and_trusted_through_the_ca_bundle() {
    let Some(helm) = helm() else { return };
    let objects = render(helm, VALUES, &[]);
    let secret = one(&objects, "Secret");
    assert_eq!(secret["type"], "kubernetes.io/tls");
    assert_eq!(secret["metadata"]["name"], "herald-admission-tls");
    // The daemon reads the files the Pod mounts from the Secret.
    let config: Value = serde_yaml::from_str(&herald_yaml(&objects)).unwrap();
    assert_eq!(
        config["admission"],
        serde_json::json!({
            "enabled": true,
            "listen": "0.0.0.0:8443",
            "certFile": "/var/run/herald/tls/tls.crt",
            "keyFile": "/var/run/herald/tls/tls.key",
        })
    );
    let pod = &one(&objects, "Deployment")["spec"]["template"]["spec"];
    let mount = pod["containers"][0]["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "admission-tls")
        .expect("the certificate is mounted");
    assert_eq!(mount["mountPath"], "/var/run/herald/tls");
    let volume = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "admission-tls")
        .unwrap();
    assert_eq!(volume["secret"]["secretName"], "herald-admission-tls");
    let dir = temp_dir("helm-admission-tls");
    std::fs::write(dir.join("tls.crt"), secret_data(secret, "tls.crt")).unwrap();
    std::fs::write(dir.join("tls.key"), secret_data(secret, "tls.key")).unwrap();
    let served = Arc::new(
        herald::admission::tls::ServingCert::from_files(&dir.join("tls.crt"), &dir.join("tls.key"))
            .expect("the daemon loads the generated certificate"),
    );
    // The API server trusts the caBundle of the webhook configuration and
    // calls the Service by its DNS name.
    let configuration = one(&objects, "ValidatingWebhookConfiguration");
    use base64::Engine;
    let bundle = base64::engine::general_purpose::STANDARD
        .decode(
            configuration["webhooks"][0]["clientConfig"]["caBundle"]
                .as_str()
                .expect("a caBundle"),
        )
        .unwrap();
    assert_eq!(bundle, secret_data(secret, "ca.crt"));
    assert!(handshake(served.clone(), &bundle, "herald.herald.svc"));
    assert!(handshake(
        served.clone(),
        &bundle,
        "herald.herald.svc.cluster.local"
    ));
    assert!(
        !handshake(served, &bundle, "herald.elsewhere.svc"),
        "the certificate is for the release's Service only"
    );
    // The Service and the Pod expose the port; the network policy opens it.
    let service = one(&objects, "Service");
    assert!(
        service["spec"]["ports"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "admission" && p["port"] == 8443)
    );
    let policy = one(&objects, "NetworkPolicy");
    assert!(
        policy["spec"]["ingress"]
            .as_array()
            .unwrap()
            .iter()
            .any(|rule| rule["ports"][0]["port"] == "admission" && rule["from"].is_null())
    );
}

#[test]
fn the_rendered_webhooks_are_what_plugin_webhooks_prints_for_the_release() {
    let Some(helm) = helm() else { return };
    let (_, image_policy) = artifacts::ALL
        .iter()
        .find(|(plugin, _)| *plugin == "image-policy")
        .expect("image-policy is built");
    let output = run(&[
        "plugin",
        "webhooks",
        image_policy,
        "--service",
        "herald/herald:8443",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let printed: Vec<Value> = super::helm::documents(&String::from_utf8(output.stdout).unwrap());
    let printed = one(&printed, "ValidatingWebhookConfiguration");
    let objects = render(helm, VALUES, &[]);
    let mut rendered = one(&objects, "ValidatingWebhookConfiguration")["webhooks"].clone();
    for webhook in rendered.as_array_mut().unwrap() {
        webhook["clientConfig"]
            .as_object_mut()
            .unwrap()
            .remove("caBundle");
    }
    assert_eq!(
        rendered, printed["webhooks"],
        "ci/admission-values.yaml's validatingWebhooks differ from `herald plugin webhooks`: paste its webhooks"
    );
}

#[test]
fn cert_manager_issues_the_certificate_and_injects_the_ca() {
    let Some(helm) = helm() else { return };
    let objects = render(
        helm,
        VALUES,
        &["--set", "admission.certificate.source=certManager"],
    );
    let kinds =
        |kind: &str| -> Vec<&Value> { objects.iter().filter(|o| o["kind"] == kind).collect() };
    assert!(kinds("Secret").is_empty(), "cert-manager writes the Secret");
    let certificates = kinds("Certificate");
    let serving = certificates
        .iter()
        .find(|c| c["metadata"]["name"] == "herald-admission")
        .expect("the serving Certificate");
    assert_eq!(serving["spec"]["secretName"], "herald-admission-tls");
    assert_eq!(
        serving["spec"]["dnsNames"],
        serde_json::json!(["herald.herald.svc", "herald.herald.svc.cluster.local"])
    );
    assert_eq!(serving["spec"]["issuerRef"]["name"], "herald-ca");
    let ca = certificates
        .iter()
        .find(|c| c["metadata"]["name"] == "herald-ca")
        .expect("the chart's CA");
    assert_eq!(ca["spec"]["isCA"], true);
    assert_eq!(kinds("Issuer").len(), 2, "self-signed, and the CA's");
    let configuration = one(&objects, "ValidatingWebhookConfiguration");
    assert_eq!(
        configuration["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
        "herald/herald-admission"
    );
    assert!(configuration["webhooks"][0]["clientConfig"]["caBundle"].is_null());
    // An issuer of the operator's: no CA of the chart's.
    let objects = render(
        helm,
        VALUES,
        &[
            "--set",
            "admission.certificate.source=certManager,admission.certificate.issuerRef.name=corp,admission.certificate.issuerRef.kind=ClusterIssuer",
        ],
    );
    let certificates: Vec<&Value> = objects
        .iter()
        .filter(|o| o["kind"] == "Certificate")
        .collect();
    assert_eq!(certificates.len(), 1);
    assert_eq!(
        certificates[0]["spec"]["issuerRef"],
        serde_json::json!({"name": "corp", "kind": "ClusterIssuer"})
    );
    assert!(!objects.iter().any(|o| o["kind"] == "Issuer"));
}

#[test]
fn an_existing_secret_is_mounted_and_its_ca_written_into_the_webhooks() {
    let Some(helm) = helm() else { return };
    let ca = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    let objects = render(
        helm,
        VALUES,
        &[
            "--set",
            "admission.certificate.source=secret,admission.certificate.secretName=corp-tls",
            "--set-string",
            &format!("admission.certificate.caBundle={ca}"),
        ],
    );
    assert!(!objects.iter().any(|o| o["kind"] == "Secret"));
    let pod = &one(&objects, "Deployment")["spec"]["template"]["spec"];
    assert!(
        pod["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v["secret"]["secretName"] == "corp-tls")
    );
    use base64::Engine;
    let bundle =
        one(&objects, "ValidatingWebhookConfiguration")["webhooks"][0]["clientConfig"]["caBundle"]
            .as_str()
            .map(|b| base64::engine::general_purpose::STANDARD.decode(b).unwrap())
            .expect("a caBundle");
    assert_eq!(String::from_utf8(bundle).unwrap(), ca);
}

#[test]
fn admission_values_that_cannot_work_are_refused_naming_the_key() {
    let Some(helm) = helm() else { return };
    let refused = |args: &[&str], key: &str| {
        let output = template(helm, VALUES, args);
        assert!(!output.status.success(), "{args:?} was accepted");
        let why = stderr(&output);
        assert!(why.contains(key), "{args:?}: {why}");
    };
    refused(
        &["--set", "admission.certificate.source=secret"],
        "admission.certificate: source secret needs secretName",
    );
    refused(
        &["--set", "admission.enabled=false"],
        "admission.validatingWebhooks, admission.mutatingWebhooks: webhooks need admission.enabled",
    );
    refused(
        &["--set", "admission.certificate.source=vault"],
        "/admission/certificate/source",
    );
    refused(
        &["--set", "admission.certificate.duration=90d"],
        "/admission/certificate/duration",
    );
}

#[test]
fn an_upgrade_keeps_the_certificate_helm_generated_at_install() {
    let Some(helm) = helm() else { return };
    let work = temp_dir("helm-admission-install");
    let kubeconfig = work.join("kubeconfig");
    let mut server = Running::apiserver(&kubeconfig);
    let helm_on = |verb: &str, extra: &[&str]| {
        helm_on_cluster(helm, &kubeconfig, verb, "ci/admission-values.yaml", extra);
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let secrets: kube::Api<k8s_openapi::api::core::v1::Secret> =
        kube::Api::namespaced(client_of(&runtime, &kubeconfig), "herald");
    let certificate = || {
        runtime
            .block_on(secrets.get("herald-admission-tls"))
            .expect("the certificate's Secret is stored")
            .data
            .expect("it holds data")
    };
    helm_on("install", &["--create-namespace"]);
    let installed = certificate();
    assert_eq!(
        installed.keys().map(String::as_str).collect::<Vec<_>>(),
        ["ca.crt", "tls.crt", "tls.key"]
    );
    helm_on("upgrade", &["--set", "config.log.level=debug"]);
    assert_eq!(
        certificate(),
        installed,
        "the upgrade kept the serving certificate (the webhooks' caBundle with it)"
    );
    server.terminate();
    let (code, _) = server.wait();
    assert_eq!(code, Some(0));
}
