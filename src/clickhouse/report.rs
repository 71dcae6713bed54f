//! `qrtag stats --scans-from` (issue 38): the report `qrtag stats` makes
//! of one domain's logs, made from ClickHouse instead, so it prints the
//! same (table, CSV, JSON) through [`crate::stats::output`].
//!
//! The per-key numbers, the total and the scans per day, week or month
//! come from `link_days`, whose days are UTC days: so `--since` and
//! `--until` are whole days here. The `--by` breakdowns need each
//! scanner's first appearance for new and returning (a scan is new when it
//! is its tracking ID's first line in the logs, any key, any time), which
//! no per-day aggregate keeps: they read `scans` (`FINAL`), one grouped
//! query and one join a dimension, the way `qrtag stats` reads every line.
//! Pure builders and parsers, with the reads on top.

use chrono::{DateTime, NaiveDate, NaiveTime, Utc};

use super::client::{ClickHouseError, Client};
use super::setup::{self, SetupError};
use super::shares::local_cell;
use super::sql::literal;
use super::sql::unescape;
use crate::access_log::format::LogTime;
use crate::stats::StatsArgs;
use crate::stats::aggregate::{KeyReport, KeyStats, Period, PeriodCount, Report, add_into};
use crate::stats::breakdown::{Breakdown, HeatMap, Row, order};
use crate::stats::dimensions::{Dimension, time};
use crate::stats::output::Format;

/// What a report from ClickHouse counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asked {
    pub domain: String,
    /// No leading `/`.
    pub key: Option<String>,
    /// UTC days, inclusive.
    pub since: Option<NaiveDate>,
    pub until: Option<NaiveDate>,
    pub period: Option<Period>,
    pub dimensions: Vec<Dimension>,
    pub time_zone: chrono_tz::Tz,
}

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(transparent)]
    Setup(#[from] SetupError),
    #[error(transparent)]
    ClickHouse(#[from] ClickHouseError),
    #[error("ClickHouse answered {0:?} where a report's row was asked for")]
    Unexpected(String),
    #[error("no requests for key {0} in ClickHouse")]
    NoKey(String),
}

impl ReportError {
    /// The operator's input is at fault (the URL, the user, the schema).
    pub fn is_usage(&self) -> bool {
        match self {
            ReportError::Setup(e) => e.is_usage(),
            ReportError::ClickHouse(e) => e.is_refusal(),
            ReportError::Unexpected(_) | ReportError::NoKey(_) => false,
        }
    }
}

/// The day of a `--since` at the start of a UTC day.
fn since_day(t: DateTime<Utc>) -> Result<NaiveDate, String> {
    if t.time() == NaiveTime::MIN {
        return Ok(t.date_naive());
    }
    Err(format!(
        "--since {}: ClickHouse keeps a link's numbers by UTC day; give a date (YYYY-MM-DD)",
        t.format("%F %T")
    ))
}

/// The day of an `--until` at the end of a UTC day (its last tenth of a
/// second or later: the log's times are tenths).
fn until_day(t: DateTime<Utc>) -> Result<NaiveDate, String> {
    let last_tenth = NaiveTime::from_hms_milli_opt(23, 59, 59, 900).unwrap_or(NaiveTime::MIN);
    if t.time() >= last_tenth {
        return Ok(t.date_naive());
    }
    Err(format!(
        "--until {}: ClickHouse keeps a link's numbers by UTC day; give a date (YYYY-MM-DD)",
        t.format("%F %T")
    ))
}

/// What `args` asks, or the one line that says which flag has no
/// ClickHouse counterpart (pure).
pub fn asked(args: &StatsArgs, domain: String) -> Result<Asked, String> {
    let refused = [
        (
            args.export.is_some(),
            "--export writes the lines read; with --scans-from there are none: export from the logs",
        ),
        (
            args.chart.is_some(),
            "--chart draws from the logs; with --scans-from use --format json and draw from it",
        ),
        (
            args.bots,
            "--bots: ClickHouse's breakdowns leave bots out; count them from the logs",
        ),
        (
            args.geoip_db.is_some(),
            "--geoip-db: with --scans-from the places are those the rows were sent with (serve's or --load-into's --geoip-db)",
        ),
        (
            args.dimensions().contains(&Dimension::Destination),
            "--by destination: with --scans-from, each link's destinations are on its console page and in GET /api/v1/links/KEY/scans; count them across links from the logs",
        ),
    ];
    if let Some((_, why)) = refused.iter().find(|(on, _)| *on) {
        return Err((*why).to_owned());
    }
    if let (Some(since), Some(until)) = (args.since, args.until)
        && since > until
    {
        return Err(format!(
            "--since ({}) is after --until ({}): nothing could match",
            since.format("%F %T"),
            until.format("%F %T")
        ));
    }
    let period = args.period()?;
    let dimensions = args.dimensions();
    if args.format == Format::Csv && period.is_some() && !dimensions.is_empty() {
        return Err("CSV holds one table: give --by a period (day, week, month) or breakdowns, not both, or use --format json".to_owned());
    }
    Ok(Asked {
        domain,
        key: args
            .key
            .as_deref()
            .map(|k| k.strip_prefix('/').unwrap_or(k).to_owned()),
        since: args.since.map(since_day).transpose()?,
        until: args.until.map(until_day).transpose()?,
        period,
        dimensions,
        time_zone: args.time_zone,
    })
}

/// The rows of `link_days` (or of `scans`) the report counts.
pub fn filter(a: &Asked) -> String {
    let mut out = format!("domain = {}", literal(&a.domain));
    if let Some(k) = &a.key {
        out.push_str(&format!(" AND link = {}", literal(k)));
    }
    if let Some(d) = a.since {
        out.push_str(&format!(" AND day >= '{d}'"));
    }
    if let Some(d) = a.until {
        out.push_str(&format!(" AND day <= '{d}'"));
    }
    out
}

const NUMBERS: &str = "uniqExactMerge(requests), uniqExactIfMerge(scans), \
    uniqExactIfMerge(scanners), uniqExactIfMerge(heads), uniqExactIfMerge(bots), \
    uniqExactIfMerge(not_found), uniqExactIfMerge(fallback), \
    minIfMerge(first_scan), maxIfMerge(last_scan)";

/// Each key's numbers.
pub fn keys_query(a: &Asked) -> String {
    format!(
        "SELECT link, {NUMBERS} FROM link_days WHERE {} GROUP BY link FORMAT TSV",
        filter(a)
    )
}

/// The scanners of all the keys reported together.
pub fn scanners_query(a: &Asked) -> String {
    format!(
        "SELECT uniqExactIfMerge(scanners) FROM link_days WHERE {} FORMAT TSV",
        filter(a)
    )
}

/// Every line of the domain's logs: what `qrtag stats` says it read.
pub fn lines_query(domain: &str) -> String {
    format!(
        "SELECT uniqExactMerge(requests) FROM link_days WHERE domain = {} FORMAT TSV",
        literal(domain)
    )
}

/// Each key's scans a day, for the series.
pub fn days_query(a: &Asked) -> String {
    format!(
        "SELECT link, day, uniqExactIfMerge(scans) FROM link_days WHERE {} \
         GROUP BY link, day FORMAT TSV",
        filter(a)
    )
}

/// A time as `link_days` keeps it (seconds × 10 + tenths), `None` for 0
/// (`minIf` of no scan).
fn log_time(v: u64) -> Option<LogTime> {
    if v == 0 {
        return None;
    }
    let secs = i64::try_from(v / 10).ok()?;
    let nanos = (v % 10) as u32 * 100_000_000;
    DateTime::from_timestamp(secs, nanos).map(|t| LogTime::from_datetime(&t))
}

fn fields<const N: usize>(line: &str) -> Result<[&str; N], ReportError> {
    let got: Vec<&str> = line.split('\t').collect();
    got.try_into()
        .map_err(|_| ReportError::Unexpected(line.to_owned()))
}

fn number(s: &str) -> Result<u64, ReportError> {
    s.trim()
        .parse()
        .map_err(|_| ReportError::Unexpected(s.to_owned()))
}

/// The answer of [`keys_query`] as (key, numbers).
pub fn parse_keys(text: &str) -> Result<Vec<(String, KeyStats)>, ReportError> {
    let mut out = Vec::new();
    for line in text.lines() {
        let [key, f @ ..] = fields::<10>(line)?;
        let n: Vec<u64> = f.iter().map(|s| number(s)).collect::<Result<_, _>>()?;
        out.push((
            unescape(key),
            KeyStats {
                requests: n[0],
                scans: n[1],
                unique_scanners: n[2],
                head: n[3],
                bot: n[4],
                not_found: n[5],
                fallback: n[6],
                first_scan: log_time(n[7]),
                last_scan: log_time(n[8]),
            },
        ));
    }
    Ok(out)
}

/// The answer of [`days_query`] as each key's periods with scans, in order.
pub fn parse_series(
    text: &str,
    period: Period,
) -> Result<std::collections::HashMap<String, Vec<PeriodCount>>, ReportError> {
    let mut by_key: std::collections::HashMap<String, std::collections::BTreeMap<u32, u64>> =
        Default::default();
    for line in text.lines() {
        let [key, day, scans] = fields::<3>(line)?;
        let day: NaiveDate = day
            .parse()
            .map_err(|_| ReportError::Unexpected(line.to_owned()))?;
        let scans = number(scans)?;
        if scans == 0 {
            continue;
        }
        let t = LogTime::from_datetime(&day.and_time(NaiveTime::MIN).and_utc());
        *by_key
            .entry(unescape(key))
            .or_default()
            .entry(period.code(t))
            .or_default() += scans;
    }
    Ok(by_key
        .into_iter()
        .map(|(key, codes)| {
            let series = codes
                .into_iter()
                .filter_map(|(code, scans)| {
                    Some(PeriodCount {
                        label: period.label(code),
                        start: period.start(code)?,
                        scans,
                    })
                })
                .collect();
            (key, series)
        })
        .collect())
}

/// The `scans` column (or expression) a dimension's values are in; the
/// hour and the weekday as the UTC day and quarter-hour, placed in the
/// time zone when read.
fn column(d: Dimension) -> &'static str {
    match d {
        Dimension::Device => "device",
        Dimension::Os => "os",
        Dimension::Browser => "browser",
        Dimension::Country => "country",
        Dimension::Region => "region",
        Dimension::City => "city",
        Dimension::Referrer => "referrer_host",
        Dimension::Hour | Dimension::Weekday | Dimension::Destination => {
            "concat(toString(day), ' ', toString(intDiv(toUInt32(time) % 86400, 900)))"
        }
    }
}

/// Scans and scans with a tracking ID per value of `d`.
pub fn values_query(a: &Asked, d: Dimension) -> String {
    format!(
        "SELECT {} AS v, count(), countIf(tracking != '') FROM scans FINAL \
         WHERE {} AND scan = 1 GROUP BY v FORMAT TSV",
        column(d),
        filter(a)
    )
}

/// New scanners per value of `d`: those whose first counted scan (whose
/// value it counts under) is their first line in the domain's logs.
pub fn new_query(a: &Asked, d: Dimension) -> String {
    let at = "toUInt64(time) * 10 + tenths";
    format!(
        "SELECT v, count() FROM (SELECT tracking, argMin({col}, {at}) AS v, \
         min({at}) AS first_counted FROM scans FINAL WHERE {f} AND scan = 1 AND tracking != '' \
         GROUP BY tracking) ANY INNER JOIN (SELECT tracking, min({at}) AS first_seen \
         FROM scans FINAL WHERE domain = {domain} AND tracking != '' GROUP BY tracking) \
         USING tracking WHERE first_counted <= first_seen GROUP BY v FORMAT TSV",
        col = column(d),
        f = filter(a),
        domain = literal(&a.domain)
    )
}

/// The value a row of `d` counts under: for the hour and the weekday, its
/// `day quarter` placed in `tz` (the heat map's cell too).
fn value_of(
    d: Dimension,
    raw: &str,
    tz: chrono_tz::Tz,
) -> Result<(String, Option<(usize, usize)>), ReportError> {
    if !d.is_cyclic() {
        return Ok((unescape(raw), None));
    }
    let bad = || ReportError::Unexpected(raw.to_owned());
    let (day, quarter) = raw.split_once(' ').ok_or_else(bad)?;
    let day: NaiveDate = day.parse().map_err(|_| bad())?;
    let quarter: u32 = quarter.parse().map_err(|_| bad())?;
    let (weekday, hour) = local_cell(day, quarter, tz).ok_or_else(bad)?;
    let name = match d {
        Dimension::Hour => time::hour_name(hour as u32),
        _ => Dimension::Weekday.cycle()[weekday].clone(),
    };
    Ok((name, Some((weekday, hour))))
}

/// One dimension's breakdown from the answers of [`values_query`] and
/// [`new_query`], and its heat map (for the hour and the weekday).
pub fn parse_breakdown(
    d: Dimension,
    values: &str,
    new: &str,
    tz: chrono_tz::Tz,
) -> Result<(Breakdown, HeatMap), ReportError> {
    let mut rows: Vec<Row> = Vec::new();
    let mut heat: HeatMap = [[0; 24]; 7];
    fn row(rows: &mut Vec<Row>, value: String) -> usize {
        match rows.iter().position(|r| r.value == value) {
            Some(i) => i,
            None => {
                rows.push(Row {
                    value,
                    ..Row::default()
                });
                rows.len() - 1
            }
        }
    }
    for line in values.lines() {
        let [raw, scans, with_id] = fields::<3>(line)?;
        let (value, cell) = value_of(d, raw, tz)?;
        let (scans, with_id) = (number(scans)?, number(with_id)?);
        if let Some((w, h)) = cell {
            heat[w][h] += scans;
        }
        let i = row(&mut rows, value);
        rows[i].scans += scans;
        rows[i].returning += with_id;
    }
    for line in new.lines() {
        let [raw, n] = fields::<2>(line)?;
        let (value, _) = value_of(d, raw, tz)?;
        let n = number(n)?;
        let i = row(&mut rows, value);
        rows[i].new += n;
    }
    for r in &mut rows {
        // Counted as scans with an ID so far: the new ones are not returning.
        r.returning = r.returning.saturating_sub(r.new);
    }
    order(d, &mut rows);
    Ok((
        Breakdown {
            dimension: d,
            rows,
            bots: false,
            time_zone: d.is_cyclic().then_some(tz),
        },
        heat,
    ))
}

async fn ask(client: &Client, sql: &str) -> Result<String, ReportError> {
    Ok(client.query(sql).await?)
}

/// The report of what `asked` asks, from the URL's database, whose schema
/// must be this qrtag's.
pub async fn report(client: &Client, a: &Asked) -> Result<Report, ReportError> {
    setup::check_schema(client).await?;
    let mut keys = parse_keys(&ask(client, &keys_query(a)).await?)?;
    if let Some(k) = a.key.as_ref().filter(|_| keys.is_empty()) {
        // A key of no row in the days asked answers zeros; of no row at
        // all, an error, as from logs.
        let any = ask(
            client,
            &format!(
                "SELECT count() FROM link_days WHERE domain = {} AND link = {} FORMAT TSV",
                literal(&a.domain),
                literal(k)
            ),
        )
        .await?;
        if number(&any)? == 0 {
            return Err(ReportError::NoKey(k.clone()));
        }
        keys.push((k.clone(), KeyStats::default()));
    }
    let mut series = match a.period {
        Some(p) => parse_series(&ask(client, &days_query(a)).await?, p)?,
        None => Default::default(),
    };
    let mut total = KeyStats::default();
    let mut reports: Vec<KeyReport> = keys
        .into_iter()
        .map(|(key, stats)| {
            add_into(&mut total, &stats);
            KeyReport {
                series: series.remove(&key).unwrap_or_default(),
                key,
                stats,
            }
        })
        .collect();
    reports.sort_by(|a, b| {
        b.stats
            .scans
            .cmp(&a.stats.scans)
            .then_with(|| a.key.cmp(&b.key))
    });
    total.unique_scanners = number(&ask(client, &scanners_query(a)).await?)?;
    let mut breakdowns = Vec::new();
    let mut heat_map = None;
    let both =
        a.dimensions.contains(&Dimension::Hour) && a.dimensions.contains(&Dimension::Weekday);
    for &d in &a.dimensions {
        let values = ask(client, &values_query(a, d)).await?;
        let new = ask(client, &new_query(a, d)).await?;
        let (b, heat) = parse_breakdown(d, &values, &new, a.time_zone)?;
        if both && d.is_cyclic() {
            heat_map = Some(heat);
        }
        breakdowns.push(b);
    }
    Ok(Report {
        lines_read: number(&ask(client, &lines_query(&a.domain)).await?)?,
        malformed: 0,
        malformed_examples: Vec::new(),
        series: a.period,
        total,
        keys: reports,
        breakdowns,
        heat_map,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(clap::Parser)]
    struct Cmd {
        #[command(flatten)]
        args: StatsArgs,
    }

    fn args(line: &[&str]) -> StatsArgs {
        let mut all = vec!["stats"];
        all.extend(line);
        Cmd::try_parse_from(all).expect("valid flags").args
    }

    #[test]
    fn a_flag_without_a_counterpart_is_one_line() {
        for (line, says) in [
            (&["--export", "x.csv"][..], "--export"),
            (&["--chart", "x.svg"], "--chart"),
            (&["--bots"], "--bots"),
            (&["--by", "destination"], "--by destination"),
            (&["--since", "2026-11-01 10:00:00"], "give a date"),
            (&["--until", "2026-11-01 10:00:00"], "give a date"),
            (
                &["--by", "day,device", "--format", "csv"],
                "CSV holds one table",
            ),
        ] {
            let err = asked(&args(line), "0x1f.ie".into()).unwrap_err();
            assert!(err.contains(says), "{line:?}: {err}");
            assert!(!err.contains('\n'));
        }
        let a = asked(
            &args(&[
                "--key",
                "/H83if",
                "--since",
                "2026-11-01",
                "--until",
                "2026-11-02",
                "--by",
                "week,os",
            ]),
            "0x1f.ie".into(),
        )
        .unwrap();
        assert_eq!(a.key.as_deref(), Some("H83if"));
        assert_eq!(a.since, NaiveDate::from_ymd_opt(2026, 11, 1));
        assert_eq!(a.until, NaiveDate::from_ymd_opt(2026, 11, 2));
        assert_eq!(a.period, Some(Period::Week));
        assert_eq!(a.dimensions, [Dimension::Os]);
        assert_eq!(
            filter(&a),
            "domain = '0x1f.ie' AND link = 'H83if' AND day >= '2026-11-01' AND day <= '2026-11-02'"
        );
    }

    #[test]
    fn keys_and_series_are_read_as_the_report_has_them() {
        let keys = parse_keys("H83if\t5\t3\t2\t1\t1\t0\t0\t17958600003\t17958600104\nnope1\t1\t0\t0\t0\t0\t1\t0\t0\t0\n").unwrap();
        assert_eq!(keys[0].0, "H83if");
        let s = keys[0].1;
        assert_eq!(
            (s.requests, s.scans, s.unique_scanners, s.head, s.bot),
            (5, 3, 2, 1, 1)
        );
        assert_eq!(s.first_scan.map(|t| t.tenths()), Some(3));
        assert_eq!(
            s.last_scan.map(|t| t.to_datetime().timestamp()),
            Some(1_795_860_010)
        );
        assert_eq!(keys[1].1.first_scan, None);
        assert!(parse_keys("H83if\t5\n").is_err());

        let series = parse_series(
            "a\t2026-11-23\t2\na\t2026-11-29\t1\na\t2026-11-30\t4\n",
            Period::Week,
        )
        .unwrap();
        let labels: Vec<(&str, u64)> = series["a"]
            .iter()
            .map(|p| (p.label.as_str(), p.scans))
            .collect();
        assert_eq!(labels, [("2026-W48", 3), ("2026-W49", 4)]);
    }

    #[test]
    fn a_breakdown_has_new_and_returning_and_hours_in_the_zone() {
        let (b, _) = parse_breakdown(
            Dimension::Device,
            "phone\t4\t3\ndesktop\t1\t0\n",
            "phone\t2\n",
            chrono_tz::UTC,
        )
        .unwrap();
        let rows: Vec<(&str, u64, u64, u64)> = b
            .rows
            .iter()
            .map(|r| (r.value.as_str(), r.scans, r.new, r.returning))
            .collect();
        assert_eq!(rows, [("phone", 4, 2, 1), ("desktop", 1, 0, 0)]);
        let (b, heat) = parse_breakdown(
            Dimension::Hour,
            "2026-11-28 40\t2\t1\n2026-11-28 41\t1\t0\n",
            "2026-11-28 40\t1\n",
            chrono_tz::Asia::Kolkata,
        )
        .unwrap();
        assert_eq!(b.rows.len(), 24, "every hour, in order");
        assert_eq!((b.rows[15].scans, b.rows[15].new), (3, 1));
        assert_eq!(heat[5][15], 3);
        assert!(parse_breakdown(Dimension::Hour, "x\t1\t1\n", "", chrono_tz::UTC).is_err());
    }
}
