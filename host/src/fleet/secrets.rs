//! The Secrets provider: clusters registered as Secrets in one namespace of
//! the default cluster, in the two conventions fleets already use, read
//! again every `pollInterval`.
//!
//! - **Cluster API**: a Secret named `<cluster>-kubeconfig`, labelled
//!   `cluster.x-k8s.io/cluster-name: <cluster>`, its kubeconfig under
//!   `data.value`.
//! - **Argo CD**: a Secret labelled `argocd.argoproj.io/secret-type:
//!   cluster`, with `data.name` (the cluster's name), `data.server` (its
//!   API server's URL) and `data.config` (JSON: `bearerToken`, or
//!   `username` and `password`; `tlsClientConfig` with `caData`, `certData`,
//!   `keyData`, `insecure`). Argo's exec and cloud provider auth are not
//!   read: such a Secret is an error naming it.
//!
//! Other Secrets of the namespace are passed over. A Secret added adds its
//! cluster, one deleted removes it, one whose kubeconfig changes
//! (credentials rotated) replaces it; one that cannot be used is an error
//! naming the Secret, the cluster and the cause, and the others run on.
//! Reading them needs `list` on Secrets in that namespace (and nothing
//! else).

use super::Fleet;
use super::following::StoppableTask;
use super::tracker::{Found, Tracker};
use crate::cluster::ClusterName;
use k8s_openapi::api::core::v1::Secret;
use serde::Deserialize;
use serde_json::json;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// The Cluster API label naming a kubeconfig Secret's cluster.
pub const CAPI_CLUSTER_LABEL: &str = "cluster.x-k8s.io/cluster-name";
/// The Argo CD label marking a cluster Secret.
pub const ARGO_SECRET_TYPE: &str = "argocd.argoproj.io/secret-type";

/// `clusterSecrets`: where the cluster Secrets are.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ClusterSecretsConfig {
    /// Their namespace, in the default cluster.
    pub namespace: String,
    /// How often they are listed again.
    #[serde(with = "crate::units::duration", default = "default_poll")]
    pub poll_interval: Duration,
}

fn default_poll() -> Duration {
    Duration::from_secs(10)
}

impl ClusterSecretsConfig {
    /// Checks the namespace and the interval; the key at fault is relative
    /// to `clusterSecrets`.
    pub fn validate(&self) -> Result<(), crate::yaml::Invalid> {
        use herald_grammar::name::{Rule, check};
        check("namespace", &self.namespace, Rule::Dns1123Label)
            .map_err(|e| crate::yaml::Invalid::new("namespace", e.to_string()))?;
        if self.poll_interval < Duration::from_secs(1) {
            return Err(crate::yaml::Invalid::new(
                "pollInterval",
                "at least 1s: every read lists the namespace's Secrets",
            ));
        }
        Ok(())
    }
}

/// The cluster Secrets of a namespace, followed.
pub struct ClusterSecrets {
    task: StoppableTask,
}

impl std::fmt::Debug for ClusterSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterSecrets").finish_non_exhaustive()
    }
}

impl ClusterSecrets {
    /// Adds the cluster of every usable Secret to `fleet`, reading them
    /// through `client` (the default cluster's), then reads them again every
    /// `config.poll_interval` on a task of its own. Names in `reserved`
    /// (the configuration's clusters) are refused.
    pub async fn start(
        client: kube::Client,
        config: ClusterSecretsConfig,
        fleet: Arc<Fleet>,
        reserved: BTreeSet<String>,
    ) -> Self {
        let api = kube::Api::<Secret>::namespaced(client, &config.namespace);
        let mut tracker = Tracker::new(fleet, reserved, "clusterSecrets");
        if let Some(found) = read(&api, &config.namespace).await {
            tracker.apply(found).await;
        }
        let (stop, mut stopped) = watch::channel(false);
        let task = tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = stopped.changed() => return,
                    () = tokio::time::sleep(config.poll_interval) => {}
                }
                if let Some(found) = read(&api, &config.namespace).await {
                    tracker.apply(found).await;
                }
            }
        });
        ClusterSecrets {
            task: StoppableTask::new(stop, task),
        }
    }

    /// Stops reading the Secrets; the clusters they added stay.
    pub async fn stop(self) {
        self.task.stop().await;
    }
}

/// What the namespace's Secrets name now; `None` when they cannot be
/// listed (logged; the clusters they added stay as they are).
async fn read(api: &kube::Api<Secret>, namespace: &str) -> Option<Vec<Found>> {
    match api.list(&Default::default()).await {
        Ok(list) => Some(
            list.items
                .iter()
                .filter_map(|secret| found_in(secret, namespace))
                .collect(),
        ),
        Err(error) => {
            tracing::warn!(
                "clusterSecrets: listing the Secrets of namespace {namespace} failed ({error}); \
                 the clusters they added stay as they are"
            );
            None
        }
    }
}

/// The cluster `secret` registers, if it is a cluster Secret.
fn found_in(secret: &Secret, namespace: &str) -> Option<Found> {
    let labels = secret.metadata.labels.clone().unwrap_or_default();
    let secret_name = secret.metadata.name.clone().unwrap_or_default();
    let origin = format!("Secret {namespace}/{secret_name}");
    let data = secret.data.clone().unwrap_or_default();
    let text = |key: &str| {
        data.get(key)
            .map(|bytes| String::from_utf8_lossy(&bytes.0).into_owned())
    };
    let (name, kubeconfig) = if let Some(cluster) = labels.get(CAPI_CLUSTER_LABEL) {
        if !secret_name.ends_with("-kubeconfig") {
            return None;
        }
        (
            cluster.clone(),
            text("value").ok_or("no data.value (the kubeconfig)".to_owned()),
        )
    } else if labels.get(ARGO_SECRET_TYPE).map(String::as_str) == Some("cluster") {
        let name = text("name").unwrap_or_default();
        (name, argo_kubeconfig(text("server"), text("config")))
    } else {
        return None;
    };
    let name = match ClusterName::parse("cluster name", &name) {
        Ok(name) => name,
        Err(reason) => {
            return Some(Found::Problem {
                problem: format!("{origin}: {reason}"),
                origin,
                name: None,
            });
        }
    };
    Some(Found::named(name, origin, kubeconfig, labels))
}

/// Argo CD's `data.config`, as far as Herald reads it.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ArgoConfig {
    bearer_token: Option<String>,
    username: Option<String>,
    password: Option<String>,
    #[serde(default)]
    tls_client_config: ArgoTls,
    exec_provider_config: Option<serde_json::Value>,
    aws_auth_config: Option<serde_json::Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ArgoTls {
    ca_data: Option<String>,
    cert_data: Option<String>,
    key_data: Option<String>,
    #[serde(default)]
    insecure: bool,
}

/// A kubeconfig (as JSON, which YAML reads) from an Argo CD cluster
/// Secret's `server` and `config`.
fn argo_kubeconfig(server: Option<String>, config: Option<String>) -> Result<String, String> {
    let server = server.ok_or("no data.server (the API server's URL)")?;
    let config: ArgoConfig = match config {
        Some(text) => serde_json::from_str(&text)
            .map_err(|e| format!("data.config is not Argo CD's cluster config: {e}"))?,
        None => ArgoConfig::default(),
    };
    if config.exec_provider_config.is_some() || config.aws_auth_config.is_some() {
        return Err(
            "data.config asks for exec or AWS auth, which Herald does not run: use a token or a \
             client certificate"
                .to_owned(),
        );
    }
    let mut cluster = json!({"server": server});
    if let Some(ca) = config.tls_client_config.ca_data {
        cluster["certificate-authority-data"] = json!(ca);
    }
    if config.tls_client_config.insecure {
        cluster["insecure-skip-tls-verify"] = json!(true);
    }
    let mut user = json!({});
    if let Some(token) = config.bearer_token {
        user["token"] = json!(token);
    }
    if let (Some(username), Some(password)) = (config.username, config.password) {
        user["username"] = json!(username);
        user["password"] = json!(password);
    }
    if let Some(cert) = config.tls_client_config.cert_data {
        user["client-certificate-data"] = json!(cert);
    }
    if let Some(key) = config.tls_client_config.key_data {
        user["client-key-data"] = json!(key);
    }
    Ok(json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "cluster", "cluster": cluster}],
        "users": [{"name": "user", "user": user}],
        "contexts": [{"name": "cluster", "context": {"cluster": "cluster", "user": "user"}}],
        "current-context": "cluster",
    })
    .to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::ByteString;

    fn secret(name: &str, labels: &[(&str, &str)], data: &[(&str, &str)]) -> Secret {
        let mut secret = Secret::default();
        secret.metadata.name = Some(name.into());
        secret.metadata.labels = Some(
            labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
        secret.data = Some(
            data.iter()
                .map(|(k, v)| (k.to_string(), ByteString(v.as_bytes().to_vec())))
                .collect(),
        );
        secret
    }

    #[test]
    fn both_conventions_are_read_and_other_secrets_passed_over() {
        let capi = secret(
            "west-kubeconfig",
            &[(CAPI_CLUSTER_LABEL, "west")],
            &[("value", "apiVersion: v1")],
        );
        match found_in(&capi, "fleet") {
            Some(Found::Cluster {
                name,
                origin,
                kubeconfig,
                labels,
            }) => {
                assert_eq!(
                    labels.get(CAPI_CLUSTER_LABEL).map(String::as_str),
                    Some("west"),
                    "a cluster Secret's labels are its cluster's"
                );
                assert_eq!(
                    (name.as_str(), origin.as_str()),
                    ("west", "Secret fleet/west-kubeconfig")
                );
                assert_eq!(kubeconfig, "apiVersion: v1");
            }
            _ => panic!("a Cluster API Secret"),
        }
        let argo = secret(
            "north",
            &[(ARGO_SECRET_TYPE, "cluster")],
            &[
                ("name", "north"),
                ("server", "https://north.example:6443"),
                (
                    "config",
                    r#"{"bearerToken":"t0k","tlsClientConfig":{"caData":"Q0E="}}"#,
                ),
            ],
        );
        let Some(Found::Cluster { kubeconfig, .. }) = found_in(&argo, "fleet") else {
            panic!("an Argo CD Secret");
        };
        let parsed = kube::config::Kubeconfig::from_yaml(&kubeconfig).unwrap();
        let cluster = parsed.clusters[0].cluster.as_ref().unwrap();
        assert_eq!(
            cluster.server.as_deref(),
            Some("https://north.example:6443")
        );
        assert_eq!(cluster.certificate_authority_data.as_deref(), Some("Q0E="));
        assert!(
            parsed.auth_infos[0]
                .auth_info
                .as_ref()
                .unwrap()
                .token
                .is_some()
        );
        assert!(found_in(&secret("registry", &[], &[("x", "y")]), "fleet").is_none());
        assert!(
            found_in(
                &secret("west", &[(CAPI_CLUSTER_LABEL, "west")], &[]),
                "fleet"
            )
            .is_none(),
            "Cluster API's other Secrets of a cluster (its CA, say) are not kubeconfigs"
        );
    }

    #[test]
    fn a_secret_that_cannot_be_used_says_which_and_why() {
        let problem = |secret: &Secret| match found_in(secret, "fleet") {
            Some(Found::Problem { problem, .. }) => problem,
            _ => panic!("a problem"),
        };
        let named_badly = secret(
            "x",
            &[(ARGO_SECRET_TYPE, "cluster")],
            &[("name", "Prod EU"), ("server", "https://x")],
        );
        assert!(
            problem(&named_badly).contains("Secret fleet/x"),
            "{}",
            problem(&named_badly)
        );
        let exec = secret(
            "eks",
            &[(ARGO_SECRET_TYPE, "cluster")],
            &[
                ("name", "eks"),
                ("server", "https://x"),
                ("config", r#"{"awsAuthConfig":{}}"#),
            ],
        );
        assert!(
            problem(&exec)
                .contains("cluster eks: Secret fleet/eks: data.config asks for exec or AWS auth")
        );
        let no_value = secret(
            "west-kubeconfig",
            &[(CAPI_CLUSTER_LABEL, "west")],
            &[("other", "x")],
        );
        assert!(problem(&no_value).contains("no data.value"));
    }
}
