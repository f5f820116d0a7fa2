//! Building a plugin from its source directory into a component (what
//! `herald plugin build` runs, and the demo for its Go example), so that a
//! Go author needs Go and Herald and nothing else.
//!
//! The language is read from the directory: `go.mod` is a Go plugin, built
//! here in two steps: `go build` into a WASI preview1 reactor core module
//! ([`go`]), then the world's type embedded and the module wrapped with the
//! reactor adapter by wit-component ([`component`]). The other languages
//! have a build command of their own, which Herald does not wrap: for a
//! `Cargo.toml`, a `package.json` or Python sources the command says which
//! one to run and exits 1, building nothing.

pub mod component;
pub mod go;

use crate::scratch::ScratchDir;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use thiserror::Error;

pub use component::WORLD;

/// The languages a plugin directory can be in, as its files say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    /// `go.mod`.
    Go,
    /// `Cargo.toml`.
    Rust,
    /// `package.json`.
    JavaScript,
    /// `pyproject.toml` or `*.py` files.
    Python,
}

impl Language {
    /// The language of the project in `dir`, if its files say.
    pub fn detect(dir: &Path) -> Option<Language> {
        let has = |file: &str| dir.join(file).is_file();
        if has("go.mod") {
            return Some(Language::Go);
        }
        if has("Cargo.toml") {
            return Some(Language::Rust);
        }
        if has("package.json") {
            return Some(Language::JavaScript);
        }
        let python_sources = std::fs::read_dir(dir).is_ok_and(|entries| {
            entries
                .flatten()
                .any(|entry| entry.path().extension().is_some_and(|ext| ext == "py"))
        });
        if has("pyproject.toml") || python_sources {
            return Some(Language::Python);
        }
        None
    }

    /// How a plugin in this language is built when Herald does not build it.
    fn own_build_command(self) -> Option<&'static str> {
        match self {
            Language::Go => None,
            Language::Rust => Some("`cargo build --release --target wasm32-wasip2`"),
            Language::JavaScript => Some(
                "the JavaScript SDK's `herald-build src/plugin.js -o OUT.wasm` (`npm run build` in a `herald plugin new` project)",
            ),
            Language::Python => Some(
                "the Python SDK's `python -m herald_sdk build app.py -o OUT.wasm` (ComponentizePy)",
            ),
        }
    }
}

/// Why a build failed; each names what is at fault.
#[derive(Debug, Error)]
pub enum BuildError {
    /// The directory is not there.
    #[error("{dir}: not a directory", dir = .0.display())]
    NoDirectory(PathBuf),
    /// Nothing says which language the directory is in.
    #[error(
        "{dir}: no go.mod, Cargo.toml, package.json or Python sources: not a plugin project (`herald plugin new NAME --lang go` makes one)",
        dir = .0.display()
    )]
    Unknown(PathBuf),
    /// A language built by its own SDK's command.
    #[error(
        "{dir} is a {language:?} plugin: `herald plugin build` builds Go plugins; build this one with {command}",
        dir = .dir.display()
    )]
    OtherLanguage {
        /// The directory.
        dir: PathBuf,
        /// Its language.
        language: Language,
        /// The command that builds it.
        command: &'static str,
    },
    /// The Go toolchain is missing or failed.
    #[error(transparent)]
    Go(#[from] go::GoError),
    /// The core module did not become a component.
    #[error("{dir}: {source}", dir = .dir.display())]
    Component {
        /// The plugin's directory.
        dir: PathBuf,
        /// What was wrong with it.
        source: component::ComponentError,
    },
    /// A file could not be read or written.
    #[error("{path}: {source}", path = .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// What a build made.
#[derive(Debug, Clone)]
pub struct Built {
    /// The component file written.
    pub output: PathBuf,
    /// Its size.
    pub bytes: u64,
    /// The Go version used.
    pub go_version: String,
    /// How long `go build` took.
    pub go_build: Duration,
    /// How long embedding and componentizing took.
    pub componentize: Duration,
}

/// How to build.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Keep the function names (Go: no `-ldflags=-s`), so that a trap's
    /// backtrace names the functions it went through; 2 % larger.
    pub keep_names: bool,
}

/// Builds the plugin in `dir` into `output` (default
/// `<dir>/<dir's name>.wasm`).
pub fn build(dir: &Path, output: Option<&Path>, options: Options) -> Result<Built, BuildError> {
    if !dir.is_dir() {
        return Err(BuildError::NoDirectory(dir.to_owned()));
    }
    match Language::detect(dir) {
        Some(Language::Go) => {}
        Some(language) => {
            return Err(BuildError::OtherLanguage {
                dir: dir.to_owned(),
                language,
                command: language.own_build_command().unwrap_or_default(),
            });
        }
        None => return Err(BuildError::Unknown(dir.to_owned())),
    }
    let output = match output {
        Some(output) => output.to_owned(),
        None => dir.join(format!("{}.wasm", project_name(dir))),
    };
    build_go_with(&go::program(), dir, &output, options)
}

/// The name of the project in `dir`: the directory's own name.
fn project_name(dir: &Path) -> String {
    std::fs::canonicalize(dir)
        .ok()
        .and_then(|dir| dir.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "plugin".into())
}

/// Builds the Go plugin in `dir` into the component `output`, running
/// `program` as the `go` command ([`go::program`] is the usual one).
pub fn build_go_with(
    program: &str,
    dir: &Path,
    output: &Path,
    options: Options,
) -> Result<Built, BuildError> {
    let go_version = go::version(program)?;
    let scratch = ScratchDir::new("plugin-build").map_err(|source| BuildError::Io {
        path: std::env::temp_dir(),
        source,
    })?;
    let core_path = scratch.join("core.wasm");
    let started = Instant::now();
    go::build(program, dir, &core_path, options.keep_names)?;
    let go_build = started.elapsed();

    let started = Instant::now();
    let core = std::fs::read(&core_path).map_err(|source| BuildError::Io {
        path: core_path.clone(),
        source,
    })?;
    let component = component::componentize(&core).map_err(|source| BuildError::Component {
        dir: dir.to_owned(),
        source,
    })?;
    let componentize = started.elapsed();
    if let Some(parent) = output.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|source| BuildError::Io {
            path: parent.to_owned(),
            source,
        })?;
    }
    std::fs::write(output, &component).map_err(|source| BuildError::Io {
        path: output.to_owned(),
        source,
    })?;
    Ok(Built {
        output: output.to_owned(),
        bytes: component.len() as u64,
        go_version,
        go_build,
        componentize,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(files: &[&str]) -> ScratchDir {
        let dir = ScratchDir::new("build-detect").unwrap();
        for file in files {
            std::fs::write(dir.join(file), "").unwrap();
        }
        dir
    }

    #[test]
    fn the_language_is_read_from_the_project_files() {
        for (files, language) in [
            (&["go.mod", "main.go"][..], Some(Language::Go)),
            (&["Cargo.toml"][..], Some(Language::Rust)),
            (&["package.json"][..], Some(Language::JavaScript)),
            (&["app.py"][..], Some(Language::Python)),
            (&["pyproject.toml"][..], Some(Language::Python)),
            (&["README.md"][..], None),
        ] {
            let dir = project(files);
            assert_eq!(Language::detect(&dir), language, "{files:?}");
        }
    }

    #[test]
    fn other_languages_are_told_their_own_build_command_and_nothing_is_written() {
        let dir = project(&["Cargo.toml"]);
        let out = dir.join("out.wasm");
        let err = build(&dir, Some(&out), Options::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("is a Rust plugin"), "{err}");
        assert!(
            err.contains("cargo build --release --target wasm32-wasip2"),
            "{err}"
        );
        assert!(!out.exists());

        let dir = project(&["notes.txt"]);
        let err = build(&dir, None, Options::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a plugin project"), "{err}");

        let err = build(Path::new("/nonexistent/herald"), None, Options::default())
            .unwrap_err()
            .to_string();
        assert_eq!(err, "/nonexistent/herald: not a directory");
    }

    #[test]
    fn the_default_output_is_named_after_the_directory() {
        let dir = project(&["go.mod"]);
        assert_eq!(
            project_name(&dir),
            dir.file_name().unwrap().to_str().unwrap()
        );
    }
}
