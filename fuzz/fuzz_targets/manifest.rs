//! Fuzz target `manifest`: the properties of [`herald_fuzz::properties::manifest`].

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| herald_fuzz::properties::manifest::check(data));
