//! Files that are not plugins are refused with a precise error.

use herald::plugin::{LoadError, LoadOptions, LoadedPlugin};
use herald_tests::{artifacts, engine};

fn load_bytes(bytes: &[u8]) -> LoadError {
    LoadedPlugin::load(engine(), bytes, LoadOptions::default()).expect_err("must be refused")
}

#[test]
fn an_empty_file_is_refused() {
    assert!(matches!(load_bytes(b""), LoadError::Empty));
}

#[test]
fn a_truncated_component_is_refused() {
    let bytes = artifacts::bytes(artifacts::RECORDER);
    let err = load_bytes(&bytes[..bytes.len() / 2]);
    assert!(matches!(err, LoadError::Compile(_)), "{err}");
    assert!(matches!(load_bytes(&bytes[..6]), LoadError::Truncated(6)));
}

#[test]
fn random_bytes_are_refused() {
    let noise: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    assert!(matches!(load_bytes(&noise), LoadError::NotWasm));
}

#[test]
fn a_core_module_is_refused_with_advice() {
    let module = b"\0asm\x01\0\0\0";
    let err = load_bytes(module);
    assert!(matches!(err, LoadError::CoreModule));
    assert!(err.to_string().contains("wasm32-wasip2"), "{err}");
}

#[test]
fn an_oversized_file_is_refused_before_compiling() {
    let settings = herald::plugin::EngineSettings {
        max_file_bytes: 1024,
        ..Default::default()
    };
    let engine = herald::plugin::PluginEngine::new(settings).unwrap();
    let bytes = artifacts::bytes(artifacts::RECORDER);
    let err = LoadedPlugin::load(&engine, &bytes, LoadOptions::default()).unwrap_err();
    assert!(
        matches!(err, LoadError::TooLarge { max: 1024, .. }),
        "{err}"
    );
}

#[test]
fn a_component_of_another_world_is_refused() {
    let err = load_bytes(&artifacts::bytes(artifacts::WRONG_WORLD));
    assert!(matches!(err, LoadError::WrongWorld(_)), "{err}");
    assert!(
        err.to_string().contains(
            "a herald:plugin/plugin world this host runs (0.7.0, 0.6.0, 0.5.0, 0.4.0, 0.3.0, 0.2.0, 0.1.0)"
        ),
        "{err}"
    );
}

#[test]
fn a_component_without_wasi_imports_loads() {
    let plugin = LoadedPlugin::load(
        engine(),
        &artifacts::bytes(artifacts::NO_WASI),
        LoadOptions::default(),
    )
    .unwrap();
    assert_eq!(plugin.name(), "no-wasi");
}

#[test]
fn only_files_on_the_sha256_allow_list_load_when_there_is_one() {
    let recorder = artifacts::bytes(artifacts::RECORDER);
    let noop = artifacts::bytes(artifacts::NOOP);
    let options = LoadOptions {
        allowed_digests: Some(vec![herald::plugin::digest(&recorder)].into()),
        ..LoadOptions::default()
    };
    LoadedPlugin::load(engine(), &recorder, options.clone()).expect("an allowed file loads");
    let err = LoadedPlugin::load(engine(), &noop, options).expect_err("must be refused");
    let digest = herald::plugin::digest(&noop);
    assert!(
        matches!(&err, LoadError::NotAllowed(d) if *d == digest),
        "{err}"
    );
    let message = err.to_string();
    assert!(
        message.contains(&digest) && message.contains("pluginFiles.allowedSha256"),
        "names the digest and the setting to change: {message}"
    );
}
