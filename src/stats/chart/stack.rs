//! The numbers a chart shows: scans per period slot for the busiest keys and
//! the rest together, so every bar's height is the total for its period.

use chrono::NaiveDate;

use super::axis;
use crate::stats::aggregate::{Period, Report};

/// Keys drawn as their own colour; more would be unreadable, and the rest are
/// drawn together as [`OTHER_KEYS`].
pub const TOP_KEYS: usize = 5;

/// The name of the segment that holds every key past the [`TOP_KEYS`].
pub const OTHER_KEYS: &str = "other keys";

/// One coloured segment of every bar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Series {
    pub name: String,
    /// Over all slots, for the legend.
    pub scans: u64,
    /// One count per slot.
    pub counts: Vec<u64>,
}

/// Series in stacking order: the busiest key first, on the baseline, where its
/// heights can be compared; [`OTHER_KEYS`] last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stack {
    pub period: Period,
    /// Start of every period from the first with scans to the last.
    pub slots: Vec<NaiveDate>,
    pub series: Vec<Series>,
}

impl Stack {
    /// The stack of `report` by `period`, or why it would not fit `max_slots`
    /// bars (the chart's width in pixels), found before any slot is made.
    pub fn from_report(
        report: &Report,
        period: Period,
        max_slots: u64,
    ) -> Result<Stack, axis::TooManySlots> {
        let keys: Vec<_> = report.keys.iter().filter(|k| k.stats.scans > 0).collect();
        let starts = keys.iter().flat_map(|k| k.series.iter().map(|p| p.start));
        let slots = match (starts.clone().min(), starts.max()) {
            (Some(first), Some(last)) => {
                axis::check_slot_count(period, first, last, max_slots)?;
                axis::slots(period, first, last)
            }
            _ => Vec::new(),
        };
        let counts_of = |reports: &[&crate::stats::aggregate::KeyReport]| {
            let mut counts = vec![0; slots.len()];
            for p in reports.iter().flat_map(|k| &k.series) {
                if let Ok(i) = slots.binary_search(&p.start) {
                    counts[i] += p.scans;
                }
            }
            counts
        };
        // A sixth key gets its own colour rather than an "other" of one key.
        let own = if keys.len() <= TOP_KEYS + 1 {
            keys.len()
        } else {
            TOP_KEYS
        };
        let mut series: Vec<Series> = keys[..own]
            .iter()
            .map(|k| Series {
                name: k.key.clone(),
                scans: k.stats.scans,
                counts: counts_of(std::slice::from_ref(k)),
            })
            .collect();
        let rest = &keys[own..];
        if !rest.is_empty() {
            series.push(Series {
                name: OTHER_KEYS.to_owned(),
                scans: rest.iter().map(|k| k.stats.scans).sum(),
                counts: counts_of(rest),
            });
        }
        Ok(Stack {
            period,
            slots,
            series,
        })
    }

    /// Scans per slot over all series: the height of each bar.
    pub fn totals(&self) -> Vec<u64> {
        let mut totals = vec![0; self.slots.len()];
        for s in &self.series {
            for (t, c) in totals.iter_mut().zip(&s.counts) {
                *t += c;
            }
        }
        totals
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::aggregate::{KeyReport, KeyStats, PeriodCount};

    fn d(y: i32, m: u32, day: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, day).unwrap()
    }

    fn key(name: &str, series: &[(NaiveDate, u64)]) -> KeyReport {
        KeyReport {
            key: name.to_owned(),
            stats: KeyStats {
                scans: series.iter().map(|p| p.1).sum(),
                ..KeyStats::default()
            },
            series: series
                .iter()
                .map(|&(start, scans)| PeriodCount {
                    label: String::new(),
                    start,
                    scans,
                })
                .collect(),
        }
    }

    fn report(mut keys: Vec<KeyReport>) -> Report {
        keys.sort_by_key(|k| std::cmp::Reverse(k.stats.scans));
        Report {
            lines_read: 0,
            malformed: 0,
            malformed_examples: Vec::new(),
            series: Some(Period::Day),
            total: KeyStats::default(),
            keys,
            breakdowns: Vec::new(),
            heat_map: None,
        }
    }

    #[test]
    fn quiet_days_are_zero_slots() {
        let r = report(vec![
            key("a", &[(d(2026, 11, 28), 3), (d(2026, 12, 2), 1)]),
            key("b", &[(d(2026, 11, 30), 2)]),
            key("idle", &[]),
        ]);
        let s = Stack::from_report(&r, Period::Day, 1000).expect("fits");
        assert_eq!(s.slots.len(), 5);
        assert_eq!(s.series.len(), 2);
        assert_eq!(s.series[0].counts, [3, 0, 0, 0, 1]);
        assert_eq!(s.series[1].counts, [0, 0, 2, 0, 0]);
        assert_eq!(s.totals(), [3, 0, 2, 0, 1]);
    }

    /// Keys `k1` (1 scan) to `kN` (N scans), all on one day.
    fn one_day_keys(n: u64) -> Report {
        let day = d(2026, 11, 22);
        report(
            (1..=n)
                .map(|i| key(&format!("k{i}"), &[(day, i)]))
                .collect(),
        )
    }

    #[test]
    fn keys_past_the_top_are_one_series() {
        let s = Stack::from_report(&one_day_keys(8), Period::Day, 1000).expect("fits");
        let names: Vec<&str> = s.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["k8", "k7", "k6", "k5", "k4", OTHER_KEYS]);
        assert_eq!(s.series[5].scans, 1 + 2 + 3);
        assert_eq!(s.totals(), [36]);
    }

    #[test]
    fn a_sixth_key_keeps_its_name() {
        let s = Stack::from_report(&one_day_keys(6), Period::Day, 1000).expect("fits");
        assert_eq!(s.series.len(), 6);
        assert!(s.series.iter().all(|s| s.name != OTHER_KEYS));
    }

    #[test]
    fn no_scans_no_slots() {
        let s =
            Stack::from_report(&report(vec![key("idle", &[])]), Period::Week, 1000).expect("fits");
        assert!(s.slots.is_empty() && s.series.is_empty());
    }
}
