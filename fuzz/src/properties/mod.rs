//! The properties each fuzz target checks, one module per input. A check
//! takes the fuzzer's bytes and panics, naming the property and the input,
//! when one does not hold; parsers must never panic themselves.
//!
//! This module is compiled twice: by the fuzz crate (nightly, libFuzzer) and
//! by `host/tests/fuzz_corpus.rs` (stable, `#[path]`), which replays every
//! file of `fuzz/corpus/<target>/` through the same checks in CI. It may use
//! only `herald`, `arbitrary` and `serde_json`.

pub mod config;
pub mod manifest;
pub mod replay;
pub mod selectors;

/// True when `text` is one line free of control characters: error messages
/// quote their input and become log lines, and that input must not be able
/// to break the line, forge another one or drive a terminal.
fn is_one_line(text: &str) -> bool {
    !text.contains(char::is_control)
}
