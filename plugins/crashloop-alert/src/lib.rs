//! `crashloop-alert`: when a Pod's container restarts `restarts` times within
//! `windowMinutes`, POSTs one JSON alert to a webhook, records a Warning
//! Event `CrashLoop` on the Pod and counts it, once per crash-loop episode.
//! A webhook failure fails the call, so the host retries the Pod with
//! backoff; the alert counts as sent only after a 2xx.

mod alert;
pub mod crashes;
pub mod settings;

use std::collections::BTreeMap;

use herald_sdk::k8s_openapi::api::core::v1::{ContainerStatus, Pod};
use herald_sdk::k8s_openapi::jiff::{SignedDuration, Timestamp};
use herald_sdk::metrics::Metric;
use herald_sdk::{Error, Event, Handler, Manifest, Subscription, Update};

use crate::alert::{Alert, Delivery};
use crate::crashes::{Crashes, Seen};
use crate::settings::Settings;

/// The reason of the Warning Events the plugin records.
pub const EVENT_REASON: &str = "CrashLoop";

/// Counts alerts sent, by namespace.
pub const ALERTS: &str = "alerts_total";

/// Counts failed webhook attempts.
pub const WEBHOOK_FAILURES: &str = "webhook_failures_total";

/// Watches every Pod's containers for crash loops.
pub struct CrashLoopAlert {
    /// The operator's settings, read on the first notification.
    settings: Option<Settings>,
    /// Pods with a container that has restarted, by key.
    pods: BTreeMap<String, PodState>,
    /// The wall clock: only for crashes whose time the Pod does not give,
    /// and to tell a crash loop seen late from one going on.
    clock: Box<dyn Fn() -> Timestamp>,
}

impl Default for CrashLoopAlert {
    fn default() -> Self {
        Self::with_clock(system_time)
    }
}

/// The wall clock (WASI's on wasm). jiff's own `Timestamp::now` needs its
/// `std` feature, which k8s-openapi does not turn on.
fn system_time() -> Timestamp {
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let seconds = i64::try_from(since_epoch.as_secs()).unwrap_or(i64::MAX);
    Timestamp::new(seconds, 0).unwrap_or(Timestamp::MAX)
}

/// What the plugin knows of one Pod.
struct PodState {
    /// `metadata.uid`: a Pod recreated under the same name starts over.
    uid: Option<String>,
    /// By container name (init and app containers).
    containers: BTreeMap<String, ContainerState>,
}

/// One container: its crashes and where its current episode stands.
struct ContainerState {
    crashes: Crashes,
    episode: Episode,
}

/// A crash-loop episode: a run of crashes, each within the window of the
/// one before.
enum Episode {
    /// No crash loop (yet) in this episode.
    Quiet,
    /// A crash loop found; its alert is not delivered yet.
    Due(Alert),
    /// Alerted: nothing more until the next episode.
    Alerted,
}

/// One container status, as far as crash loops go.
struct Status<'a> {
    name: &'a str,
    restarts: i32,
    finished: Option<Timestamp>,
    exit_code: Option<i32>,
    reason: Option<&'a str>,
}

fn statuses(pod: &Pod) -> impl Iterator<Item = Status<'_>> {
    let status = pod.status.as_ref();
    let init = status
        .and_then(|status| status.init_container_statuses.as_deref())
        .unwrap_or_default();
    let app = status
        .and_then(|status| status.container_statuses.as_deref())
        .unwrap_or_default();
    init.iter().chain(app).map(|container: &ContainerStatus| {
        let terminated = container
            .last_state
            .as_ref()
            .and_then(|state| state.terminated.as_ref());
        Status {
            name: &container.name,
            restarts: container.restart_count,
            finished: terminated
                .and_then(|terminated| terminated.finished_at.as_ref())
                .map(|time| time.0),
            exit_code: terminated.map(|terminated| terminated.exit_code),
            reason: terminated.and_then(|terminated| terminated.reason.as_deref()),
        }
    })
}

impl CrashLoopAlert {
    /// A plugin reading time from `clock` (tests use a fixed one).
    pub fn with_clock(clock: impl Fn() -> Timestamp + 'static) -> Self {
        Self {
            settings: None,
            pods: BTreeMap::new(),
            clock: Box::new(clock),
        }
    }

    fn settings(&mut self) -> Result<Settings, Error> {
        if self.settings.is_none() {
            self.settings = Some(Settings::load()?);
        }
        Ok(self.settings.clone().unwrap_or_default())
    }

    /// Takes in the Pod's current state (`old`: the state before, on an
    /// update) and delivers the alerts that are due.
    fn handle(&mut self, key: &str, pod: &Pod, old: Option<&Pod>) -> Result<(), Error> {
        let settings = self.settings()?;
        let window = SignedDuration::try_from(settings.window()).unwrap_or(SignedDuration::MAX);
        let now = (self.clock)();
        let started = pod
            .status
            .as_ref()
            .and_then(|status| status.start_time.as_ref())
            .map(|time| time.0);
        let uid = pod.metadata.uid.clone();
        if self.pods.get(key).is_some_and(|state| state.uid != uid) {
            self.pods.remove(key);
        }
        for status in statuses(pod) {
            if status.restarts == 0 {
                continue;
            }
            // A rise between the old and new states was seen live, even by
            // an instance that has just been rebuilt.
            let risen = old.is_some_and(|old| {
                statuses(old)
                    .find(|before| before.name == status.name)
                    .is_none_or(|before| before.restarts < status.restarts)
            });
            let state = self.pods.entry(key.to_owned()).or_insert_with(|| PodState {
                uid: uid.clone(),
                containers: BTreeMap::new(),
            });
            let container = match state.containers.get_mut(status.name) {
                Some(container) if container.crashes.restarts() <= status.restarts => {
                    let seen =
                        container
                            .crashes
                            .observe(status.restarts, status.finished, now, window);
                    match seen {
                        Seen::Nothing => continue,
                        Seen::Crashed { after_quiet } => {
                            if after_quiet && matches!(container.episode, Episode::Alerted) {
                                container.episode = Episode::Quiet;
                            }
                        }
                    }
                    container
                }
                _ => {
                    let last = status.finished.unwrap_or(now);
                    let crashes = Crashes::first(status.restarts, last, started);
                    state.containers.insert(
                        status.name.to_owned(),
                        ContainerState {
                            crashes,
                            episode: Episode::Quiet,
                        },
                    );
                    // A first look at a crash loop that ended long ago is
                    // history, not news.
                    if !risen && now.duration_since(last) > window {
                        continue;
                    }
                    state
                        .containers
                        .get_mut(status.name)
                        .expect("just inserted")
                }
            };
            let in_window = container.crashes.in_window(window);
            if matches!(container.episode, Episode::Quiet)
                && in_window >= i32::try_from(settings.restarts).unwrap_or(i32::MAX)
            {
                let alert = Alert::new(pod, key, &status, in_window, &container.crashes, &settings);
                herald_sdk::warn!(
                    "crashloop pod={key} container={} restarts={in_window} window={}m exit={} reason={}",
                    status.name,
                    settings.window_minutes,
                    status
                        .exit_code
                        .map_or_else(|| "-".to_owned(), |code| code.to_string()),
                    status.reason.unwrap_or("-"),
                );
                container.episode = Episode::Due(alert);
            }
        }
        self.deliver(key, pod, &settings)
    }

    /// Delivers every due alert of the Pod: its Event, then its webhook. A
    /// failure that a retry may fix fails the call, after the others were
    /// tried.
    fn deliver(&mut self, key: &str, pod: &Pod, settings: &Settings) -> Result<(), Error> {
        let Some(state) = self.pods.get_mut(key) else {
            return Ok(());
        };
        let mut failure: Option<Error> = None;
        let mut later: Option<std::time::Duration> = None;
        for (name, container) in &mut state.containers {
            let Episode::Due(alert) = &mut container.episode else {
                continue;
            };
            match alert.deliver(pod, settings) {
                Delivery::Done => container.episode = Episode::Alerted,
                Delivery::Retry(error) => {
                    herald_sdk::debug!("alert-pending pod={key} container={name}");
                    failure.get_or_insert(error);
                }
                Delivery::Later(delay) => {
                    herald_sdk::debug!("alert-pending pod={key} container={name}");
                    later = Some(later.map_or(delay, |other| other.max(delay)));
                }
            }
        }
        match (failure, later) {
            (Some(error), _) => Err(error),
            // The Pod comes back after the delay (its subscription is
            // coalesced), and the alert is delivered then.
            (None, Some(delay)) => {
                herald_sdk::workqueue::requeue_after(delay);
                Ok(())
            }
            (None, None) => Ok(()),
        }
    }
}

impl Handler for CrashLoopAlert {
    fn manifest() -> Manifest {
        // Coalesced: only the latest state of a Pod matters, and a failed
        // webhook retries that Pod alone, with backoff.
        Manifest::new("crashloop-alert", env!("CARGO_PKG_VERSION"))
            .subscribe(Subscription::to::<Pod>().coalesced())
            .capability("http")
            .capability("events")
            .metric(Metric::counter(ALERTS, "Crash-loop alerts sent").labels(["namespace"]))
            .metric(Metric::counter(
                WEBHOOK_FAILURES,
                "Webhook attempts that failed (an error or a status other than 2xx)",
            ))
    }

    fn on_add(&mut self, event: &Event) -> Result<(), Error> {
        let pod: Pod = event.object()?;
        self.handle(event.key(), &pod, None)
    }

    fn on_update(&mut self, event: &Update) -> Result<(), Error> {
        let (old, new): (Pod, Pod) = (event.old()?, event.new()?);
        self.handle(event.key(), &new, Some(&old))
    }

    fn on_delete(&mut self, event: &Event) -> Result<(), Error> {
        // Nothing to tell about a Pod that is gone, even with an alert due.
        if self.pods.remove(event.key()).is_some() {
            herald_sdk::debug!("forgot pod={}", event.key());
        }
        Ok(())
    }
}

herald_sdk::export_plugin!(CrashLoopAlert);

// Native only: the SDK's stand-in host does not exist on wasm.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests;
