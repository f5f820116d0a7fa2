//! Accepting connections on a listening socket without spinning, each with
//! `TCP_NODELAY` set.
//!
//! Go's net package sets `TCP_NODELAY` on every connection, so the API
//! server and controller-runtime's webhook server send small writes at
//! once; without it, an answer's last frames wait under Nagle's algorithm
//! for the peer to acknowledge the segment before them (at 1,000 reviews a
//! second that was 13 % of admission answers late by up to a millisecond:
//! BENCHMARKS.md, B15).
//!
//! `accept` fails in two ways. An error of the one connection (it was reset
//! or aborted before it was taken) says nothing about the next: take the
//! next at once. Any other error (the process or the system out of file
//! descriptors, out of memory) comes back at once on every try until
//! something else lets go of a resource: trying again at once would turn the
//! accept loop into a busy loop that starves the rest of the runtime, so the
//! loop waits [`BACKOFF`] first.

use std::future::Future;
use std::io;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};

/// How long the accept loop waits after an error that is not one
/// connection's own.
pub const BACKOFF: Duration = Duration::from_millis(250);

/// The next connection on `listener`, with `TCP_NODELAY` set.
pub async fn next(listener: &TcpListener, server: &'static str) -> TcpStream {
    let stream = retrying(
        || async { listener.accept().await.map(|(stream, _)| stream) },
        server,
    )
    .await;
    // Only fails on a socket already gone, which the first read reports.
    let _ = stream.set_nodelay(true);
    stream
}

/// The first connection `accept` hands over, retrying as the module says.
async fn retrying<T, F, Fut>(mut accept: F, server: &'static str) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = io::Result<T>>,
{
    loop {
        match accept().await {
            Ok(connection) => return connection,
            Err(err) if of_one_connection(&err) => continue,
            Err(err) => {
                tracing::warn!(server, error = %err, backoff = ?BACKOFF, "cannot accept connections");
                tokio::time::sleep(BACKOFF).await;
            }
        }
    }
}

/// Whether `err` is the failure of the one connection being accepted.
fn of_one_connection(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionRefused
            | io::ErrorKind::Interrupted
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    #[tokio::test]
    async fn accepted_connections_send_small_writes_at_once() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let client = TcpStream::connect(address).await.unwrap();
        let accepted = next(&listener, "test").await;
        assert!(accepted.nodelay().unwrap());
        drop(client);
    }

    /// Runs `retrying` over `outcomes` in paused time: what it returned,
    /// how many tries it made, and how much time it waited.
    async fn run(outcomes: Vec<io::Result<u32>>) -> (u32, usize, Duration) {
        let mut outcomes = VecDeque::from(outcomes);
        let mut tries = 0;
        let started = tokio::time::Instant::now();
        let connection = retrying(
            || {
                tries += 1;
                let next = outcomes.pop_front().expect("an outcome per try");
                async move { next }
            },
            "test",
        )
        .await;
        (connection, tries, started.elapsed())
    }

    #[tokio::test(start_paused = true)]
    async fn out_of_file_descriptors_waits_before_trying_again() {
        let emfile = || Err(io::Error::from_raw_os_error(24));
        let (connection, tries, time) = run(vec![emfile(), emfile(), Ok(7)]).await;
        assert_eq!((connection, tries), (7, 3));
        assert_eq!(time, BACKOFF * 2);
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_reset_before_it_is_taken_is_skipped_at_once() {
        let reset = || Err(io::Error::from(io::ErrorKind::ConnectionReset));
        let aborted = || Err(io::Error::from(io::ErrorKind::ConnectionAborted));
        let (connection, tries, time) = run(vec![reset(), aborted(), Ok(9)]).await;
        assert_eq!((connection, tries), (9, 3));
        assert_eq!(time, Duration::ZERO);
    }
}
