//! Plugins from an OCI registry, against a real one: Debian's
//! `docker-registry` (the CNCF distribution registry) started on loopback
//! for each test, plain HTTP, storage in a temporary directory. Push, pull
//! by tag and by digest, a moved tag swapped in, an outage that keeps the
//! running version, content that does not match its digest refused, a
//! private registry (htpasswd) reached only with its credentials.
//!
//! Without `/usr/bin/docker-registry` (or `HERALD_TEST_REGISTRY`) the tests
//! say so and pass, except under `CI`, where they fail: CI installs it
//! (`.ci/run`).

use super::cluster::TestCluster;
use super::recording::informers;
use super::reload::temp_dir;
use herald::capability::log::MemorySink;
use herald::config::Config;
use herald::daemon::Daemon;
use herald::oci::{ComponentInfo, PluginArtifact, Pushed, Registry, RegistryOptions};
use herald::plugin::digest;
use herald::reload::LoaderStats;
use herald::reload::sources::PluginSourceConfig;
use herald::reload::{
    DEFAULT_RESCAN_INTERVAL, FileState, FileStatus, FileStatuses, PluginDirectory, PluginSources,
    ReloadSetup, SettleTiming, SourcesSetup,
};
use herald::scratch::ScratchDir;
use herald_tests::{PATIENCE, artifacts, eventually};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// A distribution registry on 127.0.0.1, stopped when dropped.
struct TestRegistry {
    binary: PathBuf,
    port: u16,
    storage: PathBuf,
    config: PathBuf,
    child: Option<Child>,
    /// Where the storage, the configuration and credentials files live.
    dir: ScratchDir,
}

impl TestRegistry {
    /// Starts a registry, or returns `None` (outside CI) when there is none
    /// to start.
    async fn start() -> Option<TestRegistry> {
        Self::start_with(None).await
    }

    /// [`start`](Self::start), with `user` and `password` required
    /// (distribution's htpasswd authentication) when given.
    async fn start_with(user: Option<(&str, &str)>) -> Option<TestRegistry> {
        let binary = std::env::var_os("HERALD_TEST_REGISTRY")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/usr/bin/docker-registry"));
        if !binary.exists() {
            let message = format!(
                "{} is missing: install the registry with `apt-get install -y docker-registry` \
                 (or point HERALD_TEST_REGISTRY at a distribution registry binary)",
                binary.display()
            );
            if std::env::var_os("CI").is_some() {
                panic!("{message}");
            }
            eprintln!("skipping the OCI registry test: {message}");
            return None;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let dir = temp_dir("registry");
        let storage = dir.join("storage");
        let config = dir.join("config.yml");
        let mut text = format!(
            "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\n\
             storage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\n\
             http:\n  addr: 127.0.0.1:{port}\n",
            storage.display()
        );
        if let Some((user, password)) = user {
            let htpasswd = dir.join("htpasswd");
            let hash = bcrypt::hash(password, 4).unwrap();
            std::fs::write(&htpasswd, format!("{user}:{hash}\n")).unwrap();
            text.push_str(&format!(
                "auth:\n  htpasswd:\n    realm: herald-test\n    path: {}\n",
                htpasswd.display()
            ));
        }
        std::fs::write(&config, text).unwrap();
        let mut registry = TestRegistry {
            binary,
            port,
            storage,
            config,
            child: None,
            dir,
        };
        registry.resume().await;
        Some(registry)
    }

    /// `127.0.0.1:<port>/<repository>:<tag>`.
    fn reference(&self, repository: &str, tag: &str) -> String {
        format!("127.0.0.1:{}/{repository}:{tag}", self.port)
    }

    /// `127.0.0.1:<port>/<repository>@<digest>`.
    fn pinned(&self, repository: &str, digest: &str) -> String {
        format!("127.0.0.1:{}/{repository}@{digest}", self.port)
    }

    /// Starts (again) on the same port and storage; returns once it answers.
    async fn resume(&mut self) {
        let child = Command::new(&self.binary)
            .arg("serve")
            .arg(&self.config)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting the registry");
        self.child = Some(child);
        let address = ("127.0.0.1", self.port);
        eventually("the registry listens", PATIENCE, async || {
            tokio::net::TcpStream::connect(address).await
        })
        .await;
    }

    /// Stops it (an outage).
    fn pause(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// A Docker config file with `user`'s credentials for this registry.
    fn docker_config(&self, user: &str, password: &str) -> PathBuf {
        let folder = self.dir.join(format!("docker-config-{user}-{password}"));
        std::fs::create_dir_all(&folder).unwrap();
        let path = folder.join("config.json");
        let auths = serde_json::json!({
            "auths": { format!("127.0.0.1:{}", self.port): { "username": user, "password": password } }
        });
        std::fs::write(&path, auths.to_string()).unwrap();
        path
    }

    /// The stored file of the blob `digest` (distribution's filesystem layout).
    fn blob_file(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").unwrap();
        self.storage
            .join("docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data")
    }
}

impl Drop for TestRegistry {
    fn drop(&mut self) {
        self.pause();
    }
}

/// Pushes `component` to `reference` as `herald plugin push` does.
async fn push(reference: &str, component: Vec<u8>) -> Pushed {
    push_as(reference, component, None).await.expect("push")
}

/// [`push`] with the credentials of `docker_config`, if any.
async fn push_as(
    reference: &str,
    component: Vec<u8>,
    docker_config: Option<PathBuf>,
) -> Result<Pushed, herald::oci::OciError> {
    let options = RegistryOptions {
        plain_http: true,
        docker_config,
        ..RegistryOptions::default()
    };
    let artifact = PluginArtifact::new(
        component,
        ComponentInfo::default(),
        "2025-01-01T00:00:00Z".into(),
        BTreeMap::new(),
    );
    Registry::new(reference, &options)?.push(&artifact).await
}

/// A version of a fixture of its own (same behaviour, another digest).
fn version(fixture: &str, tag: &str) -> Vec<u8> {
    artifacts::variant(&artifacts::bytes(fixture), tag)
}

/// A daemon following plugin sources (and an empty plugin directory).
struct Rig {
    cluster: TestCluster,
    daemon: Arc<Daemon>,
    files: Arc<FileStatuses>,
    cache: ScratchDir,
    sources: Option<PluginSources>,
    /// The (empty) plugin directory followed beside the sources.
    plugins: Option<ScratchDir>,
    directory: Option<PluginDirectory>,
    /// The credentials sources are pulled with.
    docker_config: Option<PathBuf>,
    /// What the loader and the sources counted.
    stats: Arc<LoaderStats>,
}

impl Rig {
    async fn start(references: &[String]) -> Rig {
        Self::start_as(references, None).await
    }

    /// [`start`](Self::start), pulling with the credentials of `docker_config`.
    async fn start_as(references: &[String], docker_config: Option<PathBuf>) -> Rig {
        let cluster = TestCluster::start().await;
        let daemon = Arc::new(Daemon::new(
            Arc::new(informers(cluster.client.clone())),
            Default::default(),
        ));
        let mut rig = Rig {
            cluster,
            daemon,
            files: Arc::new(FileStatuses::default()),
            cache: temp_dir("oci-cache"),
            sources: None,
            plugins: None,
            directory: None,
            docker_config,
            stats: Arc::default(),
        };
        rig.follow(references).await;
        rig
    }

    /// Starts following `references` (again, after [`Rig::unfollow`]).
    async fn follow(&mut self, references: &[String]) {
        let sources: Vec<PluginSourceConfig> = references
            .iter()
            .map(|oci| PluginSourceConfig {
                oci: format!("oci://{oci}"),
                poll_interval: Duration::from_secs(1),
                plain_http: true,
                docker_config: self.docker_config.clone(),
            })
            .collect();
        let dir = temp_dir("oci-plugins");
        let config = Config {
            plugin_dir: dir.to_path_buf(),
            plugin_sources: sources.clone(),
            plugin_source_cache: Some(self.cache.to_path_buf()),
            ..Config::default()
        };
        config.validate().expect("a valid configuration");
        let pulled = PluginSources::start(SourcesSetup {
            sources,
            dir: self.cache.join("plugins"),
            max_size: config.plugin_files.max_size,
            files: self.files.clone(),
            stats: self.stats.clone(),
        })
        .await
        .expect("plugin sources");
        let directory = PluginDirectory::start(ReloadSetup {
            dir: dir.to_path_buf(),
            pulled_dir: Some(pulled.dir().to_owned()),
            settings: Arc::new(config.plugin_settings()),
            engine: herald_tests::engine().clone(),
            cache: None,
            sink: Arc::new(MemorySink::default()),
            daemon: self.daemon.clone(),
            files: self.files.clone(),
            stats: self.stats.clone(),
            timing: SettleTiming::default(),
            rescan_interval: DEFAULT_RESCAN_INTERVAL,
            access: None,
        })
        .await
        .expect("following the plugin directories");
        self.sources = Some(pulled);
        self.directory = Some(directory);
        self.plugins = Some(dir);
    }

    /// Stops following, and every plugin (a restart, files kept).
    async fn unfollow(&mut self) {
        if let Some(sources) = self.sources.take() {
            sources.stop().await;
        }
        if let Some(directory) = self.directory.take() {
            directory.stop().await;
        }
        for name in self.daemon.names() {
            self.daemon.stop(&name).await;
        }
    }

    /// The pulled file of `reference`.
    fn file(&self, reference: &str) -> PathBuf {
        let dir = self.cache.join("plugins").canonicalize().unwrap();
        PluginSources::file_of(&dir, reference)
    }

    /// Waits until the status of `reference`'s file satisfies `ready`.
    async fn status(&self, reference: &str, ready: impl Fn(&FileStatus) -> bool) -> FileStatus {
        let path = self.file(reference);
        let wait = self
            .files
            .wait_for(|files| files.get(&path).filter(|s| ready(s)).cloned());
        match tokio::time::timeout(PATIENCE, wait).await {
            Ok(status) => status,
            Err(_) => panic!(
                "{reference} never reached the expected status; statuses: {:#?}",
                self.files.snapshot()
            ),
        }
    }

    /// Waits until `reference` runs exactly `bytes`.
    async fn running(&self, reference: &str, bytes: &[u8]) -> FileStatus {
        let sha = digest(bytes);
        self.status(reference, |s| {
            s.state == FileState::Loaded && s.sha256.as_deref() == Some(sha.as_str())
        })
        .await
    }

    /// Polls that found their reference unchanged so far (what
    /// `herald_plugin_source_pulls{outcome="unchanged"}` exposes).
    fn unchanged_polls(&self) -> u64 {
        self.stats.source_unchanged.load(Ordering::SeqCst)
    }

    /// Waits until `polls` more polls than `since` found their reference
    /// unchanged.
    async fn polled(&self, since: u64, polls: u64) {
        let wait = self
            .files
            .wait_for(|_| (self.unchanged_polls() >= since + polls).then_some(()));
        if tokio::time::timeout(PATIENCE, wait).await.is_err() {
            panic!(
                "{} of the {polls} polls awaited (after {since}) happened; statuses: {:#?}",
                self.unchanged_polls().saturating_sub(since),
                self.files.snapshot()
            );
        }
    }

    async fn finish(mut self) {
        self.unfollow().await;
        self.cluster.cleanup().await;
    }
}

fn source_error(status: &FileStatus) -> Option<&str> {
    status.source.as_ref()?.last_error.as_deref()
}

fn exists(path: &Path) -> bool {
    path.exists()
}

#[tokio::test]
async fn a_pushed_plugin_runs_from_its_tag_and_from_its_digest() {
    let Some(registry) = TestRegistry::start().await else {
        return;
    };
    let noop = version(artifacts::NOOP, "1");
    let tag = registry.reference("team/noop", "1.0");
    let pushed = push(&tag, noop.clone()).await;
    assert_eq!(pushed.layer_digest, format!("sha256:{}", digest(&noop)));
    let named = version(artifacts::NAMED_NOOP, "1");
    let named_pushed = push(&registry.reference("team/named", "1.0"), named.clone()).await;
    let pinned = registry.pinned("team/named", &named_pushed.manifest_digest);

    let rig = Rig::start(&[tag.clone(), pinned.clone()]).await;
    let by_tag = rig.running(&tag, &noop).await;
    assert_eq!(by_tag.plugin.as_deref(), Some("noop"));
    let source = by_tag.source.expect("a source status");
    assert_eq!(source.reference, tag);
    assert_eq!(
        source.manifest_digest.as_deref(),
        Some(pushed.manifest_digest.as_str())
    );
    let by_digest = rig.running(&pinned, &named).await;
    assert_eq!(by_digest.plugin.as_deref(), Some("named-noop"));
    let mut names = rig.daemon.names();
    names.sort();
    assert_eq!(names, ["named-noop", "noop"]);
    rig.finish().await;
}

#[tokio::test]
async fn a_moved_tag_is_swapped_in_and_a_digest_pin_stays() {
    let Some(registry) = TestRegistry::start().await else {
        return;
    };
    let (v1, v2) = (version(artifacts::NOOP, "1"), version(artifacts::NOOP, "2"));
    let tag = registry.reference("team/noop", "stable");
    push(&tag, v1.clone()).await;
    let named_v1 = version(artifacts::NAMED_NOOP, "1");
    let named_tag = registry.reference("team/named", "stable");
    let first = push(&named_tag, named_v1.clone()).await;
    let pinned = registry.pinned("team/named", &first.manifest_digest);

    let rig = Rig::start(&[tag.clone(), pinned.clone()]).await;
    rig.running(&tag, &v1).await;
    let pin = rig.running(&pinned, &named_v1).await;

    // Both tags move; only the followed one is swapped.
    let moved = push(&tag, v2.clone()).await;
    push(&named_tag, version(artifacts::NAMED_NOOP, "2")).await;
    let both_moved = rig.unchanged_polls();
    let swapped = rig.running(&tag, &v2).await;
    assert_eq!(
        swapped.source.unwrap().manifest_digest.as_deref(),
        Some(moved.manifest_digest.as_str())
    );
    // Two more polls after both tags moved (only the tag is polled: a pin
    // is pulled once), and the pin still runs its version, never checked
    // or pulled again.
    rig.polled(both_moved, 2).await;
    let still = rig.running(&pinned, &named_v1).await;
    assert_eq!(
        still.source.as_ref().unwrap().manifest_digest,
        Some(first.manifest_digest)
    );
    assert_eq!(still.source, pin.source, "the pin was left alone");
    assert_eq!(still.loaded_at, pin.loaded_at, "the pin was not reloaded");
    assert_eq!(
        rig.stats.source_pulls.load(Ordering::SeqCst),
        3,
        "pulled: the tag's two versions and the pin's one"
    );
    rig.finish().await;
}

#[tokio::test]
async fn a_registry_outage_keeps_the_running_version_and_a_restart_uses_the_cache() {
    let Some(mut registry) = TestRegistry::start().await else {
        return;
    };
    let (v1, v2) = (version(artifacts::NOOP, "1"), version(artifacts::NOOP, "2"));
    let tag = registry.reference("team/noop", "stable");
    push(&tag, v1.clone()).await;
    let mut rig = Rig::start(std::slice::from_ref(&tag)).await;
    let pulled_at = rig.running(&tag, &v1).await.source.unwrap().pulled_at;
    assert!(pulled_at.is_some());

    registry.pause();
    let down = rig.status(&tag, |s| source_error(s).is_some()).await;
    let error = source_error(&down).unwrap();
    assert!(error.contains("registry 127.0.0.1"), "{error}");
    assert_eq!(down.state, FileState::Loaded, "the running version stays");
    assert_eq!(down.sha256.as_deref(), Some(digest(&v1).as_str()));
    assert_eq!(rig.daemon.names(), ["noop"]);

    // A restart while the registry is down starts the version pulled last.
    rig.unfollow().await;
    assert!(rig.daemon.names().is_empty());
    rig.follow(std::slice::from_ref(&tag)).await;
    let cached = rig.running(&tag, &v1).await.source.unwrap();
    assert_eq!(rig.daemon.names(), ["noop"]);
    assert_eq!(
        cached.pulled_at, pulled_at,
        "the cached version says when it was pulled"
    );

    // Back up, with a new version: retried, pulled and swapped in.
    registry.resume().await;
    push(&tag, v2.clone()).await;
    let back = rig.running(&tag, &v2).await;
    assert_eq!(source_error(&back), None);
    rig.finish().await;
}

#[tokio::test]
async fn content_that_does_not_match_its_digest_is_refused() {
    let Some(registry) = TestRegistry::start().await else {
        return;
    };
    let v1 = version(artifacts::NOOP, "1");
    let tag = registry.reference("team/noop", "1.0");
    let pushed = push(&tag, v1.clone()).await;
    // A pin to a digest the registry does not have.
    let wrong = registry.pinned("team/noop", &format!("sha256:{}", "0".repeat(64)));
    // A registry whose stored layer was altered after the push: same size,
    // other bytes.
    let mut altered = v1.clone();
    *altered.last_mut().unwrap() ^= 0xff;
    std::fs::write(registry.blob_file(&pushed.layer_digest), &altered).unwrap();

    let rig = Rig::start(&[tag.clone(), wrong.clone()]).await;
    let refused = rig.status(&tag, |s| source_error(s).is_some()).await;
    let error = source_error(&refused).unwrap();
    assert!(error.contains("layer: digest mismatch"), "{error}");
    assert!(error.contains(&pushed.layer_digest), "{error}");
    assert_eq!(refused.state, FileState::Pending);
    assert!(!exists(&rig.file(&tag)), "nothing unverified is written");
    let unknown = rig.status(&wrong, |s| source_error(s).is_some()).await;
    assert_eq!(unknown.state, FileState::Pending);
    assert!(rig.daemon.names().is_empty());
    rig.finish().await;
}

/// A registry that answers every manifest request with `manifest` under the
/// digest `announced` (and `/v2/` with 200): what a tampering proxy or a
/// broken mirror does. The distribution registry checks what it stores, so
/// the test cannot alter its files to get this.
async fn lying_registry(manifest: &'static str, announced: String) -> u16 {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let announced = announced.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    match stream.read(&mut byte).await {
                        Ok(1) => head.push(byte[0]),
                        _ => return,
                    }
                }
                let head = String::from_utf8_lossy(&head);
                let body = if head.contains("/manifests/") {
                    manifest
                } else {
                    "{}"
                };
                let body = if head.starts_with("HEAD ") { "" } else { body };
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: {OCI_MANIFEST}\r\n\
                     docker-content-digest: {announced}\r\ncontent-length: {}\r\n\
                     connection: close\r\n\r\n{body}",
                    if head.starts_with("HEAD ") {
                        manifest.len()
                    } else {
                        body.len()
                    }
                );
                let _ = stream.write_all(response.as_bytes()).await;
            });
        }
    });
    port
}

/// The media type of an OCI image manifest.
const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";

#[tokio::test]
async fn a_manifest_that_does_not_hash_to_its_announced_digest_is_named_so() {
    let announced = format!("sha256:{}", "ab".repeat(32));
    let port = lying_registry(r#"{"schemaVersion":2}"#, announced.clone()).await;
    let options = RegistryOptions {
        plain_http: true,
        ..RegistryOptions::default()
    };
    let registry = Registry::new(&format!("127.0.0.1:{port}/team/noop:1.0"), &options).unwrap();
    let error = registry.pull(1 << 20).await.unwrap_err().to_string();
    assert!(
        error.starts_with("manifest: digest mismatch: expected ") && error.contains(&announced),
        "the mismatch is named, with both digests: {error}"
    );
    assert!(!error.contains("not a Wasm plugin artifact"), "{error}");
}

#[tokio::test]
async fn https_to_a_plain_http_registry_says_to_pass_plain_http() {
    let Some(registry) = TestRegistry::start().await else {
        return;
    };
    let tag = registry.reference("team/noop", "1.0");
    let options = RegistryOptions {
        plain_http: false,
        ..RegistryOptions::default()
    };
    let artifact = PluginArtifact::new(
        artifacts::bytes(artifacts::NOOP),
        ComponentInfo::default(),
        "2025-01-01T00:00:00Z".into(),
        BTreeMap::new(),
    );
    let error = Registry::new(&tag, &options)
        .unwrap()
        .push(&artifact)
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("--plain-http"), "{error}");
    assert!(error.contains("plainHttp: true"), "{error}");
}

#[tokio::test]
async fn a_private_registry_is_reached_with_its_credentials_only() {
    let Some(registry) = TestRegistry::start_with(Some(("herald", "s3cret"))).await else {
        return;
    };
    let v1 = version(artifacts::NOOP, "1");
    let tag = registry.reference("private/noop", "1.0");
    let refused = push_as(&tag, v1.clone(), None)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("127.0.0.1"),
        "the error names the registry: {refused}"
    );
    let wrong = registry.docker_config("herald", "wrong");
    assert!(
        push_as(&tag, v1.clone(), Some(wrong.clone()))
            .await
            .is_err()
    );
    let good = registry.docker_config("herald", "s3cret");
    push_as(&tag, v1.clone(), Some(good.clone()))
        .await
        .expect("a push with the credentials");

    // Without credentials (and with wrong ones) the source stays pending,
    // saying why; nothing runs.
    for docker_config in [None, Some(wrong)] {
        let rig = Rig::start_as(std::slice::from_ref(&tag), docker_config).await;
        let pending = rig.status(&tag, |s| source_error(s).is_some()).await;
        let error = source_error(&pending).unwrap();
        assert!(error.contains("registry 127.0.0.1"), "{error}");
        assert!(!error.contains("s3cret"), "{error}");
        assert_eq!(pending.state, FileState::Pending);
        assert!(rig.daemon.names().is_empty());
        assert!(rig.stats.source_errors.load(Ordering::Relaxed) >= 1);
        assert_eq!(rig.stats.source_pulls.load(Ordering::Relaxed), 0);
        rig.finish().await;
    }
    let rig = Rig::start_as(std::slice::from_ref(&tag), Some(good)).await;
    rig.running(&tag, &v1).await;
    assert_eq!(rig.daemon.names(), ["noop"]);
    assert_eq!(rig.stats.source_pulls.load(Ordering::Relaxed), 1);
    rig.finish().await;
}

#[tokio::test]
async fn a_rotated_pull_secret_is_read_again_without_a_restart() {
    let Some(registry) = TestRegistry::start_with(Some(("herald", "s3cret"))).await else {
        return;
    };
    let v1 = version(artifacts::NOOP, "1");
    let tag = registry.reference("rotated/noop", "1.0");
    let good = registry.docker_config("herald", "s3cret");
    push_as(&tag, v1.clone(), Some(good.clone()))
        .await
        .expect("a push with the credentials");
    // The mounted Secret holds stale credentials when the daemon starts.
    let mounted = registry.docker_config("herald", "revoked");
    let rig = Rig::start_as(std::slice::from_ref(&tag), Some(mounted.clone())).await;
    let pending = rig.status(&tag, |s| source_error(s).is_some()).await;
    assert_eq!(pending.state, FileState::Pending);
    // The kubelet writes the rotated Secret into the same file.
    std::fs::copy(&good, &mounted).unwrap();
    rig.running(&tag, &v1).await;
    assert_eq!(rig.daemon.names(), ["noop"]);
    rig.finish().await;
}
