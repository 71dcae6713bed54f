//! Command-line options of `qrtag stats`.

use std::path::PathBuf;

use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, Utc};

use super::aggregate::Period;
use super::dimensions::Dimension;
use super::output::Format;

/// Scan counts per link key, from one or more access logs. The keys of the
/// links come from the store (`--db`, or CouchDB) when it exists, so a path
/// below a hierarchical key counts under that key.
#[derive(Debug, Clone, clap::Args)]
pub struct StatsArgs {
    /// Access log files, plain or gzip-compressed (detected from the content), in any order.
    /// Default: the service's access log (`access_log` in the configuration,
    /// or its `scan_logs` patterns) with its rotated files.
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,

    /// The log `serve` writes, read with its rotations when no FILE is
    /// given: the same key (`access_log`, `QRTAG_ACCESS_LOG`) as `serve`'s
    /// option, so the configuration file sets both. Hidden: FILE says it.
    #[arg(
        long,
        env = "QRTAG_ACCESS_LOG",
        value_name = "FILE",
        value_hint = clap::ValueHint::FilePath,
        hide = true
    )]
    pub access_log: Option<PathBuf>,

    /// The logs the console counts (`scan_logs`, `--scan-log` of `serve`),
    /// which no-FILE stats reads instead of the access log, as the console does.
    #[arg(
        long = "scan-log",
        env = "QRTAG_SCAN_LOGS",
        value_name = "PATTERN",
        value_delimiter = ',',
        hide = true
    )]
    pub scan_logs: Vec<String>,

    /// Report only this link key (e.g. `H83if`, or `docs` for every path
    /// below it); a key in no line of the logs, and no link, is an error.
    #[arg(long, value_name = "KEY")]
    pub key: Option<String>,

    /// Count only requests at or after this time: `YYYY-MM-DD` (UTC midnight),
    /// `YYYY-MM-DD HH:MM:SS[.s]` (UTC, as the report prints times) or RFC 3339.
    #[arg(long, value_name = "TIME", value_parser = parse_since)]
    pub since: Option<DateTime<Utc>>,

    /// Count only requests at or before this time: `YYYY-MM-DD` (through the end of
    /// that UTC day), `YYYY-MM-DD HH:MM:SS[.s]` (UTC) or RFC 3339.
    #[arg(long, value_name = "TIME", value_parser = parse_until)]
    pub until: Option<DateTime<Utc>>,

    /// Also report scans per key per day, ISO week or month, and/or break
    /// the scans down by device class, OS, browser, country, region, city
    /// (those three need --geoip-db), referrer host, hour or weekday (in
    /// --time-zone), or destination (the URL each scan was sent to; `~`
    /// before a fallback's). Repeat it or separate with commas: `--by
    /// week,device`.
    #[arg(long, value_enum, value_name = "WHAT", value_delimiter = ',')]
    pub by: Vec<By>,

    /// A MaxMind-format database (GeoLite2 Country or City, DB-IP Lite, any
    /// MMDB) to find each client address's country, region and city in.
    #[arg(long, value_name = "FILE")]
    pub geoip_db: Option<PathBuf>,

    /// Also write one row per request counted (time, key, status, method,
    /// scan, bot, scanner, device, OS, browser, with --geoip-db country,
    /// region and city, referrer) to FILE.parquet or FILE.csv.
    #[arg(long, value_name = "FILE", value_parser = parse_export_path)]
    pub export: Option<PathBuf>,

    /// Count bots' requests (GET answered by a redirect) in the --by
    /// breakdowns too, under a device class of their own.
    #[arg(long)]
    pub bots: bool,

    /// The time zone hours and weekdays are counted in: the global
    /// `--time-zone` (`--tz`), set by the command line's edge.
    #[arg(skip = chrono_tz::Tz::UTC)]
    pub time_zone: chrono_tz::Tz,

    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,

    /// Draw scans over time (per `--by` period, daily by default) to FILE.svg
    /// or FILE.png; with one `--by` breakdown its bars, with `--by
    /// hour,weekday` the hour × weekday heat map.
    #[arg(long, value_name = "FILE", value_parser = parse_chart_path)]
    pub chart: Option<PathBuf>,

    // Issue 38: the back-fill into ClickHouse.
    /// Send every line of the logs to ClickHouse's `scans` table instead
    /// of reporting (a database setup-clickhouse made):
    /// clickhouse://[USER[:PASSWORD]@]HOST[:PORT][/DATABASE]. Each line is
    /// known by node, log and offset, so loading a log again, or lines the
    /// server sent already, changes no count. Every line goes: the options
    /// that choose what a report counts are refused with it.
    #[arg(
        long,
        value_name = "URL",
        conflicts_with_all = ["by", "export", "chart", "key", "since", "until", "bots"]
    )]
    pub load_into: Option<String>,

    // Issue 38: the report from ClickHouse.
    /// Make the report from ClickHouse instead of logs (a database
    /// setup-clickhouse made, filled by serve --scans-to or --load-into):
    /// clickhouse://[USER[:PASSWORD]@]HOST[:PORT][/DATABASE]. The domain's
    /// rows (--domain, else the default domain), the same numbers as the
    /// logs give. --since and --until are whole UTC days; --export, --chart,
    /// --bots, --geoip-db and --by destination are refused.
    #[arg(long, value_name = "URL", conflicts_with_all = ["files", "load_into", "node_name"])]
    pub scans_from: Option<String>,

    /// With --load-into: the node whose logs these are, as its `serve
    /// --node-name` (none for a node without a name).
    #[arg(long, value_name = "NAME", requires = "load_into")]
    pub node_name: Option<crate::values::node_name::NodeName>,
}

/// What `--by` names: a period of the time series or a breakdown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum By {
    Period(Period),
    Dimension(Dimension),
}

const EVERY_BY: [By; 13] = [
    By::Period(Period::Day),
    By::Period(Period::Week),
    By::Period(Period::Month),
    By::Dimension(Dimension::ALL[0]),
    By::Dimension(Dimension::ALL[1]),
    By::Dimension(Dimension::ALL[2]),
    By::Dimension(Dimension::ALL[3]),
    By::Dimension(Dimension::ALL[4]),
    By::Dimension(Dimension::ALL[5]),
    By::Dimension(Dimension::ALL[6]),
    By::Dimension(Dimension::ALL[7]),
    By::Dimension(Dimension::ALL[8]),
    By::Dimension(Dimension::ALL[9]),
];

impl clap::ValueEnum for By {
    fn value_variants<'a>() -> &'a [Self] {
        &EVERY_BY
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(match self {
            By::Period(p) => p.to_string(),
            By::Dimension(d) => d.name().to_owned(),
        }))
    }
}

impl StatsArgs {
    /// The time series' period: at most one.
    pub fn period(&self) -> Result<Option<Period>, String> {
        let mut periods = self.by.iter().filter_map(|b| match b {
            By::Period(p) => Some(*p),
            By::Dimension(_) => None,
        });
        let first = periods.next();
        match periods.find(|p| Some(*p) != first) {
            Some(other) => Err(format!(
                "--by {} and --by {other}: give one period (day, week or month)",
                first.map_or_else(String::new, |p| p.to_string())
            )),
            None => Ok(first),
        }
    }

    /// The breakdowns asked for, each once, in the order given.
    pub fn dimensions(&self) -> Vec<Dimension> {
        let mut dims = Vec::new();
        for by in &self.by {
            if let By::Dimension(d) = by
                && !dims.contains(d)
            {
                dims.push(*d);
            }
        }
        dims
    }
}

/// A date alone means the start of that day, UTC.
pub fn parse_since(s: &str) -> Result<DateTime<Utc>, String> {
    parse_time(s, NaiveTime::MIN)
}

/// A date alone means the whole of that day, UTC, so `--until 2026-11-30` includes
/// the 30th.
pub fn parse_until(s: &str) -> Result<DateTime<Utc>, String> {
    let end_of_day =
        NaiveTime::from_hms_nano_opt(23, 59, 59, 999_999_999).unwrap_or(NaiveTime::MIN);
    parse_time(s, end_of_day)
}

fn parse_time(s: &str, time_of_day: NaiveTime) -> Result<DateTime<Utc>, String> {
    if let Ok(date) = NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        return Ok(date.and_time(time_of_day).and_utc());
    }
    // The report's own times (`2026-11-23 20:07:48.4`), and the same with a
    // `T`, are UTC.
    for format in ["%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M:%S%.f"] {
        if let Ok(t) = NaiveDateTime::parse_from_str(s, format) {
            return Ok(t.and_utc());
        }
    }
    DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|_| {
            format!("`{s}` is not YYYY-MM-DD, YYYY-MM-DD HH:MM:SS (UTC) or an RFC 3339 time")
        })
}

/// The export's format comes from its extension, checked before any log is read.
fn parse_export_path(s: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(s);
    super::export::ExportKind::from_path(&path)?;
    Ok(path)
}

/// The chart's format comes from its extension: checked with the other
/// arguments, so a typo is a usage error before any log is read.
fn parse_chart_path(s: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(s);
    super::chart::ChartKind::from_path(&path).map_err(|e| e.to_string())?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        stats: StatsArgs,
    }

    #[test]
    fn dates_cover_whole_days() {
        assert_eq!(
            parse_since("2026-11-21").unwrap().to_rfc3339(),
            "2026-11-21T00:00:00+00:00"
        );
        assert_eq!(
            parse_until("2026-11-21").unwrap().to_rfc3339(),
            "2026-11-21T23:59:59.999999999+00:00"
        );
        assert_eq!(
            parse_since("2026-11-21T15:30:00+01:00")
                .unwrap()
                .to_rfc3339(),
            "2026-11-21T14:30:00+00:00"
        );
        // The report prints times so; they are read back as UTC.
        for printed in [
            "2026-11-23 20:07:48.4",
            "2026-11-23T20:07:48.4",
            "2026-11-23 20:07:48",
        ] {
            assert_eq!(
                parse_until(printed).map(|t| t.format("%F %T").to_string()),
                Ok("2026-11-23 20:07:48".to_owned()),
                "{printed}"
            );
        }
        assert!(parse_since("21/11/2026").is_err());
        assert!(parse_until("2026-11-31").is_err());
    }

    #[test]
    fn options_parse() {
        let cli = Cli::try_parse_from([
            "stats",
            "a.log",
            "b.log.gz",
            "--key",
            "H83if",
            "--since",
            "2026-11-01",
            "--by",
            "week",
            "--format",
            "json",
            "--chart",
            "c.svg",
        ])
        .unwrap();
        let a = cli.stats;
        assert_eq!(a.files.len(), 2);
        assert_eq!(a.key.as_deref(), Some("H83if"));
        assert!(a.since.is_some() && a.until.is_none());
        assert_eq!(a.period(), Ok(Some(Period::Week)));
        assert!(a.dimensions().is_empty());
        let b = Cli::try_parse_from(["stats", "a.log", "--by", "week,device", "--by", "hour"])
            .unwrap()
            .stats;
        assert_eq!(b.period(), Ok(Some(Period::Week)));
        assert_eq!(b.dimensions(), [Dimension::Device, Dimension::Hour]);
        let c = Cli::try_parse_from(["stats", "a.log", "--by", "week", "--by", "day"])
            .unwrap()
            .stats;
        assert!(c.period().is_err());
        assert!(Cli::try_parse_from(["stats", "a.log", "--by", "planet"]).is_err());
        assert_eq!(a.format, Format::Json);
        // No FILE: the configured logs are read (`cli::stats`).
        assert!(
            Cli::try_parse_from(["stats"])
                .unwrap()
                .stats
                .files
                .is_empty()
        );
        assert_eq!(
            Cli::try_parse_from(["stats", "x"]).unwrap().stats.format,
            Format::Table
        );
    }
}
