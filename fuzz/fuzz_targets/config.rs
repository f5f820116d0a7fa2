//! Fuzz target `config`: the properties of [`herald_fuzz::properties::config`].

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| herald_fuzz::properties::config::check(data));
