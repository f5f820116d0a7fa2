//! A test that never returns fails the suite, naming itself (the suite's
//! binary, and the CLI tests', which include this file).
//!
//! libtest has no time limit of its own: one test waiting forever holds the
//! whole binary until CI's own limit kills it, and the log's tail then shows
//! only the tests that finished. The watchdog, started before `main`,
//! looks at the process's threads every few seconds: libtest runs each test
//! on a thread named after it, so a thread whose name has a module path
//! (`admission::a_flo…`, cut to the kernel's 15 bytes) is a test. One alive
//! for [`LIMIT`] (far past the slowest test on a loaded two-core machine)
//! is taken as hung: the watchdog prints every test still running with its
//! age and ends the process with a failure.

use std::collections::HashMap;
use std::io::Write;
use std::time::{Duration, Instant};

/// How long a test may run before it is taken as hung, unless
/// `HERALD_TEST_HUNG_AFTER_SECONDS` says otherwise.
const LIMIT: Duration = Duration::from_secs(25 * 60);

/// The limit in force.
fn limit() -> Duration {
    std::env::var("HERALD_TEST_HUNG_AFTER_SECONDS")
        .ok()
        .and_then(|seconds| seconds.parse().ok())
        .map_or(LIMIT, Duration::from_secs)
}

// The one way to start a thread before libtest's `main` without a crate
// for it: a pointer in the ELF's initialiser array, which the loader calls.
// `start` only spawns a thread, which std allows there.
#[allow(unsafe_code)]
#[used]
#[unsafe(link_section = ".init_array")]
static START: extern "C" fn() = start;

extern "C" fn start() {
    let _ = std::thread::Builder::new()
        .name("watchdog".into())
        .spawn(watch);
}

/// The test threads alive now: thread id and (cut) name.
fn test_threads() -> Vec<(u64, String)> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|task| {
            let id = task.file_name().to_str()?.parse().ok()?;
            let name = std::fs::read_to_string(task.path().join("comm")).ok()?;
            let name = name.trim_end().to_owned();
            name.contains("::").then_some((id, name))
        })
        .collect()
}

fn watch() {
    let limit = limit();
    let look_every = (limit / 4).clamp(Duration::from_millis(100), Duration::from_secs(5));
    let mut first_seen: HashMap<(u64, String), Instant> = HashMap::new();
    loop {
        std::thread::sleep(look_every);
        let alive = test_threads();
        first_seen.retain(|thread, _| alive.contains(thread));
        for thread in alive {
            first_seen.entry(thread).or_insert_with(Instant::now);
        }
        if first_seen.values().any(|seen| seen.elapsed() > limit) {
            // Straight to the descriptor: libtest captures `eprintln!` of
            // the threads it starts, and this message must reach the log.
            let mut report = format!(
                "watchdog: a test has run for over {} s; still running:\n",
                limit.as_secs()
            );
            for ((_, name), seen) in &first_seen {
                report.push_str(&format!("  {name}… for {} s\n", seen.elapsed().as_secs()));
            }
            let _ = std::io::stderr().write_all(report.as_bytes());
            std::process::exit(1);
        }
    }
}

#[test]
#[ignore = "never returns on purpose: run by the test below, in a process of its own"]
fn never_returns() {
    loop {
        std::thread::park();
    }
}

#[test]
fn a_test_that_never_returns_ends_the_suite_naming_itself() {
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "watchdog::never_returns"])
        .env("HERALD_TEST_HUNG_AFTER_SECONDS", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(120) {
            child.kill().unwrap();
            panic!("the hung test was not stopped in two minutes");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("still running:\n  watchdog::never"),
        "{stderr}"
    );
}
