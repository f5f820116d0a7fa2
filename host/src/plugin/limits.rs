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
    #[serde(with = "crate::units::duration")]
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

/// When a plugin's idle instance is dropped (`plugins.<name>.reclaimIdleAfter`).
///
/// A live instance holds the pages its calls wrote: for a Python or
/// JavaScript plugin about half a MiB to a MiB beyond the memory image its
/// instances share (B11), scattered over the interpreter's heap (reference
/// counts, the engine's nursery), so nothing short of dropping the instance
/// gives them back. Reclaiming is the operator's choice per plugin because
/// the plugin notices: its globals start afresh, as after a fault, and its
/// next delivery pays for instantiating (B11's `reclaimed` rows).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IdlePolicy {
    /// Drop the instance after this long with nothing to deliver; `None`:
    /// keep it as long as the plugin.
    pub reclaim_after: Option<Duration>,
}

impl IdlePolicy {
    /// The shortest idle time that may be configured: shorter would trade
    /// a few pages for an instantiation on nearly every delivery.
    pub const MIN_RECLAIM_AFTER: Duration = Duration::from_secs(1);

    /// Checks a configured idle time; the error names `key`.
    pub fn check(key: &str, reclaim_after: Option<Duration>) -> Result<(), crate::yaml::Invalid> {
        match reclaim_after {
            Some(after) if after < Self::MIN_RECLAIM_AFTER => Err(crate::yaml::Invalid::new(
                key,
                format!(
                    "must be at least {}, not {}",
                    crate::units::duration::format(Self::MIN_RECLAIM_AFTER),
                    crate::units::duration::format(after)
                ),
            )),
            _ => Ok(()),
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

/// What one table element costs against the memory cap: a pointer.
const TABLE_ELEMENT_BYTES: usize = std::mem::size_of::<usize>();

/// How many host resources one instance may hold at once: `wasi:http`
/// fields, requests, responses, bodies and futures, `wasi:io` streams and
/// pollables, every handle in the instance's resource table. A plugin
/// sending a few requests at a time holds tens; the cap is there so that a
/// plugin hoarding handles stops long before their bookkeeping costs the
/// host anything (wasmtime's own default is a million). Not a setting: what
/// the handles hold is charged to the memory cap (`limits.memory`), which
/// is the operator's; this only bounds their number.
pub const MAX_HOST_RESOURCES: usize = 4096;

/// Enforces an instance's memory cap and remembers that it was hit, so the
/// resulting trap can be reported as a memory-limit fault.
///
/// The cap is one budget for the whole instance: every linear memory and
/// every table of every core instance inside the component counts against
/// it (a table element as a pointer), and so do answers the host builds for
/// the instance ([`InstanceLimiter::reserve_answer`]) and the host
/// resources it holds ([`InstanceLimiter::charge_host`]).
#[derive(Debug)]
pub(crate) struct InstanceLimiter {
    memory_bytes: usize,
    /// Bytes of memories and tables allocated so far.
    used: usize,
    /// Bytes of host resources the instance held when last counted.
    host: usize,
    pub(crate) memory_limit_hit: bool,
    /// The limit hit, once one was: the instance is done for.
    exceeded: Option<MemoryLimitExceeded>,
    /// What the instance used after its first call (see `outgrown`).
    after_first_call: Option<usize>,
}

impl InstanceLimiter {
    pub(crate) fn new(limits: &Limits) -> Self {
        InstanceLimiter {
            memory_bytes: usize::try_from(limits.memory_bytes).unwrap_or(usize::MAX),
            used: 0,
            host: 0,
            memory_limit_hit: false,
            exceeded: None,
            after_first_call: None,
        }
    }

    /// Whether the instance, between two calls, should be replaced by a
    /// fresh one before it reaches its cap: its memories and tables take
    /// three quarters of the cap or more, a quarter of the cap or more of
    /// it gained since its first call. A guest that leaks with every call
    /// (ComponentizeJS 0.23 never frees the arguments of an export) would
    /// otherwise end in a memory-limit fault in the middle of a call; one
    /// whose memory is large from its first call on is never replaced for
    /// it. A wasm memory never shrinks, so the size is a high-water mark,
    /// not what the guest still holds. Host resources kept across calls do
    /// not count here: holding the host's memory stays a fault at the cap,
    /// visible as one (SECURITY.md, 11). The first call's use is recorded
    /// here.
    pub(crate) fn outgrown(&mut self) -> Option<MemoryOutgrown> {
        let used = self.used;
        let first = *self.after_first_call.get_or_insert(used);
        let cap = self.memory_bytes;
        (used >= cap / 4 * 3 && used - first >= cap / 4).then_some(MemoryOutgrown {
            used,
            after_first_call: first,
            cap,
        })
    }

    /// Accounts for growing something from `current` to `desired` bytes, or
    /// traps: over the cap, the growth is refused and the limit recorded.
    fn grow(&mut self, current: usize, desired: usize) -> wasmtime::Result<bool> {
        let total = self.used.saturating_sub(current).saturating_add(desired);
        if total.saturating_add(self.host) > self.memory_bytes {
            return Err(self.exceeded(
                total.saturating_add(self.host),
                "its memories and tables plus the host resources it holds",
            ));
        }
        self.used = total;
        Ok(true)
    }

    /// Checks that an answer of `bytes` the host is about to build for the
    /// guest fits in what is left of the cap; the guest must copy it into
    /// its own memory, so an answer that cannot fit is a memory-limit fault,
    /// raised before the host allocates it.
    pub(crate) fn reserve_answer(&mut self, bytes: usize) -> wasmtime::Result<()> {
        let total = self.used.saturating_add(self.host).saturating_add(bytes);
        if total > self.memory_bytes {
            return Err(self.exceeded(
                total,
                "its memories and tables, the host resources it holds and a host answer",
            ));
        }
        Ok(())
    }

    /// Charges the host resources the instance holds now, `bytes` in all
    /// (their contents and their bookkeeping), replacing the last count:
    /// with its memories and tables they must fit in the cap, or this is
    /// the memory-limit fault that ends the instance. Once a limit was hit
    /// every later charge fails too.
    pub(crate) fn charge_host(&mut self, bytes: usize) -> wasmtime::Result<()> {
        if let Some(hit) = &self.exceeded {
            return Err(wasmtime::Error::new(hit.clone()));
        }
        self.host = bytes;
        let total = self.used.saturating_add(bytes);
        if total > self.memory_bytes {
            return Err(self.exceeded(
                total,
                "its memories and tables plus the host resources it holds (wasi:http fields, \
                 requests, responses, bodies, streams)",
            ));
        }
        Ok(())
    }

    /// The limit this instance hit, if it hit one.
    pub(crate) fn exceeded_limit(&self) -> Option<&MemoryLimitExceeded> {
        self.exceeded.as_ref()
    }

    fn exceeded(&mut self, desired: usize, what: &'static str) -> wasmtime::Error {
        self.memory_limit_hit = true;
        let hit = MemoryLimitExceeded {
            limit: self.memory_bytes,
            desired,
            what,
        };
        self.exceeded = Some(hit.clone());
        // Trapping (rather than failing the grow) stops a memory bomb at
        // once and lets the host tell this fault apart from others.
        wasmtime::Error::new(hit)
    }
}

/// An instance replaced between calls because its memory grew towards its
/// cap ([`InstanceLimiter::outgrown`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "its memory grew to {used} bytes of its {cap}-byte cap (limits.memory), from {after_first_call} after its first call: replaced by a fresh instance before the next call"
)]
pub struct MemoryOutgrown {
    /// Bytes of memories and tables after the last call.
    pub used: usize,
    /// The same after the instance's first call.
    pub after_first_call: usize,
    /// The cap.
    pub cap: usize,
}

/// The error a guest's over-limit memory growth traps with.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "memory limit of {limit} bytes (limits.memory) reached ({what} would need {desired} bytes)"
)]
pub struct MemoryLimitExceeded {
    /// The cap.
    pub limit: usize,
    /// The total asked for.
    pub desired: usize,
    /// What asked for it.
    pub what: &'static str,
}

/// The fault of an instance that tried to hold more than
/// [`MAX_HOST_RESOURCES`] host resources at once.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "handle cap of {limit} host resources reached (wasi:http fields, requests, responses, \
     bodies, streams and pollables held at once by one instance)"
)]
pub struct HandleLimitExceeded {
    /// The cap.
    pub limit: usize,
}

impl wasmtime::ResourceLimiter for InstanceLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.grow(current, desired)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.grow(
            current.saturating_mul(TABLE_ELEMENT_BYTES),
            desired.saturating_mul(TABLE_ELEMENT_BYTES),
        )
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

/// A pair of limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitValues {
    /// Deadline of one handler call, e.g. `1s`.
    pub call_deadline: Duration,
    /// Memory cap of one instance, e.g. `64Mi`.
    pub memory: u64,
}

/// `limits`. Each of its four keys has its own default: setting
/// `limits.max.callDeadline` alone keeps the default `limits.max.memory`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(from = "PartialLimitsConfig")]
pub struct LimitsConfig {
    /// Limits of a plugin that asks for none.
    pub default: LimitValues,
    /// The most any plugin may ask for or be given.
    pub max: LimitValues,
}

/// `limits` as written: any of its keys may be left out.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
struct PartialLimitsConfig {
    default: PluginLimits,
    max: PluginLimits,
}

impl From<PartialLimitsConfig> for LimitsConfig {
    fn from(written: PartialLimitsConfig) -> Self {
        let defaults = LimitsConfig::default();
        let fill = |given: PluginLimits, default: LimitValues| LimitValues {
            call_deadline: given.call_deadline.unwrap_or(default.call_deadline),
            memory: given.memory.unwrap_or(default.memory),
        };
        LimitsConfig {
            default: fill(written.default, defaults.default),
            max: fill(written.max, defaults.max),
        }
    }
}

impl Default for LimitsConfig {
    fn default() -> Self {
        let policy = LimitPolicy::default();
        LimitsConfig {
            default: LimitValues {
                call_deadline: policy.default.call_deadline,
                memory: policy.default.memory_bytes,
            },
            max: LimitValues {
                call_deadline: policy.max.call_deadline,
                memory: policy.max.memory_bytes,
            },
        }
    }
}

/// Per-plugin limit overrides.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct PluginLimits {
    /// Call deadline.
    #[serde(with = "crate::units::duration::option")]
    pub call_deadline: Option<Duration>,
    /// Memory cap.
    #[serde(with = "crate::units::quantity::option")]
    pub memory: Option<u64>,
}

impl LimitsConfig {
    /// Checks each pair and that defaults stay within the maxima; the key
    /// at fault is relative to `limits`.
    pub fn validate(&self) -> Result<(), crate::yaml::Invalid> {
        for (key, values) in [("default", &self.default), ("max", &self.max)] {
            if values.call_deadline < Duration::from_millis(1) {
                return Err(crate::yaml::Invalid::new(
                    format!("{key}.callDeadline"),
                    "must be at least 1ms",
                ));
            }
            if values.memory < (1 << 20) {
                return Err(crate::yaml::Invalid::new(
                    format!("{key}.memory"),
                    "must be at least 1Mi",
                ));
            }
        }
        if self.default.call_deadline > self.max.call_deadline {
            return Err(crate::yaml::Invalid::new(
                "default.callDeadline",
                "is above limits.max.callDeadline",
            ));
        }
        if self.default.memory > self.max.memory {
            return Err(crate::yaml::Invalid::new(
                "default.memory",
                "is above limits.max.memory",
            ));
        }
        Ok(())
    }

    /// Checks one plugin's overrides against the maxima; the key at fault
    /// is relative (`limits.memory`).
    pub fn check_overrides(&self, limits: &PluginLimits) -> Result<(), crate::yaml::Invalid> {
        if let Some(deadline) = limits.call_deadline
            && deadline > self.max.call_deadline
        {
            return Err(crate::yaml::Invalid::new(
                "limits.callDeadline",
                format!(
                    "{} is above limits.max.callDeadline ({})",
                    crate::units::duration::format(deadline),
                    crate::units::duration::format(self.max.call_deadline)
                ),
            ));
        }
        if let Some(memory) = limits.memory
            && memory > self.max.memory
        {
            return Err(crate::yaml::Invalid::new(
                "limits.memory",
                format!(
                    "{} is above limits.max.memory ({})",
                    crate::units::quantity::format(memory),
                    crate::units::quantity::format(self.max.memory)
                ),
            ));
        }
        Ok(())
    }

    /// The policy the runtime applies.
    pub fn policy(&self) -> LimitPolicy {
        let limits = |v: &LimitValues| Limits {
            call_deadline: v.call_deadline,
            memory_bytes: v.memory,
        };
        LimitPolicy {
            default: limits(&self.default),
            max: limits(&self.max),
        }
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
    fn the_cap_is_one_budget_across_memories_tables_and_answers() {
        let mut limiter = InstanceLimiter::new(&Limits {
            call_deadline: DEFAULT_CALL_DEADLINE,
            memory_bytes: 1000,
        });
        use wasmtime::ResourceLimiter as _;
        assert!(limiter.memory_growing(0, 400, None).unwrap());
        assert!(limiter.memory_growing(0, 400, None).unwrap());
        // A second memory may not take what the first already holds.
        assert!(limiter.memory_growing(0, 400, None).is_err());
        assert!(limiter.memory_limit_hit);
        // Tables count as pointers: 25 elements of 8 bytes fill the rest.
        let mut limiter = InstanceLimiter::new(&Limits {
            call_deadline: DEFAULT_CALL_DEADLINE,
            memory_bytes: 1000,
        });
        assert!(limiter.memory_growing(0, 800, None).unwrap());
        assert!(
            limiter
                .table_growing(0, 200 / TABLE_ELEMENT_BYTES, None)
                .unwrap()
        );
        assert!(
            limiter
                .table_growing(
                    200 / TABLE_ELEMENT_BYTES,
                    200 / TABLE_ELEMENT_BYTES + 1,
                    None
                )
                .is_err()
        );
        // Growing one memory counts only the growth.
        let mut limiter = InstanceLimiter::new(&Limits {
            call_deadline: DEFAULT_CALL_DEADLINE,
            memory_bytes: 1000,
        });
        assert!(limiter.memory_growing(0, 500, None).unwrap());
        assert!(limiter.memory_growing(500, 900, None).unwrap());
        assert!(limiter.reserve_answer(100).is_ok());
        assert!(limiter.reserve_answer(101).is_err());
    }

    #[test]
    fn an_instance_is_outgrown_when_it_grew_by_a_quarter_to_three_quarters_of_its_cap() {
        use wasmtime::ResourceLimiter as _;
        let limits = Limits {
            call_deadline: DEFAULT_CALL_DEADLINE,
            memory_bytes: 1000,
        };
        // A leak: 100 bytes after the first call, then growing.
        let mut leaking = InstanceLimiter::new(&limits);
        assert!(leaking.memory_growing(0, 100, None).unwrap());
        assert_eq!(leaking.outgrown(), None);
        assert!(leaking.memory_growing(100, 749, None).unwrap());
        assert_eq!(leaking.outgrown(), None, "under three quarters");
        assert!(leaking.memory_growing(749, 750, None).unwrap());
        assert_eq!(
            leaking.outgrown(),
            Some(MemoryOutgrown {
                used: 750,
                after_first_call: 100,
                cap: 1000
            })
        );
        // Host resources kept across calls are no leak of the guest's: at
        // the cap they are a fault, never a quiet replacement.
        let mut holding = InstanceLimiter::new(&limits);
        assert!(holding.memory_growing(0, 100, None).unwrap());
        assert_eq!(holding.outgrown(), None);
        holding.charge_host(850).unwrap();
        assert_eq!(holding.outgrown(), None);
        // Large from its first call on, and growing less than a quarter
        // since: never replaced for it, however often it is asked.
        let mut large = InstanceLimiter::new(&limits);
        assert!(large.memory_growing(0, 800, None).unwrap());
        assert_eq!(large.outgrown(), None);
        assert!(large.memory_growing(800, 1000, None).unwrap());
        assert_eq!(large.outgrown(), None);
    }

    #[test]
    fn host_resources_count_against_the_same_cap_and_a_hit_is_final() {
        use wasmtime::ResourceLimiter as _;
        let limits = Limits {
            call_deadline: DEFAULT_CALL_DEADLINE,
            memory_bytes: 1000,
        };
        let mut limiter = InstanceLimiter::new(&limits);
        assert!(limiter.memory_growing(0, 600, None).unwrap());
        // A new count replaces the last one.
        assert!(limiter.charge_host(400).is_ok());
        assert!(limiter.charge_host(100).is_ok());
        // What the host holds leaves less for answers and for growth.
        assert!(limiter.reserve_answer(300).is_ok());
        assert!(limiter.reserve_answer(301).is_err());
        let mut limiter = InstanceLimiter::new(&limits);
        assert!(limiter.charge_host(500).is_ok());
        assert!(limiter.memory_growing(0, 501, None).is_err());
        // Over the cap: a memory-limit fault naming the cap and its key, and
        // every later charge fails too, even a smaller one.
        let mut limiter = InstanceLimiter::new(&limits);
        assert!(limiter.memory_growing(0, 600, None).unwrap());
        let error = limiter.charge_host(401).unwrap_err();
        assert!(limiter.memory_limit_hit);
        let hit = limiter.exceeded_limit().expect("the hit is recorded");
        assert_eq!((hit.limit, hit.desired), (1000, 1001));
        let message = error.to_string();
        assert!(
            message.contains("memory limit of 1000 bytes (limits.memory)")
                && message.contains("host resources"),
            "{message}"
        );
        assert!(limiter.charge_host(0).is_err());
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
