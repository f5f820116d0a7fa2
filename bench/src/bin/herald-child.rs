//! The `herald` binary's command line, linked into the benchmark crate so
//! that B11 can run `herald-child compile-artifact …` exactly as the daemon
//! runs `herald compile-artifact …` (same library, same engine settings,
//! so the artifact it writes opens in the benchmark's engine). Cargo hands
//! its path to the benchmark and to the quick test as
//! `CARGO_BIN_EXE_herald-child`.

fn main() -> std::process::ExitCode {
    herald::cli::main()
}
