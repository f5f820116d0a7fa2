//! Judging what already exists: a plugin that validates a kind it also
//! subscribes to has the same `validate` run over the objects of that kind
//! in its informers' caches: every object when it starts dispatching (or a
//! new version is swapped in: it joins the informers with a snapshot), and
//! each object again when it changes. A scan listens to the informers as
//! the plugin's own listeners do (no watch of its own) and calls the
//! plugin's admission instances, one object at a time, so it holds at most
//! one of them and a review from the API server waits behind at most one
//! scan call.
//!
//! The objects that fail are the plugin's [`Findings`]. A plugin granted
//! Events also gets a `Warning` Event, reason [`VIOLATION_REASON`], on each
//! object when it starts failing (or fails for another reason), through
//! its own Events access: its grant, flood limit, mode and audit apply.

use super::decide::passed_on;
use super::findings::{Findings, Judged};
use super::metrics::AdmissionStats;
use super::plugins::Admitting;
use crate::capability::events::{EventRecord, ObjectRef};
use crate::gvk::Gvk;
use crate::informer::{Listen, Notification, SharedInformer};
use crate::plugin::AdmissionCall;
use crate::selector::LabelSelector;
use crate::store::CachedObject;
use crate::webhook::Operation;
use crate::wit::v0_2::herald::plugin::types::GroupVersionKind;
use crate::wit::v0_5::exports::herald::plugin0_5_0::admission as abi;
use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Who a scan's reviews say asked: no user did.
pub const SCAN_USER: &str = "system:herald:scan";

/// The reason of the Event on an existing object that fails validation
/// (the one Kyverno's background scan uses, so existing alerts match).
pub const VIOLATION_REASON: &str = "PolicyViolation";

/// One kind of object a scan judges: a subscription's informer.
pub struct ScanTarget {
    /// The informer whose cache holds the objects.
    pub informer: Arc<SharedInformer>,
    /// Their kind.
    pub kind: Gvk,
    /// Their resource (plural), as a review names it.
    pub resource: String,
    /// Their cluster; `None` for the default one.
    pub cluster: Option<crate::cluster::ClusterName>,
}

/// A running scan of one plugin version: its listeners on the informers
/// and the task judging what they report.
pub struct Scan {
    listeners: Vec<(Arc<SharedInformer>, Arc<ScanListener>)>,
    queue: Arc<Queue>,
    plugin: String,
    findings: Arc<Findings>,
    stats: Arc<AdmissionStats>,
}

impl std::fmt::Debug for Scan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scan")
            .field("targets", &self.listeners.len())
            .finish_non_exhaustive()
    }
}

impl Scan {
    /// Starts judging those of `targets` that `admitting` validates, with
    /// its validate, into fresh findings in `stats`: joins each informer
    /// (its snapshot is the first scan), then judges each change. `None`
    /// when it validates none of them.
    pub fn start(
        admitting: Arc<Admitting>,
        targets: Vec<ScanTarget>,
        stats: &Arc<AdmissionStats>,
    ) -> Option<Scan> {
        let webhook = admitting.webhooks.validating.as_ref()?;
        let targets: Vec<ScanTarget> = targets
            .into_iter()
            .filter(|t| {
                webhook.covers(&t.kind, None, Operation::Create)
                    || webhook.covers(&t.kind, None, Operation::Update)
            })
            .collect();
        if targets.is_empty() {
            return None;
        }
        let selector = webhook
            .object_selector
            .as_deref()
            .and_then(|s| LabelSelector::parse(s).ok());
        let timeout = webhook.timeout;
        let plugin = admitting.plugin.name().to_owned();
        let findings = stats.fresh_findings(&plugin);
        let queue = Arc::new(Queue::default());
        let listeners: Vec<(Arc<SharedInformer>, Arc<ScanListener>)> = targets
            .iter()
            .enumerate()
            .map(|(target, t)| {
                let listener = Arc::new(ScanListener {
                    target,
                    queue: queue.clone(),
                });
                (t.informer.clone(), listener)
            })
            .collect();
        let judge = Judge {
            admitting: admitting.clone(),
            targets,
            selector,
            timeout,
            findings: findings.clone(),
        };
        // Detached: it ends on its own once stopped (after the call in
        // flight, never by dropping one mid-call).
        drop(
            admitting
                .plugin
                .engine()
                .pool()
                .spawn(judge.run(queue.clone())),
        );
        for (informer, listener) in &listeners {
            informer.add_listener(listener.clone());
        }
        Some(Scan {
            listeners,
            queue,
            plugin,
            findings,
            stats: stats.clone(),
        })
    }

    /// Stops: leaves the informers, tells the task to end once its call in
    /// flight (if any) returns, and drops the findings unless a newer
    /// version's replaced them.
    pub fn stop(&self) {
        for (informer, listener) in &self.listeners {
            informer.remove_listener(listener);
        }
        self.queue.stop();
        self.stats.forget_findings(&self.plugin, &self.findings);
    }
}

/// An object to judge: its target's index and its key.
type Pending = (usize, String);

/// The objects waiting to be judged, each once, in the order they changed.
#[derive(Default)]
struct Queue {
    pending: Mutex<Waiting>,
    wake: tokio::sync::Notify,
    stopped: std::sync::atomic::AtomicBool,
}

#[derive(Default)]
struct Waiting {
    order: VecDeque<Pending>,
    queued: HashSet<Pending>,
}

impl Queue {
    fn add(&self, target: usize, key: String) {
        let mut waiting = lock(&self.pending);
        if waiting.queued.insert((target, key.clone())) {
            waiting.order.push_back((target, key));
        }
        drop(waiting);
        self.wake.notify_one();
    }

    /// Ends the task at its next look.
    fn stop(&self) {
        self.stopped
            .store(true, std::sync::atomic::Ordering::Release);
        self.wake.notify_one();
    }

    fn is_stopped(&self) -> bool {
        self.stopped.load(std::sync::atomic::Ordering::Acquire)
    }

    fn take(&self) -> Option<Pending> {
        let mut waiting = lock(&self.pending);
        let next = waiting.order.pop_front()?;
        waiting.queued.remove(&next);
        Some(next)
    }
}

/// A scan's listener on one informer: notes which objects changed.
struct ScanListener {
    target: usize,
    queue: Arc<Queue>,
}

impl Listen for ScanListener {
    fn push(&self, notification: Notification) {
        self.queue.add(self.target, notification.object().key());
    }

    fn push_batch(&self, notifications: Vec<Notification>) {
        for notification in notifications {
            self.push(notification);
        }
    }

    fn push_synced(&self) {}

    fn resync_period(&self) -> Option<Duration> {
        None
    }
}

/// The task of a scan.
struct Judge {
    admitting: Arc<Admitting>,
    targets: Vec<ScanTarget>,
    selector: Option<LabelSelector>,
    timeout: Duration,
    findings: Arc<Findings>,
}

impl Judge {
    async fn run(self, queue: Arc<Queue>) {
        while !queue.is_stopped() {
            let Some((target, key)) = queue.take() else {
                queue.wake.notified().await;
                continue;
            };
            let target = &self.targets[target];
            let Some(object) = target.informer.store().get_by_key(&key) else {
                self.findings.forget(&target.kind, &key);
                continue;
            };
            if self
                .selector
                .as_ref()
                .is_some_and(|s| !s.matches_with(|label| object.label(label)))
            {
                self.findings.forget(&target.kind, &key);
                continue;
            }
            let judged = self.judge(target, &object).await;
            let started_failing =
                self.findings
                    .record(self.admitting.plugin.name(), &target.kind, &object, judged);
            if let Some(violation) = started_failing {
                self.report(target, &object, &violation.message).await;
            }
        }
    }

    /// Records a `Warning` Event on `object`, failing with `message`, if
    /// the plugin may record Events. An Event refused (its grant does not
    /// reach the namespace) or dropped (the flood limit) is counted by the
    /// Events access as any of the plugin's own; the violation is reported
    /// all the same.
    async fn report(&self, target: &ScanTarget, object: &CachedObject, message: &str) {
        let events = &self.admitting.plugin.context().events;
        if !events.is_granted() {
            return;
        }
        let event = EventRecord {
            regarding: ObjectRef {
                gvk: target.kind.clone(),
                namespace: object.namespace().map(str::to_owned),
                name: object.name().to_owned(),
                uid: Some(object.uid().to_owned()),
                resource_version: Some(object.resource_version().to_owned()),
            },
            related: None,
            event_type: "Warning",
            cluster: target.cluster.clone(),
            reason: VIOLATION_REASON.to_owned(),
            action: "Scan".to_owned(),
            note: format!(
                "fails the validation of plugin {}: {message}",
                self.admitting.plugin.name()
            ),
        };
        let deadline = std::time::Instant::now() + self.timeout;
        let _ = events.publish(event, Some(deadline)).await;
    }

    /// Asks the plugin's validate about `object`, as if it were created
    /// now by no one, as a dry run.
    async fn judge(&self, target: &ScanTarget, object: &CachedObject) -> Judged {
        let review = abi::Review {
            uid: format!("herald-scan-{}", object.uid()),
            kind: GroupVersionKind {
                group: target.kind.group.clone(),
                version: target.kind.version.clone(),
                kind: target.kind.kind.clone(),
            },
            resource: target.resource.clone(),
            subresource: String::new(),
            name: object.name().to_owned(),
            namespace: object.namespace().unwrap_or_default().to_owned(),
            operation: Operation::Create.to_abi(),
            user_info: abi::UserInfo {
                username: SCAN_USER.to_owned(),
                uid: String::new(),
                groups: Vec::new(),
                extra: Vec::new(),
            },
            object: Some(object.json().to_owned()),
            old_object: None,
            dry_run: true,
            options: None,
        };
        let mut lease = self.admitting.instances.lease().await;
        match lease
            .instance()
            .admit(AdmissionCall::Validate(&review), self.timeout)
            .await
        {
            Ok(answer) if answer.verdict.allowed => Judged::Passes,
            Ok(answer) => Judged::Fails(passed_on(&answer.verdict.message)),
            Err(error) => Judged::Undecided(error.to_string()),
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
