//! Every key in natural order ([`crate::link::natural_order`]: `table-2` before
//! `table-10`), for the console's paged list.
//!
//! The snapshot's table is hashed, so it cannot page. This index keeps the
//! keys sorted in blocks of a few hundred, each block one string (about 9
//! bytes a 5-character key, 9 MB at a million), and follows the table by
//! the shards an edit replaced ([`LinkTable::changed_keys`]): an edit costs
//! the index a few hundred keys, not a sort of all of them. It lives in the
//! console, off the redirect path: a thread of the console's
//! ([`keep_following`]) and console requests update it.

use std::cmp::Ordering;
use std::collections::HashSet;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use crate::link::natural_order;
use crate::snapshot::{LinkTable, Snapshot};

/// Keys per block when built; a block splits at twice this.
const BLOCK: usize = 256;

/// Sorted keys in blocks: `text` holds them back to back, `ends[i]` is where
/// key `i` ends.
#[derive(Debug, Default, Clone)]
struct Block {
    text: String,
    ends: Vec<u32>,
}

impl Block {
    fn from_keys<'a>(keys: impl IntoIterator<Item = &'a str>) -> Self {
        let mut b = Block::default();
        for k in keys {
            b.text.push_str(k);
            b.ends.push(b.text.len() as u32);
        }
        b
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    fn key(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.text[start..self.ends[i] as usize]
    }

    fn keys(&self) -> impl Iterator<Item = &str> {
        (0..self.len()).map(|i| self.key(i))
    }

    /// Index of the first key not less than `key`.
    fn lower_bound(&self, key: &str) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            if natural_order::cmp(self.key(mid), key) == Ordering::Less {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

/// A position between keys: block, then index in the block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Pos(usize, usize);

/// The sorted keys.
#[derive(Debug, Default, Clone)]
pub struct SortedKeys {
    blocks: Vec<Block>,
    len: usize,
}

impl SortedKeys {
    /// From keys in any order, each once.
    pub fn build<'a>(keys: impl IntoIterator<Item = &'a str>) -> Self {
        // Sorted by a number that orders them first (`natural_order::head`):
        // the keys lie scattered through the table's shards, and most
        // comparisons then end without reading them.
        let mut all: Vec<(u64, &str)> = keys
            .into_iter()
            .map(|k| (natural_order::head(k), k))
            .collect();
        all.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| natural_order::cmp(a.1, b.1)));
        let blocks = all
            .chunks(BLOCK)
            .map(|c| Block::from_keys(c.iter().map(|&(_, k)| k)))
            .collect();
        Self {
            blocks,
            len: all.len(),
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Removes `removed` and adds `added` (neither need be present/absent).
    pub fn update(&mut self, removed: &[&str], added: &[&str]) {
        for k in removed {
            self.remove(k);
        }
        for k in added {
            self.insert(k);
        }
    }

    /// The block that holds, or would hold, `key`.
    fn block_for(&self, key: &str) -> usize {
        // The last block whose first key is not greater than `key`.
        let after = self
            .blocks
            .partition_point(|b| natural_order::cmp(b.key(0), key) != Ordering::Greater);
        after.saturating_sub(1)
    }

    fn insert(&mut self, key: &str) {
        if self.blocks.is_empty() {
            self.blocks.push(Block::from_keys([key]));
            self.len = 1;
            return;
        }
        let b = self.block_for(key);
        let block = &self.blocks[b];
        let at = block.lower_bound(key);
        if at < block.len() && block.key(at) == key {
            return;
        }
        let keys: Vec<&str> = block.keys().collect();
        let mut rebuilt: Vec<&str> = Vec::with_capacity(keys.len() + 1);
        rebuilt.extend_from_slice(&keys[..at]);
        rebuilt.push(key);
        rebuilt.extend_from_slice(&keys[at..]);
        let replacement: Vec<Block> = if rebuilt.len() >= 2 * BLOCK {
            let (a, z) = rebuilt.split_at(rebuilt.len() / 2);
            vec![
                Block::from_keys(a.iter().copied()),
                Block::from_keys(z.iter().copied()),
            ]
        } else {
            vec![Block::from_keys(rebuilt.iter().copied())]
        };
        self.blocks.splice(b..=b, replacement);
        self.len += 1;
    }

    fn remove(&mut self, key: &str) {
        if self.blocks.is_empty() {
            return;
        }
        let b = self.block_for(key);
        let block = &self.blocks[b];
        let at = block.lower_bound(key);
        if at >= block.len() || block.key(at) != key {
            return;
        }
        let rebuilt = Block::from_keys(
            block
                .keys()
                .enumerate()
                .filter(|&(i, _)| i != at)
                .map(|(_, k)| k),
        );
        if rebuilt.len() == 0 {
            self.blocks.remove(b);
        } else {
            self.blocks[b] = rebuilt;
        }
        self.len -= 1;
    }

    /// The position of the first key not less than `key`.
    fn seek(&self, key: &str) -> Pos {
        if self.blocks.is_empty() {
            return Pos(0, 0);
        }
        let b = self.block_for(key);
        let i = self.blocks[b].lower_bound(key);
        if i == self.blocks[b].len() {
            Pos(b + 1, 0)
        } else {
            Pos(b, i)
        }
    }

    /// Keys from `start` on (all keys when `None`), in order.
    pub fn from(&self, start: Option<&str>) -> impl Iterator<Item = &str> {
        let Pos(b, i) = start.map_or(Pos(0, 0), |k| self.seek(k));
        self.blocks
            .iter()
            .enumerate()
            .skip(b)
            .flat_map(move |(bi, block)| {
                let from = if bi == b { i } else { 0 };
                (from..block.len()).map(move |j| block.key(j))
            })
    }

    /// Keys before `end` (all keys when `None`), last first.
    pub fn before(&self, end: Option<&str>) -> impl Iterator<Item = &str> {
        let Pos(b, i) = end.map_or(Pos(self.blocks.len(), 0), |k| self.seek(k));
        // Blocks 0..=b (b only up to i, and only if it exists).
        let last = (b + 1).min(self.blocks.len());
        self.blocks[..last]
            .iter()
            .enumerate()
            .rev()
            .flat_map(move |(bi, block)| {
                let to = if bi == b { i } else { block.len() };
                (0..to).rev().map(move |j| block.key(j))
            })
    }
}

/// [`SortedKeys`] kept up to date with the snapshot's tables.
#[derive(Debug, Default)]
pub struct KeyOrder {
    keys: SortedKeys,
    /// The table `keys` reflects.
    base: Option<Arc<LinkTable>>,
}

impl KeyOrder {
    /// Takes `keys`, sorted from `table` elsewhere (off the lock), as the
    /// order of `table`.
    fn replace(&mut self, keys: SortedKeys, table: Arc<LinkTable>) {
        self.keys = keys;
        self.base = Some(table);
    }

    /// Brings the keys up to `table` by the shards an edit replaced; false,
    /// changing nothing, when that takes a sort of every key instead
    /// (nothing followed yet, or a table replaced wholesale: a full
    /// reload, a resize).
    pub fn try_follow(&mut self, table: &Arc<LinkTable>) -> bool {
        let changes = match &self.base {
            Some(base) if Arc::ptr_eq(base, table) => return true,
            Some(base) => table.changed_keys(base),
            None => None,
        };
        let Some((old, new)) = changes else {
            return false;
        };
        let old_set: HashSet<&str> = old.iter().copied().collect();
        let new_set: HashSet<&str> = new.iter().copied().collect();
        let removed: Vec<&str> = old.into_iter().filter(|k| !new_set.contains(k)).collect();
        let added: Vec<&str> = new.into_iter().filter(|k| !old_set.contains(k)).collect();
        self.keys.update(&removed, &added);
        self.base = Some(Arc::clone(table));
        true
    }

    /// Brings the keys up to `table` and returns them.
    pub fn follow(&mut self, table: &Arc<LinkTable>) -> &SortedKeys {
        if !self.try_follow(table) {
            self.replace(sort(table), Arc::clone(table));
        }
        &self.keys
    }
}

/// Every key of `table`, sorted.
fn sort(table: &LinkTable) -> SortedKeys {
    SortedKeys::build(table.iter().map(|l| l.key))
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
                drop(order);
                std::thread::sleep(FOLLOW_INTERVAL);
            }
        })
        .map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The model's keys in natural order.
    fn natural(model: &std::collections::BTreeSet<String>) -> Vec<&str> {
        let mut all: Vec<&str> = model.iter().map(String::as_str).collect();
        all.sort_by(|a, b| natural_order::cmp(a, b));
        all
    }

    fn check(keys: &SortedKeys, model: &std::collections::BTreeSet<String>) {
        assert_eq!(keys.len(), model.len());
        let all: Vec<&str> = keys.from(None).collect();
        let want = natural(model);
        assert_eq!(all, want);
        let back: Vec<&str> = keys.before(None).collect();
        let want_back: Vec<&str> = want.into_iter().rev().collect();
        assert_eq!(back, want_back);
    }

    proptest! {
        #[test]
        fn matches_a_btreeset_through_inserts_removes_and_seeks(
            initial in proptest::collection::vec("[a-d1-3]{1,3}|aaaaaaa[a-c0-9]{0,3}", 0..600),
            ops in proptest::collection::vec((any::<bool>(), "[a-d01-3]{1,3}"), 0..800),
            probe in "[a-e0-3]{0,3}",
        ) {
            let mut model: std::collections::BTreeSet<String> = initial.iter().cloned().collect();
            let mut keys = SortedKeys::build(model.iter().map(String::as_str));
            for (add, k) in &ops {
                if *add {
                    keys.update(&[], &[k]);
                    model.insert(k.clone());
                } else {
                    keys.update(&[k], &[]);
                    model.remove(k);
                }
            }
            check(&keys, &model);
            let sorted = natural(&model);
            let from: Vec<&str> = keys.from(Some(&probe)).collect();
            let want: Vec<&str> = sorted
                .iter()
                .copied()
                .filter(|k| natural_order::cmp(k, &probe) != Ordering::Less)
                .collect();
            prop_assert_eq!(from, want);
            let before: Vec<&str> = keys.before(Some(&probe)).collect();
            let want: Vec<&str> = sorted
                .iter()
                .copied()
                .rev()
                .filter(|k| natural_order::cmp(k, &probe) == Ordering::Less)
                .collect();
            prop_assert_eq!(before, want);
        }
    }

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
            order.lock().expect("lock").keys.from(None).next() == Some("a-new-one")
        });
        let table = Arc::clone(&snapshot.load());
        assert!(
            order.lock().expect("lock").try_follow(&table),
            "already there"
        );
    }

    #[test]
    fn blocks_split_and_empty_blocks_go() {
        let mut keys = SortedKeys::default();
        let names: Vec<String> = (0..2000).map(|i| format!("k{i:05}")).collect();
        for n in &names {
            keys.update(&[], &[n]);
        }
        assert!(keys.blocks.len() > 2, "{} blocks", keys.blocks.len());
        for n in &names[..1990] {
            keys.update(&[n], &[]);
        }
        assert_eq!(keys.from(None).count(), 10);
        assert!(keys.blocks.iter().all(|b| b.len() > 0));
    }
}
