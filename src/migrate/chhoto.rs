//! chhoto-url's SQLite file (`--from chhoto`), read-only, with each link's
//! hits as an imported total.
//!
//! Written against chhoto-url 7.5.0 (SinTan1729/chhoto-url at 82eb7a0),
//! `backend/src/database/`: table `urls` (`id`, `short_url`, `long_url`,
//! `hits`, `expiry_time`, `notes`), schema `user_version` 4. Older files
//! have fewer columns, read as they are: before 6.0.0 no `expiry_time`,
//! before 7.0.0 no `notes`; until migration 3 an `expiry_time` of 0 (not
//! NULL) meant "never" and an empty `notes` none. `expiry_time` is Unix
//! seconds; chhoto-url deletes an expired row at its next cleanup, so one
//! still in the file is imported inactive.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OpenFlags};

use super::source::{Sink, Source, SourceError, SourceLink};

/// One `urls` row as chhoto-url keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub short_url: String,
    pub long_url: String,
    pub hits: i64,
    pub expiry_time: Option<i64>,
    pub notes: Option<String>,
}

/// A row as [`SourceLink`]; `now` decides what has expired.
pub fn link(row: Row, now: DateTime<Utc>) -> SourceLink {
    let expires = row
        .expiry_time
        .filter(|&t| t > 0)
        .and_then(|t| DateTime::from_timestamp(t, 0));
    SourceLink {
        code: row.short_url,
        url: row.long_url,
        notes: row.notes.filter(|n| !n.trim().is_empty()),
        expires,
        inactive: expires.is_some_and(|e| e <= now),
        total_clicks: Some(u64::try_from(row.hits).unwrap_or(0)),
        ..SourceLink::default()
    }
}

/// Reads every row of `urls` in `path`, in the order they were made.
pub fn read_rows(
    path: &Path,
    each: &mut dyn FnMut(Row) -> Result<(), SourceError>,
) -> Result<(), SourceError> {
    let place = path.display().to_string();
    let sql = |e: rusqlite::Error| SourceError::Format {
        place: place.clone(),
        problem: format!("not a chhoto-url database ({e})"),
    };
    if !path.is_file() {
        return Err(SourceError::Io {
            path: place.clone(),
            error: std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
        });
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(sql)?;
    let mut columns = Vec::new();
    {
        let mut info = conn.prepare("PRAGMA table_info(urls)").map_err(sql)?;
        let mut rows = info.query([]).map_err(sql)?;
        while let Some(r) = rows.next().map_err(sql)? {
            columns.push(r.get::<_, String>(1).map_err(sql)?);
        }
    }
    for needed in ["short_url", "long_url"] {
        if !columns.iter().any(|c| c == needed) {
            return Err(SourceError::Format {
                place: place.clone(),
                problem: if columns.is_empty() {
                    "no urls table: not a chhoto-url database".into()
                } else {
                    format!("the urls table has no {needed} column: not a chhoto-url database")
                },
            });
        }
    }
    let has = |c: &str| columns.iter().any(|x| x == c);
    let select = format!(
        "SELECT short_url, long_url, {}, {}, {} FROM urls ORDER BY {}",
        if has("hits") { "hits" } else { "0" },
        if has("expiry_time") {
            "expiry_time"
        } else {
            "NULL"
        },
        if has("notes") { "notes" } else { "NULL" },
        if has("id") { "id" } else { "rowid" },
    );
    let mut statement = conn.prepare(&select).map_err(sql)?;
    let mut rows = statement.query([]).map_err(sql)?;
    while let Some(r) = rows.next().map_err(sql)? {
        each(Row {
            short_url: r.get(0).map_err(sql)?,
            long_url: r.get(1).map_err(sql)?,
            hits: r.get::<_, Option<i64>>(2).map_err(sql)?.unwrap_or(0),
            expiry_time: r.get(3).map_err(sql)?,
            notes: r.get(4).map_err(sql)?,
        })?;
    }
    Ok(())
}

/// The database file at `path` (chhoto-url's `db_url`, `urls.sqlite`).
pub struct ChhotoDb {
    path: PathBuf,
}

impl ChhotoDb {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }
}

#[async_trait::async_trait]
impl Source for ChhotoDb {
    fn name(&self) -> &'static str {
        "chhoto"
    }

    async fn read(&mut self, sink: &mut dyn Sink) -> Result<(), SourceError> {
        let now = Utc::now();
        read_rows(&self.path, &mut |row| sink.link(link(row, now)))
    }
}
