//! What the plugin directory holds: its plugin files (`*.wasm`, not hidden),
//! each one's optional sidecar (`<stem>.yaml`), and a fingerprint of both
//! taken from `stat`, so a change is noticed without reading every file.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io::ErrorKind;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// True for a file name Herald loads as a plugin: `<stem>.wasm` with a
/// non-empty stem, not hidden. Editors' and copy tools' temporary files
/// (`.name.wasm.swp`, `name.wasm~`, `.#name.wasm`, `name.wasm.part`, rsync's
/// `.name.wasm.XXXXXX`, vim's `4913`) never match.
pub fn is_plugin_file(name: &OsStr) -> bool {
    let Some(name) = name.to_str() else {
        return false;
    };
    !name.starts_with('.')
        && name
            .strip_suffix(".wasm")
            .is_some_and(|stem| !stem.is_empty())
}

/// The sidecar of a plugin file: `<stem>.yaml` beside it.
pub fn sidecar_of(plugin: &Path) -> PathBuf {
    plugin.with_extension("yaml")
}

/// The signature of a plugin file: `<file>.sig` beside it
/// (`hello.wasm.sig`), as `cosign sign-blob --output-signature` names it.
pub fn signature_of(plugin: &Path) -> PathBuf {
    let mut name = plugin.as_os_str().to_owned();
    name.push(".sig");
    PathBuf::from(name)
}

/// A plugin file's name without `.wasm`: the key of its `plugins.<stem>`
/// configuration entry.
pub fn stem(plugin: &Path) -> String {
    plugin
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// What `stat` says of a file (following symlinks, as Kubernetes ConfigMap
/// volumes use them). A resize, a replacement (rename-over, new inode) or a
/// write in a later clock tick changes it; file timestamps are coarse, so a
/// same-length rewrite within one tick may not. It is the cheap check of the
/// periodic rescan; a path named by a filesystem event is always re-read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fingerprint {
    len: u64,
    modified_ns: i128,
    changed_ns: i128,
    inode: u64,
    device: u64,
}

impl Fingerprint {
    /// The file's size in bytes.
    pub fn size(&self) -> u64 {
        self.len
    }

    /// True when the file was modified less than `quiet` from `now` (either
    /// side, so a clock step cannot hide a file forever): a writer may still
    /// be at work, and the events of its writes are still to come.
    pub fn modified_within(&self, quiet: std::time::Duration, now: std::time::SystemTime) -> bool {
        let now_ns = match now.duration_since(std::time::UNIX_EPOCH) {
            Ok(since) => since.as_nanos() as i128,
            Err(before) => -(before.duration().as_nanos() as i128),
        };
        (now_ns - self.modified_ns).unsigned_abs() < quiet.as_nanos()
    }

    /// The fingerprint of the regular file at `path`; `None` if there is none.
    pub fn of(path: &Path) -> std::io::Result<Option<Fingerprint>> {
        match std::fs::metadata(path) {
            Ok(meta) if meta.is_file() => Ok(Some(Fingerprint {
                len: meta.len(),
                modified_ns: i128::from(meta.mtime()) * 1_000_000_000
                    + i128::from(meta.mtime_nsec()),
                changed_ns: i128::from(meta.ctime()) * 1_000_000_000
                    + i128::from(meta.ctime_nsec()),
                inode: meta.ino(),
                device: meta.dev(),
            })),
            Ok(_) => Ok(None),
            Err(err) if err.kind() == ErrorKind::NotFound => Ok(None),
            Err(err) => Err(err),
        }
    }
}

/// One plugin file as found on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Found {
    /// The `.wasm` file.
    pub plugin: Fingerprint,
    /// Its sidecar, if present.
    pub sidecar: Option<Fingerprint>,
    /// Its signature (`<file>.sig`), if present.
    pub signature: Option<Fingerprint>,
}

/// Every plugin file of `dir`, by path, in name order.
pub fn scan(dir: &Path) -> std::io::Result<BTreeMap<PathBuf, Found>> {
    let mut found = BTreeMap::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if !is_plugin_file(&entry.file_name()) {
            continue;
        }
        let path = entry.path();
        // A file removed since `read_dir` listed it is simply not there.
        let Some(plugin) = Fingerprint::of(&path)? else {
            continue;
        };
        let sidecar = Fingerprint::of(&sidecar_of(&path))?;
        let signature = Fingerprint::of(&signature_of(&path))?;
        found.insert(
            path,
            Found {
                plugin,
                sidecar,
                signature,
            },
        );
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_visible_wasm_files_are_plugins() {
        for name in ["hello.wasm", "pod-lifecycle.wasm", "a.b.wasm"] {
            assert!(is_plugin_file(OsStr::new(name)), "{name}");
        }
        for name in [
            ".wasm",
            ".hello.wasm",
            ".hello.wasm.swp",
            "hello.wasm~",
            ".#hello.wasm",
            "#hello.wasm#",
            "hello.wasm.part",
            "hello.wasm.tmp",
            ".hello.wasm.Xy12Ab",
            "4913",
            "hello.yaml",
            "..data",
            "hello.WASM",
        ] {
            assert!(!is_plugin_file(OsStr::new(name)), "{name}");
        }
    }

    #[test]
    fn a_sidecar_sits_beside_its_plugin() {
        assert_eq!(
            sidecar_of(Path::new("/p/hello.wasm")),
            Path::new("/p/hello.yaml")
        );
        assert_eq!(stem(Path::new("/p/image-policy.wasm")), "image-policy");
    }

    #[test]
    fn resizing_or_replacing_changes_the_fingerprint_and_directories_have_none() {
        let dir = crate::scratch::ScratchDir::new("scan").unwrap();
        std::fs::create_dir_all(dir.join("sub.wasm")).unwrap();
        let file = dir.join("p.wasm");
        std::fs::write(&file, b"one").unwrap();
        let first = Fingerprint::of(&file).unwrap().unwrap();
        std::fs::write(&file, b"three").unwrap();
        let resized = Fingerprint::of(&file).unwrap().unwrap();
        assert_ne!(first, resized);
        // Timestamps are coarse (a same-length rewrite within one clock tick
        // may keep them), but a replacement by rename is a new inode.
        let staged = dir.join(".p.wasm.tmp");
        std::fs::write(&staged, b"threE").unwrap();
        std::fs::rename(&staged, &file).unwrap();
        assert_ne!(resized, Fingerprint::of(&file).unwrap().unwrap());
        let found = scan(&dir).unwrap();
        assert_eq!(found.keys().collect::<Vec<_>>(), [&file]);
        assert_eq!(found[&file].sidecar, None);
        std::fs::write(sidecar_of(&file), b"disabled: true").unwrap();
        assert!(scan(&dir).unwrap()[&file].sidecar.is_some());
    }
}
