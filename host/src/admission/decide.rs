//! One review answered: read, routed to its plugin's version, decided
//! within the time the API server gives, and turned into the answer the
//! plugin's mode and failure policy call for. Counted and audited.

use super::change::patch_of;
use super::metrics::Verdict;
use super::plugins::{AdmissionPlugins, Admitting, Found};
use super::review::{Response, Review};
use crate::capability::audit::AUDIT_TARGET;
use crate::plugin::AdmissionCall;
use crate::webhook::{Decision, FailurePolicy};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The longest refusal message or warning passed on from a plugin.
pub const MAX_MESSAGE_BYTES: usize = 1024;
/// The most warnings passed on from one answer.
pub const MAX_WARNINGS: usize = 16;
/// What Herald keeps of the API server's timeout to answer in: a plugin
/// that has not decided by then is answered by its failure policy before
/// the API server gives up on Herald.
pub const ANSWER_MARGIN: Duration = Duration::from_millis(250);

/// An HTTP answer to a review request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answered {
    /// The HTTP status: 200 with an AdmissionReview, 400 or 404 with a
    /// line of text.
    pub status: u16,
    /// The body.
    pub body: Vec<u8>,
}

impl Answered {
    fn text(status: u16, message: impl std::fmt::Display) -> Self {
        Answered {
            status,
            body: format!("{message}\n").into_bytes(),
        }
    }
}

/// A review decided: the answer, and the verdict it is counted and
/// audited under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decided {
    /// What the API server is told.
    pub response: Response,
    /// How it was decided.
    pub verdict: Verdict,
}

/// Answers the review in `body`, sent to `plugin`'s `decision` path, which
/// the API server gives `timeout` (its `?timeout=` query; `None`: the
/// webhook's declared timeout).
pub async fn answer(
    plugins: &AdmissionPlugins,
    plugin: &str,
    decision: Decision,
    body: &[u8],
    timeout: Option<Duration>,
) -> Answered {
    let review = match Review::parse(body) {
        Ok(review) => review,
        Err(error) => return Answered::text(400, error),
    };
    match decide(plugins, plugin, decision, &review, timeout).await {
        Ok(decided) => reviewed(&review, &decided.response),
        Err(not_here) => Answered::text(404, not_here),
    }
}

/// Why a review's path has no one to decide it (answered 404); each
/// variant names the plugin.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotHere {
    /// No plugin of that name admits.
    #[error("no plugin {0:?} admits here")]
    Unknown(String),
    /// The plugin admits, but declares no webhook of that decision.
    #[error(
        "plugin {plugin:?} declares no {} webhook",
        match decision { Decision::Validate => "validating", Decision::Mutate => "mutating" }
    )]
    NoWebhook {
        /// The plugin.
        plugin: String,
        /// The decision asked for.
        decision: Decision,
    },
    /// The plugin is gone and had no webhook of that decision.
    #[error("plugin {0:?} is gone and had no such webhook")]
    Gone(String),
}

/// Why a plugin could not decide a review: the cause its failure policy
/// applies to, as the answer states it.
#[derive(Debug, thiserror::Error)]
enum CallFailure {
    /// Earlier reviews held every instance until the budget ran out.
    #[error("it was still deciding earlier reviews when this one's {} ms ran out", .0.as_millis())]
    Busy(Duration),
    /// The call failed (trap, deadline, the plugin's own error).
    #[error("{0}")]
    Call(#[from] crate::plugin::CallError),
    /// The task running the call did not finish.
    #[error("the admission call did not finish: {0}")]
    Unfinished(#[from] tokio::task::JoinError),
}

/// Decides `review` for `plugin`'s `decision` within `timeout` (as in
/// [`answer`]), counted and audited. The error says why the path has no
/// one to decide: no such plugin, or no such webhook.
pub async fn decide(
    plugins: &AdmissionPlugins,
    plugin: &str,
    decision: Decision,
    review: &Review,
    timeout: Option<Duration>,
) -> Result<Decided, NotHere> {
    let admitting = match plugins.find(plugin) {
        Found::Admitting(admitting) => admitting,
        Found::Gone(gone) => {
            return gone_answer(plugins, plugin, decision, review, gone.policy(decision));
        }
        Found::Unknown => return Err(NotHere::Unknown(plugin.to_owned())),
    };
    let Some(webhook) = admitting.webhooks.get(decision) else {
        return Err(NotHere::NoWebhook {
            plugin: plugin.to_owned(),
            decision,
        });
    };
    let operation = review.operation.as_str();
    let record = |response: Response, verdict: Verdict, took: Option<Duration>, detail: &str| {
        plugins
            .stats()
            .record(plugin, decision.as_str(), operation, verdict, took);
        audit(plugin, decision, review, verdict, took, detail);
        Ok(Decided { response, verdict })
    };
    if !webhook.covers(&review.kind, review.subresource(), review.operation) {
        let cause = format!(
            "it does not admit {operation} of {}{} (the webhook configuration sends more than the plugin declares)",
            review.kind,
            review
                .subresource()
                .map(|s| format!(" subresource {s}"))
                .unwrap_or_default()
        );
        let (response, verdict) = by_policy(plugin, webhook.failure_policy, &cause);
        return record(response, verdict, None, &cause);
    }
    let budget = timeout
        .unwrap_or(webhook.timeout)
        .min(webhook.timeout)
        .saturating_sub(ANSWER_MARGIN)
        .max(Duration::from_millis(1));
    let started = Instant::now();
    let outcome = call(&admitting, decision, review, budget).await;
    let took = Some(started.elapsed());
    let (response, verdict, detail) = match outcome {
        Ok(answer) => decided(&admitting, review, answer),
        Err(failure) => {
            let cause = failure.to_string();
            let (response, verdict) = by_policy(plugin, webhook.failure_policy, &cause);
            (response, verdict, cause)
        }
    };
    record(response, verdict, took, &detail)
}

/// Runs the admission call on the plugins' worker pool, in one of the
/// version's instances. `budget` counts from now, the wait for a free
/// instance included: a review queued behind slow ones is answered in time
/// all the same. The error is the cause, as the answer states it.
async fn call(
    admitting: &Arc<Admitting>,
    decision: Decision,
    review: &Review,
    budget: Duration,
) -> Result<crate::plugin::AdmissionAnswer, CallFailure> {
    let ends = Instant::now() + budget;
    let pool = admitting.plugin.engine().pool().clone();
    let admitting = admitting.clone();
    let request = review.call.clone();
    let task = pool.spawn(async move {
        let Ok(mut lease) = tokio::time::timeout_at(ends.into(), admitting.instances.lease()).await
        else {
            return Err(CallFailure::Busy(budget));
        };
        let call = match decision {
            Decision::Validate => AdmissionCall::Validate(&request),
            Decision::Mutate => AdmissionCall::Mutate(&request),
        };
        let left = ends.saturating_duration_since(Instant::now());
        Ok(lease.instance().admit(call, left).await?)
    });
    task.await?
}

/// The answer for what the plugin decided, in its mode.
fn decided(
    admitting: &Admitting,
    review: &Review,
    answer: crate::plugin::AdmissionAnswer,
) -> (Response, Verdict, String) {
    let plugin = admitting.plugin.name();
    let verdict = answer.verdict;
    let mut warnings: Vec<String> = verdict
        .warnings
        .iter()
        .take(MAX_WARNINGS)
        .map(|w| passed_on(w))
        .collect();
    if !verdict.allowed {
        let message = passed_on(&verdict.message);
        let code = verdict
            .code
            .filter(|c| (400..=599).contains(c))
            .unwrap_or(403);
        if admitting.audit {
            warnings.push(format!(
                "herald audit: plugin {plugin} would deny: {message}"
            ));
            let response = Response {
                allowed: true,
                warnings,
                ..Response::default()
            };
            return (response, Verdict::WouldDeny, message);
        }
        let response = Response {
            allowed: false,
            code,
            message,
            warnings,
            patch: None,
        };
        let detail = response.message.clone();
        return (response, Verdict::Denied, detail);
    }
    let patch = match patch_of(answer.change, review.object(), review.operation.as_str()) {
        Ok(patch) => patch,
        Err(refused) => {
            let cause = refused.to_string();
            let policy = admitting
                .webhooks
                .mutating
                .as_ref()
                .map_or(FailurePolicy::Fail, |w| w.failure_policy);
            let (response, verdict) = by_policy(plugin, policy, &cause);
            return (response, verdict, cause);
        }
    };
    match patch {
        Some(patch) if admitting.audit => {
            warnings.push(format!(
                "herald audit: plugin {plugin} would change the object: {}",
                passed_on(&patch)
            ));
            let response = Response {
                allowed: true,
                warnings,
                ..Response::default()
            };
            (response, Verdict::Allowed, String::new())
        }
        Some(patch) => {
            let response = Response {
                allowed: true,
                warnings,
                patch: Some(patch),
                ..Response::default()
            };
            (response, Verdict::Mutated, String::new())
        }
        None => {
            let response = Response {
                allowed: true,
                warnings,
                ..Response::default()
            };
            (response, Verdict::Allowed, String::new())
        }
    }
}

/// The answer of a plugin that could not decide because of `cause`, by its
/// failure policy: refused with 500, or let through with a warning; both
/// say why.
fn by_policy(plugin: &str, policy: FailurePolicy, cause: &str) -> (Response, Verdict) {
    match policy {
        FailurePolicy::Fail => (
            Response {
                allowed: false,
                code: 500,
                message: format!(
                    "herald: plugin {plugin} could not decide, and its failure policy is Fail: {cause}"
                ),
                ..Response::default()
            },
            Verdict::FailedClosed,
        ),
        FailurePolicy::Ignore => (
            Response {
                allowed: true,
                warnings: vec![format!(
                    "herald: plugin {plugin} could not decide, and its failure policy Ignore let the write through: {cause}"
                )],
                ..Response::default()
            },
            Verdict::FailedOpen,
        ),
    }
}

/// The answer for a review sent to a plugin that is gone.
fn gone_answer(
    plugins: &AdmissionPlugins,
    plugin: &str,
    decision: Decision,
    review: &Review,
    policy: Option<FailurePolicy>,
) -> Result<Decided, NotHere> {
    let Some(policy) = policy else {
        return Err(NotHere::Gone(plugin.to_owned()));
    };
    let cause = "the plugin is no longer loaded (its file was removed, it was disabled, or it no longer admits)";
    let (response, verdict) = by_policy(plugin, policy, cause);
    plugins.stats().record(
        plugin,
        decision.as_str(),
        review.operation.as_str(),
        verdict,
        None,
    );
    audit(plugin, decision, review, verdict, None, cause);
    Ok(Decided { response, verdict })
}

fn reviewed(review: &Review, response: &Response) -> Answered {
    Answered {
        status: 200,
        body: response.to_json(&review.call.uid),
    }
}

/// A plugin's text as it reaches the user: control characters escaped,
/// cut to [`MAX_MESSAGE_BYTES`] on a character boundary.
pub(super) fn passed_on(text: &str) -> String {
    let escaped = crate::text::escape_controls(text);
    if escaped.len() <= MAX_MESSAGE_BYTES {
        return escaped;
    }
    let mut end = MAX_MESSAGE_BYTES;
    while !escaped.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &escaped[..end])
}

/// One audit line per review answered.
fn audit(
    plugin: &str,
    decision: Decision,
    review: &Review,
    verdict: Verdict,
    took: Option<Duration>,
    detail: &str,
) {
    tracing::info!(
        target: AUDIT_TARGET,
        plugin,
        action = "admission",
        decision = decision.as_str(),
        operation = review.operation.as_str(),
        kind = %review.kind,
        namespace = %crate::text::escape_controls(&review.call.namespace),
        name = %crate::text::escape_controls(&review.call.name),
        uid = %crate::text::escape_controls(&review.call.uid),
        dry_run = review.call.dry_run,
        verdict = verdict.as_str(),
        latency_ms = crate::capability::audit::millis(took),
        detail = %crate::text::escape_controls(detail),
        "admission review answered"
    );
}
