//! `qrtag stats --chart` run as a real process on logs written here, and the
//! picture read back: the SVG parsed for its bars, labels, title and legend,
//! the PNG decoded for its size and colours.

use std::path::PathBuf;
use std::process::Command;

use chrono::{Days, NaiveDate};
use qrtag::stats::chart::layout::{OTHER_COLOUR, PALETTE, Rgb};

const IPHONE: &str = "Mozilla%2F5.0%20%28iPhone%3B%20CPU%20iPhone%20OS%2017_0%20like%20Mac%20OS%20X%29%20AppleWebKit%2F605.1.15%20%28KHTML%2C%20like%20Gecko%29%20Version%2F17.0%20Mobile%2F15E148%20Safari%2F604.1";

fn d(y: i32, m: u32, day: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(y, m, day).unwrap()
}

/// Access-log lines for `count` phone scans of `key` on `day`.
fn scans(day: NaiveDate, key: &str, count: u32) -> String {
    (0..count)
        .map(|n| {
            format!(
                "{}12{:02}{:02}.0 198.51.100.7 - {IPHONE} /{key} 302 https://example.com/ GET -\n",
                day.format("%Y%m%d"),
                n / 60 % 60,
                n % 60
            )
        })
        .collect()
}

/// One log of scans given as (day, key, count).
fn log_of(entries: &[(NaiveDate, &str, u32)]) -> String {
    entries
        .iter()
        .map(|&(day, key, n)| scans(day, key, n))
        .collect()
}

/// Writes each log text to its own file and runs `qrtag stats` with `options`
/// and `--chart FILE.ext`; returns the chart's bytes.
fn chart(logs: &[String], options: &[&str], ext: &str) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<PathBuf> = logs
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let name = if i == 0 {
                "access.log".to_owned()
            } else {
                format!("access.log.{i}")
            };
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            path
        })
        .collect();
    let out_path = dir.path().join(format!("scans.{ext}"));
    let out = Command::new(env!("CARGO_BIN_EXE_qrtag"))
        .env("QRTAG_CONFIG", "/dev/null")
        .arg("stats")
        .args(&files)
        .args(options)
        .arg("--chart")
        .arg(&out_path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    std::fs::read(out_path).unwrap()
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Box_ {
    left: f64,
    top: f64,
    right: f64,
    bottom: f64,
}

#[derive(Debug)]
struct Text {
    text: String,
    x: f64,
    y: f64,
}

/// What a reader sees in an SVG chart: the plot area (spanned by the count
/// axis's grid lines), filled rectangles by colour, and texts.
struct Picture {
    plot: Box_,
    fills: Vec<(String, Box_)>,
    texts: Vec<Text>,
}

fn num(node: roxmltree::Node<'_, '_>, attr: &str) -> f64 {
    node.attribute(attr).unwrap().parse().unwrap()
}

fn parse_svg(bytes: &[u8]) -> Picture {
    let text = std::str::from_utf8(bytes).unwrap();
    let doc = roxmltree::Document::parse(text).unwrap();
    let mut grid = Vec::new();
    let mut fills = Vec::new();
    let mut texts = Vec::new();
    for node in doc.descendants().filter(|n| n.is_element()) {
        match node.tag_name().name() {
            "rect" if node.attribute("fill") != Some("none") => {
                let (x, y) = (num(node, "x"), num(node, "y"));
                fills.push((
                    node.attribute("fill").unwrap().to_owned(),
                    Box_ {
                        left: x,
                        top: y,
                        right: x + num(node, "width"),
                        bottom: y + num(node, "height"),
                    },
                ));
            }
            "polyline" if node.attribute("stroke") == Some("#DDDDDD") => {
                for point in node.attribute("points").unwrap().split_whitespace() {
                    let (x, y) = point.split_once(',').unwrap();
                    grid.push((x.parse::<f64>().unwrap(), y.parse::<f64>().unwrap()));
                }
            }
            "text" => texts.push(Text {
                text: node.text().unwrap_or("").trim().to_owned(),
                x: num(node, "x"),
                y: num(node, "y"),
            }),
            _ => {}
        }
    }
    let xs = grid.iter().map(|p| p.0);
    let ys = grid.iter().map(|p| p.1);
    let plot = Box_ {
        left: xs.clone().fold(f64::MAX, f64::min),
        right: xs.fold(f64::MIN, f64::max),
        top: ys.clone().fold(f64::MAX, f64::min),
        bottom: ys.fold(f64::MIN, f64::max),
    };
    assert!(plot.right > plot.left && plot.bottom > plot.top, "{plot:?}");
    Picture { plot, fills, texts }
}

fn hex((r, g, b): Rgb) -> String {
    format!("#{r:02X}{g:02X}{b:02X}")
}

impl Picture {
    /// Bars of one colour inside the plot, left to right.
    fn bars(&self, colour: Rgb) -> Vec<Box_> {
        let p = self.plot;
        let mut bars: Vec<Box_> = self
            .fills
            .iter()
            .filter(|(c, b)| {
                *c == hex(colour) && b.left >= p.left && b.right <= p.right && b.bottom <= p.bottom
            })
            .map(|f| f.1)
            .collect();
        bars.sort_by(|a, b| a.left.total_cmp(&b.left));
        bars
    }

    /// Legend swatches of one colour: filled, and outside the plot.
    fn swatches(&self, colour: Rgb) -> Vec<Box_> {
        let p = self.plot;
        self.fills
            .iter()
            .filter(|(c, b)| *c == hex(colour) && (b.left >= p.right || b.right <= p.left))
            .map(|f| f.1)
            .collect()
    }

    /// The period labels under the plot, left to right.
    fn x_labels(&self) -> Vec<(&str, f64)> {
        let mut labels: Vec<(&str, f64)> = self
            .texts
            .iter()
            .filter(|t| t.y > self.plot.bottom)
            .map(|t| (t.text.as_str(), t.x))
            .collect();
        labels.sort_by(|a, b| a.1.total_cmp(&b.1));
        labels
    }

    fn x_label_texts(&self) -> Vec<&str> {
        self.x_labels().into_iter().map(|l| l.0).collect()
    }

    /// Texts right of the plot, top to bottom.
    fn legend(&self) -> Vec<&str> {
        let mut entries: Vec<&Text> = self
            .texts
            .iter()
            .filter(|t| t.x > self.plot.right)
            .collect();
        entries.sort_by(|a, b| a.y.total_cmp(&b.y));
        entries.into_iter().map(|t| t.text.as_str()).collect()
    }

    fn title(&self) -> &str {
        let top = self
            .texts
            .iter()
            .min_by(|a, b| a.y.total_cmp(&b.y))
            .unwrap();
        assert!(top.y < self.plot.top);
        &top.text
    }
}

fn centre(b: &Box_) -> f64 {
    (b.left + b.right) / 2.0
}

#[test]
fn one_day_of_traffic_is_one_bar() {
    let svg = chart(&[scans(d(2026, 11, 22), "H83if", 3)], &[], "svg");
    let pic = parse_svg(&svg);
    assert_eq!(pic.title(), "Scans per day, 2026-11-22, access.log");
    let bars = pic.bars(PALETTE[0]);
    assert_eq!(bars.len(), 1);
    assert!(bars[0].right - bars[0].left >= 20.0 && bars[0].bottom - bars[0].top > 100.0);
    assert_eq!(pic.x_labels(), [("2026-11-22", centre(&bars[0]))]);
    assert_eq!(pic.legend(), ["H83if (3)"]);
    assert_eq!(pic.swatches(PALETTE[0]).len(), 1);
}

/// The SVG chart of one log `--by` a period, checked for its period labels
/// and title.
fn svg_with_axis(log: String, by: &str, labels: &[&str], title: &str) -> Picture {
    let pic = parse_svg(&chart(&[log], &["--by", by], "svg"));
    assert_eq!(pic.x_label_texts(), labels);
    assert_eq!(pic.title(), title);
    pic
}

#[test]
fn days_across_a_month_boundary_keep_quiet_days() {
    let log = log_of(&[
        (d(2026, 11, 29), "a", 2),
        (d(2026, 12, 2), "a", 1),
        (d(2026, 12, 2), "b", 1),
    ]);
    let pic = svg_with_axis(
        log,
        "day",
        &["2026-11-29", "2026-11-30", "2026-12-01", "2026-12-02"],
        "Scans per day, 2026-11-29 – 2026-12-02, access.log",
    );
    let (a, b) = (pic.bars(PALETTE[0]), pic.bars(PALETTE[1]));
    assert_eq!((a.len(), b.len()), (2, 1));
    let labels = pic.x_labels();
    assert_eq!(centre(&a[0]), labels[0].1);
    assert_eq!(centre(&a[1]), labels[3].1);
    // b sits on a in the last slot.
    assert_eq!(b[0].bottom, a[1].top);
    assert_eq!(pic.legend(), ["b (1)", "a (3)"]);
}

#[test]
fn weeks_across_iso_week_53() {
    let log = log_of(&[
        (d(2026, 12, 22), "k", 2),
        (d(2027, 1, 6), "k", 1),
        (d(2027, 1, 13), "k", 4),
    ]);
    let pic = svg_with_axis(
        log,
        "week",
        &["2026-W52", "2026-W53", "2027-W01", "2027-W02"],
        "Scans per week, 2026-12-21 – 2027-01-17, access.log",
    );
    let bars = pic.bars(PALETTE[0]);
    assert_eq!(bars.len(), 3);
    let labels = pic.x_labels();
    let centres: Vec<f64> = bars.iter().map(centre).collect();
    assert_eq!(centres, [labels[0].1, labels[2].1, labels[3].1]);
    // Heights are proportional to the counts 2, 1, 4 (to the pixel).
    let h: Vec<f64> = bars.iter().map(|b| b.bottom - b.top).collect();
    assert_eq!(h[2], pic.plot.bottom - pic.plot.top);
    assert!((h[0] - h[2] / 2.0).abs() <= 1.0, "{h:?}");
    assert!((h[1] - h[2] / 4.0).abs() <= 1.0, "{h:?}");
}

#[test]
fn months_across_a_year_with_a_quiet_month() {
    let older = scans(d(2026, 11, 10), "k", 2);
    let newer = scans(d(2027, 1, 31), "k", 5);
    let pic = parse_svg(&chart(&[newer, older], &["--by", "month"], "svg"));
    assert_eq!(pic.x_label_texts(), ["2026-11", "2026-12", "2027-01"]);
    assert_eq!(
        pic.title(),
        "Scans per month, 2026-11-01 – 2027-01-31, access.log + 1 more"
    );
    assert_eq!(pic.bars(PALETTE[0]).len(), 2);
}

#[test]
fn many_days_thin_labels_evenly_on_their_days() {
    let first = d(2026, 6, 3);
    let log: String = (0..200)
        .map(|i| scans(first + Days::new(i), "k", 1 + (i % 7) as u32))
        .collect();
    let pic = parse_svg(&chart(&[log], &[], "svg"));
    let bars = pic.bars(PALETTE[0]);
    assert_eq!(bars.len(), 200);
    let labels = pic.x_labels();
    assert!(labels.len() >= 4 && labels.len() <= 12, "{labels:?}");
    let mut days = Vec::new();
    for (text, x) in &labels {
        let day = bars
            .iter()
            .position(|b| b.left < *x && *x < b.right)
            .expect("a label under a bar");
        assert_eq!(*text, (first + Days::new(day as u64)).to_string());
        days.push(day);
    }
    let step = days[1] - days[0];
    assert!(days.windows(2).all(|w| w[1] - w[0] == step), "{days:?}");
    assert!(days[0] < step);
    // Thinned by weeks, so every label is a Monday.
    assert_eq!(step % 7, 0);
    assert!(labels.iter().all(|(t, _)| {
        use chrono::Datelike;
        t.parse::<NaiveDate>().unwrap().weekday() == chrono::Weekday::Mon
    }));
}

#[test]
fn top_keys_and_the_rest_each_have_a_colour_and_a_legend_entry() {
    let day = d(2026, 11, 20);
    let log: String = (1..=8)
        .map(|n| {
            scans(day, &format!("k{n}"), n * 2)
                + &scans(day.succ_opt().unwrap(), &format!("k{n}"), n)
        })
        .collect();
    let pic = parse_svg(&chart(&[log], &[], "svg"));
    assert_eq!(
        pic.legend(),
        [
            "other keys (18)",
            "k4 (12)",
            "k5 (15)",
            "k6 (18)",
            "k7 (21)",
            "k8 (24)"
        ]
    );
    for colour in PALETTE[..5].iter().chain([&OTHER_COLOUR]) {
        assert_eq!(pic.bars(*colour).len(), 2, "{colour:?}");
        assert_eq!(pic.swatches(*colour).len(), 1, "{colour:?}");
    }
    assert!(pic.bars(PALETTE[5]).is_empty());
}

#[test]
fn png_has_the_size_and_every_colour() {
    let day = d(2026, 11, 20);
    let log: String = (1..=7)
        .map(|n| {
            scans(day, &format!("k{n}"), 10 + n) + &scans(day + Days::new(3), &format!("k{n}"), 20)
        })
        .collect();
    let png = chart(&[log], &[], "png");
    let img = image::load_from_memory(&png).unwrap().to_rgb8();
    assert_eq!(img.dimensions(), (1000, 500));
    let count = |(r, g, b): Rgb| img.pixels().filter(|p| p.0 == [r, g, b]).count();
    // More than a 14 px legend swatch: bars are drawn in every colour.
    for colour in PALETTE[..5].iter().chain([&OTHER_COLOUR]) {
        assert!(count(*colour) > 400, "{colour:?}: {}", count(*colour));
    }
}

#[test]
fn no_time_series_option_means_days() {
    let svg = chart(&[scans(d(2026, 11, 22), "k", 1)], &["--by", "day"], "svg");
    let by_default = chart(&[scans(d(2026, 11, 22), "k", 1)], &[], "svg");
    assert_eq!(svg, by_default);
}
