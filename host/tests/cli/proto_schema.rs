//! The protobuf schema Herald transcodes built-in kinds with
//! (`host/src/informer/protobuf/schema.json`) is what its generator,
//! `tools/k8s-proto-schema`, writes today: the generator's own `go test`
//! and `go vet` pass, and running it gives the committed file byte for
//! byte, so neither can drift from the other.
//!
//! Needs Go and the Go module proxy (or a module cache holding
//! `k8s.io/client-go` v0.37.2), as the Go SDK's tests do. Without them this
//! test fails saying so: it is never skipped.

use super::process::{repo, succeed};
use std::process::Command;

const INSTALL: &str = "install Go 1.24 or later (https://go.dev/dl/) with the Go module proxy reachable (.ci/run checks for it)";
const GENERATOR: &str = "tools/k8s-proto-schema";

fn go(args: &[&str]) -> Command {
    let mut command = Command::new("go");
    command.current_dir(repo().join(GENERATOR)).args(args);
    command
}

#[test]
fn the_committed_protobuf_schema_is_what_its_generator_writes() {
    succeed(
        "go vet in the schema generator",
        &mut go(&["vet", "./..."]),
        INSTALL,
    );
    let tested = succeed(
        "go test in the schema generator",
        &mut go(&["test", "./..."]),
        INSTALL,
    );
    assert!(
        String::from_utf8_lossy(&tested.stdout).contains("ok  \therald.dev/tools/k8s-proto-schema"),
        "{}",
        String::from_utf8_lossy(&tested.stdout)
    );
    let generated = succeed("the schema generator", &mut go(&["run", "."]), INSTALL);
    let committed = std::fs::read(repo().join("host/src/informer/protobuf/schema.json")).unwrap();
    assert!(
        generated.stdout == committed,
        "host/src/informer/protobuf/schema.json is not what {GENERATOR} writes: regenerate it \
         (cd {GENERATOR} && go run . > ../../host/src/informer/protobuf/schema.json)"
    );
}
