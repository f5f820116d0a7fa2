//! Offline admission: feed recorded AdmissionReviews to a plugin and
//! report what the daemon would answer the API server, through the same
//! code that answers it ([`crate::admission::decide`]): the plugin's
//! webhooks route each review, its mutation is checked and turned into a
//! patch, and its failure policy answers a fault. As the API server does,
//! a review its mutating webhook covers is mutated first and the patched
//! object is then validated.

use crate::admission::AdmissionPlugins;
use crate::admission::decide::{Decided, decide};
use crate::admission::metrics::Verdict;
use crate::admission::review::{Review, ReviewError};
use crate::plugin::LoadedPlugin;
use crate::webhook::Decision;
use serde_json::value::RawValue;

/// One review read from a file.
#[derive(Debug, Clone)]
pub struct RecordedReview {
    /// The line it starts on.
    pub line: usize,
    /// The review.
    pub review: Review,
}

/// Why a file of reviews cannot be replayed.
#[derive(Debug, thiserror::Error)]
pub enum ReviewsError {
    /// Not a sequence of JSON values.
    #[error("line {line}: not JSON: {reason}")]
    NotJson {
        /// Where.
        line: usize,
        /// What the parser said.
        reason: String,
    },
    /// A JSON value that is not an AdmissionReview v1 request.
    #[error("line {line}: {error}")]
    NotAReview {
        /// Where it starts.
        line: usize,
        /// Why.
        error: ReviewError,
    },
    /// Nothing in the file.
    #[error("no AdmissionReview in the file")]
    Empty,
}

/// Reads AdmissionReview v1 requests, as the API server posts them: JSON
/// documents one after another, one per line or pretty-printed.
pub fn parse_reviews(text: &str) -> Result<Vec<RecordedReview>, ReviewsError> {
    let line_at = |offset: usize| text[..offset].matches('\n').count() + 1;
    let mut reviews = Vec::new();
    let mut values = serde_json::Deserializer::from_str(text).into_iter::<&RawValue>();
    let mut start = 0;
    while let Some(value) = values.next() {
        let value = value.map_err(|e| ReviewsError::NotJson {
            line: e.line(),
            reason: crate::text::escape_controls(&e.to_string()),
        })?;
        // Where the value begins: after the whitespace that precedes it.
        let begins = start + text[start..].len() - text[start..].trim_start().len();
        start = values.byte_offset();
        let line = line_at(begins);
        let review = Review::parse(value.get().as_bytes())
            .map_err(|error| ReviewsError::NotAReview { line, error })?;
        reviews.push(RecordedReview { line, review });
    }
    if reviews.is_empty() {
        return Err(ReviewsError::Empty);
    }
    Ok(reviews)
}

/// What the daemon would answer one review.
#[derive(Debug, Clone, Default)]
pub struct ReviewOutcome {
    /// The mutating webhook's answer, if it covers the review.
    pub mutated: Option<Decided>,
    /// The validating webhook's answer, if it covers the review (and the
    /// mutation did not refuse it).
    pub validated: Option<Decided>,
}

impl ReviewOutcome {
    /// Neither webhook covers it: the API server would not send it.
    pub fn not_covered(&self) -> bool {
        self.mutated.is_none() && self.validated.is_none()
    }

    /// The refusal, if either answer refused the write.
    pub fn refusal(&self) -> Option<&Decided> {
        [&self.mutated, &self.validated]
            .into_iter()
            .flatten()
            .find(|decided| !decided.response.allowed)
    }

    /// The patch of the mutation, if it changed the object.
    pub fn patch(&self) -> Option<&str> {
        self.mutated.as_ref()?.response.patch.as_deref()
    }

    /// The answer its failure policy gave, if the plugin could not decide
    /// (a fault, a timeout, a refused change).
    pub fn failure(&self) -> Option<&Decided> {
        [&self.mutated, &self.validated]
            .into_iter()
            .flatten()
            .find(|decided| matches!(decided.verdict, Verdict::FailedClosed | Verdict::FailedOpen))
    }

    /// Every warning, the mutation's first.
    pub fn warnings(&self) -> impl Iterator<Item = &str> {
        [&self.mutated, &self.validated]
            .into_iter()
            .flatten()
            .flat_map(|decided| decided.response.warnings.iter().map(String::as_str))
    }
}

/// Replays reviews into one plugin, as the daemon's admission server
/// would answer them.
#[derive(Debug)]
pub struct ReviewReplayer {
    plugins: AdmissionPlugins,
    name: String,
}

impl ReviewReplayer {
    /// Prepares a replay into `plugin`; `None` when it admits nothing.
    pub fn new(plugin: &LoadedPlugin) -> Option<Self> {
        plugin.manifest().admission.as_ref()?;
        let plugins = AdmissionPlugins::new();
        plugins.install(plugin);
        Some(ReviewReplayer {
            plugins,
            name: plugin.name().to_owned(),
        })
    }

    /// Answers `review` as the API server would have it answered: mutated
    /// first if the mutating webhook covers it, then the result validated
    /// if the validating webhook covers it, each within its webhook's
    /// timeout.
    pub async fn replay(&self, review: &Review) -> ReviewOutcome {
        let mut outcome = ReviewOutcome::default();
        let mut review = review.clone();
        if self.covers(Decision::Mutate, &review) {
            let decided = self.decide(Decision::Mutate, &review).await;
            if let Some(patched) = decided
                .response
                .patch
                .as_deref()
                .and_then(|patch| patched_object(review.call.object.as_deref()?, patch))
            {
                review.call.object = Some(patched);
            }
            let refused = !decided.response.allowed;
            outcome.mutated = Some(decided);
            if refused {
                return outcome;
            }
        }
        if self.covers(Decision::Validate, &review) {
            outcome.validated = Some(self.decide(Decision::Validate, &review).await);
        }
        outcome
    }

    fn covers(&self, decision: Decision, review: &Review) -> bool {
        match self.plugins.find(&self.name) {
            crate::admission::plugins::Found::Admitting(admitting) => {
                admitting.webhooks.get(decision).is_some_and(|webhook| {
                    webhook.covers(&review.kind, review.subresource(), review.operation)
                        && webhook.selects(
                            review.call.object.as_deref(),
                            review.call.old_object.as_deref(),
                        )
                })
            }
            _ => false,
        }
    }

    async fn decide(&self, decision: Decision, review: &Review) -> Decided {
        decide(&self.plugins, &self.name, decision, review, None)
            .await
            .unwrap_or_else(|not_here| unreachable!("{} was installed: {not_here}", self.name))
    }
}

/// `object` with the host-checked `patch` applied (it applied once
/// already, when the host computed it).
fn patched_object(object: &str, patch: &str) -> Option<String> {
    let mut object: serde_json::Value = serde_json::from_str(object).ok()?;
    let patch: json_patch::Patch = serde_json::from_str(patch).ok()?;
    json_patch::patch(&mut object, &patch).ok()?;
    Some(object.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn review(uid: &str, operation: &str) -> String {
        let object = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","namespace":"n"}}"#;
        format!(
            r#"{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{{"uid":"{uid}","kind":{{"group":"","version":"v1","kind":"Pod"}},"resource":{{"group":"","version":"v1","resource":"pods"}},"name":"a","namespace":"n","operation":"{operation}","userInfo":{{"username":"u"}},"object":{object},"oldObject":{object}}}}}"#
        )
    }

    #[test]
    fn reviews_are_read_one_per_line_or_pretty_printed_with_their_lines() {
        let pretty = serde_json::to_string_pretty(
            &serde_json::from_str::<serde_json::Value>(&review("3", "DELETE")).unwrap(),
        )
        .unwrap();
        let text = format!(
            "{}\n\n{}\n{pretty}\n",
            review("1", "CREATE"),
            review("2", "UPDATE")
        );
        let reviews = parse_reviews(&text).unwrap();
        let read: Vec<(usize, &str)> = reviews
            .iter()
            .map(|r| (r.line, r.review.call.uid.as_str()))
            .collect();
        assert_eq!(read, [(1, "1"), (3, "2"), (4, "3")]);
    }

    #[test]
    fn a_file_that_is_not_reviews_names_the_line_and_the_fault() {
        let bad = format!(
            "{}\n{{\"apiVersion\":\"v1\",\"kind\":\"Pod\"}}\n",
            review("1", "CREATE")
        );
        let err = parse_reviews(&bad).unwrap_err().to_string();
        assert!(err.starts_with("line 2: "), "{err}");
        assert!(err.contains("AdmissionReview"), "{err}");
        let err = parse_reviews("{\"apiVersion\": \n")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("line 2: not JSON"), "{err}");
        let err = parse_reviews(&review("1", "PATCH"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("operation"), "{err}");
        assert!(matches!(parse_reviews(" \n"), Err(ReviewsError::Empty)));
    }
}
