//! Commands that print for people end quietly when their reader goes away
//! (`herald plugin replay … | head`), as `cat` and every other Unix filter
//! does, instead of panicking on the closed pipe.

/// Restores the default action of `SIGPIPE` (ending the process), which the
/// Rust runtime sets to "ignore" so that writes fail with `EPIPE` instead,
/// and `println!` then panics with a backtrace.
///
/// Only for commands whose output is for a reader: the daemon keeps
/// ignoring `SIGPIPE`, so a log collector that goes away cannot kill it.
#[cfg(unix)]
pub(crate) fn end_quietly_when_the_reader_goes() {
    #[allow(unsafe_code)]
    // SAFETY: `signal` only changes this process's disposition of SIGPIPE
    // back to the default; it is called before any thread is started, and
    // no handler of ours is replaced.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Elsewhere there is no `SIGPIPE` to restore.
#[cfg(not(unix))]
pub(crate) fn end_quietly_when_the_reader_goes() {}
