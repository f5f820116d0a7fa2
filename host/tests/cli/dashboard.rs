//! The dashboard in a real browser: `herald demo` with the example plugins,
//! Debian's headless Chromium driven by chromedriver through the WebDriver
//! HTTP API (plain HTTP requests, no client crate), checking that the page
//! lists every plugin and informer and that deliveries stream in live; that
//! at every width from a phone's to a wide screen nothing overflows sideways
//! and the Informers table is whole; that a seventh tab loads and goes live
//! (a hidden tab gives its stream back); and that the feed says it is stale
//! once the daemon is gone.
//!
//! Needs `chromium` and `chromedriver` on `PATH` (Debian: `apt-get install
//! chromium chromium-driver`; `.ci/run` does). Without them the test is
//! skipped, saying so, except where `CI` is set: there it fails.
//!
//! With `HERALD_DASHBOARD_SCREENSHOT=FILE.png` set, the test also saves a
//! screenshot of the page once it is live (how `docs/dashboard.png` is made).

use super::process::{PATIENCE, Running, get, temp_dir};
use herald_test_artifacts as artifacts;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const INSTALL: &str = "install Debian's chromium and chromium-driver \
     (`apt-get install chromium chromium-driver`; .ci/run does)";

/// The first executable called `name` on `PATH`.
fn on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
}

/// Chromium and chromedriver, or `None` (skip) outside CI.
fn browser() -> Option<(PathBuf, PathBuf)> {
    let chromium = on_path("chromium");
    let driver = on_path("chromedriver");
    if let (Some(chromium), Some(driver)) = (&chromium, &driver) {
        return Some((chromium.clone(), driver.clone()));
    }
    let missing: Vec<&str> = [("chromium", &chromium), ("chromedriver", &driver)]
        .into_iter()
        .filter(|(_, found)| found.is_none())
        .map(|(name, _)| name)
        .collect();
    assert!(
        std::env::var_os("CI").is_none(),
        "{} not on PATH, and CI is set: the browser test must run in CI; {INSTALL}",
        missing.join(" and ")
    );
    eprintln!("skipped: {} not on PATH; {INSTALL}", missing.join(" and "));
    None
}

/// A running chromedriver, killed when dropped.
struct Driver {
    child: Child,
    address: String,
}

impl Driver {
    fn start(program: &PathBuf) -> Driver {
        // A free port, given back just before chromedriver takes it.
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new(program)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|error| panic!("cannot start chromedriver ({error}): {INSTALL}"));
        let driver = Driver {
            child,
            address: format!("127.0.0.1:{port}"),
        };
        let deadline = Instant::now() + PATIENCE;
        loop {
            if TcpStream::connect(&driver.address).is_ok()
                && driver.call("GET", "/status", None)["value"]["ready"] == json!(true)
            {
                return driver;
            }
            assert!(Instant::now() < deadline, "chromedriver never became ready");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// One WebDriver command: `method path` with a JSON body; the response
    /// JSON. An error response fails the test with what the driver said.
    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let mut stream = TcpStream::connect(&self.address).expect("connecting to chromedriver");
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{body}",
            self.address,
            body.len()
        )
        .unwrap();
        // chromedriver keeps the connection open whatever the request says:
        // read the head, then as many bytes as it announces.
        let mut reader = BufReader::new(stream);
        let mut head = String::new();
        loop {
            let mut line = String::new();
            reader
                .read_line(&mut line)
                .expect("reading chromedriver's answer");
            if line == "\r\n" || line.is_empty() {
                break;
            }
            head.push_str(&line.to_ascii_lowercase());
        }
        let status: u16 = head
            .split(' ')
            .nth(1)
            .and_then(|code| code.parse().ok())
            .unwrap_or_else(|| panic!("no HTTP status line from chromedriver: {head:?}"));
        let length = head.lines().find_map(|line| {
            line.strip_prefix("content-length:")
                .and_then(|n| n.trim().parse::<usize>().ok())
        });
        let body = match length {
            Some(length) => {
                let mut body = vec![0; length];
                reader
                    .read_exact(&mut body)
                    .expect("reading chromedriver's answer");
                String::from_utf8_lossy(&body).into_owned()
            }
            None => dechunk(&mut reader),
        };
        let value: Value = serde_json::from_str(&body).unwrap_or_else(|e| {
            panic!("chromedriver answered {status} with no JSON ({e}): {body}")
        });
        assert!(
            status < 400,
            "chromedriver: {method} {path} answered {status}: {value}"
        );
        value
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The body of a chunked HTTP response, read up to its last chunk.
fn dechunk(reader: &mut impl BufRead) -> String {
    let mut body = Vec::new();
    loop {
        let mut size = String::new();
        reader.read_line(&mut size).expect("reading a chunk size");
        let size = usize::from_str_radix(size.trim(), 16).expect("a chunk size");
        let mut chunk = vec![0; size + 2];
        reader.read_exact(&mut chunk).expect("reading a chunk");
        if size == 0 {
            return String::from_utf8_lossy(&body).into_owned();
        }
        body.extend_from_slice(&chunk[..size]);
    }
}

/// A browser session, closed when dropped.
struct Session<'a> {
    driver: &'a Driver,
    id: String,
    /// The browser's profile, removed once the session is closed.
    _profile: herald::scratch::ScratchDir,
}

impl<'a> Session<'a> {
    fn open(driver: &'a Driver, chromium: &PathBuf) -> Session<'a> {
        let profile = temp_dir("chromium");
        let created = driver.call(
            "POST",
            "/session",
            Some(json!({"capabilities": {"alwaysMatch": {
                "browserName": "chrome",
                "goog:chromeOptions": {
                    "binary": chromium,
                    "args": [
                        "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                        "--no-first-run", "--disable-background-networking",
                        "--disable-component-update", "--disable-sync",
                        "--window-size=1500,1400", "--hide-scrollbars",
                        format!("--user-data-dir={}", profile.display()),
                    ],
                },
            }}})),
        );
        let id = created["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {created}"))
            .to_owned();
        Session {
            driver,
            id,
            _profile: profile,
        }
    }

    /// A PNG of the window.
    fn screenshot(&self) -> Vec<u8> {
        use base64::Engine as _;
        let png = self
            .driver
            .call("GET", &format!("/session/{}/screenshot", self.id), None);
        base64::engine::general_purpose::STANDARD
            .decode(png["value"].as_str().expect("a base64 PNG"))
            .expect("a base64 PNG")
    }

    fn go(&self, url: &str) {
        self.driver.call(
            "POST",
            &format!("/session/{}/url", self.id),
            Some(json!({ "url": url })),
        );
    }

    /// Resizes the window to `width` × `height` CSS pixels.
    fn resize(&self, width: u32, height: u32) {
        self.driver.call(
            "POST",
            &format!("/session/{}/window/rect", self.id),
            Some(json!({ "width": width, "height": height })),
        );
    }

    /// Opens a new tab and switches to it; returns its handle.
    fn new_tab(&self) -> String {
        let created = self.driver.call(
            "POST",
            &format!("/session/{}/window/new", self.id),
            Some(json!({ "type": "tab" })),
        );
        let handle = created["value"]["handle"]
            .as_str()
            .unwrap_or_else(|| panic!("no new tab: {created}"))
            .to_owned();
        self.switch_to(&handle);
        handle
    }

    /// Makes the tab `handle` the current one.
    fn switch_to(&self, handle: &str) {
        self.driver.call(
            "POST",
            &format!("/session/{}/window", self.id),
            Some(json!({ "handle": handle })),
        );
    }

    /// Runs `script` in the page; what it returned.
    fn run(&self, script: &str) -> Value {
        self.driver.call(
            "POST",
            &format!("/session/{}/execute/sync", self.id),
            Some(json!({ "script": script, "args": [] })),
        )["value"]
            .clone()
    }
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        let _ = std::panic::catch_unwind(|| {
            self.driver
                .call("DELETE", &format!("/session/{}", self.id), None)
        });
    }
}

/// How the page lays out at the window's width: whether anything overflows
/// sideways, and where the Informers table ends against its section.
const LAYOUT: &str = r##"
    const root = document.documentElement;
    const table = document.getElementById("informers-table").getBoundingClientRect();
    const section = document.getElementById("informers-section");
    const box = section.getBoundingClientRect();
    const style = getComputedStyle(section);
    const wide = table.width > 0 ? document.querySelector("#informers-section .wide") : null;
    return {
        viewport: window.innerWidth,
        scrollWidth: root.scrollWidth,
        clientWidth: root.clientWidth,
        tableLeft: table.left,
        tableRight: table.right,
        sectionContentRight: box.right - parseFloat(style.paddingRight) - parseFloat(style.borderRightWidth),
        innerScroll: wide ? wide.scrollWidth - wide.clientWidth : 0,
        rows: document.querySelectorAll("#informers tr").length,
    };
"##;

/// What the test reads off the page: each from the DOM, as a person sees it.
const READ_PAGE: &str = r##"
    const texts = (selector) => [...document.querySelectorAll(selector)].map((e) => e.textContent);
    return {
        stream: document.body.dataset.stream,
        received: Number(document.body.dataset.received || 0),
        plugins: [...document.querySelectorAll("[data-plugin]")].map((e) => e.dataset.plugin),
        replica: document.getElementById("replica").textContent,
        informers: [...document.querySelectorAll("[data-informer]")].map((e) => e.dataset.informer),
        clusters: [...document.querySelectorAll("[data-cluster]")].map((e) => e.dataset.cluster),
        reloads: texts("#reloads tr"),
        reads: Object.fromEntries([...document.querySelectorAll("[data-reads]")]
            .map((e) => [e.dataset.reads, e.textContent])),
        feed: [...document.querySelectorAll("#feed tr")].map((row) =>
            [...row.cells].map((cell) => cell.textContent).join(" | ")),
        watching: document.getElementById("feed-dropped").textContent,
        streamState: document.getElementById("stream-state").textContent,
        polled: document.body.dataset.polled || "",
        stale: document.body.dataset.stale || "",
    };
"##;

#[test]
fn the_dashboard_lists_the_plugins_and_streams_live_deliveries_in_chromium() {
    let Some((chromium, chromedriver)) = browser() else {
        return;
    };
    let plugins = temp_dir("dashboard");
    for (name, path) in [
        ("pod-lifecycle", artifacts::POD_LIFECYCLE),
        ("image-policy", artifacts::IMAGE_POLICY),
        ("rollout-watch", artifacts::ROLLOUT_WATCH),
        ("fleet-fanout", artifacts::FLEET_FANOUT),
    ] {
        std::fs::copy(path, plugins.join(format!("{name}.wasm"))).unwrap();
    }
    let mut demo = Running::start(&[
        "demo",
        "--churn-interval",
        "100ms",
        "--listen",
        "127.0.0.1:0",
        "--plugins",
        plugins.to_str().unwrap(),
    ]);
    let line = demo.wait_for_log("dashboard     http://");
    let url = line
        .trim()
        .trim_start_matches("dashboard")
        .trim()
        .to_owned();

    let driver = Driver::start(&chromedriver);
    let session = Session::open(&driver, &chromium);
    session.go(&url);

    let wanted = [
        "fleet-fanout",
        "image-policy",
        "pod-lifecycle",
        "rollout-watch",
    ];
    let deadline = Instant::now() + PATIENCE;
    let page = loop {
        let page = session.run(READ_PAGE);
        let listed = page["plugins"] == json!(wanted);
        let live = page["stream"] == "live";
        let feed = page["feed"].as_array().cloned().unwrap_or_default();
        let streamed = |plugin: &str| {
            feed.iter()
                .any(|row| row.as_str().unwrap().contains(plugin))
        };
        if listed && live && streamed("pod-lifecycle") && streamed("rollout-watch") {
            break page;
        }
        assert!(
            Instant::now() < deadline,
            "within {PATIENCE:?} the page did not show every plugin and live deliveries; it shows:\n{page:#}\ndemo log:\n{}",
            demo.log.join("\n")
        );
        std::thread::sleep(Duration::from_millis(200));
    };

    assert!(
        page["replica"].as_str().unwrap().contains("dispatching"),
        "the demo's only replica dispatches: {page:#}"
    );
    for informer in ["pods", "deployments.apps", "replicasets.apps"] {
        assert!(
            page["informers"]
                .as_array()
                .unwrap()
                .contains(&json!(informer)),
            "informer {informer} listed: {page:#}"
        );
    }
    // The demo's two clusters: fleet-fanout watches ConfigMaps in both, the
    // others run on the default one, east, whose deliveries say so.
    for cluster in ["east", "west"] {
        assert!(
            page["clusters"]
                .as_array()
                .unwrap()
                .contains(&json!(cluster)),
            "an informer of cluster {cluster} listed: {page:#}"
        );
    }
    assert!(
        page["feed"]
            .as_array()
            .unwrap()
            .iter()
            .any(|row| row.as_str().unwrap().contains("pod-lifecycle | east | ")),
        "a delivery names its cluster: {page:#}"
    );
    for plugin in wanted {
        assert!(
            page["reloads"].as_array().unwrap().iter().any(|row| row
                .as_str()
                .unwrap()
                .contains("loaded")
                && row.as_str().unwrap().contains(plugin)),
            "the reload history shows {plugin} loaded: {page:#}"
        );
    }
    // What each plugin reads, and how it is allowed.
    assert_eq!(
        page["reads"]["pod-lifecycle"], "reads Pod (all namespaces) by default",
        "{page:#}"
    );
    // The churn goes on: deliveries keep arriving after the first ones.
    let seen = page["received"].as_u64().unwrap();
    let deadline = Instant::now() + PATIENCE;
    while session.run(READ_PAGE)["received"].as_u64().unwrap() <= seen {
        assert!(
            Instant::now() < deadline,
            "no new delivery reached the page"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Its own open stream counts among the watchers from the first render on.
    let watching = session.run(READ_PAGE)["watching"].clone();
    assert!(
        watching.as_str().is_some_and(|w| !w.starts_with("0/")),
        "the page watches, yet says {watching}"
    );

    // No width makes the page scroll sideways, and the Informers table is
    // whole within its section (between about 1290 and 1590 px it used to
    // be cut off).
    for width in [360, 480, 800, 1024, 1290, 1366, 1440, 1590, 1920] {
        session.resize(width, 1000);
        let layout = session.run(LAYOUT);
        let number = |key: &str| layout[key].as_f64().unwrap();
        assert!(
            number("scrollWidth") <= number("clientWidth"),
            "at {width} px the page overflows sideways: {layout:#}"
        );
        assert!(number("rows") >= 3.0, "{layout:#}");
        assert!(
            number("tableLeft") >= 0.0
                && number("tableRight") <= number("sectionContentRight") + 0.5
                && number("innerScroll") <= 0.0,
            "at {width} px the Informers table is cut off: {layout:#}"
        );
    }
    session.resize(1500, 1400);

    // Six more tabs: the browser's six connections to the daemon are not
    // all held by streams, so the seventh tab loads and goes live too.
    let mut tabs = Vec::new();
    for _ in 0..6 {
        tabs.push(session.new_tab());
        session.go(&url);
    }
    let deadline = Instant::now() + PATIENCE;
    loop {
        let page = session.run(READ_PAGE);
        if page["polled"] == "yes" && page["stream"] == "live" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the seventh tab did not load and go live: {page:#}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // The six hidden tabs have given their streams back: the daemon counts
    // one watcher, the visible tab. (Switching to a hidden tab to ask it
    // would show it, so the daemon is asked.)
    let address = url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    let deadline = Instant::now() + PATIENCE;
    loop {
        let (status, body) = get(&address, "/api/dashboard");
        assert_eq!(status, 200, "{body}");
        let snapshot: Value = serde_json::from_str(&body).unwrap();
        if snapshot["feed"]["watchers"] == 1 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "hidden tabs keep their streams: {}",
            snapshot["feed"]
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    if let Some(file) = std::env::var_os("HERALD_DASHBOARD_SCREENSHOT") {
        // One plugin's log lines shown, and a few polls more, so that rates
        // and latencies have values.
        session.run(r#"document.querySelector("[data-logs-of=pod-lifecycle]").open = true"#);
        std::thread::sleep(Duration::from_secs(8));
        std::fs::write(&file, session.screenshot()).unwrap();
        eprintln!("screenshot saved to {}", PathBuf::from(file).display());
    }
    // The daemon goes away: the visible tab says its feed and its data are
    // stale instead of showing the last numbers as if they were live.
    let last = tabs.last().unwrap().clone();
    session.switch_to(&last);
    drop(demo);
    let deadline = Instant::now() + PATIENCE;
    loop {
        let page = session.run(READ_PAGE);
        if page["stream"] == "stale"
            && page["stale"] == "yes"
            && page["streamState"].as_str().unwrap().contains("stale")
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the page does not say it is stale with the daemon gone: {page:#}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(session);
    drop(driver);
}
