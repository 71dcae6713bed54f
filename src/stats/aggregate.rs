//! Turning parsed log lines into counts. Pure: no I/O, so it can be fed lines
//! directly in tests and benchmarks.
//!
//! Per key, each counter is its own filter over the requests for that key, so one
//! request can count in several (a bot's HEAD answered 404 counts as head, bot and
//! not-found):
//!
//! - `requests`: every request;
//! - `scans`: GET answered with a redirect (301, 302, 303, 307, 308), from a client
//!   the `isbot` pattern list does not recognise as a bot, that was not a
//!   fallback answer;
//! - `fallback`: the same for a disabled or expired link's fallback answers
//!   (issue 33; the access log marks them), counted apart from the scans and
//!   in no other scan figure: a link's live scans stay what they were;
//! - `unique_scanners`: distinct tracking IDs among those scans (`-` is no ID);
//! - `head`: HEAD requests;
//! - `bot`: requests whose user agent the pattern list recognises (a request
//!   with no user agent counts as a bot, see [`BotFilter`]);
//! - `not_found`: requests answered 404;
//! - `first_scan`, `last_scan`: times of the earliest and latest scan.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::hash::BuildHasher;
use std::path::{Path, PathBuf};

use chrono::{Datelike, NaiveDate, Weekday};

use super::attribute::LinkKeys;
use super::breakdown::{Breakdown, Breakdowns, HeatMap};
use crate::access_log::format::{LogLine, LogTime, decode_lossy};
use crate::tracking::id::TrackingId;

/// The maps below are hit several times for every line, and std's SipHash showed
/// high in profiles. foldhash is much cheaper and still seeded per process, which
/// is enough for an offline tool reading its own logs.
type Map<K, V> = HashMap<K, V, foldhash::fast::RandomState>;
type Set<T> = HashSet<T, foldhash::fast::RandomState>;

/// How many malformed lines are kept with their location for the report.
pub const MALFORMED_EXAMPLES: usize = 5;

/// Bucket size of the time series.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum Period {
    Day,
    /// ISO 8601 week, Monday to Sunday.
    Week,
    Month,
}

impl Period {
    /// A number identifying the period a date falls in, ordered like the periods:
    /// `yyyymmdd`, `yyyyww` (ISO week-numbering year and week) or `yyyymm`.
    pub fn code(self, t: LogTime) -> u32 {
        match self {
            Period::Day => t.yyyymmdd(),
            Period::Month => t.yyyymmdd() / 100,
            Period::Week => {
                let w = t.date().iso_week();
                // Days early in year 0 belong to ISO year -1; no log goes back there.
                w.year().max(0) as u32 * 100 + w.week()
            }
        }
    }

    /// First day of the period with the given code.
    pub fn start(self, code: u32) -> Option<NaiveDate> {
        let (y, rest) = ((code / 10_000) as i32, code % 10_000);
        match self {
            Period::Day => NaiveDate::from_ymd_opt(y, rest / 100, rest % 100),
            Period::Month => NaiveDate::from_ymd_opt((code / 100) as i32, code % 100, 1),
            Period::Week => {
                NaiveDate::from_isoywd_opt((code / 100) as i32, code % 100, Weekday::Mon)
            }
        }
    }

    pub fn label(self, code: u32) -> String {
        match self {
            Period::Day => format!(
                "{:04}-{:02}-{:02}",
                code / 10_000,
                code / 100 % 100,
                code % 100
            ),
            Period::Week => format!("{:04}-W{:02}", code / 100, code % 100),
            Period::Month => format!("{:04}-{:02}", code / 100, code % 100),
        }
    }
}

impl fmt::Display for Period {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Period::Day => "day",
            Period::Week => "week",
            Period::Month => "month",
        })
    }
}

/// Which lines to count and whether to keep a time series.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Only this key (no leading `/`).
    pub key: Option<String>,
    /// Inclusive bounds.
    pub since: Option<LogTime>,
    pub until: Option<LogTime>,
    pub series: Option<Period>,
}

/// Counters for one key, or for all keys together.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeyStats {
    pub scans: u64,
    pub unique_scanners: u64,
    pub first_scan: Option<LogTime>,
    pub last_scan: Option<LogTime>,
    pub head: u64,
    pub bot: u64,
    pub not_found: u64,
    pub requests: u64,
    /// Scans answered with the link's fallback (issue 33).
    pub fallback: u64,
}

/// Scans in one period.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeriodCount {
    /// e.g. `2026-11-21`, `2026-W47`, `2026-11`.
    pub label: String,
    pub start: NaiveDate,
    pub scans: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyReport {
    pub key: String,
    pub stats: KeyStats,
    /// Periods with at least one scan, in order; empty without a series.
    pub series: Vec<PeriodCount>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MalformedLine {
    pub file: PathBuf,
    /// 1-based.
    pub line: u64,
    pub error: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// Every line read, malformed and filtered-out ones included.
    pub lines_read: u64,
    pub malformed: u64,
    /// The first [`MALFORMED_EXAMPLES`] malformed lines, in reading order.
    pub malformed_examples: Vec<MalformedLine>,
    pub series: Option<Period>,
    /// All reported keys together; `unique_scanners` counts each ID once overall.
    pub total: KeyStats,
    /// Most scans first, then by key.
    pub keys: Vec<KeyReport>,
    /// One per `--by` dimension, over the keys reported.
    pub breakdowns: Vec<Breakdown>,
    /// Scans per local hour and weekday, for the heat map.
    pub heat_map: Option<HeatMap>,
}

/// Bot verdicts for user agents, from the `isbot` crate's maintained pattern list.
///
/// The list is one large regular expression, far slower than the rest of the work
/// on a line, while a log has few distinct user agents; so verdicts are cached per
/// user agent as logged (encoded), and the pattern is only run on a new one.
pub struct BotFilter {
    bots: isbot::Bots,
    verdicts: Map<Box<str>, bool>,
}

/// Bounds the cache's memory on logs with unbounded user-agent variety.
const MAX_CACHED_VERDICTS: usize = 200_000;

impl BotFilter {
    pub fn new() -> BotFilter {
        BotFilter {
            bots: isbot::Bots::default(),
            verdicts: Map::default(),
        }
    }

    /// A request without a user agent is counted as a bot: every browser sends
    /// one, so such requests come from scripts.
    pub fn is_bot(&mut self, user_agent: Option<&str>) -> bool {
        let Some(ua) = user_agent else {
            return true;
        };
        if let Some(&verdict) = self.verdicts.get(ua) {
            return verdict;
        }
        let verdict = self.bots.is_bot(&decode_lossy(ua));
        if self.verdicts.len() >= MAX_CACHED_VERDICTS {
            self.verdicts.clear();
        }
        self.verdicts.insert(ua.into(), verdict);
        verdict
    }
}

impl Default for BotFilter {
    fn default() -> Self {
        Self::new()
    }
}

#[derive(Default)]
struct KeyAcc {
    stats: KeyStats,
    /// [`fingerprint`] of each scanner.
    uniques: Set<u64>,
    series: BTreeMap<u32, u64>,
}

/// 64 bits stand for a tracking ID in the sets of scanners: one entry per
/// (key, scanner) pair adds up to gigabytes over a large log, and these sets are
/// where the time goes (cache misses). Among n distinct IDs the expected number of
/// shared fingerprints is about n²/2^65: 10^-5 at 20 million scanners.
pub fn fingerprint(id: &TrackingId) -> u64 {
    foldhash::quality::FixedState::with_seed(0x71a6).hash_one(id.to_u128())
}

/// What one request counts as. This is the one decision behind every counter:
/// `qrtag stats` ([`Aggregator`]) and the console's scan index
/// ([`crate::scan_index`]) both classify through [`classify`] and count through
/// [`KeyStats::count`], so their numbers cannot drift apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counted {
    pub bot: bool,
    pub head: bool,
    pub not_found: bool,
    /// Counts in `scans`, in the scan's period and in `first_scan`/`last_scan`.
    pub scan: bool,
    /// A scan answered with the link's fallback: counts in `fallback` only.
    pub fallback: bool,
    /// The scanner's [`fingerprint`], for a scan with a tracking ID: what
    /// `unique_scanners` counts distinct values of.
    pub scanner: Option<u64>,
}

/// Classifies one request by the rules in this module's documentation.
pub fn classify(line: &LogLine<'_>, bots: &mut BotFilter) -> Counted {
    let bot = bots.is_bot(line.user_agent);
    let scan = is_scan(line, bot);
    let scanner = if scan {
        line.tracking.as_ref().map(fingerprint)
    } else {
        None
    };
    classified(line, bot, scan, scanner)
}

/// [`classify`] of a line whose tracking ID's [`fingerprint`] the caller
/// has taken already: decoding the ID is a good part of a line's cost.
fn classify_with(line: &LogLine<'_>, bots: &mut BotFilter, id: Option<u64>) -> Counted {
    let bot = bots.is_bot(line.user_agent);
    let scan = is_scan(line, bot);
    classified(line, bot, scan, if scan { id } else { None })
}

/// A person's GET sent on by a redirect, not by a dead link's fallback.
fn is_scan(line: &LogLine<'_>, bot: bool) -> bool {
    !bot && line.method == "GET" && line.is_redirect() && !line.fallback
}

fn classified(line: &LogLine<'_>, bot: bool, scan: bool, scanner: Option<u64>) -> Counted {
    Counted {
        fallback: !bot && line.fallback && line.method == "GET" && line.is_redirect(),
        bot,
        head: line.method == "HEAD",
        not_found: line.status == 404,
        scan,
        scanner,
    }
}

impl KeyStats {
    /// Adds one request classified as `c` that arrived at `time`. Leaves
    /// `unique_scanners` alone: only the caller's set of scanners knows
    /// whether `c.scanner` is new.
    pub fn count(&mut self, c: &Counted, time: LogTime) {
        self.requests += 1;
        self.bot += u64::from(c.bot);
        self.head += u64::from(c.head);
        self.not_found += u64::from(c.not_found);
        self.fallback += u64::from(c.fallback);
        if c.scan {
            self.scans += 1;
            self.first_scan = Some(self.first_scan.map_or(time, |f| f.min(time)));
            self.last_scan = Some(self.last_scan.map_or(time, |l| l.max(time)));
        }
    }
}

/// Accumulates lines (in any order) into a [`Report`].
pub struct Aggregator {
    filter: Filter,
    bots: BotFilter,
    keys: Map<Box<str>, KeyAcc>,
    lines_read: u64,
    malformed: u64,
    malformed_examples: Vec<MalformedLine>,
    /// Last (yyyymmdd, period code): computing an ISO week goes through the
    /// calendar, and consecutive scans nearly always fall on the same day.
    last_period: (u32, u32),
    /// The links lines count under ([`super::attribute`]); without them a
    /// line counts under its path.
    links: Option<LinkKeys>,
    /// With a key filter: every key seen (at any time), for suggestions
    /// when the key asked for is not among them.
    seen: Option<Set<Box<str>>>,
    /// With a key filter: whether a line of that key was read.
    seen_wanted: bool,
    /// Without links: whether a path with a `/` was redirected, which may
    /// have been a path below a hierarchical key.
    redirected_below: bool,
    breakdowns: Option<Breakdowns>,
    export: Option<super::export::Exporter>,
}

impl Aggregator {
    pub fn new(filter: Filter) -> Aggregator {
        Aggregator {
            bots: BotFilter::new(),
            keys: Map::default(),
            lines_read: 0,
            malformed: 0,
            malformed_examples: Vec::new(),
            last_period: (0, 0),
            seen: filter.key.is_some().then(Set::default),
            filter,
            links: None,
            seen_wanted: false,
            redirected_below: false,
            breakdowns: None,
            export: None,
        }
    }

    /// Also writes a row per line counted to `export`
    /// ([`super::export`]); [`Aggregator::finish_export`] ends it.
    pub fn with_export(mut self, export: super::export::Exporter) -> Aggregator {
        self.export = Some(export);
        self
    }

    /// Ends the export file, if any: the rows written.
    pub fn finish_export(&mut self) -> anyhow::Result<Option<u64>> {
        self.export.take().map(|e| e.finish()).transpose()
    }

    /// Also counts the scans reported per value of some dimensions.
    pub fn with_breakdowns(mut self, breakdowns: Breakdowns) -> Aggregator {
        self.breakdowns = Some(breakdowns);
        self
    }

    /// Counts each line under the link that answered it, found among
    /// `links` ([`LinkKeys::link_key`]).
    pub fn with_links(mut self, links: LinkKeys) -> Aggregator {
        self.links = Some(links);
        self
    }

    pub fn add(&mut self, line: &LogLine<'_>) {
        self.lines_read += 1;
        // With breakdowns every line's ID is looked at (new or returning
        // scanners): its fingerprint is taken once, here.
        let id = self
            .breakdowns
            .as_ref()
            .and_then(|_| line.tracking.as_ref().map(fingerprint));
        let key = match &self.links {
            Some(links) => links.link_key(line.key()),
            None => {
                self.redirected_below |= line.is_redirect() && line.key().contains('/');
                line.key()
            }
        };
        if let (Some(seen), Some(wanted)) = (&mut self.seen, &self.filter.key) {
            if key == wanted {
                self.seen_wanted = true;
            } else if !seen.contains(key) {
                seen.insert(key.into());
            }
        }
        if self.filter.key.as_deref().is_some_and(|k| k != key)
            || self.filter.since.is_some_and(|s| line.time < s)
            || self.filter.until.is_some_and(|u| line.time > u)
        {
            if let Some(b) = &mut self.breakdowns {
                b.seen(id, line.time);
            }
            return;
        }

        let counted = match self.breakdowns {
            Some(_) => classify_with(line, &mut self.bots, id),
            None => classify(line, &mut self.bots),
        };
        let acc = match self.keys.get_mut(key) {
            Some(acc) => acc,
            None => self.keys.entry(key.into()).or_default(),
        };
        acc.stats.count(&counted, line.time);
        if let Some(b) = &mut self.breakdowns {
            b.see_and_add(line, &counted, id);
        }
        if let Some(e) = &mut self.export {
            e.row(line, key, &counted);
        }
        if !counted.scan {
            return;
        }
        if let Some(fp) = counted.scanner {
            acc.uniques.insert(fp);
        }
        if let Some(period) = self.filter.series {
            let day = line.time.yyyymmdd();
            if self.last_period.0 != day {
                self.last_period = (day, period.code(line.time));
            }
            *acc.series.entry(self.last_period.1).or_default() += 1;
        }
    }

    /// With a key filter, whether its key is in no line read (at any time)
    /// and is not a link either: then the keys seen, to suggest from.
    pub fn unknown_key(&self) -> Option<Vec<&str>> {
        let wanted = self.filter.key.as_deref()?;
        let seen = self.seen.as_ref()?;
        // A line of the key outside --since/--until was seen, just not
        // counted; a link with no line has truly no scans.
        if self.seen_wanted || self.links.as_ref().is_some_and(|l| l.contains(wanted)) {
            return None;
        }
        let mut keys: Vec<&str> = seen.iter().map(|k| &**k).collect();
        if let Some(links) = &self.links {
            keys.extend(links.iter().filter(|k| !seen.contains(*k)));
        }
        Some(keys)
    }

    /// Without links, whether a path with a `/` was redirected: maybe one
    /// below a hierarchical key, counted under its own path.
    pub fn redirected_below_a_key(&self) -> bool {
        self.redirected_below
    }

    /// Lines read so far, and how many of them were malformed.
    pub fn counts(&self) -> (u64, u64) {
        (self.lines_read, self.malformed)
    }

    /// Counts a line that could not be parsed; `error` is only formatted for the
    /// first few, so counting the rest costs nothing.
    pub fn add_malformed(&mut self, file: &Path, line: u64, error: &dyn fmt::Display) {
        self.lines_read += 1;
        self.malformed += 1;
        if self.malformed_examples.len() < MALFORMED_EXAMPLES {
            self.malformed_examples.push(MalformedLine {
                file: file.to_owned(),
                line,
                error: error.to_string(),
            });
        }
    }

    pub fn finish(mut self) -> Report {
        if let Some(k) = &self.filter.key {
            // Asking for a key nobody requested is answered with zeros, not silence.
            self.keys.entry(k.as_str().into()).or_default();
        }
        let period = self.filter.series;
        // Built here rather than per line: one insert per (key, scanner) pair
        // instead of one per scan, and off the per-line path.
        let mut all_uniques = Set::<u64>::default();
        for acc in self.keys.values() {
            all_uniques.extend(&acc.uniques);
        }
        let mut total = KeyStats {
            unique_scanners: all_uniques.len() as u64,
            ..KeyStats::default()
        };
        let mut keys: Vec<KeyReport> = self
            .keys
            .into_iter()
            .map(|(key, acc)| {
                let mut stats = acc.stats;
                stats.unique_scanners = acc.uniques.len() as u64;
                add_into(&mut total, &stats);
                let series = period.map_or_else(Vec::new, |p| {
                    acc.series
                        .iter()
                        .filter_map(|(&code, &scans)| {
                            Some(PeriodCount {
                                label: p.label(code),
                                start: p.start(code)?,
                                scans,
                            })
                        })
                        .collect()
                });
                KeyReport {
                    key: key.into(),
                    stats,
                    series,
                }
            })
            .collect();
        keys.sort_by(|a, b| {
            b.stats
                .scans
                .cmp(&a.stats.scans)
                .then_with(|| a.key.cmp(&b.key))
        });
        let (breakdowns, heat_map) = self
            .breakdowns
            .map_or_else(|| (Vec::new(), None), Breakdowns::finish);
        Report {
            lines_read: self.lines_read,
            malformed: self.malformed,
            malformed_examples: self.malformed_examples,
            series: period,
            total,
            keys,
            breakdowns,
            heat_map,
        }
    }
}

/// Adds everything but `unique_scanners`, which does not add up across keys.
pub fn add_into(total: &mut KeyStats, s: &KeyStats) {
    total.scans += s.scans;
    total.head += s.head;
    total.bot += s.bot;
    total.not_found += s.not_found;
    total.requests += s.requests;
    total.fallback += s.fallback;
    total.first_scan = match (total.first_scan, s.first_scan) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    total.last_scan = match (total.last_scan, s.last_scan) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    };
}

#[cfg(test)]
mod tests;
