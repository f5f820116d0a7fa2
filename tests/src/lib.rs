//! Helpers shared by Herald's integration tests: loading the built plugins,
//! reading what they log, and waiting for what cannot be awaited.

pub use herald_test_artifacts as artifacts;

mod eventually;
pub use eventually::{Outcome, PATIENCE, Patience, eventually};

use herald::capability::log::{MemorySink, OwnedLogLine};
use herald::plugin::{LoadOptions, LoadedPlugin, PluginEngine};
use std::sync::{Arc, OnceLock};

/// The engine shared by the tests of one process (as the daemon shares one).
pub fn engine() -> &'static PluginEngine {
    static ENGINE: OnceLock<PluginEngine> = OnceLock::new();
    ENGINE
        .get_or_init(|| PluginEngine::new(Default::default()).expect("creating the plugin engine"))
}

/// Loads a built plugin with `config`, logging into a fresh memory sink.
pub fn load(path: &str, config: Option<serde_json::Value>) -> (LoadedPlugin, MemorySink) {
    load_with(
        path,
        LoadOptions {
            config: config.map(|c| c.to_string()),
            ..LoadOptions::default()
        },
    )
}

/// Loads a built plugin with the given options, but logging into a fresh memory sink.
pub fn load_with(path: &str, options: LoadOptions) -> (LoadedPlugin, MemorySink) {
    let sink = MemorySink::default();
    let options = LoadOptions {
        sink: Arc::new(sink.clone()),
        ..options
    };
    let plugin = LoadedPlugin::load(engine(), &artifacts::bytes(path), options)
        .unwrap_or_else(|e| panic!("loading {path}: {e}"));
    (plugin, sink)
}

/// The variable that lets a run skip the tests that cannot run where it
/// runs (those needing the embedded API server's fault injection, on a real
/// cluster).
pub const ALLOW_SKIP: &str = "HERALD_TEST_ALLOW_SKIP";

/// Skips `test`, saying `why`, where skipping was asked for: with
/// [`ALLOW_SKIP`] set and `CI` unset. Anywhere else it fails the test, so a
/// run never passes a test that checked nothing without having said so.
pub fn skip(test: &str, why: &str) {
    let ci = std::env::var_os("CI").is_some();
    let allowed = std::env::var_os(ALLOW_SKIP).is_some();
    assert!(
        allowed && !ci,
        "{test} cannot run here: {why}. {}",
        if ci {
            "Skipping is not allowed under CI.".to_owned()
        } else {
            format!("Set {ALLOW_SKIP}=1 to skip it.")
        }
    );
    eprintln!("{test}: SKIPPED ({ALLOW_SKIP} is set): {why}");
}

/// The messages of the lines a plugin logged.
pub fn messages(lines: &[OwnedLogLine]) -> Vec<String> {
    lines.iter().map(|line| line.message.clone()).collect()
}

/// The host's own log (its `tracing` events at warn and above, and the
/// audit lines plugins' calls cause), captured for the whole test process
/// as JSON lines, so tests can check that a failure was logged with the
/// right fields and that an audit line holds nothing it must not.
#[derive(Debug)]
pub struct HostLog {
    lines: Arc<std::sync::Mutex<Vec<String>>>,
}

impl HostLog {
    /// The lines captured so far that contain every one of `needles`.
    pub fn lines_with(&self, needles: &[&str]) -> Vec<String> {
        self.lines
            .lock()
            .unwrap()
            .iter()
            .filter(|line| needles.iter().all(|n| line.contains(n)))
            .cloned()
            .collect()
    }
}

/// Collects one event's output and files it as lines when done.
struct LineWriter {
    buffer: Vec<u8>,
    lines: Arc<std::sync::Mutex<Vec<String>>>,
}

impl std::io::Write for LineWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.buffer.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for LineWriter {
    fn drop(&mut self) {
        let text = String::from_utf8_lossy(&self.buffer);
        self.lines
            .lock()
            .unwrap()
            .extend(text.lines().map(str::to_owned));
    }
}

/// Starts capturing the host's log (once per process) and returns it.
pub fn host_log() -> &'static HostLog {
    static LOG: OnceLock<HostLog> = OnceLock::new();
    LOG.get_or_init(|| {
        let lines = Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = lines.clone();
        let subscriber = tracing_subscriber::fmt()
            .json()
            .event_format(herald::logging::EscapedJson::default())
            .with_env_filter(tracing_subscriber::EnvFilter::new(format!(
                "warn,{}=info",
                herald::capability::audit::AUDIT_TARGET
            )))
            .with_writer(move || LineWriter {
                buffer: Vec::new(),
                lines: sink.clone(),
            })
            .finish();
        tracing::subscriber::set_global_default(subscriber)
            .expect("no other global subscriber in the test process");
        HostLog { lines }
    })
}

/// `GET path` on a daemon's plain-HTTP endpoints at `address`: the status
/// and the body; `None` when the daemon does not answer (within 5 s).
pub fn http_get(address: &str, path: &str) -> Option<(u16, String)> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(address).ok()?;
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    let status = head.split(' ').nth(1)?.parse().ok()?;
    Some((status, body.to_owned()))
}
