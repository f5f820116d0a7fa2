//! Every command that prints for a reader ends quietly when its reader goes
//! away (`herald plugin replay … | head`), as `cat` does: killed by SIGPIPE
//! or exiting cleanly, never a panic with a backtrace.

use super::process::{herald, repo};
use herald_test_artifacts as artifacts;
use std::os::unix::process::ExitStatusExt;

/// Runs herald with `args`, its stdout a pipe whose reader is already gone.
fn with_closed_stdout(args: &[&str]) {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let output = herald().args(args).stdout(writer).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !stderr.contains("panicked"),
        "herald {args:?} panicked:\n{stderr}"
    );
    assert!(
        output.status.success() || output.status.signal() == Some(13),
        "herald {args:?} should end by SIGPIPE (13) or succeed: {:?}\n{stderr}",
        output.status
    );
}

#[test]
fn printing_commands_end_quietly_when_their_reader_goes_away() {
    let events = repo().join("examples/events/pods.jsonl");
    let events = events.to_str().unwrap();
    with_closed_stdout(&["version"]);
    with_closed_stdout(&["plugin", "check", artifacts::POD_LIFECYCLE]);
    with_closed_stdout(&[
        "plugin",
        "check",
        artifacts::POD_LIFECYCLE,
        "--output",
        "json",
    ]);
    with_closed_stdout(&[
        "plugin",
        "replay",
        artifacts::POD_LIFECYCLE,
        "--events",
        events,
    ]);
    with_closed_stdout(&["plugin", "rbac", artifacts::POD_LIFECYCLE]);
    // A server that prints for people too: it ends itself, cleanly.
    let plugins = super::process::temp_dir("pipe-demo");
    std::fs::copy(artifacts::POD_LIFECYCLE, plugins.join("pod-lifecycle.wasm")).unwrap();
    with_closed_stdout(&[
        "demo",
        "--duration",
        "60s",
        "--listen",
        "127.0.0.1:0",
        "--plugins",
        plugins.to_str().unwrap(),
    ]);
}
