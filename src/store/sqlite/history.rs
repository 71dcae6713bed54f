//! A link's history on the embedded store (issue 35): the `link_history`
//! table, one row an entry, written inside the transaction of the link's
//! own write, so a write that commits has its entry and one that rolls back
//! leaves none. The bound is kept there too: the rows before
//! [`first_kept`] are deleted by one range of the primary key, so a write
//! costs the same whether the link has one entry or a thousand.

use rusqlite::{Connection, OptionalExtension, params};

use crate::link::Document;
use crate::link::history::{self, Entry, first_kept};
use crate::values::timestamp::time_text;

/// Made with the other tables when a database is opened for writing (an
/// older database gains it then, with no history before that day).
pub(super) const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS link_history (
        key   TEXT NOT NULL,
        n     INTEGER NOT NULL,
        entry TEXT NOT NULL,
        PRIMARY KEY (key, n)
    ) WITHOUT ROWID;";

/// The live document of `key` before a write, as stored.
pub(super) fn before(c: &Connection, key: &str) -> rusqlite::Result<Option<String>> {
    c.prepare_cached("SELECT doc FROM links WHERE key = ?1 AND deleted = 0")?
        .query_row(params![key], |r| r.get(0))
        .optional()
}

/// Records the write of `after` to `key` that has just been made (in the
/// caller's transaction) over `before`: the entry the pure core decides on,
/// numbered after the link's last, and the oldest past the bound dropped.
pub(super) fn record(
    c: &Connection,
    key: &str,
    before: Option<&str>,
    after: &str,
) -> rusqlite::Result<()> {
    let parse = |json: &str| serde_json::from_str::<Document>(json).unwrap_or_default();
    let (before, after) = (before.map(parse), parse(after));
    let rev: i64 = c
        .prepare_cached("SELECT rev FROM links WHERE key = ?1")?
        .query_row(params![key], |r| r.get(0))?;
    let last: i64 = c
        .prepare_cached("SELECT COALESCE(MAX(n), 0) FROM link_history WHERE key = ?1")?
        .query_row(params![key], |r| r.get(0))?;
    let n = u64::try_from(last).unwrap_or(0) + 1;
    let now = time_text(chrono::Utc::now());
    let Some(entry) = history::entry(n, before.as_ref(), &after, Some(&rev.to_string()), &now)
    else {
        return Ok(());
    };
    let text = serde_json::to_string(&entry).unwrap_or_default();
    c.prepare_cached("INSERT INTO link_history (key, n, entry) VALUES (?1, ?2, ?3)")?
        .execute(params![key, n as i64, text])?;
    c.prepare_cached("DELETE FROM link_history WHERE key = ?1 AND n < ?2")?
        .execute(params![key, first_kept(n) as i64])?;
    Ok(())
}

/// `key`'s kept entries, oldest first; none for a database from before
/// the table (opened read-only, it has not been made yet). An entry that
/// does not parse is skipped: a newer qrtag may have written more.
pub(super) fn read(c: &Connection, key: &str) -> rusqlite::Result<Vec<Entry>> {
    let has_table: bool = c
        .prepare_cached(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'link_history'",
        )?
        .exists([])?;
    if !has_table {
        return Ok(vec![]);
    }
    let mut stmt = c.prepare_cached("SELECT entry FROM link_history WHERE key = ?1 ORDER BY n")?;
    let rows = stmt.query_map(params![key], |r| r.get::<_, String>(0))?;
    let mut entries = Vec::new();
    for row in rows {
        if let Ok(entry) = serde_json::from_str(&row?) {
            entries.push(entry);
        }
    }
    Ok(entries)
}
