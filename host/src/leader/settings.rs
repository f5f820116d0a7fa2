//! What a [`LeaderElector`](super::LeaderElector) is told: which Lease, who
//! it is, and the three timings of client-go's leader election, with the
//! checks client-go makes on them.

use super::LeaderError;
use crate::yaml::ConfigError;
use serde::Deserialize;
use std::time::Duration;

/// client-go's default `leaseDuration`: how long a follower waits, after it
/// last saw the Lease change, before it may take it over.
pub const DEFAULT_LEASE_DURATION: Duration = Duration::from_secs(15);
/// client-go's default `renewDeadline`: how long the leader keeps trying to
/// renew before it steps down.
pub const DEFAULT_RENEW_DEADLINE: Duration = Duration::from_secs(10);
/// client-go's default `retryPeriod`: the wait between two attempts.
pub const DEFAULT_RETRY_PERIOD: Duration = Duration::from_secs(2);
/// client-go's jitter factor: a follower waits between one and
/// `1 + JITTER_FACTOR` retry periods between attempts, so that replicas do
/// not all try at once; `renewDeadline` must exceed `JITTER_FACTOR` retry
/// periods.
pub const JITTER_FACTOR: f64 = 1.2;

/// Which Lease to contend for, as whom, and how fast.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseSettings {
    /// Namespace of the Lease.
    pub namespace: String,
    /// Name of the Lease (created if missing).
    pub name: String,
    /// This replica's identity, written to `spec.holderIdentity`; must be
    /// unique among the replicas (the pod name is).
    pub identity: String,
    /// `spec.leaseDurationSeconds`: a whole number of seconds, at least 1.
    pub lease_duration: Duration,
    /// The leader steps down when it has not renewed for this long; shorter
    /// than `lease_duration`, so it stops before anyone may take over.
    pub renew_deadline: Duration,
    /// Wait between attempts to acquire or renew.
    pub retry_period: Duration,
}

impl LeaseSettings {
    /// Settings for the Lease `namespace/name` held as `identity`, with
    /// client-go's default timings (15s, 10s, 2s).
    pub fn new(
        namespace: impl Into<String>,
        name: impl Into<String>,
        identity: impl Into<String>,
    ) -> Self {
        LeaseSettings {
            namespace: namespace.into(),
            name: name.into(),
            identity: identity.into(),
            lease_duration: DEFAULT_LEASE_DURATION,
            renew_deadline: DEFAULT_RENEW_DEADLINE,
            retry_period: DEFAULT_RETRY_PERIOD,
        }
    }

    /// `namespace/name`, for messages.
    pub fn lease_key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// Checks every setting; the error names the first one at fault with the
    /// configuration key it comes from (`leaseDuration`, `leaseName`, ...).
    pub fn validate(&self) -> Result<(), LeaderError> {
        check_timings(self.lease_duration, self.renew_deadline, self.retry_period)?;
        check_lease_name(&self.name)?;
        check_namespace(&self.namespace)?;
        check_identity(&self.identity)
    }
}

fn invalid(setting: &'static str, problem: String) -> LeaderError {
    LeaderError::InvalidSettings { setting, problem }
}

/// The checks client-go makes: `leaseDuration > renewDeadline >
/// JITTER_FACTOR × retryPeriod > 0`, plus a whole number of seconds for the
/// lease duration (the Lease stores seconds).
pub fn check_timings(
    lease_duration: Duration,
    renew_deadline: Duration,
    retry_period: Duration,
) -> Result<(), LeaderError> {
    if lease_duration < Duration::from_secs(1) || lease_duration.subsec_nanos() != 0 {
        return Err(invalid(
            "leaseDuration",
            format!(
                "{} is not a whole number of seconds of at least 1s (the Lease stores seconds)",
                crate::units::duration::format(lease_duration)
            ),
        ));
    }
    if lease_duration > Duration::from_secs(i32::MAX as u64) {
        return Err(invalid("leaseDuration", "is too long".into()));
    }
    if retry_period.is_zero() {
        return Err(invalid("retryPeriod", "must be above zero".into()));
    }
    if renew_deadline >= lease_duration {
        return Err(invalid(
            "renewDeadline",
            format!(
                "{} must be shorter than leaseDuration ({}), or the leader could still act after a follower took over",
                crate::units::duration::format(renew_deadline),
                crate::units::duration::format(lease_duration)
            ),
        ));
    }
    if renew_deadline.as_secs_f64() <= JITTER_FACTOR * retry_period.as_secs_f64() {
        return Err(invalid(
            "retryPeriod",
            format!(
                "{} is too long for renewDeadline {}: renewDeadline must exceed {JITTER_FACTOR} × retryPeriod so the leader gets more than one try",
                crate::units::duration::format(retry_period),
                crate::units::duration::format(renew_deadline)
            ),
        ));
    }
    Ok(())
}

/// A Lease name is a DNS subdomain: at most 253 lowercase letters, digits,
/// `-` and `.`, starting and ending with a letter or digit.
pub fn check_lease_name(name: &str) -> Result<(), LeaderError> {
    let ok = !name.is_empty()
        && name.len() <= 253
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && starts_and_ends_alphanumeric(name);
    if ok {
        Ok(())
    } else {
        Err(invalid(
            "leaseName",
            format!(
                "{name:?} is not a valid object name: use lowercase letters, digits, '-' and '.', starting and ending with a letter or digit"
            ),
        ))
    }
}

/// A namespace is a DNS label: at most 63 lowercase letters, digits and
/// `-`, starting and ending with a letter or digit.
pub fn check_namespace(namespace: &str) -> Result<(), LeaderError> {
    let ok = !namespace.is_empty()
        && namespace.len() <= 63
        && namespace
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && starts_and_ends_alphanumeric(namespace);
    if ok {
        Ok(())
    } else {
        Err(invalid(
            "leaseNamespace",
            format!(
                "{namespace:?} is not a valid namespace name: use at most 63 lowercase letters, digits and '-'"
            ),
        ))
    }
}

/// An identity is any non-blank text; it must be unique among replicas.
pub fn check_identity(identity: &str) -> Result<(), LeaderError> {
    if identity.trim().is_empty() {
        return Err(invalid(
            "identity",
            "is empty: give each replica a unique identity (the pod name)".into(),
        ));
    }
    Ok(())
}

fn starts_and_ends_alphanumeric(text: &str) -> bool {
    let alnum = |b: Option<&u8>| b.is_some_and(|b| b.is_ascii_alphanumeric());
    alnum(text.as_bytes().first()) && alnum(text.as_bytes().last())
}

/// `period` stretched by a random factor in `[1, 1 + JITTER_FACTOR)`, as
/// client-go spaces a follower's attempts.
pub fn jittered(period: Duration) -> Duration {
    use std::hash::{BuildHasher, Hasher as _};
    // Each RandomState has fresh keys: hashing nothing gives a random u64.
    let random = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    let unit = (random >> 11) as f64 / (1u64 << 53) as f64;
    period.mul_f64(1.0 + JITTER_FACTOR * unit)
}

/// `leaderElection`: several replicas, one dispatching (see [`crate::leader`]).
pub type LeaderElectionConfig = LeaseConfig;

/// `sharding`: several replicas dividing the plugins, each dispatched by
/// the holder of its Lease (see [`crate::shard`]).
pub type ShardingConfig = LeaseConfig;

/// A section that coordinates replicas through Leases with leader
/// election's rules: `leaderElection` and `sharding` (mutually exclusive).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct LeaseConfig {
    /// On: contend for Leases (leader election: one Lease, only the holder
    /// dispatches; sharding: one Lease per plugin).
    pub enabled: bool,
    /// Name of the Lease (leader election), or the prefix of every Lease
    /// (sharding: `<name>-plugin-<plugin>`, `<name>-member-<hash>`).
    pub lease_name: String,
    /// Namespace of the Lease; unset: the pod's namespace (`POD_NAMESPACE`,
    /// or the service account's namespace file), else `default`.
    pub lease_namespace: Option<String>,
    /// This replica's identity; unset: `POD_NAME`, else the host name.
    pub identity: Option<String>,
    /// How long a follower waits after the Lease last changed before taking
    /// it over (whole seconds).
    #[serde(with = "crate::units::duration")]
    pub lease_duration: Duration,
    /// The leader steps down if it has not renewed for this long.
    #[serde(with = "crate::units::duration")]
    pub renew_deadline: Duration,
    /// Wait between attempts to acquire or renew.
    #[serde(with = "crate::units::duration")]
    pub retry_period: Duration,
}

impl Default for LeaseConfig {
    fn default() -> Self {
        LeaseConfig {
            enabled: false,
            lease_name: "herald".into(),
            lease_namespace: None,
            identity: None,
            lease_duration: crate::leader::DEFAULT_LEASE_DURATION,
            renew_deadline: crate::leader::DEFAULT_RENEW_DEADLINE,
            retry_period: crate::leader::DEFAULT_RETRY_PERIOD,
        }
    }
}

/// Where a pod's service account token mount says which namespace it runs in.
pub const SERVICE_ACCOUNT_NAMESPACE_FILE: &str =
    "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

impl LeaseConfig {
    /// Checks the values of the section `section`; the error is `(key,
    /// problem)` with the full key.
    pub fn validate(&self, section: &str) -> Result<(), crate::yaml::Invalid> {
        let keyed = |err| lease_key(section, err);
        crate::leader::check_timings(self.lease_duration, self.renew_deadline, self.retry_period)
            .map_err(keyed)?;
        crate::leader::check_lease_name(&self.lease_name).map_err(keyed)?;
        if let Some(namespace) = &self.lease_namespace {
            crate::leader::check_namespace(namespace).map_err(keyed)?;
        }
        if let Some(identity) = &self.identity {
            crate::leader::check_identity(identity).map_err(keyed)?;
        }
        Ok(())
    }

    /// The Lease settings of the section `section` (`leaderElection` or
    /// `sharding`, for error messages), with the unset identity and
    /// namespace taken from the environment (`POD_NAME`, `POD_NAMESPACE`,
    /// the host name, the service account's namespace file).
    pub fn lease_settings(
        &self,
        section: &str,
    ) -> Result<crate::leader::LeaseSettings, ConfigError> {
        self.lease_settings_from(section, &|name| std::env::var(name).ok(), &|path| {
            std::fs::read_to_string(path).ok()
        })
    }

    pub(crate) fn lease_settings_from(
        &self,
        section: &str,
        env: &dyn Fn(&str) -> Option<String>,
        read: &dyn Fn(&str) -> Option<String>,
    ) -> Result<crate::leader::LeaseSettings, ConfigError> {
        let nonblank =
            |value: Option<String>| value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
        let identity = nonblank(self.identity.clone())
            .or_else(|| nonblank(env("POD_NAME")))
            .or_else(|| nonblank(env("HOSTNAME")))
            .or_else(|| nonblank(read("/proc/sys/kernel/hostname")))
            .ok_or_else(|| ConfigError::new(
                "environment",
                &format!("{section}.identity"),
                "is unset and neither POD_NAME nor the host name is available: set it, unique per replica",
            ))?;
        let namespace = nonblank(self.lease_namespace.clone())
            .or_else(|| nonblank(env("POD_NAMESPACE")))
            .or_else(|| nonblank(read(SERVICE_ACCOUNT_NAMESPACE_FILE)))
            .unwrap_or_else(|| "default".into());
        let settings = crate::leader::LeaseSettings {
            namespace,
            name: self.lease_name.clone(),
            identity,
            lease_duration: self.lease_duration,
            renew_deadline: self.renew_deadline,
            retry_period: self.retry_period,
        };
        settings
            .validate()
            .map_err(|err| lease_key(section, err).in_source("environment"))?;
        Ok(settings)
    }
}

/// The full configuration key and problem of a Lease setting error in
/// `section`.
fn lease_key(section: &str, err: crate::leader::LeaderError) -> crate::yaml::Invalid {
    match err {
        crate::leader::LeaderError::InvalidSettings { setting, problem } => {
            crate::yaml::Invalid::new(format!("{section}.{setting}"), problem)
        }
        other => crate::yaml::Invalid::new(section, other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setting(result: Result<(), LeaderError>) -> &'static str {
        match result {
            Err(LeaderError::InvalidSettings { setting, .. }) => setting,
            other => panic!("expected invalid settings, got {other:?}"),
        }
    }

    #[test]
    fn client_go_defaults_are_valid() {
        LeaseSettings::new("herald", "herald", "pod-a")
            .validate()
            .unwrap();
    }

    #[test]
    fn timings_that_break_the_protocol_are_refused_naming_the_setting() {
        let s = Duration::from_secs;
        let ms = Duration::from_millis;
        assert_eq!(
            setting(check_timings(ms(1500), ms(500), ms(100))),
            "leaseDuration"
        );
        assert_eq!(setting(check_timings(ms(0), ms(0), ms(0))), "leaseDuration");
        assert_eq!(setting(check_timings(s(15), s(15), s(2))), "renewDeadline");
        assert_eq!(setting(check_timings(s(15), s(20), s(2))), "renewDeadline");
        assert_eq!(setting(check_timings(s(15), s(10), s(9))), "retryPeriod");
        assert_eq!(setting(check_timings(s(15), s(10), ms(0))), "retryPeriod");
        check_timings(s(1), ms(500), ms(100)).unwrap();
    }

    #[test]
    fn names_that_kubernetes_would_refuse_are_refused() {
        assert_eq!(setting(check_lease_name("Herald")), "leaseName");
        assert_eq!(setting(check_lease_name("-herald")), "leaseName");
        assert_eq!(setting(check_lease_name("")), "leaseName");
        check_lease_name("herald.leader-1").unwrap();
        assert_eq!(setting(check_namespace("a.b")), "leaseNamespace");
        assert_eq!(setting(check_namespace(&"a".repeat(64))), "leaseNamespace");
        check_namespace("herald-system").unwrap();
        assert_eq!(setting(check_identity("  ")), "identity");
    }
}
