//! The `herald` binary's command line, linked into the benchmark crate so
//! that B11 can run `herald-child compile-artifact …` exactly as the daemon
//! runs `herald compile-artifact …` (same library, same engine settings,
//! so the artifact it writes opens in the benchmark's engine). Cargo hands
//! its path to the benchmark and to the quick test as
//! `CARGO_BIN_EXE_herald-child`.
//!
//! One addition: `herald-child --rusage FILE PROGRAM ARGS…` runs `PROGRAM
//! ARGS…` as its only child and writes that child's resource usage to FILE
//! (`user_us system_us maxrss_kib`). The benchmark cannot read a peak RSS
//! from a child of its own: Linux starts a child's `ru_maxrss` at the peak
//! RSS of the process that spawned it (the parent's memory map is the one
//! `execve` replaces), so a compile spawned by a benchmark holding loaded
//! components would report their memory as its own. Spawned from this small
//! process instead, the child's figure is its own.

use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    if args.next().is_some_and(|a| a == "--rusage") {
        let (Some(file), Some(program)) = (args.next(), args.next()) else {
            eprintln!("usage: herald-child --rusage FILE PROGRAM [ARGS…]");
            return ExitCode::from(2);
        };
        return run_measured(file.as_ref(), &program, args);
    }
    herald::cli::main()
}

/// Runs `program` with `args`, writes its usage to `file`, and exits as it did.
fn run_measured(
    file: &std::path::Path,
    program: &std::ffi::OsStr,
    args: impl Iterator<Item = std::ffi::OsString>,
) -> ExitCode {
    let status = match Command::new(program).args(args).status() {
        Ok(status) => status,
        Err(e) => {
            eprintln!(
                "herald-child: cannot run {}: {e}",
                program.to_string_lossy()
            );
            return ExitCode::from(127);
        }
    };
    // SAFETY: an all-zero `rusage` is a valid value of this plain C struct.
    #[allow(unsafe_code)]
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is valid and writable for the call. This process has
    // had exactly one child, now reaped, so RUSAGE_CHILDREN is that child's.
    #[allow(unsafe_code)]
    let got = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    let micros = |t: libc::timeval| t.tv_sec * 1_000_000 + t.tv_usec;
    let line = format!(
        "{} {} {}\n",
        micros(usage.ru_utime),
        micros(usage.ru_stime),
        usage.ru_maxrss
    );
    if got != 0 || std::fs::write(file, line).is_err() {
        eprintln!(
            "herald-child: cannot record the usage in {}",
            file.display()
        );
        return ExitCode::from(125);
    }
    match status.code() {
        Some(0) => ExitCode::SUCCESS,
        Some(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        None => {
            eprintln!(
                "herald-child: {} was killed ({status})",
                program.to_string_lossy()
            );
            ExitCode::from(1)
        }
    }
}
