//! The committed fuzz corpora, replayed on stable: every file of
//! `fuzz/corpus/<target>/` goes through the same property checks as the
//! cargo-fuzz target of that name (`fuzz/src/properties/`, included here),
//! so CI proves without nightly that every input the fuzzer kept, crashes
//! found and fixed included, still passes. See `fuzz/README.md`.

#[path = "../../fuzz/src/properties/mod.rs"]
mod properties;

use std::path::{Path, PathBuf};

/// Runs `check` on every file of `fuzz/corpus/<target>/` and fails naming
/// each input that broke a property (or panicked the parser).
fn replay_corpus(target: &str, check: fn(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read the corpus {}: {e}", dir.display()))
        .map(|entry| entry.expect("a corpus entry").path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    assert!(
        files.len() >= 10,
        "the {target} corpus has only {} files: was it committed?",
        files.len()
    );
    let failures: Vec<String> = files
        .iter()
        .filter_map(|path| {
            let data = std::fs::read(path).expect("a readable corpus file");
            let outcome = std::panic::catch_unwind(|| check(&data));
            outcome.err().map(|panic| {
                let message = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_default();
                format!("{}: {message}", path.display())
            })
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} {target} inputs break a property:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

#[test]
fn every_config_corpus_input_upholds_the_config_properties() {
    replay_corpus("config", properties::config::check);
}

#[test]
fn every_replay_events_corpus_input_upholds_the_event_file_properties() {
    replay_corpus("replay_events", properties::replay::check);
}

#[test]
fn every_selectors_corpus_input_upholds_the_selector_properties() {
    replay_corpus("selectors", properties::selectors::check);
}

#[test]
fn every_manifest_corpus_input_upholds_the_manifest_properties() {
    replay_corpus("manifest", properties::manifest::check);
}
