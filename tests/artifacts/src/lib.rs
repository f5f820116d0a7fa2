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

/// The `recorder` fixture under another name, as [`renamed`] makes it.
///
/// # Panics
///
/// As [`renamed`].
pub fn renamed_recorder(name: &str) -> Vec<u8> {
    renamed(RECORDER, "recorder", name)
}

/// The fixture at `path` under another name: its default manifest name
/// `default` (found just before its version string, `0.1.0`, in the data
/// segment) replaced by `name`, which must be as long. The file then loads
/// as a plugin of its own with the fixture's behaviour, so tests and
/// benchmarks can drop several into one plugin directory (where a plugin's
/// name comes from its manifest read without configuration).
///
/// # Panics
///
/// If `name` is not as long as `default`, or `default` is not found
/// exactly once before a version number (the fixture changed).
pub fn renamed(path: &str, default: &str, name: &str) -> Vec<u8> {
    let needle = default.as_bytes();
    assert_eq!(
        name.len(),
        needle.len(),
        "{name:?}: the name must be as long as {default:?}"
    );
    let mut bytes = self::bytes(path);
    let at: Vec<usize> = bytes
        .windows(needle.len() + 2)
        .enumerate()
        .filter(|(_, w)| {
            &w[..needle.len()] == needle
                && w[needle.len()].is_ascii_digit()
                && w[needle.len() + 1] == b'.'
        })
        .map(|(i, _)| i)
        .collect();
    assert_eq!(
        at.len(),
        1,
        "{default:?} is not found exactly once before its version in {path}: the fixture changed"
    );
    bytes[at[0]..at[0] + needle.len()].copy_from_slice(name.as_bytes());
    bytes
}

/// Writes one [`renamed_recorder`] per name into `dir` (created if need
/// be), as `<name>.wasm`: a plugin directory of distinct recorders.
///
/// # Panics
///
/// As [`renamed_recorder`], or if the directory cannot be written.
pub fn write_renamed_recorders<S: AsRef<str>>(dir: &std::path::Path, names: &[S]) {
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for name in names {
        let name = name.as_ref();
        let path = dir.join(format!("{name}.wasm"));
        std::fs::write(&path, renamed_recorder(name))
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
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
