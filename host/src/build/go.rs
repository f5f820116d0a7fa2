//! The Go toolchain's half of a build: `go build` of the plugin's main
//! package into a WASI preview1 reactor core module.
//!
//! `GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath
//! -ldflags=-s -o core.wasm .` in the plugin's directory (`-ldflags=-s`
//! dropped by `--keep-names`): the standard
//! toolchain, no TinyGo and no flags beyond these (`//go:wasmexport` needs
//! Go 1.24). The environment is the author's otherwise (`GOFLAGS`,
//! `GOPROXY`, `GOCACHE`, …), so `go build` behaves as it does for them.

use std::path::{Path, PathBuf};
use std::process::Command;
use thiserror::Error;

/// What installs Go, for the messages that need it.
pub const INSTALL: &str =
    "install Go 1.24 or later (https://go.dev/dl/) and put `go` on PATH, or set HERALD_GO";

/// The oldest Go whose `go build` makes a plugin: `//go:wasmexport`.
const OLDEST: (u32, u32) = (1, 24);

/// Why `go build` did not produce a core module.
#[derive(Debug, Error)]
pub enum GoError {
    /// No `go` to run.
    #[error("cannot run `{program}` ({source}): {INSTALL}")]
    Missing {
        /// The program tried.
        program: String,
        /// Why it did not start.
        source: std::io::Error,
    },
    /// A Go without `//go:wasmexport`.
    #[error("{found} is too old to build plugins (`//go:wasmexport` needs go1.24): {INSTALL}")]
    TooOld {
        /// What `go env GOVERSION` said.
        found: String,
    },
    /// `go env GOVERSION` failed or said something unreadable.
    #[error("`{program} env GOVERSION` failed: {output}")]
    Version {
        /// The program run.
        program: String,
        /// What it printed.
        output: String,
    },
    /// `go build` failed: its output names the file and line at fault.
    #[error("`go build` failed in {dir} ({status}):\n{output}", dir = .dir.display())]
    Build {
        /// The plugin's directory.
        dir: PathBuf,
        /// How it exited.
        status: std::process::ExitStatus,
        /// What it printed (stderr, then stdout).
        output: String,
    },
}

/// The Go command: `HERALD_GO`, else `go` on the PATH.
pub fn program() -> String {
    std::env::var("HERALD_GO").unwrap_or_else(|_| "go".into())
}

/// The Go version `program` runs as (`go1.26.8`), if it can build plugins.
pub fn version(program: &str) -> Result<String, GoError> {
    let output = Command::new(program)
        .args(["env", "GOVERSION"])
        .output()
        .map_err(|source| GoError::Missing {
            program: program.to_owned(),
            source,
        })?;
    let text = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    let failed = || GoError::Version {
        program: program.to_owned(),
        output: format!("{}{}", text, String::from_utf8_lossy(&output.stderr).trim()),
    };
    if !output.status.success() {
        return Err(failed());
    }
    match parse_version(&text) {
        Some(found) if found >= OLDEST => Ok(text),
        Some(_) => Err(GoError::TooOld { found: text }),
        None => Err(failed()),
    }
}

/// `go1.26.8`, `go1.24rc1` or `go1.25-devel_abc` as (major, minor).
fn parse_version(text: &str) -> Option<(u32, u32)> {
    let rest = text.strip_prefix("go")?;
    let mut parts = rest.split(|c: char| !c.is_ascii_digit());
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next().and_then(|m| m.parse().ok()).unwrap_or(0);
    Some((major, minor))
}

/// Runs `go build` in `dir`, writing the core module to `out`; with
/// `keep_names`, without `-ldflags=-s`, so that the module keeps its name
/// section and wasmtime's trap backtraces name Go functions (2 % larger).
pub fn build(program: &str, dir: &Path, out: &Path, keep_names: bool) -> Result<(), GoError> {
    let mut command = Command::new(program);
    command
        .current_dir(dir)
        .env("GOOS", "wasip1")
        .env("GOARCH", "wasm")
        .args(["build", "-buildmode=c-shared", "-trimpath"]);
    if !keep_names {
        command.arg("-ldflags=-s");
    }
    let output = command
        .arg("-o")
        .arg(out)
        .arg(".")
        .output()
        .map_err(|source| GoError::Missing {
            program: program.to_owned(),
            source,
        })?;
    if output.status.success() {
        return Ok(());
    }
    Err(GoError::Build {
        dir: dir.to_owned(),
        status: output.status,
        output: format!(
            "{}{}",
            String::from_utf8_lossy(&output.stderr),
            String::from_utf8_lossy(&output.stdout)
        )
        .trim_end()
        .to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_read_from_release_candidate_and_development_builds() {
        assert_eq!(parse_version("go1.26.8"), Some((1, 26)));
        assert_eq!(parse_version("go1.24rc1"), Some((1, 24)));
        assert_eq!(parse_version("go1.25-devel_0123"), Some((1, 25)));
        assert_eq!(parse_version("go2"), Some((2, 0)));
        assert_eq!(parse_version("devel go1.27"), None);
        assert!(parse_version("go1.23.4").unwrap() < OLDEST);
    }

    #[test]
    fn a_missing_go_is_named_with_what_installs_it() {
        let err = version("/nonexistent/herald-test/go")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("cannot run `/nonexistent/herald-test/go`"),
            "{err}"
        );
        assert!(err.contains("install Go 1.24 or later"), "{err}");
    }

    #[test]
    fn an_old_go_is_refused_before_it_builds() {
        let dir = crate::scratch::ScratchDir::new("old-go").unwrap();
        let fake = dir.join("go");
        std::fs::write(&fake, "#!/bin/sh\necho go1.21.13\n").unwrap();
        let status = Command::new("chmod").arg("+x").arg(&fake).status().unwrap();
        assert!(status.success());
        let err = version(fake.to_str().unwrap()).unwrap_err().to_string();
        assert!(err.starts_with("go1.21.13 is too old"), "{err}");
    }
}
