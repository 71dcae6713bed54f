//! The scan numbers the console shows, behind one trait.
//!
//! The numbers come from the access log, read incrementally by an index that
//! is built elsewhere; the console never reads the log itself. Until that
//! index is plugged in, [`NoScanCounts`] answers "not available" everywhere
//! and the pages say so, so the console is whole without it. Every method
//! answers `None` for "not available", which pages show as "—", never as 0.

use chrono::NaiveDate;

pub use crate::scan_index::{DestinationScans, Share, Shares};

/// One link's scan numbers, by the definitions `qrtag stats` uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyScans {
    pub scans: u64,
    pub unique_scanners: u64,
    pub head: u64,
    pub bots: u64,
    pub not_found: u64,
    /// Scans answered with the link's fallback (issue 33), not in `scans`.
    pub fallback: u64,
    /// Scans per day, oldest first, quiet days included as 0.
    pub daily: Vec<(NaiveDate, u64)>,
}

/// A key's scans of all time.
pub type AllTimeScans<'a> = dyn Fn(&str) -> u64 + 'a;

/// Every method has "not available" as its default, so a source says
/// only what it has ([`NoScanCounts`] nothing).
pub trait ScanCounts: Send + Sync + 'static {
    /// All numbers for one key, its scans per day since `day` (inclusive).
    fn key(&self, _key: &str, _day: NaiveDate) -> Option<KeyScans> {
        None
    }

    /// Scans of each key since `day` (inclusive), in the order given.
    fn scans_since(&self, _keys: &[&str], _day: NaiveDate) -> Option<Vec<u64>> {
        None
    }

    /// The `n` keys with the most scans since `day`, busiest first.
    fn top_keys(&self, _day: NaiveDate, _n: usize) -> Option<Vec<(String, u64)>> {
        None
    }

    /// Scans per day across all keys since `day`, oldest first.
    fn daily_totals(&self, _day: NaiveDate) -> Option<Vec<(NaiveDate, u64)>> {
        None
    }

    /// Runs `f` with a lookup of each key's scans of all time, every answer
    /// from the same moment (the list's "never scanned" filter asks for
    /// every link in one pass). `false`, and `f` not run, when not available.
    fn with_all_time(&self, _f: &mut dyn FnMut(&AllTimeScans<'_>)) -> bool {
        false
    }

    /// Issue 33: scans answered by a link's fallback (the link disabled or
    /// expired), all keys together since `day` (inclusive). No other number
    /// here counts them, so a page says them beside the rest.
    fn fallback_since(&self, _day: NaiveDate) -> Option<u64> {
        None
    }

    /// Issue 33: each key's scans answered by its fallback, of all time, in
    /// the order given (the index keeps a key's fallback answers in its
    /// totals only, not per day).
    fn fallback_of(&self, _keys: &[&str]) -> Option<Vec<u64>> {
        None
    }

    /// A key's breakdowns (device, OS, browser, places, referrer, hour ×
    /// weekday) of all time; `None` when not available or not kept.
    fn key_shares(&self, _key: &str) -> Option<Shares> {
        None
    }

    /// All keys' breakdowns over the days `from..=to`; `None` when not
    /// available or not kept.
    fn day_shares(&self, _from: NaiveDate, _to: NaiveDate) -> Option<Shares> {
        None
    }

    /// A key's scans per destination of all time (issue 34); `None` when
    /// not available.
    fn key_destinations(&self, _key: &str) -> Option<Vec<DestinationScans>> {
        None
    }

    /// Issue 38: the ClickHouse (`--scans-from`) a page asks for its
    /// numbers before it renders (`console::scans_from`); `None`, the
    /// default, when they are answered in place.
    fn ask_first(&self) -> Option<&crate::clickhouse::read::DomainScans> {
        None
    }
}

/// No index yet: every number is "not available".
#[derive(Debug, Default, Clone, Copy)]
pub struct NoScanCounts;

impl ScanCounts for NoScanCounts {}

/// The scan index behind the console: the counts `qrtag stats` would give
/// over the same log. "Not available" until its first pass over the log is
/// done, so a page never shows a partial count as if it were the total.
impl ScanCounts for crate::scan_index::ScanIndex {
    fn key(&self, key: &str, from: NaiveDate) -> Option<KeyScans> {
        if !self.caught_up() {
            return None;
        }
        let to = chrono::Utc::now().date_naive().max(from);
        let stats = crate::scan_index::ScanIndex::key(self, key);
        let days = self.key_days(key, from, to);
        Some(KeyScans {
            scans: stats.scans,
            unique_scanners: stats.unique_scanners,
            head: stats.head,
            bots: stats.bot,
            not_found: stats.not_found,
            fallback: stats.fallback,
            daily: with_quiet_days(from, to, days.iter().map(|d| (d.day, d.scans))),
        })
    }

    fn scans_since(&self, keys: &[&str], day: NaiveDate) -> Option<Vec<u64>> {
        self.caught_up()
            .then(|| crate::scan_index::ScanIndex::scans_since(self, keys, day))
    }

    fn top_keys(&self, day: NaiveDate, n: usize) -> Option<Vec<(String, u64)>> {
        self.caught_up().then(|| {
            crate::scan_index::ScanIndex::top_keys(self, n, day)
                .into_iter()
                .map(|t| (t.key, t.scans))
                .collect()
        })
    }

    fn daily_totals(&self, day: NaiveDate) -> Option<Vec<(NaiveDate, u64)>> {
        if !self.caught_up() {
            return None;
        }
        let to = chrono::Utc::now().date_naive().max(day);
        let totals = crate::scan_index::ScanIndex::daily_totals(self, day, to);
        Some(with_quiet_days(
            day,
            to,
            totals.iter().map(|t| (t.day, t.scans)),
        ))
    }

    fn with_all_time(&self, f: &mut dyn FnMut(&AllTimeScans<'_>)) -> bool {
        if !self.caught_up() {
            return false;
        }
        self.with_state(|s| f(&|key| s.key(key).scans));
        true
    }

    fn key_shares(&self, key: &str) -> Option<Shares> {
        if !self.caught_up() {
            return None;
        }
        crate::scan_index::ScanIndex::key_shares(self, key)
    }

    fn fallback_since(&self, day: NaiveDate) -> Option<u64> {
        if !self.caught_up() {
            return None;
        }
        let to = chrono::Utc::now().date_naive().max(day);
        let totals = crate::scan_index::ScanIndex::daily_totals(self, day, to);
        Some(totals.iter().map(|t| t.fallback).sum())
    }

    fn fallback_of(&self, keys: &[&str]) -> Option<Vec<u64>> {
        self.caught_up()
            .then(|| self.with_state(|s| keys.iter().map(|k| s.key(k).fallback).collect()))
    }

    fn day_shares(&self, from: NaiveDate, to: NaiveDate) -> Option<Shares> {
        if !self.caught_up() {
            return None;
        }
        crate::scan_index::ScanIndex::day_shares(self, from, to)
    }

    fn key_destinations(&self, key: &str) -> Option<Vec<DestinationScans>> {
        if !self.caught_up() {
            return None;
        }
        Some(crate::scan_index::ScanIndex::key_destinations(self, key))
    }
}

/// Every day from `from` to `to`, with the counts of `days` (sorted, days
/// with nothing left out) and 0 for the rest.
fn with_quiet_days(
    from: NaiveDate,
    to: NaiveDate,
    days: impl Iterator<Item = (NaiveDate, u64)>,
) -> Vec<(NaiveDate, u64)> {
    let mut days = days.peekable();
    from.iter_days()
        .take_while(|d| *d <= to)
        .map(|d| {
            while days.next_if(|(day, _)| *day < d).is_some() {}
            (d, days.next_if(|(day, _)| *day == d).map_or(0, |(_, n)| n))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_days_are_zeros_and_days_outside_are_left_out() {
        let day = |d: u32| NaiveDate::from_ymd_opt(2026, 11, d).expect("date");
        let got = with_quiet_days(
            day(2),
            day(5),
            [(day(1), 9), (day(3), 4), (day(5), 1)].into_iter(),
        );
        assert_eq!(
            got,
            vec![(day(2), 0), (day(3), 4), (day(4), 0), (day(5), 1)]
        );
    }
}
