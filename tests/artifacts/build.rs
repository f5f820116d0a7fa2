//! Builds every plugin in `plugins/` for `wasm32-wasip2` (and the no-WASI
//! fixture for `wasm32-unknown-unknown`, componentized here) and writes a
//! constant with the path of each component.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Plugins built for wasm32-unknown-unknown (no WASI imports) and componentized.
const CORE_PLUGINS: &[&str] = &["no-wasi"];

fn main() {
    let root = PathBuf::from(env("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repository root");
    let plugins = root.join("plugins");
    let target_dir = root.join("target").join("wasm");
    let out_dir = PathBuf::from(env("OUT_DIR"));
    for watched in ["plugins", "plugin-sdk", "wit"] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }

    let names = plugin_names(&plugins);
    let wasi: Vec<&String> = names
        .iter()
        .filter(|n| !CORE_PLUGINS.contains(&n.as_str()))
        .collect();
    let core: Vec<&String> = names
        .iter()
        .filter(|n| CORE_PLUGINS.contains(&n.as_str()))
        .collect();
    cargo_build(&plugins, &target_dir, "wasm32-wasip2", &wasi);
    if !core.is_empty() {
        cargo_build(&plugins, &target_dir, "wasm32-unknown-unknown", &core);
    }

    let mut consts = String::new();
    for name in &names {
        let file = format!("{}.wasm", name.replace('-', "_"));
        let path = if CORE_PLUGINS.contains(&name.as_str()) {
            let module = target_dir
                .join("wasm32-unknown-unknown/release")
                .join(&file);
            let component = out_dir.join(&file);
            componentize(&module, &component);
            component
        } else {
            target_dir.join("wasm32-wasip2/release").join(&file)
        };
        assert!(
            path.exists(),
            "plugin {name} built but {} is missing",
            path.display()
        );
        let ident = name.to_uppercase().replace('-', "_");
        consts.push_str(&format!(
            "/// The `{name}` plugin component.\npub const {ident}: &str = {:?};\n",
            path.display().to_string()
        ));
    }
    consts.push_str(&format!(
        "/// Every plugin built, as (name, path).\npub const ALL: &[(&str, &str)] = &[{}];\n",
        names
            .iter()
            .map(|n| format!("({n:?}, {})", n.to_uppercase().replace('-', "_")))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    std::fs::write(out_dir.join("artifacts.rs"), consts).expect("writing artifacts.rs");
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set"))
}

/// Package names of every plugin crate: `plugins/*/` and `plugins/fixtures/*/`.
fn plugin_names(plugins: &Path) -> Vec<String> {
    let mut names = Vec::new();
    for dir in [plugins.to_path_buf(), plugins.join("fixtures")] {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let manifest = entry.path().join("Cargo.toml");
            let Ok(text) = std::fs::read_to_string(&manifest) else {
                continue;
            };
            let name = text
                .lines()
                .find_map(|line| {
                    line.trim()
                        .strip_prefix("name")
                        .and_then(|rest| rest.trim().strip_prefix('='))
                })
                .map(|value| value.trim().trim_matches('"').to_owned());
            names.extend(name);
        }
    }
    names.sort();
    names
}

fn cargo_build(plugins: &Path, target_dir: &Path, target: &str, packages: &[&String]) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .current_dir(plugins)
        .args(["build", "--release", "--target", target])
        .arg("--target-dir")
        .arg(target_dir);
    for package in packages {
        command.args(["-p", package]);
    }
    // The outer build's flags and target settings are for the host, not for wasm.
    for (key, _) in std::env::vars() {
        if key == "RUSTFLAGS"
            || key == "RUSTC_WORKSPACE_WRAPPER"
            || (key.starts_with("CARGO_") && !keep_cargo_var(&key))
        {
            command.env_remove(key);
        }
    }
    let output = command
        .output()
        .expect("running cargo to build the plugins");
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        if stderr.contains("target may not be installed")
            || stderr.contains("can't find crate for `core`")
        {
            panic!(
                "the {target} Rust target is missing: run `rustup target add {target}` (.ci/run does this)\n{stderr}"
            );
        }
        panic!("building the plugins for {target} failed:\n{stderr}");
    }
}

fn keep_cargo_var(key: &str) -> bool {
    key == "CARGO_HOME"
        || key.starts_with("CARGO_NET_")
        || key.starts_with("CARGO_REGISTR")
        || key.starts_with("CARGO_HTTP_")
        || key == "CARGO_MAKEFLAGS"
}

fn componentize(module: &Path, component: &Path) {
    let bytes =
        std::fs::read(module).unwrap_or_else(|e| panic!("reading {}: {e}", module.display()));
    let encoded = wit_component::ComponentEncoder::default()
        .module(&bytes)
        .and_then(|encoder| encoder.validate(true).encode())
        .unwrap_or_else(|e| panic!("componentizing {}: {e:#}", module.display()));
    std::fs::write(component, encoded)
        .unwrap_or_else(|e| panic!("writing {}: {e}", component.display()));
}
