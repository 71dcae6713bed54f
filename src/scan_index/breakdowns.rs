//! The scan index's breakdowns (issue 21): per link and per day across all
//! links, the scans per device class, OS, browser, country, region, city
//! (with a GeoIP database), referrer host, and the hour × weekday matrix in
//! the server's time zone. Pure: [`super::index::IndexState`] feeds it the
//! lines it counts as scans, with the values the same
//! [`Deriver`] as `qrtag stats --by` derives, so the console's breakdowns are
//! `qrtag stats --by`'s.
//!
//! Sized for a million links: a value is interned once into a 16-bit
//! [`Tag`] (each dimension owns a fixed range of tags, the hour × weekday
//! cells the first 168), and a link's counts are one sorted boxed slice of
//! 4-byte entries, the tag in the high half and the count in the low
//! ([`Tally`]); the rare count past 65,534 keeps its excess in one map for
//! the whole index. A hostile log cannot grow it past the scans it holds:
//! each dimension interns at most its range's values (then "other"), and a
//! link (or a day) keeps at most [`KEY_CAP`] ([`DAY_CAP`]) values of one
//! dimension, later ones counted under that dimension's "other" row.
//! Numbers equal `qrtag stats --by` exactly while under those caps.

use std::collections::BTreeMap;

use crate::access_log::format::LogLine;
use crate::stats::breakdown::HeatMap;
use crate::stats::dimensions::{Deriver, Dimension};

use super::key_tallies::{KeyTallies, SATURATED};

type Map<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// Counts beyond a saturated entry's, by (owner: key id or day, tag).
pub(super) type Excess = Map<(u32, Tag), u64>;

/// An interned value of one dimension, or an hour × weekday cell (below
/// [`HEAT_CELLS`]: `weekday from Monday × 24 + hour`).
pub type Tag = u16;

/// Tags `0..HEAT_CELLS` are the hour × weekday cells.
pub const HEAT_CELLS: Tag = 7 * 24;

/// The dimensions kept besides the heat map, each with its range of tags
/// (first tag, how many); the range's last tag is its "other" row.
const RANGES: [(Dimension, u32, u32); 7] = [
    (Dimension::Device, 168, 16),
    (Dimension::Os, 184, 2048),
    (Dimension::Browser, 2232, 2048),
    (Dimension::Country, 4280, 1024),
    (Dimension::Region, 5304, 8192),
    (Dimension::City, 13496, 32768),
    (Dimension::Referrer, 46264, 19272),
];

/// The row under which values past a cap are counted.
pub const OTHER: &str = "(other)";

/// Most values of one dimension a link keeps apart (the heat map's 168
/// cells always fit).
pub const KEY_CAP: usize = 256;
/// Most values of one dimension a day (all links together) keeps apart.
pub const DAY_CAP: usize = 4096;

fn range_of(tag: Tag) -> Option<(usize, u32, u32)> {
    let t = u32::from(tag);
    RANGES
        .iter()
        .enumerate()
        .find(|(_, (_, start, len))| (*start..start + len).contains(&t))
        .map(|(i, (_, start, len))| (i, *start, *len))
}

fn other_tag(dim: usize) -> Tag {
    let (_, start, len) = RANGES[dim];
    (start + len - 1) as Tag
}

/// Every value seen, per dimension, interned to tags.
#[derive(Debug, Clone, Default)]
pub(super) struct Values {
    ids: [Map<Box<str>, Tag>; 7],
    names: [Vec<Box<str>>; 7],
}

impl Values {
    /// The tag of `value` of the `dim`th dimension, interned if new; the
    /// dimension's "other" once its range is full.
    pub(super) fn intern(&mut self, dim: usize, value: &str) -> Tag {
        if let Some(&tag) = self.ids[dim].get(value) {
            return tag;
        }
        let (_, start, len) = RANGES[dim];
        let n = self.names[dim].len() as u32;
        if n + 1 >= len {
            return other_tag(dim);
        }
        let tag = (start + n) as Tag;
        self.ids[dim].insert(value.into(), tag);
        self.names[dim].push(value.into());
        tag
    }

    /// The dimension and value a tag stands for (`None` for a heat cell or
    /// a tag never given out).
    fn name(&self, tag: Tag) -> Option<(usize, &str)> {
        let (dim, start, len) = range_of(tag)?;
        if u32::from(tag) == start + len - 1 {
            return Some((dim, OTHER));
        }
        self.names[dim]
            .get((u32::from(tag) - start) as usize)
            .map(|n| (dim, &**n))
    }

    /// Every interned value with its tag, in tag order (the checkpoint).
    pub(super) fn iter(&self) -> impl Iterator<Item = (Tag, &str)> {
        self.names.iter().enumerate().flat_map(|(dim, names)| {
            let start = RANGES[dim].1;
            names
                .iter()
                .enumerate()
                .map(move |(i, n)| ((start + i as u32) as Tag, &**n))
        })
    }

    /// Adds a value read back from a checkpoint: tags must come in the
    /// order [`Self::intern`] gives them out.
    pub(super) fn push(&mut self, tag: Tag, value: &str) -> Result<(), &'static str> {
        let (dim, start, len) = range_of(tag).ok_or("a value's tag")?;
        let n = self.names[dim].len() as u32;
        if u32::from(tag) != start + n || n + 1 >= len || self.ids[dim].contains_key(value) {
            return Err("a value's tag");
        }
        self.ids[dim].insert(value.into(), tag);
        self.names[dim].push(value.into());
        Ok(())
    }

    /// Whether `tag` may appear in a tally: a heat cell, an interned value
    /// or a dimension's "other".
    pub(super) fn knows(&self, tag: Tag) -> bool {
        tag < HEAT_CELLS || self.name(tag).is_some()
    }

    pub(super) fn len(&self) -> usize {
        self.names.iter().map(Vec::len).sum()
    }

    fn approx_bytes(&self) -> usize {
        self.names.iter().flatten().map(|n| 2 * n.len() + 40).sum()
    }
}

/// One link's (or one day's) scans per tag: a sorted boxed slice of
/// `tag << 16 | count`, 16 bytes and no allocation while empty.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Tally(Box<[u32]>);

impl Tally {
    pub(super) fn entries(&self) -> &[u32] {
        &self.0
    }

    /// A tally read back from a checkpoint: sorted by tag, each tag known,
    /// no count of 0.
    pub(super) fn from_entries(entries: Vec<u32>, values: &Values) -> Result<Tally, &'static str> {
        check_entries(&entries, values)?;
        Ok(Tally(entries.into_boxed_slice()))
    }

    /// Counts one scan under `tag`, or under its dimension's "other" when
    /// the tally already keeps `cap` values of that dimension. Returns the
    /// tag whose excess grows when its entry is saturated.
    pub(super) fn bump(&mut self, tag: Tag, cap: usize) -> Option<Tag> {
        let (tag, found) = find_slot(&self.0, tag, cap);
        match found {
            Ok(i) if self.0[i] & SATURATED == SATURATED => Some(tag),
            Ok(i) => {
                self.0[i] += 1;
                None
            }
            Err(i) => {
                let mut v = std::mem::take(&mut self.0).into_vec();
                v.insert(i, u32::from(tag) << 16 | 1);
                self.0 = v.into_boxed_slice();
                None
            }
        }
    }

    fn approx_bytes(&self) -> usize {
        self.0.len() * 4
    }
}

/// Whether `entries` may be a tally: sorted by tag, each tag known, no
/// count of 0.
pub(super) fn check_entries(entries: &[u32], values: &Values) -> Result<(), &'static str> {
    let ordered = entries.windows(2).all(|w| w[0] >> 16 < w[1] >> 16);
    let known = entries
        .iter()
        .all(|&e| e & SATURATED != 0 && values.knows((e >> 16) as Tag));
    if !ordered || !known {
        return Err("a breakdown's counts");
    }
    Ok(())
}

/// Where a scan of `tag` counts in a tally's sorted `entries`: the tag it
/// counts under (its dimension's "other" once the tally keeps `cap` values
/// of that dimension and not this one), and its entry's index (`Ok`) or
/// where that entry goes (`Err`).
pub(super) fn find_slot(entries: &[u32], tag: Tag, cap: usize) -> (Tag, Result<usize, usize>) {
    let at = |t: Tag| entries.binary_search_by_key(&t, |e| (e >> 16) as Tag);
    let found = at(tag);
    if found.is_err()
        && let Some((dim, start, len)) = range_of(tag)
    {
        let from = entries.partition_point(|e| e >> 16 < start);
        let to = entries.partition_point(|e| e >> 16 < start + len);
        if to - from >= cap {
            let other = other_tag(dim);
            return (other, at(other));
        }
    }
    (tag, found)
}

/// The counts of one tally entry, with its excess.
fn count(entry: u32, owner: u32, excess: &Excess) -> u64 {
    let low = u64::from(entry & SATURATED);
    if low == u64::from(SATURATED) {
        low + excess
            .get(&(owner, (entry >> 16) as Tag))
            .copied()
            .unwrap_or(0)
    } else {
        low
    }
}

/// What the breakdowns are counted with, saved with them: a checkpoint
/// made in another time zone or with another GeoIP database is rebuilt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Basis {
    pub time_zone: chrono_tz::Tz,
    /// The GeoIP database's path, as given (`None`: no place dimensions).
    pub geoip: Option<String>,
}

impl Basis {
    /// The line the checkpoint keeps.
    pub fn describe(&self) -> String {
        format!(
            "tz={} geoip={}",
            self.time_zone.name(),
            self.geoip.as_deref().unwrap_or("-")
        )
    }
}

/// Every breakdown the index keeps.
#[derive(Debug, Clone)]
pub struct Kept {
    pub(super) basis: Basis,
    pub(super) values: Values,
    /// By key id (parallel to the index's keys; shorter until a key scans).
    pub(super) keys: KeyTallies,
    pub(super) key_excess: Excess,
    pub(super) days: BTreeMap<u32, Tally>,
    pub(super) day_excess: Excess,
    /// Per [`Deriver`] (by [`Deriver::uid`]), the tag of each value id it
    /// gave, per dimension (0, a heat cell's tag, for none yet): a line's
    /// tags without building and hashing its values' names.
    tag_of_id: Vec<(u64, [Vec<Tag>; 7])>,
}

/// How many value ids a [`Deriver`] may have given before the scan index
/// replaces it with a new one: its names are kept for its life, and a
/// hostile log of made-up referrers or User-Agents would grow them (and
/// the tags of their ids here) without end.
pub(super) const DERIVER_NAMES: usize = 1 << 18;

/// Most derivers whose value ids' tags are kept (a follower each).
const DERIVER_TABLES: usize = 16;

/// One dimension's rows: busiest first, then by value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Share {
    pub dimension: Dimension,
    pub rows: Vec<(String, u64)>,
}

/// The breakdowns of one link or of a span of days.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shares {
    /// Device, OS, browser, (country, region, city with a GeoIP
    /// database), referrer, each with its rows.
    pub dimensions: Vec<Share>,
    /// Scans per `[weekday from Monday][hour]`, in [`Self::time_zone`].
    pub heat: HeatMap,
    pub time_zone: chrono_tz::Tz,
}

impl Shares {
    pub fn scans(&self) -> u64 {
        self.heat.iter().flatten().sum()
    }

    pub fn get(&self, dim: Dimension) -> Option<&Share> {
        self.dimensions.iter().find(|s| s.dimension == dim)
    }
}

/// The tags of one scan's values, at most 8.
pub(super) struct ScanTags {
    tags: [Tag; 8],
    n: usize,
}

impl Kept {
    pub fn new(basis: Basis) -> Kept {
        Kept {
            basis,
            values: Values::default(),
            keys: KeyTallies::default(),
            key_excess: Map::default(),
            days: BTreeMap::new(),
            day_excess: Map::default(),
            tag_of_id: Vec::new(),
        }
    }

    pub fn basis(&self) -> &Basis {
        &self.basis
    }

    fn places(&self) -> bool {
        self.basis.geoip.is_some()
    }

    /// The tags of a line counted as a scan (bots never are), its values
    /// derived as `qrtag stats --by` derives them.
    pub(super) fn tags(&mut self, line: &LogLine<'_>, deriver: &mut Deriver) -> ScanTags {
        let mut out = ScanTags { tags: [0; 8], n: 0 };
        let (hour, day) = deriver.local_time(line.time);
        out.tags[0] = (day.num_days_from_monday() * 24 + hour) as Tag;
        out.n = 1;
        let places = self.places();
        let uid = deriver.uid();
        let at = match self.tag_of_id.iter().position(|(u, _)| *u == uid) {
            Some(at) => at,
            None => {
                // One per follower; those of derivers replaced or gone are
                // dropped oldest first (one still in use rebuilds its own).
                if self.tag_of_id.len() >= DERIVER_TABLES {
                    self.tag_of_id.remove(0);
                }
                self.tag_of_id.push((uid, Default::default()));
                self.tag_of_id.len() - 1
            }
        };
        let tables = &mut self.tag_of_id[at].1;
        for (i, (dim, _, _)) in RANGES.iter().enumerate() {
            if dim.is_place() && !places {
                continue;
            }
            let id = deriver.value_id(*dim, line, false);
            let table = &mut tables[i];
            let tag = match table.get(id as usize) {
                Some(&tag) if tag != 0 => tag,
                _ => {
                    // Interned once per value a `Deriver` gives: a value
                    // counted as "other" stays so (a full range stays full).
                    let tag = self.values.intern(i, deriver.value_name(*dim, id));
                    if table.len() <= id as usize {
                        table.resize(id as usize + 1, 0);
                    }
                    table[id as usize] = tag;
                    tag
                }
            };
            out.tags[out.n] = tag;
            out.n += 1;
        }
        out
    }

    /// Counts a scan's tags on its day.
    pub(super) fn count_day(&mut self, day: u32, tags: &ScanTags) {
        let tally = self.days.entry(day).or_default();
        for &tag in &tags.tags[..tags.n] {
            if let Some(t) = tally.bump(tag, DAY_CAP) {
                *self.day_excess.entry((day, t)).or_default() += 1;
            }
        }
    }

    /// Counts a scan's tags under the key with id `id`.
    pub(super) fn count_key(&mut self, id: u32, tags: &ScanTags) {
        for &tag in &tags.tags[..tags.n] {
            if let Some(t) = self.keys.bump(id, tag, KEY_CAP) {
                *self.key_excess.entry((id, t)).or_default() += 1;
            }
        }
    }

    /// A key's breakdowns, of all time.
    pub fn key(&self, id: Option<u32>) -> Shares {
        let mut sums = Map::default();
        if let Some(id) = id {
            for &e in self.keys.get(id) {
                sums.insert((e >> 16) as Tag, count(e, id, &self.key_excess));
            }
        }
        self.shares(sums)
    }

    /// All keys together over the days `from..=to` (day codes).
    pub fn days(&self, from: u32, to: u32) -> Shares {
        let mut sums: Map<Tag, u64> = Map::default();
        if from <= to {
            for (&day, tally) in self.days.range(from..=to) {
                for &e in tally.entries() {
                    *sums.entry((e >> 16) as Tag).or_default() += count(e, day, &self.day_excess);
                }
            }
        }
        self.shares(sums)
    }

    fn shares(&self, sums: Map<Tag, u64>) -> Shares {
        let mut heat: HeatMap = [[0; 24]; 7];
        let mut rows: Vec<Vec<(String, u64)>> = vec![Vec::new(); RANGES.len()];
        for (tag, n) in sums {
            if tag < HEAT_CELLS {
                heat[usize::from(tag / 24)][usize::from(tag % 24)] += n;
            } else if let Some((dim, name)) = self.values.name(tag) {
                rows[dim].push((name.to_owned(), n));
            }
        }
        let dimensions = RANGES
            .iter()
            .zip(rows)
            .filter(|((dim, _, _), _)| !dim.is_place() || self.places())
            .map(|((dim, _, _), mut rows)| {
                rows.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
                Share {
                    dimension: *dim,
                    rows,
                }
            })
            .collect();
        Shares {
            dimensions,
            heat,
            time_zone: self.basis.time_zone,
        }
    }

    /// Bytes of memory held, by the sizes of its tables.
    pub fn approx_bytes(&self) -> usize {
        let entry = std::mem::size_of::<((u32, Tag), u64)>() + 1;
        self.values.approx_bytes()
            + self.keys.approx_bytes()
            + self
                .tag_of_id
                .iter()
                .flat_map(|(_, t)| t.iter().map(|t| t.capacity() * 2))
                .sum::<usize>()
            + self
                .days
                .values()
                .map(|t| t.approx_bytes() + 48)
                .sum::<usize>()
            + (self.key_excess.capacity() + self.day_excess.capacity()) * entry
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_tile_the_tags_after_the_heat_cells() {
        let mut next = u32::from(HEAT_CELLS);
        for (_, start, len) in RANGES {
            assert_eq!(start, next);
            next += len;
        }
        assert_eq!(next, 1 << 16);
    }

    #[test]
    fn a_tally_keeps_counts_sorted_and_saturates_into_the_excess() {
        let mut t = Tally::default();
        for tag in [300u16, 170, 300, 5] {
            assert_eq!(t.bump(tag, KEY_CAP), None);
        }
        let tags: Vec<u32> = t.entries().iter().map(|e| e >> 16).collect();
        assert_eq!(tags, [5, 170, 300]);
        assert_eq!(t.entries()[2] & SATURATED, 2);
        for _ in 2..SATURATED {
            assert_eq!(t.bump(300, KEY_CAP), None);
        }
        assert_eq!(t.bump(300, KEY_CAP), Some(300));
    }

    #[test]
    fn a_full_dimension_counts_new_values_as_other() {
        let mut t = Tally::default();
        // Device: tags 168..184, cap 2 for the test.
        assert_eq!(t.bump(168, 2), None);
        assert_eq!(t.bump(169, 2), None);
        assert_eq!(t.bump(170, 2), None);
        let tags: Vec<u32> = t.entries().iter().map(|e| e >> 16).collect();
        assert_eq!(tags, [168, 169, u32::from(other_tag(0))]);
        // Another dimension is not limited by it.
        assert_eq!(t.bump(184, 2), None);
        assert_eq!(t.entries().len(), 4);
    }

    #[test]
    fn values_past_a_range_are_other_and_read_back_in_order() {
        let mut v = Values::default();
        let tags: Vec<Tag> = (0..20).map(|i| v.intern(0, &format!("d{i}"))).collect();
        assert_eq!(tags[0], 168);
        assert_eq!(tags[14], 182);
        assert!(tags[15..].iter().all(|&t| t == other_tag(0)));
        assert_eq!(v.name(other_tag(0)), Some((0, OTHER)));
        assert_eq!(v.name(170), Some((0, "d2")));
        let mut back = Values::default();
        for (tag, name) in v.iter() {
            back.push(tag, name).expect("in order");
        }
        assert_eq!(back.len(), 15);
        assert!(back.push(183, "late").is_err());
        assert!(Values::default().push(169, "skips one").is_err());
    }
}
