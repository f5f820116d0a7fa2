//! The crate's error type.

use std::net::SocketAddr;
use std::path::PathBuf;

/// Errors starting, seeding, persisting or configuring the server.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The listen address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A file or directory could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A manifest could not be parsed or was rejected.
    #[error("seed manifest {path}: {message}")]
    Seed {
        /// The manifest file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// Persisted state could not be loaded.
    #[error("persisted state {path}: {message}")]
    Persist {
        /// The snapshot file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}
