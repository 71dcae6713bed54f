//! `qrtag stats` at the command line: the links to count under, then the
//! counting ([`crate::stats`]).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::Cli;
use crate::scan_index::LogSources;
use crate::scan_index::follow::rotated_files;
use crate::stats::StatsArgs;
use crate::stats::attribute::LinkKeys;
use crate::store;
use crate::values::usage::UsageError;

pub async fn run(cli: &Cli, args: &StatsArgs) -> anyhow::Result<ExitCode> {
    if let Some(url) = &args.scans_from {
        return scans_from(cli, url, args).await;
    }
    let files = if args.files.is_empty() {
        // Issue 36: `--domain`'s own access log, as the configuration
        // file names it.
        match cli.domain_access_log() {
            Some(log) => configured_logs(&StatsArgs {
                access_log: Some(log),
                scan_logs: Vec::new(),
                ..args.clone()
            })?,
            None => configured_logs(args)?,
        }
    } else {
        args.files.clone()
    };
    let links = links(cli).await?;
    if let Some(url) = &args.load_into {
        let domain = super::clickhouse::domain_host(cli).await;
        return load_into(url, args, &files, links, domain).await;
    }
    let args = StatsArgs {
        time_zone: cli.time_zone,
        files,
        ..args.clone()
    };
    crate::stats::run_with_links(&args, links, &mut std::io::stdout().lock())?;
    Ok(ExitCode::SUCCESS)
}

/// The keys of the store's links, so that a path below a hierarchical key
/// counts under that key. Logs are often read where no database is (a
/// copy, another machine): a missing SQLite file is not an error, and
/// `Err` says what was not there.
async fn links(cli: &Cli) -> anyhow::Result<Result<LinkKeys, String>> {
    if let crate::store::options::StoreSettings::Sqlite { path } = cli.store_settings()?
        && !path.exists()
    {
        return Ok(Err(format!("no link database at {}: ", path.display())));
    }
    let store = cli.open_store(store::Access::Read)?;
    Ok(Ok(store.keys().await?.into_iter().collect()))
}

/// The logs a `qrtag stats` without FILE reads: those the console counts,
/// `scan_logs` (each live log a pattern matches, with its rotations, as the
/// scan index follows them), else the access log `serve` writes with its
/// rotations (`access.log.1`, `access.log.2.gz`, `access.log-20261124`).
/// Nothing configured, or no such file, is said in one line.
fn configured_logs(args: &StatsArgs) -> anyhow::Result<Vec<PathBuf>> {
    let (lives, named) = if !args.scan_logs.is_empty() {
        let sources = LogSources::parse(args.scan_logs.clone())
            .map_err(|e| UsageError(format!("scan_logs: {e}")))?;
        let expansion = sources
            .expand(&|| false)
            .map_err(|_| anyhow::anyhow!("the scan_logs patterns could not be matched"))?;
        (
            expansion.logs,
            format!("scan_logs {}", args.scan_logs.join(", ")),
        )
    } else {
        match args.access_log.as_deref() {
            Some(log) if log != Path::new("-") && !log.as_os_str().is_empty() => (
                vec![log.to_owned()],
                format!("access_log {}", log.display()),
            ),
            _ => {
                return Err(UsageError(
                    "no access log to read: give FILE..., or set access_log (or scan_logs) in the configuration file (qrtag.toml) or QRTAG_ACCESS_LOG"
                        .to_owned(),
                )
                .into());
            }
        }
    };
    let mut files = Vec::new();
    for live in &lives {
        let rotated = rotated_files(live).or_else(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Ok(Vec::new()),
            _ => Err(anyhow::Error::new(e)
                .context(format!("cannot list the rotations of {}", live.display()))),
        })?;
        files.extend(rotated);
        if live.exists() {
            files.push(live.clone());
        }
    }
    if files.is_empty() {
        anyhow::bail!("no log file found for {named}: give FILE...");
    }
    Ok(files)
}

/// `--load-into` (issue 38): the logs' lines into ClickHouse, what was
/// sent said in one line. A URL, credentials or schema at fault is a
/// usage error (exit 2).
async fn load_into(
    url: &str,
    args: &StatsArgs,
    files: &[PathBuf],
    links: Result<LinkKeys, String>,
    domain: String,
) -> anyhow::Result<ExitCode> {
    use crate::clickhouse::load::{self, LoadSettings};
    use crate::clickhouse::{ClickHouseUrl, Client};
    let url = ClickHouseUrl::parse(url).map_err(|e| UsageError(format!("--load-into: {e}")))?;
    let geo = match &args.geoip_db {
        Some(path) => Some(
            crate::stats::dimensions::place::GeoDb::open(path)
                .map_err(|e| UsageError(e.to_string()))?,
        ),
        None => None,
    };
    let settings = LoadSettings {
        node: args
            .node_name
            .as_ref()
            .map(|n| n.as_str().to_owned())
            .unwrap_or_default(),
        domain,
        links: links.ok(),
        geo,
    };
    let client = Client::new(url.clone(), std::time::Duration::from_secs(60));
    let report = match load::load(&client, files, settings).await {
        Ok(r) => r,
        Err(e) if e.is_usage() => return Err(UsageError(e.to_string()).into()),
        Err(e) => return Err(e.into()),
    };
    println!(
        "{} rows from {} file{} into {url}{}",
        report.rows,
        report.files,
        if report.files == 1 { "" } else { "s" },
        if report.skipped > 0 {
            format!(
                " ({} lines that are not access-log lines left out)",
                report.skipped
            )
        } else {
            String::new()
        }
    );
    if report.rolled > 0 {
        println!(
            "{} closed day{} rolled up again, so the dashboard counts what was added",
            report.rolled,
            if report.rolled == 1 { "" } else { "s" }
        );
    }
    if report.windows > 0 {
        println!(
            "{} period{} summed again, so the dashboard ranks the busiest links from them",
            report.windows,
            if report.windows == 1 { "" } else { "s" }
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `--scans-from` (issue 38): the report from ClickHouse, printed as one
/// from logs is. A flag without a ClickHouse counterpart, the URL, the
/// credentials or the schema at fault is a usage error (exit 2).
async fn scans_from(cli: &Cli, url: &str, args: &StatsArgs) -> anyhow::Result<ExitCode> {
    use crate::clickhouse::report::{self, ReportError};
    use crate::clickhouse::{ClickHouseUrl, Client};
    let url = ClickHouseUrl::parse(url).map_err(|e| UsageError(format!("--scans-from: {e}")))?;
    let args = StatsArgs {
        time_zone: cli.time_zone,
        ..args.clone()
    };
    let asked =
        report::asked(&args, super::clickhouse::domain_host(cli).await).map_err(UsageError)?;
    let client = Client::new(url, std::time::Duration::from_secs(60));
    let made = match report::report(&client, &asked).await {
        Ok(r) => r,
        Err(e) if e.is_usage() => return Err(UsageError(e.to_string()).into()),
        Err(e @ ReportError::NoKey(_)) => anyhow::bail!("{e}"),
        Err(e) => return Err(e.into()),
    };
    let mut out = std::io::stdout().lock();
    crate::stats::output::write(&made, args.format, asked.period.is_some(), &mut out)
        .and_then(|()| std::io::Write::flush(&mut out))?;
    Ok(ExitCode::SUCCESS)
}
