//! Scans over time as an SVG or PNG bar chart. [`stack`] picks the numbers,
//! [`axis`] and [`layout`] place them; this file only paints the layout with
//! plotters.

pub mod axis;
pub mod breakdown;
pub mod layout;
pub mod stack;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use ab_glyph::{Font, FontRef, ScaleFont, point};
use anyhow::{Context, anyhow, bail};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::aggregate::Report;
use layout::{Align, Rgb, Scene, Shape};
use stack::Stack;

/// Plotters' `ab_glyph` text backend reads no system fonts, so the chart carries
/// its own: DejaVu Sans, proportional, so dates keep their hyphens on the line
/// (Bitstream Vera licence: `assets/fonts/DejaVu-LICENSE.txt`).
static FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");
/// Also the family an SVG names, so a viewer without DejaVu still picks a sans.
const FONT_FAMILY: &str = "sans-serif";

pub const SIZE: (u32, u32) = (1000, 500);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChartKind {
    Svg,
    Png,
}

impl ChartKind {
    /// Checked before reading any log, so a typo does not cost a long run.
    pub fn from_path(path: &Path) -> anyhow::Result<ChartKind> {
        match path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("svg") => Ok(ChartKind::Svg),
            Some("png") => Ok(ChartKind::Png),
            _ => bail!("chart file {} must end in .svg or .png", path.display()),
        }
    }
}

/// The bars of a chart of `report` (which needs a time series): at most one
/// period per pixel across, refused otherwise, before anything is written.
pub fn stack(report: &Report) -> anyhow::Result<Stack> {
    let period = report
        .series
        .ok_or_else(|| anyhow!("the report has no time series to chart"))?;
    Ok(Stack::from_report(report, period, u64::from(SIZE.0))?)
}

/// Draws `stack`, scans per period from the logs `files`, to `path`.
pub fn draw(stack: &Stack, files: &[PathBuf], path: &Path) -> anyhow::Result<()> {
    paint_file(path, |measure| {
        layout::layout(stack, &title(stack, files), SIZE, measure)
    })
}

/// What `--chart` draws when `--by` asks for breakdowns: one breakdown's
/// bars, or the hour × weekday heat map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BreakdownChart {
    Bars(super::dimensions::Dimension),
    HeatMap,
}

impl BreakdownChart {
    /// The chart for the breakdowns asked for, or why there is none: one
    /// picture shows one thing.
    pub fn for_dimensions(dims: &[super::dimensions::Dimension]) -> Result<BreakdownChart, String> {
        use super::dimensions::Dimension::{Hour, Weekday};
        match dims {
            [one] => Ok(BreakdownChart::Bars(*one)),
            [Hour, Weekday] | [Weekday, Hour] => Ok(BreakdownChart::HeatMap),
            _ => Err(format!(
                "--chart draws one breakdown, or the hour × weekday heat map (--by hour,weekday), not --by {}",
                dims.iter().map(|d| d.name()).collect::<Vec<_>>().join(",")
            )),
        }
    }
}

/// Draws `chart` from `report`'s breakdowns, from the logs `files`, to `path`.
pub fn draw_breakdown(
    chart: &BreakdownChart,
    report: &Report,
    files: &[PathBuf],
    path: &Path,
) -> anyhow::Result<()> {
    let files = files_label(files);
    match chart {
        BreakdownChart::Bars(dim) => {
            let b = report
                .breakdowns
                .iter()
                .find(|b| b.dimension == *dim)
                .ok_or_else(|| anyhow!("the report has no breakdown by {dim}"))?;
            let title = format!("{}, {files}", super::breakdown::heading(b));
            let bars = breakdown::bars(b);
            paint_file(path, |measure| {
                breakdown::bar_chart(&bars, &title, SIZE, measure)
            })
        }
        BreakdownChart::HeatMap => {
            let heat = report
                .heat_map
                .as_ref()
                .ok_or_else(|| anyhow!("the report has no hour × weekday counts"))?;
            let b = report.breakdowns.first();
            let zone = b
                .and_then(|b| b.time_zone)
                .map_or_else(String::new, |tz| format!(" ({tz})"));
            let bots = b.is_some_and(|b| b.bots);
            let title = format!(
                "Scans by weekday and hour{zone}, bots {}, {files}",
                if bots { "included" } else { "left out" }
            );
            paint_file(path, |measure| {
                breakdown::heat_map_chart(heat, &title, SIZE, measure)
            })
        }
    }
}

/// Paints the scene `scene` lays out (given the text measure) to `path`, as
/// its extension says.
fn paint_file(path: &Path, scene: impl FnOnce(layout::Measure<'_>) -> Scene) -> anyhow::Result<()> {
    let kind = ChartKind::from_path(path)?;
    register_font()?;
    let scene = scene(&measure);
    let result = match kind {
        ChartKind::Svg => paint(
            SVGBackend::new(path, SIZE).into_drawing_area(),
            &scene,
            None,
        ),
        ChartKind::Png => paint(
            BitMapBackend::new(path, SIZE).into_drawing_area(),
            &scene,
            Some(&FontRef::try_from_slice(FONT).context("the chart font could not be loaded")?),
        ),
    };
    result.with_context(|| format!("drawing chart {}", path.display()))
}

/// "Scans per week, 2026-10-05 – 2026-11-22, access.log + 2 more": what a
/// chart cut out of a report still has to say.
pub fn title(stack: &Stack, files: &[PathBuf]) -> String {
    let span = match (stack.slots.first(), stack.slots.last()) {
        (Some(&first), Some(&last)) => {
            let end = axis::last_day(stack.period, last);
            if first == end {
                first.to_string()
            } else {
                format!("{first} – {end}")
            }
        }
        _ => "no scans".to_owned(),
    };
    format!("Scans per {}, {span}, {}", stack.period, files_label(files))
}

/// "access.log + 2 more": the logs a chart counted.
fn files_label(files: &[PathBuf]) -> String {
    let first_file = files.first().map_or_else(String::new, |f| {
        f.file_name().map_or_else(
            || f.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
    });
    match files.len() {
        0 | 1 => first_file,
        n => format!("{first_file} + {} more", n - 1),
    }
}

fn register_font() -> anyhow::Result<()> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| {
        plotters::style::register_font(FONT_FAMILY, FontStyle::Normal, FONT).is_ok()
    });
    if ok {
        Ok(())
    } else {
        bail!("the chart font could not be loaded")
    }
}

/// Text widths from the embedded font; a rough per-character width if it
/// cannot say, which only moves labels.
fn measure(text: &str, size: u32) -> u32 {
    (FONT_FAMILY, f64::from(size))
        .into_font()
        .box_size(text)
        .map_or(text.chars().count() as u32 * size * 2 / 3, |(w, _)| w)
}

fn colour((r, g, b): Rgb) -> RGBColor {
    RGBColor(r, g, b)
}

/// Paints `scene` on `root`. Text in an SVG is named and set by the viewer;
/// with `raster` (a PNG) glyphs are placed here, see [`raster_text`].
fn paint<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    scene: &Scene,
    raster: Option<&FontRef<'_>>,
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("{e}");
    root.fill(&WHITE).map_err(err)?;
    for shape in &scene.shapes {
        match shape {
            Shape::Fill { rect, colour: c } => root.draw(&Rectangle::new(
                [(rect.left, rect.top), (rect.right, rect.bottom)],
                colour(*c).filled(),
            )),
            Shape::Line {
                from,
                to,
                colour: c,
            } => root.draw(&PathElement::new(vec![*from, *to], colour(*c))),
            Shape::Text {
                text,
                at,
                size,
                align,
                colour: c,
            } => match raster {
                Some(font) => raster_text(&root, font, text, *at, *size, *align, *c),
                None => {
                    let h = match align {
                        Align::Left => HPos::Left,
                        Align::Center => HPos::Center,
                        Align::Right => HPos::Right,
                    };
                    let style = (FONT_FAMILY, f64::from(*size))
                        .into_font()
                        .color(&colour(*c))
                        .pos(Pos::new(h, VPos::Center));
                    root.draw(&Text::new(text.as_str(), *at, style))
                }
            },
        }
        .map_err(err)?;
    }
    root.present().map_err(err)?;
    Ok(())
}

/// Sets a line of text glyph by glyph at fractional positions, its digits
/// centred on `at`. Plotters' own bitmap text snaps each glyph to a whole
/// pixel and each glyph's top to a truncated baseline, which left uneven gaps
/// and hyphens off the line in dates.
fn raster_text<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    font: &FontRef<'_>,
    text: &str,
    at: (i32, i32),
    size: u32,
    align: Align,
    c: Rgb,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let scaled = font.as_scaled(size as f32);
    let mut caret = 0.0f32;
    let mut placed = Vec::with_capacity(text.len());
    let mut previous = None;
    for ch in text.chars() {
        let id = scaled.glyph_id(ch);
        if let Some(p) = previous {
            caret += scaled.kern(p, id);
        }
        placed.push((id, caret));
        caret += scaled.h_advance(id);
        previous = Some(id);
    }
    let left = at.0 as f32
        - match align {
            Align::Left => 0.0,
            Align::Center => caret / 2.0,
            Align::Right => caret,
        };
    let digit_top = font
        .outline_glyph(scaled.scaled_glyph('0'))
        .map_or(-(size as f32) * 0.6, |g| g.px_bounds().min.y);
    let baseline = at.1 as f32 - digit_top / 2.0;
    for (id, x) in placed {
        let glyph = id.with_scale_and_position(scaled.scale(), point(left + x, baseline));
        let Some(outline) = font.outline_glyph(glyph) else {
            continue;
        };
        let origin = outline.px_bounds().min;
        let mut result = Ok(());
        outline.draw(|gx, gy, coverage| {
            if result.is_ok() && coverage > 0.0 {
                let pixel = (origin.x as i32 + gx as i32, origin.y as i32 + gy as i32);
                result = root.draw_pixel(pixel, &colour(c).mix(f64::from(coverage.min(1.0))));
            }
        });
        result?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::aggregate::Period;
    use chrono::NaiveDate;

    fn d(y: i32, m: u32, day: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, day).unwrap()
    }

    #[test]
    fn kinds_by_extension() {
        assert_eq!(
            ChartKind::from_path(Path::new("a.svg")).unwrap(),
            ChartKind::Svg
        );
        assert_eq!(
            ChartKind::from_path(Path::new("a.PNG")).unwrap(),
            ChartKind::Png
        );
        assert!(ChartKind::from_path(Path::new("a.jpg")).is_err());
        assert!(ChartKind::from_path(Path::new("svg")).is_err());
    }

    /// Ink rows (top, bottom) of each run of inked columns, left to right.
    fn glyph_rows(text: &str, size: u32) -> Vec<(u32, u32)> {
        let font = FontRef::try_from_slice(FONT).unwrap();
        let (w, h) = (120u32, 60u32);
        let mut buf = vec![255u8; (w * h * 3) as usize];
        {
            let root = BitMapBackend::with_buffer(&mut buf, (w, h)).into_drawing_area();
            raster_text(&root, &font, text, (4, 30), size, Align::Left, (0, 0, 0)).unwrap();
            root.present().unwrap();
        }
        let ink = |x: u32, y: u32| buf[((y * w + x) * 3) as usize] < 128;
        let mut runs = Vec::new();
        let mut start = None;
        for x in 0..=w {
            let inked = x < w && (0..h).any(|y| ink(x, y));
            match (inked, start) {
                (true, None) => start = Some(x),
                (false, Some(a)) => {
                    let rows: Vec<u32> = (0..h).filter(|&y| (a..x).any(|x| ink(x, y))).collect();
                    runs.push((rows[0], rows[rows.len() - 1]));
                    start = None;
                }
                _ => {}
            }
        }
        runs
    }

    #[test]
    fn raster_dates_keep_hyphens_on_the_line() {
        for size in [layout::TOTAL_SIZE, layout::LABEL_SIZE, layout::TITLE_SIZE] {
            let runs = glyph_rows("0-0", size);
            assert_eq!(runs.len(), 3, "{size}: {runs:?}");
            let (digit, hyphen) = (runs[0], runs[1]);
            assert_eq!(digit, runs[2], "{size}");
            // Digits are centred on the point given.
            assert!(
                (i64::from(digit.0 + digit.1) - 60).abs() <= 1,
                "{size}: {digit:?}"
            );
            // DejaVu Sans sets the hyphen a little below the digits' middle;
            // a pixel higher (the old rendering) is outside this band at every size.
            let height = f64::from(digit.1 - digit.0 + 1);
            let above_baseline =
                f64::from(digit.1) + 0.5 - f64::from(hyphen.0 + hyphen.1 + 1) / 2.0;
            let at = above_baseline / height;
            assert!(
                (0.3..0.42).contains(&at),
                "{size}: hyphen at {at} of the digits"
            );
        }
    }

    #[test]
    fn titles_name_period_span_and_files() {
        let stack = |period, slots: Vec<NaiveDate>| Stack {
            period,
            slots,
            series: Vec::new(),
        };
        let files: Vec<PathBuf> = ["/var/log/qrtag/access.log", "access.log.1", "a.2.gz"]
            .iter()
            .map(PathBuf::from)
            .collect();
        assert_eq!(
            title(
                &stack(
                    Period::Week,
                    axis::slots(Period::Week, d(2026, 10, 5), d(2026, 11, 16))
                ),
                &files
            ),
            "Scans per week, 2026-10-05 – 2026-11-22, access.log + 2 more"
        );
        assert_eq!(
            title(&stack(Period::Day, vec![d(2026, 11, 22)]), &files[1..2]),
            "Scans per day, 2026-11-22, access.log.1"
        );
        assert_eq!(
            title(&stack(Period::Month, vec![d(2026, 2, 1)]), &files[..1]),
            "Scans per month, 2026-02-01 – 2026-02-28, access.log"
        );
        assert_eq!(
            title(&stack(Period::Day, Vec::new()), &files[..2]),
            "Scans per day, no scans, access.log + 1 more"
        );
    }
}
