//! `qrtag stats --load-into`: log files back-filled into `scans`, each
//! line with the identity the sink gives it (node, log, offset), so a
//! second load, or one over lines the sink sent, changes no count (see
//! [`super::schema`]). Rows go in batches of [`BATCH_ROWS`]; a batch that
//! fails stops the load with the count of lines sent, and running it
//! again sends them all again harmlessly.

use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

use super::client::{ClickHouseError, Client};
use super::row::{self, Derived, Origin};
use super::schema::VERSION;
use super::setup::{self, SetupError};
use crate::access_log::format::parse_line_bytes;
use crate::stats::aggregate::{BotFilter, classify};
use crate::stats::attribute::LinkKeys;
use crate::stats::dimensions::place::GeoDb;
use crate::stats::dimensions::{Deriver, Dimension, device};
use crate::stats::read::{MAX_LINE, decompressing};

/// Rows a batch holds at most, as the issue asks of the sink too.
pub const BATCH_ROWS: usize = 10_000;

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    Setup(#[from] SetupError),
    #[error(transparent)]
    ClickHouse(#[from] ClickHouseError),
    #[error("database {db} has no qrtag schema (version {want}): run qrtag setup-clickhouse first")]
    NoSchema { db: String, want: u32 },
    #[error(
        "database {db} holds schema version {found}; this qrtag writes {want}: run this qrtag's setup-clickhouse"
    )]
    OtherVersion { db: String, found: u32, want: u32 },
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
            LoadError::NoSchema { .. } | LoadError::OtherVersion { .. } => true,
            LoadError::File { .. } | LoadError::Rules(_) => false,
        }
    }
}

pub struct LoadSettings {
    /// The node whose log these are, as its `serve --node-name` (empty for
    /// a node without a name), so back-filled rows meet the sink's.
    pub node: String,
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
}

/// Loads `files` into the URL's database, whose schema must be this
/// qrtag's.
pub async fn load(
    client: &Client,
    files: &[PathBuf],
    settings: LoadSettings,
) -> Result<LoadReport, LoadError> {
    let db = client.url().database.clone();
    match setup::read_version(client, &db).await? {
        None => return Err(LoadError::NoSchema { db, want: VERSION }),
        Some(found) if found != VERSION => {
            return Err(LoadError::OtherVersion {
                db,
                found,
                want: VERSION,
            });
        }
        Some(_) => {}
    }
    setup::check_existing(client, &db).await?;
    let parser = device::Parser::new().map_err(|e| LoadError::Rules(e.to_string()))?;
    let has_geo = settings.geo.is_some();
    let mut rows = Rows {
        deriver: Deriver::new(chrono_tz::UTC, Some(parser), settings.geo),
        bots: BotFilter::new(),
        node: settings.node,
        links: settings.links,
        has_geo,
        values: Default::default(),
    };
    let mut report = LoadReport::default();
    let mut batch = Vec::new();
    let mut in_batch = 0usize;
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
            if rows.write(&mut batch, id, at, &buf) {
                in_batch += 1;
            } else {
                report.skipped += 1;
            }
            if in_batch == BATCH_ROWS {
                send(client, &mut batch, &mut in_batch, &mut report).await?;
            }
        }
    }
    send(client, &mut batch, &mut in_batch, &mut report).await?;
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

/// What turns a line into a row, with the caches that make it cheap.
struct Rows {
    deriver: Deriver,
    bots: BotFilter,
    node: String,
    links: Option<LinkKeys>,
    has_geo: bool,
    values: [String; 7],
}

impl Rows {
    /// Appends `line`'s row; false for a line that is not an access-log line.
    fn write(&mut self, out: &mut Vec<u8>, log_id: u64, line_offset: u64, line: &[u8]) -> bool {
        let Ok(line) = parse_line_bytes(line) else {
            return false;
        };
        let counted = classify(&line, &mut self.bots);
        let dims = [
            Dimension::Device,
            Dimension::Os,
            Dimension::Browser,
            Dimension::Referrer,
            Dimension::Country,
            Dimension::Region,
            Dimension::City,
        ];
        for (dim, value) in dims.iter().zip(self.values.iter_mut()) {
            if dim.is_place() && !self.has_geo {
                value.clear();
                continue;
            }
            self.deriver.value(*dim, &line, counted.bot, value);
        }
        let link = match &self.links {
            Some(links) => links.link_key(line.key()),
            None => line.key(),
        };
        let [device, os, browser, referrer_host, country, region, city] = &self.values;
        let derived = Derived {
            link,
            scan: counted.scan,
            fallback_scan: counted.fallback,
            bot: counted.bot,
            device,
            os,
            browser,
            country,
            region,
            city,
            referrer_host,
        };
        let origin = Origin {
            node: &self.node,
            log_id,
            line_offset,
        };
        row::write_row(out, origin, &line, &derived);
        true
    }
}
