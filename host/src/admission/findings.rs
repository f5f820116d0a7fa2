//! What a plugin's scan of existing objects found ([`super::scan`]): the
//! objects that fail its validation now, kept per plugin in
//! [`super::metrics::AdmissionStats`], counted
//! (`herald_admission_violations`), audited when an object starts or stops
//! failing (`action=scan`), listed in `/plugins` and on the dashboard; the
//! scan also records an Event on an object that starts failing, when the
//! plugin is granted Events.

use crate::capability::audit::AUDIT_TARGET;
use crate::gvk::Gvk;
use crate::store::CachedObject;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// One object that fails its plugin's validation now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Violation {
    /// Its `apiVersion`.
    pub api_version: String,
    /// Its kind.
    pub kind: String,
    /// Its namespace (`None`: cluster-scoped).
    pub namespace: Option<String>,
    /// Its name.
    pub name: String,
    /// The plugin's message, escaped and cut as in an answer.
    pub message: String,
}

/// The most failing objects a report lists.
pub const REPORTED: usize = 100;

/// What a plugin's scan found, as `/plugins` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScanReport {
    /// Objects failing now.
    pub failing: usize,
    /// The first of them ([`REPORTED`] at most), by kind, namespace and name.
    pub violations: Vec<Violation>,
    /// Judgements that passed, since the scan started.
    pub passed: u64,
    /// Judgements that failed.
    pub failed: u64,
    /// Judgements the plugin could not make (a fault, a timeout).
    pub undecided: u64,
}

/// What a plugin's scans found: the objects failing now, and counts of
/// every judgement.
#[derive(Debug, Default)]
pub struct Findings {
    failing: Mutex<BTreeMap<(String, String), Violation>>,
    passed: AtomicU64,
    failed: AtomicU64,
    errors: AtomicU64,
}

/// How one object was judged.
pub(super) enum Judged {
    Passes,
    Fails(String),
    /// The plugin could not decide (the cause).
    Undecided(String),
}

impl Findings {
    /// How many objects fail now.
    pub fn count(&self) -> usize {
        lock(&self.failing).len()
    }

    /// The report of what was found.
    pub fn report(&self) -> ScanReport {
        let (passed, failed, undecided) = self.judgements();
        let failing = lock(&self.failing);
        ScanReport {
            failing: failing.len(),
            violations: failing.values().take(REPORTED).cloned().collect(),
            passed,
            failed,
            undecided,
        }
    }

    /// Judgements so far: passed, failed, undecided.
    pub fn judgements(&self) -> (u64, u64, u64) {
        (
            self.passed.load(Ordering::Relaxed),
            self.failed.load(Ordering::Relaxed),
            self.errors.load(Ordering::Relaxed),
        )
    }

    /// Records how `object` of `kind` was judged and audits a change; the
    /// violation when the object starts failing (or fails with another
    /// message than before).
    pub(super) fn record(
        &self,
        plugin: &str,
        kind: &Gvk,
        object: &CachedObject,
        judged: Judged,
    ) -> Option<Violation> {
        let id = (kind.to_string(), object.key());
        match judged {
            Judged::Passes => {
                self.passed.fetch_add(1, Ordering::Relaxed);
                if lock(&self.failing).remove(&id).is_some() {
                    audit(plugin, kind, object, "passes", "");
                }
                None
            }
            Judged::Fails(message) => {
                self.failed.fetch_add(1, Ordering::Relaxed);
                let violation = Violation {
                    api_version: kind.api_version(),
                    kind: kind.kind.clone(),
                    namespace: object.namespace().map(str::to_owned),
                    name: object.name().to_owned(),
                    message,
                };
                let mut failing = lock(&self.failing);
                if failing.get(&id) == Some(&violation) {
                    return None;
                }
                audit(plugin, kind, object, "fails", &violation.message);
                failing.insert(id, violation.clone());
                Some(violation)
            }
            Judged::Undecided(cause) => {
                // A plugin that cannot decide may do so for every object:
                // the 1st, 2nd, 4th, 8th… such judgement is audited.
                let so_far = self.errors.fetch_add(1, Ordering::Relaxed) + 1;
                if so_far.is_power_of_two() {
                    let detail = format!("{cause} ({so_far} undecided so far)");
                    audit(plugin, kind, object, "undecided", &detail);
                }
                None
            }
        }
    }

    /// Forgets `key` of `kind`: the object is gone.
    pub(super) fn forget(&self, kind: &Gvk, key: &str) {
        lock(&self.failing).remove(&(kind.to_string(), key.to_owned()));
    }
}

/// One audit line when an object starts or stops failing, or could not be
/// judged.
fn audit(plugin: &str, kind: &Gvk, object: &CachedObject, verdict: &str, detail: &str) {
    tracing::info!(
        target: AUDIT_TARGET,
        plugin,
        action = "scan",
        kind = %kind,
        namespace = %crate::text::escape_controls(object.namespace().unwrap_or_default()),
        name = %crate::text::escape_controls(object.name()),
        verdict,
        detail = %crate::text::escape_controls(detail),
        "existing object judged"
    );
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
