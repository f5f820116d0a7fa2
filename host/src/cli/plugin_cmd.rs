//! `herald plugin check`, `herald plugin replay` and `herald plugin rbac`.

use super::fail;
use super::plugin_files::{engine, kind_resolver, manifests_of, read};
use crate::capability::ClusterAccess;
use crate::capability::Grants;
use crate::capability::log::MemorySink;
use crate::capability::rate::RateLimit;
use crate::capability::reads::{ReadView, Reads};
use crate::plugin::{
    ArtifactCache, CompileOutcome, EngineSettings, LoadOptions, LoadedPlugin, Manifest,
    PluginEngine,
};
use crate::replay::{DeliveryResult, ReplayApi, Replayer, parse_events, parse_responses};
use clap::{Args, Subcommand, ValueEnum};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

/// Plugin file commands.
#[derive(Debug, Subcommand)]
pub enum PluginCommand {
    /// Validate a plugin component (world and version) and print its manifest.
    Check(CheckArgs),
    /// Feed recorded events from a file to a plugin and print each result and
    /// everything the plugin logged.
    Replay(ReplayArgs),
    /// Print the least-privilege ClusterRole for these plugins: list and watch
    /// on exactly the resources they subscribe to, get on discovery.
    Rbac(RbacArgs),
    /// Print the ValidatingWebhookConfiguration and
    /// MutatingWebhookConfiguration through which the API server sends
    /// these plugins the writes they admit.
    Webhooks(super::plugin_webhooks::WebhooksArgs),
    /// Create a plugin project (Rust, Python or JavaScript) that builds,
    /// tests and replays sample events out of the box.
    New(super::plugin_new::NewArgs),
    /// Publish a plugin to an OCI registry (CNCF Wasm artifact layout), for
    /// `pluginSources` to pull.
    Push(super::plugin_push::PushArgs),
    /// Build a plugin's source directory into a component (Go: `go build`,
    /// then componentized by Herald itself).
    Build(super::plugin_build::BuildArgs),
}

/// Arguments of `plugin rbac`.
#[derive(Debug, Args)]
pub struct RbacArgs {
    /// The plugins' `.wasm` component files.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Name of the ClusterRole.
    #[arg(long, default_value = "herald")]
    pub name: String,
    /// Resolve kinds through this cluster's discovery (needed for custom
    /// resources); without it only built-in Kubernetes kinds are known.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context (with --kubeconfig).
    #[arg(long, requires = "kubeconfig")]
    pub context: Option<String>,
}

/// Arguments of `plugin check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The plugin's `.wasm` component file.
    pub file: PathBuf,
    /// Output format.
    #[arg(long, short, value_enum, default_value_t = Output::Text)]
    pub output: Output,
    /// Largest plugin file accepted, in bytes.
    #[arg(long, default_value_t = crate::plugin::DEFAULT_MAX_FILE_BYTES)]
    pub max_file_bytes: u64,
    /// Where compiled plugins are kept.
    #[command(flatten)]
    pub cache: CacheArgs,
}

/// The compiled-artifact cache of a one-shot command: the daemon's (the
/// same default directory), so a file checked or replayed once, or already
/// loaded by a daemon of this user, is not compiled again.
#[derive(Debug, Args)]
pub struct CacheArgs {
    /// The cache's directory (default: `$XDG_CACHE_HOME/herald/artifacts`,
    /// else `$HOME/.cache/herald/artifacts`, as the daemon's
    /// `pluginFiles.artifactCache.dir`).
    #[arg(long, value_name = "DIR")]
    pub artifact_cache: Option<PathBuf>,
    /// Compile every time; use no cache.
    #[arg(long, conflicts_with = "artifact_cache")]
    pub no_artifact_cache: bool,
}

impl CacheArgs {
    /// The cache, if there is to be one and it opens; one that does not
    /// open is said on stderr, and the command compiles instead.
    fn open(&self, engine: &PluginEngine) -> Option<ArtifactCache> {
        let config = crate::reload::ArtifactCacheConfig {
            enabled: !self.no_artifact_cache,
            dir: self.artifact_cache.clone(),
            ..Default::default()
        };
        let dir = config.directory()?;
        match ArtifactCache::open(&dir, engine) {
            Ok(cache) => Some(cache.with_max_bytes(config.max_size)),
            Err(err) => {
                eprintln!("note: {err}: compiling without the artifact cache");
                None
            }
        }
    }
}

/// Arguments of `plugin replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The plugin's `.wasm` component file.
    pub file: PathBuf,
    /// The recorded events: JSON objects `{"type":"add"|"update"|"delete","object":{…},"old":{…}}`,
    /// one per line (see examples/events/).
    #[arg(long, short)]
    pub events: PathBuf,
    /// The plugin's configuration, as JSON text or `@FILE` (JSON or YAML).
    #[arg(long)]
    pub config: Option<String>,
    /// Go on after a failed handler call and exit 0; by default replay stops
    /// at the first failure and exits 1.
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

/// How `plugin check` prints the manifest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// For people.
    Text,
    /// JSON.
    Json,
    /// YAML.
    Yaml,
}

/// What `plugin check` reports.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct CheckReport<'a> {
    file: String,
    size_bytes: usize,
    sha256: &'a str,
    world: String,
    compile_ms: f64,
    /// The compiled component came from the artifact cache.
    cache_hit: bool,
    manifest: &'a Manifest,
    /// What it reads (its subscriptions, then its `get`s), and whether a
    /// host with the default read policy lets it without a grant.
    reads: Vec<ReadView>,
}

/// Runs a plugin subcommand.
pub fn run(command: PluginCommand) -> ExitCode {
    match command {
        PluginCommand::Check(args) => check(args),
        PluginCommand::Replay(args) => replay(args),
        PluginCommand::Rbac(args) => rbac(args),
        PluginCommand::Webhooks(args) => super::plugin_webhooks::run(args),
        PluginCommand::New(args) => super::plugin_new::run(args),
        PluginCommand::Push(args) => super::plugin_push::push(args),
        PluginCommand::Build(args) => super::plugin_build::run(args),
    }
}

fn check(args: CheckArgs) -> ExitCode {
    let settings = EngineSettings {
        max_file_bytes: args.max_file_bytes,
        ..EngineSettings::default()
    };
    let (engine, bytes) = match (engine(settings), read(&args.file)) {
        (Ok(engine), Ok(bytes)) => (engine, bytes),
        (Err(code), _) | (_, Err(code)) => return code,
    };
    let cache = args.cache.open(&engine);
    let started = Instant::now();
    let options = LoadOptions {
        grants: Grants::all_declared(),
        ..LoadOptions::default()
    };
    let (plugin, outcome) =
        match LoadedPlugin::load_cached(&engine, cache.as_ref(), &bytes, options) {
            Ok(loaded) => loaded,
            Err(err) => return fail(format_args!("{}: {err}", args.file.display())),
        };
    let report = CheckReport {
        file: args.file.display().to_string(),
        size_bytes: bytes.len(),
        sha256: plugin.digest(),
        world: plugin.world(),
        compile_ms: started.elapsed().as_secs_f64() * 1000.0,
        cache_hit: matches!(outcome, CompileOutcome::CacheHit),
        manifest: plugin.manifest(),
        reads: plugin.manifest().read_views(&Reads::default()),
    };
    match args.output {
        Output::Json => println!(
            "{}",
            serde_json::to_string_pretty(&report).expect("report serializes")
        ),
        Output::Yaml => print!(
            "{}",
            serde_yaml::to_string(&report).expect("report serializes")
        ),
        Output::Text => print_text(&report),
    }
    ExitCode::SUCCESS
}

fn print_text(report: &CheckReport<'_>) {
    let manifest = report.manifest;
    println!("{}: ok, implements {}", report.file, report.world);
    println!("  plugin         {} {}", manifest.name, manifest.version);
    println!(
        "  file           {} bytes, sha256 {}",
        report.size_bytes, report.sha256
    );
    if report.cache_hit {
        println!(
            "  loaded in      {:.1} ms (compiled artifact from the cache)",
            report.compile_ms
        );
    } else {
        println!("  compiled in    {:.1} ms", report.compile_ms);
    }
    for sub in &manifest.subscriptions {
        let mut line = format!("  subscribes to  {}", sub.kind);
        line.push_str(&match &sub.namespace {
            Some(ns) => format!(" in namespace {ns}"),
            None => " in every namespace (or cluster-scoped)".into(),
        });
        if let Some(selector) = &sub.label_selector {
            line.push_str(&format!(", labels {selector}"));
        }
        if let Some(selector) = &sub.field_selector {
            line.push_str(&format!(", fields {selector}"));
        }
        if let Some(period) = sub.resync_period {
            line.push_str(&format!(
                ", resync every {}",
                crate::units::duration::format(period)
            ));
        }
        line.push_str(match sub.delivery {
            crate::plugin::Delivery::EveryEvent => ", every event",
            crate::plugin::Delivery::Coalesced => ", coalesced",
        });
        println!("{line}");
    }
    let limits = &manifest.limits;
    let deadline = limits
        .call_deadline
        .map(crate::units::duration::format)
        .unwrap_or_else(|| "default".into());
    let memory = limits
        .memory_bytes
        .map(|b| format!("{b} bytes"))
        .unwrap_or_else(|| "default".into());
    println!("  asks limits    call deadline {deadline}, memory {memory}");
    if manifest.capabilities.is_empty() {
        println!("  capabilities   none");
    } else {
        println!("  capabilities   {}", manifest.capabilities.join(", "));
    }
    for rule in &manifest.writes {
        let verbs: Vec<&str> = rule.verbs.iter().map(|v| v.as_str()).collect();
        let namespaces: Vec<&str> = rule.namespaces.iter().map(String::as_str).collect();
        println!(
            "  writes         {} {} in {}",
            verbs.join(","),
            rule.resource_name(),
            namespaces.join(",")
        );
    }
    for read in &report.reads {
        println!("  reads          {read}");
    }
    for metric in &manifest.metrics {
        let labels = if metric.label_names.is_empty() {
            String::new()
        } else {
            format!(" by {}", metric.label_names.join(","))
        };
        println!(
            "  metric         {} {}{labels}: {}",
            crate::capability::metrics::family_name(&manifest.name, &metric.name, metric.kind),
            metric.kind.as_str(),
            metric.help
        );
    }
    for index in &manifest.indexes {
        println!(
            "  index          {} of {} by {}",
            index.name, index.kind, index.by
        );
    }
}

fn replay(args: ReplayArgs) -> ExitCode {
    let config = match args.config.as_deref().map(read_config).transpose() {
        Ok(config) => config,
        Err(message) => return fail(message),
    };
    let (engine, bytes) = match (engine(EngineSettings::default()), read(&args.file)) {
        (Ok(engine), Ok(bytes)) => (engine, bytes),
        (Err(code), _) | (_, Err(code)) => return code,
    };
    let text = match std::fs::read_to_string(&args.events) {
        Ok(text) => text,
        Err(e) => return fail(format_args!("{}: cannot read: {e}", args.events.display())),
    };
    let events = match parse_events(&text) {
        Ok(events) => events,
        Err(err) => return fail(format_args!("{}: {err}", args.events.display())),
    };
    let script = match args.responses.as_deref().map(read_responses).transpose() {
        Ok(script) => script.unwrap_or_default(),
        Err(message) => return fail(message),
    };
    let api = Arc::new(ReplayApi::new(script));
    let logs = MemorySink::default();
    let options = LoadOptions {
        config,
        sink: Arc::new(logs.clone()),
        // Offline, the plugin may do all it declares (nothing leaves the
        // host), unthrottled.
        grants: Grants {
            rate_limit: RateLimit {
                qps: 1e9,
                burst: u32::MAX,
            },
            ..Grants::all_declared()
        },
        // Outbound HTTP is recorded and answered offline, never sent.
        access: Some(ClusterAccess {
            offline_http: Some(api.clone()),
            ..ClusterAccess::new(api.clone())
        }),
        ..LoadOptions::default()
    };
    let cache = args.cache.open(&engine);
    let plugin = match LoadedPlugin::load_cached(&engine, cache.as_ref(), &bytes, options) {
        Ok((plugin, outcome)) => {
            eprintln!(
                "{}: {}",
                args.file.display(),
                match outcome {
                    CompileOutcome::CacheHit => "compiled artifact from the cache".to_owned(),
                    compiled => format!("compiled in {} ms", compiled.compile_time().as_millis()),
                }
            );
            plugin
        }
        Err(err) => return fail(format_args!("{}: {err}", args.file.display())),
    };
    let name = plugin.name().to_owned();
    for line in logs.take() {
        println!("  [{}] {} {}", name, line.level.as_str(), line.message);
    }
    let mut replayer = match Replayer::new(plugin, logs) {
        Ok(replayer) => replayer,
        Err(err) => return fail(format_args!("{}: {err}", args.file.display())),
    };
    replayer.record_intents(api);
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
        if matches!(outcome.result, DeliveryResult::Failed(_)) && !args.keep_going {
            println!("stopped at the first failure (use --keep-going to deliver every event)");
            println!(
                "summary: {} events, {ok} ok, {failed} failed, {skipped} skipped",
                index + 1
            );
            return ExitCode::from(1);
        }
    }
    println!(
        "summary: {} events, {ok} ok, {failed} failed, {skipped} skipped",
        events.len()
    );
    ExitCode::SUCCESS
}

fn rbac(args: RbacArgs) -> ExitCode {
    let manifests = match manifests_of(&args.files) {
        Ok(manifests) => manifests,
        Err(code) => return code,
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(err) => return fail(format_args!("cannot start the async runtime: {err}")),
    };
    let role = runtime.block_on(async {
        let resolver = kind_resolver(args.kubeconfig.as_deref(), args.context.as_deref()).await?;
        let resources = crate::rbac::watched_resources(&manifests, &resolver)
            .await
            .map_err(|e| e.to_string())?;
        let writes = crate::rbac::write_verbs(&manifests, &resolver)
            .await
            .map_err(|e| e.to_string())?;
        Ok::<_, String>(crate::rbac::cluster_role(&args.name, &resources, &writes))
    });
    let role = match role {
        Ok(role) => role,
        Err(message) => return fail(message),
    };
    let plugins: Vec<&str> = manifests.iter().map(|m| m.name.as_str()).collect();
    println!(
        "# Least-privilege ClusterRole for the plugins {}, generated by `herald plugin rbac`.",
        plugins.join(", ")
    );
    if manifests.iter().any(|m| !m.writes.is_empty()) {
        println!(
            "# Write verbs are those the plugins declare (the operator's grants must cover them); \
             Herald also checks each call's namespace against the declared rules."
        );
    }
    println!(
        "# The role lets Herald read what every plugin reads; Herald lets each plugin read only \
         what its grant (plugins.<name>.grants.reads) or the host's default (reads) allows. \
         Under the default read policy:"
    );
    for manifest in &manifests {
        for read in manifest.read_views(&Reads::default()) {
            println!("#   {}: {read}", manifest.name);
        }
    }
    print!(
        "{}",
        serde_yaml::to_string(&role).expect("a ClusterRole serializes")
    );
    ExitCode::SUCCESS
}

/// Reads `--config`: JSON text, or `@FILE` holding JSON or YAML; returns JSON text.
fn read_config(arg: &str) -> Result<String, String> {
    let Some(path) = arg.strip_prefix('@') else {
        serde_json::from_str::<serde_json::Value>(arg)
            .map_err(|e| format!("--config is not valid JSON: {e}"))?;
        return Ok(arg.to_owned());
    };
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: cannot read: {e}"))?;
    let value: serde_json::Value =
        serde_yaml::from_str(&text).map_err(|e| format!("{path}: not valid JSON or YAML: {e}"))?;
    Ok(value.to_string())
}

/// Reads and parses a `--responses` file.
fn read_responses(path: &Path) -> Result<Vec<crate::replay::ScriptedResponse>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    parse_responses(&text).map_err(|e| format!("{}: {e}", path.display()))
}
