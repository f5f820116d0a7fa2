//! Configuration and grants follow the plugin, not its file: a plugin is
//! asked who it is with no configuration, and then given the settings of
//! that name only, if its file is one the settings pin and its sidecar (if
//! it names a plugin) names it.

use super::daemon::eventually;
use super::reload::{Rig, variant, write};
use herald::plugin::{LoadError, LoadOptions, LoadedPlugin, digest};
use herald::reload::FileState;
use herald::reload::PluginConfig;
use herald_tests::{artifacts, engine};
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
        || {
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
