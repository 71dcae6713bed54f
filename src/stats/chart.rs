//! Scans over time as an SVG or PNG line chart.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

use anyhow::{Context, anyhow, bail};
use chrono::{Days, Months, NaiveDate};
use plotters::coord::Shift;
use plotters::prelude::*;

use super::aggregate::{Period, Report};

/// Plotters' `ab_glyph` text backend reads no system fonts, so the chart carries
/// its own (DejaVu Sans Mono, Bitstream Vera licence: `assets/fonts/DejaVu-LICENSE.txt`).
static FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSansMono.ttf");
const FONT_FAMILY: &str = "sans-serif";

/// Keys drawn as their own line besides the total; more would be unreadable.
pub const TOP_KEYS: usize = 5;

const SIZE: (u32, u32) = (1000, 500);

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

/// One line of the chart: a name and scans per period start, zeros filled in.
struct Line {
    name: String,
    points: Vec<(i32, u64)>,
}

/// Draws the total and the top keys. Needs `report.series`; periods without
/// scans are drawn as zero so that gaps are visible as such.
pub fn draw(report: &Report, path: &Path) -> anyhow::Result<()> {
    let kind = ChartKind::from_path(path)?;
    let period = report
        .series
        .ok_or_else(|| anyhow!("the report has no time series to chart"))?;
    register_font()?;

    let mut total: BTreeMap<NaiveDate, u64> = BTreeMap::new();
    for k in &report.keys {
        for p in &k.series {
            *total.entry(p.start).or_default() += p.scans;
        }
    }
    let starts = match (total.keys().next(), total.keys().next_back()) {
        (Some(&first), Some(&last)) => period_starts(period, first, last),
        _ => Vec::new(),
    };
    let origin = starts.first().copied().unwrap_or_default();
    let x = |d: NaiveDate| (d - origin).num_days() as i32;
    let line_of = |name: String, counts: &BTreeMap<NaiveDate, u64>| Line {
        name,
        points: starts
            .iter()
            .map(|&d| (x(d), counts.get(&d).copied().unwrap_or(0)))
            .collect(),
    };

    let mut lines = vec![line_of("all keys".to_owned(), &total)];
    let with_scans = report.keys.iter().filter(|k| k.stats.scans > 0);
    if with_scans.clone().count() > 1 {
        for k in with_scans.take(TOP_KEYS) {
            let counts = k.series.iter().map(|p| (p.start, p.scans)).collect();
            lines.push(line_of(legend_name(&k.key), &counts));
        }
    }

    let title = format!("Scans per {period}");
    let x_max = starts.last().map_or(1, |&d| x(d).max(1));
    let label = move |v: &i32| {
        let d = origin + Days::new(u64::try_from(*v).unwrap_or(0));
        match period {
            Period::Month => d.format("%Y-%m").to_string(),
            Period::Week => d.format("%G-W%V").to_string(),
            Period::Day => d.format("%Y-%m-%d").to_string(),
        }
    };
    let result = match kind {
        ChartKind::Svg => plot(
            SVGBackend::new(path, SIZE).into_drawing_area(),
            &title,
            &lines,
            x_max,
            &label,
        ),
        ChartKind::Png => plot(
            BitMapBackend::new(path, SIZE).into_drawing_area(),
            &title,
            &lines,
            x_max,
            &label,
        ),
    };
    result.with_context(|| format!("drawing chart {}", path.display()))
}

fn legend_name(key: &str) -> String {
    if key.chars().count() > 24 {
        key.chars().take(23).chain(['…']).collect()
    } else {
        key.to_owned()
    }
}

/// Start dates of every period from `first` to `last`, both period starts.
fn period_starts(period: Period, first: NaiveDate, last: NaiveDate) -> Vec<NaiveDate> {
    let mut out = Vec::new();
    let mut d = Some(first);
    while let Some(day) = d.filter(|&day| day <= last) {
        out.push(day);
        d = match period {
            Period::Day => day.checked_add_days(Days::new(1)),
            Period::Week => day.checked_add_days(Days::new(7)),
            Period::Month => day.checked_add_months(Months::new(1)),
        };
    }
    out
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

fn plot<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    title: &str,
    lines: &[Line],
    x_max: i32,
    label: &dyn Fn(&i32) -> String,
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("{e}");
    root.fill(&WHITE).map_err(err)?;
    let y_max = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1))
        .max()
        .unwrap_or(0);
    let y_top = (y_max + y_max / 10).max(1);

    let mut chart = ChartBuilder::on(&root)
        .caption(title, (FONT_FAMILY, 22))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0..x_max, 0..y_top)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_labels(8)
        .x_label_formatter(label)
        .y_desc("scans")
        .label_style((FONT_FAMILY, 13))
        .draw()
        .map_err(err)?;
    for (i, line) in lines.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let style = color.stroke_width(if i == 0 { 3 } else { 2 });
        chart
            .draw_series(LineSeries::new(line.points.iter().copied(), style))
            .map_err(err)?
            .label(line.name.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .label_font((FONT_FAMILY, 13))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn gaps_are_filled() {
        assert_eq!(
            period_starts(Period::Day, d(2026, 2, 27), d(2026, 3, 2)),
            [d(2026, 2, 27), d(2026, 2, 28), d(2026, 3, 1), d(2026, 3, 2)]
        );
        assert_eq!(
            period_starts(Period::Week, d(2026, 11, 16), d(2026, 11, 30)).len(),
            3
        );
        assert_eq!(
            period_starts(Period::Month, d(2026, 11, 1), d(2027, 2, 1)),
            [d(2026, 11, 1), d(2026, 12, 1), d(2027, 1, 1), d(2027, 2, 1)]
        );
    }
}
