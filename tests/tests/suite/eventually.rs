//! The suite's one wait for what cannot be awaited,
//! [`herald_tests::eventually`]: it hands back what the look that held
//! found, and when it gives up it says what never happened, where, and the
//! last thing seen, in time even if a look hangs.

use herald_tests::{PATIENCE, eventually};
use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// The message of the panic `future` ends in.
async fn panic_of(future: impl Future<Output = ()> + Send + 'static) -> String {
    let error = tokio::spawn(future)
        .await
        .expect_err("the wait should have given up");
    let payload = error.into_panic();
    payload
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_else(|| format!("{payload:?}"))
}

#[tokio::test]
async fn the_value_found_by_the_look_that_holds_is_returned() {
    let mut looks = 0;
    let value = eventually("the third look", PATIENCE, async || {
        looks += 1;
        (looks == 3).then_some(looks * 10)
    })
    .await;
    assert_eq!((value, looks), (30, 3));
}

#[tokio::test]
async fn giving_up_names_what_never_happened_and_the_last_thing_seen() {
    static LOOKS: AtomicU32 = AtomicU32::new(0);
    let message = panic_of(async {
        eventually(
            "the counter reaches 1000",
            Duration::from_millis(50),
            async || -> Result<(), String> {
                Err(format!("at {}", LOOKS.fetch_add(1, Ordering::SeqCst)))
            },
        )
        .await
    })
    .await;
    let last = LOOKS.load(Ordering::SeqCst) - 1;
    assert!(
        message.contains("waiting for: the counter reaches 1000")
            && message.ends_with(&format!("last seen: at {last}"))
            && message.contains(file!()),
        "{message}"
    );
}

#[tokio::test]
async fn a_probe_that_hangs_fails_in_time() {
    let gave_up = panic_of(async {
        eventually("an answer", Duration::from_millis(50), async || {
            std::future::pending::<bool>().await
        })
        .await
    });
    let message = tokio::time::timeout(Duration::from_secs(5), gave_up)
        .await
        .expect("a wait whose probe hangs gives up at its patience");
    assert!(
        message.contains("(the last one was still running)")
            && message.contains("waiting for: an answer"),
        "{message}"
    );
}
