//! `herald plugin replay`: recorded events, recorded AdmissionReviews, or
//! both, fed to a plugin offline exactly as the daemon would, printing each
//! result with what the plugin logged, wrote, sent and answered. With both,
//! the events come first and fill the cache the reviews' look-ups read.

use super::fail;
use super::plugin_files::CacheArgs;
use crate::capability::ClusterAccess;
use crate::capability::Grants;
use crate::capability::log::MemorySink;
use crate::capability::rate::RateLimit;
use crate::plugin::{
    CallError, CompileOutcome, EngineError, EngineSettings, LoadError, LoadOptions, LoadedPlugin,
    PluginEngine,
};
use crate::replay::{
    DeliveryResult, EventParseError, RecordedEvent, RecordedReview, ReplayApi, ReplayOutcome,
    Replayer, ResponsesError, ReviewOutcome, ReviewReplayer, ReviewsError, parse_events,
    parse_responses, parse_reviews,
};
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

/// Arguments of `plugin replay`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("input").required(true).multiple(true).args(["events", "reviews"])))]
pub struct ReplayArgs {
    /// The plugin's `.wasm` component file.
    pub file: PathBuf,
    /// The recorded events: JSON objects `{"type":"add"|"update"|"delete","object":{…},"old":{…}}`,
    /// one per line (see examples/events/).
    #[arg(long, short)]
    pub events: Option<PathBuf>,
    /// Recorded AdmissionReviews (admission.k8s.io/v1, as the API server
    /// posts them), one JSON document after another; each is answered as
    /// the daemon's admission server would (see docs/admission.md). After
    /// `--events` when both are given.
    #[arg(long, short)]
    pub reviews: Option<PathBuf>,
    /// The plugin's configuration, as JSON text or `@FILE` (JSON or YAML).
    #[arg(long)]
    pub config: Option<String>,
    /// Go on after a failed handler call, or a review the plugin could not
    /// decide, and exit 0; by default replay stops at the first failure and
    /// exits 1.
    #[arg(long)]
    pub keep_going: bool,
    /// Scripted answers to the plugin's Kubernetes API calls (YAML or JSON
    /// list of `{verb, kind, namespace, name, times, object | error}`);
    /// unscripted reads are answered from the replay's cache, writes by
    /// echoing what was sent. Entries `{http: {method, url, times, status,
    /// body, headers | error}}` answer the plugin's outbound HTTP requests
    /// (`url` exact or a prefix ending in `*`; `error`: `denied`, `timeout`
    /// or `connection-refused`); unscripted ones get 200 with an empty
    /// body. Nothing is ever sent to a cluster or the network.
    #[arg(long)]
    pub responses: Option<PathBuf>,
    /// Where compiled plugins are kept.
    #[command(flatten)]
    pub cache: CacheArgs,
}

/// Why `plugin replay` could not run; each variant names the file or flag
/// at fault.
#[derive(Debug, thiserror::Error)]
enum ReplayError {
    /// A file given on the command line cannot be read.
    #[error("{}: cannot read: {reason}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        reason: std::io::Error,
    },
    /// The `--events` file does not parse.
    #[error("{}: {reason}", path.display())]
    Events {
        /// The file.
        path: PathBuf,
        /// The line at fault and why.
        #[source]
        reason: EventParseError,
    },
    /// The `--reviews` file does not parse.
    #[error("{}: {reason}", path.display())]
    Reviews {
        /// The file.
        path: PathBuf,
        /// The review at fault and why.
        #[source]
        reason: ReviewsError,
    },
    /// The `--responses` file does not parse.
    #[error("{}: {reason}", path.display())]
    Responses {
        /// The file.
        path: PathBuf,
        /// The entry at fault and why.
        #[source]
        reason: ResponsesError,
    },
    /// `--config` given as text is not JSON.
    #[error("--config is not valid JSON: {0}")]
    ConfigText(#[source] serde_json::Error),
    /// `--config @FILE` holds neither JSON nor YAML.
    #[error("{}: not valid JSON or YAML: {reason}", path.display())]
    ConfigFile {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        reason: serde_yaml::Error,
    },
    /// The WebAssembly engine could not be made.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The plugin does not load.
    #[error("{}: {reason}", path.display())]
    Load {
        /// The plugin's file.
        path: PathBuf,
        /// Why (boxed: a load error is large, the others small).
        #[source]
        reason: Box<LoadError>,
    },
    /// Reviews were given for a plugin that declares no webhook.
    #[error(
        "{}: {name} admits nothing (its manifest declares no validating or mutating webhook), so \
         it has no reviews to answer",
        path.display()
    )]
    AdmitsNothing {
        /// The plugin's file.
        path: PathBuf,
        /// The plugin's name.
        name: String,
    },
    /// The plugin could not be made ready for events.
    #[error("{}: {reason}", path.display())]
    Start {
        /// The plugin's file.
        path: PathBuf,
        /// Why.
        #[source]
        reason: CallError,
    },
    /// The runtime answering reviews could not start.
    #[error("cannot start the replay's runtime: {0}")]
    Runtime(#[source] std::io::Error),
}

/// The contents of the file at `path`, as text.
fn read_text(path: &Path) -> Result<String, ReplayError> {
    std::fs::read_to_string(path).map_err(|reason| ReplayError::Read {
        path: path.to_owned(),
        reason,
    })
}

/// Runs `plugin replay`.
pub fn run(args: ReplayArgs) -> ExitCode {
    match replay(&args) {
        Ok(code) => code,
        Err(message) => fail(message),
    }
}

fn replay(args: &ReplayArgs) -> Result<ExitCode, ReplayError> {
    let config = args.config.as_deref().map(read_config).transpose()?;
    let events = args.events.as_deref().map(read_events).transpose()?;
    let reviews = args.reviews.as_deref().map(read_reviews).transpose()?;
    let script = args
        .responses
        .as_deref()
        .map(read_responses)
        .transpose()?
        .unwrap_or_default();
    let api = Arc::new(ReplayApi::new(script));
    let logs = MemorySink::default();
    let plugin = load(args, config, &api, &logs)?;
    let name = plugin.name().to_owned();
    for line in logs.take() {
        println!("  [{}] {} {}", name, line.level.as_str(), line.message);
    }
    let reviewer = match &reviews {
        Some(_) => {
            Some(
                ReviewReplayer::new(&plugin).ok_or_else(|| ReplayError::AdmitsNothing {
                    path: args.file.clone(),
                    name: name.clone(),
                })?,
            )
        }
        None => None,
    };
    let mut replayer =
        Replayer::new(plugin, logs.clone()).map_err(|reason| ReplayError::Start {
            path: args.file.clone(),
            reason,
        })?;
    replayer.record_intents(api);
    if let Some(events) = &events
        && !replay_events(&mut replayer, &name, events, args.keep_going)
    {
        return Ok(ExitCode::from(1));
    }
    if let (Some(reviews), Some(reviewer)) = (&reviews, &reviewer)
        && !replay_reviews(reviewer, reviews, &logs, args.keep_going)?
    {
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// Loads the plugin with everything it declares granted: offline it may do
/// all it asks for (nothing leaves the host), unthrottled, its outbound
/// HTTP recorded and answered by `api`.
fn load(
    args: &ReplayArgs,
    config: Option<String>,
    api: &Arc<ReplayApi>,
    logs: &MemorySink,
) -> Result<LoadedPlugin, ReplayError> {
    let engine = PluginEngine::new(EngineSettings {
        workers: 1,
        ..EngineSettings::default()
    })?;
    let bytes = std::fs::read(&args.file).map_err(|reason| ReplayError::Read {
        path: args.file.clone(),
        reason,
    })?;
    let options = LoadOptions {
        config,
        sink: Arc::new(logs.clone()),
        grants: Grants {
            rate_limit: RateLimit {
                qps: 1e9,
                burst: u32::MAX,
            },
            ..Grants::all_declared()
        },
        access: Some(ClusterAccess {
            offline_http: Some(api.clone()),
            ..ClusterAccess::new(api.clone())
        }),
        ..LoadOptions::default()
    };
    let cache = args.cache.open(&engine);
    let (plugin, outcome) = LoadedPlugin::load_cached(&engine, cache.as_ref(), &bytes, options)
        .map_err(|reason| ReplayError::Load {
            path: args.file.clone(),
            reason: Box::new(reason),
        })?;
    eprintln!(
        "{}: {}",
        args.file.display(),
        match outcome {
            CompileOutcome::CacheHit => "compiled artifact from the cache".to_owned(),
            compiled => format!("compiled in {} ms", compiled.compile_time().as_millis()),
        }
    );
    Ok(plugin)
}

/// Delivers every event (or up to the first failure without
/// `keep_going`), printing each; false if it stopped at a failure.
fn replay_events(
    replayer: &mut Replayer,
    name: &str,
    events: &[RecordedEvent],
    keep_going: bool,
) -> bool {
    let (mut ok, mut failed, mut skipped) = (0, 0, 0);
    for (index, event) in events.iter().enumerate() {
        let outcome = replayer.deliver(event);
        let verdict = match &outcome.result {
            DeliveryResult::Ok => {
                ok += 1;
                "ok".to_owned()
            }
            DeliveryResult::Failed(err) => {
                failed += 1;
                format!("FAILED: {err}")
            }
            DeliveryResult::NotSubscribed => {
                skipped += 1;
                format!("skipped: {name} does not subscribe to {}", outcome.gvk)
            }
            DeliveryResult::BadObject(reason) => {
                skipped += 1;
                format!("skipped: {reason}")
            }
            DeliveryResult::NoOldState => {
                skipped += 1;
                "skipped: update with no \"old\" and no earlier state of the object".to_owned()
            }
        };
        println!(
            "#{} {} {} {} (line {}): {verdict}",
            index + 1,
            outcome.kind.as_str(),
            outcome.gvk.kind,
            outcome.key,
            outcome.line
        );
        print_effects(&outcome);
        if matches!(outcome.result, DeliveryResult::Failed(_)) && !keep_going {
            println!("stopped at the first failure (use --keep-going to deliver every event)");
            println!(
                "summary: {} events, {ok} ok, {failed} failed, {skipped} skipped",
                index + 1
            );
            return false;
        }
    }
    println!(
        "summary: {} events, {ok} ok, {failed} failed, {skipped} skipped",
        events.len()
    );
    true
}

/// What one delivery logged, asked for, sent, counted and requeued.
fn print_effects(outcome: &ReplayOutcome) {
    for line in &outcome.logs {
        println!(
            "  [{}] {} {}",
            line.plugin,
            line.level.as_str(),
            line.message
        );
    }
    for intent in &outcome.intents {
        println!("  => {}", intent.summary());
        if let Some(body) = intent.request.operation.body() {
            println!("     {}", crate::text::escape_controls(body));
        }
    }
    for request in &outcome.http {
        println!("  => {}", request.summary());
    }
    for update in &outcome.metrics {
        println!("  => {update}");
    }
    if let Some((after, delivery)) = outcome.requeue {
        println!(
            "  => requeue after {}{}",
            crate::units::duration::format(after),
            match delivery {
                crate::plugin::Delivery::Coalesced => {
                    " (the daemon delivers the object again then; replay goes on)"
                }
                crate::plugin::Delivery::EveryEvent => {
                    " (ignored by the daemon: the subscription's delivery is every-event; \
                     requeues need coalesced)"
                }
            }
        );
    }
}

/// The counts of a review replay.
#[derive(Debug, Default)]
struct ReviewCounts {
    allowed: usize,
    denied: usize,
    patched: usize,
    not_covered: usize,
    failed: usize,
}

impl ReviewCounts {
    /// Counts `outcome` and says what it was.
    fn count(&mut self, outcome: &ReviewOutcome) -> String {
        if outcome.not_covered() {
            self.not_covered += 1;
            return "not covered by the plugin's webhooks".to_owned();
        }
        let (counter, verdict) = if let Some(failure) = outcome.failure() {
            let response = &failure.response;
            let cause = if response.allowed {
                response.warnings.join("; ")
            } else {
                response.message.clone()
            };
            (&mut self.failed, format!("FAILED: {cause}"))
        } else if let Some(refusal) = outcome.refusal() {
            (
                &mut self.denied,
                format!(
                    "denied ({}): {}",
                    refusal.response.code, refusal.response.message
                ),
            )
        } else if outcome.patch().is_some() {
            (&mut self.patched, "patched".to_owned())
        } else {
            (&mut self.allowed, "allowed".to_owned())
        };
        *counter += 1;
        verdict
    }

    fn summary(&self, reviews: usize) -> String {
        format!(
            "summary: {reviews} reviews, {} allowed, {} denied, {} patched, {} not covered, {} failed",
            self.allowed, self.denied, self.patched, self.not_covered, self.failed
        )
    }
}

/// Answers every review (or up to the first the plugin could not decide,
/// without `keep_going`), printing each; false if it stopped there.
fn replay_reviews(
    reviewer: &ReviewReplayer,
    reviews: &[RecordedReview],
    logs: &MemorySink,
    keep_going: bool,
) -> Result<bool, ReplayError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(ReplayError::Runtime)?;
    let mut counts = ReviewCounts::default();
    for (index, recorded) in reviews.iter().enumerate() {
        let outcome = runtime.block_on(reviewer.replay(&recorded.review));
        let verdict = counts.count(&outcome);
        let call = &recorded.review.call;
        let object = match (call.namespace.as_str(), call.name.as_str()) {
            (_, "") => "(no name yet)".to_owned(),
            ("", name) => crate::text::escape_controls(name),
            (namespace, name) => crate::text::escape_controls(&format!("{namespace}/{name}")),
        };
        println!(
            "review {} {} {} {} {object}: {verdict}",
            index + 1,
            crate::text::escape_controls(&call.uid),
            recorded.review.operation.as_str(),
            recorded.review.kind.kind,
        );
        for line in logs.take() {
            println!(
                "  [{}] {} {}",
                line.plugin,
                line.level.as_str(),
                line.message
            );
        }
        for warning in outcome.warnings() {
            println!("  warning: {warning}");
        }
        if let Some(patch) = outcome.patch() {
            println!("  patch: {patch}");
        }
        if outcome.failure().is_some() && !keep_going {
            println!("stopped at the first failure (use --keep-going to answer every review)");
            println!("{}", counts.summary(index + 1));
            return Ok(false);
        }
    }
    println!("{}", counts.summary(reviews.len()));
    Ok(true)
}

fn read_events(path: &Path) -> Result<Vec<RecordedEvent>, ReplayError> {
    parse_events(&read_text(path)?).map_err(|reason| ReplayError::Events {
        path: path.to_owned(),
        reason,
    })
}

fn read_reviews(path: &Path) -> Result<Vec<RecordedReview>, ReplayError> {
    parse_reviews(&read_text(path)?).map_err(|reason| ReplayError::Reviews {
        path: path.to_owned(),
        reason,
    })
}

/// Reads `--config`: JSON text, or `@FILE` holding JSON or YAML; returns JSON text.
fn read_config(arg: &str) -> Result<String, ReplayError> {
    let Some(path) = arg.strip_prefix('@') else {
        serde_json::from_str::<serde_json::Value>(arg).map_err(ReplayError::ConfigText)?;
        return Ok(arg.to_owned());
    };
    let path = Path::new(path);
    let value: serde_json::Value =
        serde_yaml::from_str(&read_text(path)?).map_err(|reason| ReplayError::ConfigFile {
            path: path.to_owned(),
            reason,
        })?;
    Ok(value.to_string())
}

/// Reads and parses a `--responses` file.
fn read_responses(path: &Path) -> Result<Vec<crate::replay::ScriptedResponse>, ReplayError> {
    parse_responses(&read_text(path)?).map_err(|reason| ReplayError::Responses {
        path: path.to_owned(),
        reason,
    })
}
