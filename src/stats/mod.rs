//! `qrtag stats`: scan counts per short-URL key from access logs.
//!
//! Split so that the counting can be tested and benchmarked without files:
//! [`read`] turns files (plain or gzip) into lines, [`aggregate`] turns parsed lines
//! into an [`aggregate::Report`], [`output`] and [`chart`] render it.
//! What each counter means is documented in [`aggregate`].

pub mod aggregate;
pub mod args;
pub mod attribute;
pub mod breakdown;
pub mod chart;
pub mod dimensions;
pub mod export;
pub mod output;
pub mod read;

use std::fs::File;
use std::io::{BufRead, IsTerminal, Read, Write};
use std::path::Path;

use anyhow::{Context, bail};
use indicatif::{ProgressBar, ProgressStyle};

use crate::access_log::format::{LogTime, parse_line_bytes};
use crate::values::usage::UsageError;
use aggregate::{Aggregator, Filter, Period, Report};
pub use args::StatsArgs;
use attribute::LinkKeys;
use breakdown::{Breakdowns, Wanted};
use dimensions::place::GeoDb;
use dimensions::{Deriver, Dimension};
pub use output::Format;

/// Below this much input a progress bar would only flicker.
const PROGRESS_MIN_BYTES: u64 = 64 << 20;

/// Reads the logs named in `args` and writes the report to `out`; malformed lines
/// are summarised on stderr (and included in JSON output). Each line counts
/// under its path: [`run_with_links`] counts it under its link.
pub fn run(args: &StatsArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    run_with_links(args, Err(String::new()), out)
}

/// [`run`], counting each line under the link among `links` that answered
/// it ([`attribute`]); `Err(why)` when the links are not known, `why`
/// naming what was not there for the note said when a path under a
/// hierarchical key is then counted as a key of its own.
pub fn run_with_links(
    args: &StatsArgs,
    links: Result<LinkKeys, String>,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    if let (Some(since), Some(until)) = (args.since, args.until)
        && since > until
    {
        return Err(UsageError(format!(
            "--since ({}) is after --until ({}): nothing could match",
            since.format("%F %T"),
            until.format("%F %T")
        ))
        .into());
    }
    let period = args.period().map_err(UsageError)?;
    let (parser, geo) = dimension_inputs(args)?;
    let breakdowns = breakdowns(args, parser.clone(), geo.clone());
    let breakdown_chart = match (&args.chart, breakdowns.is_some()) {
        (Some(_), true) if period.is_some() => {
            return Err(UsageError(
                "--chart draws scans over time (--by day, week or month) or a breakdown, not both"
                    .to_owned(),
            )
            .into());
        }
        (Some(_), true) => {
            Some(chart::BreakdownChart::for_dimensions(&args.dimensions()).map_err(UsageError)?)
        }
        _ => None,
    };
    if args.format == Format::Csv && period.is_some() && breakdowns.is_some() {
        return Err(UsageError(
            "CSV holds one table: give --by a period (day, week, month) or breakdowns, not both, or use --format json".to_owned(),
        )
        .into());
    }
    let mut total_bytes = 0;
    let mut files = Vec::with_capacity(args.files.len());
    for path in &args.files {
        let meta = std::fs::metadata(path)
            .with_context(|| format!("cannot read log file {}", path.display()))?;
        if meta.is_dir() {
            bail!("log file {} is a directory", path.display());
        }
        if is_scan_index_checkpoint(path)
            .with_context(|| format!("cannot read log file {}", path.display()))?
        {
            eprintln!(
                "qrtag: note: skipping {}: the console's scan index checkpoint, not a log",
                path.display()
            );
            continue;
        }
        total_bytes += meta.len();
        files.push(path.clone());
    }

    let filter = Filter {
        key: args
            .key
            .as_deref()
            .map(|k| k.strip_prefix('/').unwrap_or(k).to_owned()),
        since: args.since.as_ref().map(LogTime::from_datetime),
        until: args.until.as_ref().map(LogTime::from_datetime),
        series: period
            .or((args.chart.is_some() && breakdown_chart.is_none()).then_some(Period::Day)),
    };
    let progress = progress_bar(total_bytes);
    let mut agg = Aggregator::new(filter);
    if let Some(b) = breakdowns {
        agg = agg.with_breakdowns(b);
    }
    if let Some(path) = &args.export {
        let parser = match parser {
            Some(p) => p,
            None => dimensions::device::Parser::new()?,
        };
        let places = geo.is_some();
        let deriver = Deriver::new(args.time_zone, Some(parser), geo);
        agg = agg.with_export(export::Exporter::create(path, deriver, places)?);
    }
    let no_links = match links {
        Ok(links) => {
            agg = agg.with_links(links);
            None
        }
        Err(why) => Some(why),
    };
    for path in &files {
        let before = agg.counts();
        read_file(path, &mut agg, &progress)?;
        let (lines, malformed) = agg.counts();
        let (lines, malformed) = (lines - before.0, malformed - before.1);
        if lines > 0 && malformed == lines {
            progress.finish_and_clear();
            bail!(
                "{} is not a qrtag access log: none of its {lines} lines is an access-log line",
                path.display()
            );
        }
    }
    progress.finish_and_clear();
    agg.finish_export()?;
    if let Some(seen) = agg.unknown_key() {
        let key = args.key.as_deref().unwrap_or_default();
        let key = key.strip_prefix('/').unwrap_or(key);
        let suggestions =
            crate::link::key_suggest::suggest(key, seen, crate::link::key_suggest::SUGGESTIONS);
        bail!(
            "no requests for key {key} in the logs read{}",
            crate::link::key_suggest::did_you_mean(&suggestions)
        );
    }
    if let Some(why) = no_links
        && agg.redirected_below_a_key()
    {
        eprintln!(
            "qrtag: note: {why}a path below a hierarchical key (docs/api/v1) counts as a key of its own; give --db (or the CouchDB options) to count it under its link"
        );
    }
    let report = agg.finish();

    report_malformed(&report);
    // A chart that cannot be drawn fails the run before any output.
    let stack = args
        .chart
        .as_ref()
        .filter(|_| breakdown_chart.is_none())
        .map(|_| chart::stack(&report))
        .transpose()?;
    // The chart is written even when standard output is closed early
    // (`| head`): a file asked for does not depend on who reads the rest.
    let written =
        output::write(&report, args.format, period.is_some(), out).and_then(|()| out.flush());
    if let (Some(path), Some(stack)) = (&args.chart, &stack) {
        chart::draw(stack, &files, path)?;
    }
    if let (Some(path), Some(which)) = (&args.chart, &breakdown_chart) {
        chart::draw_breakdown(which, &report, &files, path)?;
    }
    Ok(written?)
}

/// What the dimensions need, opened and checked before any log is read:
/// the uap-core rules (for a device breakdown or an export), the GeoIP
/// database (a missing or wrong one is a usage error, as an unknown `--by`
/// is).
fn dimension_inputs(
    args: &StatsArgs,
) -> anyhow::Result<(Option<dimensions::device::Parser>, Option<GeoDb>)> {
    let dims = args.dimensions();
    if let Some(d) = dims.iter().find(|d| d.is_place())
        && args.geoip_db.is_none()
    {
        return Err(UsageError(format!(
            "--by {d} needs --geoip-db FILE: a MaxMind-format database (GeoLite2 Country or City, DB-IP Lite)"
        ))
        .into());
    }
    let geo = match &args.geoip_db {
        Some(path) => Some(GeoDb::open(path).map_err(|e| UsageError(e.to_string()))?),
        None => None,
    };
    let parser = if dims.iter().any(|d| d.is_device()) || args.export.is_some() {
        Some(dimensions::device::Parser::new()?)
    } else {
        None
    };
    Ok((parser, geo))
}

/// The breakdowns `--by` asks for, if any.
fn breakdowns(
    args: &StatsArgs,
    parser: Option<dimensions::device::Parser>,
    geo: Option<GeoDb>,
) -> Option<Breakdowns> {
    let dims = args.dimensions();
    if dims.is_empty() {
        return None;
    }
    let heat_map = dims.contains(&Dimension::Hour) && dims.contains(&Dimension::Weekday);
    let deriver = Deriver::new(args.time_zone, parser, geo);
    let wanted = Wanted {
        dimensions: dims,
        bots: args.bots,
        time_zone: args.time_zone,
    };
    Some(Breakdowns::new(wanted, deriver, heat_map))
}

/// Whether `path` begins like a scan index checkpoint
/// ([`read::is_scan_index_checkpoint`]): one given among the
/// logs (an old one matching `access.log*`) is skipped, not a failure.
fn is_scan_index_checkpoint(path: &Path) -> std::io::Result<bool> {
    let mut head = Vec::with_capacity(8);
    File::open(path)?.take(8).read_to_end(&mut head)?;
    Ok(read::is_scan_index_checkpoint(&head))
}

/// Feeds every line of one file to `agg`.
pub fn read_file(path: &Path, agg: &mut Aggregator, progress: &ProgressBar) -> anyhow::Result<()> {
    let context = || format!("cannot read log file {}", path.display());
    let file = File::open(path).with_context(context)?;
    let mut reader = read::decompressing(progress.wrap_read(file)).with_context(context)?;
    feed(&mut *reader, path, agg).with_context(context)
}

/// Feeds every line from `reader` to `agg`; `file` names the source in reports of
/// malformed lines.
pub fn feed(reader: &mut dyn BufRead, file: &Path, agg: &mut Aggregator) -> std::io::Result<()> {
    read::for_each_line(reader, |number, line| match line {
        Ok(bytes) => match parse_line_bytes(bytes) {
            Ok(parsed) => agg.add(&parsed),
            Err(e) => agg.add_malformed(file, number, &e),
        },
        Err(e) => agg.add_malformed(file, number, &e),
    })
}

/// Shown only to a person watching a long run: on a terminal, for large input.
fn progress_bar(total_bytes: u64) -> ProgressBar {
    if total_bytes < PROGRESS_MIN_BYTES || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total_bytes);
    if let Ok(style) =
        ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} {bytes_per_sec} ETA {eta}")
    {
        bar.set_style(style);
    }
    bar
}

fn report_malformed(report: &Report) {
    if report.malformed == 0 {
        return;
    }
    let mut err = std::io::stderr().lock();
    let _ = writeln!(
        err,
        "warning: {} malformed line(s) skipped{}",
        report.malformed,
        if report.malformed > report.malformed_examples.len() as u64 {
            "; the first:"
        } else {
            ":"
        }
    );
    for m in &report.malformed_examples {
        let _ = writeln!(err, "  {}:{}: {}", m.file.display(), m.line, m.error);
    }
}
