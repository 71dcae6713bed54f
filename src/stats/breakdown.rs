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

/// A scanner's first appearance, and its first counted scan with the row it
/// fell in per dimension.
#[derive(Clone, Copy)]
struct Scanner {
    first_seen: LogTime,
    first_counted: Option<(LogTime, [u32; MAX_DIMENSIONS])>,
}

const MAX_DIMENSIONS: usize = Dimension::ALL.len();

/// One dimension's counts (scans, scans with a tracking ID), indexed by the
/// [`Deriver`]'s value ids: a line costs an index, not a hash of its value.
type Table = Vec<(u64, u64)>;

/// Accumulates breakdowns over lines in any order.
pub struct Breakdowns {
    wanted: Wanted,
    deriver: Deriver,
    tables: Vec<Table>,
    scanners: Map<u64, Scanner>,
    heat: Option<Box<HeatMap>>,
}

impl Breakdowns {
    /// `heat_map`: also count hour × weekday together.
    pub fn new(wanted: Wanted, deriver: Deriver, heat_map: bool) -> Breakdowns {
        let tables = wanted.dimensions.iter().map(|_| Table::default()).collect();
        Breakdowns {
            wanted,
            deriver,
            tables,
            scanners: Map::default(),
            heat: heat_map.then(|| Box::new([[0; 24]; 7])),
        }
    }

    /// Notes a line's tracking ID, before any filter: a scanner is new only
    /// the first time its ID appears in the logs read.
    pub fn see(&mut self, line: &LogLine<'_>) {
        if let Some(id) = &line.tracking {
            let fp = fingerprint(id);
            self.scanners
                .entry(fp)
                .and_modify(|s| s.first_seen = s.first_seen.min(line.time))
                .or_insert(Scanner {
                    first_seen: line.time,
                    first_counted: None,
                });
        }
    }

    /// Counts a line that passed the filters, classified as `c`.
    pub fn add(&mut self, line: &LogLine<'_>, c: &Counted) {
        let counted =
            c.scan || (self.wanted.bots && c.bot && line.method == "GET" && line.is_redirect());
        if !counted {
            return;
        }
        let mut ids = [0u32; MAX_DIMENSIONS];
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
            ids[i] = id;
        }
        if let Some(heat) = &mut self.heat {
            let (hour, day) = self.deriver.local_time(line.time);
            heat[day.num_days_from_monday() as usize][hour as usize] += 1;
        }
        // A scan's fingerprint was taken when it was classified.
        let scanner = c
            .scanner
            .or_else(|| line.tracking.as_ref().map(fingerprint));
        if let Some(fp) = scanner
            && let Some(s) = self.scanners.get_mut(&fp)
            && s.first_counted.is_none_or(|(t, _)| line.time < t)
        {
            s.first_counted = Some((line.time, ids));
        }
    }

    /// The breakdowns, one per dimension asked for, and the heat map.
    pub fn finish(self) -> (Vec<Breakdown>, Option<HeatMap>) {
        let mut new: Vec<Vec<u64>> = self.tables.iter().map(|t| vec![0; t.len()]).collect();
        for s in self.scanners.values() {
            if let Some((t, ids)) = s.first_counted
                && t <= s.first_seen
            {
                for (i, counts) in new.iter_mut().enumerate() {
                    counts[ids[i] as usize] += 1;
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

/// Busiest first, then by value; hours and weekdays in their order, every
/// one present.
fn order(dimension: Dimension, rows: &mut Vec<Row>) {
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

#[cfg(test)]
mod tests;
