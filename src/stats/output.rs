//! Rendering a [`Report`] as a table, CSV or JSON.

use std::io::{self, Write};

use serde::{Serialize, Serializer};

use super::aggregate::{KeyReport, KeyStats, PeriodCount, Report};
use super::breakdown::{Breakdown, HeatMap};
use super::dimensions::Dimension;
use crate::access_log::format::LogTime;

/// How `qrtag stats` writes its report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Table,
    Csv,
    Json,
}

/// `with_series` prints the per-period counts; without it, a series collected only
/// for the chart stays out of the output.
pub fn write(
    report: &Report,
    format: Format,
    with_series: bool,
    out: &mut dyn Write,
) -> io::Result<()> {
    match format {
        Format::Table => {
            table(report, with_series, out)?;
            breakdown_tables(report, out)
        }
        Format::Csv if !report.breakdowns.is_empty() => csv_breakdowns(report, out),
        Format::Csv if with_series => csv_series(report, out),
        Format::Csv => csv(report, out),
        Format::Json => {
            serde_json::to_writer_pretty(&mut *out, &json_report(report, with_series))?;
            writeln!(out)
        }
    }
}

/// RFC 3339 in UTC, to the tenth of a second the log records.
pub(super) fn rfc3339(t: LogTime) -> String {
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{}Z",
        t.year(),
        t.month(),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.tenths()
    )
}

fn human(t: Option<LogTime>) -> String {
    t.map_or_else(
        || "-".to_owned(),
        |t| rfc3339(t).replace('T', " ").replace('Z', ""),
    )
}

/// Quotes a CSV field when needed; log fields cannot hold line breaks, so only
/// commas and quotes matter.
pub(super) fn csv_field(s: &str) -> String {
    if s.contains([',', '"']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

/// `fallback` (issue 33) last, so existing columns keep their places.
const CSV_HEADER: &str =
    "key,scans,unique_scanners,first_scan,last_scan,head,bot,not_found,requests,fallback";

fn csv(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "{CSV_HEADER}")?;
    for k in &report.keys {
        let s = &k.stats;
        let time = |t: Option<LogTime>| t.map(rfc3339).unwrap_or_default();
        writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{}",
            csv_field(&k.key),
            s.scans,
            s.unique_scanners,
            time(s.first_scan),
            time(s.last_scan),
            s.head,
            s.bot,
            s.not_found,
            s.requests,
            s.fallback
        )?;
    }
    Ok(())
}

fn csv_series(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "key,period,period_start,scans")?;
    for k in &report.keys {
        let key = csv_field(&k.key);
        for p in &k.series {
            writeln!(out, "{key},{},{},{}", p.label, p.start, p.scans)?;
        }
    }
    Ok(())
}

fn csv_breakdowns(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "dimension,value,scans,new,returning")?;
    for b in &report.breakdowns {
        for r in &b.rows {
            writeln!(
                out,
                "{},{},{},{},{}",
                b.dimension,
                csv_field(&r.value),
                r.scans,
                r.new,
                r.returning
            )?;
        }
    }
    Ok(())
}

/// How wide a breakdown's value column is at most: referrers and browsers
/// can be long.
const VALUE_WIDTH: usize = 40;
/// A destination's: two variants of an A/B split often differ only at
/// the end of a long URL.
const DESTINATION_WIDTH: usize = 120;

fn breakdown_tables(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    for b in &report.breakdowns {
        writeln!(out, "\n{}:", super::breakdown::heading(b))?;
        let total: u64 = b.rows.iter().map(|r| r.scans).sum();
        let name = b.dimension.to_string().to_uppercase();
        let width = match b.dimension {
            Dimension::Destination => DESTINATION_WIDTH,
            _ => VALUE_WIDTH,
        };
        let values: Vec<String> = b.rows.iter().map(|r| cut(&r.value, width)).collect();
        let w = values
            .iter()
            .map(|v| v.chars().count())
            .chain([name.len()])
            .max()
            .unwrap_or(0);
        writeln!(
            out,
            "{name:<w$}  {:>8}  {:>6}  {:>8}  {:>9}",
            "SCANS", "SHARE", "NEW", "RETURNING"
        )?;
        for (r, value) in b.rows.iter().zip(&values) {
            writeln!(
                out,
                "{value:<w$}  {:>8}  {:>6}  {:>8}  {:>9}",
                r.scans,
                share(r.scans, total),
                r.new,
                r.returning
            )?;
        }
    }
    if let Some(heat) = &report.heat_map {
        let tz = report
            .breakdowns
            .iter()
            .find_map(|b| b.time_zone)
            .map_or_else(String::new, |tz| format!(" ({tz})"));
        writeln!(out, "\nScans by weekday and hour{tz}:")?;
        let mut header = format!("{:<9}", "");
        for hour in 0..24 {
            header.push_str(&format!(" {hour:>4}"));
        }
        writeln!(out, "{header}")?;
        for (day, counts) in Dimension::Weekday.cycle().iter().zip(heat.iter()) {
            let mut line = format!("{day:<9}");
            for c in counts {
                line.push_str(&format!(" {c:>4}"));
            }
            writeln!(out, "{line}")?;
        }
    }
    Ok(())
}

/// A value's share of the scans, to a tenth of a percent.
fn share(part: u64, total: u64) -> String {
    if total == 0 {
        return "-".to_owned();
    }
    format!("{:.1}%", part as f64 * 100.0 / total as f64)
}

/// The JSON report, serialized straight from the [`Report`] to the writer:
/// a key's object is written and gone before the next is made, so memory
/// follows the report, not a second copy of it as a JSON tree (300,000 keys
/// took 1.1 GB that way, issue 19). Field order is the output's.
#[derive(Serialize)]
struct JsonReport<'a> {
    lines_read: u64,
    malformed: JsonMalformed<'a>,
    period: Option<String>,
    total: JsonStats,
    keys: JsonKeys<'a>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    breakdowns: &'a [Breakdown],
    #[serde(skip_serializing_if = "Option::is_none")]
    hour_by_weekday: Option<JsonHeatMap<'a>>,
}

impl Serialize for Breakdown {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct JsonBreakdown<R: Serialize> {
            by: &'static str,
            bots: bool,
            #[serde(skip_serializing_if = "Option::is_none")]
            time_zone: Option<&'static str>,
            rows: R,
        }
        JsonBreakdown {
            by: self.dimension.name(),
            bots: self.bots,
            time_zone: self.time_zone.map(|tz| tz.name()),
            rows: RowsOf(&self.rows),
        }
        .serialize(serializer)
    }
}

/// Rows, each made as it is written.
struct RowsOf<'a>(&'a [super::breakdown::Row]);

impl Serialize for RowsOf<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct JsonRow<'a> {
            value: &'a str,
            scans: u64,
            new: u64,
            returning: u64,
        }
        serializer.collect_seq(self.0.iter().map(|r| JsonRow {
            value: &r.value,
            scans: r.scans,
            new: r.new,
            returning: r.returning,
        }))
    }
}

/// Scans per weekday (Monday first) and local hour.
#[derive(Serialize)]
struct JsonHeatMap<'a> {
    time_zone: Option<&'static str>,
    weekdays: Vec<String>,
    scans: &'a HeatMap,
}

#[derive(Serialize)]
struct JsonMalformed<'a> {
    count: u64,
    first: Vec<JsonMalformedLine<'a>>,
}

#[derive(Serialize)]
struct JsonMalformedLine<'a> {
    file: String,
    line: u64,
    error: &'a str,
}

#[derive(Serialize)]
struct JsonStats {
    scans: u64,
    unique_scanners: u64,
    first_scan: Option<String>,
    last_scan: Option<String>,
    head: u64,
    bot: u64,
    not_found: u64,
    requests: u64,
    /// Scans answered with the link's fallback (issue 33), not in `scans`.
    fallback: u64,
}

impl From<&KeyStats> for JsonStats {
    fn from(s: &KeyStats) -> Self {
        Self {
            scans: s.scans,
            unique_scanners: s.unique_scanners,
            first_scan: s.first_scan.map(rfc3339),
            last_scan: s.last_scan.map(rfc3339),
            head: s.head,
            bot: s.bot,
            not_found: s.not_found,
            requests: s.requests,
            fallback: s.fallback,
        }
    }
}

#[derive(Serialize)]
struct JsonKey<'a> {
    key: &'a str,
    #[serde(flatten)]
    stats: JsonStats,
    #[serde(skip_serializing_if = "Option::is_none")]
    series: Option<JsonSeries<'a>>,
}

#[derive(Serialize)]
struct JsonPeriod<'a> {
    period: &'a str,
    start: String,
    scans: u64,
}

/// A key's periods, each made as it is written.
struct JsonSeries<'a>(&'a [PeriodCount]);

impl Serialize for JsonSeries<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|p| JsonPeriod {
            period: &p.label,
            start: p.start.to_string(),
            scans: p.scans,
        }))
    }
}

/// The keys, each made as it is written.
struct JsonKeys<'a> {
    keys: &'a [KeyReport],
    with_series: bool,
}

impl Serialize for JsonKeys<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.keys.iter().map(|k| JsonKey {
            key: &k.key,
            stats: JsonStats::from(&k.stats),
            series: self.with_series.then_some(JsonSeries(&k.series)),
        }))
    }
}

fn json_report(r: &Report, with_series: bool) -> JsonReport<'_> {
    JsonReport {
        lines_read: r.lines_read,
        malformed: JsonMalformed {
            count: r.malformed,
            first: r
                .malformed_examples
                .iter()
                .map(|m| JsonMalformedLine {
                    file: m.file.display().to_string(),
                    line: m.line,
                    error: &m.error,
                })
                .collect(),
        },
        period: if with_series {
            r.series.map(|p| p.to_string())
        } else {
            None
        },
        total: JsonStats::from(&r.total),
        keys: JsonKeys {
            keys: &r.keys,
            with_series,
        },
        breakdowns: &r.breakdowns,
        hour_by_weekday: r.heat_map.as_ref().map(|scans| JsonHeatMap {
            time_zone: r
                .breakdowns
                .iter()
                .find_map(|b| b.time_zone)
                .map(|tz| tz.name()),
            weekdays: Dimension::Weekday.cycle(),
            scans,
        }),
    }
}

/// Keys from probing clients can be arbitrarily long; the table shows their start.
const KEY_WIDTH: usize = 40;

fn short_key(key: &str) -> String {
    cut(key, KEY_WIDTH)
}

/// `s` in at most `width` characters, a cut one ending in `…`.
fn cut(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        s.to_owned()
    } else {
        let mut c: String = s.chars().take(width - 1).collect();
        c.push('…');
        c
    }
}

fn table(report: &Report, with_series: bool, out: &mut dyn Write) -> io::Result<()> {
    let header = [
        "KEY",
        "SCANS",
        "UNIQUE",
        "FIRST SCAN",
        "LAST SCAN",
        "HEAD",
        "BOTS",
        "404",
        "REQUESTS",
        "FALLBACK",
    ];
    let row = |key: String, s: &KeyStats| -> [String; 10] {
        [
            key,
            s.scans.to_string(),
            s.unique_scanners.to_string(),
            human(s.first_scan),
            human(s.last_scan),
            s.head.to_string(),
            s.bot.to_string(),
            s.not_found.to_string(),
            s.requests.to_string(),
            s.fallback.to_string(),
        ]
    };
    let mut rows: Vec<[String; 10]> = vec![header.map(str::to_owned)];
    rows.extend(report.keys.iter().map(|k| row(short_key(&k.key), &k.stats)));
    if report.keys.len() > 1 {
        rows.push(row("(all)".to_owned(), &report.total));
    }
    let mut widths = [0; 10];
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    for r in &rows {
        let mut line = String::new();
        for (i, (cell, w)) in r.iter().zip(widths).enumerate() {
            // Text columns to the left, counts to the right.
            if matches!(i, 0 | 3 | 4) {
                line.push_str(&format!("{cell:<w$}  "));
            } else {
                line.push_str(&format!("{cell:>w$}  "));
            }
        }
        writeln!(out, "{}", line.trim_end())?;
    }
    writeln!(
        out,
        "\n{} lines read, {} malformed",
        report.lines_read, report.malformed
    )?;

    if with_series && let Some(period) = report.series {
        writeln!(out, "\nScans per {period}:")?;
        let w = report
            .keys
            .iter()
            .map(|k| short_key(&k.key).chars().count())
            .max()
            .unwrap_or(3)
            .max(3);
        writeln!(
            out,
            "{:<w$}  {:<10}  {:>8}",
            "KEY",
            period.to_string().to_uppercase(),
            "SCANS"
        )?;
        for k in &report.keys {
            for p in &k.series {
                writeln!(
                    out,
                    "{:<w$}  {:<10}  {:>8}",
                    short_key(&k.key),
                    p.label,
                    p.scans
                )?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::stats::aggregate::{MalformedLine, Period, PeriodCount};
    use chrono::NaiveDate;
    use std::path::PathBuf;

    fn t(s: &str) -> Option<LogTime> {
        LogTime::parse(s)
    }

    fn report() -> Report {
        let a = KeyStats {
            scans: 3,
            unique_scanners: 2,
            first_scan: t("20261121100000.0"),
            last_scan: t("20261122090000.5"),
            head: 1,
            bot: 4,
            not_found: 0,
            requests: 8,
            fallback: 0,
        };
        let b = KeyStats {
            not_found: 2,
            requests: 2,
            ..KeyStats::default()
        };
        Report {
            lines_read: 11,
            malformed: 1,
            malformed_examples: vec![MalformedLine {
                file: PathBuf::from("a.log"),
                line: 7,
                error: "bad".into(),
            }],
            series: Some(Period::Day),
            total: KeyStats {
                not_found: 2,
                requests: 10,
                ..a
            },
            keys: vec![
                KeyReport {
                    key: "H83if".into(),
                    stats: a,
                    series: vec![
                        PeriodCount {
                            label: "2026-11-21".into(),
                            start: NaiveDate::from_ymd_opt(2026, 11, 21).unwrap(),
                            scans: 2,
                        },
                        PeriodCount {
                            label: "2026-11-22".into(),
                            start: NaiveDate::from_ymd_opt(2026, 11, 22).unwrap(),
                            scans: 1,
                        },
                    ],
                },
                KeyReport {
                    key: "a,\"b\"".into(),
                    stats: b,
                    series: vec![],
                },
            ],
            breakdowns: Vec::new(),
            heat_map: None,
        }
    }

    fn render(format: Format, with_series: bool) -> String {
        let mut out = Vec::new();
        write(&report(), format, with_series, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn csv_quotes_keys() {
        assert_eq!(
            render(Format::Csv, false),
            "key,scans,unique_scanners,first_scan,last_scan,head,bot,not_found,requests,fallback\n\
             H83if,3,2,2026-11-21T10:00:00.0Z,2026-11-22T09:00:00.5Z,1,4,0,8,0\n\
             \"a,\"\"b\"\"\",0,0,,,0,0,2,2,0\n"
        );
    }

    #[test]
    fn csv_series() {
        assert_eq!(
            render(Format::Csv, true),
            "key,period,period_start,scans\n\
             H83if,2026-11-21,2026-11-21,2\n\
             H83if,2026-11-22,2026-11-22,1\n"
        );
    }

    #[test]
    fn json_shape() {
        let v: Value = serde_json::from_str(&render(Format::Json, true)).unwrap();
        assert_eq!(v["lines_read"], 11);
        assert_eq!(v["malformed"]["count"], 1);
        assert_eq!(v["malformed"]["first"][0]["line"], 7);
        assert_eq!(v["period"], "day");
        assert_eq!(v["total"]["requests"], 10);
        assert_eq!(v["keys"][0]["key"], "H83if");
        assert_eq!(v["keys"][0]["first_scan"], "2026-11-21T10:00:00.0Z");
        assert_eq!(v["keys"][0]["series"][1]["scans"], 1);
        assert_eq!(v["keys"][1]["first_scan"], Value::Null);
        let v: Value = serde_json::from_str(&render(Format::Json, false)).unwrap();
        assert_eq!(v["period"], Value::Null);
        assert!(v["keys"][0].get("series").is_none());
    }

    #[test]
    fn table_aligns_and_totals() {
        let text = render(Format::Table, true);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("KEY    "), "{text}");
        assert!(lines[1].starts_with("H83if  "), "{text}");
        assert!(lines[1].contains("2026-11-21 10:00:00.0"), "{text}");
        assert!(lines[3].starts_with("(all)"), "{text}");
        assert_eq!(
            lines[0].find("SCANS").map(|i| i + 5),
            lines[1].find(" 3 ").map(|i| i + 2)
        );
        assert!(text.contains("11 lines read, 1 malformed"));
        assert!(text.contains("Scans per day:"));
        assert!(text.contains("H83if  2026-11-22         1"), "{text}");
        assert!(!render(Format::Table, false).contains("Scans per"));
    }

    #[test]
    fn long_keys_are_cut_in_tables() {
        assert_eq!(short_key(&"x".repeat(40)), "x".repeat(40));
        assert_eq!(short_key(&"x".repeat(41)).chars().count(), 40);
    }
}
