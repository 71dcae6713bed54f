//! Scans per value of a dimension (`qrtag stats --by device`), with new and
//! returning scanners. Pure: fed parsed lines, as [`super::aggregate`] is.
//!
//! A row counts the scans whose line has its value (bots left out unless
//! asked for, when a bot's GET answered by a redirect counts too). Of those:
//!
//! - `new`: the scan was its tracking ID's first appearance in the logs read
//!   (any key, any time, filters aside), the scanner's first scan;
//! - `returning`: a scan with a tracking ID that had appeared before;
//! - the rest (`scans - new - returning`) carried no ID (cookies refused).

use super::dimensions::{Deriver, Dimension};
use crate::access_log::format::{LogLine, LogTime};
use crate::stats::aggregate::{Counted, fingerprint};

type Map<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// One value's counts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Row {
    pub value: String,
    pub scans: u64,
    pub new: u64,
    pub returning: u64,
}

/// One dimension's rows: the busiest first (then by value), or for hours and
/// weekdays every value in its order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Breakdown {
    pub dimension: Dimension,
    pub rows: Vec<Row>,
    /// Whether bots' requests are in the rows (`--bots`).
    pub bots: bool,
    /// The zone hours and weekdays were counted in (for those two).
    pub time_zone: Option<chrono_tz::Tz>,
}

/// The counts of an hour × weekday heat map: `[weekday from Monday][hour]`.
pub type HeatMap = [[u64; 24]; 7];

/// Whether scans of bots are counted, and which dimensions.
#[derive(Debug, Clone)]
pub struct Wanted {
    pub dimensions: Vec<Dimension>,
    pub bots: bool,
    pub time_zone: chrono_tz::Tz,
}

/// A scanner's first appearance, and its first counted scan. 24 bytes (32
/// with its key): this map is hit on every line with a tracking ID, and
/// over many scanners its size is what the line pays for, in cache misses.
#[derive(Clone, Copy)]
struct Scanner {
    first_seen: LogTime,
    /// Meaningful only when `rows` is not [`NOT_COUNTED`].
    first_counted: LogTime,
    /// The rows of its first counted scan: their value ids are the
    /// `rows`-th group in [`Breakdowns::first_rows`] (a group holds one id
    /// per dimension asked for).
    rows: u32,
}

/// Dimensions are asked for once each.
const MAX_DIMENSIONS: usize = Dimension::ALL.len();

/// [`Scanner::rows`] of a scanner with no counted scan yet.
const NOT_COUNTED: u32 = u32::MAX;

/// One dimension's counts (scans, scans with a tracking ID), indexed by the
/// [`Deriver`]'s value ids: a line costs an index, not a hash of its value.
type Table = Vec<(u64, u64)>;

/// Accumulates breakdowns over lines in any order.
pub struct Breakdowns {
    wanted: Wanted,
    deriver: Deriver,
    tables: Vec<Table>,
    scanners: Map<u64, Scanner>,
    /// The value ids of each counted scanner's first counted scan, one per
    /// dimension asked for, at its [`Scanner::rows`]: kept apart so that a
    /// scanner costs as little as possible in the map.
    first_rows: Vec<u32>,
    heat: Option<Box<HeatMap>>,
}

impl Breakdowns {
    /// `heat_map`: also count hour × weekday together. Each dimension is
    /// wanted at most once ([`super::args`] keeps the first of repeats).
    pub fn new(wanted: Wanted, deriver: Deriver, heat_map: bool) -> Breakdowns {
        assert!(wanted.dimensions.len() <= MAX_DIMENSIONS);
        let tables = wanted.dimensions.iter().map(|_| Table::default()).collect();
        Breakdowns {
            wanted,
            deriver,
            tables,
            scanners: Map::default(),
            first_rows: Vec::new(),
            heat: heat_map.then(|| Box::new([[0; 24]; 7])),
        }
    }

    /// Notes a line's tracking ID, before any filter: a scanner is new only
    /// the first time its ID appears in the logs read.
    pub fn see(&mut self, line: &LogLine<'_>) {
        self.seen(line.tracking.as_ref().map(fingerprint), line.time);
    }

    /// [`Breakdowns::see`] of a line whose ID's [`fingerprint`] is `scanner`
    /// (taken once per line by the caller).
    pub fn seen(&mut self, scanner: Option<u64>, time: LogTime) {
        if let Some(fp) = scanner {
            self.scanners
                .entry(fp)
                .and_modify(|s| s.first_seen = s.first_seen.min(time))
                .or_insert(Scanner {
                    first_seen: time,
                    first_counted: time,
                    rows: NOT_COUNTED,
                });
        }
    }

    /// Counts a line that passed the filters, classified as `c`.
    pub fn add(&mut self, line: &LogLine<'_>, c: &Counted) {
        let scanner = c
            .scanner
            .or_else(|| line.tracking.as_ref().map(fingerprint));
        self.counted(line, c, scanner);
    }

    /// [`Breakdowns::see`] and [`Breakdowns::add`] of one line that passed
    /// the filters, in one lookup of its scanner: `scanner` is the
    /// [`fingerprint`] of its tracking ID.
    pub fn see_and_add(&mut self, line: &LogLine<'_>, c: &Counted, scanner: Option<u64>) {
        if !self.is_counted(line, c) {
            self.count_fallback(line, c);
            return self.seen(scanner, line.time);
        }
        let ids = self.count(line, c);
        let Some(fp) = scanner else {
            return;
        };
        let time = line.time;
        let s = self.scanners.entry(fp).or_insert(Scanner {
            first_seen: time,
            first_counted: time,
            rows: NOT_COUNTED,
        });
        s.first_seen = s.first_seen.min(time);
        record_first(s, &mut self.first_rows, time, &ids);
    }

    fn is_counted(&self, line: &LogLine<'_>, c: &Counted) -> bool {
        c.scan || (self.wanted.bots && c.bot && line.method == "GET" && line.is_redirect())
    }

    /// A dead link's fallback answer is no scan (issue 33), but where it
    /// was sent is a destination (issue 34): the destination breakdown
    /// counts it, under its `~` value, as a scan without a scanner (it is
    /// neither a new nor a returning one), and no other breakdown does.
    fn count_fallback(&mut self, line: &LogLine<'_>, c: &Counted) {
        if !c.fallback {
            return;
        }
        let at = self
            .wanted
            .dimensions
            .iter()
            .position(|d| *d == Dimension::Destination);
        if let Some(i) = at {
            let id = self.deriver.value_id(Dimension::Destination, line, c.bot);
            let table = &mut self.tables[i];
            if table.len() <= id as usize {
                table.resize(id as usize + 1, (0, 0));
            }
            table[id as usize].0 += 1;
        }
    }

    /// Adds a counted line to the tables and the heat map: its value ids.
    fn count(&mut self, line: &LogLine<'_>, c: &Counted) -> IdList {
        let mut ids = IdList::default();
        let with_id = u64::from(line.tracking.is_some());
        for (i, dim) in self.wanted.dimensions.iter().enumerate() {
            let id = self.deriver.value_id(*dim, line, c.bot);
            let table = &mut self.tables[i];
            if table.len() <= id as usize {
                table.resize(id as usize + 1, (0, 0));
            }
            let row = &mut table[id as usize];
            row.0 += 1;
            row.1 += with_id;
            ids.push(id);
        }
        if let Some(heat) = &mut self.heat {
            let (hour, day) = self.deriver.local_time(line.time);
            heat[day.num_days_from_monday() as usize][hour as usize] += 1;
        }
        ids
    }

    /// [`Breakdowns::add`] with the scanner's fingerprint given.
    fn counted(&mut self, line: &LogLine<'_>, c: &Counted, scanner: Option<u64>) {
        if !self.is_counted(line, c) {
            return self.count_fallback(line, c);
        }
        let ids = self.count(line, c);
        if let Some(fp) = scanner
            && let Some(s) = self.scanners.get_mut(&fp)
        {
            record_first(s, &mut self.first_rows, line.time, &ids);
        }
    }

    /// The breakdowns, one per dimension asked for, and the heat map.
    pub fn finish(self) -> (Vec<Breakdown>, Option<HeatMap>) {
        let mut new: Vec<Vec<u64>> = self.tables.iter().map(|t| vec![0; t.len()]).collect();
        let n = new.len();
        for s in self.scanners.values() {
            if s.rows != NOT_COUNTED && s.first_counted <= s.first_seen {
                let ids = &self.first_rows[s.rows as usize * n..][..n];
                for (counts, &id) in new.iter_mut().zip(ids) {
                    counts[id as usize] += 1;
                }
            }
        }
        let deriver = &self.deriver;
        let breakdowns = self
            .wanted
            .dimensions
            .iter()
            .zip(self.tables)
            .zip(new)
            .map(|((&dimension, table), new)| {
                // A value no line counted under has no row.
                let mut rows: Vec<Row> = table
                    .into_iter()
                    .zip(new)
                    .enumerate()
                    .filter(|(_, ((scans, _), _))| *scans > 0)
                    .map(|(id, ((scans, with_id), new))| Row {
                        value: deriver.value_name(dimension, id as u32).to_owned(),
                        scans,
                        new,
                        returning: with_id - new,
                    })
                    .collect();
                order(dimension, &mut rows);
                Breakdown {
                    dimension,
                    rows,
                    bots: self.wanted.bots,
                    time_zone: dimension.is_cyclic().then_some(self.wanted.time_zone),
                }
            })
            .collect();
        (breakdowns, self.heat.map(|h| *h))
    }
}

/// The value ids of one line, one per dimension asked for.
#[derive(Default)]
struct IdList {
    ids: [u32; MAX_DIMENSIONS],
    len: usize,
}

impl IdList {
    fn push(&mut self, id: u32) {
        self.ids[self.len] = id;
        self.len += 1;
    }
}

impl std::ops::Deref for IdList {
    type Target = [u32];
    fn deref(&self) -> &[u32] {
        &self.ids[..self.len]
    }
}

/// Makes a counted scan at `time` with value ids `ids` the scanner's first
/// counted one if it is earlier than the one kept.
fn record_first(s: &mut Scanner, first_rows: &mut Vec<u32>, time: LogTime, ids: &[u32]) {
    if s.rows == NOT_COUNTED {
        // Groups counted so far (none without dimensions, where every
        // scanner shares the empty group 0).
        s.rows = first_rows.len().checked_div(ids.len()).unwrap_or(0) as u32;
        s.first_counted = time;
        first_rows.extend_from_slice(ids);
    } else if time < s.first_counted {
        s.first_counted = time;
        first_rows[s.rows as usize * ids.len()..][..ids.len()].copy_from_slice(ids);
    }
}

/// Busiest first, then by value; hours and weekdays in their order, every
/// one present.
pub fn order(dimension: Dimension, rows: &mut Vec<Row>) {
    if dimension.is_cyclic() {
        let cycle = dimension.cycle();
        let mut ordered: Vec<Row> = cycle
            .iter()
            .map(|v| Row {
                value: v.clone(),
                ..Row::default()
            })
            .collect();
        for row in rows.drain(..) {
            if let Some(slot) = ordered.iter_mut().find(|o| o.value == row.value) {
                *slot = row;
            }
        }
        *rows = ordered;
    } else {
        rows.sort_by(|a, b| b.scans.cmp(&a.scans).then_with(|| a.value.cmp(&b.value)));
    }
}

/// "Scans by device, bots left out": what a breakdown counted.
pub fn heading(b: &Breakdown) -> String {
    let zone = b
        .time_zone
        .map_or_else(String::new, |tz| format!(" ({tz})"));
    format!(
        "Scans by {}{zone}, bots {}",
        b.dimension,
        if b.bots { "included" } else { "left out" }
    )
}

#[cfg(test)]
mod tests;
