//! Kubernetes' own round-trip fuzzing, aimed at Herald's transcoder: for
//! every kind in the protobuf schema, random fully populated objects (the
//! fuzzer Kubernetes tests its codecs with, from a fixed seed) are encoded
//! by Go's protobuf serializer, and Herald must write from those bytes
//! exactly the JSON Go's serializer writes for the same object
//! (`tools/k8s-proto-schema/roundtrip` makes the pairs).
//!
//! The suite runs a fixed-seed slice (`SEED`, `OBJECTS` per kind); a larger
//! run is asked for with `HERALD_PROTO_FUZZ_SEED`, `HERALD_PROTO_FUZZ_OBJECTS`
//! and `HERALD_PROTO_FUZZ_MAX_ELEMENTS` (TESTING.md gives its size and
//! result).
//! Needs Go and the Go module proxy, as the schema's own test does; without
//! them it fails saying so, never skips.

use super::process::{repo, succeed, temp_dir};
use herald::informer::protobuf::{Transcoder, difference};
use std::process::Command;

const INSTALL: &str = "install Go 1.24 or later (https://go.dev/dl/) with the Go module proxy reachable (.ci/run checks for it)";
/// The suite's slice: this seed, this many objects of every kind, lists
/// and maps of up to this many entries (Kubernetes' own fuzzing fills one
/// at most; more reach map ordering and packed numbers).
const SEED: u64 = 1;
const OBJECTS: usize = 4;
const MAX_ELEMENTS: usize = 3;

/// A number from the environment variable `name`, or `default`.
fn setting<T: std::str::FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(text) => text
            .parse()
            .unwrap_or_else(|_| panic!("{name}={text} is not a number")),
        Err(_) => default,
    }
}

#[test]
fn fuzzed_objects_of_every_kind_transcode_to_the_json_go_writes() {
    let seed: u64 = setting("HERALD_PROTO_FUZZ_SEED", SEED);
    let objects: usize = setting("HERALD_PROTO_FUZZ_OBJECTS", OBJECTS);
    let max_elements: usize = setting("HERALD_PROTO_FUZZ_MAX_ELEMENTS", MAX_ELEMENTS);
    let out = temp_dir("proto-roundtrip");
    let made = succeed(
        "the round-trip generator",
        Command::new("go")
            .current_dir(repo().join("tools/k8s-proto-schema"))
            .args(["run", "./roundtrip", "-seed"])
            .arg(seed.to_string())
            .arg("-objects")
            .arg(objects.to_string())
            .arg("-max-elements")
            .arg(max_elements.to_string())
            .arg("-out")
            .arg(out.path()),
        INSTALL,
    );
    eprint!("{}", String::from_utf8_lossy(&made.stderr));
    let index = std::fs::read_to_string(out.join("index.tsv")).unwrap();
    let transcoder = Transcoder::new(false);
    let mut kinds = std::collections::BTreeSet::new();
    let mut failures = Vec::new();
    let mut checked = 0;
    for line in index.lines() {
        let [name, api_version, kind] = line.split('\t').collect::<Vec<_>>()[..] else {
            panic!("index.tsv: {line:?}");
        };
        kinds.insert((api_version, kind));
        let wire = std::fs::read(out.join(format!("{name}.pb"))).unwrap();
        let expected = std::fs::read_to_string(out.join(format!("{name}.json"))).unwrap();
        let expected = expected.strip_suffix('\n').unwrap_or(&expected);
        let mut json = String::new();
        let verdict = match transcoder.object(&wire, &mut json) {
            Err(error) => Some(format!("refused: {error}")),
            Ok(()) => difference(&json, expected),
        };
        if let Some(verdict) = verdict {
            failures.push(format!("{api_version} {kind} (object {name}): {verdict}"));
        }
        checked += 1;
    }
    eprintln!(
        "{checked} objects of {} kinds checked (seed {seed}), {} differ",
        kinds.len(),
        failures.len()
    );
    assert!(
        checked >= kinds.len() * objects * 9 / 10,
        "{checked} objects"
    );
    assert!(
        failures.is_empty(),
        "{} of {checked} fuzzed objects do not transcode to Go's JSON:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
