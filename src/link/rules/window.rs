//! The time conditions: `from`/`until` instants, and the recurring window
//! of `days` and `hours` in a named time zone.
//!
//! A recurring window is read on the wall clock of its zone: 11:00–15:00
//! Europe/Dublin holds from 11:00 to 15:00 local time on both sides of a
//! daylight-saving change. Whether it holds at an instant is decided by
//! turning the instant into local time (always one answer); only
//! [`Weekly::edges`], for "what changes next", goes the other way, where a
//! local time may not exist (the spring gap: the window starts when the
//! clock jumps past its start) or exist twice (the autumn fold: both
//! instants are edges). A window whose end is before its start crosses
//! midnight and belongs to the day it starts on: `fri` 22:00–02:00 holds
//! until 02:00 on Saturday morning, not on Friday morning.

use chrono::{DateTime, Datelike, Days, LocalResult, NaiveDate, NaiveDateTime, TimeZone, Timelike};
use chrono_tz::Tz;

const DAY_S: u32 = 86_400;
const MS: i64 = 1000;

/// The weekdays a window holds on, Monday bit 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DaySet(u8);

impl DaySet {
    pub const NAMES: [&'static str; 7] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];
    pub const ALL: DaySet = DaySet(0x7f);
    pub const NONE: DaySet = DaySet(0);

    /// The day a rule writes (`mon`), as its index from Monday.
    pub fn index(name: &str) -> Option<u32> {
        Self::NAMES
            .iter()
            .position(|d| *d == name)
            .map(|i| i as u32)
    }
    pub fn insert(&mut self, day_from_monday: u32) {
        self.0 |= 1 << day_from_monday;
    }
    pub fn contains(self, date: NaiveDate) -> bool {
        self.0 & (1 << date.weekday().num_days_from_monday()) != 0
    }
}

/// A time of day a rule writes as `HH:MM`, in seconds after midnight.
pub fn parse_hhmm(s: &str) -> Option<u32> {
    match s.as_bytes() {
        [h1, h2, b':', m1, m2] if [h1, h2, m1, m2].iter().all(|d| d.is_ascii_digit()) => {
            let h = u32::from((h1 - b'0') * 10 + (h2 - b'0'));
            let m = u32::from((m1 - b'0') * 10 + (m2 - b'0'));
            (h < 24 && m < 60).then_some((h * 60 + m) * 60)
        }
        _ => None,
    }
}

/// A recurring window: on `days`, from `start` to `end` (seconds after
/// local midnight; `end` < `start` crosses midnight; a window of whole days
/// is 0 to 86,400), in `tz`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Weekly {
    pub days: DaySet,
    pub start: u32,
    pub end: u32,
    pub tz: Tz,
}

/// An instant in milliseconds as local time in `tz`; `None` beyond chrono's
/// range (hundreds of thousands of years away).
pub fn local(tz: Tz, ms: i64) -> Option<NaiveDateTime> {
    DateTime::from_timestamp_millis(ms).map(|t| t.with_timezone(&tz).naive_local())
}

impl Weekly {
    /// Whether the window holds at local time `at` (in its own zone).
    pub fn holds_local(&self, at: NaiveDateTime) -> bool {
        let date = at.date();
        let secs = at.time().num_seconds_from_midnight();
        if self.start < self.end {
            self.days.contains(date) && self.start <= secs && secs < self.end
        } else {
            (self.days.contains(date) && secs >= self.start)
                || (secs < self.end && date.pred_opt().is_some_and(|d| self.days.contains(d)))
        }
    }

    /// Whether the window holds at the instant `ms`.
    pub fn holds(&self, ms: i64) -> bool {
        local(self.tz, ms).is_some_and(|at| self.holds_local(at))
    }

    /// Every instant in (`after`, `up_to`] at which the window may open or
    /// close, in no particular order (a few more do no harm: the caller
    /// evaluates at each).
    pub fn edges(&self, after: i64, up_to: i64, out: &mut Vec<i64>) {
        let (Some(first), Some(last)) = (local(self.tz, after), local(self.tz, up_to)) else {
            return;
        };
        // The day before too: its window may cross into the first day.
        let Some(mut day) = first.date().pred_opt() else {
            return;
        };
        while day <= last.date() {
            if self.days.contains(day) {
                let end_day = if self.start < self.end {
                    day
                } else {
                    day + Days::new(1)
                };
                for (date, secs) in [(day, self.start), (end_day, self.end)] {
                    instants(self.tz, date, secs, &mut |t| {
                        if after < t && t <= up_to {
                            out.push(t);
                        }
                    });
                }
            }
            let Some(next) = day.succ_opt() else { return };
            day = next;
        }
        // Where the clock jumps, the window may open or close without its
        // start or end being read: back into an evening window at the end
        // of summer time, say.
        transitions(self.tz, after, up_to, out);
    }
}

/// Every instant in (`after`, `up_to`] at which `tz` changes its offset,
/// found by reading the offset every six hours (no zone changes twice in
/// that time) and bisecting to the second where it moved.
fn transitions(tz: Tz, after: i64, up_to: i64, out: &mut Vec<i64>) {
    const STEP: i64 = 6 * 3600;
    let offset = |s: i64| {
        DateTime::from_timestamp(s, 0).map(|t| {
            let l = t.with_timezone(&tz).naive_local();
            (l - t.naive_utc()).num_seconds()
        })
    };
    let (mut lo, end) = (after.div_euclid(MS), up_to.div_euclid(MS));
    while lo < end {
        let hi = (lo + STEP).min(end);
        let (a, b) = (offset(lo), offset(hi));
        if a != b {
            let (mut l, mut h) = (lo, hi);
            while h - l > 1 {
                let mid = l + (h - l) / 2;
                if offset(mid) == a { l = mid } else { h = mid }
            }
            let t = h * MS;
            if after < t && t <= up_to {
                out.push(t);
            }
        }
        lo = hi;
    }
}

/// The instants at which local time in `tz` reaches `secs` after midnight
/// of `date` (86,400: the next midnight): one, two in a fold, and in a gap
/// the instant the clock jumps past it.
fn instants(tz: Tz, date: NaiveDate, secs: u32, found: &mut impl FnMut(i64)) {
    let (date, secs) = if secs >= DAY_S {
        match date.succ_opt() {
            Some(d) => (d, secs - DAY_S),
            None => return,
        }
    } else {
        (date, secs)
    };
    let Some(naive) = date.and_hms_opt(secs / 3600, secs / 60 % 60, secs % 60) else {
        return;
    };
    match tz.from_local_datetime(&naive) {
        LocalResult::Single(t) => found(t.timestamp_millis()),
        LocalResult::Ambiguous(a, b) => {
            found(a.timestamp_millis());
            found(b.timestamp_millis());
        }
        LocalResult::None => {
            if let Some(t) = gap_end(tz, naive) {
                found(t)
            }
        }
    }
}

/// The first instant (to the second) whose local time is at or past
/// `naive`, found by bisection: no zone's offset is beyond ±26 hours, and
/// local time only moves forward around a gap.
fn gap_end(tz: Tz, naive: NaiveDateTime) -> Option<i64> {
    let at = naive.and_utc().timestamp();
    let (mut lo, mut hi) = (at - 26 * 3600, at + 26 * 3600);
    let reached = |s: i64| local(tz, s * MS).is_some_and(|l| l >= naive);
    if reached(lo) || !reached(hi) {
        return None;
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if reached(mid) { hi = mid } else { lo = mid }
    }
    Some(hi * MS)
}

/// `from ≤ now < until`, either end open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Span {
    pub from: Option<i64>,
    pub until: Option<i64>,
}

impl Span {
    pub fn holds(&self, ms: i64) -> bool {
        self.from.is_none_or(|f| f <= ms) && self.until.is_none_or(|u| ms < u)
    }
    pub fn is_open(&self) -> bool {
        self.from.is_none() && self.until.is_none()
    }
}

/// An RFC 3339 instant in milliseconds.
pub fn parse_instant(s: &str) -> Option<i64> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.timestamp_millis())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> i64 {
        parse_instant(s).expect(s)
    }

    fn window(days: &[&str], start: &str, end: &str, tz: Tz) -> Weekly {
        let mut set = DaySet::NONE;
        for d in days {
            set.insert(DaySet::index(d).expect(d));
        }
        Weekly {
            days: set,
            start: parse_hhmm(start).expect(start),
            end: parse_hhmm(end).expect(end),
            tz,
        }
    }

    #[test]
    fn hhmm() {
        assert_eq!(parse_hhmm("00:00"), Some(0));
        assert_eq!(parse_hhmm("23:59"), Some(86_340));
        assert_eq!(parse_hhmm("11:30"), Some(41_400));
        for bad in [
            "24:00", "12:60", "1:00", "12:0", "12-00", "", "ab:cd", "+1:00",
        ] {
            assert_eq!(parse_hhmm(bad), None, "{bad}");
        }
    }

    /// 11:00–15:00 in Dublin is 11:00–15:00 local on both sides of each
    /// change (2026-03-29 01:00 UTC spring forward, 2026-10-25 01:00 UTC
    /// fall back), which is 11:00 UTC in winter and 10:00 UTC in summer.
    #[test]
    fn lunch_in_dublin_across_both_changes() {
        let lunch = window(
            &["mon", "tue", "wed", "thu", "fri", "sat", "sun"],
            "11:00",
            "15:00",
            Tz::Europe__Dublin,
        );
        let table = [
            ("2026-03-28T10:59:59Z", false), // Saturday, GMT
            ("2026-03-28T11:00:00Z", true),
            ("2026-03-28T14:59:59Z", true),
            ("2026-03-28T15:00:00Z", false),
            ("2026-03-29T09:59:59Z", false), // Sunday, IST (UTC+1)
            ("2026-03-29T10:00:00Z", true),
            ("2026-03-29T13:59:59Z", true),
            ("2026-03-29T14:00:00Z", false),
            ("2026-10-24T10:00:00Z", true), // Saturday, IST
            ("2026-10-24T14:00:00Z", false),
            ("2026-10-25T10:00:00Z", false), // Sunday, GMT again
            ("2026-10-25T11:00:00Z", true),
            ("2026-10-25T14:59:59Z", true),
            ("2026-10-25T15:00:00Z", false),
        ];
        for (t, want) in table {
            assert_eq!(lunch.holds(at(t)), want, "{t}");
        }
    }

    /// New York: 2026-03-08 02:00 EST → 03:00 EDT, 2026-11-01 02:00 EDT →
    /// 01:00 EST.
    #[test]
    fn new_york_gap_and_fold() {
        let ny = Tz::America__New_York;
        // A window starting inside the gap opens when the clock jumps.
        let early = window(&["sun"], "02:30", "04:00", ny);
        let mut edges = Vec::new();
        early.edges(
            at("2026-03-08T00:00:00Z"),
            at("2026-03-09T00:00:00Z"),
            &mut edges,
        );
        edges.sort();
        edges.dedup();
        // 03:00 EDT = 07:00 UTC (the jump), 04:00 EDT = 08:00 UTC.
        assert_eq!(
            edges,
            vec![at("2026-03-08T07:00:00Z"), at("2026-03-08T08:00:00Z")]
        );
        assert!(!early.holds(at("2026-03-08T06:59:59Z")));
        assert!(early.holds(at("2026-03-08T07:00:00Z")));
        assert!(!early.holds(at("2026-03-08T08:00:00Z")));

        // A window in the fold holds twice; both starts are edges.
        let fold = window(&["sun"], "01:15", "01:45", ny);
        let mut edges = Vec::new();
        fold.edges(
            at("2026-11-01T00:00:00Z"),
            at("2026-11-02T00:00:00Z"),
            &mut edges,
        );
        edges.sort();
        assert_eq!(
            edges,
            vec![
                at("2026-11-01T05:15:00Z"), // 01:15 EDT
                at("2026-11-01T05:45:00Z"),
                at("2026-11-01T06:00:00Z"), // the change itself
                at("2026-11-01T06:15:00Z"), // 01:15 EST
                at("2026-11-01T06:45:00Z"),
            ]
        );
        assert!(fold.holds(at("2026-11-01T05:30:00Z")));
        assert!(!fold.holds(at("2026-11-01T06:00:00Z")));
        assert!(fold.holds(at("2026-11-01T06:30:00Z")));
        assert!(!fold.holds(at("2026-11-01T06:45:00Z")));

        // 09:00–17:00 weekdays is 14:00–22:00 UTC before the change, 13:00–21:00 after.
        let office = window(&["mon", "tue", "wed", "thu", "fri"], "09:00", "17:00", ny);
        assert!(office.holds(at("2026-03-06T14:00:00Z")));
        assert!(!office.holds(at("2026-03-06T13:59:59Z")));
        assert!(office.holds(at("2026-03-09T13:00:00Z")));
        assert!(!office.holds(at("2026-03-09T21:00:00Z")));
        assert!(!office.holds(at("2026-03-07T15:00:00Z"))); // Saturday
    }

    #[test]
    fn a_window_crossing_midnight_belongs_to_the_day_it_starts_on() {
        let late = window(&["fri"], "22:00", "02:00", Tz::UTC);
        assert!(!late.holds(at("2026-11-27T01:00:00Z"))); // Friday morning
        assert!(!late.holds(at("2026-11-27T21:59:59Z")));
        assert!(late.holds(at("2026-11-27T22:00:00Z")));
        assert!(late.holds(at("2026-11-28T01:59:59Z"))); // Saturday morning
        assert!(!late.holds(at("2026-11-28T02:00:00Z")));
        assert!(!late.holds(at("2026-11-28T22:30:00Z"))); // Saturday night
        let mut edges = Vec::new();
        late.edges(
            at("2026-11-23T00:00:00Z"),
            at("2026-11-30T00:00:00Z"),
            &mut edges,
        );
        edges.sort();
        assert_eq!(
            edges,
            vec![at("2026-11-27T22:00:00Z"), at("2026-11-28T02:00:00Z")]
        );
        // Ending at midnight: 18:00–00:00 is the evening, not an empty window.
        let evening = window(&["sat"], "18:00", "00:00", Tz::UTC);
        assert!(evening.holds(at("2026-11-28T23:59:59Z")));
        assert!(!evening.holds(at("2026-11-29T00:00:00Z")));
        assert!(!evening.holds(at("2026-11-28T17:59:59Z")));
    }

    #[test]
    fn whole_days() {
        let weekend = Weekly {
            days: {
                let mut d = DaySet::NONE;
                d.insert(5);
                d.insert(6);
                d
            },
            start: 0,
            end: DAY_S,
            tz: Tz::Europe__Dublin,
        };
        assert!(weekend.holds(at("2026-11-28T00:00:00Z")));
        assert!(!weekend.holds(at("2026-11-27T23:59:59Z")));
        let mut edges = Vec::new();
        weekend.edges(
            at("2026-11-26T00:00:00Z"),
            at("2026-12-02T00:00:00Z"),
            &mut edges,
        );
        edges.sort();
        edges.dedup();
        // Sunday's midnight is no edge, but a few more instants do no harm.
        assert_eq!(
            edges,
            vec![
                at("2026-11-28T00:00:00Z"),
                at("2026-11-29T00:00:00Z"),
                at("2026-11-30T00:00:00Z")
            ]
        );
    }

    #[test]
    fn spans() {
        let s = Span {
            from: Some(at("2026-12-01T00:00:00Z")),
            until: Some(at("2026-12-02T00:00:00Z")),
        };
        assert!(!s.holds(at("2026-11-30T23:59:59.999Z")));
        assert!(s.holds(at("2026-12-01T00:00:00Z")));
        assert!(!s.holds(at("2026-12-02T00:00:00Z")));
        assert!(Span::default().holds(0) && Span::default().is_open());
        assert_eq!(
            parse_instant("2026-12-01T01:00:00+01:00"),
            Some(at("2026-12-01T00:00:00Z"))
        );
        assert_eq!(parse_instant("2026-12-01"), None);
    }
}
