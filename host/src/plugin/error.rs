//! Errors of loading a plugin and of calling into one.

use std::time::Duration;

/// Why a `.wasm` file could not become a running plugin. Every variant names
/// the problem in words an operator can act on; the caller adds the file.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be read.
    #[error("cannot read file: {0}")]
    Io(#[from] std::io::Error),
    /// The file is empty.
    #[error("file is empty (0 bytes): not a WebAssembly component")]
    Empty,
    /// The file is larger than the operator allows.
    #[error("file is {size} bytes, over the {max}-byte limit for plugins (pluginFiles.maxSize)")]
    TooLarge {
        /// Size of the file.
        size: u64,
        /// The configured maximum.
        max: u64,
    },
    /// The file's digest is not on the operator's allow-list.
    #[error("sha256 {0} is not in pluginFiles.allowedSha256: add it to load this file")]
    NotAllowed(String),
    /// The file does not start with the WebAssembly magic number.
    #[error("not a WebAssembly file (bad magic number)")]
    NotWasm,
    /// The file is shorter than a WebAssembly header.
    #[error("truncated WebAssembly file ({0} bytes, shorter than the 8-byte header)")]
    Truncated(usize),
    /// A core module rather than a component.
    #[error(
        "this is a core WebAssembly module, not a component: build for wasm32-wasip2, or \
         componentize a wasm32-unknown-unknown build with `wasm-tools component new`"
    )]
    CoreModule,
    /// The component failed to validate or compile.
    #[error("invalid or corrupt component: {0}")]
    Compile(String),
    /// The compiler process failed (crashed, ran out of time, or could not
    /// run); the file itself may be fine.
    #[error("compiler: {0}")]
    Compiler(String),
    /// The compiler process refused the file; its message says why.
    #[error("{0}")]
    Rejected(String),
    /// The component implements no version of the plugin world this host runs.
    #[error(
        "component does not implement a {package}/plugin world this host runs ({versions}): {0}",
        package = crate::wit::PACKAGE,
        versions = crate::wit::WORLD_VERSIONS.join(", ")
    )]
    WrongWorld(String),
    /// The component failed while being instantiated or asked for its manifest.
    #[error("plugin failed while starting: {0}")]
    Start(#[from] CallError),
    /// Given its configuration, the plugin named itself differently than
    /// without it: configuration and grants are keyed by the name, so the
    /// name may not depend on them.
    #[error(
        "the plugin calls itself {announced:?}, but {configured:?} once given the configuration \
         of plugins.{announced}: a plugin's name may not depend on its configuration"
    )]
    IdentityChanged {
        /// The name without configuration.
        announced: String,
        /// The name with it.
        configured: String,
    },
    /// The operator's settings for this plugin name do not accept this file.
    #[error("{0}")]
    Identity(String),
    /// The manifest the plugin returned is not acceptable.
    #[error("invalid manifest: {0}")]
    Manifest(#[from] super::manifest::ManifestError),
    /// The operator runs the plugin beyond the default cluster, and it
    /// cannot tell clusters apart.
    #[error(
        "plugins.{plugin}.clusters names {clusters}, but the plugin is built for world {world} \
         and does not import herald:plugin/cluster@0.6.0, so it cannot tell one cluster's \
         notifications from another's: it runs on the default cluster alone. Rebuild it with an \
         SDK on world 0.6.0 that asks for its cluster, or remove plugins.{plugin}.clusters"
    )]
    ClustersUnknown {
        /// The plugin.
        plugin: String,
        /// The clusters configured.
        clusters: String,
        /// Its world.
        world: &'static str,
    },
}

/// What kind of fault stopped a handler call. Faults are traps: the instance
/// that hit one is discarded and rebuilt before the next call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FaultKind {
    /// The call ran past its deadline (epoch interruption).
    Deadline,
    /// The instance tried to grow its memory past its cap.
    MemoryLimit,
    /// The guest's stack overflowed.
    StackOverflow,
    /// The guest panicked or executed `unreachable`.
    Panic,
    /// Any other trap (bad memory access, division by zero, …).
    Trap,
}

impl FaultKind {
    /// Every kind, in the order metrics list them.
    pub const ALL: [FaultKind; 5] = [
        FaultKind::Deadline,
        FaultKind::MemoryLimit,
        FaultKind::StackOverflow,
        FaultKind::Panic,
        FaultKind::Trap,
    ];

    /// A short stable name, used in metrics labels and status.
    pub fn as_str(self) -> &'static str {
        match self {
            FaultKind::Deadline => "deadline",
            FaultKind::MemoryLimit => "memory-limit",
            FaultKind::StackOverflow => "stack-overflow",
            FaultKind::Panic => "panic",
            FaultKind::Trap => "trap",
        }
    }
}

impl std::fmt::Display for FaultKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why one call into a plugin did not succeed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CallError {
    /// The handler ran and returned `err(message)`.
    #[error("handler returned an error: {0}")]
    Handler(String),
    /// The call was stopped by a fault; the instance has been discarded.
    #[error("{kind}: {detail}")]
    Fault {
        /// What kind of fault.
        kind: FaultKind,
        /// The trap message from the runtime.
        detail: String,
    },
    /// A fresh instance could not be created (e.g. its start-up code trapped).
    #[error("cannot instantiate plugin: {0}")]
    Instantiate(String),
}

impl CallError {
    /// The fault kind, if this error is a fault.
    pub fn fault(&self) -> Option<FaultKind> {
        match self {
            CallError::Fault { kind, .. } => Some(*kind),
            _ => None,
        }
    }

    /// The deadline error for a call that was interrupted after `deadline`.
    pub(crate) fn deadline(deadline: Duration) -> Self {
        CallError::Fault {
            kind: FaultKind::Deadline,
            detail: format!("call exceeded its {} ms deadline", deadline.as_millis()),
        }
    }
}
