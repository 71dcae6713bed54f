//! The scan numbers the console shows, behind one trait.
//!
//! The numbers come from the access log, read incrementally by an index that
//! is built elsewhere; the console never reads the log itself. Until that
//! index is plugged in, [`NoScanCounts`] answers "not available" everywhere
//! and the pages say so, so the console is whole without it. Every method
//! answers `None` for "not available", which pages show as "—", never as 0.

use chrono::NaiveDate;

/// One link's scan numbers, by the definitions `qrtag stats` uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyScans {
    pub scans: u64,
    pub unique_scanners: u64,
    pub head: u64,
    pub bots: u64,
    pub not_found: u64,
    /// Scans per day, oldest first, quiet days included as 0.
    pub daily: Vec<(NaiveDate, u64)>,
}

pub trait ScanCounts: Send + Sync + 'static {
    /// All numbers for one key.
    fn key(&self, key: &str) -> Option<KeyScans>;

    /// Scans of each key since `day` (inclusive), in the order given.
    fn scans_since(&self, keys: &[&str], day: NaiveDate) -> Option<Vec<u64>>;

    /// The `n` keys with the most scans since `day`, busiest first.
    fn top_keys(&self, day: NaiveDate, n: usize) -> Option<Vec<(String, u64)>>;

    /// Scans per day across all keys since `day`, oldest first.
    fn daily_totals(&self, day: NaiveDate) -> Option<Vec<(NaiveDate, u64)>>;
}

/// No index yet: every number is "not available".
#[derive(Debug, Default, Clone, Copy)]
pub struct NoScanCounts;

impl ScanCounts for NoScanCounts {
    fn key(&self, _: &str) -> Option<KeyScans> {
        None
    }

    fn scans_since(&self, _: &[&str], _: NaiveDate) -> Option<Vec<u64>> {
        None
    }

    fn top_keys(&self, _: NaiveDate, _: usize) -> Option<Vec<(String, u64)>> {
        None
    }

    fn daily_totals(&self, _: NaiveDate) -> Option<Vec<(NaiveDate, u64)>> {
        None
    }
}
