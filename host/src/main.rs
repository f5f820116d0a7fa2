//! The `herald` binary: all the work is in the library.

fn main() -> std::process::ExitCode {
    bound_malloc_arenas();
    herald::cli::main()
}

/// Caps glibc's malloc arenas at the number of CPUs (at least 2), unless
/// the operator set `MALLOC_ARENA_MAX`.
///
/// glibc gives threads up to eight arenas per CPU and rarely returns an
/// arena's free pages, and a new thread may take a fresh arena and grow
/// it. Plugins' calls run on a fixed pool (`plugin/pool.rs`), but a hot
/// reload loads the new version on tokio's blocking pool, whose threads
/// exit after ten idle seconds, so reloads further apart than that each
/// bring a new thread. When each plugin version had a thread of its own, a
/// soak with a swap every 20 seconds gained about 3 MiB of RSS every few
/// swaps with the default (28 → 35 MiB in 7 minutes), and stayed flat at
/// 23 MiB with two arenas (`soak/README.md`).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn bound_malloc_arenas() {
    if std::env::var_os("MALLOC_ARENA_MAX").is_some() {
        return;
    }
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get().max(2));
    let arenas = libc::c_int::try_from(cpus).unwrap_or(libc::c_int::MAX);
    #[allow(unsafe_code)]
    // SAFETY: mallopt only sets one of malloc's tunables; it runs first
    // thing in main, before any other thread exists. A refusal (0) leaves
    // glibc's default, which is merely less frugal.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, arenas);
    }
}

/// Other C libraries (musl) have no per-thread arenas to bound.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn bound_malloc_arenas() {}
