//! `qrtag stats --load-into`: log files back-filled into `scans`, each
//! line with the identity the sink gives it (node, log, offset), so a
//! second load, or one over lines the sink sent, changes no count (see
//! [`super::schema`]). Rows go in batches of [`BATCH_ROWS`]; a batch that
//! fails stops the load with the count of lines sent, and running it
//! again sends them all again harmlessly.

use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

use super::client::{ClickHouseError, Client};
use super::row;
use super::rows::{LogSource, RowMaker};
use super::setup::{self, SetupError};
use crate::stats::attribute::LinkKeys;
use crate::stats::dimensions::place::GeoDb;
use crate::stats::read::{MAX_LINE, decompressing};

/// Rows a batch holds at most, as the issue asks of the sink too.
pub const BATCH_ROWS: usize = 10_000;

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    Setup(#[from] SetupError),
    #[error(transparent)]
    ClickHouse(#[from] ClickHouseError),
    #[error("{}: {cause}", .path.display())]
    File {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("the User-Agent rules: {0}")]
    Rules(String),
    #[error("sending to ClickHouse after {sent} rows: {cause}")]
    Batch { sent: u64, cause: ClickHouseError },
}

impl LoadError {
    /// The operator's input is at fault, not the moment.
    pub fn is_usage(&self) -> bool {
        match self {
            LoadError::Setup(e) => e.is_usage(),
            LoadError::ClickHouse(e) | LoadError::Batch { cause: e, .. } => e.is_refusal(),
            LoadError::File { .. } | LoadError::Rules(_) => false,
        }
    }
}

pub struct LoadSettings {
    /// The node whose log these are, as its `serve --node-name` (empty for
    /// a node without a name), so back-filled rows meet the sink's.
    pub node: String,
    /// The host of the domain whose logs these are (`--domain`, else the
    /// default domain's), as the sink writes it.
    pub domain: String,
    /// The store's links, for the link a path below a hierarchical key
    /// counts under; `None` counts every path under its own key.
    pub links: Option<LinkKeys>,
    pub geo: Option<GeoDb>,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct LoadReport {
    pub files: usize,
    pub rows: u64,
    /// Lines that are not access-log lines (or cut off), left out.
    pub skipped: u64,
    /// Closed days the load had rows of, rolled again (`super::rollup`) so
    /// the dashboard shows what it added.
    pub rolled: usize,
    /// Periods' windows built again after those rolls (`super::windows`),
    /// so the dashboard ranks the busiest links from one row a link.
    pub windows: usize,
}

/// Loads `files` into the URL's database, whose schema must be this
/// qrtag's.
pub async fn load(
    client: &Client,
    files: &[PathBuf],
    settings: LoadSettings,
) -> Result<LoadReport, LoadError> {
    setup::check_schema(client).await?;
    let links = settings.links;
    let domain = settings.domain.clone();
    let source = LogSource {
        domain: settings.domain,
        is_link: Box::new(move |key| links.as_ref().is_some_and(|l| l.contains(key))),
    };
    let mut rows = RowMaker::new(settings.node, settings.geo).map_err(LoadError::Rules)?;
    let mut report = LoadReport::default();
    let mut batch = Vec::new();
    let mut in_batch = 0usize;
    let mut days = std::collections::BTreeSet::new();
    for path in files {
        let file = std::fs::File::open(path).map_err(|cause| LoadError::File {
            path: path.clone(),
            cause,
        })?;
        let mut reader = decompressing(file).map_err(|cause| LoadError::File {
            path: path.clone(),
            cause,
        })?;
        report.files += 1;
        let mut log_id = None;
        let mut offset = 0u64;
        let mut buf = Vec::with_capacity(4096);
        loop {
            buf.clear();
            let n = read_line(&mut *reader, &mut buf, path)?;
            if n == 0 {
                break;
            }
            let at = offset;
            offset += n;
            if buf.last() != Some(&b'\n') {
                report.skipped += 1;
                continue;
            }
            let id = *log_id.get_or_insert_with(|| row::log_id(&buf));
            match rows.write(&mut batch, &source, id, at, &buf) {
                Some(day) => {
                    in_batch += 1;
                    days.insert(day);
                }
                None => report.skipped += 1,
            }
            if in_batch == BATCH_ROWS {
                send(client, &mut batch, &mut in_batch, &mut report).await?;
            }
        }
    }
    send(client, &mut batch, &mut in_batch, &mut report).await?;
    report.rolled = super::rollup::roll_loaded(client, &domain, &days, chrono::Utc::now()).await?;
    if report.rolled > 0 {
        // A year's window sums a row a link and day of it: the roller's
        // timeout, not a batch's.
        let long = Client::new(client.url().clone(), super::rollup::ROLL_TIMEOUT);
        report.windows = super::windows::build_due(&long, &domain, chrono::Utc::now())
            .await?
            .total();
    }
    Ok(report)
}

/// One line into `buf` (at most [`MAX_LINE`] bytes kept; a longer line is
/// read past and comes back without its `\n`): the bytes it took in the log.
fn read_line(r: &mut dyn BufRead, buf: &mut Vec<u8>, path: &Path) -> Result<u64, LoadError> {
    let io = |cause| LoadError::File {
        path: path.to_owned(),
        cause,
    };
    let n = Read::take(&mut *r, MAX_LINE as u64)
        .read_until(b'\n', buf)
        .map_err(io)? as u64;
    if n == MAX_LINE as u64 && buf.last() != Some(&b'\n') {
        let rest = r.skip_until(b'\n').map_err(io)? as u64;
        return Ok(n + rest);
    }
    Ok(n)
}

async fn send(
    client: &Client,
    batch: &mut Vec<u8>,
    in_batch: &mut usize,
    report: &mut LoadReport,
) -> Result<(), LoadError> {
    if *in_batch == 0 {
        return Ok(());
    }
    client
        .insert_json_rows("scans", std::mem::take(batch))
        .await
        .map_err(|cause| LoadError::Batch {
            sent: report.rows,
            cause,
        })?;
    report.rows += *in_batch as u64;
    *in_batch = 0;
    Ok(())
}
