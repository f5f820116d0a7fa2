//! Where the cluster comes from: a kubeconfig, in-cluster configuration, or
//! the embedded API server, which is used only when asked for by name
//! (`--embedded`, `source.kind: embedded`, the demo): a daemon whose cluster
//! configuration is missing or broken fails rather than run on a stand-in.

use crate::cluster::ClusterName;
use serde::Deserialize;
use std::path::PathBuf;

/// The cluster to connect to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Source {
    /// A kubeconfig if one is found (`KUBECONFIG`, `~/.kube/config`), else
    /// in-cluster configuration; neither is an error.
    #[default]
    Auto,
    /// This kubeconfig file (and optionally context).
    Kubeconfig {
        /// The file; `None` for the default locations.
        path: Option<PathBuf>,
        /// The context; `None` for the current one.
        context: Option<String>,
    },
    /// The pod's service account.
    InCluster,
    /// The embedded API server, seeded from these directories.
    Embedded {
        /// Directories of YAML manifests to load at start.
        seed: Vec<PathBuf>,
        /// Where to write its kubeconfig, for kubectl.
        kubeconfig_out: Option<PathBuf>,
    },
}

/// A cluster connection, and the embedded server when that is what it is.
pub struct Connection {
    /// The client of informers and the host's own calls (retries 429, 503
    /// and 504 on its own).
    pub client: kube::Client,
    /// The client of plugins' API calls: never retries, so a plugin sees
    /// each refusal and decides.
    pub writer: kube::Client,
    /// What it connects to, for the log.
    pub description: String,
    /// The embedded API server, if one was started (stops when dropped).
    #[cfg(feature = "embedded")]
    pub embedded: Option<herald_apiserver::ApiServer>,
}

impl Connection {
    /// The clients a [`Service`](crate::service::Service) needs.
    pub fn clients(&self) -> Clients {
        Clients {
            client: self.client.clone(),
            writer: self.writer.clone(),
        }
    }
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("description", &self.description)
            .finish()
    }
}

/// The cluster could not be reached or configured.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// A kubeconfig could not be read or used.
    #[error("kubeconfig: {0}")]
    Kubeconfig(String),
    /// In-cluster configuration is missing.
    #[error("in-cluster configuration: {0}")]
    InCluster(String),
    /// No cluster configuration was found, and none was named.
    #[error(
        "no cluster configuration found ({0}): looked for $KUBECONFIG, ~/.kube/config and the \
         in-cluster service account (KUBERNETES_SERVICE_HOST and \
         /var/run/secrets/kubernetes.io/serviceaccount). Choose a source: --kubeconfig FILE \
         [--context NAME], --in-cluster, or --embedded for the development API server \
         (source.kind in the configuration file)"
    )]
    NotFound(String),
    /// The embedded API server did not start.
    #[error("embedded API server: {0}")]
    Embedded(String),
    /// The client could not be built.
    #[error("client: {0}")]
    Client(String),
}

impl Source {
    /// Connects. With [`Source::Auto`], no cluster configuration found is an
    /// error ([`SourceError::NotFound`]): the embedded API server is never
    /// used unless named.
    pub async fn connect(&self) -> Result<Connection, SourceError> {
        match self {
            Source::Auto => match kube::Config::infer().await {
                Ok(config) => {
                    let description = format!(
                        "cluster at {} (inferred from kubeconfig or in-cluster environment)",
                        config.cluster_url
                    );
                    client(config, description)
                }
                Err(err) => Err(SourceError::NotFound(err.to_string())),
            },
            Source::Kubeconfig { path, context } => {
                let options = kube::config::KubeConfigOptions {
                    context: context.clone(),
                    ..Default::default()
                };
                let config = match path {
                    Some(path) => {
                        let kubeconfig =
                            kube::config::Kubeconfig::read_from(path).map_err(|e| {
                                SourceError::Kubeconfig(format!("{}: {e}", path.display()))
                            })?;
                        kube::Config::from_custom_kubeconfig(kubeconfig, &options).await
                    }
                    None => kube::Config::from_kubeconfig(&options).await,
                }
                .map_err(|e| SourceError::Kubeconfig(e.to_string()))?;
                let description = format!(
                    "cluster at {} (kubeconfig{})",
                    config.cluster_url,
                    context
                        .as_ref()
                        .map(|c| format!(", context {c}"))
                        .unwrap_or_default()
                );
                client(config, description)
            }
            Source::InCluster => {
                let config =
                    kube::Config::incluster().map_err(|e| SourceError::InCluster(e.to_string()))?;
                let description = format!(
                    "cluster at {} (in-cluster service account)",
                    config.cluster_url
                );
                client(config, description)
            }
            Source::Embedded { .. } => self.connect_embedded().await,
        }
    }

    #[cfg(not(feature = "embedded"))]
    async fn connect_embedded(&self) -> Result<Connection, SourceError> {
        Err(SourceError::Embedded(
            "this herald was built without the embedded API server (the `embedded` feature); \
             use a kubeconfig or in-cluster configuration"
                .to_owned(),
        ))
    }

    #[cfg(feature = "embedded")]
    async fn connect_embedded(&self) -> Result<Connection, SourceError> {
        let (seed, kubeconfig_out) = match self {
            Source::Embedded {
                seed,
                kubeconfig_out,
            } => (seed.clone(), kubeconfig_out.clone()),
            _ => (Vec::new(), None),
        };
        let config = herald_apiserver::ApiServerConfig {
            seed_dirs: seed,
            ..herald_apiserver::ApiServerConfig::default()
        };
        let server = herald_apiserver::start(config)
            .await
            .map_err(|e| SourceError::Embedded(e.to_string()))?;
        if let Some(path) = &kubeconfig_out {
            server
                .write_kubeconfig(path)
                .map_err(|e| SourceError::Embedded(format!("writing {}: {e}", path.display())))?;
        }
        let url: http::Uri = server
            .url()
            .parse()
            .map_err(|e| SourceError::Embedded(format!("bad URL {}: {e}", server.url())))?;
        let description = format!("embedded API server at {}", server.url());
        let mut connection = client(kube::Config::new(url), description)?;
        connection.embedded = Some(server);
        Ok(connection)
    }
}

/// Connects to every cluster of `clusters` (the configuration's, each
/// named), all at once. One that cannot be configured (a kubeconfig that
/// does not read, an unknown context, an embedded server that does not
/// start) is logged as an error naming it and its cause, and left out: the
/// others, and the default cluster, run without it.
pub async fn connect_others(clusters: &[SourceConfig]) -> Vec<(ClusterName, Connection)> {
    let attempts = clusters.iter().filter_map(|cluster| {
        let name = cluster.name.clone()?;
        let source = cluster.source();
        Some(async move { (name, source.connect().await) })
    });
    let mut connected = Vec::new();
    for (name, outcome) in futures::future::join_all(attempts).await {
        match outcome {
            Ok(connection) => {
                tracing::info!(cluster = %name, "watching the {}", connection.description);
                connected.push((name, connection));
            }
            Err(err) => {
                tracing::error!(cluster = %name, "cluster {name} left out: {err}");
            }
        }
    }
    connected
}

/// Connects through the kubeconfig `text` and its `context` (`None`: its
/// current one), read from `origin` (named in the description and in
/// errors).
pub async fn connect_kubeconfig(
    text: &str,
    context: Option<&str>,
    origin: &str,
) -> Result<Connection, SourceError> {
    let kubeconfig = kube::config::Kubeconfig::from_yaml(text)
        .map_err(|e| SourceError::Kubeconfig(format!("{origin}: {e}")))?;
    let options = kube::config::KubeConfigOptions {
        context: context.map(str::to_owned),
        ..Default::default()
    };
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .map_err(|e| SourceError::Kubeconfig(format!("{origin}: {e}")))?;
    let description = format!("cluster at {} (kubeconfig {origin})", config.cluster_url);
    client(config, description)
}

fn client(config: kube::Config, description: String) -> Result<Connection, SourceError> {
    let make = |config| {
        kube::Client::try_from(config).map_err(|e: kube::Error| SourceError::Client(e.to_string()))
    };
    let writer = make(crate::capability::kube::writer_config(config.clone()))?;
    let client = make(config)?;
    Ok(Connection {
        client,
        writer,
        description,
        #[cfg(feature = "embedded")]
        embedded: None,
    })
}

/// Which cluster to watch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SourceKind {
    /// A kubeconfig if found, else in-cluster; neither is an error (never the embedded server).
    #[default]
    Auto,
    /// `source.kubeconfig` (or the default locations) and `source.context`.
    Kubeconfig,
    /// The pod's service account.
    InCluster,
    /// The embedded API server (development only).
    Embedded,
}

/// `source`: the cluster to watch (the default cluster); and each entry of
/// `clusters`, the others.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct SourceConfig {
    /// The cluster's name: for `source`, the default cluster's (unset:
    /// [`DEFAULT_CLUSTER`](crate::cluster::DEFAULT_CLUSTER)); required in
    /// `clusters`.
    pub name: Option<ClusterName>,
    /// `auto`, `kubeconfig`, `in-cluster` or `embedded`.
    pub kind: SourceKind,
    /// Kubeconfig file (kind `kubeconfig`).
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context (kind `kubeconfig`).
    pub context: Option<String>,
    /// Seed manifests directories (kind `embedded`).
    pub seed: Vec<PathBuf>,
    /// Where to write the embedded server's kubeconfig (kind `embedded`).
    pub kubeconfig_out: Option<PathBuf>,
    /// The cluster's labels, which plugins' `clusters` may select by.
    pub labels: crate::cluster::ClusterLabels,
}

impl SourceConfig {
    /// The source this configuration names.
    pub fn source(&self) -> Source {
        match self.kind {
            SourceKind::Auto => Source::Auto,
            SourceKind::Kubeconfig => Source::Kubeconfig {
                path: self.kubeconfig.clone(),
                context: self.context.clone(),
            },
            SourceKind::InCluster => Source::InCluster,
            SourceKind::Embedded => Source::Embedded {
                seed: self.seed.clone(),
                kubeconfig_out: self.kubeconfig_out.clone(),
            },
        }
    }

    /// Checks an entry of `clusters`: named, and a kubeconfig or the
    /// embedded server (`auto` and `in-cluster` are the daemon's own
    /// cluster, which `source` names); the key at fault is relative to the
    /// entry.
    pub fn validate_other(&self) -> Result<(), crate::yaml::Invalid> {
        if self.name.is_none() {
            return Err(crate::yaml::Invalid::new(
                "name",
                "every cluster needs a name (a DNS label, e.g. west)",
            ));
        }
        if matches!(self.kind, SourceKind::Auto | SourceKind::InCluster) {
            return Err(crate::yaml::Invalid::new(
                "kind",
                "a cluster beside the default one is reached through a kubeconfig (kind: \
                 kubeconfig, with kubeconfig and context) or is an embedded server (kind: \
                 embedded); auto and in-cluster name the daemon's own cluster, which source names",
            ));
        }
        self.validate()
    }

    /// Checks keys that only some kinds of source take, and the labels;
    /// the key at fault is relative to `source`.
    pub fn validate(&self) -> Result<(), crate::yaml::Invalid> {
        for (key, value) in &self.labels {
            crate::selector::validate_label(key, value)
                .map_err(|e| crate::yaml::Invalid::new("labels", e.to_string()))?;
        }
        match self.kind {
            SourceKind::Embedded | SourceKind::InCluster | SourceKind::Auto
                if self.kubeconfig.is_some() || self.context.is_some() =>
            {
                Err(crate::yaml::Invalid::new(
                    "kubeconfig",
                    "kubeconfig and context need source.kind: kubeconfig",
                ))
            }
            SourceKind::Kubeconfig | SourceKind::InCluster | SourceKind::Auto
                if !self.seed.is_empty() || self.kubeconfig_out.is_some() =>
            {
                Err(crate::yaml::Invalid::new(
                    "seed",
                    "seed and kubeconfigOut need source.kind: embedded",
                ))
            }
            _ => Ok(()),
        }
    }
}

/// Every cluster a service talks to: the default one, and the others by
/// name (see [`crate::cluster`]).
#[derive(Debug, Clone)]
pub struct FleetClients {
    /// The default cluster's clients.
    pub home: Clients,
    /// The other clusters' clients, by name.
    pub others: Vec<(ClusterName, Clients)>,
}

impl From<Clients> for FleetClients {
    /// One cluster: the default one.
    fn from(home: Clients) -> Self {
        FleetClients {
            home,
            others: Vec::new(),
        }
    }
}

/// The two clients a service talks to the cluster with.
#[derive(Clone)]
pub struct Clients {
    /// Informers', leader election's and the host's own calls.
    pub client: kube::Client,
    /// Plugins' API calls: a client that never retries on its own
    /// (built from [`writer_config`](crate::capability::kube::writer_config)).
    pub writer: kube::Client,
}

impl std::fmt::Debug for Clients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Clients").finish_non_exhaustive()
    }
}
