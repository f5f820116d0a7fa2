//! Configuration and grants follow the plugin, not its file: a plugin is
//! asked who it is with no configuration, and then given the settings of
//! that name only, if its file is one the settings pin and its sidecar (if
//! it names a plugin) names it.

use super::reload::{Rig, variant, write};
use herald::plugin::{LoadError, LoadOptions, LoadedPlugin, digest};
use herald::reload::FileState;
use herald::reload::PluginConfig;
use herald_tests::{PATIENCE, artifacts, engine, eventually};
use std::collections::BTreeMap;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renamed_file_gets_the_settings_of_the_plugin_it_is_not_of_its_file_name() {
    let rig = Rig::start_with_namespaced(
        |_| {
            BTreeMap::from([(
                "slow".to_owned(),
                PluginConfig {
                    config: Some(serde_json::json!({"delayMs": 1})),
                    ..PluginConfig::default()
                },
            )])
        },
        Default::default(),
    )
    .await;
    rig.cluster.create_pod("renamed", "a").await;
    // The `slow` plugin, in the file the recorder's settings would go to by
    // file name. Given the recorder's configuration it would fail (its
    // settings refuse unknown fields); given its own, it waits 1 ms.
    let slow = artifacts::bytes(artifacts::SLOW);
    write(&rig.dir.join("recorder.wasm"), &slow);
    let status = rig.running("recorder.wasm", &slow).await;
    assert_eq!(status.plugin.as_deref(), Some("slow"));
    eventually(
        "the slow plugin handles the Pod with its own settings",
        PATIENCE,
        async || {
            rig.lines()
                .iter()
                .any(|l| l.plugin == "slow" && l.message.contains("delay_ms=1"))
        },
    )
    .await;
    assert!(
        rig.lines()
            .iter()
            .all(|l| !l.message.contains("delay_ms=200")),
        "the slow plugin never ran with another plugin's (or no) settings"
    );
    rig.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_build_other_than_the_pinned_ones_is_refused_and_the_pinned_one_keeps_running() {
    let v1 = variant("pinned");
    let pinned = digest(&v1);
    let rig = Rig::start_with_namespaced(
        |_| {
            BTreeMap::from([(
                "recorder".to_owned(),
                PluginConfig {
                    sha256: vec![pinned.clone()],
                    ..PluginConfig::default()
                },
            )])
        },
        Default::default(),
    )
    .await;
    write(&rig.dir.join("recorder.wasm"), &v1);
    rig.running("recorder.wasm", &v1).await;
    let v2 = variant("not-pinned");
    write(&rig.dir.join("recorder.wasm"), &v2);
    let refused = rig
        .file_status("recorder.wasm", |s| s.state == FileState::Failed)
        .await;
    let error = refused.last_error.unwrap();
    assert!(error.contains("plugins.recorder.sha256"), "{error}");
    assert!(
        error.contains(&digest(&v2)),
        "names the file's digest: {error}"
    );
    let running = rig.daemon.status();
    assert_eq!(running.len(), 1);
    assert_eq!(running[0].sha256, pinned, "the pinned build keeps running");
    rig.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sidecar_naming_another_plugin_is_refused_rather_than_applied() {
    let rig = Rig::start_with_namespaced(|_| BTreeMap::new(), Default::default()).await;
    std::fs::write(rig.dir.join("recorder.yaml"), "plugin: billing\n").unwrap();
    write(&rig.dir.join("recorder.wasm"), &variant("sidecar"));
    let refused = rig
        .file_status("recorder.wasm", |s| s.state == FileState::Failed)
        .await;
    let error = refused.last_error.unwrap();
    assert!(error.contains("\"billing\""), "{error}");
    assert!(error.contains("\"recorder\""), "{error}");
    assert!(rig.daemon.names().is_empty());
    rig.finish().await;
}

#[test]
fn a_plugin_whose_name_depends_on_its_configuration_is_refused() {
    let bytes = artifacts::bytes(artifacts::RECORDER);
    let (identified, _) =
        LoadedPlugin::identify(engine(), None, &bytes, &LoadOptions::default()).unwrap();
    assert_eq!(identified.name(), "recorder");
    let err = identified
        .configure(LoadOptions {
            config: Some(r#"{"name": "billing"}"#.into()),
            ..LoadOptions::default()
        })
        .unwrap_err();
    assert!(
        matches!(&err, LoadError::IdentityChanged { announced, configured }
            if announced == "recorder" && configured == "billing"),
        "{err}"
    );
    assert!(err.to_string().contains("plugins.recorder"), "{err}");
}

/// How many adds of the ConfigMap `name` the recorder at `rev` logged, and
/// how many initial-list adds in all (a restart lists again).
fn adds(rig: &Rig, rev: &str, name: &str) -> (usize, usize) {
    let key = format!("{}/{name}", rig.cluster.namespace);
    let events = rig.events_of(rev);
    (
        events
            .iter()
            .filter(|e| e.kind == "add" && e.key == key)
            .count(),
        events
            .iter()
            .filter(|e| e.kind == "add" && e.initial)
            .count(),
    )
}

/// Creates the ConfigMap `name` and waits until the recorder at `rev` has
/// its add; returns how many initial-list adds it logged by then.
async fn delivered(rig: &Rig, rev: &str, name: &str) -> usize {
    rig.cluster.create_config_map(name, "a", "1").await;
    eventually(
        &format!("the recorder records {name}"),
        PATIENCE,
        async || adds(rig, rev, name).0 >= 1,
    )
    .await;
    let (count, initial) = adds(rig, rev, name);
    assert_eq!(count, 1, "{name} delivered once: the plugin runs once");
    initial
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exact_copy_of_a_pinned_plugin_is_a_duplicate_and_never_stops_it() {
    let v1 = variant("pinned");
    let pinned = digest(&v1);
    let rev = herald::plugin::revision(&pinned).to_owned();
    let rig = Rig::start_with_namespaced(
        |_| {
            BTreeMap::from([(
                "recorder".to_owned(),
                PluginConfig {
                    sha256: vec![pinned.clone()],
                    ..PluginConfig::default()
                },
            )])
        },
        Default::default(),
    )
    .await;
    write(&rig.dir.join("recorder.wasm"), &v1);
    rig.running("recorder.wasm", &v1).await;
    let initial = delivered(&rig, &rev, "before-copy").await;

    // The exact copy under another name: the same plugin, run once.
    write(&rig.dir.join("recorder-copy.wasm"), &v1);
    let copy = rig
        .file_status("recorder-copy.wasm", |s| s.state == FileState::Duplicate)
        .await;
    assert_eq!(copy.duplicate_of, Some(rig.path("recorder.wasm")));
    assert_eq!(copy.plugin.as_deref(), Some("recorder"));
    assert_eq!(copy.sha256.as_deref(), Some(pinned.as_str()));
    let original = rig.running("recorder.wasm", &v1).await;
    assert_eq!(rig.daemon.names(), ["recorder"]);
    assert_eq!(delivered(&rig, &rev, "after-copy").await, initial);

    // A build that does not match the pin, under a third name: refused on
    // its own, naming why; it is no rival.
    let other = variant("not-pinned");
    write(&rig.dir.join("recorder-evil.wasm"), &other);
    let refused = rig
        .file_status("recorder-evil.wasm", |s| s.state == FileState::Failed)
        .await;
    let error = refused.last_error.unwrap();
    assert!(error.contains("plugins.recorder.sha256"), "{error}");
    assert!(!error.contains("more than one file"), "{error}");
    assert_eq!(delivered(&rig, &rev, "after-evil").await, initial);
    assert_eq!(
        rig.file_status("recorder.wasm", |_| true).await.loaded_at,
        original.loaded_at,
        "the running file was never touched"
    );

    // The original goes, the copy stays: the plugin keeps running, from
    // the copy, without a stop (no new initial list).
    std::fs::remove_file(rig.dir.join("recorder.wasm")).unwrap();
    let took_over = rig
        .file_status("recorder-copy.wasm", |s| s.state == FileState::Loaded)
        .await;
    assert_eq!(took_over.sha256.as_deref(), Some(pinned.as_str()));
    assert_eq!(took_over.loaded_at, original.loaded_at);
    assert_eq!(rig.daemon.names(), ["recorder"]);
    assert_eq!(
        delivered(&rig, &rev, "after-removal").await,
        initial,
        "no second initial list: the plugin was not restarted"
    );

    // The copy goes too: now the plugin stops.
    std::fs::remove_file(rig.dir.join("recorder-copy.wasm")).unwrap();
    eventually(
        "the plugin stops with its last file",
        PATIENCE,
        async || rig.daemon.names().is_empty(),
    )
    .await;
    rig.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_without_the_evidence_a_signed_plugin_needs_is_refused_and_never_stops_it() {
    let signer = super::authority::Signer::new();
    let keys = super::reload::temp_dir("keys");
    std::fs::write(keys.join("cosign.pub"), signer.public_pem()).unwrap();
    let rig = Rig::start_with_keys(
        |_| {
            let mut entry = PluginConfig::default();
            // Events need evidence: a pin, a signature or allowUnpinned.
            entry.grants.events = Some(herald::capability::events::EventsGrant::default());
            BTreeMap::from([("recorder".to_owned(), entry)])
        },
        Default::default(),
        vec![keys.join("cosign.pub")],
    )
    .await;
    let v1 = variant("signed");
    let rev = herald::plugin::revision(&digest(&v1)).to_owned();
    std::fs::write(rig.dir.join("recorder.wasm.sig"), signer.sign(&v1)).unwrap();
    write(&rig.dir.join("recorder.wasm"), &v1);
    rig.running("recorder.wasm", &v1).await;
    let initial = delivered(&rig, &rev, "before").await;

    // Another build, unsigned; the same build without its signature; the
    // same build signed by a key the operator does not trust: each refused
    // on its own, none a rival.
    let cases = [
        ("recorder-other.wasm", variant("other"), None),
        ("recorder-bare.wasm", v1.clone(), None),
        (
            "recorder-forged.wasm",
            v1.clone(),
            Some(super::authority::Signer::new().sign(&v1)),
        ),
    ];
    for (file, bytes, signature) in cases {
        if let Some(signature) = signature {
            std::fs::write(rig.dir.join(format!("{file}.sig")), signature).unwrap();
        }
        write(&rig.dir.join(file), &bytes);
        let refused = rig
            .file_status(file, |s| s.state == FileState::Failed)
            .await;
        let error = refused.last_error.unwrap();
        assert!(error.contains("is granted Events"), "{file}: {error}");
        assert_eq!(rig.daemon.names(), ["recorder"]);
        assert_eq!(
            delivered(&rig, &rev, file.trim_end_matches(".wasm")).await,
            initial
        );
    }
    rig.running("recorder.wasm", &v1).await;

    // The same build with its signature: a duplicate.
    std::fs::write(rig.dir.join("recorder-copy.wasm.sig"), signer.sign(&v1)).unwrap();
    write(&rig.dir.join("recorder-copy.wasm"), &v1);
    rig.file_status("recorder-copy.wasm", |s| s.state == FileState::Duplicate)
        .await;
    assert_eq!(delivered(&rig, &rev, "after-copy").await, initial);
    rig.finish().await;
}
