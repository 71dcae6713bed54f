//! The scan index's state: per-key and per-day counts built from parsed log
//! lines. Pure: the follower feeds it lines, the checkpoint module writes it
//! and reads it back, the console queries it.
//!
//! Every line goes through [`aggregate::classify`] and [`KeyStats::count`],
//! the functions `qrtag stats` counts with, so a key's numbers here are the
//! numbers `qrtag stats` prints for the same lines, whatever order or
//! batches they arrive in.
//!
//! Sized for a million keys and tens of millions of lines: keys live back to
//! back in one string arena behind a hash table of 4-byte ids, a key's scans
//! per day are a sorted vector of 8-byte entries, and the scanners behind
//! `unique_scanners` are one table of 12-byte (key id, fingerprint) pairs
//! for all keys rather than a set per key ([`super::pairs`]), at most
//! [`EXACT_KEY_SCANNERS`] a key: past them a key's scanners go into a
//! 4 KiB [`Sketch`], as the total's do past [`EXACT_TOTAL_SCANNERS`], so
//! the scanners' memory grows with the keys, not with the scans.
//!
//! Only paths that can be links get a key of their own: the console shows
//! numbers per link and in total, and every distinct path of a long-running
//! server's log (vulnerability scanners, random probes) would otherwise be
//! a key for ever. A path that is not a valid [`LinkKey`] is counted in one
//! "other paths" bucket; so is a line of a new key that was not redirected
//! once [`MAX_PROBE_KEYS`] keys that were never redirected have been seen
//! (short-ID guessing). Every line is still in the totals and the days, so
//! those agree with `qrtag stats` exactly; so does every key that was
//! redirected the first time it was requested, or while fewer keys than the
//! cap had gone unanswered.

use std::collections::{BTreeMap, BinaryHeap, HashSet};
use std::hash::BuildHasher;

use chrono::{Datelike, NaiveDate};
use hashbrown::HashTable;

use crate::access_log::format::LogLine;
use crate::stats::aggregate::{self, BotFilter, KeyStats};
use crate::stats::dimensions::Deriver;
use crate::values::link_key::LinkKey;

use super::breakdowns::{Basis, Kept, Shares};
use super::buckets::ScanBuckets;
use super::destinations::{DestinationScans, Destinations};
use super::pairs::{MAX_KEY_ID, Pair, PairSet};
use super::sketch::Sketch;

/// foldhash, as `qrtag stats` uses: these sets are hit for every scan.
pub(super) type Set<T> = HashSet<T, foldhash::fast::RandomState>;

/// A day as the number `yyyymmdd`: what [`crate::access_log::LogTime`]
/// gives for free, ordered like the days.
pub type DayCode = u32;

/// The code of `date`; dates outside years 0–9999 (which no log holds) are
/// clamped to the nearest day that is.
pub fn day_code(date: NaiveDate) -> DayCode {
    match date.year() {
        y if y < 0 => 101,
        y if y > 9999 => 99_991_231,
        y => y as u32 * 10_000 + date.month() * 100 + date.day(),
    }
}

/// The date of a code made by [`day_code`] or a log time.
pub fn day_date(code: DayCode) -> Option<NaiveDate> {
    NaiveDate::from_ymd_opt((code / 10_000) as i32, code / 100 % 100, code % 100)
}

/// Most keys kept that were never answered with a redirect (a printed tag
/// scanned before its link was made or while it is inactive, or a probe of
/// a short ID that does not exist). Past it, a line of a new key that is
/// not a redirect goes to the "other paths" bucket: about 13 MB of keys at
/// most, however long the server runs.
pub const MAX_PROBE_KEYS: u64 = 100_000;

/// Distinct scanners of one key counted exactly: past them, the key's new
/// scanners go into a [`Sketch`] (4 KiB, about 1.6% error on the part
/// beyond), so a link scanned by a client that drops its cookie every time
/// holds at most this many pairs, not one per scan.
pub const EXACT_KEY_SCANNERS: u64 = 4096;

/// Distinct scanners of all keys together counted exactly, the same way:
/// at most about 1 MB of fingerprints.
pub const EXACT_TOTAL_SCANNERS: u64 = 65_536;

/// Scanners past an exact count: the count when the sketch began (every
/// scanner in the exact set then, which stays as it was) and a sketch of
/// every later scanner not in it. The two never share a scanner, so the
/// unique count is their sum.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Beyond {
    pub exact: u64,
    pub sketch: Sketch,
}

impl Beyond {
    fn new(exact: u64) -> Beyond {
        Beyond {
            exact,
            sketch: Sketch::new(),
        }
    }

    pub fn estimate(&self) -> u64 {
        self.exact + self.sketch.estimate()
    }
}

/// Scans of one key on one day. `u32` is room for 49,000 scans a second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct DayCount {
    pub day: DayCode,
    pub scans: u32,
}

/// One key's counters: `stats.unique_scanners` is kept up to date from
/// [`IndexState::pairs`], the rest by [`KeyStats::count`].
#[derive(Debug, Clone)]
pub(super) struct KeyEntry {
    /// Where the key is in [`IndexState::arena`].
    pub start: usize,
    pub len: u32,
    /// Some request of this key was answered with a redirect: it is (or
    /// was) a link, not a probe.
    pub redirected: bool,
    pub stats: KeyStats,
    /// Days with at least one scan, in order.
    pub days: Vec<DayCount>,
}

/// Everything the console asks about one day, across all keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DayTotals {
    pub day: NaiveDate,
    pub scans: u64,
    pub requests: u64,
    pub head: u64,
    pub bot: u64,
    pub not_found: u64,
    /// Issue 33: answered with a link's fallback, not in `scans`.
    pub fallback: u64,
}

/// Scans of one key on one day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DayScans {
    pub day: NaiveDate,
    pub scans: u64,
}

/// A key among the busiest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopKey {
    pub key: String,
    pub scans: u64,
}

/// The counts of every line fed so far.
#[derive(Debug, Clone)]
pub struct IndexState {
    pub(super) keys: Vec<KeyEntry>,
    pub(super) arena: String,
    /// Ids into `keys`, hashed by the key's text.
    lookup: HashTable<u32>,
    /// The keys with scans by their all-time scans, for [`Self::top_keys`].
    buckets: ScanBuckets,
    pub(super) pairs: PairSet,
    /// The keys with more than [`EXACT_KEY_SCANNERS`] scanners, by id.
    pub(super) beyond: hashbrown::HashMap<u32, Beyond, foldhash::fast::RandomState>,
    /// Fingerprints of every scanner of any key: the total's unique
    /// scanners, up to [`EXACT_TOTAL_SCANNERS`].
    pub(super) scanners: Set<u64>,
    /// The total's scanners past them.
    pub(super) scanners_beyond: Option<Beyond>,
    /// All keys together, per day (`unique_scanners` unused).
    pub(super) days: BTreeMap<DayCode, KeyStats>,
    /// Lines of paths without a key of their own (`unique_scanners` unused).
    pub(super) other: KeyStats,
    /// Keys never answered with a redirect: what [`MAX_PROBE_KEYS`] caps.
    probe_keys: u64,
    probe_cap: u64,
    /// Lines of valid keys in `other` because the cap was reached.
    pub(super) folded: u64,
    pub(super) lines_read: u64,
    pub(super) malformed: u64,
    /// Lines of keys beyond `u32::MAX` ids: in `other`, and unreachable
    /// before memory runs out, but never a panic.
    pub(super) overflow: u64,
    /// The breakdowns, when the index keeps them ([`super::breakdowns`]).
    pub(super) kept: Option<Kept>,
    /// Each link's scans per destination (issue 34).
    pub(super) destinations: Destinations,
}

impl Default for IndexState {
    fn default() -> IndexState {
        IndexState {
            keys: Vec::new(),
            arena: String::new(),
            lookup: HashTable::new(),
            buckets: ScanBuckets::default(),
            pairs: PairSet::default(),
            beyond: Default::default(),
            scanners: Set::default(),
            scanners_beyond: None,
            days: BTreeMap::new(),
            other: KeyStats::default(),
            probe_keys: 0,
            probe_cap: MAX_PROBE_KEYS,
            folded: 0,
            lines_read: 0,
            malformed: 0,
            overflow: 0,
            kept: None,
            destinations: Destinations::default(),
        }
    }
}

/// A fixed seed: the table is rebuilt on every load, but a fixed hash keeps
/// the index's layout the same from run to run.
fn key_hash(key: &str) -> u64 {
    foldhash::fast::FixedState::with_seed(0x5ca7).hash_one(key)
}

impl IndexState {
    pub fn new() -> IndexState {
        IndexState::default()
    }

    /// The same state with another cap on never-redirected keys (tests).
    pub fn with_probe_cap(mut self, cap: u64) -> IndexState {
        self.probe_cap = cap;
        self
    }

    /// The same state, also keeping the breakdowns counted on `basis`
    /// (fed by [`Self::add_with`]).
    pub fn with_breakdowns(mut self, basis: Basis) -> IndexState {
        self.kept = Some(Kept::new(basis));
        self
    }

    /// Stops keeping the breakdowns (nothing would count them).
    pub fn drop_breakdowns(&mut self) {
        self.kept = None;
    }

    /// What the breakdowns are counted with, if they are kept.
    pub fn breakdown_basis(&self) -> Option<&Basis> {
        self.kept.as_ref().map(Kept::basis)
    }

    /// Counts one parsed line. `bots` is the caller's, so that its cache of
    /// verdicts outlives a state that is replaced (a checkpoint loaded).
    pub fn add(&mut self, line: &LogLine<'_>, bots: &mut BotFilter) {
        self.add_as(line, line.key(), bots);
    }

    /// Counts one parsed line under `key`, the link that answered it
    /// ([`crate::stats::attribute`]).
    pub fn add_as(&mut self, line: &LogLine<'_>, key: &str, bots: &mut BotFilter) {
        self.add_with(line, key, bots, None);
    }

    /// [`Self::add_as`], and a scan's values into the breakdowns (when
    /// kept) through `deriver`, the caller's like `bots`: the one
    /// `qrtag stats --by` derives them with.
    pub fn add_with(
        &mut self,
        line: &LogLine<'_>,
        key: &str,
        bots: &mut BotFilter,
        deriver: Option<&mut Deriver>,
    ) {
        self.lines_read += 1;
        let counted = aggregate::classify(line, bots);
        let day = line.time.yyyymmdd();
        self.days.entry(day).or_default().count(&counted, line.time);
        if let Some(scanner) = counted.scanner {
            self.count_total_scanner(scanner);
        }
        let tags = match (&mut self.kept, deriver) {
            (Some(kept), Some(deriver)) if counted.scan => {
                let tags = kept.tags(line, deriver);
                kept.count_day(day, &tags);
                Some(tags)
            }
            _ => None,
        };
        let redirect = line.is_redirect();
        let Some(id) = self.detail_id(key, redirect) else {
            self.other.count(&counted, line.time);
            return;
        };
        if let (Some(kept), Some(tags)) = (&mut self.kept, &tags) {
            kept.count_key(id, tags);
        }
        if (counted.scan || counted.fallback)
            && let Some(location) = line.location
        {
            self.destinations.count(id, location, counted.fallback);
        }
        let entry = &mut self.keys[id as usize];
        if redirect && !entry.redirected {
            entry.redirected = true;
            self.probe_keys -= 1;
        }
        entry.stats.count(&counted, line.time);
        if !counted.scan {
            return;
        }
        self.buckets.counted(id, entry.stats.scans);
        bump_day(&mut entry.days, day);
        if let Some(scanner) = counted.scanner {
            self.count_key_scanner(id, scanner);
        }
    }

    /// One scanner of all keys: into the exact set, or past it into the
    /// sketch unless the set holds it.
    fn count_total_scanner(&mut self, scanner: u64) {
        match &mut self.scanners_beyond {
            Some(beyond) => {
                if !self.scanners.contains(&scanner) {
                    beyond.sketch.insert(scanner);
                }
            }
            None => {
                self.scanners.insert(scanner);
                if self.scanners.len() as u64 >= EXACT_TOTAL_SCANNERS {
                    self.scanners_beyond = Some(Beyond::new(self.scanners.len() as u64));
                }
            }
        }
    }

    /// One scanner of key `id`: a new pair while the key has fewer than
    /// [`EXACT_KEY_SCANNERS`], the sketch after.
    fn count_key_scanner(&mut self, id: u32, scanner: u64) {
        let pair = Pair::new(id, scanner);
        let stats = &mut self.keys[id as usize].stats;
        // Nearly always empty: no hash of the id for a server whose links
        // all have few scanners.
        let sketched = if self.beyond.is_empty() {
            None
        } else {
            self.beyond.get_mut(&id)
        };
        if let Some(beyond) = sketched {
            if !self.pairs.contains(pair) && beyond.sketch.insert(scanner) {
                stats.unique_scanners = beyond.estimate();
            }
        } else if self.pairs.insert(pair) {
            stats.unique_scanners += 1;
            if stats.unique_scanners >= EXACT_KEY_SCANNERS {
                self.beyond.insert(id, Beyond::new(stats.unique_scanners));
            }
        }
    }

    /// The id of the key a line counts under, interned if new; `None` for
    /// the "other paths" bucket (see the module's documentation).
    fn detail_id(&mut self, key: &str, redirect: bool) -> Option<u32> {
        if !LinkKey::is_valid(key) {
            return None;
        }
        if let Some(id) = self.find(key) {
            return Some(id);
        }
        if !redirect && self.probe_keys >= self.probe_cap {
            self.folded += 1;
            return None;
        }
        let Some(id) = self.intern_new(key) else {
            self.overflow += 1;
            return None;
        };
        // Not redirected yet: `add` marks it if this line is a redirect.
        self.probe_keys += 1;
        Some(id)
    }

    /// Counts a line that could not be parsed, as `qrtag stats` does.
    pub fn add_malformed(&mut self) {
        self.lines_read += 1;
        self.malformed += 1;
    }

    fn find(&self, key: &str) -> Option<u32> {
        self.lookup
            .find(key_hash(key), |&id| self.key_str(id) == key)
            .copied()
    }

    /// Adds a key not in the table yet.
    fn intern_new(&mut self, key: &str) -> Option<u32> {
        let id = u32::try_from(self.keys.len())
            .ok()
            .filter(|&id| id <= MAX_KEY_ID)?;
        let len = u32::try_from(key.len()).ok()?;
        self.keys.push(KeyEntry {
            start: self.arena.len(),
            len,
            redirected: false,
            stats: KeyStats::default(),
            days: Vec::new(),
        });
        self.arena.push_str(key);
        let (keys, arena) = (&self.keys, &self.arena);
        self.lookup.insert_unique(key_hash(key), id, |&i| {
            key_hash(entry_str(arena, &keys[i as usize]))
        });
        Some(id)
    }

    /// Makes room for `n` more keys (read back from a checkpoint): the
    /// table of ids is not rehashed as it fills.
    pub(super) fn reserve_keys(&mut self, n: usize) {
        self.keys.reserve(n);
        let (keys, arena) = (&self.keys, &self.arena);
        self.lookup
            .reserve(n, |&i| key_hash(entry_str(arena, &keys[i as usize])));
    }

    /// Adds a key read back from a checkpoint; `None` if it is there already.
    pub(super) fn push_key(
        &mut self,
        key: &str,
        redirected: bool,
        stats: KeyStats,
        days: Vec<DayCount>,
    ) -> Option<u32> {
        if self.find(key).is_some() {
            return None;
        }
        let id = self.intern_new(key)?;
        let entry = &mut self.keys[id as usize];
        entry.redirected = redirected;
        entry.stats = stats;
        entry.days = days;
        self.buckets.place(id, stats.scans);
        self.probe_keys += u64::from(!redirected);
        Some(id)
    }

    pub(super) fn key_str(&self, id: u32) -> &str {
        entry_str(&self.arena, &self.keys[id as usize])
    }

    /// A key's counts as `qrtag stats --key KEY` reports them: zeros for a
    /// key never requested.
    pub fn key(&self, key: &str) -> KeyStats {
        self.find(key)
            .map_or_else(KeyStats::default, |id| self.keys[id as usize].stats)
    }

    /// A key's scans per day in `from..=to`, days without scans left out (as
    /// `qrtag stats --by day` does).
    pub fn key_days(&self, key: &str, from: NaiveDate, to: NaiveDate) -> Vec<DayScans> {
        let Some(id) = self.find(key) else {
            return Vec::new();
        };
        let days = &self.keys[id as usize].days;
        let (from, to) = (day_code(from), day_code(to));
        let start = days.partition_point(|d| d.day < from);
        days[start..]
            .iter()
            .take_while(|d| d.day <= to)
            .filter_map(|d| {
                Some(DayScans {
                    day: day_date(d.day)?,
                    scans: u64::from(d.scans),
                })
            })
            .collect()
    }

    /// A key's scans on `since` and every day after it: a binary search and
    /// a sum over the days after it, so a page of rows costs microseconds.
    pub fn scans_since(&self, key: &str, since: NaiveDate) -> u64 {
        self.find(key).map_or(0, |id| {
            sum_since(&self.keys[id as usize].days, day_code(since))
        })
    }

    /// The `n` keys with the most scans since `since` (inclusive), most
    /// first, ties by key. Visits the keys by their scans of all time, the
    /// busiest bucket first, and stops at the first bucket whose keys cannot
    /// reach the `n`th best count so far ([`super::buckets`]); a key whose
    /// last scan is older than `since` is passed over without touching its
    /// days.
    pub fn top_keys(&self, n: usize, since: NaiveDate) -> Vec<TopKey> {
        let mut top = TopN::new(n, day_code(since));
        for (bound, ids) in self.buckets.busiest_first() {
            if top.full_at_least(bound) {
                break;
            }
            for &id in ids {
                top.offer(&self.arena, &self.keys[id as usize]);
            }
        }
        top.into_sorted()
    }

    /// [`Self::top_keys`] by one pass over every key: what the buckets
    /// must agree with (tests).
    #[cfg(test)]
    pub(super) fn top_keys_full_scan(&self, n: usize, since: NaiveDate) -> Vec<TopKey> {
        let mut top = TopN::new(n, day_code(since));
        for entry in &self.keys {
            top.offer(&self.arena, entry);
        }
        top.into_sorted()
    }

    /// Whether the buckets hold every key with scans where its scans say
    /// (tests).
    #[cfg(test)]
    pub(super) fn buckets_consistent(&self) -> bool {
        self.buckets
            .consistent_with(self.keys.iter().map(|e| e.stats.scans))
    }

    /// All keys together per day in `from..=to`, days without any request
    /// left out.
    pub fn daily_totals(&self, from: NaiveDate, to: NaiveDate) -> Vec<DayTotals> {
        let (from, to) = (day_code(from), day_code(to));
        if from > to {
            return Vec::new();
        }
        self.days
            .range(from..=to)
            .filter_map(|(&code, s)| {
                Some(DayTotals {
                    day: day_date(code)?,
                    scans: s.scans,
                    requests: s.requests,
                    head: s.head,
                    bot: s.bot,
                    not_found: s.not_found,
                    fallback: s.fallback,
                })
            })
            .collect()
    }

    /// All keys together, as `qrtag stats` prints its total: unique
    /// scanners counts each scanner once over all keys. Summed from the
    /// days, which count every line (the "other paths" too): O(days).
    pub fn totals(&self) -> KeyStats {
        let mut total = KeyStats::default();
        for day in self.days.values() {
            aggregate::add_into(&mut total, day);
        }
        total.unique_scanners = match &self.scanners_beyond {
            Some(beyond) => beyond.estimate(),
            None => self.scanners.len() as u64,
        };
        total
    }

    /// A key's breakdowns of all time; `None` when none are kept.
    pub fn key_shares(&self, key: &str) -> Option<Shares> {
        Some(self.kept.as_ref()?.key(self.find(key)))
    }

    /// A key's scans per destination of all time, busiest first (issue
    /// 34): what `qrtag stats --by destination --key KEY` counts.
    pub fn key_destinations(&self, key: &str) -> Vec<DestinationScans> {
        self.destinations.key(self.find(key))
    }

    /// All keys together over the days `from..=to`; `None` when no
    /// breakdowns are kept.
    pub fn day_shares(&self, from: NaiveDate, to: NaiveDate) -> Option<Shares> {
        Some(self.kept.as_ref()?.days(day_code(from), day_code(to)))
    }

    /// Keys with counts of their own (see the module's documentation).
    pub fn key_count(&self) -> usize {
        self.keys.len()
    }

    /// The lines of paths without a key of their own, together
    /// (`unique_scanners` not kept).
    pub fn other_paths(&self) -> KeyStats {
        self.other
    }

    /// Lines of valid keys counted only in the totals because
    /// [`MAX_PROBE_KEYS`] never-redirected keys had been seen.
    pub fn folded_lines(&self) -> u64 {
        self.folded
    }

    /// Every key with its counts, in no particular order.
    pub fn keys(&self) -> impl Iterator<Item = (&str, &KeyStats)> {
        self.keys
            .iter()
            .map(|e| (entry_str(&self.arena, e), &e.stats))
    }

    /// Lines counted, malformed ones included (as `qrtag stats`'s `lines_read`).
    pub fn lines_read(&self) -> u64 {
        self.lines_read
    }

    pub fn malformed(&self) -> u64 {
        self.malformed
    }

    /// Rebuilds the unique-scanner counts from the pairs and sketches, after
    /// a load: they are not stored, so a checkpoint cannot hold counts that
    /// disagree with its pairs. A sketch's exact part is its key's pairs (or
    /// the total's set): false if there are fewer than a sketch begins at.
    pub(super) fn recount_uniques(&mut self) -> bool {
        for entry in &mut self.keys {
            entry.stats.unique_scanners = 0;
        }
        for pair in self.pairs.iter() {
            self.keys[pair.key() as usize].stats.unique_scanners += 1;
        }
        for (&id, beyond) in &mut self.beyond {
            let Some(entry) = self.keys.get_mut(id as usize) else {
                return false;
            };
            beyond.exact = entry.stats.unique_scanners;
            if beyond.exact < EXACT_KEY_SCANNERS {
                return false;
            }
            entry.stats.unique_scanners = beyond.estimate();
        }
        if let Some(beyond) = &mut self.scanners_beyond {
            beyond.exact = self.scanners.len() as u64;
            if beyond.exact < EXACT_TOTAL_SCANNERS {
                return false;
            }
        }
        true
    }

    /// Bytes of memory the index holds, by the sizes of its tables (not the
    /// allocator's overhead): what the benchmark compares with RSS.
    pub fn approx_bytes(&self) -> usize {
        use std::mem::size_of;
        let days: usize = self.keys.iter().map(|e| e.days.capacity()).sum();
        self.keys.capacity() * size_of::<KeyEntry>()
            + self.arena.capacity()
            + self.lookup.capacity() * (size_of::<u32>() + 1)
            + days * size_of::<DayCount>()
            + self.pairs.approx_bytes()
            + self.beyond.capacity() * (size_of::<(u32, Beyond)>() + 1)
            + self
                .beyond
                .values()
                .map(|b| b.sketch.approx_bytes())
                .sum::<usize>()
            + self.scanners.capacity() * (size_of::<u64>() + 1)
            + self
                .scanners_beyond
                .as_ref()
                .map_or(0, |b| b.sketch.approx_bytes())
            + self.buckets.approx_bytes()
            + self.kept.as_ref().map_or(0, Kept::approx_bytes)
            + self.destinations.approx_bytes()
    }
}

/// The best `n` keys offered so far by scans since a day, ties by key.
struct TopN<'a> {
    n: usize,
    since: DayCode,
    /// A min-heap of the best n so far: `Reverse` on scans, and on ties
    /// the larger key is the worse one.
    heap: BinaryHeap<(std::cmp::Reverse<u64>, &'a str)>,
}

impl<'a> TopN<'a> {
    fn new(n: usize, since: DayCode) -> TopN<'a> {
        TopN {
            n,
            since,
            heap: BinaryHeap::with_capacity(n.min(1 << 16)),
        }
    }

    /// Whether `n` keys are in and the worst of them has at least `scans`
    /// (so a key with fewer cannot get in). Always true for `n` = 0.
    fn full_at_least(&self, scans: u128) -> bool {
        self.heap.len() >= self.n
            && self
                .heap
                .peek()
                .is_none_or(|worst| u128::from(worst.0.0) >= scans)
    }

    fn offer(&mut self, arena: &'a str, entry: &KeyEntry) {
        if self.n == 0
            || entry
                .stats
                .last_scan
                .is_none_or(|last| last.yyyymmdd() < self.since)
        {
            return;
        }
        let scans = sum_since(&entry.days, self.since);
        let candidate = (std::cmp::Reverse(scans), entry_str(arena, entry));
        if self.heap.len() < self.n {
            self.heap.push(candidate);
        } else if self.heap.peek().is_some_and(|worst| candidate < *worst) {
            self.heap.pop();
            self.heap.push(candidate);
        }
    }

    fn into_sorted(self) -> Vec<TopKey> {
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|(std::cmp::Reverse(scans), key)| TopKey {
                key: key.to_owned(),
                scans,
            })
            .collect()
    }
}

fn entry_str<'a>(arena: &'a str, e: &KeyEntry) -> &'a str {
    &arena[e.start..e.start + e.len as usize]
}

fn sum_since(days: &[DayCount], since: DayCode) -> u64 {
    let start = days.partition_point(|d| d.day < since);
    days[start..].iter().map(|d| u64::from(d.scans)).sum()
}

/// Lines arrive nearly in time order, so the day is almost always the last
/// one or a new last one; an older day is found by binary search.
fn bump_day(days: &mut Vec<DayCount>, day: DayCode) {
    match days.last_mut() {
        Some(last) if last.day == day => last.scans = last.scans.saturating_add(1),
        Some(last) if last.day > day => match days.binary_search_by_key(&day, |d| d.day) {
            Ok(i) => days[i].scans = days[i].scans.saturating_add(1),
            Err(i) => days.insert(i, DayCount { day, scans: 1 }),
        },
        _ => days.push(DayCount { day, scans: 1 }),
    }
}

#[cfg(test)]
mod tests;
