//! Running the `herald` binary and talking to it.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// How long a test waits for something that should happen promptly; only a
/// safety net, every wait is for an observable event.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// The repository root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A `herald` command, with a compiled-artifact cache of this test run's
/// own rather than the user's.
pub fn herald() -> Command {
    herald_at(Path::new(env!("CARGO_BIN_EXE_herald")))
}

/// [`herald`], running the executable at `program` (a copy of it).
pub fn herald_at(program: &Path) -> Command {
    let mut command = Command::new(program);
    command
        .env_remove("RUST_LOG")
        .env_remove("KUBECONFIG")
        .env("XDG_CACHE_HOME", artifact_cache());
    command
}

/// This run's compiled-artifact cache, in the build's own scratch folder
/// (which `cargo clean` empties); the caches of earlier runs, whose
/// processes are gone, are removed the first time it is asked for.
fn artifact_cache() -> &'static Path {
    static CACHE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    CACHE.get_or_init(|| {
        let root = Path::new(env!("CARGO_TARGET_TMPDIR"));
        for entry in std::fs::read_dir(root).into_iter().flatten().flatten() {
            let name = entry.file_name();
            let earlier = name
                .to_str()
                .and_then(|n| n.strip_prefix("herald-cli-cache-"))
                .is_some_and(|pid| !Path::new("/proc").join(pid).exists());
            if earlier {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
        root.join(format!("herald-cli-cache-{}", std::process::id()))
    })
}

/// Runs `herald args…` to completion.
pub fn run(args: &[&str]) -> Output {
    herald().args(args).output().expect("running herald")
}

/// Held while a test builds a Go plugin: the first build compiles the Go
/// SDK's Kubernetes modules for wasm into Go's build cache and every later
/// one reuses them, where two at once would each compile them, sharing
/// the machine's cores.
pub fn one_go_build_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static BUILDING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    BUILDING.lock().unwrap_or_else(|e| e.into_inner())
}

/// A fresh, empty directory, removed when the returned value is dropped.
pub fn temp_dir(what: &str) -> herald::scratch::ScratchDir {
    herald::scratch::ScratchDir::new(&format!("cli-{what}")).unwrap()
}

/// A running `herald` process whose stderr (its log) is read line by line.
pub struct Running {
    child: Child,
    lines: Receiver<String>,
    /// Every log line read so far.
    pub log: Vec<String>,
}

impl Running {
    /// Starts `herald args…`; its stdout and stderr are read as one log.
    pub fn start(args: &[&str]) -> Running {
        let mut command = herald();
        command.args(args);
        Running::spawn(command)
    }

    /// Starts `herald apiserver` on a free loopback port, writing its
    /// kubeconfig to `kubeconfig`, and waits until it serves.
    pub fn apiserver(kubeconfig: &Path) -> Running {
        let mut server = Running::start(&[
            "apiserver",
            "--listen",
            "127.0.0.1:0",
            "--kubeconfig-out",
            kubeconfig.to_str().unwrap(),
        ]);
        server.wait_for_log("kubectl --kubeconfig");
        server
    }

    /// Starts `command`; its stdout and stderr are read as one log.
    pub fn spawn(mut command: Command) -> Running {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting herald");
        let (send, lines) = std::sync::mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        let stderr = child.stderr.take().unwrap();
        let to_log = |stream: Box<dyn Read + Send>, send: std::sync::mpsc::Sender<String>| {
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    if send.send(line).is_err() {
                        break;
                    }
                }
            });
        };
        to_log(Box::new(stdout), send.clone());
        to_log(Box::new(stderr), send);
        Running {
            child,
            lines,
            log: Vec::new(),
        }
    }

    /// Reads log lines until one contains `text`; returns it.
    pub fn wait_for_log(&mut self, text: &str) -> String {
        self.wait_for_log_with(&[text])
    }

    /// Reads log lines until one contains every one of `texts`; returns it.
    pub fn wait_for_log_with(&mut self, texts: &[&str]) -> String {
        let matches = |line: &str| texts.iter().all(|text| line.contains(text));
        if let Some(line) = self.log.iter().find(|l| matches(l)) {
            return line.clone();
        }
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.log.push(line.clone());
                    if matches(&line) {
                        return line;
                    }
                }
                Err(RecvTimeoutError::Timeout) => panic!(
                    "no log line with {texts:?} within {PATIENCE:?}; log:\n{}",
                    self.log.join("\n")
                ),
                Err(RecvTimeoutError::Disconnected) => panic!(
                    "herald exited before logging {texts:?}; log:\n{}",
                    self.log.join("\n")
                ),
            }
        }
    }

    /// The address of the endpoints, from the start-up log line.
    pub fn endpoints(&mut self) -> String {
        let line = self.wait_for_log("endpoints: http://");
        let start = line.find("http://").unwrap() + "http://".len();
        line[start..]
            .split(['/', ' ', '"'])
            .next()
            .unwrap()
            .to_owned()
    }

    /// Sends SIGTERM.
    pub fn terminate(&self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("running kill");
        assert!(status.success());
    }

    /// Waits for the process to exit (reading the rest of its log); returns
    /// its exit code and how long it took.
    pub fn wait(&mut self) -> (Option<i32>, Duration) {
        let started = Instant::now();
        for line in self.lines.iter() {
            self.log.push(line);
        }
        let status = self.child.wait().expect("waiting for herald");
        (status.code(), started.elapsed())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `GET path` on `address`: the status code and the body.
pub fn get(address: &str, path: &str) -> (u16, String) {
    let response = request(address, path, None);
    (response.status, response.body)
}

/// An answer of the endpoints.
pub struct Response {
    /// The status code.
    pub status: u16,
    /// The `content-type` header, if any.
    pub content_type: Option<String>,
    /// The body.
    pub body: String,
}

/// `GET path` on `address`, with an `Accept` header if `accept` is given.
pub fn request(address: &str, path: &str, accept: Option<&str>) -> Response {
    let mut stream = std::net::TcpStream::connect(address).expect("connecting to the endpoints");
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    let accept = accept
        .map(|a| format!("Accept: {a}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {address}\r\n{accept}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .expect("an HTTP status line");
    let content_type = head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("content-type")
            .then(|| value.trim().to_owned())
    });
    Response {
        status,
        content_type,
        body: body.to_owned(),
    }
}

/// Waits until `GET path` answers `status`; returns the body.
pub fn wait_for_status(address: &str, path: &str, status: u16) -> String {
    wait_for_response(address, path, |code, _| code == status).1
}

/// Waits until `GET path` gives a response `wanted` accepts; returns it.
pub fn wait_for_response(
    address: &str,
    path: &str,
    wanted: impl Fn(u16, &str) -> bool,
) -> (u16, String) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let (code, body) = get(address, path);
        if wanted(code, &body) {
            return (code, body);
        }
        assert!(
            Instant::now() < deadline,
            "{path} answered {code} {body:?} for {PATIENCE:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs a tool a test depends on (`what` says which and where) to
/// completion, printing how long it took; fails the test with its output if
/// it does not succeed, and with `advice` (how to install it) if it cannot
/// start at all.
pub fn succeed(what: &str, command: &mut Command, advice: &str) -> std::process::Output {
    let started = Instant::now();
    let output = command
        .output()
        .unwrap_or_else(|error| panic!("{what}: cannot start ({error}): {advice}"));
    eprintln!("{what}: {:.1} s", started.elapsed().as_secs_f64());
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}
