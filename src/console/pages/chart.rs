//! The console's scan charts: a period picker (7, 30, 90 days, a year),
//! bars with a value axis, labelled periods and the numbers, drawn as inline
//! SVG (attributes only, so the strict Content-Security-Policy holds, and no
//! JavaScript), with the same numbers in a table under it for screen readers
//! and for reading exact values.
//!
//! What is drawn where is decided by pure functions ([`Period::buckets`],
//! [`ticks`], [`label_step`]), unit-tested; [`chart`] only writes them out.
//! The drawing is 320 units wide, about what a phone gives it, so its text
//! (15 units) is drawn at 14 pixels or more on a phone and larger elsewhere.

use chrono::{Datelike, Days, NaiveDate};
use maud::{Markup, html};

/// How far back a chart looks, as the picker offers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Period {
    Week,
    #[default]
    Month,
    Quarter,
    Year,
}

impl Period {
    pub const ALL: [Period; 4] = [Period::Week, Period::Month, Period::Quarter, Period::Year];

    /// Days covered, today included: the `days` query parameter.
    pub fn days(self) -> u32 {
        match self {
            Period::Week => 7,
            Period::Month => 30,
            Period::Quarter => 90,
            Period::Year => 365,
        }
    }

    /// The `days` parameter's value, one of the four offered; anything
    /// else is refused with the values that are.
    pub fn parse(days: &str) -> Result<Period, String> {
        Period::ALL
            .into_iter()
            .find(|p| p.days().to_string() == days)
            .ok_or_else(|| format!("bad days: {days:?}, give 7, 30, 90 or 365"))
    }

    /// What one bar is, in words: "day", "week", "month".
    pub fn unit_noun(self) -> &'static str {
        self.unit().noun()
    }

    /// The chart's summary words: "the last 30 days".
    pub fn words(self) -> &'static str {
        match self {
            Period::Week => "the last 7 days",
            Period::Month => "the last 30 days",
            Period::Quarter => "the last 90 days",
            Period::Year => "the last year",
        }
    }

    /// The picker's words.
    fn name(self) -> &'static str {
        match self {
            Period::Week => "7 days",
            Period::Month => "30 days",
            Period::Quarter => "90 days",
            Period::Year => "A year",
        }
    }

    /// The first day covered when the last is `today`.
    pub fn since(self, today: NaiveDate) -> NaiveDate {
        today
            .checked_sub_days(Days::new(u64::from(self.days() - 1)))
            .unwrap_or(today)
    }

    /// What one bar is: a day for a week or a month, an ISO week (Monday
    /// first) for 90 days, a calendar month for a year, so that no chart
    /// has more than 31 bars and the longer ones stay readable on a phone.
    pub fn unit(self) -> Unit {
        match self {
            Period::Week | Period::Month => Unit::Day,
            Period::Quarter => Unit::Week,
            Period::Year => Unit::Month,
        }
    }

    /// Scans per day (oldest first, every day present) summed into this
    /// period's bars; the first and last bars may be partial weeks or
    /// months, and say so by their first and last day.
    pub fn buckets(self, daily: &[(NaiveDate, u64)]) -> Vec<Bucket> {
        let unit = self.unit();
        let mut out: Vec<Bucket> = Vec::new();
        for &(day, scans) in daily {
            let start = unit.start(day);
            match out.last_mut() {
                Some(b) if b.start_of_unit == start => {
                    b.last = day;
                    b.scans += scans;
                }
                _ => out.push(Bucket {
                    start_of_unit: start,
                    first: day,
                    last: day,
                    scans,
                }),
            }
        }
        out
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Day,
    Week,
    Month,
}

impl Unit {
    fn start(self, day: NaiveDate) -> NaiveDate {
        match self {
            Unit::Day => day,
            Unit::Week => day
                .checked_sub_days(Days::new(u64::from(day.weekday().num_days_from_monday())))
                .unwrap_or(day),
            Unit::Month => day.with_day(1).unwrap_or(day),
        }
    }

    /// The label under a bar: `24 Nov` for a day or the week it starts,
    /// `Nov` for a month (the table under the chart has the years).
    fn label(self, b: &Bucket) -> String {
        match self {
            Unit::Day | Unit::Week => b.first.format("%-d %b").to_string(),
            Unit::Month => b.first.format("%b").to_string(),
        }
    }

    /// The table's words for a bar: the day, or its first and last day.
    fn span(self, b: &Bucket) -> String {
        match self {
            Unit::Day => b.first.to_string(),
            _ if b.first == b.last => b.first.to_string(),
            _ => format!("{} – {}", b.first, b.last),
        }
    }

    fn noun(self) -> &'static str {
        match self {
            Unit::Day => "day",
            Unit::Week => "week",
            Unit::Month => "month",
        }
    }
}

/// One bar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bucket {
    start_of_unit: NaiveDate,
    pub first: NaiveDate,
    pub last: NaiveDate,
    pub scans: u64,
}

/// The value axis for a largest value `max`: evenly spaced round values
/// (1, 2 or 5 times a power of ten apart) from 0 to the first at or above
/// `max`, at most five of them after 0. The bars are scaled to the last.
pub fn ticks(max: u64) -> Vec<u64> {
    let max = max.max(1);
    let mut step = 1u64;
    loop {
        for m in [1, 2, 5] {
            let s = step.saturating_mul(m);
            let n = max.div_ceil(s);
            if n <= 4 && n.checked_mul(s).is_some() {
                return (0..=n).map(|i| i * s).collect();
            }
        }
        if step > u64::MAX / 10 {
            return vec![0, max];
        }
        step *= 10;
    }
}

/// A count as the axis prints it: `950`, `1.2k`, `12k`, `3.4M`: four
/// characters at most, so the axis keeps its width.
pub fn short(n: u64) -> String {
    match n {
        0..=9_999 => n.to_string(),
        10_000..=999_999 => format!("{}k", n / 1000),
        _ if n < 10_000_000 => format!("{:.1}M", n as f64 / 1e6),
        _ => format!("{}M", n / 1_000_000),
    }
}

/// Every how many bars a label fits, when labels are `chars` wide and bars
/// `slot` apart: 1, or the least step that leaves a label's width and a gap.
pub fn label_step(slot: f64, chars: usize) -> usize {
    let width = chars as f64 * CHAR + GAP;
    let mut step = 1;
    while (step as f64) * slot < width {
        step += 1;
    }
    step
}

/// Where each bar's label goes (its centre), or `None` for a bar left
/// unlabelled: every `step`th bar counted from the latest, each centred
/// under its bar but kept inside the plot (`from..to`). The step is the
/// least one at which no such label comes within [`GAP`] of its neighbour
/// (a label shifted at the plot's edge can need a wider step than
/// [`label_step`] gives), so the labels are evenly spaced: dropping one
/// instead would leave a gap twice the others that reads as a missing
/// period. `chars` is each label's length.
pub fn label_positions(slot: f64, from: f64, to: f64, chars: &[usize]) -> Vec<Option<f64>> {
    let widest = chars.iter().copied().max().unwrap_or(0);
    let n = chars.len();
    let place = |step: usize| -> Option<Vec<Option<f64>>> {
        let mut out = vec![None; n];
        let mut right_edge = f64::INFINITY;
        for i in (0..n).rev().step_by(step) {
            let half = chars[i] as f64 * CHAR / 2.0;
            let centre =
                (from + slot * (i as f64 + 0.5)).clamp(from + half, (to - half).max(from + half));
            if centre + half + GAP > right_edge {
                return None;
            }
            out[i] = Some(centre);
            right_edge = centre - half;
        }
        Some(out)
    };
    (label_step(slot, widest)..n.max(1))
        .find_map(place)
        .unwrap_or_else(|| {
            // Only the latest bar's label: it always has one.
            let mut out = vec![None; n];
            if let Some(last) = n.checked_sub(1) {
                let half = chars[last] as f64 * CHAR / 2.0;
                out[last] = Some(
                    (from + slot * (last as f64 + 0.5))
                        .clamp(from + half, (to - half).max(from + half)),
                );
            }
            out
        })
}

/// The drawing's size and margins, in SVG units.
const W: f64 = 320.0;
const FONT: f64 = 15.0;
/// A character's width at [`FONT`] (DejaVu Sans's digits are 0.64 em,
/// its lower-case letters about as wide; a little over).
const CHAR: f64 = 9.8;
/// The least gap between two period labels.
const GAP: f64 = 6.0;
const AXIS: f64 = 40.0;
const TOP: f64 = 22.0;
const PLOT_H: f64 = 140.0;
const BOTTOM: f64 = 24.0;
const RIGHT: f64 = 4.0;

/// The period picker: one link a period, the current one marked.
/// `href(days)` is the page's address for a period.
pub fn picker(current: Period, href: impl Fn(u32) -> String) -> Markup {
    html! {
        nav.periods aria-label="Period" {
            @for p in Period::ALL {
                @if p == current {
                    a.current href=(href(p.days())) aria-current="page" data-days=(p.days()) { (p.name()) }
                } @else {
                    a href=(href(p.days())) data-days=(p.days()) { (p.name()) }
                }
            }
        }
    }
}

fn f(v: f64) -> String {
    format!("{v:.1}")
}

/// `daily` (oldest first, quiet days as 0) as bars of `period`'s unit,
/// with a value axis, period labels, each bar's number where it fits, and a
/// table of every number under it. `id` names the drawing (`daily`).
pub fn chart(id: &str, what: &str, period: Period, daily: &[(NaiveDate, u64)]) -> Markup {
    let unit = period.unit();
    let buckets = period.buckets(daily);
    let total: u64 = buckets.iter().map(|b| b.scans).sum();
    let max = buckets.iter().map(|b| b.scans).max().unwrap_or(0);
    let ticks = ticks(max);
    let top = *ticks.last().unwrap_or(&1) as f64;
    let plot_w = W - AXIS - RIGHT;
    let slot = plot_w / buckets.len().max(1) as f64;
    let bar = (slot * 0.8).max(1.0);
    // A week's seven bars are named by weekday, which fits under each.
    let labels: Vec<String> = buckets
        .iter()
        .map(|b| match period {
            Period::Week => b.first.format("%a").to_string(),
            _ => unit.label(b),
        })
        .collect();
    let lengths: Vec<usize> = labels.iter().map(|l| l.chars().count()).collect();
    let placed = label_positions(slot, AXIS, W - RIGHT, &lengths);
    let h = TOP + PLOT_H + BOTTOM;
    let y = |v: f64| TOP + PLOT_H - v / top * PLOT_H;
    let summary = match buckets.iter().max_by_key(|b| b.scans) {
        Some(b) if b.scans > 0 => format!(
            "{what}, {}: {total} in all; the busiest {} ({}) had {}.",
            period.words(),
            unit.noun(),
            unit.span(b),
            b.scans
        ),
        _ => format!("{what}, {}: none.", period.words()),
    };
    html! {
        figure.chart {
            svg.chart id=(id) xmlns="http://www.w3.org/2000/svg" viewBox={ "0 0 " (W) " " (f(h)) } role="img" aria-label=(summary) data-unit=(unit.noun()) {
                // The value axis: round values, a light line across each.
                @for t in &ticks {
                    @let ty = y(*t as f64);
                    line x1=(f(AXIS)) x2=(f(W - RIGHT)) y1=(f(ty)) y2=(f(ty)) stroke=(if *t == 0 { "#5c6670" } else { "#d9dee3" }) stroke-width="1" {}
                    text.tick x=(f(AXIS - 4.0)) y=(f(ty)) dominant-baseline="central" text-anchor="end" font-size=(FONT) fill="#5c6670" data-tick=(t) { (short(*t)) }
                }
                @for (i, b) in buckets.iter().enumerate() {
                    @let cx = AXIS + slot * (i as f64 + 0.5);
                    @let by = y(b.scans as f64);
                    rect x=(f(cx - bar / 2.0)) y=(f(by)) width=(f(bar)) height=(f(TOP + PLOT_H - by)) fill="#2a6f97" data-day=(b.first) data-scans=(b.scans) {
                        title { (unit.span(b)) ": " (b.scans) }
                    }
                    @let number = b.scans.to_string();
                    @if b.scans > 0 && number.len() as f64 * CHAR <= slot {
                        text.value x=(f(cx)) y=(f(by - 4.0)) text-anchor="middle" font-size=(FONT) fill="#1b1f23" { (number) }
                    }
                    @if let Some(lx) = placed[i] {
                        text.period x=(f(lx)) y=(f(h - 6.0)) text-anchor="middle" font-size=(FONT) fill="#5c6670" { (labels[i]) }
                    }
                }
            }
            figcaption {
                details.numbers {
                    summary { "The numbers" }
                    table.chart-data {
                        thead { tr { th scope="col" { (capitalised(unit.noun())) } th scope="col" { "Scans" } } }
                        tbody {
                            @for b in buckets.iter().rev() {
                                tr data-period=(b.first) { td { (unit.span(b)) } td data-scans=(b.scans) { (b.scans) } }
                            }
                        }
                        tfoot { tr { th scope="row" { "In all" } td data-total=(total) { (total) } } }
                    }
                }
            }
        }
    }
}

fn capitalised(word: &str) -> String {
    let mut c = word.chars();
    c.next()
        .map(|first| first.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clickhouse_keeps_a_window_for_every_period_shown() {
        let shown: Vec<u32> = Period::ALL.iter().map(|p| p.days()).collect();
        assert_eq!(shown, crate::clickhouse::windows::PERIODS);
    }

    fn day(y: i32, m: u32, d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, d).expect("date")
    }

    fn days(from: NaiveDate, n: u64, scans: impl Fn(u64) -> u64) -> Vec<(NaiveDate, u64)> {
        (0..n)
            .map(|i| (from.checked_add_days(Days::new(i)).expect("day"), scans(i)))
            .collect()
    }

    #[test]
    fn the_days_parameter_takes_the_four_periods_only() {
        for p in Period::ALL {
            assert_eq!(Period::parse(&p.days().to_string()), Ok(p));
        }
        for bad in ["", "0", "14", "365d", "-7", "30 "] {
            assert!(Period::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(Period::Month.since(day(2026, 11, 30)), day(2026, 11, 1));
        assert_eq!(Period::Year.since(day(2026, 12, 31)), day(2026, 1, 1));
    }

    #[test]
    fn buckets_sum_every_day_into_days_weeks_or_months() {
        let today = day(2026, 11, 25);
        for p in Period::ALL {
            let daily = days(p.since(today), u64::from(p.days()), |i| i % 7 + 1);
            let buckets = p.buckets(&daily);
            let sum: u64 = buckets.iter().map(|b| b.scans).sum();
            assert_eq!(sum, daily.iter().map(|d| d.1).sum::<u64>(), "{p:?}");
            assert_eq!(buckets.first().map(|b| b.first), Some(p.since(today)));
            assert_eq!(buckets.last().map(|b| b.last), Some(today));
            assert!(buckets.len() <= 31, "{p:?}: {}", buckets.len());
            for pair in buckets.windows(2) {
                assert_eq!(pair[0].last.succ_opt(), Some(pair[1].first), "{p:?}");
            }
        }
        // 90 days: whole ISO weeks, Monday to Sunday, but the first and last.
        let q = Period::Quarter.buckets(&days(Period::Quarter.since(today), 90, |_| 1));
        for b in &q[1..q.len() - 1] {
            assert_eq!(b.first.weekday(), chrono::Weekday::Mon);
            assert_eq!(b.scans, 7);
        }
        // A year: calendar months, 13 of them when it starts mid-month.
        let y = Period::Year.buckets(&days(Period::Year.since(today), 365, |_| 1));
        assert_eq!(y.len(), 13);
        assert_eq!(y[1].first, day(2025, 12, 1));
        assert_eq!(y[1].scans, 31);
    }

    #[test]
    fn ticks_are_round_and_cover_the_largest_value() {
        assert_eq!(ticks(0), [0, 1]);
        assert_eq!(ticks(1), [0, 1]);
        assert_eq!(ticks(3), [0, 1, 2, 3]);
        assert_eq!(ticks(7), [0, 2, 4, 6, 8]);
        assert_eq!(ticks(17), [0, 5, 10, 15, 20]);
        assert_eq!(ticks(100), [0, 50, 100]);
        assert_eq!(ticks(1234), [0, 500, 1000, 1500]);
        for max in (0..5000).chain([u64::MAX / 3, u64::MAX]) {
            let t = ticks(max);
            assert!(t.len() >= 2 && t.len() <= 5, "{max}: {t:?}");
            assert!(*t.last().expect("a tick") >= max.max(1), "{max}: {t:?}");
            let step = t[1];
            assert!(t.windows(2).all(|w| w[1] - w[0] == step), "{max}: {t:?}");
        }
    }

    #[test]
    fn short_counts_fit_four_characters() {
        for (n, s) in [
            (0, "0"),
            (9_999, "9999"),
            (12_345, "12k"),
            (2_500_000, "2.5M"),
            (42_000_000, "42M"),
        ] {
            assert_eq!(short(n), s);
        }
    }

    #[test]
    fn labels_are_thinned_to_fit() {
        assert_eq!(label_step(4.0 * CHAR + GAP, 4), 1);
        assert_eq!(label_step(4.0 * CHAR + GAP - 0.5, 4), 2);
        let slot = (W - AXIS - RIGHT) / 30.0;
        let step = label_step(slot, 6);
        assert!(step as f64 * slot >= 6.0 * CHAR + GAP);
        assert!((step - 1) as f64 * slot < 6.0 * CHAR + GAP);
    }

    /// Whatever the bars and labels, the labels placed never overlap, stay
    /// inside the plot, and the latest bar always has one.
    #[test]
    fn labels_never_overlap_and_the_latest_is_always_labelled() {
        let (from, to) = (AXIS, W - RIGHT);
        for n in 1..=40 {
            for len in 1..=8 {
                let slot = (to - from) / n as f64;
                let chars: Vec<usize> = (0..n).map(|i| len - (i % 2).min(len - 1)).collect();
                let placed = label_positions(slot, from, to, &chars);
                assert!(placed[n - 1].is_some(), "{n} bars, {len} chars");
                let mut spans: Vec<(f64, f64)> = placed
                    .iter()
                    .zip(&chars)
                    .filter_map(|(x, c)| {
                        x.map(|x| (x - *c as f64 * CHAR / 2.0, x + *c as f64 * CHAR / 2.0))
                    })
                    .collect();
                spans.sort_by(|a, b| a.0.total_cmp(&b.0));
                for s in &spans {
                    assert!(s.0 >= from - 1e-9 && s.1 <= to + 1e-9, "{n}/{len}: {s:?}");
                }
                for w in spans.windows(2) {
                    assert!(w[0].1 + GAP <= w[1].0 + 1e-9, "{n}/{len}: {spans:?}");
                }
                let at: Vec<usize> = (0..n).filter(|i| placed[*i].is_some()).collect();
                for w in at.windows(3) {
                    assert_eq!(w[1] - w[0], w[2] - w[1], "{n}/{len}: evenly spaced {at:?}");
                }
                if let [first, second, ..] = at[..] {
                    let step = second - first;
                    assert!(
                        at.iter().all(|i| (n - 1 - i) % step == 0),
                        "{n}/{len}: {at:?}"
                    );
                }
            }
        }
    }

    /// Every bar, its number where it fits, the axis, the labels, and the
    /// table with every number and the total.
    #[test]
    fn a_week_shows_every_number_on_its_bar_and_in_the_table() {
        let daily = days(day(2026, 11, 19), 7, |i| [3, 0, 12, 5, 0, 1, 9][i as usize]);
        let html = chart("daily", "Scans", Period::Week, &daily).into_string();
        for n in [3, 12, 5, 1, 9] {
            assert!(
                html.contains(&format!(">{n}</text>")),
                "{n} on its bar: {html}"
            );
            assert!(
                html.contains(&format!(r#"<td data-scans="{n}">{n}</td>"#)),
                "{html}"
            );
        }
        assert_eq!(html.matches("<rect").count(), 7);
        assert_eq!(html.matches("class=\"period\"").count(), 7, "{html}");
        for t in [0, 5, 10, 15] {
            assert!(html.contains(&format!(r#"data-tick="{t}""#)), "{t}: {html}");
        }
        assert!(html.contains(r#"data-total="30""#), "{html}");
        assert!(html.contains(">Thu</text>"), "{html}");
        assert!(html.contains("busiest day (2026-11-21) had 12"), "{html}");
    }

    #[test]
    fn a_year_is_months_and_an_empty_chart_says_none() {
        let today = day(2026, 11, 25);
        let daily = days(Period::Year.since(today), 365, |_| 0);
        let html = chart("daily", "Scans", Period::Year, &daily).into_string();
        assert_eq!(html.matches("<rect").count(), 13);
        assert!(html.contains(">Jan</text>"), "{html}");
        assert!(html.contains("2026-01-01 – 2026-01-31"), "{html}");
        assert!(html.contains("the last year: none."), "{html}");
        assert!(
            !html.contains("class=\"value\""),
            "no numbers on empty bars"
        );
    }
}
