//! One crash-loop alert: the webhook message, the Warning Event, and how
//! far its delivery got.

use herald_sdk::events::Event as KubeEvent;
use herald_sdk::http;
use herald_sdk::k8s_openapi::api::core::v1::Pod;
use herald_sdk::serde_json::{Value, json};
use herald_sdk::{Error, metrics};
use std::time::Duration;

use crate::crashes::Crashes;
use crate::settings::Settings;
use crate::{ALERTS, EVENT_REASON, Status, WEBHOOK_FAILURES};

/// An alert found and not delivered yet. Each part is done once: a retry
/// repeats only what failed.
pub struct Alert {
    /// The Pod's key, `namespace/name`.
    key: String,
    namespace: String,
    container: String,
    /// What is POSTed to the webhook.
    message: Value,
    /// The Event's note.
    note: String,
    /// The Event was recorded (or refused for good).
    event_done: bool,
    /// The webhook answered 2xx (or there is none), and the alert was
    /// counted.
    sent: bool,
}

/// How far a delivery got.
pub enum Delivery {
    /// Everything delivered.
    Done,
    /// Something failed that a later retry may fix.
    Retry(Error),
    /// The webhook is busy and said when to come back (`Retry-After` on a
    /// 429 or 503): the rest is delivered then, not retried at once.
    Later(Duration),
}

/// The longest `Retry-After` honoured: a webhook asking for more is asked
/// again after this long.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(600);

/// How long a busy webhook asked the plugin to wait: the `Retry-After`
/// seconds of a 429 or 503 (an HTTP date is not honoured: the host's clock
/// and the webhook's may differ), at most [`MAX_RETRY_AFTER`].
fn retry_after(response: &http::Response) -> Option<Duration> {
    if !matches!(response.status, 429 | 503) {
        return None;
    }
    let seconds: u64 = response.header("retry-after")?.trim().parse().ok()?;
    Some(Duration::from_secs(seconds).min(MAX_RETRY_AFTER))
}

impl Alert {
    pub(crate) fn new(
        pod: &Pod,
        key: &str,
        status: &Status<'_>,
        restarts: i32,
        crashes: &Crashes,
        settings: &Settings,
    ) -> Self {
        let namespace = pod.metadata.namespace.clone().unwrap_or_default();
        let name = pod.metadata.name.clone().unwrap_or_default();
        let container = status.name;
        let window = settings.window_minutes;
        let last_exit = match (status.exit_code, status.reason) {
            (Some(code), Some(reason)) => format!("last exit code {code}, {reason}"),
            (Some(code), None) => format!("last exit code {code}"),
            (None, _) => "last exit unknown".to_owned(),
        };
        let text = format!(
            "{key}: container {container} restarted {restarts} times in {window} minutes ({last_exit})"
        );
        let message = json!({
            "text": text,
            "reason": EVENT_REASON,
            "namespace": namespace,
            "pod": name,
            "container": container,
            "restarts": restarts,
            "restartCount": crashes.restarts(),
            "windowMinutes": window,
            "lastExitCode": status.exit_code,
            "lastReason": status.reason,
            "lastFinishedAt": crashes.last().to_string(),
            "node": pod.spec.as_ref().and_then(|spec| spec.node_name.as_deref()),
        });
        let note = format!(
            "container {container} restarted {restarts} times in {window} minutes ({last_exit})"
        );
        Self {
            key: key.to_owned(),
            namespace,
            container: container.to_owned(),
            message,
            note,
            event_done: false,
            sent: false,
        }
    }

    /// Records the Event and POSTs the message (when a webhook is
    /// configured), each unless done already. The Event is best effort: a
    /// refusal that would repeat (no grant) is logged and not retried. The
    /// webhook is the alert: anything but a 2xx is counted in
    /// `webhook_failures_total` and retried; a 2xx counts the alert in
    /// `alerts_total`, once.
    pub fn deliver(&mut self, pod: &Pod, settings: &Settings) -> Delivery {
        let (key, container) = (&self.key, &self.container);
        let mut retry = None;
        let mut later = None;
        if !self.event_done {
            match KubeEvent::warning(pod, EVENT_REASON, self.note.clone())
                .action("Alerted")
                .publish()
            {
                Ok(()) => self.event_done = true,
                Err(error) => {
                    herald_sdk::warn!(
                        "event-failed pod={key} container={container} outcome={} detail={}",
                        error.outcome(),
                        error.message()
                    );
                    if error.is_retryable() {
                        retry = Some(Error::from(error).context("recording the CrashLoop Event"));
                    } else {
                        self.event_done = true;
                    }
                }
            }
        }
        if !self.sent {
            match &settings.webhook_url {
                Some(url) => {
                    let answer = http::post_json(url, &self.message);
                    if let Some(delay) = answer.as_ref().ok().and_then(retry_after) {
                        metrics::counter(WEBHOOK_FAILURES).inc();
                        herald_sdk::warn!(
                            "webhook-busy pod={key} container={container} retry-after={}s",
                            delay.as_secs()
                        );
                        later = Some(delay);
                    }
                    let outcome = answer.and_then(http::Response::error_for_status);
                    match outcome {
                        Err(_) if later.is_some() => {}
                        Ok(response) => {
                            herald_sdk::info!(
                                "alerted pod={key} container={container} status={}",
                                response.status
                            );
                            self.sent = true;
                        }
                        Err(error) => {
                            metrics::counter(WEBHOOK_FAILURES).inc();
                            herald_sdk::warn!(
                                "webhook-failed pod={key} container={container} error={error}"
                            );
                            retry =
                                Some(Error::from(error).context("posting the crash-loop alert"));
                        }
                    }
                }
                None => {
                    herald_sdk::info!("alerted pod={key} container={container} webhook=none");
                    self.sent = true;
                }
            }
            if self.sent {
                metrics::counter(ALERTS)
                    .with(&[self.namespace.as_str()])
                    .inc();
            }
        }
        match (retry, later) {
            (Some(error), _) => Delivery::Retry(error),
            (None, Some(delay)) => Delivery::Later(delay),
            (None, None) => Delivery::Done,
        }
    }
}
