//! Where every bar, tick, label and legend entry goes, in pixels. Pure: text
//! widths come from a measuring function, so the whole picture can be checked
//! in tests without a font or a backend, and the drawing shell only paints.

use super::axis::{self, CountAxis};
use super::stack::{OTHER_KEYS, Stack};

pub type Rgb = (u8, u8, u8);

/// Okabe & Ito's colour-blind-safe palette without its yellow (faint on white
/// paper) and black (read as an axis), busiest key first.
pub const PALETTE: [Rgb; 6] = [
    (0x00, 0x72, 0xB2), // blue
    (0xE6, 0x9F, 0x00), // orange
    (0x00, 0x9E, 0x73), // bluish green
    (0xCC, 0x79, 0xA7), // reddish purple
    (0x56, 0xB4, 0xE9), // sky blue
    (0xD5, 0x5E, 0x00), // vermillion
];
/// Neutral, so the rest never competes with a named key.
pub const OTHER_COLOUR: Rgb = (0x99, 0x99, 0x99);
pub const TEXT_COLOUR: Rgb = (0x22, 0x22, 0x22);
pub const GRID_COLOUR: Rgb = (0xDD, 0xDD, 0xDD);
pub const AXIS_COLOUR: Rgb = (0x44, 0x44, 0x44);

/// Font sizes are even: plotters' bitmap text puts the baseline at half the
/// size, truncated, so an odd size moves short glyphs (hyphens) up a pixel
/// against tall ones.
pub const TITLE_SIZE: u32 = 22;
pub const LABEL_SIZE: u32 = 16;
pub const TOTAL_SIZE: u32 = 14;

const MARGIN: i32 = 16;
/// Room between the title and the plot for the axis name and the totals over
/// the tallest bar.
const ABOVE_PLOT: i32 = 40;
const LEGEND_GAP: i32 = 28;
const SWATCH: i32 = 14;
const LEGEND_ROW: i32 = 22;
/// Least free space between two tick labels.
const LABEL_GAP: u32 = 16;
/// A single bar wider than this reads as a block, not a count.
const MAX_BAR: f64 = 56.0;
/// Slots narrower than this (pixels) get bars without gaps.
const MIN_GAPPED_SLOT: f64 = 6.0;
/// Legend names longer than this are cut with an ellipsis.
const MAX_NAME: usize = 24;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rect {
    pub left: i32,
    pub top: i32,
    pub right: i32,
    pub bottom: i32,
}

impl Rect {
    pub fn overlaps(&self, other: &Rect) -> bool {
        self.left < other.right
            && other.left < self.right
            && self.top < other.bottom
            && other.top < self.bottom
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Center,
    Right,
}

/// Text is placed by the vertical centre of its line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shape {
    Fill {
        rect: Rect,
        colour: Rgb,
    },
    Line {
        from: (i32, i32),
        to: (i32, i32),
        colour: Rgb,
    },
    Text {
        text: String,
        at: (i32, i32),
        size: u32,
        align: Align,
        colour: Rgb,
    },
}

/// A whole chart, back to front.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scene {
    pub size: (u32, u32),
    /// The area bars are drawn in: the count axis runs from its bottom (0) to its top.
    pub plot: Rect,
    pub legend: Option<Rect>,
    pub shapes: Vec<Shape>,
}

/// The width in pixels of a text at a font size.
pub type Measure<'a> = &'a dyn Fn(&str, u32) -> u32;

/// Lays out `stack` as stacked bars, one slot per period, under `title`.
pub fn layout(stack: &Stack, title: &str, size: (u32, u32), measure: Measure<'_>) -> Scene {
    let (width, height) = (size.0 as i32, size.1 as i32);
    let totals = stack.totals();
    let y_axis = CountAxis::for_max(totals.iter().copied().max().unwrap_or(0));
    let y_labels: Vec<(u64, String)> = y_axis.ticks().map(|v| (v, axis::group_digits(v))).collect();
    let y_label_width = y_labels
        .iter()
        .map(|(_, t)| measure(t, LABEL_SIZE))
        .max()
        .unwrap_or(0) as i32;

    // Top of the stack first, so the legend reads in the order the colours sit.
    let legend_entries: Vec<(String, Rgb)> = stack
        .series
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let text = format!("{} ({})", legend_name(&s.name), axis::group_digits(s.scans));
            (text, series_colour(i, &s.name))
        })
        .rev()
        .collect();
    let legend_text_width = legend_entries
        .iter()
        .map(|(t, _)| measure(t, LABEL_SIZE))
        .max()
        .unwrap_or(0) as i32;
    let legend_width = if legend_entries.is_empty() {
        0
    } else {
        LEGEND_GAP + SWATCH + 8 + legend_text_width
    };

    let plot = Rect {
        left: MARGIN + y_label_width + 10,
        top: MARGIN + TITLE_SIZE as i32 + ABOVE_PLOT,
        right: width - MARGIN - legend_width,
        bottom: height - MARGIN - LABEL_SIZE as i32 - 12,
    };
    let mut shapes = vec![Shape::Text {
        text: title.to_owned(),
        at: (MARGIN, MARGIN + TITLE_SIZE as i32 / 2),
        size: TITLE_SIZE,
        align: Align::Left,
        colour: TEXT_COLOUR,
    }];

    let y_of = |v: u64| {
        let h = f64::from(plot.bottom - plot.top);
        plot.bottom - (v as f64 / y_axis.top as f64 * h).round() as i32
    };
    for (v, text) in y_labels {
        let y = y_of(v);
        shapes.push(Shape::Line {
            from: (plot.left, y),
            to: (plot.right, y),
            colour: GRID_COLOUR,
        });
        shapes.push(label(text, (plot.left - 10, y), LABEL_SIZE, Align::Right));
    }
    shapes.push(label(
        "scans".to_owned(),
        (MARGIN, plot.top - 20),
        LABEL_SIZE,
        Align::Left,
    ));

    let slots = stack.slots.len();
    let slot_width = f64::from(plot.right - plot.left) / slots.max(1) as f64;
    let centre = |i: usize| (f64::from(plot.left) + (i as f64 + 0.5) * slot_width).round() as i32;
    // Even, so a bar's middle is exactly its slot's centre, where its label
    // sits. Slots too narrow for a visible gap are filled edge to edge: thin
    // bars with gaps read as stripes, not as counts.
    let bar = 2 * ((slot_width * 0.8).min(MAX_BAR) / 2.0).floor() as i32;
    let edge = |i: usize| (f64::from(plot.left) + i as f64 * slot_width).round() as i32;
    for i in 0..slots {
        let (left, right) = if slot_width < MIN_GAPPED_SLOT {
            (edge(i), edge(i + 1).max(edge(i) + 1))
        } else {
            (centre(i) - bar / 2, centre(i) + bar / 2)
        };
        let mut below = 0;
        for (n, s) in stack.series.iter().enumerate() {
            let count = s.counts[i];
            if count == 0 {
                continue;
            }
            let bottom = y_of(below);
            below += count;
            shapes.push(Shape::Fill {
                rect: Rect {
                    left,
                    top: y_of(below).min(bottom - 1),
                    right,
                    bottom,
                },
                colour: series_colour(n, &s.name),
            });
        }
    }

    let total_texts: Vec<String> = totals.iter().map(|&t| axis::group_digits(t)).collect();
    let widest_total = total_texts
        .iter()
        .map(|t| measure(t, TOTAL_SIZE))
        .max()
        .unwrap_or(0);
    if f64::from(widest_total + 6) <= slot_width {
        for (i, (text, &t)) in total_texts.into_iter().zip(&totals).enumerate() {
            if t > 0 {
                let y = y_of(t) - 4 - TOTAL_SIZE as i32 / 2;
                shapes.push(label(text, (centre(i), y), TOTAL_SIZE, Align::Center));
            }
        }
    }
    if stack.series.is_empty() {
        shapes.push(label(
            "no scans".to_owned(),
            ((plot.left + plot.right) / 2, (plot.top + plot.bottom) / 2),
            LABEL_SIZE,
            Align::Center,
        ));
    }

    shapes.push(Shape::Line {
        from: (plot.left, plot.bottom),
        to: (plot.right, plot.bottom),
        colour: AXIS_COLOUR,
    });
    let x_labels: Vec<String> = stack
        .slots
        .iter()
        .map(|&d| axis::label(stack.period, d))
        .collect();
    let widest_x = x_labels
        .iter()
        .map(|t| measure(t, LABEL_SIZE))
        .max()
        .unwrap_or(0);
    let fits = |step: usize| slot_width * step as f64 >= f64::from(widest_x + LABEL_GAP);
    for i in axis::labelled_slots(stack.period, &stack.slots, fits) {
        let x = centre(i);
        shapes.push(Shape::Line {
            from: (x, plot.bottom),
            to: (x, plot.bottom + 5),
            colour: AXIS_COLOUR,
        });
        shapes.push(label(
            x_labels[i].clone(),
            (x, plot.bottom + 8 + LABEL_SIZE as i32 / 2),
            LABEL_SIZE,
            Align::Center,
        ));
    }

    let legend = (!legend_entries.is_empty()).then(|| Rect {
        left: plot.right + LEGEND_GAP,
        top: plot.top,
        right: width - MARGIN,
        bottom: plot.top + LEGEND_ROW * legend_entries.len() as i32,
    });
    if let Some(area) = legend {
        for (row, (text, colour)) in legend_entries.into_iter().enumerate() {
            let top = area.top + row as i32 * LEGEND_ROW;
            shapes.push(Shape::Fill {
                rect: Rect {
                    left: area.left,
                    top,
                    right: area.left + SWATCH,
                    bottom: top + SWATCH,
                },
                colour,
            });
            shapes.push(label(
                text,
                (area.left + SWATCH + 8, top + SWATCH / 2),
                LABEL_SIZE,
                Align::Left,
            ));
        }
    }
    Scene {
        size,
        plot,
        legend,
        shapes,
    }
}

/// The colour of series `index` of a stack.
pub fn series_colour(index: usize, name: &str) -> Rgb {
    if name == OTHER_KEYS {
        OTHER_COLOUR
    } else {
        PALETTE[index % PALETTE.len()]
    }
}

fn label(text: String, at: (i32, i32), size: u32, align: Align) -> Shape {
    Shape::Text {
        text,
        at,
        size,
        align,
        colour: TEXT_COLOUR,
    }
}

fn legend_name(key: &str) -> String {
    if key.chars().count() > MAX_NAME {
        key.chars().take(MAX_NAME - 1).chain(['…']).collect()
    } else {
        key.to_owned()
    }
}

#[cfg(test)]
mod tests;
