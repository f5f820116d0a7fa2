//! Private working directories under the system's temporary directory,
//! removed when their owner is done with them.
//!
//! Builds, the demo and the tests all need a directory of their own for a
//! while; each one is a [`ScratchDir`], so none is left behind to fill the
//! disk, whether its owner returns, fails or panics.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A fresh, empty directory, removed with everything in it when dropped.
///
/// It reads as a [`Path`] (`dir.join(..)`, `&dir` where a `&Path` is
/// wanted); keep the value alive for as long as the directory is used.
#[derive(Debug)]
#[must_use = "the directory is removed as soon as this value is dropped"]
pub struct ScratchDir(PathBuf);

impl ScratchDir {
    /// Creates `herald-{what}-{process}-{n}` under the temporary directory,
    /// unique within this process and empty.
    pub fn new(what: &str) -> std::io::Result<ScratchDir> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "herald-{what}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        match std::fs::remove_dir_all(&dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        std::fs::create_dir_all(&dir)?;
        Ok(ScratchDir(dir))
    }

    /// The directory's path.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl std::ops::Deref for ScratchDir {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for ScratchDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for ScratchDir {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        if std::fs::remove_dir_all(&self.0).is_err() {
            // Something in it was made read-only (a test's read-only copy,
            // Go's module cache): a folder whose entries may not be removed.
            let _ = make_folders_writable(&self.0);
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// Gives the owner write permission on `dir` and every folder below it.
fn make_folders_writable(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    let mut permissions = std::fs::metadata(dir)?.permissions();
    permissions.set_mode(permissions.mode() | 0o700);
    std::fs::set_permissions(dir, permissions)?;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            make_folders_writable(&entry.path())?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scratch_directory_is_fresh_and_gone_with_everything_in_it_once_dropped() {
        let first = ScratchDir::new("scratch-test").unwrap();
        let second = ScratchDir::new("scratch-test").unwrap();
        assert_ne!(first.path(), second.path());
        assert!(std::fs::read_dir(&first).unwrap().next().is_none());
        std::fs::create_dir_all(first.join("nested/deeper")).unwrap();
        std::fs::write(first.join("nested/deeper/file"), "x").unwrap();
        let path = first.path().to_owned();
        drop(first);
        assert!(!path.exists(), "{} is left behind", path.display());
        assert!(second.exists());
    }

    #[test]
    fn read_only_folders_inside_do_not_keep_a_scratch_directory_behind() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = ScratchDir::new("scratch-read-only").unwrap();
        std::fs::create_dir_all(dir.join("sealed/inner")).unwrap();
        std::fs::write(dir.join("sealed/inner/file"), "x").unwrap();
        for folder in ["sealed/inner", "sealed"] {
            std::fs::set_permissions(dir.join(folder), std::fs::Permissions::from_mode(0o555))
                .unwrap();
        }
        let path = dir.path().to_owned();
        drop(dir);
        assert!(!path.exists(), "{} is left behind", path.display());
    }

    #[test]
    fn a_scratch_directory_is_removed_when_its_owner_panics() {
        let path = std::panic::catch_unwind(|| {
            let dir = ScratchDir::new("scratch-panic").unwrap();
            std::fs::write(dir.join("file"), "x").unwrap();
            std::panic::panic_any(dir.path().to_owned());
        })
        .unwrap_err()
        .downcast::<PathBuf>()
        .unwrap();
        assert!(!path.exists(), "{} is left behind", path.display());
    }
}
