//! Fuzz target `selectors`: the properties of [`herald_fuzz::properties::selectors`].

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| herald_fuzz::properties::selectors::check(data));
