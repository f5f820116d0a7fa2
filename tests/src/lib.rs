//! Helpers shared by Herald's integration tests: loading the built plugins
//! and reading what they log.

pub use herald_test_artifacts as artifacts;

use herald::plugin::{LoadOptions, LoadedPlugin, MemorySink, OwnedLogLine, PluginEngine};
use std::sync::{Arc, OnceLock};

/// The engine shared by the tests of one process (as the daemon shares one).
pub fn engine() -> &'static PluginEngine {
    static ENGINE: OnceLock<PluginEngine> = OnceLock::new();
    ENGINE
        .get_or_init(|| PluginEngine::new(Default::default()).expect("creating the plugin engine"))
}

/// Loads a built plugin with `config`, logging into a fresh memory sink.
pub fn load(path: &str, config: Option<serde_json::Value>) -> (LoadedPlugin, MemorySink) {
    load_with(
        path,
        LoadOptions {
            config: config.map(|c| c.to_string()),
            ..LoadOptions::default()
        },
    )
}

/// Loads a built plugin with the given options, but logging into a fresh memory sink.
pub fn load_with(path: &str, options: LoadOptions) -> (LoadedPlugin, MemorySink) {
    let sink = MemorySink::default();
    let options = LoadOptions {
        sink: Arc::new(sink.clone()),
        ..options
    };
    let plugin = LoadedPlugin::load(engine(), &artifacts::bytes(path), options)
        .unwrap_or_else(|e| panic!("loading {path}: {e}"));
    (plugin, sink)
}

/// The messages of the lines a plugin logged.
pub fn messages(lines: &[OwnedLogLine]) -> Vec<String> {
    lines.iter().map(|line| line.message.clone()).collect()
}
