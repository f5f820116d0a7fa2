//! `herald plugin webhooks`: the webhook configurations through which the
//! API server sends plugins the writes they admit, made from their
//! manifests ([`crate::admission::configuration`]).

use super::fail;
use super::plugin_files::{kind_resolver, manifests_of};
use crate::admission::configuration::{Endpoint, Target, configurations};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `plugin webhooks`.
#[derive(Debug, Args)]
pub struct WebhooksArgs {
    /// The plugins' `.wasm` component files.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// The daemon's configuration file: each plugin is read with the
    /// configuration its entry gives it (`plugins.<name>.config`), as the
    /// daemon will load it.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Name of both configurations.
    #[arg(long, default_value = "herald")]
    pub name: String,
    /// Herald's Service, `namespace/name:port` (the usual way in a cluster).
    #[arg(long, conflicts_with = "url", default_value = "herald/herald:8443")]
    pub service: String,
    /// Herald's base URL instead of a Service, `https://host:port`.
    #[arg(long)]
    pub url: Option<String>,
    /// The PEM file of the CA that signed Herald's serving certificate
    /// (cert-manager's `ca.crt`, or the development CA the daemon logs);
    /// without it the configurations carry no `caBundle` (cert-manager's CA
    /// injector can fill it in).
    #[arg(long)]
    pub ca_bundle: Option<PathBuf>,
    /// Namespaces never sent to any plugin; by default Herald's own (the
    /// Service's) and `kube-system`, so that Herald never stands between the
    /// cluster and its own repair.
    #[arg(long = "exclude-namespace")]
    pub exclude_namespaces: Vec<String>,
    /// Resolve kinds through this cluster's discovery (needed for custom
    /// resources); without it only built-in Kubernetes kinds are known.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context (with --kubeconfig).
    #[arg(long, requires = "kubeconfig")]
    pub context: Option<String>,
}

/// A `--service` that is not `namespace/name:port`; each variant holds the
/// text at fault.
#[derive(Debug, thiserror::Error)]
enum ServiceFlagError {
    /// Not of the form `namespace/name:port`.
    #[error("--service {0:?}: give namespace/name:port")]
    Shape(String),
    /// The namespace or the name is not a DNS label.
    #[error("--service: the {what} {value:?} is not a DNS label")]
    NotDnsLabel {
        /// `namespace` or `name`.
        what: &'static str,
        /// The value at fault.
        value: String,
    },
}

/// `namespace/name:port`.
fn service(text: &str) -> Result<Endpoint, ServiceFlagError> {
    let refused = || ServiceFlagError::Shape(text.to_owned());
    let (namespace, rest) = text.split_once('/').ok_or_else(refused)?;
    let (name, port) = rest.split_once(':').ok_or_else(refused)?;
    let port: i32 = port.parse().map_err(|_| refused())?;
    for (what, value) in [("namespace", namespace), ("name", name)] {
        if !crate::text::is_dns_label(value) {
            return Err(ServiceFlagError::NotDnsLabel {
                what,
                value: value.to_owned(),
            });
        }
    }
    Ok(Endpoint::Service {
        namespace: namespace.into(),
        name: name.into(),
        port,
    })
}

/// Prints both configurations as one YAML stream.
pub fn run(args: WebhooksArgs) -> ExitCode {
    let manifests = match manifests_of(&args.files, args.config.as_deref()) {
        Ok(manifests) => manifests,
        Err(code) => return code,
    };
    let endpoint = match &args.url {
        Some(url) if url.starts_with("https://") => Endpoint::Url(url.clone()),
        Some(url) => {
            return fail(format_args!(
                "--url {url:?}: the API server calls webhooks over https://"
            ));
        }
        None => match service(&args.service) {
            Ok(endpoint) => endpoint,
            Err(message) => return fail(message),
        },
    };
    let ca_bundle = match &args.ca_bundle {
        Some(path) => match std::fs::read(path) {
            Ok(pem) => Some(pem),
            Err(e) => return fail(format_args!("{}: cannot read: {e}", path.display())),
        },
        None => None,
    };
    let excluded = if args.exclude_namespaces.is_empty() {
        let own = match &endpoint {
            Endpoint::Service { namespace, .. } => Some(namespace.clone()),
            Endpoint::Url(_) => None,
        };
        own.into_iter().chain(["kube-system".to_owned()]).collect()
    } else {
        args.exclude_namespaces.clone()
    };
    let target = Target {
        name: args.name.clone(),
        endpoint,
        ca_bundle,
        excluded_namespaces: excluded,
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(err) => return fail(format_args!("cannot start the async runtime: {err}")),
    };
    let made = runtime.block_on(async {
        let resolver = kind_resolver(args.kubeconfig.as_deref(), args.context.as_deref())
            .await
            .map_err(|e| e.to_string())?;
        let manifests: Vec<&crate::plugin::Manifest> = manifests.iter().collect();
        configurations(&manifests, &target, &resolver)
            .await
            .map_err(|e| e.to_string())
    });
    let (validating, mutating) = match made {
        Ok(made) => made,
        Err(message) => return fail(message),
    };
    let admitting: Vec<&str> = manifests
        .iter()
        .filter(|m| m.admission.is_some())
        .map(|m| m.name.as_str())
        .collect();
    if admitting.is_empty() {
        return fail("none of these plugins declares a webhook: nothing to configure");
    }
    println!(
        "# Webhook configurations for the plugins {}, generated by `herald plugin webhooks`.",
        admitting.join(", ")
    );
    if target.ca_bundle.is_none() {
        println!("# No caBundle: give --ca-bundle, or let cert-manager's CA injector fill it in.");
    }
    let mut out = String::new();
    for document in [
        serde_yaml::to_string(&validating).expect("a configuration serializes"),
        serde_yaml::to_string(&mutating).expect("a configuration serializes"),
    ] {
        out.push_str("---\n");
        out.push_str(&document);
    }
    print!("{out}");
    ExitCode::SUCCESS
}
