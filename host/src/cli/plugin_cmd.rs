//! `herald plugin check`, `herald plugin replay` and `herald plugin rbac`.

use super::fail;
use super::plugin_files::{CacheArgs, engine, kind_resolver, manifests_of, read};
use crate::capability::Grants;
use crate::capability::reads::{ReadView, Reads};
use crate::plugin::{CompileOutcome, EngineSettings, LoadOptions, LoadedPlugin, Manifest};
use clap::{Args, Subcommand, ValueEnum};
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// Plugin file commands.
#[derive(Debug, Subcommand)]
pub enum PluginCommand {
    /// Validate a plugin component (world and version) and print its manifest.
    Check(CheckArgs),
    /// Feed recorded events from a file to a plugin and print each result and
    /// everything the plugin logged.
    Replay(super::plugin_replay::ReplayArgs),
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
    /// The daemon's configuration file: each plugin is read with the
    /// configuration its entry gives it (`plugins.<name>.config`), as the
    /// daemon will load it.
    #[arg(long)]
    pub config: Option<PathBuf>,
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
        PluginCommand::Replay(args) => super::plugin_replay::run(args),
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

fn rbac(args: RbacArgs) -> ExitCode {
    let manifests = match manifests_of(&args.files, args.config.as_deref()) {
        Ok(manifests) => manifests,
        Err(code) => return code,
    };
    let config = match args.config.as_deref().map(crate::config::Config::load) {
        Some(Err(err)) => return fail(err),
        Some(Ok(config)) => Some(config),
        None => None,
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(err) => return fail(format_args!("cannot start the async runtime: {err}")),
    };
    let resolver = match runtime.block_on(kind_resolver(
        args.kubeconfig.as_deref(),
        args.context.as_deref(),
    )) {
        Ok(resolver) => resolver,
        Err(err) => return fail(err),
    };
    let per_cluster = config
        .as_ref()
        .map(|config| clusters_of_plugins(config, &manifests))
        .unwrap_or_default();
    if per_cluster.len() <= 1 {
        return print_role(&runtime, &args.name, &manifests, &resolver, None);
    }
    for (at, (cluster, plugins)) in per_cluster.iter().enumerate() {
        if at > 0 {
            println!("---");
        }
        let running: Vec<Manifest> = manifests
            .iter()
            .filter(|m| plugins.contains(&m.name))
            .cloned()
            .collect();
        let code = print_role(&runtime, &args.name, &running, &resolver, Some(cluster));
        if code != ExitCode::SUCCESS {
            return code;
        }
    }
    ExitCode::SUCCESS
}

/// For each cluster `config` names (the default one first, then
/// `clusters[]`, then those `plugins.<name>.clusters` names for a provider
/// to add), the plugins of `manifests` that run there; clusters no plugin
/// runs on are left out.
fn clusters_of_plugins(
    config: &crate::config::Config,
    manifests: &[Manifest],
) -> Vec<(String, Vec<String>)> {
    let default_name = config.default_cluster_name().to_owned();
    let mut names = config.configured_cluster_names();
    let named = config
        .plugins
        .values()
        .flat_map(|p| p.clusters.0.iter().cloned())
        .filter(|n| n != crate::cluster::ALL_CLUSTERS);
    for name in named {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
        .into_iter()
        .filter_map(|name| {
            let cluster = (name != default_name)
                .then(|| crate::cluster::ClusterName::parse("name", &name).ok())
                .flatten();
            let plugins: Vec<String> = manifests
                .iter()
                .filter(|m| {
                    let wanted = config
                        .plugins
                        .get(&m.name)
                        .map(|p| p.clusters.clone())
                        .unwrap_or_default();
                    wanted.covers(cluster.as_ref(), &default_name)
                })
                .map(|m| m.name.clone())
                .collect();
            (!plugins.is_empty()).then_some((name, plugins))
        })
        .collect()
}

/// Prints the ClusterRole `name` for `manifests`, with the comments that
/// say what it covers; `cluster` names the cluster it is for when the
/// plugins run on several.
fn print_role(
    runtime: &tokio::runtime::Runtime,
    name: &str,
    manifests: &[Manifest],
    resolver: &crate::discovery::KindResolver,
    cluster: Option<&str>,
) -> ExitCode {
    let role = runtime.block_on(async {
        let resources = crate::rbac::watched_resources(manifests, resolver)
            .await
            .map_err(|e| e.to_string())?;
        let writes = crate::rbac::write_verbs(manifests, resolver)
            .await
            .map_err(|e| e.to_string())?;
        Ok::<_, String>(crate::rbac::cluster_role(name, &resources, &writes))
    });
    let role = match role {
        Ok(role) => role,
        Err(message) => return fail(message),
    };
    let plugins: Vec<&str> = manifests.iter().map(|m| m.name.as_str()).collect();
    match cluster {
        Some(cluster) => println!(
            "# Least-privilege ClusterRole for cluster {cluster}, where the plugins {} run \
             (plugins.<name>.clusters), generated by `herald plugin rbac`: apply it there.",
            plugins.join(", ")
        ),
        None => println!(
            "# Least-privilege ClusterRole for the plugins {}, generated by `herald plugin rbac`.",
            plugins.join(", ")
        ),
    }
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
    for manifest in manifests {
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
