//! The embedded store: one SQLite file in WAL mode.
//!
//! WAL lets the CLI write while a server process reads. Every write bumps a
//! global sequence number (deletions leave a tombstone so the sequence never
//! goes backwards); the server's follower polls for rows above the last
//! sequence it saw, which is how a `qrtag set` reaches a running server.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior, params};

use super::{Access, LinkStore, StoreError, Stored};
use crate::link::Document;
use crate::snapshot::{Change, LinkTable, Snapshot, TableBuilder};
use crate::values::api_key::{KeyId, KeyRecord};
use crate::values::link_key::LinkKey;
use serde_json::Value;

/// The `meta` names of API key records, and the bound just past them.
const API_KEY_META: &str = "api_key:";
const API_KEY_META_END: &str = "api_key;";

fn api_key_record(json: &str) -> Result<KeyRecord, StoreError> {
    serde_json::from_str(json)
        .map_err(|e| StoreError::Other(format!("a stored API key record is unreadable: {e}")))
}

/// How often the follower looks for new writes: an edit by another process
/// (the CLI, another server) is served within this plus the time to apply
/// it (about a millisecond at a million links), and a poll of an indexed
/// column that finds nothing costs microseconds. A write through this
/// process's own store wakes the follower at once instead ([`SqliteStore::wake`]).
pub const POLL_INTERVAL: Duration = Duration::from_millis(25);
const PAGE: i64 = 5000;
/// Rows per page of a full load.
const LOAD_PAGE: i64 = 20_000;

/// A page of rows as stored, packed into one string: two allocations a
/// page rather than two a row (a full load reads a million rows).
#[derive(Default)]
struct RawPage {
    text: String,
    /// Per row: where its key ends and its document ends in `text` (each
    /// starts where the one before ends), and whether it is deleted.
    rows: Vec<(usize, usize, bool)>,
}

impl RawPage {
    fn push(&mut self, key: &str, doc: &str, deleted: bool) {
        self.text.push_str(key);
        let key_end = self.text.len();
        self.text.push_str(doc);
        self.rows.push((key_end, self.text.len(), deleted));
    }

    fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Each row's key, document text and deleted flag, in order.
    fn iter(&self) -> impl Iterator<Item = (&str, &str, bool)> + '_ {
        let mut start = 0;
        self.rows.iter().map(move |&(key_end, doc_end, deleted)| {
            let row = (
                &self.text[start..key_end],
                &self.text[key_end..doc_end],
                deleted,
            );
            start = doc_end;
            row
        })
    }
}

#[derive(Clone)]
pub struct SqliteStore {
    path: PathBuf,
    conn: Arc<Mutex<Connection>>,
    /// Drawn when the file is created and kept in its `meta` table: tells
    /// this database from a copy of another one at the same path.
    db_id: String,
    /// Rung after each committed write through this store (and its clones),
    /// so the follower reads it now rather than at its next poll: a write
    /// answered by the server waits for that (read-your-writes).
    wake: Arc<tokio::sync::Notify>,
    /// Whether writes keep the link's history (issue 35); off only for a
    /// benchmark's baseline ([`SqliteStore::without_history`]).
    history: bool,
}

impl SqliteStore {
    /// Opens (creating if needed) the database file.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        Self::open_with(path, Access::Create)
    }

    /// Opens the database file as `access` allows: only [`Access::Create`]
    /// makes a missing file, and [`Access::Read`] never writes (so it works
    /// on a read-only mount or another user's file).
    pub fn open_with(path: &Path, access: Access) -> Result<Self, StoreError> {
        let err = |source| StoreError::Sqlite {
            path: path.display().to_string(),
            source,
        };
        if access != Access::Create && !path.try_exists().unwrap_or(true) {
            return Err(StoreError::NoDatabase(path.display().to_string()));
        }
        if access == Access::Read {
            let conn = open_read_only(path).map_err(err)?;
            if !has_links_table(&conn).map_err(err)? {
                return Err(StoreError::Other(format!(
                    "{} is not a finished qrtag database (no links table; an empty file \
                     is what a start cut short by a full disk leaves): any command that \
                     writes, such as qrtag serve, finishes it",
                    path.display()
                )));
            }
            // A database from before the identity was kept has none to read.
            let db_id = conn
                .query_row("SELECT value FROM meta WHERE name = 'db_id'", [], |r| {
                    r.get(0)
                })
                .unwrap_or_default();
            return Ok(Self::from_conn(path, conn, db_id));
        }
        if access == Access::Create {
            create_private(path)
                .map_err(|e| StoreError::Other(format!("{}: {e}", path.display())))?;
        }
        let flags = OpenFlags::default() - OpenFlags::SQLITE_OPEN_CREATE;
        let conn = Connection::open_with_flags(path, flags).map_err(err)?;
        conn.busy_timeout(Duration::from_secs(5)).map_err(err)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(err)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(err)?;
        // One transaction: a start that fails halfway (a full disk) leaves
        // no half-made schema, and the next writer makes it whole.
        let fresh_id = format!("{:032x}", rand::random::<u128>());
        conn.execute_batch(&format!(
            "BEGIN IMMEDIATE;
            CREATE TABLE IF NOT EXISTS links (
                key     TEXT PRIMARY KEY,
                doc     TEXT NOT NULL,
                rev     INTEGER NOT NULL,
                seq     INTEGER NOT NULL,
                deleted INTEGER NOT NULL DEFAULT 0
            );
            CREATE INDEX IF NOT EXISTS links_seq ON links(seq);
            CREATE TABLE IF NOT EXISTS meta (
                name  TEXT PRIMARY KEY,
                value TEXT NOT NULL
            );
            INSERT OR IGNORE INTO meta (name, value) VALUES ('db_id', '{fresh_id}');
            {history}
            COMMIT;",
            history = history::SCHEMA
        ))
        .map_err(err)?;
        // Issue 35: the audit log's table, append-only.
        conn.execute_batch(audit::SCHEMA).map_err(err)?;
        let db_id = conn
            .query_row("SELECT value FROM meta WHERE name = 'db_id'", [], |r| {
                r.get(0)
            })
            .map_err(err)?;
        // Issue 35 (i35-users): the accounts' tables, the old password moved.
        let mut conn = conn;
        users::prepare(&mut conn).map_err(err)?;
        Ok(Self::from_conn(path, conn, db_id))
    }

    fn from_conn(path: &Path, conn: Connection, db_id: String) -> Self {
        Self {
            path: path.to_owned(),
            conn: Arc::new(Mutex::new(conn)),
            db_id,
            wake: Arc::default(),
            history: true,
        }
    }

    /// This store with no history kept: what a repoint cost before issue
    /// 35, the baseline `benches/history.rs` measures the history against.
    /// Nothing else should use it, since such writes leave no entry.
    #[doc(hidden)]
    pub fn without_history(mut self) -> Self {
        self.history = false;
        self
    }

    /// A link's kept history entries, oldest first (issue 35).
    pub async fn history_entries(
        &self,
        key: &LinkKey,
    ) -> Result<Vec<crate::link::history::Entry>, StoreError> {
        let key = key.as_str().to_owned();
        let err = self.sql_err();
        self.with_conn(move |c| history::read(c, &key).map_err(err))
            .await
    }

    /// Tells the follower that a write has committed. A permit is kept when
    /// it is not waiting, so a write during its poll is read right after.
    fn wake(&self) {
        self.wake.notify_one();
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A value of the database's `meta` table (settings that belong with
    /// the links, such as the console password's hash).
    pub async fn meta(&self, name: &str) -> Result<Option<String>, StoreError> {
        let name = name.to_owned();
        let err = self.sql_err();
        self.with_conn(move |conn| {
            conn.query_row(
                "SELECT value FROM meta WHERE name = ?1",
                params![name],
                |r| r.get(0),
            )
            .optional()
            .map_err(err)
        })
        .await
    }

    pub async fn set_meta(&self, name: &str, value: &str) -> Result<(), StoreError> {
        let (name, value) = (name.to_owned(), value.to_owned());
        let err = self.sql_err();
        self.with_conn(move |conn| {
            conn.execute(
                "INSERT INTO meta (name, value) VALUES (?1, ?2)
                 ON CONFLICT(name) DO UPDATE SET value = excluded.value",
                params![name, value],
            )
            .map(|_| ())
            .map_err(err)
        })
        .await
    }

    /// Sets a `meta` value only if the name has none; whether it did. One
    /// statement, so of two processes setting it at once exactly one wins.
    pub async fn insert_meta(&self, name: &str, value: &str) -> Result<bool, StoreError> {
        let (name, value) = (name.to_owned(), value.to_owned());
        let err = self.sql_err();
        self.with_conn(move |conn| {
            conn.execute(
                "INSERT INTO meta (name, value) VALUES (?1, ?2) ON CONFLICT(name) DO NOTHING",
                params![name, value],
            )
            .map(|rows| rows == 1)
            .map_err(err)
        })
        .await
    }

    /// Runs `f` on the connection on the blocking pool, so no async worker
    /// waits on the disk.
    async fn with_conn<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let conn = Arc::clone(&self.conn);
        tokio::task::spawn_blocking(move || {
            let mut guard = conn
                .lock()
                .map_err(|_| StoreError::Other("database connection poisoned".into()))?;
            f(&mut guard)
        })
        .await
        .map_err(|e| StoreError::Other(format!("database task failed: {e}")))?
    }

    fn sql_err(&self) -> impl Fn(rusqlite::Error) -> StoreError + Send + 'static {
        let path = self.path.display().to_string();
        move |source| StoreError::Sqlite {
            path: path.clone(),
            source,
        }
    }

    /// Rows written after `since`, oldest first, at most one page, as
    /// changes: [`Self::rows_since`] with each document parsed.
    async fn changes_since(&self, since: i64) -> Result<(Vec<Change>, i64), StoreError> {
        let (rows, last) = self.rows_since(since, PAGE).await?;
        let changes = rows
            .iter()
            .map(|(key, doc, deleted)| {
                let key = key.to_owned();
                if deleted {
                    Change::Delete { key }
                } else {
                    // A row that is not a JSON object is shown as an empty
                    // document, which the snapshot reports as invalid.
                    let doc = serde_json::from_str(doc).unwrap_or_default();
                    Change::Upsert { key, doc }
                }
            })
            .collect();
        Ok((changes, last))
    }

    /// Runs one statement that must change exactly one row, in an immediate
    /// transaction (so concurrent writers queue on the lock rather than fail
    /// on upgrade). `missed` is the error when no row changed: a taken key, a
    /// stale revision or a missing link, depending on the statement.
    async fn write_one(
        &self,
        sql: &'static str,
        values: Vec<rusqlite::types::Value>,
        missed: impl FnOnce() -> StoreError + Send + 'static,
    ) -> Result<(), StoreError> {
        let err = self.sql_err();
        let written = self
            .with_conn(move |c| {
                let tx = c
                    .transaction_with_behavior(TransactionBehavior::Immediate)
                    .map_err(&err)?;
                let n = tx
                    .execute(sql, rusqlite::params_from_iter(values))
                    .map_err(&err)?;
                tx.commit().map_err(&err)?;
                if n == 0 {
                    return Err(missed());
                }
                Ok(())
            })
            .await;
        if written.is_ok() {
            self.wake();
        }
        written
    }

    /// [`Self::write_one`] for a write of the link document `json` to `key`,
    /// with its history entry recorded in the same transaction (issue 35).
    async fn write_recorded(
        &self,
        sql: &'static str,
        key: String,
        json: String,
        extra: Vec<rusqlite::types::Value>,
        missed: impl FnOnce() -> StoreError + Send + 'static,
    ) -> Result<(), StoreError> {
        let err = self.sql_err();
        let keep = self.history;
        let written = self
            .with_conn(move |c| {
                let tx = c
                    .transaction_with_behavior(TransactionBehavior::Immediate)
                    .map_err(&err)?;
                let before = if keep {
                    history::before(&tx, &key).map_err(&err)?
                } else {
                    None
                };
                let mut values: Vec<rusqlite::types::Value> =
                    vec![key.clone().into(), json.clone().into()];
                values.extend(extra);
                let n = tx
                    .execute(sql, rusqlite::params_from_iter(values))
                    .map_err(&err)?;
                if n == 0 {
                    return Err(missed());
                }
                if keep {
                    history::record(&tx, &key, before.as_deref(), &json).map_err(&err)?;
                }
                tx.commit().map_err(&err)?;
                Ok(())
            })
            .await;
        if written.is_ok() {
            self.wake();
        }
        written
    }

    /// Rows written after `since`, oldest first, at most `limit`, as
    /// stored: the document's JSON text unparsed, for a full load to judge
    /// without building each document ([`TableBuilder::push_json`]).
    async fn rows_since(&self, since: i64, limit: i64) -> Result<(RawPage, i64), StoreError> {
        let err = self.sql_err();
        self.with_conn(move |c| {
            let mut stmt = c
                .prepare_cached(
                    "SELECT key, doc, deleted, seq FROM links WHERE seq > ?1 ORDER BY seq LIMIT ?2",
                )
                .map_err(&err)?;
            let mut rows = stmt.query(params![since, limit]).map_err(&err)?;
            let mut page = RawPage::default();
            let mut last = since;
            while let Some(row) = rows.next().map_err(&err)? {
                // Read in place, not as a String each: a column that is
                // not text is an error, as reading it as a String was.
                let key = row.get_ref(0).map_err(&err)?;
                let doc = row.get_ref(1).map_err(&err)?;
                let (key, doc) = match (key.as_str(), doc.as_str()) {
                    (Ok(key), Ok(doc)) => (key, doc),
                    (Err(e), _) | (_, Err(e)) => {
                        return Err(err(rusqlite::Error::FromSqlConversionFailure(
                            0,
                            rusqlite::types::Type::Text,
                            Box::new(e),
                        )));
                    }
                };
                page.push(key, doc, row.get(2).map_err(&err)?);
                last = row.get(3).map_err(&err)?;
            }
            Ok((page, last))
        })
        .await
    }

    /// Every link, page by page into one table, retrying until it succeeds.
    /// The next page is read (on the blocking pool) while this one is
    /// judged, so a full load keeps both cores busy.
    async fn load_all(&self, snapshot: &Snapshot) -> LinkTable {
        let mut table = TableBuilder::default();
        let mut since = 0i64;
        let mut page = self.page_retrying(since, snapshot).await;
        while let (rows, last) = page
            && !rows.is_empty()
        {
            since = last;
            let parse = async {
                for (key, doc, deleted) in rows.iter() {
                    if deleted {
                        table.push_deleted(key);
                    } else if let Some(reason) = table.push_json(key, doc) {
                        tracing::warn!(id = %key, %reason, "skipping document that is not a valid link");
                    }
                }
            };
            (page, ()) = tokio::join!(self.page_retrying(since, snapshot), parse);
        }
        table.build(Some(Value::from(since)))
    }

    async fn page_retrying(&self, since: i64, snapshot: &Snapshot) -> (RawPage, i64) {
        loop {
            match self.rows_since(since, LOAD_PAGE).await {
                Ok(page) => return page,
                Err(e) => {
                    tracing::error!(error = %e, "loading links failed; retrying");
                    snapshot.set_problem(Some(e.to_string()));
                    tokio::time::sleep(POLL_INTERVAL * 40).await;
                }
            }
        }
    }

    /// Removes a link (the CLI has no delete command; tests and tools use it).
    pub async fn delete(&self, key: &LinkKey) -> Result<(), StoreError> {
        let key = key.as_str().to_owned();
        self.write_one(
            "UPDATE links SET deleted = 1, doc = '{}', rev = rev + 1,
                seq = (SELECT COALESCE(MAX(seq), 0) + 1 FROM links)
             WHERE key = ?1 AND deleted = 0",
            vec![key.clone().into()],
            move || StoreError::NotFound(key),
        )
        .await
    }
}

/// Bulk import and export: new code kept apart from the single writes.
mod audit;
mod bulk;
// Issue 35 (i35-users): accounts on the embedded store.
/// Issue 35: each link's history, written with its writes.
mod history;
pub mod users;

/// The `meta` row of the recorded public URL.
const PUBLIC_URL_META: &str = "public_url";

/// The `meta` row that holds a snapshot file's marker.
fn snapshot_meta_name(file: &str) -> String {
    format!("snapshot_mark:{file}")
}

/// A new document; a tombstone may be revived: its revision continues.
const CREATE: &str = "INSERT INTO links (key, doc, rev, seq, deleted)
     VALUES (?1, ?2, 1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM links), 0)
     ON CONFLICT(key) DO UPDATE SET doc = excluded.doc, rev = rev + 1,
        seq = excluded.seq, deleted = 0
     WHERE deleted = 1";

#[async_trait]
impl LinkStore for SqliteStore {
    async fn existing(&self, keys: &[LinkKey]) -> Result<Vec<bool>, StoreError> {
        self.bulk_existing(keys).await
    }

    async fn existing_all(&self, keys: &[LinkKey]) -> Result<Vec<bool>, StoreError> {
        super::existing_in_batches(self, keys).await
    }

    async fn get_all(&self, keys: &[LinkKey]) -> Result<Vec<Option<Stored>>, StoreError> {
        super::get_each(self, keys).await
    }

    /// One IMMEDIATE transaction at a time: SQLite has one writer.
    fn writes_in_flight(&self) -> usize {
        1
    }

    fn batch_size(&self) -> usize {
        bulk::BATCH
    }

    async fn write_batch(
        &self,
        docs: Vec<super::BulkDoc>,
        on_existing: super::OnExisting,
    ) -> Result<Vec<super::BulkOutcome>, StoreError> {
        self.bulk_write(docs, on_existing).await
    }

    async fn export(
        &self,
        pages: tokio::sync::mpsc::Sender<super::ExportPage>,
    ) -> Result<(), StoreError> {
        self.bulk_export(pages).await
    }

    async fn get(&self, key: &LinkKey) -> Result<Option<Stored>, StoreError> {
        let err = self.sql_err();
        let key = key.as_str().to_owned();
        self.with_conn(move |c| {
            let row: Option<(String, i64)> = c
                .query_row(
                    "SELECT doc, rev FROM links WHERE key = ?1 AND deleted = 0",
                    params![key],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()
                .map_err(&err)?;
            Ok(row.map(|(doc, rev)| Stored {
                doc: serde_json::from_str(&doc).unwrap_or_default(),
                rev: rev.to_string(),
            }))
        })
        .await
    }

    async fn create(&self, key: &LinkKey, doc: &Document) -> Result<(), StoreError> {
        let key = key.as_str().to_owned();
        let json = serde_json::Value::Object(doc.clone()).to_string();
        self.write_recorded(CREATE, key.clone(), json, vec![], move || {
            StoreError::Conflict(key)
        })
        .await
    }

    /// The parents' check and the write in one IMMEDIATE transaction, so
    /// no other writer comes between them.
    async fn create_below(
        &self,
        key: &LinkKey,
        doc: &Document,
        parents: &[LinkKey],
    ) -> Result<Vec<LinkKey>, StoreError> {
        let key = key.as_str().to_owned();
        let json = serde_json::Value::Object(doc.clone()).to_string();
        let parents = parents.to_vec();
        let err = self.sql_err();
        let keep = self.history;
        let written = self
            .with_conn(move |c| {
                let tx = c
                    .transaction_with_behavior(TransactionBehavior::Immediate)
                    .map_err(&err)?;
                let mut found = Vec::new();
                {
                    let mut exists = tx
                        .prepare_cached("SELECT 1 FROM links WHERE key = ?1 AND deleted = 0")
                        .map_err(&err)?;
                    for parent in parents {
                        if exists.exists(params![parent.as_str()]).map_err(&err)? {
                            found.push(parent);
                        }
                    }
                }
                if !found.is_empty() {
                    // Dropped: rolled back, nothing written.
                    return Ok(found);
                }
                let n = tx.execute(CREATE, params![key, json]).map_err(&err)?;
                if n == 0 {
                    return Err(StoreError::Conflict(key));
                }
                if keep {
                    // A create is over no live document (a revived row's
                    // old one was removed), so there is nothing before it.
                    history::record(&tx, &key, None, &json).map_err(&err)?;
                }
                tx.commit().map_err(&err)?;
                Ok(found)
            })
            .await;
        if written.as_ref().is_ok_and(Vec::is_empty) {
            self.wake();
        }
        written
    }

    async fn replace(&self, key: &LinkKey, doc: &Document, rev: &str) -> Result<(), StoreError> {
        let key = key.as_str().to_owned();
        let json = serde_json::Value::Object(doc.clone()).to_string();
        let rev: i64 = rev.parse().map_err(|_| StoreError::Conflict(key.clone()))?;
        self.write_recorded(
            "UPDATE links SET doc = ?2, rev = rev + 1,
                seq = (SELECT COALESCE(MAX(seq), 0) + 1 FROM links)
             WHERE key = ?1 AND rev = ?3 AND deleted = 0",
            key.clone(),
            json,
            vec![rev.into()],
            move || StoreError::Conflict(key),
        )
        .await
    }

    async fn list(&self) -> Result<Vec<(String, Document)>, StoreError> {
        let err = self.sql_err();
        self.with_conn(move |c| {
            let mut stmt = c
                .prepare("SELECT key, doc FROM links WHERE deleted = 0 ORDER BY key")
                .map_err(&err)?;
            let rows = stmt
                .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
                .map_err(&err)?;
            let mut out = Vec::new();
            for row in rows {
                let (key, doc) = row.map_err(&err)?;
                out.push((key, serde_json::from_str(&doc).unwrap_or_default()));
            }
            Ok(out)
        })
        .await
    }

    async fn keys(&self) -> Result<Vec<String>, StoreError> {
        let err = self.sql_err();
        self.with_conn(move |c| {
            let mut stmt = c
                .prepare("SELECT key FROM links WHERE deleted = 0")
                .map_err(&err)?;
            let rows = stmt
                .query_map([], |r| r.get::<_, String>(0))
                .map_err(&err)?;
            rows.collect::<Result<_, _>>().map_err(&err)
        })
        .await
    }

    async fn public_url(&self) -> Result<Option<String>, StoreError> {
        self.meta(PUBLIC_URL_META).await
    }

    async fn record_public_url(&self, url: &str, replace: bool) -> Result<bool, StoreError> {
        if replace {
            self.set_meta(PUBLIC_URL_META, url).await.map(|()| true)
        } else {
            self.insert_meta(PUBLIC_URL_META, url).await
        }
    }

    async fn history(&self, key: &LinkKey) -> Result<Vec<crate::link::history::Entry>, StoreError> {
        self.history_entries(key).await
    }

    /// In `meta` as `api_key:ID`, the record as JSON: beside the console
    /// password's hash, in the file only the server's account reads.
    async fn api_key(&self, id: &KeyId) -> Result<Option<KeyRecord>, StoreError> {
        self.meta(&format!("{API_KEY_META}{id}"))
            .await?
            .map(|json| api_key_record(&json))
            .transpose()
    }

    async fn api_keys(&self) -> Result<Vec<KeyRecord>, StoreError> {
        let err = self.sql_err();
        let rows: Vec<String> = self
            .with_conn(move |conn| {
                let mut stmt = conn
                    .prepare("SELECT value FROM meta WHERE name >= ?1 AND name < ?2 ORDER BY name")
                    .map_err(&err)?;
                let rows = stmt
                    .query_map(params![API_KEY_META, API_KEY_META_END], |r| r.get(0))
                    .map_err(&err)?;
                rows.collect::<Result<_, _>>().map_err(&err)
            })
            .await?;
        rows.iter().map(|json| api_key_record(json)).collect()
    }

    async fn put_api_key(&self, record: &KeyRecord) -> Result<(), StoreError> {
        let json = serde_json::to_string(record).map_err(|e| StoreError::Other(e.to_string()))?;
        self.set_meta(&format!("{API_KEY_META}{}", record.id), &json)
            .await
    }

    // Issue 35: the audit log, in its own table (`audit.rs`).
    async fn append_audit(
        &self,
        entry: &crate::values::audit::AuditEntry,
    ) -> Result<(), StoreError> {
        let entry = entry.clone();
        let err = self.sql_err();
        self.with_conn(move |conn| audit::append(conn, &entry).map_err(err))
            .await
    }

    async fn audit(
        &self,
        query: &crate::values::audit::AuditQuery,
    ) -> Result<Vec<crate::values::audit::AuditEntry>, StoreError> {
        let query = query.clone();
        let err = self.sql_err();
        let rows = self
            .with_conn(move |conn| audit::read(conn, &query).map_err(err))
            .await?;
        rows.iter()
            .map(|json| {
                crate::values::audit::AuditEntry::parse(json).map_err(|e| {
                    StoreError::Other(format!("a stored audit entry is unreadable: {e}"))
                })
            })
            .collect()
    }

    // Issue 35 (i35-users): the key's user in the `users` table.
    async fn key_owner(&self, name: &str) -> Result<super::KeyOwner, StoreError> {
        match self.account(name).await? {
            Some(account) => Ok(super::KeyOwner::Role(account.role)),
            None if self.has_users().await? => Ok(super::KeyOwner::Gone),
            None => Ok(super::KeyOwner::Unchecked),
        }
    }

    fn snapshot_identity(&self) -> String {
        format!("sqlite:{}", self.db_id)
    }

    /// A random value in `meta`, one per snapshot file: written before the
    /// file, so a copy of the database taken after it has the file's state
    /// or a later one, and a copy taken before it has another value.
    async fn mark_snapshot(
        &self,
        file: &str,
        _previous: Option<&str>,
    ) -> Result<Option<String>, StoreError> {
        let mark = format!("{:032x}", rand::random::<u128>());
        self.set_meta(&snapshot_meta_name(file), &mark).await?;
        Ok(Some(mark))
    }

    async fn snapshot_mark(&self, file: &str) -> Result<Option<String>, StoreError> {
        self.meta(&snapshot_meta_name(file)).await
    }

    async fn check_seq(&self, seq: &Value) -> Result<(), String> {
        let Some(seq) = seq.as_i64() else {
            return Err(format!("{seq} is not a sequence of this database"));
        };
        let err = self.sql_err();
        let max: i64 = self
            .with_conn(move |c| {
                c.query_row("SELECT COALESCE(MAX(seq), 0) FROM links", [], |r| r.get(0))
                    .map_err(&err)
            })
            .await
            .map_err(|e| e.to_string())?;
        if seq > max {
            return Err(format!(
                "it is at sequence {seq}, the database only at {max} (restored from a backup?)"
            ));
        }
        Ok(())
    }

    /// A local file is always there to be read: `serve` compares the
    /// marker before it starts.
    fn checks_mark_when_following(&self) -> bool {
        false
    }

    /// A file of another SQLite database is never this one's.
    fn same_data_as(&self, _named: &str) -> bool {
        false
    }

    fn cluster(&self) -> Option<Arc<super::ClusterStats>> {
        None
    }

    fn follow(
        self: Arc<Self>,
        snapshot: Arc<Snapshot>,
        resume: Option<super::Resume>,
    ) -> tokio::task::JoinHandle<()> {
        // The file's marker was compared at start (`checks_mark_when_following`
        // is false here): a local file is always there to be read.
        tokio::spawn(async move {
            let mut since = match resume.as_ref().and_then(|r| r.seq.as_i64()) {
                Some(since) => since,
                None => {
                    let table = self.load_all(&snapshot).await;
                    let since = table.seq().and_then(Value::as_i64).unwrap_or(0);
                    tracing::info!(
                        links = table.len(),
                        invalid = table.invalid_count(),
                        "links loaded"
                    );
                    snapshot.publish(table);
                    snapshot.mark_loaded();
                    since
                }
            };
            let mut tick = tokio::time::interval(POLL_INTERVAL);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    () = self.wake.notified() => {}
                }
                // Page after page until a short one, so catching up after a
                // restart from the snapshot file does not wait a tick a page.
                loop {
                    match self.changes_since(since).await {
                        Ok((changes, last)) => {
                            let full = changes.len() as i64 >= PAGE;
                            since = last;
                            snapshot.apply(changes, Some(Value::from(last)));
                            snapshot.set_problem(None);
                            if !full {
                                break;
                            }
                        }
                        Err(e) => {
                            // Redirects go on from the last good snapshot.
                            tracing::error!(error = %e, "polling the link database failed");
                            snapshot.set_problem(Some(e.to_string()));
                            break;
                        }
                    }
                }
            }
        })
    }
}

/// Makes the database file, if missing, readable by its owner only: it
/// holds the console password's hash and every link. SQLite gives its WAL
/// and shared-memory files the mode of the database file.
fn create_private(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

fn has_links_table(conn: &Connection) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'links'",
        [],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n > 0)
}

/// A read-only connection. A WAL database is read through its `-shm` file,
/// which SQLite creates when missing; where it cannot (a read-only directory
/// with no writer running), the file is opened as immutable, which is
/// exact there because nobody can be writing it.
fn open_read_only(path: &Path) -> rusqlite::Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(Duration::from_secs(5))?;
    let probe = conn.query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()));
    match probe {
        Err(rusqlite::Error::SqliteFailure(e, _))
            if matches!(
                e.code,
                rusqlite::ErrorCode::CannotOpen | rusqlite::ErrorCode::ReadOnly
            ) =>
        {
            let absolute = std::path::absolute(path)
                .map_err(|_| rusqlite::Error::InvalidPath(path.to_owned()))?;
            let mut uri = url::Url::from_file_path(&absolute)
                .map_err(|()| rusqlite::Error::InvalidPath(path.to_owned()))?;
            uri.set_query(Some("immutable=1"));
            Connection::open_with_flags(uri.as_str(), flags | OpenFlags::SQLITE_OPEN_URI)
        }
        Err(e) => Err(e),
        Ok(()) => Ok(conn),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::Link;
    use crate::values::destination::Destination;

    fn key(s: &str) -> LinkKey {
        LinkKey::parse(s).expect("valid key")
    }

    fn doc(url: &str) -> Document {
        Link::new_document(&Destination::parse(url).expect("valid url"), false)
    }

    #[tokio::test]
    async fn create_get_replace_with_revisions() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = SqliteStore::open(&dir.path().join("t.db")).expect("open");
        store
            .create(&key("abcde"), &doc("/a"))
            .await
            .expect("create");
        assert!(matches!(
            store.create(&key("abcde"), &doc("/b")).await,
            Err(StoreError::Conflict(_))
        ));
        let got = store
            .get(&key("abcde"))
            .await
            .expect("get")
            .expect("present");
        assert_eq!(got.doc, doc("/a"));
        store
            .replace(&key("abcde"), &doc("/c"), &got.rev)
            .await
            .expect("replace");
        assert!(
            matches!(
                store.replace(&key("abcde"), &doc("/d"), &got.rev).await,
                Err(StoreError::Conflict(_))
            ),
            "a stale revision must conflict"
        );
        let listed = store.list().await.expect("list");
        assert_eq!(listed, vec![("abcde".to_string(), doc("/c"))]);
        assert!(store.get(&key("zzzzz")).await.expect("get").is_none());
    }

    #[tokio::test]
    async fn changes_come_in_sequence_with_tombstones() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = SqliteStore::open(&dir.path().join("t.db")).expect("open");
        store.create(&key("a"), &doc("/a")).await.expect("create");
        store.create(&key("b"), &doc("/b")).await.expect("create");
        let (changes, s1) = store.changes_since(0).await.expect("changes");
        assert_eq!((changes.len(), s1), (2, 2));
        store.delete(&key("a")).await.expect("delete");
        let (changes, s2) = store.changes_since(s1).await.expect("changes");
        assert!(matches!(changes.as_slice(), [Change::Delete { key }] if key == "a"));
        assert_eq!(s2, 3);
        assert!(store.get(&key("a")).await.expect("get").is_none());
        store
            .create(&key("a"), &doc("/a2"))
            .await
            .expect("recreate after delete");
        assert_eq!(store.list().await.expect("list").len(), 2);
    }
}
