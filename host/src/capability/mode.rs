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

/// How a plugin's admission decisions reach the API server, set by the
/// operator only (`plugins.<name>.admission`; a sidecar cannot weaken a
/// policy): a plugin whose operator entry says `mode: dry-run` audits
/// unless the entry says otherwise here.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AdmissionMode {
    /// Refusals refuse, changes are made.
    #[default]
    Enforce,
    /// Never refuses and never changes: a refusal becomes a warning, an
    /// audit line and a `would-deny` count, a change a warning naming the
    /// patch (Kubewarden's monitor mode).
    Audit,
}

impl AdmissionMode {
    /// `enforce` or `audit`.
    pub fn label(self) -> &'static str {
        match self {
            AdmissionMode::Enforce => "enforce",
            AdmissionMode::Audit => "audit",
        }
    }
}
