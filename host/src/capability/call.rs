//! What every capability's host side knows of the call under way: when it
//! must end, how much memory the instance has left for an answer, and which
//! cluster its look-ups, requests and Events go to.

use crate::cluster::ClusterName;
use std::time::{Duration, Instant};

/// Share of the time left in a handler call that one request to the world
/// outside (the API server, an HTTP origin) may use: the rest is the
/// handler's, to act on the answer or the timeout.
pub const REQUEST_SHARE: f64 = 0.8;

/// Where a host call charges the answer it is about to hand the guest: the
/// instance's memory cap, which answers count against as the guest must
/// copy them into its own memory.
pub trait AnswerBudget: Send {
    /// Takes `bytes` from what is left of the cap, or fails with the
    /// memory-limit fault that ends the call (before anything is built).
    fn reserve(&mut self, bytes: usize) -> wasmtime::Result<()>;
}

/// The call under way, as a capability's host side sees it.
pub struct CallScope<'a> {
    /// When the call must end; `None` outside a deadline (never in the
    /// daemon).
    pub deadline: Option<Instant>,
    /// The instance's memory budget for answers.
    pub budget: &'a mut dyn AnswerBudget,
    /// The cluster of the call, and the one it targets.
    pub cluster: &'a mut CallCluster,
}

/// The cluster of the call under way (see [`crate::cluster`]): the
/// notification's, unless the plugin targets another for the rest of the
/// call (the `cluster` import, 0.6.0). `None` is the default cluster.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallCluster {
    /// The notification's cluster.
    event: Option<ClusterName>,
    /// The cluster the plugin targeted, if it did.
    target: Option<Option<ClusterName>>,
}

impl CallCluster {
    /// A call delivering a notification from `cluster`, targeting it.
    pub fn of_event(cluster: Option<ClusterName>) -> Self {
        CallCluster {
            event: cluster,
            target: None,
        }
    }

    /// The notification's cluster.
    pub fn event(&self) -> Option<&ClusterName> {
        self.event.as_ref()
    }

    /// Where the call's look-ups, requests and Events go.
    pub fn target(&self) -> Option<&ClusterName> {
        match &self.target {
            Some(target) => target.as_ref(),
            None => self.event.as_ref(),
        }
    }

    /// Targets `cluster` for the rest of the call (`None`: the default
    /// cluster); the caller has checked the plugin may.
    pub fn retarget(&mut self, cluster: Option<ClusterName>) {
        self.target = Some(cluster);
    }

    /// Back to the notification's cluster.
    pub fn reset(&mut self) {
        self.target = None;
    }
}

impl CallScope<'_> {
    /// How long one request may take from now: [`REQUEST_SHARE`] of what
    /// is left of the call, or `default` without a deadline.
    pub fn request_budget(&self, default: Duration) -> Duration {
        request_budget(self.deadline, default)
    }
}

/// How long one request may take from now within `deadline`: see
/// [`CallScope::request_budget`].
pub fn request_budget(deadline: Option<Instant>, default: Duration) -> Duration {
    deadline.map_or(default, |d| {
        d.saturating_duration_since(Instant::now())
            .mul_f64(REQUEST_SHARE)
    })
}
