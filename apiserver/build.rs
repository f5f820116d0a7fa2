//! Compiles the Kubernetes `.proto` definitions shipped in the `k8s-rs-pb` crate's sources
//! into one `FileDescriptorSet` (with rust-protobuf's own pure-Rust parser), for
//! `src/protobuf.rs` to decode request bodies by reflection. The crate's generated
//! `file_descriptor()` functions cannot be used: in k8s-rs-pb 0.5 each lists its own file as
//! its dependencies, so the first call deadlocks on its own lazy initialisation.

use std::path::{Path, PathBuf};

use protobuf::Message as _;

/// The Kubernetes version whose definitions are used (the `k8s-rs-pb` feature enabled).
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
    "apiextensions_apiserver/pkg/apis/apiextensions/v1/generated.proto",
    "apimachinery/pkg/apis/meta/v1/generated.proto",
];

/// Names a directory holding the `.proto` tree (`api/core/v1/generated.proto`, …) to use
/// instead of the one found in the cargo registry (for vendored or relocated sources).
const OVERRIDE: &str = "HERALD_K8S_PROTO_DIR";

/// The `src/<KUBE>` directory of the newest `k8s-rs-pb` 0.5 in the cargo registry sources,
/// unless [`OVERRIDE`] names another.
fn proto_root() -> PathBuf {
    println!("cargo:rerun-if-env-changed={OVERRIDE}");
    if let Some(dir) = std::env::var_os(OVERRIDE) {
        return PathBuf::from(dir);
    }
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")))
        .expect("CARGO_HOME or HOME is set");
    let mut found: Vec<PathBuf> = std::fs::read_dir(cargo_home.join("registry/src"))
        .into_iter()
        .flatten()
        .flatten()
        .flat_map(|index| {
            std::fs::read_dir(index.path())
                .into_iter()
                .flatten()
                .flatten()
        })
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("k8s-rs-pb-0.5."))
        })
        .map(|p| p.join("src").join(KUBE))
        .filter(|p| p.is_dir())
        .collect();
    found.sort();
    found.pop().unwrap_or_else(|| {
        panic!(
            "the k8s-rs-pb 0.5 sources (a dependency) are not in the cargo registry; \
                 set {OVERRIDE} to their src/{KUBE} directory"
        )
    })
}

fn main() {
    let root = proto_root();
    let parsed = protobuf_parse::Parser::new()
        .pure()
        .include(&root)
        .inputs(INPUTS.iter().map(|i| root.join(i)))
        .parse_and_typecheck()
        .expect("the Kubernetes .proto files parse");
    let mut set = protobuf::descriptor::FileDescriptorSet::new();
    set.file = parsed.file_descriptors;
    let out = Path::new(&std::env::var_os("OUT_DIR").expect("OUT_DIR is set")).join("k8s.fds");
    std::fs::write(
        &out,
        set.write_to_bytes().expect("the descriptor set encodes"),
    )
    .expect("OUT_DIR is writable");
    println!("cargo:rerun-if-changed=build.rs");
}
