//! Loads the plugin files of a directory: every `*.wasm`, compiled off the
//! async runtime, with duplicate plugin names refused.

use crate::plugin::{LoadError, LoadOptions, LoadedPlugin, PluginEngine};
use std::path::{Path, PathBuf};

/// Why a plugin file was not loaded.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The file is not a loadable plugin.
    #[error("{file}: {source}")]
    Load {
        /// The file.
        file: PathBuf,
        /// Why.
        source: LoadError,
    },
    /// Another file already provides a plugin of the same name.
    #[error("{file}: plugin name {name:?} is already provided by {other}; rename one of them")]
    DuplicateName {
        /// The refused file.
        file: PathBuf,
        /// The plugin name.
        name: String,
        /// The file that has it.
        other: PathBuf,
    },
}

/// The `*.wasm` files of `dir`, sorted by name.
pub fn plugin_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "wasm") && path.is_file())
        .collect();
    files.sort();
    Ok(files)
}

/// Loads one file. Blocking (compiles): call it from a blocking thread.
pub fn load_file(
    engine: &PluginEngine,
    file: &Path,
    options: LoadOptions,
) -> Result<LoadedPlugin, FileError> {
    let bytes = std::fs::read(file).map_err(|e| FileError::Load {
        file: file.to_owned(),
        source: LoadError::Io(e),
    })?;
    LoadedPlugin::load(engine, &bytes, options).map_err(|source| FileError::Load {
        file: file.to_owned(),
        source,
    })
}
