//! Admission end to end (issue 39): a daemon serving reviews over TLS with
//! its development certificate, the API server (the embedded one, or a real
//! kube-apiserver under `HERALD_TEST_KUBECONFIG`) calling it through the
//! webhook configurations `herald::admission::configuration` makes from the
//! plugins' manifests, and kube-rs writing through the door. The
//! `admission-probe` fixture decides by a ConfigMap's `probe` label; every
//! ConfigMap of these tests carries `admission-suite: <namespace>`, the
//! webhooks' object selector, so no other test's writes reach them.

use super::cluster::TestCluster;
use herald::admission::configuration::{Endpoint, Target, configurations};
use herald::capability::log::MemorySink;
use herald::config::Config;
use herald::discovery::KindResolver;
use herald::scratch::ScratchDir;
use herald::service::Service;
use herald::webhook::Decision;
use herald_tests::{PATIENCE, artifacts, eventually};
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// A daemon serving admission for `admission-probe` and `image-policy`.
struct Door {
    service: Service,
    dir: ScratchDir,
    cluster: TestCluster,
    /// The names of the webhook configurations installed.
    installed: String,
    /// The PEM of the CA the API server is told to trust.
    ca: Option<String>,
}

/// A serving certificate's files, and its CA's PEM.
struct ServedFiles {
    cert: PathBuf,
    key: PathBuf,
    ca: String,
}

impl Door {
    async fn open(decisions: &[Decision]) -> Door {
        Self::open_in(decisions, "enforce").await
    }

    /// A door whose `admission-probe` runs in `mode` (`enforce`, `dry-run`).
    async fn open_in(decisions: &[Decision], mode: &str) -> Door {
        Self::open_serving(decisions, mode, None).await
    }

    /// A door serving the certificate in `cert` (its files and its CA's
    /// PEM) instead of a development one.
    async fn open_serving(decisions: &[Decision], mode: &str, cert: Option<&ServedFiles>) -> Door {
        let cluster = TestCluster::start().await;
        let dir = cluster.plugin_dir(
            "admission",
            &[
                ("admission-probe", artifacts::ADMISSION_PROBE),
                ("image-policy", artifacts::IMAGE_POLICY),
            ],
        );
        let yaml = format!(
            r#"
pluginDir: {dir}
pluginFiles: {{artifactCache: {{enabled: false}}}}
admission: {{enabled: true, listen: "127.0.0.1:0"{files}}}
plugins:
  admission-probe:
    mode: {mode}
    allowUnpinned: true
    grants:
      events: {{}}
      writes:
        - {{verbs: [patch], group: "", kind: ConfigMap, namespaces: ["*"]}}
  image-policy:
    config: {{allowedRegistries: [docker.io]}}
"#,
            dir = dir.display(),
            files = cert.map_or(String::new(), |c| format!(
                ", certFile: {}, keyFile: {}",
                c.cert.display(),
                c.key.display()
            )),
        );
        let config = Config::parse(&yaml, "admission test").expect("a valid configuration");
        let service = cluster
            .service(config, Arc::new(MemorySink::default()))
            .await;
        let installed = format!("herald-{}", cluster.namespace);
        let ca = cert
            .map(|c| c.ca.clone())
            .or_else(|| service.admission_ca().map(str::to_owned));
        let door = Door {
            service,
            dir,
            cluster,
            installed,
            ca,
        };
        door.install(decisions).await;
        door
    }

    /// Makes the webhook configurations from the running plugins'
    /// manifests and creates those of `decisions`, every webhook narrowed to
    /// this test's objects.
    async fn install(&self, decisions: &[Decision]) {
        let plugins = self.service.daemon().plugins();
        let manifests: Vec<&herald::plugin::Manifest> =
            plugins.iter().map(|p| p.manifest()).collect();
        let address = self.service.admission_address().expect("admission runs");
        let target = Target {
            name: self.installed.clone(),
            endpoint: Endpoint::Url(format!("https://127.0.0.1:{}", address.port())),
            ca_bundle: self.ca.as_ref().map(|ca| ca.as_bytes().to_vec()),
            excluded_namespaces: vec!["kube-system".into()],
        };
        let (mut validating, mut mutating) =
            configurations(&manifests, &target, &KindResolver::Builtin)
                .await
                .expect("configurations from the manifests");
        let ours = json!({"matchLabels": {"admission-suite": self.cluster.namespace}});
        let ours: k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector =
            serde_json::from_value(ours).unwrap();
        for webhook in validating.webhooks.iter_mut().flatten() {
            webhook.object_selector = Some(ours.clone());
        }
        for webhook in mutating.webhooks.iter_mut().flatten() {
            webhook.object_selector = Some(ours.clone());
        }
        let client = &self.cluster.client;
        if decisions.contains(&Decision::Validate) {
            Api::<ValidatingWebhookConfiguration>::all(client.clone())
                .create(&PostParams::default(), &validating)
                .await
                .expect("creating the ValidatingWebhookConfiguration");
        }
        if decisions.contains(&Decision::Mutate) {
            Api::<MutatingWebhookConfiguration>::all(client.clone())
                .create(&PostParams::default(), &mutating)
                .await
                .expect("creating the MutatingWebhookConfiguration");
        }
    }

    fn maps(&self) -> Api<ConfigMap> {
        self.cluster.config_maps()
    }

    /// A ConfigMap of this test, `probe` labelled `label` (none if empty).
    fn map(&self, name: &str, label: &str) -> ConfigMap {
        let mut labels = json!({"admission-suite": self.cluster.namespace});
        if !label.is_empty() {
            labels["probe"] = label.into();
        }
        serde_json::from_value(json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": self.cluster.namespace, "labels": labels},
            "data": {"value": "42"},
        }))
        .unwrap()
    }

    /// Creates the ConfigMap `name` labelled `label`: the stored object, or
    /// the API server's refusal as (code, message).
    async fn create(&self, name: &str, label: &str) -> Result<ConfigMap, (u16, String)> {
        self.maps()
            .create(&PostParams::default(), &self.map(name, label))
            .await
            .map_err(|error| match error {
                kube::Error::Api(status) => (status.code, status.message),
                other => panic!("the API server answered with no status: {other}"),
            })
    }

    /// Creates ConfigMaps `<prefix>-0`, `-1`, … one after another until
    /// twenty have gone through after `changed` was set; each must be
    /// allowed. Returns how many were written.
    async fn write_through(&self, prefix: &str, changed: &std::sync::atomic::AtomicBool) -> u64 {
        let (mut written, mut after) = (0, 0);
        while after < 20 {
            self.create(&format!("{prefix}-{written}"), "")
                .await
                .unwrap_or_else(|refused| panic!("write {written} was refused: {refused:?}"));
            written += 1;
            if changed.load(std::sync::atomic::Ordering::Acquire) {
                after += 1;
            }
        }
        written
    }

    fn metrics(&self) -> String {
        let address = self.service.address().to_string();
        herald_tests::http_get(&address, "/metrics")
            .expect("/metrics answers")
            .1
    }

    /// The objects of this test that `plugin`'s scan reports failing, as
    /// `/plugins` lists them: (name, message).
    fn violations(&self, plugin: &str) -> Result<Vec<(String, String)>, String> {
        let address = self.service.address().to_string();
        let (_, body) = herald_tests::http_get(&address, "/plugins").ok_or("no /plugins")?;
        let report: serde_json::Value = serde_json::from_str(&body).map_err(|e| e.to_string())?;
        let entry = report["plugins"]
            .as_array()
            .and_then(|all| all.iter().find(|p| p["name"] == plugin))
            .ok_or_else(|| format!("{plugin} is not listed: {body}"))?;
        let scan = entry["scan"]
            .as_object()
            .ok_or_else(|| format!("{plugin} reports no scan: {entry}"))?;
        Ok(scan["violations"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|v| v["namespace"] == self.cluster.namespace.as_str())
            .map(|v| {
                let text = |key: &str| v[key].as_str().unwrap_or_default().to_owned();
                (text("name"), text("message"))
            })
            .collect())
    }

    /// The scan's Events in this test's namespace, by the name of the
    /// object each is about.
    async fn violation_events(
        &self,
    ) -> std::collections::BTreeMap<String, Vec<k8s_openapi::api::events::v1::Event>> {
        let events: Api<k8s_openapi::api::events::v1::Event> =
            Api::namespaced(self.cluster.client.clone(), &self.cluster.namespace);
        let mut by_object = std::collections::BTreeMap::<String, Vec<_>>::new();
        for event in events.list(&Default::default()).await.unwrap().items {
            if event.reason.as_deref() != Some(herald::admission::scan::VIOLATION_REASON) {
                continue;
            }
            let name = event
                .regarding
                .as_ref()
                .and_then(|r| r.name.clone())
                .unwrap_or_default();
            by_object.entry(name).or_default().push(event);
        }
        by_object
    }

    async fn close(self) {
        let client = self.cluster.client.clone();
        let _ = Api::<ValidatingWebhookConfiguration>::all(client.clone())
            .delete(&self.installed, &DeleteParams::default())
            .await;
        let _ = Api::<MutatingWebhookConfiguration>::all(client)
            .delete(&self.installed, &DeleteParams::default())
            .await;
        self.service.shutdown(Duration::from_secs(5)).await;
        self.cluster.cleanup().await;
    }
}

/// The value of the sample `series` (its name and labels as written) on
/// `/metrics`, 0 when absent.
fn sample(metrics: &str, series: &str) -> u64 {
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(series)?.trim().parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_refuses_a_write_at_the_door_with_its_message_and_code() {
    let door = Door::open(&[Decision::Validate]).await;
    let stored = door
        .create("plain", "")
        .await
        .expect("an allowed write is stored");
    assert_eq!(stored.data.unwrap()["value"], "42");
    let (code, message) = door.create("refused", "deny").await.unwrap_err();
    assert_eq!(code, 422, "the plugin's code: {message}");
    assert!(message.contains("probe denies refused"), "{message}");
    assert!(
        door.maps().get_opt("refused").await.unwrap().is_none(),
        "a refused write is not stored"
    );
    let metrics = door.metrics();
    let denied = r#"herald_admission_reviews_total{plugin="admission-probe",decision="validate",operation="CREATE",verdict="denied"}"#;
    assert_eq!(sample(&metrics, denied), 1, "{metrics}");
    // Every review the plugin answered was timed by the server around it.
    let reviews: u64 = metrics
        .lines()
        .filter(|l| {
            l.starts_with(
                r#"herald_admission_reviews_total{plugin="admission-probe",decision="validate","#,
            )
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum();
    let timed = r#"herald_admission_request_duration_seconds_count{plugin="admission-probe",decision="validate"}"#;
    assert!(reviews >= 2, "{metrics}");
    assert_eq!(sample(&metrics, timed), reviews, "{metrics}");
    door.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_audit_mode_a_refusal_is_a_warning_and_a_change_is_not_made() {
    let door = Door::open_in(&[Decision::Validate, Decision::Mutate], "dry-run").await;
    let mutating_denial = door.create("audited", "deny").await;
    assert!(
        mutating_denial.is_ok(),
        "audit mode never refuses: {mutating_denial:?}"
    );
    let stored = door.create("unchanged", "").await.expect("allowed");
    assert!(
        !stored.metadata.labels.unwrap().contains_key("mutated"),
        "audit mode never changes an object"
    );
    let metrics = door.metrics();
    let would = r#"herald_admission_reviews_total{plugin="admission-probe",decision="validate",operation="CREATE",verdict="would-deny"}"#;
    assert_eq!(sample(&metrics, would), 1, "{metrics}");
    door.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mutating_plugin_changes_what_is_stored_and_its_broken_changes_are_refused() {
    let door = Door::open(&[Decision::Mutate]).await;
    let stored = door.create("changed", "").await.expect("a mutated write");
    assert_eq!(stored.metadata.labels.unwrap()["mutated"], "yes");
    let (_, message) = door.create("patched", "bad-patch").await.unwrap_err();
    assert!(
        message.contains("could not decide, and its failure policy is Fail")
            && message.contains("does not apply"),
        "{message}"
    );
    let (_, message) = door.create("renaming", "rename").await.unwrap_err();
    assert!(message.contains("object's name"), "{message}");
    let (_, message) = door.create("refusing", "deny").await.unwrap_err();
    assert!(message.contains("probe refuses to mutate"), "{message}");
    door.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_that_cannot_decide_answers_by_its_failure_policy_and_recovers() {
    let door = Door::open(&[Decision::Validate]).await;
    for label in ["trap", "loop", "error"] {
        let (_, message) = door
            .create(&format!("cannot-{label}"), label)
            .await
            .unwrap_err();
        assert!(
            message.contains(
                "herald: plugin admission-probe could not decide, and its failure policy is Fail"
            ),
            "{label}: {message}"
        );
    }
    // The instance is rebuilt: the next review is decided.
    door.create("after", "").await.expect("decided again");
    let metrics = door.metrics();
    let failed = r#"herald_admission_reviews_total{plugin="admission-probe",decision="validate",operation="CREATE",verdict="failed-closed"}"#;
    assert_eq!(sample(&metrics, failed), 3, "{metrics}");
    door.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admission_call_reads_the_cache_and_has_no_side_effects() {
    let door = Door::open(&[Decision::Validate]).await;
    let (_, message) = door.create("writing", "write").await.unwrap_err();
    assert!(
        message.contains("may not patch") && message.contains("no side effects"),
        "the write is refused, saying why: {message}"
    );
    assert!(message.contains("event: "), "{message}");
    assert!(
        !message.contains("event: sent"),
        "the Event is refused: {message}"
    );
    let mut seen = door.map("probe-seen", "");
    seen.data = Some([("value".to_owned(), "seen-7".to_owned())].into());
    door.maps()
        .create(&PostParams::default(), &seen)
        .await
        .unwrap();
    let mut attempt = 0;
    eventually(
        "an admission call reads the cached ConfigMap",
        PATIENCE,
        async || {
            attempt += 1;
            match door.create(&format!("reading-{attempt}"), "read").await {
                Err((_, message)) if message.contains("read seen-7") => Ok(()),
                other => Err(format!("{other:?}")),
            }
        },
    )
    .await;
    door.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn image_policy_refuses_a_pod_with_a_disallowed_image_before_it_exists() {
    let door = Door::open(&[Decision::Validate]).await;
    let pod: Pod = serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "bad",
            "namespace": door.cluster.namespace,
            "labels": {"admission-suite": door.cluster.namespace},
        },
        "spec": {"containers": [{"name": "bad", "image": "evil.example.com/x:1"}]},
    }))
    .unwrap();
    let refused = door
        .cluster
        .pods()
        .create(&PostParams::default(), &pod)
        .await
        .expect_err("the Pod is refused");
    let kube::Error::Api(status) = refused else {
        panic!("no status: {refused}")
    };
    assert!(
        status.message.contains(
            "image-policy: container bad: image evil.example.com/x:1 comes from registry evil.example.com"
        ),
        "{}",
        status.message
    );
    door.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_that_exist_are_judged_by_the_same_validate_as_they_change() {
    // No webhook configuration: the API server lets everything in, and
    // only the scan judges.
    let door = Door::open(&[]).await;
    door.create("old-bad", "deny")
        .await
        .expect("no webhook yet");
    door.create("old-good", "").await.expect("stored");
    let failing = async |expected: &[&str]| {
        let found = door.violations("admission-probe")?;
        let names: Vec<&str> = found.iter().map(|(name, _)| name.as_str()).collect();
        if names == expected {
            Ok(found)
        } else {
            Err(format!("failing: {found:?}"))
        }
    };
    let found = eventually("the existing violator is reported", PATIENCE, async || {
        failing(&["old-bad"]).await
    })
    .await;
    assert_eq!(found[0].1, "probe denies old-bad", "the plugin's message");
    // The probe is granted Events: the violator gets a Warning about it.
    let warnings = eventually("a Warning on the violator", PATIENCE, async || {
        let warnings = door.violation_events().await;
        warnings.contains_key("old-bad").then_some(warnings)
    })
    .await;
    let event = &warnings["old-bad"][0];
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    assert_eq!(
        event.note.as_deref(),
        Some("fails the validation of plugin admission-probe: probe denies old-bad")
    );
    assert_eq!(
        event.reporting_controller.as_deref(),
        Some("herald.dev/admission-probe")
    );
    assert_eq!(
        event.regarding.as_ref().unwrap().kind.as_deref(),
        Some("ConfigMap")
    );
    let metrics = door.metrics();
    assert!(
        sample(
            &metrics,
            r#"herald_admission_violations{plugin="admission-probe"}"#
        ) >= 1,
        "{metrics}"
    );
    // A change is judged again: fixed, it is no longer reported; a new
    // violator is.
    let mut fixed = door.maps().get("old-bad").await.unwrap();
    fixed.metadata.labels.as_mut().unwrap().remove("probe");
    door.maps()
        .replace("old-bad", &PostParams::default(), &fixed)
        .await
        .unwrap();
    door.create("new-bad", "deny")
        .await
        .expect("no webhook yet");
    eventually(
        "the fix and the new violator are seen",
        PATIENCE,
        async || failing(&["new-bad"]).await,
    )
    .await;
    let warnings = eventually("a Warning on the new violator", PATIENCE, async || {
        let warnings = door.violation_events().await;
        warnings.contains_key("new-bad").then_some(warnings)
    })
    .await;
    // One Event per violation: the old violator's, judged again and fixed,
    // got no second one.
    let counts: Vec<(&str, usize)> = warnings
        .iter()
        .map(|(name, events)| (name.as_str(), events.len()))
        .collect();
    assert_eq!(counts, [("new-bad", 1), ("old-bad", 1)]);
    // Deleted, it is gone from the report.
    door.maps()
        .delete("new-bad", &DeleteParams::default())
        .await
        .unwrap();
    eventually(
        "the deleted violator is no longer reported",
        PATIENCE,
        async || failing(&[]).await,
    )
    .await;
    door.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hot_swap_under_writes_loses_no_review_and_answers_none_twice() {
    let door = Door::open(&[Decision::Validate]).await;
    let swapped = std::sync::atomic::AtomicBool::new(false);
    let version = |door: &Door| -> Option<String> {
        let address = door.service.address().to_string();
        let (_, body) = herald_tests::http_get(&address, "/plugins")?;
        let report: serde_json::Value = serde_json::from_str(&body).ok()?;
        report["plugins"]
            .as_array()?
            .iter()
            .find(|p| p["name"] == "admission-probe")
            .and_then(|p| p["sha256"].as_str().map(str::to_owned))
    };
    let before = version(&door).expect("the probe runs");
    // Writes go through the door one after another, through the swap and
    // twenty more after it; every one must be answered by a version of the
    // plugin (none by a failure policy), and each once.
    let writes = door.write_through("load", &swapped);
    let swap = async {
        // The new version: the same behaviour, another build (digest).
        let bytes = artifacts::variant(&artifacts::bytes(artifacts::ADMISSION_PROBE), "swap");
        let staged = door.dir.join("admission-probe.wasm.tmp");
        std::fs::write(&staged, &bytes).unwrap();
        std::fs::rename(&staged, door.dir.join("admission-probe.wasm")).unwrap();
        let digest = herald::plugin::digest(&bytes);
        eventually("the new version runs", PATIENCE, async || {
            version(&door).filter(|v| *v == digest)
        })
        .await;
        swapped.store(true, std::sync::atomic::Ordering::Release);
    };
    let (written, ()) = tokio::join!(writes, swap);
    assert_ne!(version(&door).unwrap(), before);
    let metrics = door.metrics();
    let answered = |verdict: &str| {
        sample(
            &metrics,
            &format!(
                r#"herald_admission_reviews_total{{plugin="admission-probe",decision="validate",operation="CREATE",verdict="{verdict}"}}"#
            ),
        )
    };
    assert_eq!(
        answered("allowed"),
        written,
        "one answer per write: {metrics}"
    );
    for verdict in ["failed-closed", "failed-open", "denied"] {
        assert_eq!(answered(verdict), 0, "{verdict}: {metrics}");
    }
    door.close().await;
}

/// A CA, and leaves it signs for `localhost` and `127.0.0.1`.
struct TestCa {
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
    pem: String,
}

impl TestCa {
    fn new() -> TestCa {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "herald test CA");
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        TestCa {
            pem: cert.pem(),
            issuer: rcgen::Issuer::new(params, key),
        }
    }

    /// Writes a new leaf and its key to `cert` and `key` (each by a rename,
    /// the certificate first, as a rotation does); returns the leaf's DER.
    fn issue(&self, cert: &std::path::Path, key: &std::path::Path) -> Vec<u8> {
        let params =
            rcgen::CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
                .unwrap();
        let leaf_key = rcgen::KeyPair::generate().unwrap();
        let leaf = params.signed_by(&leaf_key, &self.issuer).unwrap();
        for (path, text) in [(cert, leaf.pem()), (key, leaf_key.serialize_pem())] {
            let staged = path.with_extension("staged");
            std::fs::write(&staged, text).unwrap();
            std::fs::rename(&staged, path).unwrap();
        }
        leaf.der().to_vec()
    }
}

/// The certificate the server at `address` presents, verified against `ca`.
async fn served_certificate(address: std::net::SocketAddr, ca: &str) -> Vec<u8> {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(rustls::pki_types::CertificateDer::from_pem_slice(ca.as_bytes()).unwrap())
        .unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(address).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .expect("a TLS handshake");
    tls.get_ref().1.peer_certificates().unwrap()[0].to_vec()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_serving_certificate_is_served_with_no_review_dropped() {
    let ca = TestCa::new();
    let files = ScratchDir::new("rotation").unwrap();
    let served = ServedFiles {
        cert: files.join("tls.crt"),
        key: files.join("tls.key"),
        ca: ca.pem.clone(),
    };
    let first = ca.issue(&served.cert, &served.key);
    let door = Door::open_serving(&[Decision::Validate], "enforce", Some(&served)).await;
    let address = door.service.admission_address().unwrap();
    assert_eq!(served_certificate(address, &ca.pem).await, first);
    let rotated = std::sync::atomic::AtomicBool::new(false);
    let writes = door.write_through("rotation", &rotated);
    let rotate = async {
        let second = ca.issue(&served.cert, &served.key);
        eventually("the new certificate is served", PATIENCE, async || {
            served_certificate(address, &ca.pem).await == second
        })
        .await;
        rotated.store(true, std::sync::atomic::Ordering::Release);
    };
    let (written, ()) = tokio::join!(writes, rotate);
    let metrics = door.metrics();
    let allowed = r#"herald_admission_reviews_total{plugin="admission-probe",decision="validate",operation="CREATE",verdict="allowed"}"#;
    assert_eq!(sample(&metrics, allowed), written, "{metrics}");
    door.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_unfinished_handshakes_does_not_keep_the_api_server_out() {
    let door = Door::open(&[Decision::Validate]).await;
    let address = door.service.admission_address().unwrap();
    // More connections than the server serves at once, each sending
    // nothing: they would hold the door for ten seconds apiece.
    let flood = herald::admission::server::MAX_CONNECTIONS + 100;
    let mut held = Vec::with_capacity(flood);
    for _ in 0..flood {
        held.push(tokio::net::TcpStream::connect(address).await.unwrap());
    }
    // The API server still gets its reviews answered by the plugin, well
    // before any of the flood's handshakes would time out.
    let started = std::time::Instant::now();
    door.create("after-the-flood", "")
        .await
        .expect("the write is answered by the plugin");
    let (code, message) = door
        .create("refused-after-the-flood", "deny")
        .await
        .unwrap_err();
    assert_eq!(
        code, 422,
        "the plugin decided, not a failure policy: {message}"
    );
    assert!(
        started.elapsed() < herald::admission::server::HANDSHAKE_TIMEOUT,
        "answered only after the flood timed out: {:?}",
        started.elapsed()
    );
    drop(held);
    door.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_a_clear_answer_and_the_server_keeps_serving() {
    let door = Door::open(&[]).await;
    let address = door.service.admission_address().unwrap();
    let ca = door.service.admission_ca().unwrap().to_owned();
    let post = |path: &str, body: Vec<u8>| {
        let (address, ca, path) = (address, ca.clone(), path.to_owned());
        async move { https_post(address, &ca, &path, body).await }
    };
    let (status, body) = post("/validate/admission-probe", b"{not json".to_vec()).await;
    assert_eq!(status, 400);
    assert!(body.contains("not an AdmissionReview"), "{body}");
    let v1beta1 =
        br#"{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{}}"#;
    let (status, body) = post("/validate/admission-probe", v1beta1.to_vec()).await;
    assert_eq!(status, 400);
    assert!(body.contains("admissionReviewVersions: [v1]"), "{body}");
    let (status, body) = post("/validate/nobody", review_of_a_config_map()).await;
    assert_eq!(status, 404);
    assert!(body.contains("no plugin \"nobody\" admits here"), "{body}");
    let (status, _) = post("/somewhere/else", review_of_a_config_map()).await;
    assert_eq!(status, 404);
    let huge = vec![b' '; herald::admission::server::MAX_REVIEW_BYTES + 1];
    let (status, body) = post("/validate/admission-probe", huge).await;
    assert_eq!(status, 413, "{body}");
    // A review for a kind the plugin does not admit: its failure policy.
    let mut secret =
        serde_json::from_slice::<serde_json::Value>(&review_of_a_config_map()).unwrap();
    secret["request"]["kind"]["kind"] = "Secret".into();
    let (status, body) = post(
        "/validate/admission-probe",
        serde_json::to_vec(&secret).unwrap(),
    )
    .await;
    assert_eq!(status, 200);
    assert!(
        body.contains("does not admit CREATE of v1 Secret"),
        "{body}"
    );
    assert!(body.contains(r#""allowed":false"#), "{body}");
    // And a good one still works.
    let (status, body) = post("/validate/admission-probe", review_of_a_config_map()).await;
    assert_eq!(status, 200);
    assert!(body.contains(r#""uid":"u-1","allowed":true"#), "{body}");
    door.close().await;
}

fn review_of_a_config_map() -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "u-1",
            "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
            "resource": {"group": "", "version": "v1", "resource": "configmaps"},
            "name": "c",
            "namespace": "default",
            "operation": "CREATE",
            "userInfo": {"username": "test"},
            "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"}},
        }
    }))
    .unwrap()
}

/// POSTs `body` to `path` over TLS, trusting `ca`, HTTP/1.1: the status
/// and the body.
async fn https_post(
    address: std::net::SocketAddr,
    ca: &str,
    path: &str,
    body: Vec<u8>,
) -> (u16, String) {
    use rustls::pki_types::pem::PemObject;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(rustls::pki_types::CertificateDer::from_pem_slice(ca.as_bytes()).unwrap())
        .unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(address).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let mut tls = connector.connect(name, tcp).await.expect("a TLS handshake");
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    tls.write_all(head.as_bytes()).await.unwrap();
    // The server may answer (413) before it has read a body this large.
    let _ = tls.write_all(&body).await;
    let mut response = Vec::new();
    let _ = tls.read_to_end(&mut response).await;
    let response = String::from_utf8_lossy(&response).into_owned();
    let (head, body) = response.split_once("\r\n\r\n").expect("an HTTP response");
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, body.to_owned())
}
