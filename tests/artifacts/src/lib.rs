//! Paths of the plugin components built from `plugins/` by this crate's build
//! script, one constant per plugin (e.g. [`POD_LIFECYCLE`]), so tests always
//! run against `.wasm` files built from the current source.

include!(concat!(env!("OUT_DIR"), "/artifacts.rs"));

/// Reads a built plugin.
pub fn bytes(path: &str) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("reading plugin artifact {path}: {e}"))
}
