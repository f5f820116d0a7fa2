//! Registry credentials from a Docker `config.json`: the file `docker
//! login` writes, and the content of a Kubernetes
//! `kubernetes.io/dockerconfigjson` pull secret (its `.dockerconfigjson` key,
//! mounted as a file). `auths.<registry>` entries with `auth`
//! (base64 `user:password`), `username`/`password`, `identitytoken` or
//! `registrytoken` are read; credential helpers (`credsStore`,
//! `credHelpers`) are not run.

use super::OciError;
use base64::Engine as _;
use oci_client::secrets::RegistryAuth;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A parsed Docker config file.
#[derive(Debug, Clone, Default)]
pub struct DockerConfig {
    auths: BTreeMap<String, AuthEntry>,
}

#[derive(Clone, Default, Deserialize)]
struct AuthEntry {
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
    #[serde(default)]
    identitytoken: Option<String>,
    #[serde(default)]
    registrytoken: Option<String>,
}

impl std::fmt::Debug for AuthEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AuthEntry(<redacted>)")
    }
}

#[derive(Deserialize)]
struct File {
    #[serde(default)]
    auths: BTreeMap<String, AuthEntry>,
}

impl DockerConfig {
    /// Reads and parses `path`.
    pub fn load(path: &Path) -> Result<Self, OciError> {
        let failed = |reason: String| OciError::Auth {
            path: path.display().to_string(),
            reason,
        };
        let text =
            std::fs::read_to_string(path).map_err(|e| failed(format!("cannot read: {e}")))?;
        Self::parse(&text).map_err(failed)
    }

    /// Parses the text of a Docker config file.
    pub fn parse(text: &str) -> Result<Self, String> {
        // An object: serde would take `[]` for a struct with defaults.
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("not a Docker config.json: {e}"))?;
        if !value.is_object() {
            return Err("not a Docker config.json: not a JSON object".into());
        }
        let file: File =
            serde_json::from_value(value).map_err(|e| format!("not a Docker config.json: {e}"))?;
        Ok(DockerConfig { auths: file.auths })
    }

    /// The credentials for `registry` (a host, with its port if any);
    /// anonymous if the file has none. Entries are matched by host, whether
    /// written `host`, `https://host` or `https://host/v1/`; Docker Hub's
    /// `https://index.docker.io/v1/` serves `docker.io`.
    pub fn auth_for(&self, registry: &str) -> Result<RegistryAuth, String> {
        let wanted = normalize(registry);
        let Some(entry) = self
            .auths
            .iter()
            .find(|(key, _)| normalize(key) == wanted)
            .map(|(_, entry)| entry)
        else {
            return Ok(RegistryAuth::Anonymous);
        };
        if let Some(token) = entry
            .registrytoken
            .as_ref()
            .or(entry.identitytoken.as_ref())
        {
            return Ok(RegistryAuth::Bearer(token.clone()));
        }
        if let (Some(user), Some(password)) = (&entry.username, &entry.password) {
            return Ok(RegistryAuth::Basic(user.clone(), password.clone()));
        }
        if let Some(auth) = &entry.auth {
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(auth.trim())
                .map_err(|e| format!("auths.{registry}.auth is not base64: {e}"))?;
            let decoded = String::from_utf8(decoded)
                .map_err(|_| format!("auths.{registry}.auth is not UTF-8"))?;
            let Some((user, password)) = decoded.split_once(':') else {
                return Err(format!(
                    "auths.{registry}.auth is not base64 of user:password"
                ));
            };
            return Ok(RegistryAuth::Basic(user.into(), password.into()));
        }
        Ok(RegistryAuth::Anonymous)
    }
}

/// A registry key as a bare host: no scheme, no path; Docker Hub's aliases
/// as `docker.io`.
fn normalize(key: &str) -> String {
    let bare = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    let host = bare.split('/').next().unwrap_or(bare).to_ascii_lowercase();
    match host.as_str() {
        "index.docker.io" | "registry-1.docker.io" | "registry.hub.docker.com" => {
            "docker.io".into()
        }
        _ => host,
    }
}

/// Where `docker login` keeps credentials: `$DOCKER_CONFIG/config.json`,
/// else `~/.docker/config.json`; only if the file exists.
pub fn default_docker_config() -> Option<PathBuf> {
    let path = match std::env::var_os("DOCKER_CONFIG").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir).join("config.json"),
        None => PathBuf::from(std::env::var_os("HOME").filter(|v| !v.is_empty())?)
            .join(".docker/config.json"),
    };
    path.is_file().then_some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_found_by_host_in_every_spelling() {
        let config = DockerConfig::parse(
            r#"{"auths": {
                "registry.local:5000": {"auth": "YWxpY2U6czNjcmV0"},
                "https://ghcr.io": {"username": "bob", "password": "pw"},
                "https://index.docker.io/v1/": {"identitytoken": "tok"}
            }}"#,
        )
        .unwrap();
        assert_eq!(
            config.auth_for("registry.local:5000").unwrap(),
            RegistryAuth::Basic("alice".into(), "s3cret".into())
        );
        assert_eq!(
            config.auth_for("ghcr.io").unwrap(),
            RegistryAuth::Basic("bob".into(), "pw".into())
        );
        assert_eq!(
            config.auth_for("docker.io").unwrap(),
            RegistryAuth::Bearer("tok".into())
        );
        assert_eq!(config.auth_for("quay.io").unwrap(), RegistryAuth::Anonymous);
    }

    #[test]
    fn a_broken_entry_says_what_is_wrong_without_showing_it() {
        let config = DockerConfig::parse(r#"{"auths": {"r.io": {"auth": "!!"}}}"#).unwrap();
        let err = config.auth_for("r.io").unwrap_err();
        assert!(err.contains("auths.r.io.auth is not base64"), "{err}");
        assert!(!err.contains("!!"), "{err}");
        assert!(
            DockerConfig::parse("[]")
                .unwrap_err()
                .contains("not a Docker config.json")
        );
    }
}
