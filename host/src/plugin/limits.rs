//! Per-plugin resource limits and the store limiter that enforces them.

use super::manifest::RequestedLimits;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Default per-call deadline.
pub const DEFAULT_CALL_DEADLINE: Duration = Duration::from_secs(1);
/// Default linear-memory cap per instance.
pub const DEFAULT_MEMORY_BYTES: u64 = 64 * 1024 * 1024;

/// The limits one plugin instance runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    /// Wall-clock budget for one handler call.
    #[serde(with = "crate::duration_serde")]
    pub call_deadline: Duration,
    /// Cap on the instance's linear memory, in bytes.
    pub memory_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            call_deadline: DEFAULT_CALL_DEADLINE,
            memory_bytes: DEFAULT_MEMORY_BYTES,
        }
    }
}

/// The operator's limit policy: defaults for plugins that ask for nothing and
/// maxima no plugin may exceed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitPolicy {
    /// Limits given to a plugin that requests none.
    pub default: Limits,
    /// Upper bounds on what a plugin may request or be configured with.
    pub max: Limits,
}

impl Default for LimitPolicy {
    fn default() -> Self {
        LimitPolicy {
            default: Limits::default(),
            max: Limits {
                call_deadline: Duration::from_secs(10),
                memory_bytes: 512 * 1024 * 1024,
            },
        }
    }
}

/// A requested limit above the operator's maximum.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LimitError {
    /// Requested deadline over the maximum.
    #[error("requested call deadline of {requested} ms exceeds the operator's maximum of {max} ms")]
    Deadline {
        /// Requested, in ms.
        requested: u128,
        /// Maximum, in ms.
        max: u128,
    },
    /// Requested memory over the maximum.
    #[error("requested memory of {requested} bytes exceeds the operator's maximum of {max} bytes")]
    Memory {
        /// Requested bytes.
        requested: u64,
        /// Maximum bytes.
        max: u64,
    },
}

impl LimitPolicy {
    /// The limits a plugin gets: its request (or the operator's override, which
    /// wins), else the default; refused when above the maximum.
    pub fn resolve(
        &self,
        requested: RequestedLimits,
        overrides: RequestedLimits,
    ) -> Result<Limits, LimitError> {
        let call_deadline = overrides
            .call_deadline
            .or(requested.call_deadline)
            .unwrap_or(self.default.call_deadline);
        let memory_bytes = overrides
            .memory_bytes
            .or(requested.memory_bytes)
            .unwrap_or(self.default.memory_bytes);
        if call_deadline > self.max.call_deadline {
            return Err(LimitError::Deadline {
                requested: call_deadline.as_millis(),
                max: self.max.call_deadline.as_millis(),
            });
        }
        if memory_bytes > self.max.memory_bytes {
            return Err(LimitError::Memory {
                requested: memory_bytes,
                max: self.max.memory_bytes,
            });
        }
        Ok(Limits {
            call_deadline,
            memory_bytes,
        })
    }
}

/// Caps on the number of wasm objects one component instance may create.
const MAX_INSTANCES: usize = 64;
const MAX_TABLES: usize = 64;
const MAX_MEMORIES: usize = 16;
const MAX_TABLE_ELEMENTS: usize = 1 << 20;

/// Enforces an instance's memory cap and remembers that it was hit, so the
/// resulting trap can be reported as a memory-limit fault.
#[derive(Debug)]
pub(crate) struct InstanceLimiter {
    memory_bytes: usize,
    pub(crate) memory_limit_hit: bool,
}

impl InstanceLimiter {
    pub(crate) fn new(limits: &Limits) -> Self {
        InstanceLimiter {
            memory_bytes: usize::try_from(limits.memory_bytes).unwrap_or(usize::MAX),
            memory_limit_hit: false,
        }
    }
}

/// The error a guest's over-limit memory growth traps with.
#[derive(Debug, thiserror::Error)]
#[error("memory limit of {limit} bytes reached (tried to grow to {desired} bytes)")]
pub struct MemoryLimitExceeded {
    /// The cap.
    pub limit: usize,
    /// The size asked for.
    pub desired: usize,
}

impl wasmtime::ResourceLimiter for InstanceLimiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.memory_bytes {
            self.memory_limit_hit = true;
            // Trapping (rather than failing the grow) stops a memory bomb at
            // once and lets the host tell this fault apart from others.
            return Err(wasmtime::Error::new(MemoryLimitExceeded {
                limit: self.memory_bytes,
                desired,
            }));
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS)
    }

    fn instances(&self) -> usize {
        MAX_INSTANCES
    }

    fn tables(&self) -> usize {
        MAX_TABLES
    }

    fn memories(&self) -> usize {
        MAX_MEMORIES
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn override_beats_request_beats_default() {
        let policy = LimitPolicy::default();
        let requested = RequestedLimits {
            call_deadline: Some(Duration::from_millis(300)),
            memory_bytes: None,
        };
        let limits = policy
            .resolve(requested, RequestedLimits::default())
            .unwrap();
        assert_eq!(limits.call_deadline, Duration::from_millis(300));
        assert_eq!(limits.memory_bytes, DEFAULT_MEMORY_BYTES);
        let overrides = RequestedLimits {
            call_deadline: Some(Duration::from_millis(50)),
            memory_bytes: Some(1 << 20),
        };
        let limits = policy.resolve(requested, overrides).unwrap();
        assert_eq!(
            limits,
            Limits {
                call_deadline: Duration::from_millis(50),
                memory_bytes: 1 << 20
            }
        );
    }

    #[test]
    fn requests_above_the_maximum_are_refused() {
        let policy = LimitPolicy::default();
        let greedy = RequestedLimits {
            call_deadline: None,
            memory_bytes: Some(u64::MAX),
        };
        let err = policy
            .resolve(greedy, RequestedLimits::default())
            .unwrap_err();
        assert!(matches!(err, LimitError::Memory { .. }), "{err}");
        let slow = RequestedLimits {
            call_deadline: Some(Duration::from_secs(3600)),
            memory_bytes: None,
        };
        assert!(matches!(
            policy.resolve(slow, RequestedLimits::default()),
            Err(LimitError::Deadline { .. })
        ));
    }
}
