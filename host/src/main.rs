//! The `herald` binary: all the work is in the library.

fn main() -> std::process::ExitCode {
    herald::cli::main()
}
