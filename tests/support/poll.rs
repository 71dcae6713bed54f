//! Waiting for something asynchronous by polling it against a deadline, the
//! one way every test here waits: no sleep stands in for synchronisation.
//! Included with `#[path]` by the test crates that do not use `support`.
#![allow(dead_code)]

use std::future::Future;
use std::time::{Duration, Instant};

/// Polls `f` until it gives `Some`, failing the test after `within`. The
/// pause between polls only paces the polling; nothing waits on it.
pub async fn until<T, F, Fut>(within: Duration, what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + within;
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(Instant::now() < deadline, "not within {within:?}: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
