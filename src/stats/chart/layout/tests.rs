use chrono::{Days, NaiveDate};

use super::*;
use crate::stats::aggregate::Period;
use crate::stats::chart::stack::Series;

/// Wider than DejaVu Sans's digits, so a layout that fits here fits the font.
fn measure(text: &str, size: u32) -> u32 {
    text.chars().count() as u32 * size * 2 / 3
}

fn d(y: i32, m: u32, day: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(y, m, day).unwrap()
}

fn stack(period: Period, first: NaiveDate, series: &[(&str, &[u64])]) -> Stack {
    let n = series.iter().map(|s| s.1.len()).max().unwrap_or(0);
    let slots: Vec<NaiveDate> =
        std::iter::successors(Some(first), |&s| axis::next_start(period, s))
            .take(n)
            .collect();
    Stack {
        period,
        slots,
        series: series
            .iter()
            .map(|(name, counts)| Series {
                name: (*name).to_owned(),
                scans: counts.iter().sum(),
                counts: counts.to_vec(),
            })
            .collect(),
    }
}

fn scene(s: &Stack) -> Scene {
    layout(s, "title", (1000, 500), &measure)
}

fn fills(scene: &Scene, colour: Rgb) -> Vec<Rect> {
    scene
        .shapes
        .iter()
        .filter_map(|s| match s {
            Shape::Fill { rect, colour: c } if *c == colour => Some(*rect),
            _ => None,
        })
        .collect()
}

fn bars(scene: &Scene, colour: Rgb) -> Vec<Rect> {
    let plot = scene.plot;
    fills(scene, colour)
        .into_iter()
        .filter(|r| r.overlaps(&plot))
        .collect()
}

fn texts(scene: &Scene) -> Vec<(&str, (i32, i32), u32, Align)> {
    scene
        .shapes
        .iter()
        .filter_map(|s| match s {
            Shape::Text {
                text,
                at,
                size,
                align,
                ..
            } => Some((text.as_str(), *at, *size, *align)),
            _ => None,
        })
        .collect()
}

/// The period labels under the plot, left to right.
fn x_labels(scene: &Scene) -> Vec<(&str, i32)> {
    texts(scene)
        .into_iter()
        .filter(|t| t.1.1 > scene.plot.bottom)
        .map(|t| (t.0, t.1.0))
        .collect()
}

#[test]
fn one_day_is_one_visible_bar() {
    let s = stack(Period::Day, d(2026, 11, 22), &[("H83if", &[3])]);
    let sc = scene(&s);
    let b = bars(&sc, PALETTE[0]);
    assert_eq!(b.len(), 1);
    let bar = b[0];
    assert!(bar.right - bar.left >= 20, "{bar:?}");
    assert_eq!(bar.bottom, sc.plot.bottom);
    // The count axis stops at the count: the bar fills the plot's height.
    assert_eq!(bar.top, sc.plot.top);
    let centre = (bar.left + bar.right) / 2;
    assert_eq!(x_labels(&sc), [("2026-11-22", centre)]);
    // And its total is written over it.
    assert!(texts(&sc).iter().any(|t| t.0 == "3" && t.1.1 < bar.top));
}

#[test]
fn every_non_zero_count_is_one_segment_stacked_in_order() {
    let s = stack(
        Period::Week,
        d(2026, 12, 21),
        &[
            ("a", &[4, 0, 2, 1]),
            ("b", &[1, 0, 0, 3]),
            (OTHER_KEYS, &[2, 0, 1, 0]),
        ],
    );
    let sc = scene(&s);
    let a = bars(&sc, PALETTE[0]);
    let b = bars(&sc, PALETTE[1]);
    let other = bars(&sc, OTHER_COLOUR);
    assert_eq!((a.len(), b.len(), other.len()), (3, 2, 2));
    // Slot 0: a on the baseline, b on a, the rest on top.
    assert_eq!(a[0].bottom, sc.plot.bottom);
    assert_eq!(b[0].bottom, a[0].top);
    assert_eq!(other[0].bottom, b[0].top);
    // The tallest bar (7) is the top of the axis (8 with a step of 2) less a step's quarter.
    let h = f64::from(sc.plot.bottom - sc.plot.top);
    assert_eq!(
        sc.plot.bottom - other[0].top,
        (7.0 / 8.0 * h).round() as i32
    );
    // The quiet week has its slot and its label, but no bar.
    let labels: Vec<&str> = x_labels(&sc).into_iter().map(|l| l.0).collect();
    assert_eq!(labels, ["2026-W52", "2026-W53", "2027-W01", "2027-W02"]);
    let slot = f64::from(sc.plot.right - sc.plot.left) / 4.0;
    let slots_of = |bars: &[Rect]| -> Vec<usize> {
        bars.iter()
            .map(|r| (f64::from((r.left + r.right) / 2 - sc.plot.left) / slot) as usize)
            .collect()
    };
    assert_eq!(slots_of(&a), [0, 2, 3]);
    assert_eq!(slots_of(&b), [0, 3]);
    assert_eq!(slots_of(&other), [0, 2]);
}

#[test]
fn legend_is_beside_the_plot_in_stacking_order() {
    let s = stack(
        Period::Day,
        d(2026, 11, 1),
        &[
            ("first", &[5, 1]),
            ("second", &[2, 2]),
            (OTHER_KEYS, &[1, 0]),
        ],
    );
    let sc = scene(&s);
    let legend = sc.legend.expect("a legend");
    assert!(legend.left > sc.plot.right);
    assert!(!legend.overlaps(&sc.plot));
    let names: Vec<&str> = texts(&sc)
        .into_iter()
        .filter(|t| t.1.0 >= legend.left)
        .map(|t| t.0)
        .collect();
    assert_eq!(names, ["other keys (1)", "second (4)", "first (6)"]);
    for colour in [PALETTE[0], PALETTE[1], OTHER_COLOUR] {
        let swatches: Vec<Rect> = fills(&sc, colour)
            .into_iter()
            .filter(|r| !r.overlaps(&sc.plot))
            .collect();
        assert_eq!(swatches.len(), 1, "{colour:?}");
        assert!(swatches[0].left >= legend.left && swatches[0].right <= legend.right);
    }
}

#[test]
fn long_names_are_cut() {
    let long = "campaign/2026/autumn/flyers/dublin-north";
    let s = stack(Period::Day, d(2026, 11, 1), &[(long, &[5])]);
    let sc = scene(&s);
    assert!(
        texts(&sc)
            .iter()
            .any(|t| t.0 == "campaign/2026/autumn/fl… (5)")
    );
}

#[test]
fn thinned_labels_sit_on_their_slots() {
    let counts: Vec<u64> = (0..120).map(|i| i % 5).collect();
    let first = d(2026, 10, 1);
    let s = stack(Period::Day, first, &[("k", &counts)]);
    let sc = scene(&s);
    let labels = x_labels(&sc);
    assert!(labels.len() >= 4 && labels.len() < 20, "{labels:?}");
    let slot = f64::from(sc.plot.right - sc.plot.left) / 120.0;
    let mut days = Vec::new();
    for (text, x) in &labels {
        let i = ((f64::from(*x - sc.plot.left)) / slot).floor() as u64;
        assert_eq!(*text, (first + Days::new(i)).to_string());
        days.push(i);
    }
    assert!(days.windows(2).all(|w| w[1] - w[0] == days[1] - days[0]));
    // No two labels touch.
    let widths = measure("2026-10-01", LABEL_SIZE) as i32;
    assert!(labels.windows(2).all(|w| w[1].1 - w[0].1 > widths));
    // Slots this narrow carry no totals.
    assert!(texts(&sc).iter().all(|t| t.2 != TOTAL_SIZE));
}

#[test]
fn no_scans_says_so() {
    let s = Stack {
        period: Period::Day,
        slots: Vec::new(),
        series: Vec::new(),
    };
    let sc = scene(&s);
    assert!(sc.legend.is_none());
    assert!(texts(&sc).iter().any(|t| t.0 == "no scans"));
    assert!(x_labels(&sc).is_empty());
}

#[test]
fn everything_stays_on_the_canvas() {
    let counts: Vec<u64> = (0..40).map(|i| i * 1000).collect();
    for period in [Period::Day, Period::Week, Period::Month] {
        let s = stack(
            period,
            d(2026, 1, 5),
            &[("a-rather-long-key-name-here", &counts), ("b", &counts)],
        );
        let sc = scene(&s);
        for (text, (x, y), size, align) in texts(&sc) {
            let w = measure(text, size) as i32;
            let (l, r) = match align {
                Align::Left => (x, x + w),
                Align::Center => (x - w / 2, x + w / 2),
                Align::Right => (x - w, x),
            };
            assert!(l >= 0 && r <= 1000, "{text} at {x}");
            assert!(
                y - size as i32 / 2 >= 0 && y + size as i32 / 2 <= 500,
                "{text}"
            );
        }
    }
}
