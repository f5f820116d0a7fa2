//! Registry credentials from a Docker `config.json`: the file `docker
//! login` writes, and the content of a Kubernetes
//! `kubernetes.io/dockerconfigjson` pull secret (its `.dockerconfigjson` key,
//! mounted as a file). `auths.<registry>` entries with `auth`
//! (base64 `user:password`), `username`/`password`, `identitytoken` or
//! `registrytoken` are read, and credential helpers are run as the Docker
//! CLI runs them: `credHelpers.<registry>` first, then an `auths` entry
//! with inline credentials, then `credsStore` (`docker-credential-<name>
//! get`, the server on stdin, `{"Username", "Secret"}` on stdout; a helper
//! that has no credentials for the server means anonymous).

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
    creds_store: Option<String>,
    cred_helpers: BTreeMap<String, String>,
    /// Where helpers are looked up instead of `PATH` (tests).
    helper_path: Option<std::ffi::OsString>,
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
#[serde(rename_all = "camelCase")]
struct File {
    #[serde(default)]
    auths: BTreeMap<String, AuthEntry>,
    #[serde(default)]
    creds_store: Option<String>,
    #[serde(default)]
    cred_helpers: BTreeMap<String, String>,
}

/// Why credentials could not be had from a Docker config file; each variant
/// names the entry or the helper at fault, never a secret.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// The file cannot be read.
    #[error("cannot read: {0}")]
    Read(#[source] std::io::Error),
    /// The text is not JSON of a Docker config file.
    #[error("not a Docker config.json: {0}")]
    NotAConfig(#[source] serde_json::Error),
    /// The text is JSON but not an object.
    #[error("not a Docker config.json: not a JSON object")]
    NotAnObject,
    /// `auths.<registry>.auth` is not base64.
    #[error("auths.{registry}.auth is not base64: {reason}")]
    NotBase64 {
        /// The `auths` key at fault.
        registry: String,
        /// What the decoder reported (it never quotes the text).
        #[source]
        reason: base64::DecodeError,
    },
    /// `auths.<registry>.auth` decodes to bytes that are not UTF-8.
    #[error("auths.{registry}.auth is not UTF-8")]
    NotUtf8 {
        /// The `auths` key at fault.
        registry: String,
    },
    /// `auths.<registry>.auth` decodes to text without a `:`.
    #[error("auths.{registry}.auth is not base64 of user:password")]
    NoPassword {
        /// The `auths` key at fault.
        registry: String,
    },
    /// A credential helper failed.
    #[error("credential helper {program} for {registry}: {failure}")]
    Helper {
        /// The helper's program, `docker-credential-<name>`.
        program: String,
        /// The registry it was asked about.
        registry: String,
        /// What went wrong.
        #[source]
        failure: HelperFailure,
    },
}

/// How a credential helper failed.
#[derive(Debug, thiserror::Error)]
pub enum HelperFailure {
    /// The program could not be started.
    #[error("cannot run it: {0}")]
    Spawn(#[source] std::io::Error),
    /// Its output could not be read.
    #[error("{0}")]
    Wait(#[source] std::io::Error),
    /// It did not answer in time (ten seconds).
    #[error("no answer within {} s", HELPER_TIMEOUT.as_secs())]
    Timeout,
    /// It exited with a failure other than "credentials not found".
    #[error("exited with {0}")]
    Exit(std::process::ExitStatus),
    /// Its answer is not `{"Username", "Secret"}`.
    #[error("not a credentials answer: {0}")]
    Answer(#[source] serde_json::Error),
}

/// How long a credential helper may take to answer.
const HELPER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

impl DockerConfig {
    /// Reads and parses `path`.
    pub fn load(path: &Path) -> Result<Self, OciError> {
        let failed = |reason: AuthError| OciError::Auth {
            path: path.display().to_string(),
            reason,
        };
        let text = std::fs::read_to_string(path).map_err(|e| failed(AuthError::Read(e)))?;
        Self::parse(&text).map_err(failed)
    }

    /// Parses the text of a Docker config file.
    pub fn parse(text: &str) -> Result<Self, AuthError> {
        // An object: serde would take `[]` for a struct with defaults.
        let value: serde_json::Value = serde_json::from_str(text).map_err(AuthError::NotAConfig)?;
        if !value.is_object() {
            return Err(AuthError::NotAnObject);
        }
        let file: File = serde_json::from_value(value).map_err(AuthError::NotAConfig)?;
        Ok(DockerConfig {
            auths: file.auths,
            creds_store: file.creds_store.filter(|s| !s.is_empty()),
            cred_helpers: file.cred_helpers,
            helper_path: None,
        })
    }

    /// The credentials for `registry` (a host, with its port if any);
    /// anonymous if the file has none. Entries are matched by host, whether
    /// written `host`, `https://host` or `https://host/v1/`; Docker Hub's
    /// `https://index.docker.io/v1/` serves `docker.io`.
    pub fn auth_for(&self, registry: &str) -> Result<RegistryAuth, AuthError> {
        let wanted = normalize(registry);
        if let Some((_, helper)) = self
            .cred_helpers
            .iter()
            .find(|(key, _)| normalize(key) == wanted)
        {
            return run_helper(helper, &wanted, self.helper_path.as_deref());
        }
        let entry = self
            .auths
            .iter()
            .find(|(key, _)| normalize(key) == wanted)
            .map(|(_, entry)| entry);
        match entry {
            Some(entry) if entry.has_credentials() => entry.auth(registry),
            _ => match &self.creds_store {
                Some(store) => run_helper(store, &wanted, self.helper_path.as_deref()),
                None => Ok(RegistryAuth::Anonymous),
            },
        }
    }
}

impl AuthEntry {
    /// True when the entry holds credentials (with a credential store, an
    /// entry may be an empty placeholder).
    fn has_credentials(&self) -> bool {
        self.auth.is_some()
            || self.username.is_some()
            || self.identitytoken.is_some()
            || self.registrytoken.is_some()
    }

    /// The entry's credentials.
    fn auth(&self, registry: &str) -> Result<RegistryAuth, AuthError> {
        if let Some(token) = self.registrytoken.as_ref().or(self.identitytoken.as_ref()) {
            return Ok(RegistryAuth::Bearer(token.clone()));
        }
        if let (Some(user), Some(password)) = (&self.username, &self.password) {
            return Ok(RegistryAuth::Basic(user.clone(), password.clone()));
        }
        if let Some(auth) = &self.auth {
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(auth.trim())
                .map_err(|reason| AuthError::NotBase64 {
                    registry: registry.to_owned(),
                    reason,
                })?;
            let decoded = String::from_utf8(decoded).map_err(|_| AuthError::NotUtf8 {
                registry: registry.to_owned(),
            })?;
            let Some((user, password)) = decoded.split_once(':') else {
                return Err(AuthError::NoPassword {
                    registry: registry.to_owned(),
                });
            };
            return Ok(RegistryAuth::Basic(user.into(), password.into()));
        }
        Ok(RegistryAuth::Anonymous)
    }
}

/// What a credential helper answers (`docker-credential-<name> get`).
#[derive(Deserialize)]
struct HelperAnswer {
    #[serde(rename = "Username", default)]
    username: String,
    #[serde(rename = "Secret", default)]
    secret: String,
}

/// Asks `docker-credential-<helper>` for the credentials of `registry`
/// (Docker Hub as `https://index.docker.io/v1/`, as the Docker CLI asks).
/// Bounded by [`HELPER_TIMEOUT`]; errors name the helper, never a secret.
fn run_helper(
    helper: &str,
    registry: &str,
    search_path: Option<&std::ffi::OsStr>,
) -> Result<RegistryAuth, AuthError> {
    use std::io::Write as _;
    let program = format!("docker-credential-{helper}");
    let server = match registry {
        "docker.io" => "https://index.docker.io/v1/".to_owned(),
        other => other.to_owned(),
    };
    let failed = |failure: HelperFailure| AuthError::Helper {
        program: program.clone(),
        registry: registry.to_owned(),
        failure,
    };
    let mut command = std::process::Command::new(&program);
    if let Some(path) = search_path {
        command.env("PATH", path);
    }
    let mut child = command
        .arg("get")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| failed(HelperFailure::Spawn(e)))?;
    if let Some(mut stdin) = child.stdin.take() {
        // A helper that exits without reading closes the pipe first: its
        // exit status, not the write, says what happened.
        let _ = stdin.write_all(server.as_bytes());
    }
    let (sender, receiver) = std::sync::mpsc::channel();
    let id = child.id();
    std::thread::spawn(move || {
        let _ = sender.send(child.wait_with_output());
    });
    let output = match receiver.recv_timeout(HELPER_TIMEOUT) {
        Ok(output) => output.map_err(|e| failed(HelperFailure::Wait(e)))?,
        Err(_) => {
            // The waiting thread reaps it once killed.
            let _ = std::process::Command::new("kill")
                .args(["-9", &id.to_string()])
                .status();
            return Err(failed(HelperFailure::Timeout));
        }
    };
    if !output.status.success() {
        let message = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        // The helpers' own words for "nothing stored for this server".
        if message.contains("credentials not found") {
            return Ok(RegistryAuth::Anonymous);
        }
        return Err(failed(HelperFailure::Exit(output.status)));
    }
    let answer: HelperAnswer =
        serde_json::from_slice(&output.stdout).map_err(|e| failed(HelperFailure::Answer(e)))?;
    Ok(match answer.username.as_str() {
        "<token>" => RegistryAuth::Bearer(answer.secret),
        _ => RegistryAuth::Basic(answer.username, answer.secret),
    })
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
        let err = config.auth_for("r.io").unwrap_err().to_string();
        assert!(err.contains("auths.r.io.auth is not base64"), "{err}");
        assert!(!err.contains("!!"), "{err}");
        assert!(
            DockerConfig::parse("[]")
                .unwrap_err()
                .to_string()
                .contains("not a Docker config.json")
        );
    }

    /// A credential helper script `docker-credential-<name>` in a fresh
    /// directory, and a `PATH` with it first.
    fn helper(name: &str, script: &str) -> crate::scratch::ScratchDir {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = crate::scratch::ScratchDir::new("cred-helper").unwrap();
        let path = dir.join(format!("docker-credential-{name}"));
        std::fs::write(&path, format!("#!/bin/sh\n{script}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        dir
    }

    #[test]
    fn credential_helpers_are_asked_as_the_docker_cli_asks_them() {
        // Answers for the server it is asked about (read from stdin), and
        // "not found" for any other.
        let store = helper(
            "teststore",
            r#"read server; case "$server" in
  registry.local:5000) echo '{"ServerURL":"registry.local:5000","Username":"carol","Secret":"pw"}';;
  https://index.docker.io/v1/) echo '{"Username":"<token>","Secret":"tok"}';;
  *) echo "credentials not found in native keychain"; exit 1;;
esac"#,
        );
        let broken = helper("testbroken", "exit 3");
        let mut config = DockerConfig::parse(
            r#"{"credsStore": "teststore",
                "credHelpers": {"ghcr.io": "testbroken"},
                "auths": {"registry.local:5000": {}, "quay.io": {"auth": "YWxpY2U6czNjcmV0"}}}"#,
        )
        .unwrap();
        // The scripts' directories, then the system's (for `sh`).
        let path = std::env::join_paths(
            [store.as_os_str().to_owned(), broken.as_os_str().to_owned()]
                .into_iter()
                .chain(
                    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
                        .map(|p| p.into_os_string()),
                ),
        )
        .unwrap();
        config.helper_path = Some(path);
        assert_eq!(
            config.auth_for("registry.local:5000").unwrap(),
            RegistryAuth::Basic("carol".into(), "pw".into()),
            "an empty auths entry defers to the store"
        );
        assert_eq!(
            config.auth_for("docker.io").unwrap(),
            RegistryAuth::Bearer("tok".into())
        );
        assert_eq!(
            config.auth_for("quay.io").unwrap(),
            RegistryAuth::Basic("alice".into(), "s3cret".into()),
            "inline credentials win over the store"
        );
        assert_eq!(
            config.auth_for("example.org").unwrap(),
            RegistryAuth::Anonymous,
            "nothing stored: anonymous"
        );
        let err = config.auth_for("ghcr.io").unwrap_err().to_string();
        assert!(err.contains("docker-credential-testbroken"), "{err}");
        assert!(err.contains("exit status: 3"), "{err}");
    }
}
