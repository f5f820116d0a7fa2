//! Enforce or dry-run: how a plugin's actions leave the host.

use serde::{Deserialize, Serialize};

/// How a plugin's actions leave the host, set by the operator per plugin
/// (`plugins.<name>.mode`). Each capability says what dry-run means for it
/// next to its grant; none of them has an effect outside the host in
/// dry-run, and every audit line and counter of a dry-run action says
/// "would".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// For real.
    #[default]
    Enforce,
    /// Shadow mode: Kubernetes writes and Events are sent with `dryRun=All`
    /// (validated and admitted, never persisted), HTTP requests with an
    /// unsafe method are not sent at all; the host logs what would have
    /// happened.
    DryRun,
}

impl Mode {
    /// `enforce` or `dry-run`: the `mode` label of counters and audit lines.
    pub fn label(self) -> &'static str {
        match self {
            Mode::Enforce => "enforce",
            Mode::DryRun => "dry-run",
        }
    }

    /// True in dry-run.
    pub fn is_dry_run(self) -> bool {
        self == Mode::DryRun
    }
}
