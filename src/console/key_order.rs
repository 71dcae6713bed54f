//! The console list's orders ([`ListIndex`]: every key in natural order,
//! [`crate::link::natural_order`], `table-2` before `table-10`, with each
//! link's searchable text, and both time orders) kept following the
//! snapshot's tables.
//!
//! The snapshot's table is hashed, so it cannot page. The index follows the
//! table by the shards an edit replaced ([`LinkTable::changed_keys`]): an
//! edit costs the index the links of a shard that changed (a few hundred
//! compared, the changed ones moved), not a sort of all of them. It lives
//! in the console, off the redirect path: a thread of the console's
//! ([`keep_following`]) and console requests update it.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use super::list_index::ListIndex;
use super::scans::ScanCounts;
use crate::snapshot::{LinkTable, Snapshot};

/// [`ListIndex`] kept up to date with the snapshot's tables.
#[derive(Debug, Default)]
pub struct KeyOrder {
    keys: ListIndex,
    /// The table `keys` reflects.
    base: Option<Arc<LinkTable>>,
    /// Issue 33: how many of the index's blocks [`KeyOrder::prime_some`]
    /// has asked the scan counts about since the index was last built.
    primed: usize,
}

impl KeyOrder {
    /// Takes `keys`, sorted from `table` elsewhere (off the lock), as the
    /// order of `table`.
    fn replace(&mut self, keys: ListIndex, table: Arc<LinkTable>) {
        self.keys = keys;
        self.base = Some(table);
        self.primed = 0;
    }

    /// Marks known scanned the links of the next `blocks` blocks the scan
    /// counts say were (issue 33: so "never scanned" is a test of a bit,
    /// not a scan-count lookup a link). `Some(true)` once every block has
    /// been asked since the index was built; `None` while the counts are
    /// not available.
    pub fn prime_some(&mut self, scans: &dyn ScanCounts, blocks: usize) -> Option<bool> {
        let total = self.keys.block_count();
        if self.primed >= total {
            return Some(true);
        }
        let (from, to) = (self.primed, self.primed.saturating_add(blocks));
        let keys = &mut self.keys;
        let available = scans.with_all_time(&mut |count| {
            keys.mark_scanned_in(from, to, &|k| count(k) > 0);
        });
        if !available {
            return None;
        }
        self.primed = to;
        Some(to >= total)
    }

    /// Marks known scanned links the scan counts said were (a "never
    /// scanned" walk's lookups that found scans), so the next walk passes
    /// over them.
    pub fn mark_scanned<'k>(&mut self, keys: impl IntoIterator<Item = &'k str>) {
        for k in keys {
            self.keys.mark_scanned(k);
        }
    }

    /// Brings the keys up to `table` by the shards an edit replaced; false,
    /// changing nothing, when that takes a sort of every key instead
    /// (nothing followed yet, or a table replaced wholesale: a full
    /// reload, a resize).
    pub fn try_follow(&mut self, table: &Arc<LinkTable>) -> bool {
        let Some(base) = self.base.clone() else {
            return false;
        };
        if Arc::ptr_eq(&base, table) {
            return true;
        }
        let Some((old, new)) = table.changed_keys(&base) else {
            return false;
        };
        // Each key of a changed shard, once: its entries move only when
        // what the list reads of it changed.
        let mut seen: HashSet<&str> = HashSet::with_capacity(old.len() + new.len());
        for key in old.into_iter().chain(new) {
            if !seen.insert(key) {
                continue;
            }
            let was = base.get(key).zip(base.texts(key));
            let is = table.get(key).zip(table.texts(key));
            if was != is {
                self.keys.replace(was, is);
            }
        }
        self.base = Some(Arc::clone(table));
        true
    }

    /// Brings the orders up to `table` and returns them.
    pub fn follow(&mut self, table: &Arc<LinkTable>) -> &ListIndex {
        if !self.try_follow(table) {
            self.replace(sort(table), Arc::clone(table));
        }
        &self.keys
    }
}

/// Every link of `table`, in every order.
fn sort(table: &LinkTable) -> ListIndex {
    ListIndex::build(table.iter_with_texts())
}

/// How often [`keep_following`] looks for a new table.
const FOLLOW_INTERVAL: Duration = Duration::from_millis(200);

/// Keeps `order` following `snapshot` from a thread of its own, so that
/// no list request pays for a sort of every key (about 0.15 s at a
/// million): the first after a start, a resize or a full reload sorts
/// here, outside the lock, and a request finds the order ready. The
/// thread ends once the console's state is gone.
pub fn keep_following(
    order: &Arc<Mutex<KeyOrder>>,
    snapshot: Arc<Snapshot>,
) -> std::io::Result<()> {
    keep_following_with(order, snapshot, None)
}

/// Blocks of the index one lock of [`keep_following_with`] primes: a few
/// thousand scan-count lookups, a millisecond or two off list requests.
const PRIME_BLOCKS: usize = 16;

/// [`keep_following`], also priming each index it builds with what
/// `scans` knows of every link's scans ([`KeyOrder::prime_some`]), a few
/// blocks a lock, once the counts are available.
pub fn keep_following_with(
    order: &Arc<Mutex<KeyOrder>>,
    snapshot: Arc<Snapshot>,
    scans: Option<Arc<dyn ScanCounts>>,
) -> std::io::Result<()> {
    let order: Weak<Mutex<KeyOrder>> = Arc::downgrade(order);
    std::thread::Builder::new()
        .name("console-keys".into())
        .spawn(move || {
            let mut seen = None;
            while let Some(order) = order.upgrade() {
                let generation = snapshot.generation();
                if snapshot.is_loaded() && seen != Some(generation) {
                    let table = Arc::clone(&snapshot.load());
                    let followed = order
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .try_follow(&table);
                    if !followed {
                        // The sort outside the lock: list requests go on.
                        let keys = sort(&table);
                        order
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .replace(keys, table);
                    }
                    seen = Some(generation);
                }
                let priming = scans.as_deref().is_some_and(|scans| {
                    let mut order = order.lock().unwrap_or_else(|p| p.into_inner());
                    order.base.is_some() && order.prime_some(scans, PRIME_BLOCKS) == Some(false)
                });
                drop(order);
                if priming {
                    std::thread::yield_now();
                } else {
                    std::thread::sleep(FOLLOW_INTERVAL);
                }
            }
        })
        .map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Polls `f` until it holds, for at most five seconds.
    fn within_seconds(what: &str, f: impl Fn() -> bool) {
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !f() {
            assert!(std::time::Instant::now() < deadline, "{what}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn a_thread_keeps_the_order_following_the_snapshot() {
        use crate::snapshot::{Change, TableBuilder};
        let upsert = |key: String| Change::Upsert {
            key,
            doc: crate::link::test_document(serde_json::json!({"url": "https://example.com/"})),
        };
        let snapshot = Snapshot::new();
        let mut b = TableBuilder::default();
        b.apply((0..3000).map(|i| upsert(format!("k{i:05}"))));
        snapshot.publish(b.build(None));
        let order = Arc::new(Mutex::new(KeyOrder::default()));
        keep_following(&order, Arc::clone(&snapshot)).expect("thread");
        let len = || order.lock().expect("lock").keys.len();
        snapshot.mark_loaded();
        within_seconds("sorted after the load", || len() == 3000);
        snapshot.apply(vec![upsert("a-new-one".into())], None);
        within_seconds("an edit followed", || {
            order.lock().expect("lock").keys.keys().next() == Some("a-new-one")
        });
        let table = Arc::clone(&snapshot.load());
        assert!(
            order.lock().expect("lock").try_follow(&table),
            "already there"
        );
    }

    /// Every order and the search of `index`, as lists of keys.
    fn walks(index: &ListIndex) -> Vec<Vec<String>> {
        use super::super::list_index::{Start, Time};
        let mut all = Vec::new();
        for (time, newest) in [
            (Time::Key, false),
            (Time::Created, false),
            (Time::Created, true),
            (Time::Changed, false),
            (Time::Changed, true),
        ] {
            let mut keys = Vec::new();
            index.walk_time(time, newest, Start::Edge, false, |k, _| {
                keys.push(k.to_owned());
                true
            });
            all.push(keys);
        }
        let mut found = Vec::new();
        index.search(b"new", false, Start::Edge, false, |k, _| {
            found.push(k.to_owned());
            true
        });
        all.push(found);
        all
    }

    #[test]
    fn edits_across_many_shards_are_followed_as_a_new_sort_would_order_them() {
        use crate::snapshot::{Change, TableBuilder};
        let upsert = |key: String, hour: u32, url: &str| Change::Upsert {
            key,
            doc: crate::link::test_document(serde_json::json!({
                "url": url,
                "created_at": format!("2026-01-01T{:02}:00:00Z", hour % 24),
                "changed_at": format!("2026-01-02T{:02}:00:00Z", (hour * 7) % 24),
            })),
        };
        let mut b = TableBuilder::default();
        b.apply((0..3000).map(|i| upsert(format!("k{i}"), i, "https://example.com/")));
        let table = Arc::new(b.build(None));
        assert!(table.shard_count() > 4, "{} shards", table.shard_count());
        let mut order = KeyOrder::default();
        order.follow(&table);
        let mut current = table;
        for step in 0..40u32 {
            let mut next = LinkTable::clone(&current);
            let k = |i: u32| format!("k{}", (step * 97 + i) % 3000);
            next.apply([
                upsert(format!("new-{step}"), step, "https://example.com/NEW"),
                upsert(k(0), step + 3, "https://example.com/moved"),
                Change::Delete { key: k(1) },
            ]);
            let next = Arc::new(next);
            assert!(order.try_follow(&next), "step {step} followed per edit");
            assert_eq!(
                walks(order.follow(&next)),
                walks(&sort(&next)),
                "step {step}"
            );
            current = next;
        }
    }

    /// Scan counts of a set of keys, one scan each.
    struct Scanned(std::sync::Mutex<HashSet<String>>);

    impl ScanCounts for Scanned {
        fn key(&self, _: &str, _: chrono::NaiveDate) -> Option<super::super::scans::KeyScans> {
            None
        }
        fn scans_since(&self, _: &[&str], _: chrono::NaiveDate) -> Option<Vec<u64>> {
            None
        }
        fn top_keys(&self, _: chrono::NaiveDate, _: usize) -> Option<Vec<(String, u64)>> {
            None
        }
        fn daily_totals(&self, _: chrono::NaiveDate) -> Option<Vec<(chrono::NaiveDate, u64)>> {
            None
        }
        fn with_all_time(&self, f: &mut dyn FnMut(&super::super::scans::AllTimeScans<'_>)) -> bool {
            let set = self.0.lock().expect("lock");
            f(&|k| u64::from(set.contains(k)));
            true
        }
    }

    /// The keys in key order not known scanned.
    fn not_known_scanned(order: &Mutex<KeyOrder>) -> Vec<String> {
        let order = order.lock().expect("lock");
        let mut out = Vec::new();
        order.keys.walk_keys_where(
            super::super::list_index::Start::Edge,
            false,
            &|s| s.any_not_known_scanned(),
            |k, c| {
                if !c.known_scanned() {
                    out.push(k.to_owned());
                }
                true
            },
        );
        out
    }

    #[test]
    fn the_thread_primes_each_index_it_builds_with_the_scans_known() {
        use crate::snapshot::{Change, TableBuilder};
        let upsert = |key: String| Change::Upsert {
            key,
            doc: crate::link::test_document(serde_json::json!({"url": "https://example.com/"})),
        };
        let snapshot = Snapshot::new();
        let mut b = TableBuilder::default();
        b.apply((0..3000).map(|i| upsert(format!("k{i:05}"))));
        snapshot.publish(b.build(None));
        let scans = Arc::new(Scanned(std::sync::Mutex::new(
            (0..3000)
                .filter(|i| i % 10 != 3)
                .map(|i| format!("k{i:05}"))
                .collect(),
        )));
        let order = Arc::new(Mutex::new(KeyOrder::default()));
        keep_following_with(
            &order,
            Arc::clone(&snapshot),
            Some(scans.clone() as Arc<dyn ScanCounts>),
        )
        .expect("thread");
        snapshot.mark_loaded();
        let want: Vec<String> = (0..3000)
            .filter(|i| i % 10 == 3)
            .map(|i| format!("k{i:05}"))
            .collect();
        within_seconds("primed", || not_known_scanned(&order) == want);
        // A link made since is not known scanned until a lookup says so.
        snapshot.apply(vec![upsert("a-new-one".into())], None);
        within_seconds("the edit followed", || {
            order.lock().expect("lock").keys.len() == 3001
        });
        assert_eq!(not_known_scanned(&order)[0], "a-new-one");
        order.lock().expect("lock").mark_scanned(["a-new-one"]);
        assert_eq!(not_known_scanned(&order), want);
    }
}
