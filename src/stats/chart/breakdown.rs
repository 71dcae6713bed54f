//! Breakdown charts, laid out in pixels (pure, like [`super::layout`]):
//! horizontal bars for a dimension's values, the busiest on top and the rest
//! as one grey "other" row, hours and weekdays in their order; and the hour ×
//! weekday heat map, darker for more scans, every cell's count written in it.

use super::axis::{self, CountAxis};
use super::layout::{
    AXIS_COLOUR, Align, GRID_COLOUR, LABEL_SIZE, Measure, OTHER_COLOUR, PALETTE, Rect, Rgb, Scene,
    Shape, TEXT_COLOUR, TITLE_SIZE, TOTAL_SIZE,
};
use crate::stats::breakdown::{Breakdown, HeatMap};
use crate::stats::dimensions::Dimension;

/// Values after this many get one "other" row (hours and weekdays are all
/// shown: there are 24 at most).
pub const TOP_VALUES: usize = 11;

/// The row that sums the values past [`TOP_VALUES`].
pub const OTHER_VALUES: &str = "other";

const MARGIN: i32 = 16;
/// Longest value label, in characters, before it is cut.
const MAX_LABEL: usize = 28;

/// One bar: a value, its scans, and whether it is the "other" row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bar {
    pub label: String,
    pub scans: u64,
    pub other: bool,
}

/// The bars a breakdown is drawn with: every row for hours and weekdays, else
/// the [`TOP_VALUES`] busiest and one "other" row for the rest (if any).
pub fn bars(b: &Breakdown) -> Vec<Bar> {
    let destination = b.dimension == super::super::dimensions::Dimension::Destination;
    let bar = |label: &str, scans| Bar {
        label: if destination {
            cut_middle(label)
        } else {
            cut(label)
        },
        scans,
        other: false,
    };
    if b.dimension.is_cyclic() || b.rows.len() <= TOP_VALUES + 1 {
        return b.rows.iter().map(|r| bar(&r.value, r.scans)).collect();
    }
    let mut bars: Vec<Bar> = b.rows[..TOP_VALUES]
        .iter()
        .map(|r| bar(&r.value, r.scans))
        .collect();
    bars.push(Bar {
        label: format!("{OTHER_VALUES} ({} values)", b.rows.len() - TOP_VALUES),
        scans: b.rows[TOP_VALUES..].iter().map(|r| r.scans).sum(),
        other: true,
    });
    bars
}

/// A destination cut in the middle (issue 34): an A/B split's variants
/// share a host and often all but the end of the URL, which tells them
/// apart.
fn cut_middle(s: &str) -> String {
    let n = s.chars().count();
    if n <= MAX_LABEL {
        return s.to_owned();
    }
    let head = MAX_LABEL / 3;
    let tail = MAX_LABEL - head - 1;
    s.chars()
        .take(head)
        .chain(['…'])
        .chain(s.chars().skip(n - tail))
        .collect()
}

fn cut(s: &str) -> String {
    if s.chars().count() > MAX_LABEL {
        s.chars().take(MAX_LABEL - 1).chain(['…']).collect()
    } else {
        s.to_owned()
    }
}

fn text(text: String, at: (i32, i32), size: u32, align: Align, colour: Rgb) -> Shape {
    Shape::Text {
        text,
        at,
        size,
        align,
        colour,
    }
}

fn title_shape(title: &str) -> Shape {
    text(
        title.to_owned(),
        (MARGIN, MARGIN + TITLE_SIZE as i32 / 2),
        TITLE_SIZE,
        Align::Left,
        TEXT_COLOUR,
    )
}

/// Horizontal bars, one row per bar, the count axis along the bottom and
/// each bar's count at its end.
pub fn bar_chart(bars: &[Bar], title: &str, size: (u32, u32), measure: Measure<'_>) -> Scene {
    let (width, height) = (size.0 as i32, size.1 as i32);
    let max = bars.iter().map(|b| b.scans).max().unwrap_or(0);
    let x_axis = CountAxis::for_max(max);
    let label_width = bars
        .iter()
        .map(|b| measure(&b.label, LABEL_SIZE))
        .max()
        .unwrap_or(0) as i32;
    let widest_count = measure(&axis::group_digits(max), TOTAL_SIZE) as i32;
    let plot = Rect {
        left: MARGIN + label_width + 10,
        top: MARGIN + TITLE_SIZE as i32 + 24,
        right: width - MARGIN - widest_count - 8,
        bottom: height - MARGIN - LABEL_SIZE as i32 - 12,
    };
    let mut shapes = vec![title_shape(title)];
    let x_of = |v: u64| {
        let w = f64::from(plot.right - plot.left);
        plot.left + (v as f64 / x_axis.top as f64 * w).round() as i32
    };
    for v in x_axis.ticks() {
        let x = x_of(v);
        shapes.push(Shape::Line {
            from: (x, plot.top),
            to: (x, plot.bottom),
            colour: GRID_COLOUR,
        });
        shapes.push(text(
            axis::group_digits(v),
            (x, plot.bottom + 8 + LABEL_SIZE as i32 / 2),
            LABEL_SIZE,
            Align::Center,
            TEXT_COLOUR,
        ));
    }
    let row_height = f64::from(plot.bottom - plot.top) / bars.len().max(1) as f64;
    let thickness = ((row_height * 0.7).min(28.0) as i32).max(1);
    for (i, b) in bars.iter().enumerate() {
        let centre = plot.top + ((i as f64 + 0.5) * row_height).round() as i32;
        shapes.push(text(
            b.label.clone(),
            (plot.left - 10, centre),
            LABEL_SIZE.min(row_height as u32).max(8),
            Align::Right,
            TEXT_COLOUR,
        ));
        if b.scans > 0 {
            shapes.push(Shape::Fill {
                rect: Rect {
                    left: plot.left,
                    top: centre - thickness / 2,
                    right: x_of(b.scans).max(plot.left + 1),
                    bottom: centre - thickness / 2 + thickness,
                },
                colour: if b.other { OTHER_COLOUR } else { PALETTE[0] },
            });
        }
        shapes.push(text(
            axis::group_digits(b.scans),
            (x_of(b.scans) + 6, centre),
            TOTAL_SIZE.min(row_height as u32).max(8),
            Align::Left,
            TEXT_COLOUR,
        ));
    }
    shapes.push(Shape::Line {
        from: (plot.left, plot.top),
        to: (plot.left, plot.bottom),
        colour: AXIS_COLOUR,
    });
    if bars.iter().all(|b| b.scans == 0) {
        shapes.push(text(
            "no scans".to_owned(),
            ((plot.left + plot.right) / 2, (plot.top + plot.bottom) / 2),
            LABEL_SIZE,
            Align::Center,
            TEXT_COLOUR,
        ));
    }
    Scene {
        size,
        plot,
        legend: None,
        shapes,
    }
}

/// The shade of a heat-map cell: white for none, the palette's blue for the
/// busiest, in between by the share of the busiest.
pub fn shade(count: u64, max: u64) -> Rgb {
    if count == 0 || max == 0 {
        return (0xF4, 0xF4, 0xF4);
    }
    // Never quite white, so a single scan still shows.
    let t = 0.15 + 0.85 * count as f64 / max as f64;
    let (r, g, b) = PALETTE[0];
    let mix = |c: u8| (255.0 - (255.0 - f64::from(c)) * t).round() as u8;
    (mix(r), mix(g), mix(b))
}

/// Seven rows (Monday first) of 24 hour cells, counts written in the cells
/// (white on dark ones), hours labelled along the top.
pub fn heat_map_chart(
    heat: &HeatMap,
    title: &str,
    size: (u32, u32),
    measure: Measure<'_>,
) -> Scene {
    let (width, height) = (size.0 as i32, size.1 as i32);
    let days = Dimension::Weekday.cycle();
    let day_width = days
        .iter()
        .map(|d| measure(d, LABEL_SIZE))
        .max()
        .unwrap_or(0) as i32;
    let plot = Rect {
        left: MARGIN + day_width + 10,
        top: MARGIN + TITLE_SIZE as i32 + 20 + LABEL_SIZE as i32 + 8,
        right: width - MARGIN,
        bottom: height - MARGIN,
    };
    let max = heat.iter().flatten().copied().max().unwrap_or(0);
    let cell_w = f64::from(plot.right - plot.left) / 24.0;
    let cell_h = f64::from(plot.bottom - plot.top) / 7.0;
    let x = |h: usize| plot.left + (h as f64 * cell_w).round() as i32;
    let y = |d: usize| plot.top + (d as f64 * cell_h).round() as i32;
    let mut shapes = vec![title_shape(title)];
    for h in 0..24 {
        shapes.push(text(
            format!("{h:02}"),
            ((x(h) + x(h + 1)) / 2, plot.top - 8 - LABEL_SIZE as i32 / 2),
            LABEL_SIZE,
            Align::Center,
            TEXT_COLOUR,
        ));
    }
    for (d, counts) in heat.iter().enumerate() {
        shapes.push(text(
            days[d].clone(),
            (plot.left - 10, (y(d) + y(d + 1)) / 2),
            LABEL_SIZE,
            Align::Right,
            TEXT_COLOUR,
        ));
        for (h, &count) in counts.iter().enumerate() {
            let cell = Rect {
                left: x(h) + 1,
                top: y(d) + 1,
                right: x(h + 1) - 1,
                bottom: y(d + 1) - 1,
            };
            let fill = shade(count, max);
            shapes.push(Shape::Fill {
                rect: cell,
                colour: fill,
            });
            let label = axis::group_digits(count);
            if count > 0 && measure(&label, TOTAL_SIZE) as i32 + 4 <= cell.right - cell.left {
                // Dark text on light cells, white on dark ones.
                let light = u32::from(fill.0) + u32::from(fill.1) + u32::from(fill.2) > 3 * 150;
                shapes.push(text(
                    label,
                    ((cell.left + cell.right) / 2, (cell.top + cell.bottom) / 2),
                    TOTAL_SIZE,
                    Align::Center,
                    if light {
                        TEXT_COLOUR
                    } else {
                        (0xFF, 0xFF, 0xFF)
                    },
                ));
            }
        }
    }
    Scene {
        size,
        plot,
        legend: None,
        shapes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::breakdown::Row;

    fn measure(t: &str, size: u32) -> u32 {
        t.chars().count() as u32 * size / 2
    }

    fn breakdown(dimension: Dimension, counts: &[u64]) -> Breakdown {
        Breakdown {
            dimension,
            rows: counts
                .iter()
                .enumerate()
                .map(|(i, &scans)| Row {
                    value: format!("v{i}"),
                    scans,
                    ..Row::default()
                })
                .collect(),
            bots: false,
            time_zone: None,
        }
    }

    fn on_canvas(scene: &Scene) {
        let canvas = Rect {
            left: 0,
            top: 0,
            right: scene.size.0 as i32,
            bottom: scene.size.1 as i32,
        };
        for s in &scene.shapes {
            if let Shape::Fill { rect, .. } = s {
                assert!(
                    rect.left >= canvas.left && rect.right <= canvas.right,
                    "{rect:?}"
                );
                assert!(
                    rect.top >= canvas.top && rect.bottom <= canvas.bottom,
                    "{rect:?}"
                );
                assert!(rect.left < rect.right && rect.top < rect.bottom, "{rect:?}");
            }
        }
    }

    #[test]
    fn values_past_the_top_are_one_other_row() {
        let counts: Vec<u64> = (1..=15).rev().collect();
        let top = bars(&breakdown(Dimension::Browser, &counts));
        assert_eq!(top.len(), TOP_VALUES + 1);
        assert_eq!(top[0].scans, 15);
        let other = &top[TOP_VALUES];
        assert!(other.other);
        assert_eq!(other.label, "other (4 values)");
        assert_eq!(other.scans, 4 + 3 + 2 + 1);
        // Twelve values fit without an "other" row.
        assert_eq!(bars_of(12).iter().filter(|b| b.other).count(), 0);
        // Hours are all drawn, in order.
        let hours = bars(&breakdown(Dimension::Hour, &[1; 24]));
        assert_eq!(hours.len(), 24);
    }

    fn bars_of(n: u64) -> Vec<Bar> {
        bars(&breakdown(
            Dimension::Os,
            &(1..=n).rev().collect::<Vec<_>>(),
        ))
    }

    #[test]
    fn bar_lengths_follow_counts() {
        let scene = bar_chart(&bars_of(3), "t", (1000, 500), &measure);
        on_canvas(&scene);
        let widths: Vec<i32> = scene
            .shapes
            .iter()
            .filter_map(|s| match s {
                Shape::Fill { rect, .. } => Some(rect.right - rect.left),
                _ => None,
            })
            .collect();
        assert_eq!(widths.len(), 3);
        assert!(widths[0] > widths[1] && widths[1] > widths[2], "{widths:?}");
        // Each count is written.
        for n in ["1", "2", "3"] {
            assert!(
                scene
                    .shapes
                    .iter()
                    .any(|s| matches!(s, Shape::Text { text, .. } if text == n))
            );
        }
    }

    #[test]
    fn heat_map_cells_shade_by_count() {
        let mut heat = [[0u64; 24]; 7];
        heat[0][9] = 10;
        heat[6][23] = 1;
        let scene = heat_map_chart(&heat, "t", (1000, 500), &measure);
        on_canvas(&scene);
        let cells: Vec<Rgb> = scene
            .shapes
            .iter()
            .filter_map(|s| match s {
                Shape::Fill { colour, .. } => Some(*colour),
                _ => None,
            })
            .collect();
        assert_eq!(cells.len(), 7 * 24);
        assert_eq!(cells[9], PALETTE[0]);
        assert_ne!(cells[6 * 24 + 23], shade(0, 10));
        assert_eq!(cells[1], shade(0, 10));
        assert!(
            scene
                .shapes
                .iter()
                .any(|s| matches!(s, Shape::Text { text, .. } if text == "Sunday"))
        );
        assert!(
            scene
                .shapes
                .iter()
                .any(|s| matches!(s, Shape::Text { text, .. } if text == "10"))
        );
    }
}
