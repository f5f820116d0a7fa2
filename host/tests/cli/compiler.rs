//! Plugins compiled in a child process (`herald compile-artifact`), as the
//! daemon does: the result runs like one compiled in process, a broken file
//! is refused with the same reason, and a compiler that hangs or dies is
//! reported without taking the host with it.

use super::process::{Running, herald_at, temp_dir};
use herald::plugin::{
    ArtifactCache, CompileOutcome, Compiler, EngineSettings, EventContext, GroupVersionKind,
    LoadError, LoadOptions, LoadedPlugin, PluginEngine, PluginInstance,
};
use herald_test_artifacts as artifacts;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn engine(program: &Path, timeout: Duration) -> PluginEngine {
    PluginEngine::new(EngineSettings {
        compiler: Compiler::Subprocess {
            program: program.to_owned(),
            timeout,
        },
        ..EngineSettings::default()
    })
    .unwrap()
}

fn herald_child() -> PluginEngine {
    engine(
        Path::new(env!("CARGO_BIN_EXE_herald")),
        Duration::from_secs(300),
    )
}

/// A stand-in compiler: a shell script of `body`.
fn script(dir: &Path, body: &str) -> PathBuf {
    let path = dir.join("fake-compiler");
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn context() -> EventContext {
    EventContext {
        kind: GroupVersionKind {
            group: String::new(),
            version: "v1".into(),
            kind: "Pod".into(),
        },
        resource: "pods".into(),
        key: "shop/web-0".into(),
        resource_version: "1".into(),
        is_initial_list: false,
        is_resync: false,
        final_state_unknown: false,
    }
}

#[test]
fn a_plugin_compiled_in_a_child_process_runs_and_lands_in_the_cache() {
    let dir = temp_dir("child-compile");
    let engine = herald_child();
    let cache = ArtifactCache::open(&dir, &engine).unwrap();
    let bytes = artifacts::bytes(artifacts::POD_LIFECYCLE);
    let (plugin, outcome) =
        LoadedPlugin::load_cached(&engine, Some(&cache), &bytes, LoadOptions::default())
            .expect("compiled in the child");
    assert!(
        matches!(outcome, CompileOutcome::Compiled(_)),
        "{outcome:?}"
    );
    assert!(
        cache.entry_path(plugin.digest()).exists(),
        "the child wrote the entry"
    );
    let pod = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../bench/data/pod-4k.json"
    ))
    .unwrap();
    PluginInstance::new(plugin)
        .unwrap()
        .on_add(&context(), &pod)
        .expect("the child's artifact runs");
    let (_, again) =
        LoadedPlugin::load_cached(&engine, Some(&cache), &bytes, LoadOptions::default()).unwrap();
    assert_eq!(again, CompileOutcome::CacheHit);
    // Without a cache the child's artifact is read, then removed.
    LoadedPlugin::load_cached(&engine, None, &bytes, LoadOptions::default())
        .expect("compiled in the child without a cache");
}

#[test]
fn a_broken_file_is_refused_by_the_child_with_the_same_reason() {
    let bytes = artifacts::bytes(artifacts::RECORDER);
    let truncated = &bytes[..bytes.len() / 2];
    let err = LoadedPlugin::load(&herald_child(), truncated, LoadOptions::default())
        .expect_err("must be refused");
    assert!(matches!(err, LoadError::Rejected(_)), "{err:?}");
    assert!(
        err.to_string()
            .starts_with("invalid or corrupt component: "),
        "{err}"
    );
}

#[test]
fn a_compiler_that_hangs_is_stopped_at_the_time_limit() {
    let dir = temp_dir("hanging-compiler");
    let engine = engine(&script(&dir, "exec sleep 600"), Duration::from_secs(1));
    let bytes = artifacts::bytes(artifacts::NOOP);
    let err = LoadedPlugin::load(&engine, &bytes, LoadOptions::default()).expect_err("stopped");
    assert!(
        err.to_string()
            .contains("compiling took longer than 1 s (pluginFiles.compileTimeout)"),
        "{err}"
    );
}

#[test]
fn a_compiler_that_ends_without_its_report_is_refused_with_what_it_said() {
    let dir = temp_dir("mute-compiler");
    let engine = engine(
        &script(
            &dir,
            "echo 'warming up' >&2; echo 'no space left' >&2; exit 3",
        ),
        Duration::from_secs(60),
    );
    let bytes = artifacts::bytes(artifacts::NOOP);
    let err = LoadedPlugin::load(&engine, &bytes, LoadOptions::default()).expect_err("refused");
    assert!(matches!(err, LoadError::Compiler(_)), "{err:?}");
    assert!(
        err.to_string()
            .contains("the compiler process exited with 3 without a report: no space left"),
        "{err}"
    );
}

#[test]
fn a_compiler_that_dies_is_reported_and_the_host_goes_on() {
    let dir = temp_dir("dying-compiler");
    let engine = engine(&script(&dir, "kill -KILL $$"), Duration::from_secs(60));
    let bytes = artifacts::bytes(artifacts::NOOP);
    let err = LoadedPlugin::load(&engine, &bytes, LoadOptions::default()).expect_err("killed");
    assert!(
        err.to_string().contains("the compiler process was killed"),
        "{err}"
    );
    // The same engine, with a working compiler, still loads plugins.
    LoadedPlugin::load(&herald_child(), &bytes, LoadOptions::default()).expect("loads");
}

#[test]
fn the_daemon_compiles_with_its_own_executable_after_its_file_is_deleted() {
    // As when a package upgrade replaces the binary under a running daemon:
    // the child compiler must still be the daemon's own executable (a new
    // one's artifacts could be refused; a deleted path cannot be started).
    let work = temp_dir("deleted-binary");
    let program = work.join("herald");
    std::fs::copy(env!("CARGO_BIN_EXE_herald"), &program).unwrap();
    let plugins = work.join("plugins.d");
    std::fs::create_dir_all(&plugins).unwrap();
    let mut command = herald_at(&program);
    command.args([
        "run",
        "--embedded",
        "--plugins",
        plugins.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
    ]);
    let mut daemon = Running::spawn(command);
    daemon.wait_for_log("following the plugin directory");
    std::fs::remove_file(&program).unwrap();

    std::fs::copy(artifacts::NOOP, plugins.join("noop.wasm")).unwrap();
    let outcome = daemon.wait_for_log("noop.wasm");
    assert!(
        outcome.contains("plugin loaded; compiled in"),
        "{outcome}\n{}",
        daemon.log.join("\n")
    );
    daemon.terminate();
    let (code, _) = daemon.wait();
    assert_eq!(code, Some(0));
}
