//! What admission exports at `/metrics`: reviews answered, by plugin,
//! decision, operation and verdict, and how long the plugin took
//! (documented in docs/metrics.md).

use super::findings::Findings;
use crate::telemetry::{Labels, family, handler_histogram};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::histogram::Histogram;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How a review was answered: the `verdict` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    /// Allowed, unchanged.
    Allowed,
    /// Allowed with a patch.
    Mutated,
    /// Refused by the plugin.
    Denied,
    /// The plugin would have refused, in audit mode: allowed with a warning.
    WouldDeny,
    /// The plugin could not decide and its failure policy refused the write.
    FailedClosed,
    /// The plugin could not decide and its failure policy let it through.
    FailedOpen,
}

impl Verdict {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Allowed => "allowed",
            Verdict::Mutated => "mutated",
            Verdict::Denied => "denied",
            Verdict::WouldDeny => "would-deny",
            Verdict::FailedClosed => "failed-closed",
            Verdict::FailedOpen => "failed-open",
        }
    }
}

/// One series of reviews: plugin, decision, operation, verdict.
type ReviewSeries = (String, &'static str, &'static str, Verdict);

/// Counts and durations of the reviews each plugin answered, and what its
/// scans of existing objects found.
#[derive(Debug, Default)]
pub struct AdmissionStats {
    reviews: Mutex<BTreeMap<ReviewSeries, u64>>,
    durations: Mutex<BTreeMap<(String, &'static str), Histogram>>,
    requests: Mutex<BTreeMap<(String, &'static str), Histogram>>,
    findings: Mutex<BTreeMap<String, Arc<Findings>>>,
}

impl AdmissionStats {
    /// Records one review of `plugin` (`decision` `validate` or `mutate`,
    /// `operation` as AdmissionReview spells it) answered with `verdict`,
    /// the plugin having taken `took` (`None` when it was not called).
    pub fn record(
        &self,
        plugin: &str,
        decision: &'static str,
        operation: &'static str,
        verdict: Verdict,
        took: Option<Duration>,
    ) {
        *lock(&self.reviews)
            .entry((plugin.to_owned(), decision, operation, verdict))
            .or_default() += 1;
        if let Some(took) = took {
            lock(&self.durations)
                .entry((plugin.to_owned(), decision))
                .or_insert_with(handler_histogram)
                .observe(took.as_secs_f64());
        }
    }

    /// Records how long Herald's webhook server took over one review
    /// `plugin` answered: from the request's headers to its answer built
    /// (the body read, the review parsed, the call, the answer written).
    /// Only for a plugin that answered, so that a path naming no plugin
    /// adds no series.
    pub fn record_request(&self, plugin: &str, decision: &'static str, took: Duration) {
        lock(&self.requests)
            .entry((plugin.to_owned(), decision))
            .or_insert_with(handler_histogram)
            .observe(took.as_secs_f64());
    }

    /// The findings of `plugin`'s scans from now on: fresh ones, replacing
    /// an earlier version's (a new version judges everything again).
    pub fn fresh_findings(&self, plugin: &str) -> Arc<Findings> {
        let findings = Arc::new(Findings::default());
        lock(&self.findings).insert(plugin.to_owned(), findings.clone());
        findings
    }

    /// What `plugin`'s scans found, if it is scanning.
    pub fn findings(&self, plugin: &str) -> Option<Arc<Findings>> {
        lock(&self.findings).get(plugin).cloned()
    }

    /// Drops `plugin`'s findings if they are still `findings` (a newer
    /// version's are kept): its scan stopped.
    pub fn forget_findings(&self, plugin: &str, findings: &Arc<Findings>) {
        let mut all = lock(&self.findings);
        if all.get(plugin).is_some_and(|f| Arc::ptr_eq(f, findings)) {
            all.remove(plugin);
        }
    }

    /// Reviews of `plugin` answered with `verdict`, all decisions and
    /// operations.
    pub fn count(&self, plugin: &str, verdict: Verdict) -> u64 {
        lock(&self.reviews)
            .iter()
            .filter(|((p, _, _, v), _)| p == plugin && *v == verdict)
            .map(|(_, n)| n)
            .sum()
    }
}

/// Writes the family `name` of one histogram per plugin and decision.
fn histograms(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    series: &Mutex<BTreeMap<(String, &'static str), Histogram>>,
) -> Result<(), std::fmt::Error> {
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Histogram)?;
    for ((plugin, decision), histogram) in lock(series).iter() {
        let labels = [("plugin", plugin.as_str()), ("decision", *decision)];
        histogram.encode(family.encode_family(&labels)?)?;
    }
    Ok(())
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Exports [`AdmissionStats`].
#[derive(Debug)]
pub struct AdmissionCollector(pub Arc<AdmissionStats>);

impl Collector for AdmissionCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let rows: Vec<(Labels, f64)> = lock(&self.0.reviews)
            .iter()
            .map(|((plugin, decision, operation, verdict), n)| {
                let labels = vec![
                    ("plugin", plugin.clone()),
                    ("decision", (*decision).to_owned()),
                    ("operation", (*operation).to_owned()),
                    ("verdict", verdict.as_str().to_owned()),
                ];
                (labels, *n as f64)
            })
            .collect();
        family(
            &mut encoder,
            "herald_admission_reviews",
            "AdmissionReviews answered, by plugin, decision (validate, mutate), operation and verdict (allowed, mutated, denied, would-deny, failed-closed, failed-open).",
            MetricType::Counter,
            &rows,
        )?;
        histograms(
            &mut encoder,
            "herald_admission_duration_seconds",
            "Duration of plugins' admission calls.",
            &self.0.durations,
        )?;
        histograms(
            &mut encoder,
            "herald_admission_request_duration_seconds",
            "Time Herald's webhook server took over reviews a plugin answered, from the request's headers to the answer (the plugin's call included).",
            &self.0.requests,
        )?;
        let findings: Vec<(String, Arc<Findings>)> = lock(&self.0.findings)
            .iter()
            .map(|(plugin, findings)| (plugin.clone(), findings.clone()))
            .collect();
        let failing: Vec<(Labels, f64)> = findings
            .iter()
            .map(|(plugin, f)| (vec![("plugin", plugin.clone())], f.count() as f64))
            .collect();
        family(
            &mut encoder,
            "herald_admission_violations",
            "Existing objects that fail their plugin's validation now (its scan of the objects it subscribes to).",
            MetricType::Gauge,
            &failing,
        )?;
        let judged: Vec<(Labels, f64)> = findings
            .iter()
            .flat_map(|(plugin, f)| {
                let (passed, failed, undecided) = f.judgements();
                [
                    ("passed", passed),
                    ("failed", failed),
                    ("undecided", undecided),
                ]
                .map(|(result, n)| {
                    (
                        vec![("plugin", plugin.clone()), ("result", result.to_owned())],
                        n as f64,
                    )
                })
            })
            .collect();
        family(
            &mut encoder,
            "herald_admission_scanned",
            "Existing objects judged by their plugin's validate, by result (passed, failed, undecided).",
            MetricType::Counter,
            &judged,
        )
    }
}
