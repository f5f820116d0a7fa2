//! What a delivery leaves behind: its feed event, the plugin's last error,
//! and rate-limited log lines about failed calls.

use crate::dispatch::feed::{Feed, FeedEvent, Outcome};
use crate::dispatch::listener::Listener;
use crate::plugin::{CallError, EventContext};
use crate::throttle::{Admit, Throttle};
use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// Sustained rate of the host's log lines about one plugin's failed calls.
pub const FAILURE_LINES_PER_SECOND: u64 = 10;
/// Lines about one plugin's failed calls logged at once before the rate
/// applies.
pub const FAILURE_LINES_BURST: u64 = 100;

/// The last failure of a plugin, for status.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LastError {
    /// What failed.
    pub message: String,
    /// The notification: event type and object key.
    pub notification: String,
    /// When.
    #[serde(with = "crate::units::time")]
    pub at: SystemTime,
    /// Whether it was skipped after the last retry (otherwise it is retried).
    pub skipped: bool,
}

/// Where one plugin's deliveries are reported: its feed, its last error and
/// the log.
pub(super) struct Report {
    plugin: Arc<str>,
    last_error: Mutex<Option<LastError>>,
    /// Where finished deliveries are announced, if anywhere.
    feed: Option<Arc<Feed>>,
    /// Bounds the host's lines about this plugin's failed calls, which
    /// carry its error text: counters and the last error see every failure,
    /// the log at most [`FAILURE_LINES_PER_SECOND`].
    failure_lines: Throttle,
}

impl Report {
    /// Reports about `plugin`, announcing finished deliveries to `feed` if
    /// given.
    pub(super) fn new(plugin: Arc<str>, feed: Option<Arc<Feed>>) -> Self {
        Report {
            plugin,
            last_error: Mutex::new(None),
            feed,
            failure_lines: Throttle::new(FAILURE_LINES_PER_SECOND, FAILURE_LINES_BURST),
        }
    }

    /// The plugin's last failure.
    pub(super) fn last_error(&self) -> Option<LastError> {
        self.last_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Skips a notification after its last attempt, and records it.
    pub(super) fn give_up(
        &self,
        listener: &Listener,
        event: &'static str,
        ctx: &EventContext,
        attempts: u32,
        took: Duration,
        err: &CallError,
    ) {
        self.record_failure(listener, event, &ctx.key, err, attempts, None);
        listener.stats.skipped.fetch_add(1, Ordering::Release);
        self.announce(
            listener,
            event,
            ctx,
            Outcome::Skipped,
            attempts,
            took,
            Some(err),
        );
        if ctx.is_initial_list {
            listener.mark_degraded(format!(
                "skipped {event} {} of its initial list after {attempts} failed attempts: {err}",
                ctx.key,
            ));
        }
    }

    /// Publishes a delivery's outcome to the feed, if the worker has one
    /// (and it has watchers: otherwise nothing is built).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn announce(
        &self,
        listener: &Listener,
        event: &'static str,
        ctx: &EventContext,
        outcome: Outcome,
        attempts: u32,
        took: Duration,
        error: Option<&CallError>,
    ) {
        let Some(feed) = &self.feed else {
            return;
        };
        feed.publish(|| FeedEvent {
            at_ms: FeedEvent::epoch_ms(SystemTime::now()),
            plugin: listener.plugin_name().clone(),
            resource: listener.resource_name().clone(),
            cluster: listener.cluster().cloned(),
            event,
            key: ctx.key.clone(),
            initial: ctx.is_initial_list,
            outcome,
            attempts,
            micros: FeedEvent::micros(took),
            error: error.map(ToString::to_string),
        });
    }

    /// Logs a failed attempt and keeps it as the last error: retried after
    /// `retry_in`, or skipped (`None`).
    pub(super) fn record_failure(
        &self,
        listener: &Listener,
        event: &'static str,
        key: &str,
        err: &CallError,
        attempts: u32,
        retry_in: Option<Duration>,
    ) {
        let plugin = &*self.plugin;
        let fault = err.fault().map(|f| f.as_str()).unwrap_or("handler-error");
        let resource = listener.resource();
        *self.last_error.lock().unwrap_or_else(|e| e.into_inner()) = Some(LastError {
            message: err.to_string(),
            notification: format!("{event} {key}"),
            at: SystemTime::now(),
            skipped: retry_in.is_none(),
        });
        match self.failure_lines.admit(1, Instant::now()) {
            Admit::Drop => return,
            Admit::Pass { summary: None } => {}
            Admit::Pass {
                summary: Some(dropped),
            } => tracing::warn!(
                plugin,
                dropped,
                "{dropped} lines about failed calls of this plugin were not logged (over \
                 {FAILURE_LINES_PER_SECOND} per second); herald_notifications_retried_total and \
                 herald_notifications_skipped_total count every one"
            ),
        }
        match retry_in {
            None => tracing::error!(
                plugin,
                event,
                key,
                resource,
                fault,
                attempts,
                "skipping notification after {attempts} failed attempts: {err}"
            ),
            Some(delay) => tracing::warn!(
                plugin,
                event,
                key,
                resource,
                fault,
                attempt = attempts,
                retry_in_ms = delay.as_millis() as u64,
                "plugin call failed, will retry: {err}"
            ),
        }
    }
}

/// Adds `delay`, in whole milliseconds, to `counter`.
pub(super) fn add_millis(counter: &AtomicU64, delay: Duration) {
    let millis = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
    counter.fetch_add(millis, Ordering::Relaxed);
}
