//! Compiles the Kubernetes `.proto` definitions shipped in the `k8s-rs-pb` crate's sources
//! into one `FileDescriptorSet` (with rust-protobuf's own pure-Rust parser), for
//! `src/protobuf.rs` to decode request bodies by reflection, the `runtime.Unknown` envelope
//! included.
//!
//! `k8s-rs-pb` is only a build-dependency, without features, so that none of its generated
//! Rust is compiled: it merely carries the `.proto` files, and its sources are located
//! through `cargo metadata`. Its generated `file_descriptor()` functions could not be used
//! anyway: in k8s-rs-pb 0.5 each lists its own file as its dependencies, so the first call
//! deadlocks on its own lazy initialisation.

use std::path::{Path, PathBuf};
use std::process::Command;

use protobuf::Message as _;
use serde_json::Value;

/// The Kubernetes version whose definitions are used: the `src/<KUBE>` directory of the
/// `k8s-rs-pb` sources (all versions are shipped whatever its features).
const KUBE: &str = "v1_35";

/// The `.proto` files holding the kinds the server decodes and the envelope (their imports
/// come along).
const INPUTS: &[&str] = &[
    "apimachinery/pkg/runtime/generated.proto",
    "api/core/v1/generated.proto",
    "api/apps/v1/generated.proto",
    "api/batch/v1/generated.proto",
    "api/coordination/v1/generated.proto",
    "api/networking/v1/generated.proto",
    "api/events/v1/generated.proto",
    "api/rbac/v1/generated.proto",
    "api/admissionregistration/v1/generated.proto",
    "apiextensions_apiserver/pkg/apis/apiextensions/v1/generated.proto",
    "apimachinery/pkg/apis/meta/v1/generated.proto",
];

/// Names a directory holding the `.proto` tree (`api/core/v1/generated.proto`, …) to use
/// instead of the one in the `k8s-rs-pb` sources.
const OVERRIDE: &str = "HERALD_K8S_PROTO_DIR";

/// The library name under which this package depends on `k8s-rs-pb`.
const CARRIER: &str = "k8s_rs_pb";

/// The environment variable `name`, which cargo sets for build scripts.
fn env(name: &str) -> std::ffi::OsString {
    std::env::var_os(name).unwrap_or_else(|| panic!("cargo sets {name} for build scripts"))
}

/// `cargo metadata` of the workspace, for the build's target platform, offline if `offline`.
fn metadata(offline: bool) -> Result<Value, String> {
    let mut cmd = Command::new(env("CARGO"));
    cmd.args([
        "metadata",
        "--format-version",
        "1",
        "--locked",
        "--filter-platform",
    ])
    .arg(env("TARGET"))
    .arg("--manifest-path")
    .arg(Path::new(&env("CARGO_MANIFEST_DIR")).join("Cargo.toml"));
    if offline {
        cmd.arg("--offline");
    }
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run cargo metadata: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("cargo metadata printed no JSON: {e}"))
}

/// The directory of the `k8s-rs-pb` package this package's build depends on, as cargo
/// resolved it: its `manifest_path` in `cargo metadata`, which holds for registry,
/// vendored, git and path sources alike.
fn carrier_dir() -> PathBuf {
    // `--locked` is safe: cargo has resolved and written the lock file before it runs any
    // build script. `--offline` is tried first because it is fast and needs no network:
    // this package's build-dependencies are downloaded by the time this script runs, and
    // `--filter-platform` spares the other platforms' packages. Metadata covers the whole
    // workspace, though, so a package only another member needs may still be missing from
    // a fresh cargo home; then cargo is let fetch it. The nested cargo reads the same
    // `.cargo/config.toml` files and environment (source replacement for vendoring, patches)
    // but not options given only on the outer command line (`--config`); with those, the
    // resolution can differ, `--locked` refuses, and HERALD_K8S_PROTO_DIR is the way out.
    let meta = metadata(true)
        .or_else(|_| metadata(false))
        .unwrap_or_else(|e| panic!("cargo metadata failed (set {OVERRIDE} instead): {e}"));
    let packages = meta["packages"]
        .as_array()
        .expect("metadata lists packages");
    let name = env("CARGO_PKG_NAME");
    let this = packages
        .iter()
        .filter(|p| p["name"].as_str().map(std::ffi::OsStr::new) == Some(name.as_os_str()))
        .find(|p| {
            meta["workspace_members"]
                .as_array()
                .is_some_and(|members| members.contains(&p["id"]))
        })
        .expect("cargo metadata lists this package");
    let node = meta["resolve"]["nodes"]
        .as_array()
        .expect("metadata resolves dependencies")
        .iter()
        .find(|n| n["id"] == this["id"])
        .expect("cargo metadata resolves this package");
    let carrier = node["deps"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|d| d["name"] == CARRIER)
        .and_then(|d| packages.iter().find(|p| p["id"] == d["pkg"]))
        .expect("this package depends on k8s-rs-pb");
    let manifest = carrier["manifest_path"]
        .as_str()
        .expect("k8s-rs-pb has a manifest path");
    Path::new(manifest)
        .parent()
        .expect("a manifest path has a directory")
        .to_path_buf()
}

/// The root of the `.proto` tree: [`OVERRIDE`], else `src/<KUBE>` of the `k8s-rs-pb`
/// sources.
fn proto_root() -> PathBuf {
    println!("cargo:rerun-if-env-changed={OVERRIDE}");
    if let Some(dir) = std::env::var_os(OVERRIDE) {
        return PathBuf::from(dir);
    }
    let root = carrier_dir().join("src").join(KUBE);
    assert!(
        root.is_dir(),
        "the k8s-rs-pb sources have no {} (set {OVERRIDE} to a .proto tree)",
        root.display()
    );
    root
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let root = proto_root();
    let parsed = protobuf_parse::Parser::new()
        .pure()
        .include(&root)
        .inputs(INPUTS.iter().map(|i| root.join(i)))
        .parse_and_typecheck()
        .expect("the Kubernetes .proto files parse");
    // Every file compiled, imports included (each descriptor is named by its path under
    // the root).
    for file in &parsed.file_descriptors {
        println!(
            "cargo:rerun-if-changed={}",
            root.join(file.name()).display()
        );
    }
    let mut set = protobuf::descriptor::FileDescriptorSet::new();
    set.file = parsed.file_descriptors;
    let out = Path::new(&env("OUT_DIR")).join("k8s.fds");
    std::fs::write(
        &out,
        set.write_to_bytes().expect("the descriptor set encodes"),
    )
    .expect("OUT_DIR is writable");
}
