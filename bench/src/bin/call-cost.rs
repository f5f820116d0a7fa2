//! The CPU one delivery costs a plugin component on a warm instance: B1's
//! bare call for any `.wasm`, outside the benchmark suite, for profiling a
//! plugin or an SDK (`perf record` around it) and for trying a change to
//! either without a whole `cargo bench` run.
//!
//! ```sh
//! cargo run --release -p herald-bench --bin call-cost -- PLUGIN.wasm \
//!     [--config JSON] [--calls N] [--warm-up N]
//! ```
//!
//! The plugin is loaded with `--config` as its configuration, one instance
//! handles `--warm-up` distinct 4 KB Pods (default 2,000, as B11: a language
//! runtime grows its heap over its first calls), then `--calls` more
//! (default 50,000), each an add through the plugin's world; the thread's
//! CPU time and the wall time over those are printed per call.

use herald::plugin::{LoadOptions, LoadedPlugin, PluginEngine, PluginInstance};
use herald_bench::b1_throughput::context;
use herald_bench::data::{PodSize, cached_pods};
use herald_bench::measure::thread_cpu_ns;
use std::process::ExitCode;
use std::time::Instant;

/// Distinct Pods the calls cycle through: more than a CPU's caches hold, as
/// an informer's cache is.
const PODS: usize = 20_000;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("call-cost: {e}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let mut path = None;
    let (mut config, mut calls, mut warm_up) = (None, 50_000usize, 2_000usize);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--config" => config = Some(value("--config")?),
            "--calls" => {
                calls = value("--calls")?
                    .parse()
                    .map_err(|e| format!("--calls: {e}"))?
            }
            "--warm-up" => {
                warm_up = value("--warm-up")?
                    .parse()
                    .map_err(|e| format!("--warm-up: {e}"))?
            }
            other if path.is_none() && !other.starts_with("--") => path = Some(other.to_owned()),
            other => return Err(format!("unexpected argument {other}")),
        }
    }
    let path =
        path.ok_or("usage: call-cost PLUGIN.wasm [--config JSON] [--calls N] [--warm-up N]")?;
    let bytes = std::fs::read(&path).map_err(|e| format!("reading {path}: {e}"))?;
    let engine = PluginEngine::new(Default::default()).map_err(|e| e.to_string())?;
    let options = LoadOptions {
        config,
        ..LoadOptions::default()
    };
    let plugin =
        LoadedPlugin::load(&engine, &bytes, options).map_err(|e| format!("{path}: {e}"))?;
    let mut instance = PluginInstance::new(plugin).map_err(|e| format!("{path}: {e}"))?;
    let ctx = context();
    let pods = cached_pods(PodSize::Small, PODS);
    let mut deliver = |count: usize| -> Result<(), String> {
        for pod in pods.iter().cycle().take(count) {
            instance
                .on_add(&ctx, pod.json())
                .map_err(|e| format!("{path}: {e}"))?;
        }
        Ok(())
    };
    deliver(warm_up)?;
    let (started, cpu) = (Instant::now(), thread_cpu_ns());
    deliver(calls)?;
    let (wall, cpu) = (
        started.elapsed(),
        thread_cpu_ns().zip(cpu).map(|(b, a)| b - a),
    );
    let per_call = |ns: f64| ns / 1e3 / calls.max(1) as f64;
    match cpu {
        Some(cpu) => println!(
            "{:.3} µs of CPU per call ({:.3} µs wall), {calls} calls after {warm_up}",
            per_call(cpu as f64),
            per_call(wall.as_nanos() as f64)
        ),
        None => println!(
            "{:.3} µs wall per call (no thread CPU clock), {calls} calls after {warm_up}",
            per_call(wall.as_nanos() as f64)
        ),
    }
    Ok(())
}
