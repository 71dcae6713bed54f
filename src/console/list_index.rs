//! The console list's orders and search index, kept current per edit
//! (issue 33), so that a page costs O(page), not O(links).
//!
//! Three orders of every link, each sorted in blocks of a few hundred and
//! followed per edit like the key order always was: by key (natural
//! order), by creation time and by change time (each by `(time, key)`,
//! links without the time last, by key). Newest first walks a time order
//! from its end group by group, each second's links in key order, so the
//! one sorted copy serves both directions. Beside each key every order
//! keeps the little a state filter reads ([`Cols`]: flags, expiry, times),
//! so a filtered walk never hashes into the table.
//!
//! The key order's blocks also hold each link's searchable text: its key,
//! title, notes and destination lowered (as [`super::search::Needle`]
//! compares them), each field ended by `0xFF` (no UTF-8 text holds it, so
//! no match spans two fields), then the destination as it is when lowering
//! changed it (a destination search is exact). A search is one
//! `memchr::memmem` pass over each block's bytes, stopped once a page is
//! full.
//!
//! Every block of every order also keeps a hashed bitset of its links'
//! trigrams ([`super::trigrams`]), so a search passes over a block that
//! lacks one of the needle's (a needle of three bytes or more) unread. A
//! search in a time order walks that order like a page without one,
//! reading the text of each link of a block that may hold the needle from
//! the key order (a seek), and stops at a full page: the newest matches of
//! a needle only old links hold are found without reading the newer
//! links' texts (issue 33: 100,000 matches newest first had gone through
//! the page's heap after a pass over every text). In key order the
//! summaries are exact; a time order's may keep the trigrams of links
//! since removed (never too few, see [`Block`]) until made exact again.
//!
//! Each block also keeps a [`Summary`] of its links' states (how many are
//! disabled, the earliest and latest expiry of the enabled ones, how many
//! are not known scanned), so a walk filtered by state passes over a block
//! none of whose links can match without reading them; and each link's
//! columns carry a known-scanned bit, set only from the scan counts
//! (primed by [`super::key_order`]'s thread, marked by a lookup that found
//! scans), so "never scanned" asks the scan index only about links without
//! it. Scans of all time only grow, so the bit is never wrong, only late.
//!
//! Why not a trigram index (posting lists rather than a bitset a block):
//! its posting lists alone (a `u32` per distinct
//! trigram of each link's lowered destination) took 208 bytes a link
//! in `benches/console.rs`, against 176 for this whole index (three orders,
//! their columns and the text; the served table 93; 177 with the blocks'
//! summaries), and a search matching
//! 100,000 links still reads lists about that long per trigram of its
//! text, where the text pass here reads each link's text once with
//! `memmem` and stops at a full page in key order. Measured end to end (`console_pages`, 1M
//! links): a search of everything with 1 match 13 ms p50, a destination
//! search with 1 match newest first 18 ms (every link's text read), with
//! 100,000 matches newest first 150 ms (every match through the page's
//! heap): a trigram index might help the last, at more memory than this
//! index takes in all; the bench group `search_every_match` times both.
//! The blocks' trigram bitsets (512 bytes a key-order block, 2 KiB a
//! time-order block: 18 bytes a link) do for the last what posting lists
//! would, for a tenth of their memory.

use std::cmp::Ordering;

use memchr::memmem;

use super::trigrams::{Grams, Probe};
use crate::link::natural_order;
use crate::snapshot::{LinkView, Texts};

/// Links per block when built; a block splits at twice this.
const BLOCK: usize = 256;

/// Ends each field of a searchable text: never part of UTF-8.
const FIELD_END: u8 = 0xFF;

const INACTIVE: u8 = 1;
const EXPIRES: u8 = 2;
/// Known to have been scanned: set from the scan counts ([`ListIndex::mark_scanned`]),
/// never from the table, and only ever for a link that was (scans of all
/// time only grow), so a link without it is asked of the scan counts.
const SCANNED: u8 = 4;

/// What a state filter and a time order read of a link, kept beside its
/// key in every order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Cols {
    /// Seconds since the epoch, 0 for none (as the snapshot keeps them).
    created: u32,
    changed: u32,
    expires_ms: i64,
    flags: u8,
}

impl Cols {
    pub fn of(l: &LinkView<'_>) -> Self {
        let mut flags = 0;
        if l.inactive {
            flags |= INACTIVE;
        }
        if l.expires_ms.is_some() {
            flags |= EXPIRES;
        }
        Self {
            created: l.created.unwrap_or(0),
            changed: l.changed.unwrap_or(0),
            expires_ms: l.expires_ms.unwrap_or(0),
            flags,
        }
    }

    pub fn created(&self) -> Option<u32> {
        (self.created != 0).then_some(self.created)
    }

    pub fn changed(&self) -> Option<u32> {
        (self.changed != 0).then_some(self.changed)
    }

    pub fn inactive(&self) -> bool {
        self.flags & INACTIVE != 0
    }

    pub fn expires_ms(&self) -> Option<i64> {
        (self.flags & EXPIRES != 0).then_some(self.expires_ms)
    }

    /// Whether the scan counts said this link was scanned (false: not
    /// known, ask them).
    pub fn known_scanned(&self) -> bool {
        self.flags & SCANNED != 0
    }

    /// [`LinkView::is_live_at`] of the same link.
    pub fn is_live_at(&self, now_ms: i64) -> bool {
        !self.inactive() && self.expires_ms().is_none_or(|e| now_ms < e)
    }
}

/// What a block's links hold between them, so a walk filtered by state
/// passes over a block none of whose links can be in it without reading
/// its links (issue 33: "expired" with no link expired read every link).
/// Recomputed whenever the block is (an edit rebuilds its block).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    /// Links disabled.
    inactive: u16,
    /// Links enabled with an expiry, and the earliest and latest of those.
    enabled_expiring: u16,
    min_expires_ms: i64,
    max_expires_ms: i64,
    /// Links not known to have been scanned ([`Cols::known_scanned`]).
    unscanned: u16,
    len: u16,
}

impl Default for Summary {
    fn default() -> Self {
        Self {
            inactive: 0,
            enabled_expiring: 0,
            min_expires_ms: i64::MAX,
            max_expires_ms: i64::MIN,
            unscanned: 0,
            len: 0,
        }
    }
}

impl Summary {
    fn add(&mut self, c: &Cols) {
        self.len += 1;
        if c.inactive() {
            self.inactive += 1;
        } else if let Some(e) = c.expires_ms() {
            self.enabled_expiring += 1;
            self.min_expires_ms = self.min_expires_ms.min(e);
            self.max_expires_ms = self.max_expires_ms.max(e);
        }
        if !c.known_scanned() {
            self.unscanned += 1;
        }
    }

    /// Whether a link of the block may be disabled.
    pub fn any_inactive(&self) -> bool {
        self.inactive > 0
    }

    /// Whether a link may be enabled and live at `now_ms`.
    pub fn any_live_at(&self, now_ms: i64) -> bool {
        self.inactive < self.len
            && (self.enabled_expiring < self.len - self.inactive || now_ms < self.max_expires_ms)
    }

    /// Whether an enabled link may have an expiry after `now_ms`.
    pub fn any_expiring_at(&self, now_ms: i64) -> bool {
        self.enabled_expiring > 0 && now_ms < self.max_expires_ms
    }

    /// Whether an enabled link may have an expiry at or before `now_ms`.
    pub fn any_expired_at(&self, now_ms: i64) -> bool {
        self.enabled_expiring > 0 && self.min_expires_ms <= now_ms
    }

    /// Whether a link may not have been scanned.
    pub fn any_not_known_scanned(&self) -> bool {
        self.unscanned > 0
    }
}

/// Which time an order sorts by (`Key`: none, key order alone).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Time {
    Key,
    Created,
    Changed,
}

/// The rank of a link without the time: after every time.
pub const NO_TIME: u64 = u64::MAX;

impl Time {
    /// A link's place before its key, oldest first.
    pub fn rank(self, c: &Cols) -> u64 {
        let t = match self {
            Time::Key => return 0,
            Time::Created => c.created(),
            Time::Changed => c.changed(),
        };
        t.map_or(NO_TIME, u64::from)
    }
}

/// `(rank, key)` in order: rank, then natural key order.
fn place_cmp(a: (u64, &str), b: (u64, &str)) -> Ordering {
    a.0.cmp(&b.0).then_with(|| natural_order::cmp(a.1, b.1))
}

/// A link's searchable text as [`Block`] keeps it, relative to its start:
/// the lowered destination from `url_at`, the destination as it is from
/// `raw_at` (to the end; empty when lowering left it alone).
#[derive(Debug, Clone, Copy)]
struct Record<'a> {
    bytes: &'a [u8],
    url_at: u32,
    raw_at: u32,
}

/// Appends `l`'s searchable text to `out`; its `url_at` and `raw_at`.
fn write_record(l: &LinkView<'_>, texts: &Texts<'_>, out: &mut Vec<u8>) -> (u32, u32) {
    let start = out.len();
    let lowered = |s: &str, out: &mut Vec<u8>| {
        if s.is_ascii() {
            out.extend(s.bytes().map(|b| b.to_ascii_lowercase()));
        } else {
            out.extend_from_slice(s.to_lowercase().as_bytes());
        }
        out.push(FIELD_END);
    };
    lowered(l.key, out);
    lowered(texts.title.unwrap_or(""), out);
    lowered(texts.notes.unwrap_or(""), out);
    let url_at = out.len() - start;
    lowered(l.url, out);
    let raw_at = out.len() - start;
    if out[start + url_at..out.len() - 1] != *l.url.as_bytes() {
        out.extend_from_slice(l.url.as_bytes());
        out.push(FIELD_END);
    }
    (url_at as u32, raw_at as u32)
}

/// One link as an order holds it.
#[derive(Debug, Clone, Copy)]
struct Item<'a> {
    key: &'a str,
    cols: Cols,
    /// Only in key order.
    record: Option<Record<'a>>,
}

/// Links in order: `keys` back to back (`ends[i]` is where key `i` ends),
/// their columns, and in key order their searchable texts back to back
/// (`marks[i]`: where record `i`'s lowered destination, its destination
/// as it is, and the record end).
///
/// `grams` sums up the trigrams of the block's texts (see
/// [`super::trigrams`]). In key order, where the block holds the texts, it
/// is exact: every edit rebuilds the block from them. A time order's block
/// holds no text: its summary is the union of what it had and the trigrams
/// of a link inserted, and keeps a removed link's (`stale` counts those
/// since it was last exact), so it is never missing a trigram of a link it
/// holds; [`ListIndex::replace`] makes it exact again from the key order's
/// texts once `stale` reaches [`REFRESH_AFTER`], and when a block splits.
#[derive(Debug, Clone)]
struct Block {
    keys: String,
    ends: Vec<u32>,
    cols: Vec<Cols>,
    hay: Vec<u8>,
    marks: Vec<[u32; 3]>,
    summary: Summary,
    grams: Grams,
    stale: u16,
}

/// Bits of a block's trigram summary in key order, where a block that
/// passes is read with one `memmem` over its text.
const KEY_GRAM_BITS: usize = 4096;
/// Bits of a block's trigram summary in a time order, where each link of a
/// block that passes is looked up in the key order: looser summaries cost
/// more there. 16,384 bits (8 bytes a link) leave about a fifth of the bits
/// set by the bench's 256 destinations and keys a block (about 1,200
/// distinct trigrams), so a needle with one trigram no block without a
/// match holds passes such a block about once in 130 (0.2³).
const TIME_GRAM_BITS: usize = 16_384;
/// Links removed from a time order's block before its trigram summary is
/// made exact again.
const REFRESH_AFTER: u16 = 32;

impl Block {
    /// A block of `items`: their texts kept when `texts` (key order), and
    /// their trigrams summed up with `carried`'s (a time order's block
    /// rebuilt, whose summary keeps what it had).
    fn from_items<'a>(
        items: impl IntoIterator<Item = Item<'a>>,
        texts: bool,
        carried: Option<(&Grams, u16)>,
    ) -> Self {
        let bits = if texts { KEY_GRAM_BITS } else { TIME_GRAM_BITS };
        let mut b = Block {
            keys: String::new(),
            ends: Vec::new(),
            cols: Vec::new(),
            hay: Vec::new(),
            marks: Vec::new(),
            summary: Summary::default(),
            grams: Grams::new(bits),
            stale: 0,
        };
        if let Some((grams, stale)) = carried {
            b.grams.union(grams);
            b.stale = stale;
        }
        for it in items {
            b.keys.push_str(it.key);
            b.ends.push(b.keys.len() as u32);
            b.cols.push(it.cols);
            b.summary.add(&it.cols);
            if let Some(r) = it.record {
                b.grams.add(r.bytes);
                if texts {
                    let at = b.hay.len() as u32;
                    b.hay.extend_from_slice(r.bytes);
                    b.marks
                        .push([at + r.url_at, at + r.raw_at, b.hay.len() as u32]);
                }
            }
        }
        b
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    /// Marks link `i` scanned; true if it was not.
    fn mark_scanned(&mut self, i: usize) -> bool {
        let c = &mut self.cols[i];
        if c.known_scanned() {
            return false;
        }
        c.flags |= SCANNED;
        self.summary.unscanned -= 1;
        true
    }

    fn key(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.keys[start..self.ends[i] as usize]
    }

    fn item(&self, i: usize) -> Item<'_> {
        let record = self.marks.get(i).map(|&[url_at, raw_at, end]| {
            let start = if i == 0 { 0 } else { self.marks[i - 1][2] };
            Record {
                bytes: &self.hay[start as usize..end as usize],
                url_at: url_at - start,
                raw_at: raw_at - start,
            }
        });
        Item {
            key: self.key(i),
            cols: self.cols[i],
            record,
        }
    }

    fn heap_bytes(&self) -> usize {
        self.keys.capacity()
            + self.ends.capacity() * 4
            + self.cols.capacity() * size_of::<Cols>()
            + self.hay.capacity()
            + self.marks.capacity() * 12
            + self.grams.heap_bytes()
    }

    /// The records in `lo..hi` whose text holds `finder`'s needle: in the
    /// destination as it is (`url_only`), else in any lowered field.
    fn hits(
        &self,
        finder: &memmem::Finder<'_>,
        url_only: bool,
        lo: usize,
        hi: usize,
        out: &mut Vec<usize>,
    ) {
        if lo >= hi || self.marks.len() < hi {
            return;
        }
        let record_start = |r: usize| {
            if r == 0 {
                0
            } else {
                self.marks[r - 1][2] as usize
            }
        };
        let stop = self.marks[hi - 1][2] as usize;
        let mut at = record_start(lo);
        let mut r = lo;
        while at < stop {
            let Some(found) = finder.find(&self.hay[at..stop]) else {
                break;
            };
            let o = at + found;
            r += self.marks[r..hi].partition_point(|m| (m[2] as usize) <= o);
            let [url_at, raw_at, end] = self.marks[r].map(|x| x as usize);
            // Where a match counts: the destination as it is (its lowered
            // form when lowering left it alone), or any lowered field.
            let (from, to) = match url_only {
                true if raw_at < end => (raw_at, end),
                true => (url_at, raw_at),
                false => (record_start(r), raw_at),
            };
            if o >= from && o < to {
                out.push(r);
                at = end;
                r += 1;
            } else if o < from {
                at = from;
            } else {
                at = end;
                r += 1;
            }
        }
    }
}

/// A position between links: block, then index in the block; the end is
/// `Pos(blocks, 0)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Pos(usize, usize);

/// Where a walk starts.
#[derive(Debug, Clone, Copy)]
pub enum Start<'a> {
    /// From the first link of the walk's direction.
    Edge,
    /// From this place on, itself included (forward only).
    At(u64, &'a str),
    /// Past this place, in the walk's direction.
    Past(u64, &'a str),
}

/// Which blocks a walk reads: those whose [`Summary`] says a link of them
/// may be wanted; the others are passed over unread.
pub type May<'a> = &'a dyn Fn(&Summary) -> bool;

/// Every block.
const ALL: May<'static> = &|_| true;

/// Which blocks an order's walk reads, by all it keeps of them (the state
/// summary, the trigram summary).
type Pass<'a> = &'a dyn Fn(&Block) -> bool;

/// Every block, to a walk of an order.
const EVERY: Pass<'static> = &|_| true;

/// Blocks whose trigram summaries [`Ordered::refresh`] should make exact:
/// none, one, or a split's two.
#[derive(Debug, Clone, Copy)]
enum Stale {
    None,
    One(usize),
    Two(usize),
}

/// Every link in one order, in blocks.
#[derive(Debug, Clone)]
struct Ordered {
    time: Time,
    blocks: Vec<Block>,
    len: usize,
}

impl Ordered {
    fn build(time: Time, items: Vec<Item<'_>>) -> Self {
        // By a number that orders keys first (`natural_order::head`): most
        // comparisons end without reading the keys, scattered as they are.
        let mut keyed: Vec<(u64, u64, usize)> = items
            .iter()
            .enumerate()
            .map(|(i, it)| (time.rank(&it.cols), natural_order::head(it.key), i))
            .collect();
        keyed.sort_unstable_by(|a, b| {
            (a.0, a.1)
                .cmp(&(b.0, b.1))
                .then_with(|| natural_order::cmp(items[a.2].key, items[b.2].key))
        });
        let sorted: Vec<Item<'_>> = keyed.iter().map(|&(_, _, i)| items[i]).collect();
        Self {
            time,
            blocks: sorted
                .chunks(BLOCK)
                .map(|c| Block::from_items(c.iter().copied(), time == Time::Key, None))
                .collect(),
            len: sorted.len(),
        }
    }

    fn place(&self, p: Pos) -> Option<(u64, &str)> {
        let b = self.blocks.get(p.0)?;
        Some((self.time.rank(&b.cols[p.1]), b.key(p.1)))
    }

    fn entry(&self, p: Pos) -> Option<(&str, Cols)> {
        let b = self.blocks.get(p.0)?;
        Some((b.key(p.1), b.cols[p.1]))
    }

    fn rank_at(&self, p: Pos) -> Option<u64> {
        self.place(p).map(|(r, _)| r)
    }

    fn end(&self) -> Pos {
        Pos(self.blocks.len(), 0)
    }

    fn next(&self, p: Pos) -> Pos {
        match self.blocks.get(p.0) {
            Some(b) if p.1 + 1 < b.len() => Pos(p.0, p.1 + 1),
            Some(_) => Pos(p.0 + 1, 0),
            None => p,
        }
    }

    fn prev(&self, p: Pos) -> Option<Pos> {
        if p.1 > 0 {
            Some(Pos(p.0, p.1 - 1))
        } else if p.0 > 0 {
            let b = p.0 - 1;
            Some(Pos(b, self.blocks[b].len() - 1))
        } else {
            None
        }
    }

    /// The block that holds, or would hold, `place`.
    fn block_for(&self, place: (u64, &str)) -> usize {
        let after = self.blocks.partition_point(|b| {
            place_cmp((self.time.rank(&b.cols[0]), b.key(0)), place) != Ordering::Greater
        });
        after.saturating_sub(1)
    }

    /// Index in block `b` of the first link not before `place`.
    fn lower_bound_in(&self, b: usize, place: (u64, &str)) -> usize {
        let block = &self.blocks[b];
        let (mut lo, mut hi) = (0, block.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            let at = (self.time.rank(&block.cols[mid]), block.key(mid));
            if place_cmp(at, place) == Ordering::Less {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The position of the first link not before `place`.
    fn seek(&self, place: (u64, &str)) -> Pos {
        if self.blocks.is_empty() {
            return self.end();
        }
        let b = self.block_for(place);
        let i = self.lower_bound_in(b, place);
        if i == self.blocks[b].len() {
            Pos(b + 1, 0)
        } else {
            Pos(b, i)
        }
    }

    /// The first link of rank `rank` or more (keys are never empty, and the
    /// empty text comes before every other).
    fn seek_rank(&self, rank: u64) -> Pos {
        self.seek((rank, ""))
    }

    /// Inserts `item` (its record, if any, is summed up in a time order's
    /// block and kept in key order's); which blocks' trigram summaries are
    /// loose enough to be made exact.
    fn insert(&mut self, item: Item<'_>) -> Stale {
        let place = (self.time.rank(&item.cols), item.key);
        let texts = self.time == Time::Key;
        if self.blocks.is_empty() {
            self.blocks.push(Block::from_items([item], texts, None));
            self.len = 1;
            return Stale::None;
        }
        let b = self.block_for(place);
        let at = self.lower_bound_in(b, place);
        let block = &self.blocks[b];
        if at < block.len() && block.key(at) == item.key {
            return Stale::None;
        }
        let mut items: Vec<Item<'_>> = (0..block.len()).map(|i| block.item(i)).collect();
        items.insert(at, item);
        // A time order's block keeps its trigrams (it has no texts to
        // recompute them from); halves of a split keep all of them, and are
        // made exact by the caller.
        let carried = (!texts).then_some((&block.grams, block.stale));
        let (replacement, stale) = if items.len() >= 2 * BLOCK {
            let (a, z) = items.split_at(items.len() / 2);
            (
                vec![
                    Block::from_items(a.iter().copied(), texts, carried),
                    Block::from_items(z.iter().copied(), texts, carried),
                ],
                Stale::Two(b),
            )
        } else {
            (vec![Block::from_items(items, texts, carried)], Stale::None)
        };
        self.blocks.splice(b..=b, replacement);
        self.len += 1;
        if texts { Stale::None } else { stale }
    }

    /// Removes `key`'s link; which block's trigram summary is loose enough
    /// to be made exact.
    fn remove(&mut self, key: &str, cols: &Cols) -> Stale {
        let place = (self.time.rank(cols), key);
        let p = self.seek(place);
        if self.place(p) != Some(place) {
            return Stale::None;
        }
        let texts = self.time == Time::Key;
        let block = &self.blocks[p.0];
        let carried = (!texts).then_some((&block.grams, block.stale.saturating_add(1)));
        let rebuilt = Block::from_items(
            (0..block.len())
                .filter(|&i| i != p.1)
                .map(|i| block.item(i)),
            texts,
            carried,
        );
        self.len -= 1;
        if rebuilt.len() == 0 {
            self.blocks.remove(p.0);
            Stale::None
        } else {
            let stale = rebuilt.stale;
            self.blocks[p.0] = rebuilt;
            if stale >= REFRESH_AFTER {
                Stale::One(p.0)
            } else {
                Stale::None
            }
        }
    }

    /// Makes the trigram summary of each block `stale` names exact again,
    /// from the texts `by_key` holds of its links (all of them, or the
    /// block keeps its summary).
    fn refresh(&mut self, stale: Stale, by_key: &Ordered) {
        let blocks = match stale {
            Stale::None => 0..0,
            Stale::One(b) => b..b + 1,
            Stale::Two(b) => b..b + 2,
        };
        for b in blocks {
            let Some(block) = self.blocks.get_mut(b) else {
                continue;
            };
            let mut grams = Grams::new(TIME_GRAM_BITS);
            let all = (0..block.len()).all(|i| match by_key.record_of(block.key(i)) {
                Some(r) => {
                    grams.add(r.bytes);
                    true
                }
                None => false,
            });
            if all {
                block.grams = grams;
                block.stale = 0;
            }
        }
    }

    /// Whether `key`'s text holds `finder`'s needle, as
    /// [`Ordered::search`] matches it (key order).
    fn text_holds(
        &self,
        key: &str,
        finder: &memmem::Finder<'_>,
        url_only: bool,
        hits: &mut Vec<usize>,
    ) -> bool {
        let p = self.seek((0, key));
        let Some(block) = self.blocks.get(p.0) else {
            return false;
        };
        if p.1 >= block.len() || block.key(p.1) != key {
            return false;
        }
        hits.clear();
        block.hits(finder, url_only, p.1, p.1 + 1, hits);
        !hits.is_empty()
    }

    /// `key`'s searchable text, in key order.
    fn record_of(&self, key: &str) -> Option<Record<'_>> {
        let p = self.seek((0, key));
        let block = self.blocks.get(p.0)?;
        (block.key(p.1) == key).then(|| block.item(p.1).record)?
    }

    /// Visits links in order (backward: last first) from `start` until
    /// `visit` says stop.
    fn walk<'s>(
        &'s self,
        start: Start<'_>,
        backward: bool,
        may: Pass<'_>,
        mut visit: impl FnMut(&'s str, Cols) -> bool,
    ) {
        let mut p = match (start, backward) {
            (Start::Edge, false) => Pos(0, 0),
            (Start::Edge, true) => self.end(),
            (Start::At(r, k), _) => self.seek((r, k)),
            (Start::Past(r, k), false) => {
                let p = self.seek((r, k));
                if self.place(p) == Some((r, k)) {
                    self.next(p)
                } else {
                    p
                }
            }
            (Start::Past(r, k), true) => self.seek((r, k)),
        };
        if backward {
            self.walk_back_from(p, may, visit);
        } else {
            while let Some(block) = self.blocks.get(p.0) {
                if !may(block) {
                    p = Pos(p.0 + 1, 0);
                    continue;
                }
                if !visit(block.key(p.1), block.cols[p.1]) {
                    return;
                }
                p = self.next(p);
            }
        }
    }

    /// Visits the links before `p`, last first, passing over the blocks
    /// `may` rules out, until `visit` says stop.
    fn walk_back_from<'s>(
        &'s self,
        mut p: Pos,
        may: Pass<'_>,
        mut visit: impl FnMut(&'s str, Cols) -> bool,
    ) {
        while let Some(q) = self.prev(p) {
            let block = &self.blocks[q.0];
            if !may(block) {
                p = Pos(q.0, 0);
                continue;
            }
            if !visit(block.key(q.1), block.cols[q.1]) {
                return;
            }
            p = q;
        }
    }

    /// The last link at or before `q` in a block `may` lets through.
    fn prev_where(&self, mut q: Pos, may: Pass<'_>) -> Option<Pos> {
        while !may(&self.blocks[q.0]) {
            q = self.prev(Pos(q.0, 0))?;
        }
        Some(q)
    }

    /// The first link at or after `p` in a block `may` lets through (the
    /// end if none).
    fn next_where(&self, mut p: Pos, may: Pass<'_>) -> Pos {
        while let Some(b) = self.blocks.get(p.0) {
            if may(b) {
                return p;
            }
            p = Pos(p.0 + 1, 0);
        }
        self.end()
    }

    /// Where the links from `from` on stop passing `inside`, which holds
    /// for a run of them and then no more: found by halves, not read.
    fn run_end(&self, from: Pos, inside: impl Fn(&str) -> bool) -> Pos {
        if from.0 >= self.blocks.len() {
            return self.end();
        }
        let later = self.blocks[from.0 + 1..].partition_point(|b| inside(b.key(0)));
        let b = from.0 + later;
        let block = &self.blocks[b];
        let lo = if b == from.0 { from.1 } else { 0 };
        let i = lo
            + (lo..block.len())
                .collect::<Vec<_>>()
                .partition_point(|&i| inside(block.key(i)));
        if i == block.len() {
            Pos(b + 1, 0)
        } else {
            Pos(b, i)
        }
    }

    /// Newest first: each time's links in key order, the latest time
    /// first, links without the time last (by key); backward the reverse.
    /// `start`'s rank is a time as this order keeps it (oldest first).
    /// Each time's links are found by reading along, not by a seek, so a
    /// walk over every link (a rare state) costs two reads a link.
    ///
    /// Blocks `may` rules out are passed over: a time whose links lie only
    /// in them is never read, and reading back to the previous time starts
    /// from the last block `may` lets through.
    fn walk_newest<'s>(
        &'s self,
        start: Start<'_>,
        backward: bool,
        may: Pass<'_>,
        mut visit: impl FnMut(&'s str, Cols) -> bool,
    ) {
        if backward {
            self.walk_newest_back(start, may, visit);
            return;
        }
        // The group walked, where it starts, and where the walk is in it.
        let (mut group, mut first, mut p) = match start {
            Start::Past(r, k) => {
                let p = self.seek((r, k));
                let p = if self.place(p) == Some((r, k)) {
                    self.next(p)
                } else {
                    p
                };
                (r, self.seek_rank(r), p)
            }
            _ => {
                let untimed = self.seek_rank(NO_TIME);
                match self.prev(untimed).and_then(|q| self.prev_where(q, may)) {
                    Some(q) => {
                        let (r, s) = self.group_from_its_end(q);
                        (r, s, s)
                    }
                    None => (NO_TIME, untimed, untimed),
                }
            }
        };
        loop {
            while let Some(block) = self.blocks.get(p.0) {
                if !may(block) {
                    // Past the block; the time's links may go on after it.
                    p = Pos(p.0 + 1, 0);
                    continue;
                }
                let (key, cols) = (block.key(p.1), block.cols[p.1]);
                if self.time.rank(&cols) != group {
                    break;
                }
                if !visit(key, cols) {
                    return;
                }
                p = self.next(p);
            }
            if group == NO_TIME {
                return;
            }
            // The time before this one ends just before this one starts
            // (or, past blocks ruled out, in the last block let through
            // before it); before the oldest come the links without the time.
            (group, first, p) = match self.prev(first).and_then(|q| self.prev_where(q, may)) {
                Some(q) => {
                    let (r, s) = self.group_from_its_end(q);
                    (r, s, s)
                }
                None => {
                    let untimed = self.seek_rank(NO_TIME);
                    (NO_TIME, untimed, untimed)
                }
            };
        }
    }

    /// The rank at `last` and where the links of that rank start, read
    /// back from `last`.
    fn group_from_its_end(&self, last: Pos) -> (u64, Pos) {
        let rank = self.rank_at(last).unwrap_or(NO_TIME);
        let mut s = last;
        while let Some(q) = self.prev(s) {
            if self.rank_at(q) != Some(rank) {
                break;
            }
            s = q;
        }
        (rank, s)
    }

    /// Where the links of the rank at `first` end, read on from `first`.
    fn group_end(&self, first: Pos, rank: u64) -> Pos {
        let mut e = first;
        while self.rank_at(e) == Some(rank) {
            e = self.next(e);
        }
        e
    }

    /// [`Ordered::walk_newest`] backward: links without the time, last key
    /// first; then each time from the oldest, its last key first.
    fn walk_newest_back<'s>(
        &'s self,
        start: Start<'_>,
        may: Pass<'_>,
        mut visit: impl FnMut(&'s str, Cols) -> bool,
    ) {
        let (mut group, mut end, mut p) = match start {
            Start::Past(r, k) => (r, self.seek_rank(r.saturating_add(1)), self.seek((r, k))),
            _ => (NO_TIME, self.end(), self.end()),
        };
        loop {
            while let Some(q) = self.prev(p) {
                let block = &self.blocks[q.0];
                if !may(block) {
                    p = Pos(q.0, 0);
                    continue;
                }
                let (key, cols) = (block.key(q.1), block.cols[q.1]);
                if self.time.rank(&cols) != group {
                    break;
                }
                if !visit(key, cols) {
                    return;
                }
                p = q;
            }
            // The next time starts where this one ends (or, past blocks
            // ruled out, in the first block let through after it); after
            // the links without the time comes the oldest.
            let next = self.next_where(if group == NO_TIME { Pos(0, 0) } else { end }, may);
            match self.rank_at(next) {
                Some(r) if r != NO_TIME => {
                    group = r;
                    end = self.group_end(next, r);
                    p = end;
                }
                _ => return,
            }
        }
    }

    /// Visits, in order from `start`, the links whose text holds `needle`
    /// (see [`Block::hits`]) until `visit` says stop. Key order only.
    fn search<'s>(
        &'s self,
        needle: &[u8],
        url_only: bool,
        start: Start<'_>,
        backward: bool,
        may: Pass<'_>,
        mut visit: impl FnMut(&'s str, Cols) -> bool,
    ) {
        let finder = memmem::Finder::new(needle);
        let from = match start {
            Start::Edge if backward => self.end(),
            Start::Edge => Pos(0, 0),
            Start::At(r, k) => self.seek((r, k)),
            Start::Past(r, k) if backward => self.seek((r, k)),
            Start::Past(r, k) => {
                let p = self.seek((r, k));
                if self.place(p) == Some((r, k)) {
                    self.next(p)
                } else {
                    p
                }
            }
        };
        let mut hits = Vec::new();
        if backward {
            for b in (0..self.blocks.len().min(from.0 + 1)).rev() {
                let block = &self.blocks[b];
                if !may(block) {
                    continue;
                }
                let hi = if b == from.0 { from.1 } else { block.len() };
                hits.clear();
                block.hits(&finder, url_only, 0, hi, &mut hits);
                for &i in hits.iter().rev() {
                    if !visit(block.key(i), block.cols[i]) {
                        return;
                    }
                }
            }
        } else {
            for (b, block) in self.blocks.iter().enumerate().skip(from.0) {
                if !may(block) {
                    continue;
                }
                let lo = if b == from.0 { from.1 } else { 0 };
                hits.clear();
                block.hits(&finder, url_only, lo, block.len(), &mut hits);
                for &i in &hits {
                    if !visit(block.key(i), block.cols[i]) {
                        return;
                    }
                }
            }
        }
    }

    fn heap_bytes(&self) -> usize {
        self.blocks.iter().map(Block::heap_bytes).sum::<usize>()
            + self.blocks.capacity() * size_of::<Block>()
    }
}

/// What [`ListIndex::trigram_reach`] measures.
#[derive(Debug, Clone, Copy)]
pub struct TrigramReach {
    pub blocks: usize,
    pub passed: usize,
    pub with_match: usize,
    pub fill: f64,
}

/// Every link of a table in key order (with the search text) and in both
/// time orders, kept current per edit by [`super::key_order::KeyOrder`].
#[derive(Debug, Clone)]
pub struct ListIndex {
    by_key: Ordered,
    created: Ordered,
    changed: Ordered,
}

impl Default for ListIndex {
    fn default() -> Self {
        Self::build(std::iter::empty())
    }
}

impl ListIndex {
    /// From every link of a table, each once.
    pub fn build<'a>(links: impl IntoIterator<Item = (LinkView<'a>, Texts<'a>)>) -> Self {
        let mut hay = Vec::new();
        let mut at: Vec<(&'a str, Cols, usize, u32, u32)> = Vec::new();
        for (l, texts) in links {
            let start = hay.len();
            let (url_at, raw_at) = write_record(&l, &texts, &mut hay);
            at.push((l.key, Cols::of(&l), start, url_at, raw_at));
        }
        let ends: Vec<usize> = at.iter().skip(1).map(|a| a.2).chain([hay.len()]).collect();
        let items: Vec<Item<'_>> = at
            .iter()
            .zip(&ends)
            .map(|(&(key, cols, start, url_at, raw_at), &end)| Item {
                key,
                cols,
                record: Some(Record {
                    bytes: &hay[start..end],
                    url_at,
                    raw_at,
                }),
            })
            .collect();
        // The time orders keep no text, only each block's trigrams.
        let created = Ordered::build(Time::Created, items.clone());
        let changed = Ordered::build(Time::Changed, items.clone());
        Self {
            by_key: Ordered::build(Time::Key, items),
            created,
            changed,
        }
    }

    pub fn len(&self) -> usize {
        self.by_key.len
    }

    pub fn is_empty(&self) -> bool {
        self.by_key.len == 0
    }

    /// Heap bytes of the three orders and the search text.
    pub fn heap_bytes(&self) -> usize {
        self.by_key.heap_bytes() + self.created.heap_bytes() + self.changed.heap_bytes()
    }

    /// How well the creation order's trigram summaries narrow a search for
    /// `needle` (as [`Self::search`] takes it), for the benches: blocks,
    /// those whose summary may hold it, those of them with a match, and
    /// the mean share of a summary's bits set.
    pub fn trigram_reach(&self, needle: &[u8]) -> TrigramReach {
        let probe = Probe::new(needle);
        let finder = memmem::Finder::new(needle);
        let mut hits = Vec::new();
        let blocks = &self.created.blocks;
        let passed: Vec<&Block> = blocks.iter().filter(|b| b.grams.holds(&probe)).collect();
        let with_match = passed
            .iter()
            .filter(|b| {
                (0..b.len()).any(|i| self.by_key.text_holds(b.key(i), &finder, false, &mut hits))
            })
            .count();
        TrigramReach {
            blocks: blocks.len(),
            passed: passed.len(),
            with_match,
            fill: blocks.iter().map(|b| b.grams.fill()).sum::<f64>() / blocks.len().max(1) as f64,
        }
    }

    /// Every key in natural order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.by_key
            .blocks
            .iter()
            .flat_map(|b| (0..b.len()).map(move |i| b.key(i)))
    }

    /// Replaces a link's entries: `old` as the index holds it (none for a
    /// new key), `new` as the table now holds it (none once it is gone).
    pub fn replace(
        &mut self,
        old: Option<(LinkView<'_>, Texts<'_>)>,
        new: Option<(LinkView<'_>, Texts<'_>)>,
    ) {
        // Scans are the key's, not the document's: an edit keeps what is
        // known of them.
        let mut scanned = 0;
        let old_key = old.as_ref().map(|(l, _)| l.key);
        if let Some((l, _)) = old {
            let cols = Cols::of(&l);
            scanned = self.cols_of(l.key).map_or(0, |c| c.flags & SCANNED);
            self.by_key.remove(l.key, &cols);
            // The key order holds every other link's text, to make a
            // loosened time block's trigrams exact from.
            let by_key = &self.by_key;
            for order in [&mut self.created, &mut self.changed] {
                let stale = order.remove(l.key, &cols);
                order.refresh(stale, by_key);
            }
        }
        if let Some((l, texts)) = new {
            let mut cols = Cols::of(&l);
            if old_key == Some(l.key) {
                cols.flags |= scanned;
            }
            let mut bytes = Vec::new();
            let (url_at, raw_at) = write_record(&l, &texts, &mut bytes);
            let item = Item {
                key: l.key,
                cols,
                record: Some(Record {
                    bytes: &bytes,
                    url_at,
                    raw_at,
                }),
            };
            // The key order first: a time order's split reads its texts.
            self.by_key.insert(item);
            let by_key = &self.by_key;
            for order in [&mut self.created, &mut self.changed] {
                let stale = order.insert(item);
                order.refresh(stale, by_key);
            }
        }
    }

    /// Links in key order from `start`, until `visit` says stop.
    pub fn walk_keys<'s>(
        &'s self,
        start: Start<'_>,
        backward: bool,
        visit: impl FnMut(&'s str, Cols) -> bool,
    ) {
        self.by_key.walk(start, backward, EVERY, visit)
    }

    /// [`Self::walk_keys`] over the blocks `may` lets through only.
    pub fn walk_keys_where<'s>(
        &'s self,
        start: Start<'_>,
        backward: bool,
        may: May<'_>,
        visit: impl FnMut(&'s str, Cols) -> bool,
    ) {
        self.by_key
            .walk(start, backward, &|b| may(&b.summary), visit)
    }

    /// Links in key order before `end`, last first, from the end of the run
    /// of keys `inside` holds for that starts at `from` (or before `end`,
    /// if sooner), until `visit` says stop.
    pub fn walk_keys_back_in_run<'s>(
        &'s self,
        from: &str,
        end: &str,
        inside: impl Fn(&str) -> bool,
        visit: impl FnMut(&'s str, Cols) -> bool,
    ) {
        self.walk_keys_back_in_run_where(from, end, inside, ALL, visit)
    }

    /// [`Self::walk_keys_back_in_run`] over the blocks `may` lets through.
    pub fn walk_keys_back_in_run_where<'s>(
        &'s self,
        from: &str,
        end: &str,
        inside: impl Fn(&str) -> bool,
        may: May<'_>,
        visit: impl FnMut(&'s str, Cols) -> bool,
    ) {
        let order = &self.by_key;
        let p = order
            .seek((0, end))
            .min(order.run_end(order.seek((0, from)), inside));
        order.walk_back_from(p, &|b| may(&b.summary), visit)
    }

    /// Links in a time order (`newest`: latest first) from `start`, whose
    /// rank is the time as [`Time::rank`] gives it, until `visit` says stop.
    pub fn walk_time<'s>(
        &'s self,
        time: Time,
        newest: bool,
        start: Start<'_>,
        backward: bool,
        visit: impl FnMut(&'s str, Cols) -> bool,
    ) {
        self.walk_time_where(time, newest, start, backward, ALL, visit)
    }

    /// [`Self::walk_time`] over the blocks `may` lets through only.
    pub fn walk_time_where<'s>(
        &'s self,
        time: Time,
        newest: bool,
        start: Start<'_>,
        backward: bool,
        may: May<'_>,
        visit: impl FnMut(&'s str, Cols) -> bool,
    ) {
        let order = match time {
            Time::Key => &self.by_key,
            Time::Created => &self.created,
            Time::Changed => &self.changed,
        };
        let may = |b: &Block| may(&b.summary);
        if newest {
            order.walk_newest(start, backward, &may, visit)
        } else {
            order.walk(start, backward, &may, visit)
        }
    }

    /// Links in key order from `start` whose text holds `needle`: the
    /// destination as it is (`url_only`), or any field lowered (then
    /// `needle` must be lowered as [`super::search::Needle`] lowers it).
    pub fn search<'s>(
        &'s self,
        needle: &[u8],
        url_only: bool,
        start: Start<'_>,
        backward: bool,
        visit: impl FnMut(&'s str, Cols) -> bool,
    ) {
        self.search_where(needle, url_only, start, backward, ALL, visit)
    }

    /// [`Self::search`] over the blocks `may` lets through only.
    pub fn search_where<'s>(
        &'s self,
        needle: &[u8],
        url_only: bool,
        start: Start<'_>,
        backward: bool,
        may: May<'_>,
        visit: impl FnMut(&'s str, Cols) -> bool,
    ) {
        let probe = Probe::new(needle);
        let may = |b: &Block| may(&b.summary) && b.grams.holds(&probe);
        self.by_key
            .search(needle, url_only, start, backward, &may, visit)
    }

    /// Issue 33: [`Self::walk_time_where`] visiting only the links whose
    /// text holds `needle` (as [`Self::search`] matches it), passing over
    /// the blocks whose trigram summary rules the needle out and reading
    /// each other link's text from the key order. `None` when the walk
    /// had read `budget` links' texts without `visit` saying stop: a
    /// needle whose trigrams every block holds (short, or common) is
    /// better found by one pass over the texts.
    #[allow(clippy::too_many_arguments)]
    pub fn search_time_where<'s>(
        &'s self,
        needle: &[u8],
        url_only: bool,
        time: Time,
        newest: bool,
        start: Start<'_>,
        backward: bool,
        may: May<'_>,
        budget: usize,
        mut visit: impl FnMut(&'s str, Cols) -> bool,
    ) -> Option<()> {
        let probe = Probe::new(needle);
        let pass = |b: &Block| may(&b.summary) && b.grams.holds(&probe);
        let finder = memmem::Finder::new(needle);
        let (mut read, mut stopped) = (0usize, false);
        let mut hits = Vec::with_capacity(1);
        let found = |key: &'s str, cols: Cols| {
            if read == budget {
                return false;
            }
            read += 1;
            if !self.by_key.text_holds(key, &finder, url_only, &mut hits) {
                return true;
            }
            let go_on = visit(key, cols);
            stopped = !go_on;
            go_on
        };
        let order = match time {
            Time::Key => &self.by_key,
            Time::Created => &self.created,
            Time::Changed => &self.changed,
        };
        if newest {
            order.walk_newest(start, backward, &pass, found);
        } else {
            order.walk(start, backward, &pass, found);
        }
        (stopped || read < budget).then_some(())
    }

    /// The order `time` sorts by.
    fn order_mut(&mut self, time: Time) -> &mut Ordered {
        match time {
            Time::Key => &mut self.by_key,
            Time::Created => &mut self.created,
            Time::Changed => &mut self.changed,
        }
    }

    /// The columns of `key`'s link, if it is in the index.
    fn cols_of(&self, key: &str) -> Option<Cols> {
        let p = self.by_key.seek((0, key));
        self.by_key
            .entry(p)
            .and_then(|(k, c)| (k == key).then_some(c))
    }

    /// Marks `key`'s link known to have been scanned in every order, so
    /// the "never scanned" filter passes over it without asking the scan
    /// counts (and over a block whose links all are, unread). Only for a
    /// link the scan counts said was scanned: scans of all time only grow.
    pub fn mark_scanned(&mut self, key: &str) {
        let Some(cols) = self.cols_of(key) else {
            return;
        };
        if cols.known_scanned() {
            return;
        }
        for time in [Time::Key, Time::Created, Time::Changed] {
            let order = self.order_mut(time);
            let place = (time.rank(&cols), key);
            let p = order.seek(place);
            if order.place(p) == Some(place) {
                order.blocks[p.0].mark_scanned(p.1);
            }
        }
    }

    /// Blocks in all (each order's counted), for [`Self::mark_scanned_in`].
    pub fn block_count(&self) -> usize {
        self.by_key.blocks.len() + self.created.blocks.len() + self.changed.blocks.len()
    }

    /// Asks `scanned` of every link not yet known scanned in blocks
    /// `from..to` (counted over the three orders in turn, as
    /// [`Self::block_count`]) and marks those it says were: a pass over the
    /// whole index a few blocks at a time, so a thread priming it holds
    /// the lock briefly. Each order is marked on its own (a lookup each,
    /// no seek), so an index changed between two calls is still only ever
    /// marked where `scanned` said so.
    pub fn mark_scanned_in(&mut self, from: usize, to: usize, scanned: &dyn Fn(&str) -> bool) {
        let mut base = 0;
        for time in [Time::Key, Time::Created, Time::Changed] {
            let order = self.order_mut(time);
            let n = order.blocks.len();
            for b in from.max(base)..to.min(base + n) {
                let block = &mut order.blocks[b - base];
                if block.summary.unscanned == 0 {
                    continue;
                }
                for i in 0..block.len() {
                    if !block.cols[i].known_scanned() && scanned(block.key(i)) {
                        block.mark_scanned(i);
                    }
                }
            }
            base += n;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    /// A link of the model: its destination, title and created time.
    type Model = BTreeMap<String, (String, Option<String>, Option<u32>)>;

    fn view<'a>(key: &'a str, url: &'a str, created: Option<u32>) -> LinkView<'a> {
        LinkView {
            key,
            url,
            inactive: false,
            expires_ms: None,
            direct: None,
            created,
            changed: created.map(|t| 100 - t),
            fallback: None,
            rules: None,
        }
    }

    fn build(model: &Model) -> ListIndex {
        ListIndex::build(model.iter().map(|(k, (url, title, created))| {
            (view(k, url, *created), Texts::new(title.as_deref(), None))
        }))
    }

    /// The model's keys in `(rank, key)` order.
    fn sorted(model: &Model, rank: impl Fn(Option<u32>) -> u64) -> Vec<&str> {
        let mut all: Vec<(u64, &str)> = model
            .iter()
            .map(|(k, (_, _, c))| (rank(*c), k.as_str()))
            .collect();
        all.sort_by(|a, b| place_cmp(*a, *b));
        all.into_iter().map(|(_, k)| k).collect()
    }

    fn collect(walk: impl FnOnce(&mut dyn FnMut(&str, Cols) -> bool)) -> Vec<String> {
        let mut out = Vec::new();
        walk(&mut |k, _| {
            out.push(k.to_owned());
            true
        });
        out
    }

    proptest! {
        #[test]
        fn orders_and_search_match_a_model_through_edits(
            initial in proptest::collection::vec(("[a-c1-3]{1,3}|aaaaaaa[a-c0-9]{0,3}", 0u32..6, "[a-cA-C]{0,3}"), 0..600),
            ops in proptest::collection::vec((any::<bool>(), "[a-c01-3]{1,3}", 0u32..7, "[a-cA-C]{0,3}"), 0..600),
            needle in "[a-cA-C]{1,2}",
            cursor in ("[a-d0-3]{0,3}", 0u64..8),
        ) {
            let time = |t: u32| (t < 5).then_some(t + 1);
            let mut model: Model = initial
                .iter()
                .map(|(k, t, u)| (k.clone(), (format!("/{u}"), (!u.is_empty()).then(|| u.clone()), time(*t))))
                .collect();
            let mut index = build(&model);
            for (upsert, k, t, u) in &ops {
                let was = model.get(k).cloned();
                let now = upsert.then(|| (format!("/{u}"), (!u.is_empty()).then(|| u.clone()), time(*t)));
                let as_view = |v: &Option<(String, Option<String>, Option<u32>)>| {
                    v.as_ref().map(|(url, title, c)| (url.clone(), title.clone(), *c))
                };
                let (was_v, now_v) = (as_view(&was), as_view(&now));
                index.replace(
                    was_v.as_ref().map(|(url, title, c)| (view(k, url, *c), Texts::new(title.as_deref(), None))),
                    now_v.as_ref().map(|(url, title, c)| (view(k, url, *c), Texts::new(title.as_deref(), None))),
                );
                match now {
                    Some(v) => model.insert(k.clone(), v),
                    None => model.remove(k),
                };
            }
            prop_assert_eq!(index.len(), model.len());
            let keys = sorted(&model, |_| 0);
            prop_assert_eq!(index.keys().collect::<Vec<_>>(), keys.clone());
            let oldest = sorted(&model, |c| c.map_or(NO_TIME, u64::from));
            // Newest first: the latest time first, each time's keys in
            // order, no time last.
            let newest = sorted(&model, |c| c.map_or(NO_TIME, |t| u64::from(100 - t)));
            for (newest_first, want) in [(false, &oldest), (true, &newest)] {
                let got = collect(|v| index.walk_time(Time::Created, newest_first, Start::Edge, false, v));
                prop_assert_eq!(&got, want);
                let back = collect(|v| index.walk_time(Time::Created, newest_first, Start::Edge, true, v));
                let mut rev = want.clone();
                rev.reverse();
                prop_assert_eq!(back, rev);
                // From a cursor, both ways: what lies past it in the model.
                let (ck, ct) = (&cursor.0, cursor.1);
                let ct = if ct >= 6 { NO_TIME } else { ct };
                let rank_of = |k: &str| {
                    let c = model[k].2;
                    match (newest_first, c) {
                        (_, None) => NO_TIME,
                        (true, Some(t)) => u64::from(100 - t),
                        (false, Some(t)) => u64::from(t),
                    }
                };
                let cursor_rank = match (newest_first, ct) {
                    (true, t) if t != NO_TIME => 100 - t,
                    (_, t) => t,
                };
                let after: Vec<&str> = want
                    .iter()
                    .copied()
                    .filter(|k| place_cmp((rank_of(k), k), (cursor_rank, ck)) == Ordering::Greater)
                    .collect();
                let got = collect(|v| index.walk_time(Time::Created, newest_first, Start::Past(ct, ck), false, v));
                prop_assert_eq!(got, after);
                let mut before: Vec<&str> = want
                    .iter()
                    .copied()
                    .filter(|k| place_cmp((rank_of(k), k), (cursor_rank, ck)) == Ordering::Less)
                    .collect();
                before.reverse();
                let got = collect(|v| index.walk_time(Time::Created, newest_first, Start::Past(ct, ck), true, v));
                prop_assert_eq!(got, before);
            }
            // Search: lowered key, title and destination, or the
            // destination as it is.
            let lower = needle.to_lowercase();
            let any: Vec<&str> = keys
                .iter()
                .copied()
                .filter(|k| {
                    let (url, title, _) = &model[*k];
                    k.to_lowercase().contains(&lower)
                        || title.as_ref().is_some_and(|t| t.to_lowercase().contains(&lower))
                        || url.to_lowercase().contains(&lower)
                })
                .collect();
            prop_assert_eq!(collect(|v| index.search(lower.as_bytes(), false, Start::Edge, false, v)), any);
            let url: Vec<&str> = keys.iter().copied().filter(|k| model[*k].0.contains(&needle)).collect();
            prop_assert_eq!(collect(|v| index.search(needle.as_bytes(), true, Start::Edge, false, v)), url.clone());
            let mut back = url;
            back.reverse();
            prop_assert_eq!(collect(|v| index.search(needle.as_bytes(), true, Start::Edge, true, v)), back);
        }
    }

    #[test]
    fn blocks_split_and_empty_blocks_go() {
        let names: Vec<String> = (0..2000).map(|i| format!("k{i:05}")).collect();
        let mut index = ListIndex::default();
        for n in &names {
            index.replace(None, Some((view(n, "/", Some(1)), Texts::default())));
        }
        assert!(
            index.by_key.blocks.len() > 2,
            "{} blocks",
            index.by_key.blocks.len()
        );
        for n in &names[..1990] {
            index.replace(Some((view(n, "/", Some(1)), Texts::default())), None);
        }
        assert_eq!(index.keys().count(), 10);
        for order in [&index.by_key, &index.created, &index.changed] {
            assert_eq!(order.len, 10);
            assert!(order.blocks.iter().all(|b| b.len() > 0));
        }
    }

    /// A link of the state tests: disabled, expiry (0 none, 1 past, 2
    /// future), created time (ties), scanned.
    type Flags = (bool, u8, Option<u32>, bool);

    const NOW_MS: i64 = 1_800_000_000_000;

    fn flagged<'a>(key: &'a str, f: &Flags) -> LinkView<'a> {
        LinkView {
            inactive: f.0,
            expires_ms: match f.1 {
                0 => None,
                1 => Some(NOW_MS - 1),
                _ => Some(NOW_MS + 1),
            },
            ..view(key, "/", f.2)
        }
    }

    /// The state filters as [`super::super::list`] asks them: a link's test
    /// and its blocks' test.
    type Filter = (&'static str, fn(&Cols) -> bool, fn(&Summary) -> bool);

    fn filters() -> Vec<Filter> {
        vec![
            ("inactive", |c| c.inactive(), |s| s.any_inactive()),
            (
                "active",
                |c| c.is_live_at(NOW_MS),
                |s| s.any_live_at(NOW_MS),
            ),
            (
                "expiring",
                |c| !c.inactive() && c.expires_ms().is_some_and(|e| NOW_MS < e),
                |s| s.any_expiring_at(NOW_MS),
            ),
            (
                "expired",
                |c| !c.inactive() && c.expires_ms().is_some_and(|e| e <= NOW_MS),
                |s| s.any_expired_at(NOW_MS),
            ),
            (
                "not known scanned",
                |c| !c.known_scanned(),
                |s| s.any_not_known_scanned(),
            ),
        ]
    }

    /// Every walk of `index`, filtered by each state: passing over the
    /// blocks the summaries rule out, and reading every link.
    fn filtered_walks(
        index: &ListIndex,
        cursor: (u64, &str),
    ) -> Vec<(String, Vec<String>, Vec<String>)> {
        let mut out = Vec::new();
        for (name, admits, may) in filters() {
            for (time, newest) in [
                (Time::Key, false),
                (Time::Created, false),
                (Time::Created, true),
            ] {
                let starts = [Start::Edge, Start::Past(cursor.0, cursor.1)];
                for (start, backward) in starts.into_iter().flat_map(|s| [(s, false), (s, true)]) {
                    let mut skipping = Vec::new();
                    index.walk_time_where(time, newest, start, backward, &may, |k, c| {
                        if admits(&c) {
                            skipping.push(k.to_owned());
                        }
                        true
                    });
                    let mut reading = Vec::new();
                    index.walk_time(time, newest, start, backward, |k, c| {
                        if admits(&c) {
                            reading.push(k.to_owned());
                        }
                        true
                    });
                    let what =
                        format!("{name}: {time:?} newest {newest} {start:?} back {backward}");
                    out.push((what, skipping, reading));
                }
            }
            let mut skipping = Vec::new();
            index.search_where(b"/", true, Start::Edge, false, &may, |k, c| {
                if admits(&c) {
                    skipping.push(k.to_owned());
                }
                true
            });
            let mut reading = Vec::new();
            index.search(b"/", true, Start::Edge, false, |k, c| {
                if admits(&c) {
                    reading.push(k.to_owned());
                }
                true
            });
            out.push((format!("{name}: search"), skipping, reading));
        }
        out
    }

    fn arb_flags() -> impl Strategy<Value = Flags> {
        (
            proptest::bool::weighted(0.02),
            prop_oneof![8 => Just(0u8), 1 => Just(1u8), 1 => Just(2u8)],
            proptest::option::weighted(0.9, 0u32..40),
            proptest::bool::weighted(0.9),
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Issue 33: a walk filtered by state passes over whole blocks by
        /// their summaries and finds what reading every link finds, in
        /// every order and direction, through edits and scans marked.
        #[test]
        fn walks_passing_over_blocks_find_what_reading_every_link_finds(
            initial in proptest::collection::vec(arb_flags(), 0..1400),
            edits in proptest::collection::vec((0usize..1500, proptest::option::of(arb_flags())), 0..60),
            cursor in (0u64..42, 0usize..1500),
        ) {
            let keys: Vec<String> = (0..1500).map(|i| format!("k{i}")).collect();
            let mut model: BTreeMap<usize, Flags> = initial.into_iter().enumerate().collect();
            let mut index = ListIndex::build(
                model.iter().map(|(i, f)| (flagged(&keys[*i], f), Texts::default())),
            );
            let mark = |index: &mut ListIndex, model: &BTreeMap<usize, Flags>| {
                for (i, f) in model {
                    if f.3 {
                        index.mark_scanned(&keys[*i]);
                    }
                }
            };
            mark(&mut index, &model);
            for (i, now) in edits {
                let was = model.get(&i).copied();
                index.replace(
                    was.as_ref().map(|f| (flagged(&keys[i], f), Texts::default())),
                    now.as_ref().map(|f| (flagged(&keys[i], f), Texts::default())),
                );
                match now {
                    Some(f) => model.insert(i, f),
                    None => model.remove(&i),
                };
            }
            mark(&mut index, &model);
            let rank = if cursor.0 >= 40 { NO_TIME } else { cursor.0 };
            for (what, skipping, reading) in filtered_walks(&index, (rank, &keys[cursor.1])) {
                prop_assert_eq!(skipping, reading, "{}", what);
            }
        }
    }

    /// Many blocks, of which the summaries rule out all but the one an edit
    /// changes.
    fn many(n: usize) -> (Vec<String>, ListIndex) {
        let keys: Vec<String> = (0..n).map(|i| format!("k{i:05}")).collect();
        let flags: Flags = (false, 0, Some(7), true);
        let mut index =
            ListIndex::build(keys.iter().map(|k| (flagged(k, &flags), Texts::default())));
        for k in &keys {
            index.mark_scanned(k);
        }
        (keys, index)
    }

    fn found(
        index: &ListIndex,
        admits: fn(&Cols) -> bool,
        may: fn(&Summary) -> bool,
    ) -> Vec<String> {
        let mut out = Vec::new();
        index.walk_time_where(Time::Created, true, Start::Edge, false, &may, |k, c| {
            if admits(&c) {
                out.push(k.to_owned());
            }
            true
        });
        out
    }

    #[test]
    fn an_edit_changes_what_a_filter_finds_at_once() {
        let (keys, mut index) = many(5000);
        assert!(index.by_key.blocks.len() > 10);
        let [inactive, _, _, expired, unscanned] = <[_; 5]>::try_from(filters()).expect("five");
        for (_, admits, may) in [inactive, expired, unscanned] {
            assert_eq!(found(&index, admits, may), Vec::<String>::new());
        }
        let k = &keys[2345];
        let was: Flags = (false, 0, Some(7), true);
        let disabled: Flags = (true, 0, Some(7), true);
        index.replace(
            Some((flagged(k, &was), Texts::default())),
            Some((flagged(k, &disabled), Texts::default())),
        );
        assert_eq!(found(&index, inactive.1, inactive.2), [k.as_str()]);
        assert_eq!(
            found(&index, unscanned.1, unscanned.2),
            Vec::<String>::new(),
            "an edit keeps the scans known"
        );
        let expired_now: Flags = (false, 1, Some(9), true);
        index.replace(
            Some((flagged(k, &disabled), Texts::default())),
            Some((flagged(k, &expired_now), Texts::default())),
        );
        assert_eq!(found(&index, inactive.1, inactive.2), Vec::<String>::new());
        assert_eq!(found(&index, expired.1, expired.2), [k.as_str()]);
        // Deleted and made again: its scans are not known until marked.
        index.replace(Some((flagged(k, &expired_now), Texts::default())), None);
        index.replace(None, Some((flagged(k, &was), Texts::default())));
        assert_eq!(found(&index, unscanned.1, unscanned.2), [k.as_str()]);
        index.mark_scanned(k);
        assert_eq!(
            found(&index, unscanned.1, unscanned.2),
            Vec::<String>::new()
        );
    }

    #[test]
    fn priming_marks_in_slices_every_order_and_only_what_it_is_told() {
        let keys: Vec<String> = (0..3000).map(|i| format!("k{i:05}")).collect();
        let flags: Flags = (false, 0, Some(3), false);
        let mut index =
            ListIndex::build(keys.iter().map(|k| (flagged(k, &flags), Texts::default())));
        let total = index.block_count();
        let scanned = |k: &str| !k.ends_with('7');
        let mut from = 0;
        while from < total {
            index.mark_scanned_in(from, from + 5, &scanned);
            from += 5;
        }
        let (_, admits, may) = filters().pop().expect("scanned filter");
        let want: Vec<String> = keys.iter().filter(|k| k.ends_with('7')).cloned().collect();
        assert_eq!(
            found(&index, admits, may),
            want,
            "one time: its links in key order"
        );
        let mut in_key_order = Vec::new();
        index.walk_keys_where(Start::Edge, false, &may, |k, c| {
            if admits(&c) {
                in_key_order.push(k.to_owned());
            }
            true
        });
        assert_eq!(in_key_order.len(), 300);
    }

    // Issue 33: the trigram summaries a search walk passes blocks over by.

    /// A link of the search tests: destination (with capitals, so the
    /// destination as written differs from its lowered form), title,
    /// created time.
    type Searched = (String, String, Option<u32>);

    fn searched_view<'a>(key: &'a str, s: &'a Searched) -> (LinkView<'a>, Texts<'a>) {
        let l = LinkView {
            created: s.2,
            changed: s.2.map(|t| 1_000_000 - t),
            ..view(key, &s.0, None)
        };
        (l, Texts::new(Some(&s.1), None))
    }

    /// Whether `needle` is found in the link as [`ListIndex::search`]
    /// finds it: in the destination as written, or (lowered) in any field.
    fn holds(key: &str, s: &Searched, needle: &str, url_only: bool) -> bool {
        if url_only {
            return s.0.contains(needle);
        }
        let lower = needle.to_lowercase();
        [key, s.0.as_str(), s.1.as_str()]
            .iter()
            .any(|t| t.to_lowercase().contains(&lower))
    }

    /// Every search walk of `index` for `needle` (lowered unless
    /// `url_only`), passing over blocks by their trigrams, against every
    /// link walked and its text checked against the model.
    fn search_walks(
        index: &ListIndex,
        model: &BTreeMap<String, Searched>,
        needle: &str,
        url_only: bool,
        cursor: (u64, &str),
    ) -> Vec<(String, Vec<String>, Vec<String>)> {
        let lowered = needle.to_lowercase();
        let bytes = if url_only { needle } else { lowered.as_str() };
        let mut out = Vec::new();
        for (time, newest) in [
            (Time::Key, false),
            (Time::Created, false),
            (Time::Created, true),
            (Time::Changed, false),
            (Time::Changed, true),
        ] {
            let starts = [Start::Edge, Start::Past(cursor.0, cursor.1)];
            for (start, backward) in starts.into_iter().flat_map(|s| [(s, false), (s, true)]) {
                let mut skipping = Vec::new();
                let done = index.search_time_where(
                    bytes.as_bytes(),
                    url_only,
                    time,
                    newest,
                    start,
                    backward,
                    ALL,
                    usize::MAX,
                    |k, _| {
                        skipping.push(k.to_owned());
                        true
                    },
                );
                assert!(done.is_some());
                let mut reading = Vec::new();
                index.walk_time(time, newest, start, backward, |k, _| {
                    if holds(k, &model[k], needle, url_only) {
                        reading.push(k.to_owned());
                    }
                    true
                });
                let what = format!(
                    "{needle:?} url {url_only}: {time:?} newest {newest} {start:?} back {backward}"
                );
                out.push((what, skipping, reading));
            }
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        /// Issue 33: a search walking any order, passing over the blocks
        /// whose trigram summaries rule the needle out, finds what reading
        /// every link's text finds, through edits that loosen the time
        /// orders' summaries and the refreshes that make them exact.
        #[test]
        fn search_walks_passing_over_blocks_find_what_reading_every_text_finds(
            initial in proptest::collection::vec(("[a-hA-H]{2,6}", "[a-h]{0,6}", proptest::option::weighted(0.9, 0u32..60)), 0..1300),
            edits in proptest::collection::vec((0usize..1400, proptest::option::of(("[a-hA-H]{2,6}", "[a-h]{0,6}", proptest::option::weighted(0.9, 0u32..60)))), 0..300),
            needle in "[a-hA-H]{1,5}",
            url_only in any::<bool>(),
            cursor in (0u64..62, 0usize..1400),
        ) {
            let keys: Vec<String> = (0..1400).map(|i| format!("k{i}")).collect();
            let searched = |(url, title, c): (String, String, Option<u32>)| (format!("/{url}"), title, c);
            let mut model: BTreeMap<String, Searched> = initial
                .into_iter()
                .enumerate()
                .map(|(i, s)| (keys[i].clone(), searched(s)))
                .collect();
            let mut index = ListIndex::build(model.iter().map(|(k, s)| searched_view(k, s)));
            for (i, now) in edits {
                let k = &keys[i];
                let now = now.map(searched);
                let was = model.get(k).cloned();
                index.replace(
                    was.as_ref().map(|s| searched_view(k, s)),
                    now.as_ref().map(|s| searched_view(k, s)),
                );
                match now {
                    Some(s) => model.insert(k.clone(), s),
                    None => model.remove(k),
                };
            }
            let rank = if cursor.0 >= 60 { NO_TIME } else { cursor.0 };
            for (what, skipping, reading) in search_walks(&index, &model, &needle, url_only, (rank, &keys[cursor.1])) {
                prop_assert_eq!(skipping, reading, "{}", what);
            }
        }
    }

    /// A word of three letters for each `i` below 26³, each its own.
    fn word(i: usize) -> String {
        let n = i * 7919 % 17_576;
        [n / 676, n / 26 % 26, n % 26]
            .iter()
            .map(|&d| char::from(b'a' + d as u8))
            .collect()
    }

    /// Links made a second apart whose destinations name their number, as
    /// the bench's (`/poster-00123`), titled `abcabc` and a word of
    /// their own.
    fn posters(n: usize) -> (Vec<String>, Vec<Searched>, ListIndex) {
        let keys: Vec<String> = (0..n).map(|i| format!("k{i:05}")).collect();
        let links: Vec<Searched> = (0..n)
            .map(|i| {
                let title = format!("abcabc {}", word(i));
                (format!("/poster-{i:05}"), title, Some(i as u32 + 1))
            })
            .collect();
        let index = ListIndex::build(keys.iter().zip(&links).map(|(k, s)| searched_view(k, s)));
        (keys, links, index)
    }

    /// The keys of a newest-first search for `needle` of at most `n`, or
    /// `None` if it read more than `budget` links' texts.
    fn newest_matches(
        index: &ListIndex,
        needle: &str,
        n: usize,
        budget: usize,
    ) -> Option<Vec<String>> {
        let mut out = Vec::new();
        index
            .search_time_where(
                needle.as_bytes(),
                false,
                Time::Created,
                true,
                Start::Edge,
                false,
                ALL,
                budget,
                |k, _| {
                    out.push(k.to_owned());
                    out.len() < n
                },
            )
            .map(|()| out)
    }

    #[test]
    fn a_search_newest_first_passes_over_the_blocks_without_its_trigrams() {
        // 20,000 links; those that match are the oldest 1,000 (`-00`, the
        // one trigram of the needle no newer link has).
        let (keys, _, index) = posters(20_000);
        assert!(index.created.blocks.len() > 70);
        let want: Vec<String> = keys[..1000].iter().rev().take(101).cloned().collect();
        // The 19,000 newer links' texts are not read: a full page (and one
        // more) within the texts of its own blocks and a few false positives.
        assert_eq!(
            newest_matches(&index, "poster-00", 101, 4 * BLOCK),
            Some(want),
            "a search newest first read the texts of blocks without a match"
        );
        // A needle every block holds the trigrams of, and no link, is
        // given up on.
        assert_eq!(newest_matches(&index, "abcabcabc", 101, 4 * BLOCK), None);
        // Short needles have no trigram: read along until a page is full.
        assert_eq!(
            newest_matches(&index, "99", 3, 2 * BLOCK).map(|v| v.len()),
            Some(3)
        );
    }

    #[test]
    fn an_edit_changes_what_a_search_finds_at_once() {
        let (keys, links, mut index) = posters(5_000);
        assert_eq!(
            newest_matches(&index, "spring", 10, usize::MAX),
            Some(vec![])
        );
        // A link in the middle gets the word; then loses it.
        let k = &keys[2345];
        let spring: Searched = ("/spring".into(), "Poster".into(), links[2345].2);
        index.replace(
            Some(searched_view(k, &links[2345])),
            Some(searched_view(k, &spring)),
        );
        assert_eq!(
            newest_matches(&index, "spring", 10, usize::MAX),
            Some(vec![k.clone()])
        );
        assert_eq!(
            newest_matches(&index, "SPRING", 10, usize::MAX),
            Some(vec![]),
            "the caller lowers the needle, as the index's text is"
        );
        index.replace(
            Some(searched_view(k, &spring)),
            Some(searched_view(k, &links[2345])),
        );
        assert_eq!(
            newest_matches(&index, "spring", 10, usize::MAX),
            Some(vec![])
        );
        // A new link is found at once, in every order.
        let new = ("/summer".to_owned(), "Spring fair".to_owned(), Some(9_999));
        index.replace(None, Some(searched_view("zz", &new)));
        assert_eq!(
            newest_matches(&index, "spring", 10, usize::MAX),
            Some(vec!["zz".to_owned()])
        );
        let mut by_key = Vec::new();
        index.search(b"spring", false, Start::Edge, false, |k, _| {
            by_key.push(k.to_owned());
            true
        });
        assert_eq!(by_key, ["zz"]);
    }

    #[test]
    fn a_time_block_loosened_by_removals_is_made_exact_again() {
        let (keys, links, mut index) = posters(2 * BLOCK);
        let exact = |index: &ListIndex| {
            index.created.blocks.iter().all(|b| {
                let mut g = Grams::new(TIME_GRAM_BITS);
                for i in 0..b.len() {
                    g.add(
                        index
                            .by_key
                            .record_of(b.key(i))
                            .expect("in key order")
                            .bytes,
                    );
                }
                g == b.grams
            })
        };
        assert!(exact(&index));
        // Removals leave their trigrams (never too few) until the
        // REFRESH_AFTER-th, which makes the block exact again.
        for i in 0..usize::from(REFRESH_AFTER) - 1 {
            index.replace(Some(searched_view(&keys[i], &links[i])), None);
        }
        assert!(!exact(&index), "removed links' trigrams kept");
        let gone = Probe::new(word(0).as_bytes());
        assert!(index.created.blocks[0].grams.holds(&gone));
        assert_eq!(
            newest_matches(&index, &word(0), 10, usize::MAX),
            Some(vec![])
        );
        let last = usize::from(REFRESH_AFTER) - 1;
        index.replace(Some(searched_view(&keys[last], &links[last])), None);
        assert!(exact(&index));
    }
}
