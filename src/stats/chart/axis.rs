//! The chart's axes as numbers and dates: which periods get a slot, which slots
//! get a label, and where the count axis stops. Pure, so every rule is tested
//! without drawing.

use chrono::{Datelike, Days, Months, NaiveDate, Weekday};

use crate::stats::aggregate::Period;

/// The start of the period after the one starting at `start`.
pub fn next_start(period: Period, start: NaiveDate) -> Option<NaiveDate> {
    match period {
        Period::Day => start.checked_add_days(Days::new(1)),
        Period::Week => start.checked_add_days(Days::new(7)),
        Period::Month => start.checked_add_months(Months::new(1)),
    }
}

/// Start dates of every period from `first` to `last` (both period starts), the
/// ones without scans included: a quiet week is a fact the chart must show.
pub fn slots(period: Period, first: NaiveDate, last: NaiveDate) -> Vec<NaiveDate> {
    let mut out = Vec::new();
    let mut d = Some(first);
    while let Some(day) = d.filter(|&day| day <= last) {
        out.push(day);
        d = next_start(period, day);
    }
    out
}

/// How many slots [`slots`] would make from `first` to `last`, counted
/// without making them: a span of ten thousand years is millions of days.
pub fn slot_count(period: Period, first: NaiveDate, last: NaiveDate) -> u64 {
    if last < first {
        return 0;
    }
    let days = (last - first).num_days().unsigned_abs();
    match period {
        Period::Day => days + 1,
        Period::Week => days / 7 + 1,
        Period::Month => {
            let month = |d: NaiveDate| i64::from(d.year()) * 12 + i64::from(d.month0());
            (month(last) - month(first)).unsigned_abs() + 1
        }
    }
}

/// A chart whose periods outnumber its pixels across: each bar would be
/// under a pixel, and making them costs memory and time without bound.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "a chart by {period} from {first} to {last} needs {count} bars, more than its {max} pixels across: narrow it with --since and --until{coarser}"
)]
pub struct TooManySlots {
    pub period: Period,
    pub first: NaiveDate,
    pub last: NaiveDate,
    pub count: u64,
    pub max: u64,
    /// A coarser `--by` that fits, when one does.
    coarser: String,
}

/// Refuses a span of more than `max` slots, suggesting the coarser periods
/// that would fit.
pub fn check_slot_count(
    period: Period,
    first: NaiveDate,
    last: NaiveDate,
    max: u64,
) -> Result<(), TooManySlots> {
    let count = slot_count(period, first, last);
    if count <= max {
        return Ok(());
    }
    let coarser: &[Period] = match period {
        Period::Day => &[Period::Week, Period::Month],
        Period::Week => &[Period::Month],
        Period::Month => &[],
    };
    let coarser = coarser
        .iter()
        .filter(|&&p| slot_count(p, first, last) <= max)
        .map(|p| format!(", or use --by {p}"))
        .next()
        .unwrap_or_default();
    Err(TooManySlots {
        period,
        first,
        last,
        count,
        max,
        coarser,
    })
}

/// The last day of the period starting at `start`, for the title's date span.
pub fn last_day(period: Period, start: NaiveDate) -> NaiveDate {
    next_start(period, start)
        .and_then(|next| next.pred_opt())
        .unwrap_or(start)
}

/// The same spelling as the CSV and JSON outputs' `period` column, so a chart
/// and a table of one run can be read side by side.
pub fn label(period: Period, start: NaiveDate) -> String {
    match period {
        Period::Day => start.format("%Y-%m-%d").to_string(),
        Period::Week => start.format("%G-W%V").to_string(),
        Period::Month => start.format("%Y-%m").to_string(),
    }
}

/// Distances (in periods) between labels, most to least detailed: units a
/// reader counts in (2 days, a week, a quarter, a year), then whole multiples
/// of the longest, so a label stays as dense as the width allows.
fn steps(period: Period) -> impl Iterator<Item = usize> {
    let (listed, then): (&[usize], usize) = match period {
        Period::Day => (&[1, 2, 7, 14], 28),
        Period::Week => (&[1, 2, 4, 8, 13, 26], 52),
        Period::Month => (&[1, 2, 3, 6], 12),
    };
    listed.iter().copied().chain((1..).map(move |k| k * then))
}

/// The first slot a label with this step sits on: weekly steps of days start
/// on a Monday and steps of months on January, April, July or October (for 3),
/// so labels fall on boundaries a reader expects; other steps start at the
/// first slot.
fn anchor(period: Period, slots: &[NaiveDate], step: usize) -> usize {
    let aligned = |d: &NaiveDate| match period {
        Period::Day if step.is_multiple_of(7) => d.weekday() == Weekday::Mon,
        Period::Month if step <= 12 => (d.month0() as usize).is_multiple_of(step),
        Period::Month => d.month0() == 0,
        _ => true,
    };
    slots.iter().position(aligned).unwrap_or(0)
}

/// Indices of the slots that get a label: every `step`-th slot from an anchor,
/// with `step` the first of [`steps`] for which `fits(step)` (labels that far
/// apart do not collide). Evenly spaced, so no period is ever skipped alone.
pub fn labelled_slots(
    period: Period,
    slots: &[NaiveDate],
    fits: impl Fn(usize) -> bool,
) -> Vec<usize> {
    if slots.is_empty() {
        return Vec::new();
    }
    let step = steps(period)
        .find(|&s| s >= slots.len() || fits(s))
        .unwrap_or(slots.len());
    (anchor(period, slots, step)..slots.len())
        .step_by(step)
        .collect()
}

/// The count axis: a tick every `step` scans up to `top`, `step` a 1, 2 or 5
/// times a power of ten, at most [`MAX_Y_INTERVALS`] intervals, and `top` the
/// first tick at or above `max`, so the tallest bar nearly fills the plot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CountAxis {
    pub step: u64,
    pub top: u64,
}

pub const MAX_Y_INTERVALS: u64 = 5;

impl CountAxis {
    pub fn for_max(max: u64) -> CountAxis {
        let mut magnitude = 1u64;
        loop {
            for m in [1, 2, 5] {
                let step = magnitude.saturating_mul(m);
                if max.div_ceil(step) <= MAX_Y_INTERVALS || step == u64::MAX {
                    let top = max.div_ceil(step).max(1).saturating_mul(step);
                    return CountAxis { step, top };
                }
            }
            magnitude = magnitude.saturating_mul(10);
        }
    }

    /// Every tick value from 0 to `top`.
    pub fn ticks(self) -> impl Iterator<Item = u64> {
        (0..=self.top / self.step).map(move |i| i * self.step)
    }
}

/// `12,345`: counts in a report are read, not parsed.
pub fn group_digits(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn d(y: i32, m: u32, day: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, day).unwrap()
    }

    #[test]
    fn a_span_of_more_slots_than_pixels_is_refused_with_what_fits() {
        let (first, last) = (d(0, 1, 1), d(9999, 12, 31));
        assert_eq!(slot_count(Period::Day, first, last), 3_652_425);
        let err = check_slot_count(Period::Day, first, last, 1000).expect_err("too many");
        assert_eq!(err.count, 3_652_425);
        assert!(
            err.to_string()
                .ends_with("narrow it with --since and --until"),
            "{err}"
        );
        let (first, last) = (d(2020, 1, 6), d(2026, 1, 5));
        let err = check_slot_count(Period::Day, first, last, 1000).expect_err("too many");
        assert!(err.to_string().ends_with(", or use --by week"), "{err}");
        assert_eq!(check_slot_count(Period::Week, first, last, 1000), Ok(()));
    }

    proptest! {
        #[test]
        fn slot_count_is_the_number_of_slots(from in 0i64..20_000, days in 0u64..2_000) {
            let first = d(1970, 1, 5) + chrono::Duration::days(from);
            let last = first + chrono::Duration::days(days as i64);
            for period in [Period::Day, Period::Week, Period::Month] {
                let (a, b) = (start_of(period, first), start_of(period, last));
                prop_assert_eq!(slot_count(period, a, b), slots(period, a, b).len() as u64);
            }
        }
    }

    /// The start of the period holding `day`.
    fn start_of(period: Period, day: NaiveDate) -> NaiveDate {
        match period {
            Period::Day => day,
            Period::Week => day - Days::new(u64::from(day.weekday().num_days_from_monday())),
            Period::Month => day.with_day(1).expect("day 1"),
        }
    }

    #[test]
    fn slots_include_quiet_periods() {
        assert_eq!(
            slots(Period::Day, d(2026, 2, 27), d(2026, 3, 2)),
            [d(2026, 2, 27), d(2026, 2, 28), d(2026, 3, 1), d(2026, 3, 2)]
        );
        assert_eq!(
            slots(Period::Week, d(2026, 12, 21), d(2027, 1, 4)),
            [d(2026, 12, 21), d(2026, 12, 28), d(2027, 1, 4)]
        );
        assert_eq!(
            slots(Period::Month, d(2026, 11, 1), d(2027, 2, 1)),
            [d(2026, 11, 1), d(2026, 12, 1), d(2027, 1, 1), d(2027, 2, 1)]
        );
        assert_eq!(
            slots(Period::Day, d(2026, 11, 22), d(2026, 11, 22)).len(),
            1
        );
    }

    #[test]
    fn labels_name_the_period() {
        assert_eq!(label(Period::Day, d(2026, 11, 2)), "2026-11-02");
        assert_eq!(label(Period::Month, d(2026, 10, 1)), "2026-10");
        assert_eq!(label(Period::Month, d(2026, 11, 1)), "2026-11");
        // 2026 has 53 ISO weeks; the 53rd ends in 2027.
        assert_eq!(label(Period::Week, d(2026, 12, 28)), "2026-W53");
        assert_eq!(label(Period::Week, d(2027, 1, 4)), "2027-W01");
        assert_eq!(label(Period::Week, d(2025, 12, 29)), "2026-W01");
    }

    #[test]
    fn last_days() {
        assert_eq!(last_day(Period::Day, d(2026, 11, 22)), d(2026, 11, 22));
        assert_eq!(last_day(Period::Week, d(2026, 12, 28)), d(2027, 1, 3));
        assert_eq!(last_day(Period::Month, d(2028, 2, 1)), d(2028, 2, 29));
    }

    #[test]
    fn every_slot_labelled_when_there_is_room() {
        let s = slots(Period::Week, d(2026, 9, 28), d(2026, 11, 2));
        assert_eq!(
            labelled_slots(Period::Week, &s, |_| true),
            [0, 1, 2, 3, 4, 5]
        );
    }

    #[test]
    fn thinned_days_fall_on_mondays() {
        // 2026-11-05 is a Thursday; the first Monday is the 9th, slot 4.
        let s = slots(Period::Day, d(2026, 11, 5), d(2027, 1, 10));
        let picked = labelled_slots(Period::Day, &s, |step| step >= 5);
        assert_eq!(picked[..3], [4, 11, 18]);
        assert!(picked.iter().all(|&i| s[i].weekday() == Weekday::Mon));
    }

    #[test]
    fn thinned_months_fall_on_quarters() {
        let s = slots(Period::Month, d(2026, 8, 1), d(2028, 1, 1));
        let picked: Vec<String> = labelled_slots(Period::Month, &s, |step| step >= 3)
            .into_iter()
            .map(|i| label(Period::Month, s[i]))
            .collect();
        assert_eq!(
            picked,
            [
                "2026-10", "2027-01", "2027-04", "2027-07", "2027-10", "2028-01"
            ]
        );
    }

    #[test]
    fn one_slot_is_labelled_even_without_room() {
        let s = [d(2026, 11, 22)];
        assert_eq!(labelled_slots(Period::Day, &s, |_| false), [0]);
        assert!(labelled_slots(Period::Day, &[], |_| true).is_empty());
    }

    #[test]
    fn count_axes() {
        assert_eq!(CountAxis::for_max(0), CountAxis { step: 1, top: 1 });
        assert_eq!(CountAxis::for_max(1), CountAxis { step: 1, top: 1 });
        assert_eq!(CountAxis::for_max(5), CountAxis { step: 1, top: 5 });
        assert_eq!(CountAxis::for_max(7), CountAxis { step: 2, top: 8 });
        assert_eq!(CountAxis::for_max(48), CountAxis { step: 10, top: 50 });
        assert_eq!(
            CountAxis::for_max(1234),
            CountAxis {
                step: 500,
                top: 1500
            }
        );
        assert_eq!(CountAxis::for_max(2).ticks().collect::<Vec<_>>(), [0, 1, 2]);
    }

    #[test]
    fn digits_grouped() {
        assert_eq!(group_digits(0), "0");
        assert_eq!(group_digits(999), "999");
        assert_eq!(group_digits(1000), "1,000");
        assert_eq!(group_digits(1234567), "1,234,567");
    }

    fn period() -> impl Strategy<Value = Period> {
        prop_oneof![Just(Period::Day), Just(Period::Week), Just(Period::Month)]
    }

    proptest! {
        /// Labels are evenly spaced, start within one step of the first slot,
        /// and the step is the first that fits (or covers every slot).
        #[test]
        fn labels_even_and_as_dense_as_fit(
            period in period(),
            first_day in 0u64..3000,
            n in 1usize..800,
            room in 1usize..120,
        ) {
            let first = match period {
                Period::Day => d(2024, 1, 1) + Days::new(first_day),
                Period::Week => d(2024, 1, 1) + Days::new(first_day / 7 * 7),
                Period::Month => d(2024, 1, 1) + Months::new(first_day as u32 / 30),
            };
            let s: Vec<NaiveDate> = std::iter::successors(Some(first), |&x| next_start(period, x))
                .take(n)
                .collect();
            let fits = |step: usize| step >= room;
            let picked = labelled_slots(period, &s, fits);
            prop_assert!(!picked.is_empty());
            let step = if picked.len() > 1 { picked[1] - picked[0] } else { 0 };
            prop_assert!(picked.windows(2).all(|w| w[1] - w[0] == step));
            prop_assert!(*picked.last().unwrap() < n);
            if picked.len() > 1 {
                prop_assert!(fits(step));
                prop_assert!(picked[0] < step);
                prop_assert!(n - 1 - picked.last().unwrap() < step);
                let smaller = steps(period).take_while(|&s| s < step).last();
                prop_assert!(smaller.is_none_or(|s| !fits(s)));
            }
        }

        #[test]
        fn count_axis_covers_and_stays_tight(max in 0u64..10_000_000_000) {
            let a = CountAxis::for_max(max);
            prop_assert!(a.top >= max && a.top >= 1);
            prop_assert!(a.top / a.step <= MAX_Y_INTERVALS);
            prop_assert!(a.top.is_multiple_of(a.step));
            prop_assert!(max == 0 || a.top - a.step < max);
            let mut m = a.step;
            while m.is_multiple_of(10) { m /= 10; }
            prop_assert!([1, 2, 5].contains(&m));
        }
    }
}
