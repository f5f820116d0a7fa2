//! Paths of the plugin components built from `plugins/` by this crate's build
//! script, one constant per plugin (e.g. [`POD_LIFECYCLE`]), so tests always
//! run against `.wasm` files built from the current source.

include!(concat!(env!("OUT_DIR"), "/artifacts.rs"));

/// Reads a built plugin.
pub fn bytes(path: &str) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("reading plugin artifact {path}: {e}"))
}

/// A new version of a component that behaves the same: `component` with a
/// custom section (`herald-variant`, holding `tag`) appended. Its digest is
/// new, so the host treats it as another version of the plugin; for tests
/// and benchmarks of reloads and swaps.
pub fn variant(component: &[u8], tag: &str) -> Vec<u8> {
    let name = b"herald-variant";
    let mut payload = leb128(name.len());
    payload.extend_from_slice(name);
    payload.extend_from_slice(tag.as_bytes());
    let mut bytes = component.to_vec();
    bytes.push(0); // custom section id
    bytes.extend(leb128(payload.len()));
    bytes.extend(payload);
    bytes
}

/// `value` as unsigned LEB128, the encoding of wasm's sizes.
fn leb128(mut value: usize) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return out;
        }
        out.push(byte | 0x80);
    }
}
