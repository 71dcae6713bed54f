//! The audit log on the embedded store (issue 35): a table of its own,
//! `audit`, one row an entry as its JSON line, keyed by the entry's ID
//! (which sorts by time). Append-only: qrtag only inserts, and triggers
//! refuse an `UPDATE` or `DELETE` from anyone, so a mistaken or hostile
//! statement through qrtag's connection cannot rewrite history either.
//!
//! Retention: kept forever. An entry is a few hundred bytes (a bulk
//! action's names at most [`MAX_KEYS_LISTED`] keys), so even a login a
//! minute for ten years is about a gigabyte less than that; a person who
//! must trim it does so with `sqlite3` after dropping the triggers, which
//! is their decision, not qrtag's.
//!
//! [`MAX_KEYS_LISTED`]: crate::values::audit::MAX_KEYS_LISTED

use rusqlite::{Connection, params};

use crate::values::audit::{AuditEntry, AuditQuery};

/// Made when a writer opens the file, in a transaction of its own.
pub(super) const SCHEMA: &str = "BEGIN IMMEDIATE;
    CREATE TABLE IF NOT EXISTS audit (
        id    TEXT PRIMARY KEY,
        entry TEXT NOT NULL
    );
    CREATE TRIGGER IF NOT EXISTS audit_no_update BEFORE UPDATE ON audit
    BEGIN SELECT RAISE(ABORT, 'the audit log is append-only: an entry is never changed'); END;
    CREATE TRIGGER IF NOT EXISTS audit_no_delete BEFORE DELETE ON audit
    BEGIN SELECT RAISE(ABORT, 'the audit log is append-only: an entry is never deleted'); END;
    COMMIT;";

pub(super) fn append(conn: &Connection, entry: &AuditEntry) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO audit (id, entry) VALUES (?1, ?2)",
        params![entry.id, entry.json_line()],
    )
    .map(|_| ())
}

/// The entries `query` asks for, newest first, as stored (JSON text). A
/// database from before the audit log (opened read-only, so the table
/// was never made) has none.
pub(super) fn read(conn: &Connection, query: &AuditQuery) -> rusqlite::Result<Vec<String>> {
    let has_table: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'audit')",
        [],
        |r| r.get(0),
    )?;
    if !has_table {
        return Ok(Vec::new());
    }
    let (lower, upper) = query.id_bounds();
    let mut stmt = conn.prepare(
        "SELECT entry FROM audit WHERE (?1 IS NULL OR id >= ?1) AND (?2 IS NULL OR id < ?2)
         ORDER BY id DESC LIMIT ?3",
    )?;
    let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
    let rows = stmt.query_map(params![lower, upper, limit], |r| r.get(0))?;
    rows.collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::LinkStore;
    use crate::store::sqlite::SqliteStore;
    use crate::values::actor::Actor;
    use crate::values::audit::{Event, Surface};

    #[tokio::test]
    async fn entries_are_appended_read_newest_first_and_never_changed() {
        let dir = tempfile::tempdir().expect("dir");
        let store = SqliteStore::open(&dir.path().join("links.db")).expect("open");
        let start = chrono::Utc::now();
        for n in 0..5u64 {
            let event = Event::LogoutEverywhere {
                user: "ann".into(),
                sessions: n,
            };
            let actor = Actor::Console { user: "ann".into() };
            assert!(crate::store::audit::record(&store, actor, Surface::Console, event).await);
        }
        let all = store
            .audit(&AuditQuery {
                limit: 10,
                ..AuditQuery::default()
            })
            .await
            .expect("read");
        let order: Vec<u64> = all
            .iter()
            .map(|e| match e.event {
                Event::LogoutEverywhere { sessions, .. } => sessions,
                _ => panic!("another event"),
            })
            .collect();
        assert_eq!(order, [4, 3, 2, 1, 0]);
        let page = store
            .audit(&AuditQuery {
                before: Some(all[1].id.clone()),
                limit: 2,
                since: Some(start),
            })
            .await
            .expect("page");
        assert_eq!(page, all[2..4]);
        let future = AuditQuery {
            since: Some(chrono::Utc::now() + chrono::Duration::seconds(5)),
            limit: 10,
            before: None,
        };
        assert!(store.audit(&future).await.expect("since").is_empty());

        // Not even a statement on qrtag's own connection changes the log.
        let conn = Connection::open(dir.path().join("links.db")).expect("open");
        for sql in [
            "UPDATE audit SET entry = '{}'",
            "DELETE FROM audit",
            "DELETE FROM audit WHERE id = (SELECT MIN(id) FROM audit)",
        ] {
            let e = conn.execute(sql, []).expect_err(sql);
            assert!(e.to_string().contains("append-only"), "{sql}: {e}");
        }
        let again = store
            .audit(&AuditQuery {
                limit: 10,
                ..AuditQuery::default()
            })
            .await
            .expect("read");
        assert_eq!(again, all);
    }

    #[tokio::test]
    async fn a_database_from_before_the_audit_log_reads_as_an_empty_log() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("old.db");
        let conn = Connection::open(&path).expect("create");
        conn.execute_batch(
            "CREATE TABLE links (key TEXT PRIMARY KEY, doc TEXT NOT NULL, rev INTEGER NOT NULL,
                seq INTEGER NOT NULL, deleted INTEGER NOT NULL DEFAULT 0);
             CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);",
        )
        .expect("old schema");
        drop(conn);
        let store = SqliteStore::open_with(&path, crate::store::Access::Read).expect("open");
        let q = AuditQuery {
            limit: 10,
            ..AuditQuery::default()
        };
        assert!(store.audit(&q).await.expect("read").is_empty());
    }
}
