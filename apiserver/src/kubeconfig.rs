//! Kubeconfig files pointing `kubectl` and `kube::Client` at the server.

/// The name used for the cluster, user and context entries.
pub const CONTEXT_NAME: &str = "herald";

/// A kubeconfig for a server at `url` (`http://127.0.0.1:PORT`): one cluster, one user without
/// credentials, one context (namespace `default`) that is current.
pub fn kubeconfig_yaml(url: &str) -> String {
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: {CONTEXT_NAME}
  cluster:
    server: {url}
users:
- name: {CONTEXT_NAME}
  user: {{}}
contexts:
- name: {CONTEXT_NAME}
  context:
    cluster: {CONTEXT_NAME}
    user: {CONTEXT_NAME}
    namespace: default
current-context: {CONTEXT_NAME}
preferences: {{}}
"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubeconfig_is_valid_yaml_with_a_current_context() {
        let doc: serde_yaml::Value =
            serde_yaml::from_str(&kubeconfig_yaml("http://127.0.0.1:1234")).unwrap();
        assert_eq!(doc["current-context"].as_str(), Some(CONTEXT_NAME));
        assert_eq!(
            doc["clusters"][0]["cluster"]["server"].as_str(),
            Some("http://127.0.0.1:1234")
        );
        assert!(doc["users"][0]["user"].as_mapping().unwrap().is_empty());
    }
}
