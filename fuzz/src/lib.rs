//! Herald's fuzz targets share this crate: [`properties`] holds what each
//! target checks. The targets themselves (`fuzz_targets/*.rs`) are one line
//! each, and `host/tests/fuzz_corpus.rs` includes the same module to replay
//! the committed corpus on stable.

pub mod properties;
