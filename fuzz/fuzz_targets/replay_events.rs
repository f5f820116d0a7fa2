//! Fuzz target `replay_events`: the properties of [`herald_fuzz::properties::replay`].

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| herald_fuzz::properties::replay::check(data));
