//! The in-memory copy of every link that the redirect path reads.
//!
//! Requests never wait on a store: they read an immutable [`LinkTable`] through
//! an `ArcSwap` (a pointer load, no lock), and the store's follower publishes a
//! new table after each batch of changes. A new table shares all but the
//! changed shards with the old one ([`table`]), so an edit costs O(1) in the
//! number of links; [`file`] keeps a copy on disk so a restart serves at once.

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use arc_swap::ArcSwap;
use serde_json::Value;

use crate::link::Document;

pub mod file;
mod follower;
mod shard;
mod table;

pub use follower::FollowerStats;
pub use shard::{LinkView, Texts};
pub use table::{LinkTable, LiveLink, TableBuilder};

/// One change read from a store.
#[derive(Debug, Clone)]
pub enum Change {
    Upsert {
        key: String,
        doc: Document,
    },
    Delete {
        key: String,
    },
    /// A document the store could not hand over whole (over the size limit):
    /// counted as invalid, with the reason, like any document that is not a link.
    Invalid {
        key: String,
        reason: String,
    },
}

/// An upsert of the document `v` (a JSON object literal), for tests.
#[cfg(test)]
pub(crate) fn test_upsert(key: &str, v: Value) -> Change {
    Change::Upsert {
        key: key.into(),
        doc: crate::link::test_document(v),
    }
}

/// The shared snapshot plus the readiness the admin listener reports.
#[derive(Debug)]
pub struct Snapshot {
    table: ArcSwap<LinkTable>,
    loaded: AtomicBool,
    problem: Mutex<Option<String>>,
    generation: AtomicU64,
    /// Told the generation at each publication, for writers waiting to be
    /// served ([`Snapshot::wait_until`]); the redirect path never reads it.
    published: tokio::sync::watch::Sender<u64>,
    follower: FollowerStats,
}

impl Default for Snapshot {
    fn default() -> Self {
        Self {
            table: ArcSwap::from_pointee(LinkTable::default()),
            loaded: AtomicBool::new(false),
            problem: Mutex::new(Some("links not loaded yet".into())),
            generation: AtomicU64::new(0),
            published: tokio::sync::watch::Sender::new(0),
            follower: FollowerStats::new(),
        }
    }
}

impl Snapshot {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// The current table; cheap enough to call on every request.
    #[inline]
    pub fn load(&self) -> arc_swap::Guard<Arc<LinkTable>> {
        self.table.load()
    }

    /// Publishes a new table (after the first full load, or a batch of changes).
    pub fn publish(&self, table: LinkTable) {
        self.table.store(Arc::new(table));
        let generation = self.generation.fetch_add(1, Ordering::Release) + 1;
        self.published.send_replace(generation);
    }

    /// Waits until the table `holds` (checked now and after each
    /// publication, never by polling), for at most `within`; says whether it
    /// did. This is how a write is answered only once this server serves it:
    /// the follower publishes the change, the writer sees its own document.
    pub async fn wait_until(&self, holds: impl Fn(&LinkTable) -> bool, within: Duration) -> bool {
        // Subscribed before the first look, so a publication in between
        // is not missed.
        let mut published = self.published.subscribe();
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if holds(&self.load()) {
                return true;
            }
            match tokio::time::timeout_at(deadline, published.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) | Err(_) => return holds(&self.load()),
            }
        }
    }

    /// Applies a batch of changes read up to store sequence `seq` to a copy of
    /// the current table (which shares every untouched shard) and publishes
    /// it, warning once per invalid document. Only one follower calls this,
    /// so there is no lost update between the load and the store.
    pub fn apply(&self, changes: Vec<Change>, seq: Option<Value>) {
        let current = self.load();
        let moved = seq.is_some() && seq.as_ref() != current.seq();
        if changes.is_empty() && !moved {
            return;
        }
        let mut table = LinkTable::clone(&current);
        drop(current);
        if !changes.is_empty() {
            self.follower.applied(changes.len());
        }
        for (key, reason) in table.apply(changes) {
            tracing::warn!(id = %key, %reason, "skipping document that is not a valid link");
        }
        if let Some(seq) = seq {
            table.set_seq(seq);
        }
        self.publish(table);
    }

    /// Counts publications; tests and metrics use it to see progress.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    pub fn mark_loaded(&self) {
        self.loaded.store(true, Ordering::Release);
        self.follower.applied(0);
        self.set_problem(None);
    }

    pub fn is_loaded(&self) -> bool {
        self.loaded.load(Ordering::Acquire)
    }

    /// Records (or clears) why the link source is unhealthy, for `/readyz`.
    /// A problem means the table may be behind the store, so it also marks
    /// the store away for [`follower`](Self::follower).
    pub fn set_problem(&self, problem: Option<String>) {
        if let Ok(mut p) = self.problem.lock() {
            self.follower.set_away(problem.is_some());
            *p = problem;
        }
    }

    /// The follower's counters, read without a lock.
    pub fn follower(&self) -> &FollowerStats {
        &self.follower
    }

    pub fn problem(&self) -> Option<String> {
        self.problem.lock().ok().and_then(|p| p.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn publishing_bumps_the_generation() {
        let s = Snapshot::new();
        assert!(!s.is_loaded());
        assert!(s.problem().is_some());
        s.apply(
            vec![test_upsert("abcde", json!({"url": "/x"}))],
            Some(json!(1)),
        );
        s.mark_loaded();
        assert_eq!(s.generation(), 1);
        assert!(s.is_loaded() && s.problem().is_none());
        assert_eq!(s.load().live_url("abcde", 0), Some("/x"));
        assert_eq!(s.load().seq(), Some(&json!(1)));
        s.apply(Vec::new(), Some(json!(1)));
        assert_eq!(s.generation(), 1, "nothing new, nothing published");
        s.apply(Vec::new(), Some(json!(2)));
        assert_eq!(s.generation(), 2, "a sequence that moved is published");
    }

    #[tokio::test]
    async fn a_waiter_wakes_at_the_publication_that_holds() {
        let s = Snapshot::new();
        let short = Duration::from_millis(20);
        let has = |t: &LinkTable| t.live_url("abcde", 0).is_some();
        assert!(
            !s.wait_until(has, short).await,
            "never published: times out"
        );
        let publisher = Arc::clone(&s);
        let waiting = tokio::spawn(async move {
            let s = publisher;
            s.wait_until(has, Duration::from_secs(30)).await
        });
        tokio::task::yield_now().await;
        s.apply(Vec::new(), Some(json!(1)));
        s.apply(
            vec![test_upsert("abcde", json!({"url": "/x"}))],
            Some(json!(2)),
        );
        assert!(waiting.await.expect("waiter"), "woken by the publication");
        assert!(s.wait_until(has, short).await, "already held: at once");
    }
}
