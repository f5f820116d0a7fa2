//! The `herald` command line linked into the suite, so that its sharding
//! tests run real `herald run` processes (real HTTP to the API server,
//! real signals): cargo builds this binary for the suite and hands its path
//! over as `CARGO_BIN_EXE_herald-replica`, which it cannot do for the
//! `herald` binary of another package. `herald run` starts compilations
//! from `/proc/self/exe`, so this binary also serves `compile-artifact`.

fn main() -> std::process::ExitCode {
    herald::cli::main()
}
