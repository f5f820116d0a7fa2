//! `herald demo`: Herald end to end on one machine, no cluster needed: the
//! embedded API server seeded with sample objects, the example plugins built
//! from source, a churn generator, and plugin output on stdout.

pub mod churn;
pub mod webhook;

use crate::capability::log::{LogLevel, LogLine, LogSink};
use crate::config::Config;
use crate::ops;
use crate::service::Service;
use crate::service::{exit_on_second_signal, wait_for_signal};
use crate::source::Source;
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

/// The example plugins the demo builds and loads.
pub const EXAMPLE_PLUGINS: &[&str] = &[
    "pod-lifecycle",
    "image-policy",
    "rollout-watch",
    "namespace-defaults",
    "crashloop-alert",
    "config-mirror",
    "fleet-fanout",
];

/// The demo's clusters: the seeded embedded API server (the default
/// cluster) and a second, empty one.
pub const DEMO_CLUSTERS: [&str; 2] = ["east", "west"];

/// The example plugins written with the Python, JavaScript and Go SDKs,
/// built when their toolchains are installed: (name, language, what
/// installs it).
pub const SDK_EXAMPLES: &[(&str, &str, &str)] = &[
    (
        "label-audit",
        "Python",
        "run `python3 -m pip install -r sdk/python/requirements-build.txt` at the repository root",
    ),
    (
        "configmap-diff",
        "JavaScript",
        "run `npm ci` at the repository root",
    ),
    (
        "go-pod-phases",
        "Go",
        "install Go 1.24 or later (https://go.dev/dl/) and put `go` on the PATH",
    ),
    (
        "go-reloader",
        "Go",
        "install Go 1.24 or later (https://go.dev/dl/) and put `go` on the PATH",
    ),
];

/// Options of the demo.
#[derive(Debug, Clone)]
pub struct DemoOptions {
    /// Stop after this long (default: run until Ctrl-C).
    pub duration: Option<Duration>,
    /// Use the plugins in this directory instead of building the examples.
    pub plugins: Option<PathBuf>,
    /// Seed manifests: directories or files.
    pub seed: Vec<PathBuf>,
    /// Endpoints address.
    pub listen: SocketAddr,
    /// Time between two churn changes.
    pub churn_interval: Duration,
}

/// The repository root, when running from a checkout.
pub fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Prints plugin log lines for people: `plugin │ message`.
#[derive(Debug, Default)]
pub struct DemoSink;

impl LogSink for DemoSink {
    fn write(&self, line: &LogLine<'_>) {
        let marker = match line.level {
            LogLevel::Warn => "WARN ",
            LogLevel::Error => "ERROR ",
            _ => "",
        };
        match line.cluster {
            Some(cluster) => say(&format!(
                "{:>14} │ {marker}[{cluster}] {}",
                line.plugin, line.message
            )),
            None => say(&format!("{:>14} │ {marker}{}", line.plugin, line.message)),
        }
    }
}

/// Prints `text` for the person watching. When they have gone (`herald demo
/// | head` ended), the demo ends quietly, as `cat` does: it is a server
/// too, so it ignores `SIGPIPE` (a peer hanging up on a socket must fail
/// that write, not end the process) and ends here instead.
pub(crate) fn say(text: &str) {
    let mut out = std::io::stdout().lock();
    if let Err(error) = writeln!(out, "{text}").and_then(|()| out.flush())
        && error.kind() == std::io::ErrorKind::BrokenPipe
    {
        std::process::exit(0);
    }
}

/// Why the demo could not start; each variant names the step, and the
/// file, directory or object at fault.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    /// The example plugins' workspace (held here) is missing.
    #[error(
        "{} not found: run the demo from a Herald checkout, or pass --plugins DIR",
        .0.display()
    )]
    NotACheckout(PathBuf),
    /// cargo could not be run.
    #[error("cannot run cargo: {0}")]
    Cargo(#[source] std::io::Error),
    /// cargo failed to build the example plugins.
    #[error(
        "building the example plugins failed (is the wasm32-wasip2 target installed? `rustup \
         target add wasm32-wasip2`)"
    )]
    BuildFailed,
    /// A directory (held here) could not be made.
    #[error("{}: {reason}", path.display())]
    Directory {
        /// The directory.
        path: PathBuf,
        /// Why.
        #[source]
        reason: std::io::Error,
    },
    /// A built plugin (held here) could not be copied into the plugin directory.
    #[error("copying {}: {reason}", from.display())]
    Copy {
        /// The built file.
        from: PathBuf,
        /// Why.
        #[source]
        reason: std::io::Error,
    },
    /// The task building the examples did not finish.
    #[error("{0}")]
    Builder(#[from] tokio::task::JoinError),
    /// The embedded API server could not be started or reached.
    #[error("{0}")]
    Cluster(#[from] crate::source::SourceError),
    /// The webhook receiver could not start.
    #[error("starting the demo's webhook receiver: {0}")]
    Receiver(#[source] std::io::Error),
    /// `crashloop-alert`'s HTTP grant does not parse.
    #[error("the demo's HTTP grant: {0}")]
    HttpGrant(#[source] serde_json::Error),
    /// No address to listen on.
    #[error("{0}")]
    Bind(#[from] ops::BindError),
    /// The daemon could not start.
    #[error("{0}")]
    Service(#[from] crate::service::ServiceError),
    /// The webhook configurations could not be made.
    #[error("the demo's webhook configurations: {0}")]
    Configurations(#[from] crate::admission::configuration::ConfigurationError),
    /// A webhook configuration (its kind held here) could not be created.
    #[error("creating the {kind}: {reason}")]
    CreateWebhooks {
        /// `ValidatingWebhookConfiguration` or `MutatingWebhookConfiguration`.
        kind: &'static str,
        /// What the API server said.
        #[source]
        reason: kube::Error,
    },
}

/// Why an SDK example was left out of the demo (printed in a note).
#[derive(Debug, thiserror::Error)]
enum ExampleError {
    /// No build command is known for the example (held here).
    #[error("no build command for {0}")]
    NoBuildCommand(String),
    /// Its build command could not be run.
    #[error("cannot run its build command ({0})")]
    CannotRun(#[source] std::io::Error),
    /// Its build failed; the last line it printed is held here.
    #[error("its build failed ({0})")]
    Failed(String),
    /// The Go toolchain (its program held here) is missing.
    #[error("`{0}` is not installed")]
    NoGo(String),
}

/// Builds the example plugins with cargo and copies them into `dir`.
pub fn build_examples(dir: &Path) -> Result<(), DemoError> {
    let root = repository_root();
    let plugins = root.join("plugins");
    if !plugins.join("Cargo.toml").exists() {
        return Err(DemoError::NotACheckout(plugins));
    }
    let target = root.join("target").join("wasm");
    eprintln!(
        "building the example plugins ({}) for wasm32-wasip2…",
        EXAMPLE_PLUGINS.join(", ")
    );
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .current_dir(&plugins)
        .args([
            "build",
            "--release",
            "--target",
            "wasm32-wasip2",
            "--target-dir",
        ])
        .arg(&target);
    for name in EXAMPLE_PLUGINS {
        command.args(["-p", name]);
    }
    let status = command.status().map_err(DemoError::Cargo)?;
    if !status.success() {
        return Err(DemoError::BuildFailed);
    }
    std::fs::create_dir_all(dir).map_err(|reason| DemoError::Directory {
        path: dir.to_owned(),
        reason,
    })?;
    for name in EXAMPLE_PLUGINS {
        let file = format!("{}.wasm", name.replace('-', "_"));
        let from = target.join("wasm32-wasip2/release").join(&file);
        let to = dir.join(format!("{name}.wasm"));
        if let Err(reason) = std::fs::copy(&from, &to) {
            return Err(DemoError::Copy { from, reason });
        }
    }
    for (name, language, install) in SDK_EXAMPLES {
        eprintln!("building the {language} example plugin ({name})…");
        if let Err(reason) = build_sdk_example(&root, name, &dir.join(format!("{name}.wasm"))) {
            eprintln!("{}", without(name, language, &reason.to_string(), install));
        }
    }
    Ok(())
}

/// The note printed when an SDK example is left out of the demo.
fn without(name: &str, language: &str, reason: &str, install: &str) -> String {
    format!("note: the demo runs without {name} ({language}): {reason}; to include it, {install}.")
}

/// Builds one of [`SDK_EXAMPLES`] into `out` with its SDK's build command
/// (for Go, what `herald plugin build` runs).
fn build_sdk_example(root: &Path, name: &str, out: &Path) -> Result<(), ExampleError> {
    if name.starts_with("go-") {
        let program = crate::build::go::program();
        return build_go_example(&program, &root.join("plugins").join(name), out);
    }
    let mut command = match name {
        "label-audit" => {
            let mut python = Command::new("python3");
            python
                .env("PYTHONPATH", root.join("sdk/python/src"))
                .env("PYTHONDONTWRITEBYTECODE", "1")
                .args(["-m", "herald_sdk", "build"])
                .arg(root.join("plugins/label-audit/label_audit.py"));
            python
        }
        "configmap-diff" => {
            let mut node = Command::new(root.join("node_modules/.bin/herald-build"));
            node.arg(root.join("plugins/configmap-diff/src/plugin.js"));
            node
        }
        other => return Err(ExampleError::NoBuildCommand(other.to_owned())),
    };
    let output = command
        .arg("-o")
        .arg(out)
        .current_dir(root)
        .output()
        .map_err(ExampleError::CannotRun)?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let last = stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    Err(ExampleError::Failed(last.trim().to_owned()))
}

/// Builds the Go example with `herald plugin build`'s code: `go build`, then
/// componentized here. Go missing, or its build failing, is said in one line.
fn build_go_example(program: &str, dir: &Path, out: &Path) -> Result<(), ExampleError> {
    use crate::build::{BuildError, Options, build_go_with, go::GoError};
    match build_go_with(program, dir, out, Options::default()) {
        Ok(_) => Ok(()),
        Err(BuildError::Go(GoError::Missing { program, .. })) => Err(ExampleError::NoGo(program)),
        Err(BuildError::Go(GoError::Build { output, .. })) => Err(ExampleError::Failed(
            output.lines().last().unwrap_or_default().trim().to_owned(),
        )),
        Err(other) => Err(ExampleError::Failed(other.to_string())),
    }
}

/// The operator's settings of the demo's plugins: `image-policy` enforcing
/// its policy in dry-run (every label and Event it would write is sent with
/// `dryRun=All` and logged with what it would change) while refusing bad
/// images at the door for real (`admission: enforce`), `go-pod-phases`
/// granted its Warning Events about restarting containers, `namespace-defaults`
/// granted its writes for real, `label-audit` requiring the recommended
/// `app.kubernetes.io` labels the sample objects use, `namespace-defaults`
/// filling in a `cost-center` label on each Namespace created, and the two
/// controllers granted what they reconcile: `config-mirror` its copies and
/// its ConfigMirrors' finalizer and status, `go-reloader` the Secrets it
/// follows and its applies to Deployments.
pub fn demo_plugin_settings() -> Vec<(String, crate::reload::PluginConfig)> {
    use crate::capability::Mode;
    use crate::reload::{GrantConfig, PluginConfig};
    let rule = |verbs: serde_json::Value, group: &str, kind: &str| {
        serde_json::from_value(serde_json::json!({
            "verbs": verbs, "group": group, "kind": kind, "namespaces": ["*"],
        }))
        .expect("a write rule")
    };
    vec![
        (
            "image-policy".into(),
            PluginConfig {
                config: Some(serde_json::json!({
                    "allowedRegistries": ["docker.io", "ghcr.io", "quay.io"],
                    "enforce": true,
                })),
                mode: Some(Mode::DryRun),
                admission: Some(crate::capability::AdmissionMode::Enforce),
                grants: GrantConfig {
                    events: Some(Default::default()),
                    writes: vec![rule(serde_json::json!(["patch"]), "", "Pod")],
                    ..Default::default()
                },
                ..Default::default()
            },
        ),
        (
            "go-pod-phases".into(),
            PluginConfig {
                config: Some(serde_json::json!({"restartWarning": 3, "pendingRecheck": "30s"})),
                grants: GrantConfig {
                    events: Some(Default::default()),
                    ..Default::default()
                },
                ..Default::default()
            },
        ),
        (
            "config-mirror".into(),
            PluginConfig {
                grants: GrantConfig {
                    writes: vec![
                        rule(serde_json::json!(["apply", "delete"]), "", "ConfigMap"),
                        rule(
                            serde_json::json!(["patch"]),
                            "herald.example.com",
                            "ConfigMirror",
                        ),
                        serde_json::from_value(serde_json::json!({
                            "verbs": ["apply"], "group": "herald.example.com",
                            "kind": "ConfigMirror", "subresource": "status", "namespaces": ["*"],
                        }))
                        .expect("a write rule"),
                    ],
                    ..Default::default()
                },
                ..Default::default()
            },
        ),
        (
            "go-reloader".into(),
            PluginConfig {
                grants: GrantConfig {
                    reads: vec![
                        serde_json::from_value(serde_json::json!({
                            "group": "", "kind": "Secret", "namespaces": ["*"],
                        }))
                        .expect("a read rule"),
                    ],
                    writes: vec![rule(serde_json::json!(["apply"]), "apps", "Deployment")],
                    ..Default::default()
                },
                ..Default::default()
            },
        ),
        (
            "fleet-fanout".into(),
            PluginConfig {
                clusters: crate::cluster::Clusters(["*".to_owned()].into()),
                grants: GrantConfig {
                    reads: vec![
                        serde_json::from_value(serde_json::json!({
                            "kind": "ConfigMap", "namespaces": ["*"], "clusters": ["west"],
                        }))
                        .expect("a read rule"),
                    ],
                    writes: vec![
                        serde_json::from_value(serde_json::json!({
                            "verbs": ["get", "apply", "delete"], "kind": "ConfigMap",
                            "namespaces": ["*"], "clusters": ["*"],
                        }))
                        .expect("a write rule"),
                    ],
                    ..Default::default()
                },
                ..Default::default()
            },
        ),
        (
            "label-audit".into(),
            PluginConfig {
                config: Some(serde_json::json!({
                    "required": ["app.kubernetes.io/name", "app.kubernetes.io/part-of"],
                })),
                ..Default::default()
            },
        ),
        (
            "namespace-defaults".into(),
            PluginConfig {
                config: Some(serde_json::json!({
                    "defaultLabels": {"cost-center": "unassigned"},
                })),
                grants: GrantConfig {
                    writes: vec![
                        rule(
                            serde_json::json!(["get", "apply"]),
                            "networking.k8s.io",
                            "NetworkPolicy",
                        ),
                        rule(serde_json::json!(["get", "apply"]), "", "ResourceQuota"),
                    ],
                    ..Default::default()
                },
                ..Default::default()
            },
        ),
    ]
}

/// `crashloop-alert`'s settings: alerts POSTed to the demo's `webhook`
/// (its origin granted, nothing else), Warning Events on the Pod.
fn crashloop_alert_settings(
    webhook: &webhook::WebhookReceiver,
) -> Result<(String, crate::reload::PluginConfig), DemoError> {
    use crate::reload::{GrantConfig, PluginConfig};
    let http = serde_json::from_value(serde_json::json!({"allowedOrigins": [webhook.origin()]}))
        .map_err(DemoError::HttpGrant)?;
    Ok((
        "crashloop-alert".into(),
        PluginConfig {
            config: Some(serde_json::json!({
                "webhookUrl": webhook.url(),
                "restarts": 3,
                "windowMinutes": 5,
            })),
            grants: GrantConfig {
                events: Some(Default::default()),
                http: Some(http),
                ..Default::default()
            },
            ..Default::default()
        },
    ))
}

/// Gives the embedded API server the webhook configurations of the plugins
/// that admit, calling the daemon's admission server on loopback (every
/// namespace but `kube-system`).
async fn install_webhooks(service: &Service, client: &kube::Client) -> Result<(), DemoError> {
    use crate::admission::configuration::{Endpoint, Target, configurations};
    use k8s_openapi::api::admissionregistration::v1::{
        MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
    };
    use kube::api::{Api, PostParams};
    let Some(address) = service.admission_address() else {
        return Ok(());
    };
    let plugins = service.daemon().plugins();
    let manifests: Vec<&crate::plugin::Manifest> = plugins.iter().map(|p| p.manifest()).collect();
    let target = Target {
        name: "herald".into(),
        endpoint: Endpoint::Url(format!("https://127.0.0.1:{}", address.port())),
        ca_bundle: service.admission_ca().map(|ca| ca.as_bytes().to_vec()),
        excluded_namespaces: vec!["kube-system".into()],
    };
    let (validating, mutating) = configurations(
        &manifests,
        &target,
        &crate::discovery::KindResolver::Builtin,
    )
    .await?;
    let post = PostParams::default();
    if validating.webhooks.as_ref().is_some_and(|w| !w.is_empty()) {
        Api::<ValidatingWebhookConfiguration>::all(client.clone())
            .create(&post, &validating)
            .await
            .map_err(|reason| DemoError::CreateWebhooks {
                kind: "ValidatingWebhookConfiguration",
                reason,
            })?;
    }
    if mutating.webhooks.as_ref().is_some_and(|w| !w.is_empty()) {
        Api::<MutatingWebhookConfiguration>::all(client.clone())
            .create(&post, &mutating)
            .await
            .map_err(|reason| DemoError::CreateWebhooks {
                kind: "MutatingWebhookConfiguration",
                reason,
            })?;
    }
    Ok(())
}

/// Gives fleet-fanout something to copy: a ConfigMap labelled for fan-out in
/// each cluster (east's in the seeded `shop`, west's in a `shop` made
/// here). A failure is said and the demo goes on.
async fn fan_out_examples(east: &kube::Client, west: &kube::Client) {
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
    use kube::api::{Api, PostParams};
    let post = PostParams::default();
    let shop: Namespace = serde_json::from_value(serde_json::json!({"metadata": {"name": "shop"}}))
        .expect("a Namespace");
    if let Err(error) = Api::<Namespace>::all(west.clone())
        .create(&post, &shop)
        .await
    {
        eprintln!("note: creating namespace shop in west: {error}");
    }
    for (client, cluster, name) in [
        (east, "east", "fleet-settings"),
        (west, "west", "fleet-routes"),
    ] {
        let config_map: ConfigMap = serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "labels": {"herald.dev/fan-out": "true"}},
            "data": {"origin": cluster},
        }))
        .expect("a ConfigMap");
        if let Err(error) = Api::<ConfigMap>::namespaced(client.clone(), "shop")
            .create(&post, &config_map)
            .await
        {
            eprintln!("note: creating shop/{name} in {cluster}: {error}");
        }
    }
}

/// Pins each configured plugin to the build in `dir` (`<name>.wasm`), as an
/// operator pins what they grant authority to: the demo's plugins that act
/// load only as these builds.
fn pin_builds(config: &mut Config, dir: &Path) {
    for (name, settings) in config.plugins.iter_mut() {
        if let Ok(bytes) = std::fs::read(dir.join(format!("{name}.wasm"))) {
            settings.sha256 = vec![crate::plugin::digest(&bytes)];
        }
    }
}

/// Runs the demo until Ctrl-C or the duration ends.
pub async fn run(options: DemoOptions) -> Result<(), DemoError> {
    let work = crate::scratch::ScratchDir::new("demo").map_err(|reason| DemoError::Directory {
        path: std::env::temp_dir(),
        reason,
    })?;
    let plugin_dir = match &options.plugins {
        Some(dir) => dir.clone(),
        None => {
            let dir = work.join("plugins.d");
            let build_dir = dir.clone();
            tokio::task::spawn_blocking(move || build_examples(&build_dir)).await??;
            dir
        }
    };
    let kubeconfig = work.join("kubeconfig");
    let source = Source::Embedded {
        seed: options.seed.clone(),
        kubeconfig_out: Some(kubeconfig.clone()),
    };
    let connection = source.connect().await?;
    let west_kubeconfig = work.join("kubeconfig-west");
    let west = Source::Embedded {
        seed: Vec::new(),
        kubeconfig_out: Some(west_kubeconfig.clone()),
    }
    .connect()
    .await?;
    let [east_name, west_name] = DEMO_CLUSTERS
        .map(|name| crate::cluster::ClusterName::parse("name", name).expect("a cluster name"));

    let mut config = Config {
        plugin_dir: plugin_dir.clone(),
        listen: options.listen,
        // The embedded API server calls the plugins that admit over TLS
        // on loopback, trusting the development certificate's CA.
        admission: crate::admission::AdmissionConfig {
            enabled: true,
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            ..Default::default()
        },
        ..Config::default()
    };
    config.source.name = Some(east_name);
    config.plugins.extend(demo_plugin_settings());
    let webhook = webhook::WebhookReceiver::start()
        .await
        .map_err(DemoError::Receiver)?;
    config.plugins.extend([crashloop_alert_settings(&webhook)?]);
    pin_builds(&mut config, &plugin_dir);
    let listener = match ops::bind(options.listen).await {
        Ok(listener) => listener,
        Err(_) => ops::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?,
    };
    let compiler = crate::service::daemon_compiler(&config);
    let fleet = crate::source::FleetClients {
        home: connection.clients(),
        others: vec![(west_name, west.clients())],
    };
    let service = Service::start(
        Arc::new(config),
        fleet,
        Arc::new(DemoSink),
        listener,
        compiler,
    )
    .await?;
    let daemon = service.daemon().clone();
    let address = service.address();
    install_webhooks(&service, &connection.client).await?;
    for (file, status) in service.directory().files().snapshot() {
        if let Some(error) = status.last_error {
            eprintln!("plugin not loaded: {}: {error}", file.display());
        }
    }

    let banner = [
        format!(
            "Herald demo: {} plugin(s) running against the embedded API server ({}).",
            daemon.names().len(),
            connection.description
        ),
        format!("  plugins       {}", daemon.names().join(", ")),
        format!("  plugin dir    {}", plugin_dir.display()),
        format!(
            "  kubectl       kubectl --kubeconfig {} get pods -A",
            kubeconfig.display()
        ),
        format!(
            "  try           kubectl --kubeconfig {} delete pod -n shop <name>",
            kubeconfig.display()
        ),
        format!(
            "  acting        kubectl --kubeconfig {} create namespace team-a; then get netpol,quota -A \
         (namespace-defaults applies them; delete one and it comes back)",
            kubeconfig.display()
        ),
        "  dry-run       image-policy labels and warns about bad images in dry-run: see the \
         herald::audit \"would change\" lines; `kubectl get events -A` after setting \
         plugins.image-policy.mode: enforce"
            .to_owned(),
        format!(
            "  admission     kubectl --kubeconfig {} run bad --image=evil.example.com/x:1 -n shop \
         is refused with image-policy's message; kubectl create namespace team-b, then get \
         namespace team-b --show-labels: namespace-defaults filled in cost-center=unassigned",
            kubeconfig.display()
        ),
        format!(
            "  existing      image-policy judges the Pods already there with the same policy: \
         their violations under \"scan\" in http://{address}/plugins and on the dashboard"
        ),
        format!(
            "  outbound      crashloop-alert posts to the webhook receiver at {} (granted that \
         origin alone) when shop/worker-crashy restarts 3 times: `webhook │` lines; the \
         receiver refuses the first alert and the workqueue retries that Pod alone",
            webhook.url()
        ),
        format!(
            "  controllers   config-mirror copies shop/web-config into payments (kubectl get \
         configmirrors -n shop -o yaml: its Ready condition); go-reloader rolls shop/web once per \
         change of web-config's data, which the churn edits now and then: `kubectl --kubeconfig {} \
         edit configmap web-config -n shop` does too",
            kubeconfig.display()
        ),
        format!(
            "  clusters      east (the seeded server) and west (a second one: kubectl --kubeconfig \
         {}): fleet-fanout copies each ConfigMap labelled herald.dev/fan-out=true into the other \
         cluster, its lines marked [east] or [west]; the demo labels shop/fleet-settings in east \
         and shop/fleet-routes in west",
            west_kubeconfig.display()
        ),
        format!("  dashboard     http://{address}/"),
        format!("  endpoints     http://{address}/metrics  /readyz  /plugins"),
        "  stop          Ctrl-C".to_owned(),
    ];
    say(&format!("\n{}\n", banner.join("\n")));

    fan_out_examples(&connection.client, &west.client).await;
    let churn =
        churn::Churn::spawn_on_example_cluster(connection.client.clone(), options.churn_interval);
    let crash_loop = churn::spawn_crash_loop(
        connection.client.clone(),
        "shop",
        "worker-crashy",
        Duration::from_secs(3),
    );
    // Only a stop asked for by a signal is told how to skip the drain: at
    // the end of `--duration` there is nobody to send a second one.
    let signalled = match options.duration {
        Some(duration) => {
            tokio::select! {
                _ = tokio::time::sleep(duration) => false,
                _ = wait_for_signal() => true,
            }
        }
        None => {
            wait_for_signal().await;
            true
        }
    };
    churn.abort();
    crash_loop.abort();
    if signalled {
        exit_on_second_signal();
    }
    service.shutdown(Duration::from_secs(5)).await;
    drop(connection);
    drop(west);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_go_the_demo_says_it_leaves_the_go_example_out_and_what_installs_go() {
        let (name, language, install) = SDK_EXAMPLES[2];
        assert_eq!(name, "go-pod-phases");
        let scratch = crate::scratch::ScratchDir::new("demo-go").unwrap();
        let out = scratch.join("go-pod-phases.wasm");
        let reason = build_go_example(
            "/nonexistent/herald-demo/go",
            &repository_root().join("plugins/go-pod-phases"),
            &out,
        )
        .unwrap_err()
        .to_string();
        assert_eq!(reason, "`/nonexistent/herald-demo/go` is not installed");
        assert!(!out.exists());
        assert_eq!(
            without(name, language, &reason, install),
            "note: the demo runs without go-pod-phases (Go): `/nonexistent/herald-demo/go` is \
             not installed; to include it, install Go 1.24 or later (https://go.dev/dl/) and \
             put `go` on the PATH."
        );
    }
}
