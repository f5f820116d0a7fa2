//! B11: what a plugin written with the Python, JavaScript or Go SDK costs
//! the host, against the same plugin written with the Rust SDK, in the same
//! run (issue 17, item 5; Go: issue 31).
//!
//! The subjects: the Rust fixtures `noop` and `json-meta` (serde_json,
//! metadata only) from `herald-test-artifacts`, and one component per SDK
//! built at the start of the run from `bench/plugins/` with the pinned
//! toolchains (componentize-py through `python3 -m herald_sdk build`,
//! ComponentizeJS through `herald-build`, the standard Go toolchain through
//! `herald plugin build`). That component does nothing with
//! an added object, or, configured with `{"mode": "parse"}`, parses it and
//! reads its name, or (Go and Python), configured with `{"mode": "view"}`,
//! reads the name from the metadata alone through the SDK's lazy read: the
//! handler is picked when the instance is created (Go: on its first call, a
//! warm-up call), so a timed call pays for one of them, and the run builds
//! one component per language (once) and compiles it once per compile
//! repetition. If a toolchain is missing the benchmark fails, naming the
//! command that installs it.
//!
//! Measured for each language, Rust's figure being the baseline:
//!
//! - **size** of the component file;
//! - **cold compile**: wall time, CPU time and peak RSS of a child process
//!   running `herald compile-artifact` (the binary `herald-child`, this
//!   crate's copy of the `herald` CLI), as the daemon compiles, writing the
//!   entry into a fresh artifact cache; CPU time and peak RSS (`ru_maxrss`)
//!   as `herald-child --rusage` reports them (spawned from this process, a
//!   child's `ru_maxrss` would start at this process's own peak);
//! - **cached load**: what `LoadedPlugin::load_cached` does over that
//!   cache, timed in two halves: the
//!   file's sha256, reading and checking the entry, deserializing it,
//!   pre-instantiating and reading the manifest (one instantiation), as a
//!   restarted daemon loads a known file;
//! - **per call**: CPU time of `on_add` on a warm instance with distinct
//!   4 KB Pods, as B1's bare call: the no-op against Rust's `noop`, the
//!   parse and view handlers against `json-meta`. Each instance is fresh
//!   and handles `b11_warm_up_calls` Pods before the timed ones: a Go
//!   instance's heap grows over its first thousand or so, which once made
//!   its first 2,000 calls cost half as much again as later ones; the
//!   no-op's first calls are reported in the details;
//! - **memory per live instance**: N instances of the no-op, each having
//!   handled one 4 KB Pod, held at once beside one made first; the growth
//!   of this process's PSS divided by N (the RSS, which counts a shared
//!   memory image's pages once per instance mapping them, in the details);
//! - **memory per reclaimed instance**: the same N instances, each
//!   reclaimed after its call (`reclaimIdleAfter`), against the live ones;
//!   and the wall time of the delivery that wakes one (instantiating
//!   afresh, then the call), in the details.

use crate::b1_throughput::context;
use crate::data::{PodSize, cached_pods};
use crate::fixtures::Fixtures;
use crate::measure::{Samples, proportional_bytes, resident_bytes, thread_cpu_ns};
use crate::settings::Settings;
use crate::table::{Goal, Row, Unit};
use herald::build::go;
use herald::capability::log::LogRate;
use herald::plugin::{
    ArtifactCache, CompileOutcome, DEFAULT_COMPILE_TIMEOUT, DEFAULT_MAX_FILE_BYTES, LoadOptions,
    LoadedPlugin, PluginEngine, PluginInstance, digest,
};
use herald::store::CachedObject;
use herald_test_artifacts as artifacts;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The configuration of the Go and Python plugins' metadata-only handler.
const VIEW_CONFIG: &str = r#"{"mode": "view"}"#;

/// How long a build or a compile may take before the benchmark gives up.
const CHILD_PATIENCE: Duration = Duration::from_secs(900);

/// The memory limit of Herald's container in `deploy/30-deployment.yaml`,
/// which a compile child counts against while it runs.
const DEPLOY_MEMORY_LIMIT: f64 = 1024.0 * 1024.0 * 1024.0;

/// The languages compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Language {
    Rust,
    Python,
    JavaScript,
    Go,
}

impl Language {
    fn label(self) -> &'static str {
        match self {
            Language::Rust => "Rust",
            Language::Python => "Python",
            Language::JavaScript => "JavaScript",
            Language::Go => "Go",
        }
    }

    /// Issue 44's goal for a no-op call against the Rust SDK's.
    fn noop_goal(self) -> f64 {
        match self {
            Language::Rust => 1.0,
            Language::Go => 2.0,
            Language::Python => 3.0,
            Language::JavaScript => 5.0,
        }
    }

    fn id(self) -> &'static str {
        match self {
            Language::Rust => "rust",
            Language::Python => "py",
            Language::JavaScript => "js",
            Language::Go => "go",
        }
    }
}

/// What a child process used: wall time, CPU time (user + system) and peak RSS.
#[derive(Debug, Clone, Copy)]
struct ChildUsage {
    wall: Duration,
    cpu: Duration,
    max_rss_bytes: u64,
}

/// One plugin file under test and how to configure its two handlers.
struct Subject {
    language: Language,
    /// The no-op component.
    noop: Vec<u8>,
    /// The parse component: for Rust another file (`json-meta`), for the
    /// SDKs the same file as `noop`.
    parse: Option<Vec<u8>>,
    /// Configuration selecting the parse handler, if it is chosen by config.
    parse_config: Option<String>,
    /// How the SDK component was built (none for Rust: built by cargo).
    build: Option<ChildUsage>,
}

/// Per-repetition values of one figure, per language.
#[derive(Debug, Default)]
struct Figures {
    rust: Samples,
    python: Samples,
    javascript: Samples,
    go: Samples,
}

impl Figures {
    fn of(&mut self, language: Language) -> &mut Samples {
        match language {
            Language::Rust => &mut self.rust,
            Language::Python => &mut self.python,
            Language::JavaScript => &mut self.javascript,
            Language::Go => &mut self.go,
        }
    }

    fn get(&self, language: Language) -> &Samples {
        match language {
            Language::Rust => &self.rust,
            Language::Python => &self.python,
            Language::JavaScript => &self.javascript,
            Language::Go => &self.go,
        }
    }
}

/// Runs B11.
pub fn run(settings: &Settings, fixtures: &Fixtures) -> Vec<Row> {
    let program = settings.compiler_program.clone().expect(
        "B11 compiles in a child process and needs Settings::compiler_program \
         (env!(\"CARGO_BIN_EXE_herald-child\") in a bench or test of herald-bench)",
    );
    let scratch =
        herald::scratch::ScratchDir::new("b11").expect("creating B11's scratch directory");

    crate::progress("B11 building the Python, JavaScript and Go components");
    let [python, javascript, go] = build_sdk_components(&program, &scratch);
    let subjects = [
        Subject {
            language: Language::Rust,
            noop: artifacts::bytes(artifacts::NOOP),
            parse: Some(artifacts::bytes(artifacts::JSON_META)),
            parse_config: None,
            build: None,
        },
        Subject {
            language: Language::Python,
            noop: python.0,
            parse: None,
            parse_config: Some(r#"{"mode": "parse"}"#.into()),
            build: Some(python.1),
        },
        Subject {
            language: Language::JavaScript,
            noop: javascript.0,
            parse: None,
            parse_config: Some(r#"{"mode": "parse"}"#.into()),
            build: Some(javascript.1),
        },
        Subject {
            language: Language::Go,
            noop: go.0,
            parse: None,
            parse_config: Some(r#"{"mode": "parse"}"#.into()),
            build: Some(go.1),
        },
    ];
    let engine = fixtures.engine();

    // Cold compiles in a child, then a cached load of each from its entry.
    let mut compile_wall = Figures::default();
    let mut compile_cpu = Figures::default();
    let mut compile_rss = Figures::default();
    let mut cached_load = Figures::default();
    let mut load_artifact = Figures::default();
    let mut entry_bytes = Figures::default();
    let mut json_meta_compile = Samples::new();
    let mut json_meta_rss = Samples::new();
    let mut loaded: Vec<(Language, LoadedPlugin, LoadedPlugin)> = Vec::new();
    // The Go and Python plugins reading only the metadata through their
    // SDK's lazy read, as `json-meta` does: what an author would use on a
    // hot path.
    let mut views: Vec<(Language, LoadedPlugin)> = Vec::new();
    for rep in 0..settings.b11_compile_repetitions {
        for subject in &subjects {
            crate::progress(format!(
                "B11 cold compile of the {} component, repetition {}/{}",
                subject.language.label(),
                rep + 1,
                settings.b11_compile_repetitions
            ));
            let cache_dir = scratch.join(format!("cache-{}-{rep}", subject.language.id()));
            let cache = ArtifactCache::open(&cache_dir, engine).expect("opening B11's cache");
            let usage = compile_in_child(&program, engine, &cache, &subject.noop);
            compile_wall
                .of(subject.language)
                .push(usage.wall.as_secs_f64());
            compile_cpu
                .of(subject.language)
                .push(usage.cpu.as_secs_f64());
            compile_rss
                .of(subject.language)
                .push(usage.max_rss_bytes as f64);
            let (noop, timing) = load_cached(engine, &cache, &subject.noop, None, fixtures);
            cached_load.of(subject.language).push(timing.total_ms());
            load_artifact.of(subject.language).push(timing.artifact_ms);
            entry_bytes
                .of(subject.language)
                .push(timing.entry_bytes as f64);
            let parse = match &subject.parse {
                Some(bytes) => {
                    let usage = compile_in_child(&program, engine, &cache, bytes);
                    json_meta_compile.push(usage.wall.as_secs_f64());
                    json_meta_rss.push(usage.max_rss_bytes as f64);
                    load_cached(engine, &cache, bytes, None, fixtures).0
                }
                None => {
                    load_cached(
                        engine,
                        &cache,
                        &subject.noop,
                        subject.parse_config.clone(),
                        fixtures,
                    )
                    .0
                }
            };
            if rep == 0 {
                if matches!(subject.language, Language::Go | Language::Python) {
                    let view = load_cached(
                        engine,
                        &cache,
                        &subject.noop,
                        Some(VIEW_CONFIG.into()),
                        fixtures,
                    );
                    views.push((subject.language, view.0));
                }
                loaded.push((subject.language, noop, parse));
            }
        }
    }

    // Per-call CPU time and RSS per instance, the languages one after the
    // other within each repetition.
    let largest = settings.b11_rust_calls.max(settings.b11_sdk_calls);
    let objects = cached_pods(PodSize::Small, largest + settings.b11_warm_up_calls);
    let (warm, objects) = objects.split_at(settings.b11_warm_up_calls);
    let mut noop_call = Figures::default();
    let mut noop_first_calls = Figures::default();
    let mut parse_call = Figures::default();
    let mut view_call = Figures::default();
    let mut instance_memory = Figures::default();
    let mut instance_rss = Figures::default();
    let mut reclaimed_memory = Figures::default();
    let mut wake_call = Figures::default();
    for rep in 0..settings.repetitions {
        crate::progress(format!(
            "B11 calls and instances, repetition {}/{}",
            rep + 1,
            settings.repetitions
        ));
        for (language, noop, parse) in &loaded {
            let count = if *language == Language::Rust {
                settings.b11_rust_calls
            } else {
                settings.b11_sdk_calls
            };
            let noop = cpu_per_call(noop, warm, &objects[..count]);
            noop_call.of(*language).push(noop.warm);
            noop_first_calls.of(*language).push(noop.first_calls);
            parse_call
                .of(*language)
                .push(cpu_per_call(parse, warm, &objects[..count]).warm);
        }
        for (language, view) in &views {
            view_call
                .of(*language)
                .push(cpu_per_call(view, warm, &objects[..settings.b11_sdk_calls]).warm);
        }
        for (language, noop, _) in &loaded {
            let (pss, rss) = memory_per_instance(noop, settings.b11_instances, &objects[0]);
            instance_memory.of(*language).push(pss);
            instance_rss.of(*language).push(rss);
            let (reclaimed, wake) = reclaimed_instances(noop, settings.b11_instances, &objects[0]);
            reclaimed_memory.of(*language).push(reclaimed);
            wake_call.of(*language).push(wake);
        }
    }
    drop(scratch);

    let mut rows = Vec::new();
    for subject in &subjects[1..] {
        let language = subject.language;
        let (id, name) = (language.id(), language.label());
        let build = subject.build.expect("SDK components are built");
        let size = |bytes: &[u8]| {
            let mut samples = Samples::new();
            samples.push(bytes.len() as f64);
            samples
        };
        rows.push(
            Row::ratio_of(
                format!("B11.size-{id}"),
                format!(
                    "component file, {name} SDK; baseline: Rust SDK no-op (goal: the default pluginFiles.maxSize)"
                ),
                Unit::Bytes,
                size(&subjects[0].noop),
                size(&subject.noop),
                Goal::ValueAtMost(DEFAULT_MAX_FILE_BYTES as f64),
            )
            .with_details(format!(
                "{name}: {} bytes (Rust no-op {}, json-meta {}); built by the toolchain in {:.1} s wall, {:.1} s CPU, peak RSS {:.0} MiB (built once per run, beside the other SDKs' builds)",
                subject.noop.len(),
                subjects[0].noop.len(),
                subjects[0].parse.as_ref().map_or(0, Vec::len),
                build.wall.as_secs_f64(),
                build.cpu.as_secs_f64(),
                build.max_rss_bytes as f64 / (1024.0 * 1024.0),
            )),
        );
        rows.push(
            Row::ratio_of(
                format!("B11.compile-{id}"),
                format!(
                    "cold compile in a child `herald compile-artifact`, wall time, {name} SDK; baseline: Rust SDK no-op (goal: the default pluginFiles.compileTimeout)"
                ),
                Unit::Seconds,
                compile_wall.rust.clone(),
                compile_wall.get(language).clone(),
                Goal::ValueAtMost(DEFAULT_COMPILE_TIMEOUT.as_secs_f64()),
            )
            .with_details(format!(
                "{name}: compile CPU time {:.2} s (Rust no-op {:.2} s); Rust json-meta compiled in {:.2} s wall; {} cold compiles per language",
                compile_cpu.get(language).median(),
                compile_cpu.rust.median(),
                json_meta_compile.median(),
                settings.b11_compile_repetitions,
            )),
        );
        rows.push(
            Row::ratio_of(
                format!("B11.compile-mem-{id}"),
                format!(
                    "peak RSS of that compile child, {name} SDK; baseline: Rust SDK no-op (goal: deploy/'s 1Gi container limit)"
                ),
                Unit::Bytes,
                compile_rss.rust.clone(),
                compile_rss.get(language).clone(),
                Goal::ValueAtMost(DEPLOY_MEMORY_LIMIT),
            )
            .with_details(format!(
                "{name}: {:.0} MiB (Rust no-op {:.0} MiB, json-meta {:.0} MiB)",
                compile_rss.get(language).median() / (1024.0 * 1024.0),
                compile_rss.rust.median() / (1024.0 * 1024.0),
                json_meta_rss.median() / (1024.0 * 1024.0),
            )),
        );
        rows.push(
            Row::ratio_of(
                format!("B11.load-{id}"),
                format!(
                    "cached load (digest, artifact from the cache, pre-instantiate, manifest), {name} SDK; baseline: Rust SDK no-op"
                ),
                Unit::Millis,
                cached_load.rust.clone(),
                cached_load.get(language).clone(),
                Goal::None,
            )
            .with_details(format!(
                "{name}: file digest and artifact read, checked and deserialized {:.2} ms (Rust no-op {:.2} ms), the rest pre-instantiation and the manifest call; artifact-cache entry {:.1} MiB (Rust no-op {:.1} MiB)",
                load_artifact.get(language).median(),
                load_artifact.rust.median(),
                entry_bytes.get(language).median() / (1024.0 * 1024.0),
                entry_bytes.rust.median() / (1024.0 * 1024.0),
            )),
        );
        rows.push(
            Row::ratio_of(
                format!("B11.noop-{id}"),
                format!(
                    "CPU per call, no-op handler, 4 KB Pod, {name} SDK; baseline: Rust SDK `noop`"
                ),
                Unit::Micros,
                noop_call.rust.clone(),
                noop_call.get(language).clone(),
                Goal::RatioAtMost(language.noop_goal()),
            )
            .with_details(format!(
                "{} calls per repetition on the Rust fixtures, {} on the SDK components, each instance \
                 warmed by {} calls first; those first calls of a fresh instance cost {:.3} µs each \
                 (Rust {:.3} µs): the runtime's heap growing, a cost of starting",
                settings.b11_rust_calls,
                settings.b11_sdk_calls,
                settings.b11_warm_up_calls,
                noop_first_calls.get(language).median(),
                noop_first_calls.rust.median(),
            )),
        );
        let parse = Row::ratio_of(
            format!("B11.parse-{id}"),
            format!(
                "CPU per call, handler parsing the object, 4 KB Pod, {name} SDK; baseline: Rust SDK `json-meta`"
            ),
            Unit::Micros,
            parse_call.rust.clone(),
            parse_call.get(language).clone(),
            Goal::None,
        );
        rows.push(match language {
            Language::Go => {
                parse.with_details("Go: the whole object into a map[string]any with encoding/json")
            }
            Language::Python => parse.with_details("Python: json.loads of the whole object"),
            _ => parse,
        });
        let view = match language {
            Language::Go => Some((
                "`e.View()`",
                "Go: the view splits the object's top level with the SDK's own scanner and decodes the metadata in the same pass (sdk/go/split.go, meta.go), leaving spec and status undecoded",
            )),
            Language::Python => Some((
                "`event.metadata`",
                "Python: the members before `metadata` stepped over and the metadata decoded with the json module's own C scanner (`scan_once`), nothing after it read (sdk/python event.py, `_metadata_of`)",
            )),
            _ => None,
        };
        if let Some((read, details)) = view {
            rows.push(
                Row::ratio_of(
                    format!("B11.view-{id}"),
                    format!("CPU per call, handler reading the metadata through the SDK's lazy read ({read}), 4 KB Pod, {name} SDK; baseline: Rust SDK `json-meta` (the metadata alone, serde)"),
                    Unit::Micros,
                    parse_call.rust.clone(),
                    view_call.get(language).clone(),
                    Goal::RatioAtMost(3.0),
                )
                .with_details(details),
            );
        }
        rows.push(
            Row::ratio_of(
                format!("B11.mem-{id}"),
                format!(
                    "memory per live instance (PSS growth: physical memory; no-op, one 4 KB Pod handled), {name} SDK; baseline: Rust SDK `noop`"
                ),
                Unit::Bytes,
                instance_memory.rust.clone(),
                instance_memory.get(language).clone(),
                Goal::None,
            )
            .with_details(format!(
                "{} instances held at once per language beside one made first (which pages in the shared memory image); PSS growth / instances; the RSS grew {:.2} MiB per instance (Rust {:.3} MiB), counting the shared image's pages once per instance that maps them",
                settings.b11_instances,
                instance_rss.get(language).median() / (1024.0 * 1024.0),
                instance_rss.rust.median() / (1024.0 * 1024.0),
            )),
        );
        rows.push(
            Row::ratio_of(
                format!("B11.mem-reclaimed-{id}"),
                format!(
                    "memory per idle instance with `reclaimIdleAfter` (PSS growth; handled one 4 KB Pod, then reclaimed), {name} SDK; baseline: the same instance kept live (B11.mem-{id}); goal: at least halved"
                ),
                Unit::Bytes,
                instance_memory.get(language).clone(),
                reclaimed_memory.get(language).clone(),
                Goal::RatioAtMost(0.5),
            )
            .with_details(format!(
                "{} instances per language; the price is the next delivery, which instantiates afresh: {:.0} µs wall for it (instantiation and the no-op call, page faults included) against {:.1} µs of CPU for a no-op call on a live instance (Rust {:.0} µs against {:.1} µs)",
                settings.b11_instances,
                wake_call.get(language).median(),
                noop_call.get(language).median(),
                wake_call.rust.median(),
                noop_call.rust.median(),
            )),
        );
    }
    rows
}

/// What `count` idle instances of `plugin` cost once reclaimed (each made,
/// called with `object`, then reclaimed), per instance: the growth of the
/// process's PSS, as [`memory_per_instance`] measures a live one; and the
/// median wall time, in µs, of the delivery that wakes a reclaimed instance
/// (instantiating afresh, then the call).
fn reclaimed_instances(plugin: &LoadedPlugin, count: usize, object: &CachedObject) -> (f64, f64) {
    let ctx = context();
    let called = || {
        let mut instance = PluginInstance::new(plugin.clone()).expect("instantiating");
        instance.on_add(&ctx, object.json()).expect("B11 call");
        instance
    };
    let first = called();
    let before = proportional_bytes();
    let mut idle: Vec<PluginInstance> = (0..count)
        .map(|_| {
            let mut instance = called();
            assert!(instance.reclaim(), "a live instance to reclaim");
            instance
        })
        .collect();
    let after = proportional_bytes();
    let mut wakes: Vec<f64> = idle
        .iter_mut()
        .map(|instance| {
            let started = Instant::now();
            instance
                .on_add(&ctx, object.json())
                .expect("B11 call after a reclaim");
            started.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    drop(idle);
    drop(first);
    wakes.sort_by(f64::total_cmp);
    let per = before
        .zip(after)
        .map_or(f64::NAN, |(a, b)| (b as f64 - a as f64) / count as f64);
    (per, wakes[wakes.len() / 2])
}

/// The repository root (this crate is `bench/`).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Builds the Python, the JavaScript and the Go component side by side
/// (three children at once: the builds are not what is measured here),
/// returning each file's bytes and its build's usage. Fails, naming the
/// install command, when a toolchain is missing.
fn build_sdk_components(wrapper: &Path, scratch: &Path) -> [(Vec<u8>, ChildUsage); 3] {
    let root = root();
    let python = std::env::var_os("HERALD_PYTHON").unwrap_or_else(|| "python3".into());
    let has_componentize_py = Command::new(&python)
        .args(["-c", "import componentize_py"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        has_componentize_py,
        "B11 builds a Python component and needs componentize-py for {}: \
         run `{} -m pip install -r sdk/python/requirements-build.txt` \
         (HERALD_PYTHON picks another interpreter)",
        python.to_string_lossy(),
        python.to_string_lossy(),
    );
    let herald_build = root.join("node_modules/.bin/herald-build");
    let has_node = Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        has_node && herald_build.exists(),
        "B11 builds a JavaScript component and needs Node.js 20+ and the SDK's toolchain: \
         run `npm ci` at the repository root ({} is missing{})",
        herald_build.display(),
        if has_node { "" } else { "; so is `node`" },
    );
    if let Err(e) = go::version(&go::program()) {
        panic!("B11 builds a Go component with `herald plugin build`: {e}");
    }

    let py_out = scratch.join("sdk-bench-python.wasm");
    let py = Measured::new(wrapper, scratch, "build-python");
    let mut py_command = py.command(&python);
    py_command
        .current_dir(&root)
        .env("PYTHONPATH", root.join("sdk/python/src"))
        .args(["-m", "herald_sdk", "build"])
        .arg(root.join("bench/plugins/python/sdk_bench.py"))
        .arg("-o")
        .arg(&py_out);
    let js_out = scratch.join("sdk-bench-js.wasm");
    let js = Measured::new(wrapper, scratch, "build-js");
    let mut js_command = js.command(herald_build.as_os_str());
    js_command
        .current_dir(&root)
        .arg(root.join("bench/plugins/js/plugin.js"))
        .arg("-o")
        .arg(&js_out);
    // `herald plugin build`, run by this crate's copy of the CLI.
    let go_out = scratch.join("sdk-bench-go.wasm");
    let go = Measured::new(wrapper, scratch, "build-go");
    let mut go_command = go.command(wrapper.as_os_str());
    go_command
        .current_dir(&root)
        .args(["plugin", "build"])
        .arg(root.join("bench/plugins/go"))
        .arg("-o")
        .arg(&go_out);
    let py_child = py.spawn(&mut py_command);
    let js_child = js.spawn(&mut js_command);
    let go_child = go.spawn(&mut go_command);
    // Each waited for on its own thread, so each wall time ends at its own exit.
    let (py_usage, js_usage, go_usage) = std::thread::scope(|scope| {
        let py_waiting = scope.spawn(|| py.wait(py_child, "the Python build"));
        let js_waiting = scope.spawn(|| js.wait(js_child, "the JavaScript build"));
        let go_usage = go.wait(go_child, "the Go build (herald plugin build)");
        (
            py_waiting.join().expect("waiting for the Python build"),
            js_waiting.join().expect("waiting for the JavaScript build"),
            go_usage,
        )
    });
    let read = |path: &Path| {
        std::fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
    };
    [
        (read(&py_out), py_usage),
        (read(&js_out), js_usage),
        (read(&go_out), go_usage),
    ]
}

/// A child process run under `herald-child --rusage` (see `src/bin`), so
/// that its peak RSS is its own and not this process's; its output goes to
/// a log file, quoted if it fails.
struct Measured {
    wrapper: PathBuf,
    log: PathBuf,
    usage: PathBuf,
    started: Instant,
}

impl Measured {
    fn new(wrapper: &Path, dir: &Path, name: &str) -> Self {
        Measured {
            wrapper: wrapper.to_owned(),
            log: dir.join(format!("{name}.log")),
            usage: dir.join(format!("{name}.usage")),
            started: Instant::now(),
        }
    }

    /// The command running `program` (arguments to be added) under the wrapper.
    fn command(&self, program: &std::ffi::OsStr) -> Command {
        let mut command = Command::new(&self.wrapper);
        command.arg("--rusage").arg(&self.usage).arg(program);
        command
    }

    fn spawn(&self, command: &mut Command) -> Child {
        let _ = std::fs::remove_file(&self.usage);
        let out = std::fs::File::create(&self.log).expect("creating a log file");
        let err = out.try_clone().expect("cloning a log file");
        command
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("B11 cannot start {command:?}: {e}"))
    }

    /// Waits for `child` and returns what it used; panics with the end of
    /// its log if it failed.
    fn wait(&self, mut child: Child, what: &str) -> ChildUsage {
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) => {}
                Err(e) => panic!("waiting for {what}: {e}"),
            }
            if self.started.elapsed() > CHILD_PATIENCE {
                let _ = child.kill();
                panic!("{what} took longer than {CHILD_PATIENCE:?}");
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let wall = self.started.elapsed();
        if !status.success() {
            let output = std::fs::read_to_string(&self.log).unwrap_or_default();
            let lines: Vec<&str> = output.lines().collect();
            panic!(
                "B11: {what} failed ({status}):\n{}",
                lines[lines.len().saturating_sub(20)..].join("\n")
            );
        }
        let text = std::fs::read_to_string(&self.usage)
            .unwrap_or_else(|e| panic!("B11: {what}: no usage recorded: {e}"));
        let numbers: Vec<u64> = text
            .split_whitespace()
            .map(|n| n.parse().expect("a usage figure"))
            .collect();
        let [user_us, system_us, maxrss_kib] = numbers[..] else {
            panic!("B11: {what}: unreadable usage {text:?}");
        };
        ChildUsage {
            wall,
            cpu: Duration::from_micros(user_us + system_us),
            // Linux reports kilobytes.
            max_rss_bytes: maxrss_kib * 1024,
        }
    }
}

/// Compiles `bytes` in a child `compile-artifact` with `engine`'s settings,
/// writing `cache`'s entry for it, as the daemon's `Compiler::Subprocess`
/// does (`host/src/plugin/compiler.rs`).
fn compile_in_child(
    program: &Path,
    engine: &PluginEngine,
    cache: &ArtifactCache,
    bytes: &[u8],
) -> ChildUsage {
    let digest = digest(bytes);
    let entry = cache.entry_path(&digest);
    let input = cache.dir().join(format!("{digest}.wasm"));
    std::fs::write(&input, bytes).expect("writing the compiler's input");
    let child = Measured::new(program, cache.dir(), &digest);
    let mut command = child.command(program.as_os_str());
    command
        .arg("compile-artifact")
        .args(engine.settings().child_args())
        .arg(&input)
        .arg(&entry);
    let spawned = child.spawn(&mut command);
    let usage = child.wait(spawned, "compile-artifact");
    let _ = std::fs::remove_file(&input);
    usage
}

/// How long a cached load took.
#[derive(Debug, Clone, Copy)]
struct LoadTiming {
    /// The file's digest and the artifact read, checked and deserialized.
    artifact_ms: f64,
    /// Pre-instantiation and the manifest call.
    plugin_ms: f64,
    /// The cache entry's size.
    entry_bytes: u64,
}

impl LoadTiming {
    fn total_ms(&self) -> f64 {
        self.artifact_ms + self.plugin_ms
    }
}

/// Loads `bytes` from `cache`, which must hold its entry, as
/// `LoadedPlugin::load_cached` does (in two timed halves).
fn load_cached(
    engine: &PluginEngine,
    cache: &ArtifactCache,
    bytes: &[u8],
    config: Option<String>,
    fixtures: &Fixtures,
) -> (LoadedPlugin, LoadTiming) {
    let options = LoadOptions {
        config,
        sink: fixtures.logs.clone(),
        log_rate: LogRate {
            lines_per_second: 1_000_000,
            burst: 1_000_000,
            ..LogRate::default()
        },
        ..LoadOptions::default()
    };
    let started = Instant::now();
    let digest = digest(bytes);
    let (component, outcome) = cache
        .load_or_compile(engine, bytes, &digest)
        .unwrap_or_else(|e| panic!("B11: reading a compiled component: {e}"));
    let artifact = started.elapsed();
    assert_eq!(
        outcome,
        CompileOutcome::CacheHit,
        "B11: the child's artifact was not used"
    );
    let started = Instant::now();
    let plugin = LoadedPlugin::from_component(engine, component, digest.clone(), options)
        .unwrap_or_else(|e| panic!("B11: loading a compiled component: {e}"));
    let timing = LoadTiming {
        artifact_ms: artifact.as_secs_f64() * 1e3,
        plugin_ms: started.elapsed().as_secs_f64() * 1e3,
        entry_bytes: std::fs::metadata(cache.entry_path(&digest)).map_or(0, |m| m.len()),
    };
    (plugin, timing)
}

/// CPU µs per `on_add` of a fresh instance: over its first calls, and
/// once warm (B1's bare call).
struct CallCost {
    first_calls: f64,
    warm: f64,
}

/// Calls `on_add` with each of `warm`, then each of `objects`, on one fresh
/// instance, timing each part.
fn cpu_per_call(
    plugin: &LoadedPlugin,
    warm: &[Arc<CachedObject>],
    objects: &[Arc<CachedObject>],
) -> CallCost {
    let mut instance = PluginInstance::new(plugin.clone()).expect("instantiating");
    let ctx = context();
    let mut per_call = |objects: &[Arc<CachedObject>]| {
        let before = thread_cpu_ns();
        for object in objects {
            instance.on_add(&ctx, object.json()).expect("B11 call");
        }
        let after = thread_cpu_ns();
        before.zip(after).map_or(f64::NAN, |(a, b)| {
            (b - a) as f64 / 1e3 / objects.len() as f64
        })
    };
    let cost = CallCost {
        first_calls: per_call(warm),
        warm: per_call(objects),
    };
    assert_eq!(instance.rebuilds(), 0, "an instance was rebuilt mid-run");
    cost
}

/// What `count` more live instances of `plugin` cost, each having handled
/// `object`, per instance: the growth of the process's PSS (the physical
/// memory added) and of its RSS. One instance made and called first, and
/// kept while measuring, pages in the plugin's memory image, which every
/// instance shares (a cost per plugin, not per instance). The RSS counts
/// the image's pages again in every instance that maps them, which is why
/// it is not the measure.
fn memory_per_instance(plugin: &LoadedPlugin, count: usize, object: &CachedObject) -> (f64, f64) {
    let ctx = context();
    let live = |n: usize| -> Vec<PluginInstance> {
        (0..n)
            .map(|_| {
                let mut instance = PluginInstance::new(plugin.clone()).expect("instantiating");
                instance.on_add(&ctx, object.json()).expect("B11 call");
                instance
            })
            .collect()
    };
    let first = live(1);
    let (pss, rss) = (proportional_bytes(), resident_bytes());
    let instances = live(count);
    let (pss_after, rss_after) = (proportional_bytes(), resident_bytes());
    drop(instances);
    drop(first);
    let per = |before: Option<u64>, after: Option<u64>| {
        before
            .zip(after)
            .map_or(f64::NAN, |(a, b)| (b as f64 - a as f64) / count as f64)
    };
    (per(pss, pss_after), per(rss, rss_after))
}
