//! The public URL a running server answers with (the `Link` header, QR
//! codes, the redirect policy's own origin, the console's and the API's
//! short URLs), which `qrtag init --public-url NEW --force` may change
//! while it runs. Behind an `ArcSwap`, so a scan reads it without a lock
//! and never waits on the store that records it; a watcher task
//! ([`watch`]) reads the recorded one now and then and swaps it in.

use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;

use crate::store::LinkStore;
use crate::values::public_url::PublicUrl;

/// How often the watcher reads the recorded public URL: one cheap read
/// (an SQLite `meta` row, or CouchDB's `_design/qrtag`) a second.
pub const POLL: Duration = Duration::from_secs(1);

/// The current public URL, shared by every listener's state.
#[derive(Debug, Clone)]
pub struct LiveUrl(Arc<ArcSwap<PublicUrl>>);

impl LiveUrl {
    pub fn new(url: PublicUrl) -> Self {
        Self(Arc::new(ArcSwap::from_pointee(url)))
    }

    /// The current URL, for the length of one answer: an answer uses one
    /// value throughout, even if it changes meanwhile.
    pub fn load(&self) -> arc_swap::Guard<Arc<PublicUrl>> {
        self.0.load()
    }

    /// The current URL, to keep past an `await` (a render on the blocking
    /// pool).
    pub fn get(&self) -> PublicUrl {
        PublicUrl::clone(&self.0.load())
    }

    /// Makes `url` current; returns the one it replaced, if it differed.
    pub fn set(&self, url: PublicUrl) -> Option<PublicUrl> {
        let old = self.0.load_full();
        if *old == url {
            return None;
        }
        let previous = self.0.swap(Arc::new(url));
        Some(PublicUrl::clone(&previous))
    }
}

/// What a read of the recorded public URL changes (pure): a valid one that
/// differs from the current one replaces it; none recorded, or one that
/// does not parse, changes nothing (a bad one is said by the caller).
pub fn next(current: &PublicUrl, recorded: Option<&str>) -> Result<Option<PublicUrl>, String> {
    let Some(text) = recorded else {
        return Ok(None);
    };
    match PublicUrl::parse(text) {
        Ok(url) if url == *current => Ok(None),
        Ok(url) => Ok(Some(url)),
        Err(e) => Err(e.to_string()),
    }
}

/// Follows the public URL recorded with the links into `live` every
/// [`POLL`], logging one line when it changes (and once when a read fails
/// or gives an unusable one, until reads succeed again). Runs until
/// aborted.
pub fn watch(store: Arc<dyn LinkStore>, live: LiveUrl) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        // The first read a second after start: `serve` has just read it,
        // and the first load of the links should not wait behind it.
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + POLL, POLL);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut said_problem = false;
        loop {
            ticks.tick().await;
            let read = store.public_url().await.map_err(|e| e.to_string());
            match read.and_then(|r| next(&live.load(), r.as_deref())) {
                Ok(Some(url)) => {
                    said_problem = false;
                    if let Some(old) = live.set(url.clone()) {
                        tracing::info!(from = %old, to = %url, "public URL changed: answering with the one recorded with the links");
                    }
                }
                Ok(None) => said_problem = false,
                Err(e) if !said_problem => {
                    said_problem = true;
                    tracing::warn!(error = %e, "cannot read the public URL recorded with the links; answering with {}", live.load());
                }
                Err(_) => {}
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> PublicUrl {
        PublicUrl::parse(s).expect("url")
    }

    #[test]
    fn only_a_valid_different_one_replaces() {
        let a = url("https://a.example");
        assert_eq!(next(&a, None), Ok(None));
        assert_eq!(next(&a, Some("https://a.example")), Ok(None));
        assert_eq!(
            next(&a, Some("https://b.example")),
            Ok(Some(url("https://b.example")))
        );
        assert!(next(&a, Some("https://b.example/path")).is_err());
    }

    #[test]
    fn set_says_what_it_replaced() {
        let live = LiveUrl::new(url("https://a.example"));
        let copy = live.clone();
        assert_eq!(live.set(url("https://a.example")), None);
        assert_eq!(
            live.set(url("https://b.example")),
            Some(url("https://a.example"))
        );
        assert_eq!(copy.get(), url("https://b.example"), "shared");
    }
}
