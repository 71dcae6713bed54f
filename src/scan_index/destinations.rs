//! Scans per destination of each link (issue 34, "which rule answered"):
//! the `Location` each scan of the link was sent to, as the log holds it,
//! so an A/B split's or an app-store split's counts are read on the link
//! page without asking which rules the link had at the time. Pure: the
//! index feeds it the lines it counts as scans or fallback answers (the
//! lines `qrtag stats --by destination` counts without `--bots`), under the
//! link that answered them.
//!
//! Sized for a million links of one destination each: destinations are
//! interned once (links that share one share its bytes) into one string
//! arena behind a table of 4-byte ids, and a link's counts are one boxed
//! slice of 8-byte entries (id and fallback mark in the high half, the
//! count in the low), 16 bytes and no allocation for a link never scanned.
//! Bounded whatever the log holds: a link keeps at most [`KEY_CAP`]
//! destinations apart (a link that appends paths sends each path to one of
//! its own), the index [`MAX_NAMES`] destinations of at most [`MAX_BYTES`]
//! together; later ones count under "other destinations".

use std::hash::BuildHasher;

use hashbrown::HashTable;

/// Most destinations a link keeps apart: a link with rules has a handful.
pub const KEY_CAP: usize = 16;
/// Most destinations the index names.
pub const MAX_NAMES: usize = 1 << 22;
/// Most bytes of destination names the index keeps.
pub const MAX_BYTES: usize = 256 << 20;

/// The id of "other destinations" (never a name's).
const OTHER: u32 = (1 << 31) - 1;
/// Set in an entry's id for a dead link's fallback answers (issue 33).
const FALLBACK: u32 = 1 << 31;

/// Scans of one link sent to one destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DestinationScans {
    /// As logged (target encoding); `None` for the destinations past the
    /// caps, together.
    pub destination: Option<String>,
    /// Answers with the link's fallback, which are no scans.
    pub fallback: bool,
    pub scans: u64,
}

/// Rows in the order a link's are shown: busiest first, then by
/// destination ("other destinations" last), a fallback after the same
/// destination as a scan.
pub fn sort(rows: &mut [DestinationScans]) {
    rows.sort_by(|a, b| {
        b.scans
            .cmp(&a.scans)
            .then_with(|| a.destination.is_none().cmp(&b.destination.is_none()))
            .then_with(|| a.destination.cmp(&b.destination))
            .then_with(|| a.fallback.cmp(&b.fallback))
    });
}

/// Every link's scans per destination.
#[derive(Debug, Clone, Default)]
pub struct Destinations {
    arena: String,
    /// Where each name lies in `arena`, by id.
    spans: Vec<(u32, u32)>,
    lookup: HashTable<u32>,
    /// By key id (shorter until a key is sent somewhere): its one entry
    /// (most links are sent to one destination), 0 for none, or [`MORE`]
    /// when its entries are in `more`.
    keys: Vec<u64>,
    /// The entries of keys sent to more than one destination, sorted by id.
    more: hashbrown::HashMap<u32, Box<[u64]>, foldhash::fast::RandomState>,
}

/// A key's slot in [`Destinations::keys`] when its entries are in `more`:
/// a count of 0, which no entry has.
const MORE: u64 = (u32::MAX as u64) << 32;

fn name_hash(name: &str) -> u64 {
    foldhash::fast::FixedState::with_seed(0xde57).hash_one(name)
}

fn entry(id: u32, count: u32) -> u64 {
    u64::from(id) << 32 | u64::from(count)
}

impl Destinations {
    fn name(&self, id: u32) -> Option<&str> {
        let &(start, len) = self.spans.get(id as usize)?;
        self.arena.get(start as usize..(start + len) as usize)
    }

    fn find(&self, name: &str) -> Option<u32> {
        self.lookup
            .find(name_hash(name), |&id| self.name(id) == Some(name))
            .copied()
    }

    /// The id of `name`, interned if new and the caps allow.
    fn intern(&mut self, name: &str) -> Option<u32> {
        if let Some(id) = self.find(name) {
            return Some(id);
        }
        if self.spans.len() >= MAX_NAMES || self.arena.len() + name.len() > MAX_BYTES {
            return None;
        }
        let id = self.spans.len() as u32;
        self.spans
            .push((self.arena.len() as u32, name.len() as u32));
        self.arena.push_str(name);
        let (spans, arena) = (&self.spans, &self.arena);
        self.lookup.insert_unique(name_hash(name), id, |&i| {
            let (start, len) = spans[i as usize];
            name_hash(&arena[start as usize..(start + len) as usize])
        });
        Some(id)
    }

    /// The key's entries, sorted by id.
    fn slice(&self, key: u32) -> &[u64] {
        match self.keys.get(key as usize) {
            None | Some(0) => &[],
            Some(&MORE) => self.more.get(&key).map_or(&[], |e| e),
            Some(e) => std::slice::from_ref(e),
        }
    }

    /// Sets the key's entries (sorted by id, none of count 0).
    fn set(&mut self, key: u32, entries: Vec<u64>) {
        if self.keys.len() <= key as usize {
            self.keys.resize(key as usize + 1, 0);
        }
        match entries.as_slice() {
            [] => {
                self.keys[key as usize] = 0;
                self.more.remove(&key);
            }
            [one] => {
                self.keys[key as usize] = *one;
                self.more.remove(&key);
            }
            _ => {
                self.keys[key as usize] = MORE;
                self.more.insert(key, entries.into_boxed_slice());
            }
        }
    }

    /// Counts one scan (or fallback answer) of the key with id `key` sent
    /// to `location`.
    pub fn count(&mut self, key: u32, location: &str, fallback: bool) {
        let mark = if fallback { FALLBACK } else { 0 };
        let entries = self.slice(key);
        // Known to this link: no new name needed.
        let known = self
            .find(location)
            .map(|id| id | mark)
            .filter(|&id| entries.iter().any(|e| (e >> 32) as u32 == id));
        let id = match known {
            Some(id) => id,
            None => {
                let kept = entries
                    .iter()
                    .filter(|&&e| (e >> 32) as u32 & !FALLBACK != OTHER)
                    .count();
                match (kept < KEY_CAP).then(|| self.intern(location)).flatten() {
                    Some(name) => name | mark,
                    None => OTHER | mark,
                }
            }
        };
        // The common case, a link's one destination again: in place.
        if let Some(e) = self.keys.get_mut(key as usize)
            && *e != 0
            && *e != MORE
            && (*e >> 32) as u32 == id
        {
            *e = entry(id, (*e as u32).saturating_add(1));
            return;
        }
        let mut entries = self.slice(key).to_vec();
        match entries.binary_search_by_key(&id, |e| (e >> 32) as u32) {
            Ok(i) => entries[i] = entry(id, (entries[i] as u32).saturating_add(1)),
            Err(i) => entries.insert(i, entry(id, 1)),
        }
        self.set(key, entries);
    }

    /// The key's destinations, busiest first (then by destination, a
    /// fallback after the same destination as a scan).
    pub fn key(&self, key: Option<u32>) -> Vec<DestinationScans> {
        let entries = key.map_or(&[][..], |k| self.slice(k));
        let mut rows: Vec<DestinationScans> = entries
            .iter()
            .map(|&e| {
                let id = (e >> 32) as u32;
                DestinationScans {
                    destination: self.name(id & !FALLBACK).map(str::to_owned),
                    fallback: id & FALLBACK != 0,
                    scans: u64::from(e as u32),
                }
            })
            .collect();
        sort(&mut rows);
        rows
    }

    /// Bytes of memory held, by the sizes of its tables.
    pub fn approx_bytes(&self) -> usize {
        self.arena.capacity()
            + self.spans.capacity() * 8
            + self.lookup.capacity() * 5
            + self.keys.capacity() * 8
            + self.more.capacity() * 21
            + self.more.values().map(|e| e.len() * 8).sum::<usize>()
    }

    /// The names, in id order (the checkpoint).
    pub(super) fn names(&self) -> impl Iterator<Item = &str> {
        (0..self.spans.len() as u32).filter_map(|id| self.name(id))
    }

    /// The keys' entries, by key id (the checkpoint).
    pub(super) fn entries(&self) -> impl Iterator<Item = &[u64]> {
        (0..self.keys.len() as u32).map(|k| self.slice(k))
    }

    /// Adds a name read back from a checkpoint, in id order.
    pub(super) fn push_name(&mut self, name: &str) -> Result<(), &'static str> {
        let before = self.spans.len();
        match self.intern(name) {
            Some(id) if id as usize == before => Ok(()),
            _ => Err("a destination's name"),
        }
    }

    /// Adds the next key's entries read back from a checkpoint: sorted by
    /// id, each a name read or "other", at most [`KEY_CAP`] names, no
    /// count of 0.
    pub(super) fn push_key(&mut self, entries: &[u64]) -> Result<(), &'static str> {
        let ids = || entries.iter().map(|e| (e >> 32) as u32);
        let ordered = entries.windows(2).all(|w| w[0] >> 32 < w[1] >> 32);
        let known = ids().all(|id| {
            let id = id & !FALLBACK;
            id == OTHER || (id as usize) < self.spans.len()
        });
        let named = ids().filter(|id| id & !FALLBACK != OTHER).count();
        let counted = entries.iter().all(|&e| e as u32 != 0);
        if !ordered || !known || named > KEY_CAP || !counted {
            return Err("a link's destinations");
        }
        let key = self.keys.len() as u32;
        self.set(key, entries.to_vec());
        Ok(())
    }

    pub(super) fn key_count(&self) -> usize {
        self.keys.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(d: Option<&str>, fallback: bool, scans: u64) -> DestinationScans {
        DestinationScans {
            destination: d.map(str::to_owned),
            fallback,
            scans,
        }
    }

    #[test]
    fn a_split_counts_each_destination_and_a_fallback_apart() {
        let mut d = Destinations::default();
        for _ in 0..3 {
            d.count(2, "https://e.com/a", false);
        }
        d.count(2, "https://e.com/b", false);
        d.count(2, "https://e.com/a", true);
        d.count(0, "https://e.com/b", false);
        assert_eq!(
            d.key(Some(2)),
            [
                row(Some("https://e.com/a"), false, 3),
                row(Some("https://e.com/a"), true, 1),
                row(Some("https://e.com/b"), false, 1),
            ]
        );
        assert_eq!(d.key(Some(0)), [row(Some("https://e.com/b"), false, 1)]);
        assert_eq!(d.key(Some(1)), []);
        assert_eq!(d.key(Some(9)), []);
        assert_eq!(d.key(None), []);
        // Two links share a name.
        assert_eq!(d.names().count(), 2);
    }

    #[test]
    fn past_the_cap_a_link_counts_other_destinations_together() {
        let mut d = Destinations::default();
        for i in 0..KEY_CAP + 5 {
            d.count(0, &format!("https://e.com/{i}"), false);
        }
        d.count(0, "https://e.com/0", false);
        let rows = d.key(Some(0));
        assert_eq!(rows.len(), KEY_CAP + 1);
        assert_eq!(rows[0], row(None, false, 5));
        assert_eq!(rows[1], row(Some("https://e.com/0"), false, 2));
        assert_eq!(d.names().count(), KEY_CAP);
    }

    #[test]
    fn read_back_in_order_and_refused_out_of_it() {
        let mut d = Destinations::default();
        d.count(1, "https://e.com/a", false);
        d.count(1, "https://e.com/b", true);
        let mut back = Destinations::default();
        for n in d.names() {
            back.push_name(n).expect("in order");
        }
        for e in d.entries() {
            back.push_key(e).expect("valid");
        }
        assert_eq!(back.key(Some(1)), d.key(Some(1)));
        assert_eq!(back.key_count(), 2);
        assert!(back.key(Some(0)).is_empty());
        assert!(back.push_name("https://e.com/a").is_err());
        assert!(back.push_key(&[entry(7, 1)]).is_err());
        assert!(back.push_key(&[entry(1, 1), entry(0, 1)]).is_err());
        assert!(back.push_key(&[entry(0, 0)]).is_err());
        assert!(
            back.push_key(&[entry(0, 1), entry(OTHER | FALLBACK, 4)])
                .is_ok()
        );
    }
}
