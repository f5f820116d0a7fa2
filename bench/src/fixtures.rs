//! The plugin components the benchmarks run: built from `plugins/` by
//! `herald-test-artifacts`, compiled once into one engine, loaded with a
//! log sink the benchmarks read ([`LogCollector`]).

use herald::capability::log::{LogLine, LogRate, LogSink};
use herald::plugin::{LoadOptions, LoadedPlugin, PluginEngine, RequestedLimits, digest};
use herald_test_artifacts as artifacts;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wasmtime::component::Component;

/// The fixture plugins the benchmarks use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fixture {
    /// Does nothing.
    Noop,
    /// Does nothing, taking notifications in batches of up to 64.
    NoopBatch,
    /// Does nothing without the SDK's glue: the floor of a call.
    Floor,
    /// The same through world 0.6.0's handler export.
    HandlerFloor,
    /// Decodes `metadata` with serde_json.
    JsonMeta,
    /// Decodes the whole k8s-openapi `Pod`.
    TypedPod,
    /// Reads a Pod's metadata, status and node through the SDK's lazy view.
    PodView,
    /// Does nothing; named by its configuration.
    NamedNoop,
    /// Records write-to-entry latencies; named by its configuration.
    LatencyProbe,
    /// Spins forever in wasm on every add.
    InfiniteLoop,
    /// Sleeps in a host call on every notification.
    Blocker,
}

impl Fixture {
    /// The fixture's crate name.
    pub fn label(self) -> &'static str {
        match self {
            Fixture::Noop => "no-op",
            Fixture::NoopBatch => "no-op-batch",
            Fixture::Floor => "floor",
            Fixture::HandlerFloor => "handler-floor",
            Fixture::JsonMeta => "json-meta",
            Fixture::TypedPod => "typed-pod",
            Fixture::PodView => "pod-view",
            Fixture::NamedNoop => "named-noop",
            Fixture::LatencyProbe => "latency-probe",
            Fixture::InfiniteLoop => "infinite-loop",
            Fixture::Blocker => "blocker",
        }
    }

    fn path(self) -> &'static str {
        match self {
            Fixture::Noop => artifacts::NOOP,
            Fixture::NoopBatch => artifacts::NOOP_BATCH,
            Fixture::Floor => artifacts::FLOOR,
            Fixture::HandlerFloor => artifacts::HANDLER_FLOOR,
            Fixture::JsonMeta => artifacts::JSON_META,
            Fixture::TypedPod => artifacts::TYPED_POD,
            Fixture::PodView => artifacts::POD_VIEW,
            Fixture::NamedNoop => artifacts::NAMED_NOOP,
            Fixture::LatencyProbe => artifacts::LATENCY_PROBE,
            Fixture::InfiniteLoop => artifacts::INFINITE_LOOP,
            Fixture::Blocker => artifacts::BLOCKER,
        }
    }
}

/// One engine and the fixtures compiled into it (each compiled once).
pub struct Fixtures {
    engine: PluginEngine,
    compiled: Mutex<HashMap<Fixture, (Component, String)>>,
    /// Every plugin's log lines.
    pub logs: Arc<LogCollector>,
}

impl Default for Fixtures {
    fn default() -> Self {
        Self::new()
    }
}

impl Fixtures {
    /// A fresh engine with nothing compiled yet.
    pub fn new() -> Self {
        Fixtures {
            engine: PluginEngine::new(Default::default()).expect("creating the plugin engine"),
            compiled: Mutex::new(HashMap::new()),
            logs: Arc::new(LogCollector::default()),
        }
    }

    /// The engine.
    pub fn engine(&self) -> &PluginEngine {
        &self.engine
    }

    /// The compiled component of `fixture` and its file's digest.
    pub fn compiled(&self, fixture: Fixture) -> (Component, String) {
        let mut compiled = self.compiled.lock().expect("fixture cache");
        compiled
            .entry(fixture)
            .or_insert_with(|| {
                let bytes = artifacts::bytes(fixture.path());
                let component = self
                    .engine
                    .compile(&bytes)
                    .unwrap_or_else(|e| panic!("compiling {}: {e}", fixture.label()));
                (component, digest(&bytes))
            })
            .clone()
    }

    /// Loads `fixture` with no configuration.
    pub fn load(&self, fixture: Fixture) -> LoadedPlugin {
        self.load_with(fixture, None)
    }

    /// Loads `fixture` as a plugin named `name` (for the fixtures that take
    /// their name from their configuration).
    pub fn load_named(&self, fixture: Fixture, name: &str) -> LoadedPlugin {
        self.load_with(
            fixture,
            Some(serde_json::json!({ "name": name }).to_string()),
        )
    }

    /// Loads a fixture that never returns by itself (`infinite-loop`, or
    /// `blocker` sleeping in a host call) with `deadline` as its call deadline.
    pub fn load_stuck(&self, fixture: Fixture, deadline: Duration) -> LoadedPlugin {
        let config = (fixture == Fixture::Blocker).then(|| r#"{"mode": "sleep"}"#.to_owned());
        self.load_with_limits(
            fixture,
            config,
            RequestedLimits {
                call_deadline: Some(deadline),
                memory_bytes: None,
            },
        )
    }

    fn load_with(&self, fixture: Fixture, config: Option<String>) -> LoadedPlugin {
        self.load_with_limits(fixture, config, RequestedLimits::default())
    }

    fn load_with_limits(
        &self,
        fixture: Fixture,
        config: Option<String>,
        overrides: RequestedLimits,
    ) -> LoadedPlugin {
        let (component, digest) = self.compiled(fixture);
        let options = LoadOptions {
            config,
            overrides,
            sink: self.logs.clone(),
            // The probes report in bursts of long lines: never drop them.
            log_rate: LogRate {
                lines_per_second: 1_000_000,
                burst: 1_000_000,
                ..LogRate::default()
            },
            ..LoadOptions::default()
        };
        LoadedPlugin::from_component(&self.engine, component, digest, options)
            .unwrap_or_else(|e| panic!("loading {}: {e}", fixture.label()))
    }
}

/// A log sink keeping every line as (plugin, message).
#[derive(Debug, Default)]
pub struct LogCollector {
    lines: Mutex<Vec<(String, String)>>,
}

impl LogSink for LogCollector {
    fn write(&self, line: &LogLine<'_>) {
        self.lines
            .lock()
            .expect("log collector")
            .push((line.plugin.to_owned(), line.message.to_owned()));
    }
}

impl LogCollector {
    /// Takes every line logged so far.
    pub fn take(&self) -> Vec<(String, String)> {
        std::mem::take(&mut *self.lines.lock().expect("log collector"))
    }

    /// Lines logged so far whose message starts with `prefix`.
    pub fn count_starting_with(&self, prefix: &str) -> usize {
        self.lines
            .lock()
            .expect("log collector")
            .iter()
            .filter(|(_, message)| message.starts_with(prefix))
            .count()
    }
}
