//! Bulk import and export on the embedded store.
//!
//! A batch is one IMMEDIATE transaction of prepared statements, written in
//! key order (random keys would otherwise land on a different index page at
//! every row: sorting took a million-link import from 15 s to 11). Sequence
//! numbers are the ones the single writes give, the largest so far plus one
//! at each write: the transaction holds the write lock, so counting on from
//! the maximum read at its start gives the same numbers, and a running
//! server's follower (`seq > last`) sees each batch whole when it commits.
//! An export reads everything in one read transaction, one snapshot however
//! long the export takes (WAL readers do not block writers).

use rusqlite::{TransactionBehavior, params};
use tokio::sync::mpsc::Sender;

use super::SqliteStore;
use crate::store::{BulkDoc, BulkOutcome, ExportPage, OnExisting, StoreError};
use crate::values::link_key::LinkKey;

/// Rows per write transaction: large enough that commits cost nothing next to
/// the rows, small enough that a `qrtag set` meanwhile waits milliseconds.
pub(super) const BATCH: usize = 10_000;
/// Documents per page handed to the export's writer.
const EXPORT_PAGE: usize = 1000;

/// Page cache for bulk work, in KiB (SQLite's default is 2 MiB). Keys arrive
/// in any order, so each write or lookup lands on a random page of the key
/// index; with the index in memory a million-link import is disk-bound no
/// more. Set only on the importing process's connection, and allocated as
/// pages are used.
const BULK_CACHE_KIB: i64 = 128 * 1024;

/// Creates, or revives a tombstone (its revision continues), as `create`
/// does; changes nothing when the key has a live document.
const CREATE: &str = "INSERT INTO links (key, doc, rev, seq, deleted) VALUES (?1, ?2, 1, ?3, 0)
     ON CONFLICT(key) DO UPDATE SET doc = excluded.doc, rev = rev + 1, seq = excluded.seq,
        deleted = 0
     WHERE deleted = 1";
/// Replaces a live document at whatever revision it has, as `replace` does.
const OVERWRITE: &str =
    "UPDATE links SET doc = ?2, rev = rev + 1, seq = ?3 WHERE key = ?1 AND deleted = 0";

impl SqliteStore {
    pub(super) async fn bulk_existing(&self, keys: &[LinkKey]) -> Result<Vec<bool>, StoreError> {
        let err = self.sql_err();
        let keys: Vec<String> = keys.iter().map(|k| k.as_str().to_owned()).collect();
        self.with_conn(move |c| {
            c.pragma_update(None, "cache_size", -BULK_CACHE_KIB)
                .map_err(&err)?;
            let tx = c.transaction().map_err(&err)?;
            // Looked up in key order, for the same reason batches are written so.
            let mut order: Vec<usize> = (0..keys.len()).collect();
            order.sort_unstable_by(|&a, &b| keys[a].cmp(&keys[b]));
            let mut found = vec![false; keys.len()];
            {
                let mut stmt = tx
                    .prepare_cached("SELECT 1 FROM links WHERE key = ?1 AND deleted = 0")
                    .map_err(&err)?;
                for i in order {
                    found[i] = stmt.exists(params![keys[i]]).map_err(&err)?;
                }
            }
            tx.commit().map_err(&err)?;
            Ok(found)
        })
        .await
    }

    pub(super) async fn bulk_write(
        &self,
        docs: Vec<BulkDoc>,
        on_existing: OnExisting,
    ) -> Result<Vec<BulkOutcome>, StoreError> {
        let err = self.sql_err();
        let keep = self.history;
        self.with_conn(move |c| {
            c.pragma_update(None, "cache_size", -BULK_CACHE_KIB)
                .map_err(&err)?;
            let tx = c
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(&err)?;
            let mut seq: i64 = tx
                .query_row("SELECT COALESCE(MAX(seq), 0) FROM links", [], |r| r.get(0))
                .map_err(&err)?;
            // Written in key order: neighbouring keys share index pages, so
            // a batch touches each page once. Outcomes go back in the order given.
            let mut order: Vec<usize> = (0..docs.len()).collect();
            order.sort_unstable_by(|&a, &b| docs[a].key().cmp(docs[b].key()));
            let mut outcomes = vec![BulkOutcome::Exists; docs.len()];
            {
                let mut create = tx.prepare_cached(CREATE).map_err(&err)?;
                let mut overwrite = tx.prepare_cached(OVERWRITE).map_err(&err)?;
                for i in order {
                    let doc = &docs[i];
                    let (key, json, next) = (doc.key().as_str(), doc.json(), seq + 1);
                    // Issue 35: what an overwrite replaces, for its entry.
                    let before = if keep && on_existing == OnExisting::Overwrite {
                        super::history::before(&tx, key).map_err(&err)?
                    } else {
                        None
                    };
                    let outcome = if on_existing == OnExisting::Overwrite
                        && overwrite.execute(params![key, json, next]).map_err(&err)? == 1
                    {
                        BulkOutcome::Updated
                    } else if create.execute(params![key, json, next]).map_err(&err)? == 1 {
                        BulkOutcome::Created
                    } else {
                        BulkOutcome::Exists
                    };
                    if outcome != BulkOutcome::Exists {
                        seq = next;
                        if keep {
                            let before = before
                                .as_deref()
                                .filter(|_| outcome == BulkOutcome::Updated);
                            super::history::record(&tx, key, before, json).map_err(&err)?;
                        }
                    }
                    outcomes[i] = outcome;
                }
            }
            tx.commit().map_err(&err)?;
            Ok(outcomes)
        })
        .await
        .inspect(|_| self.wake())
    }

    pub(super) async fn bulk_export(&self, pages: Sender<ExportPage>) -> Result<(), StoreError> {
        let err = self.sql_err();
        self.with_conn(move |c| {
            let tx = c.transaction().map_err(&err)?;
            {
                let mut stmt = tx
                    .prepare("SELECT key, doc FROM links WHERE deleted = 0 ORDER BY key")
                    .map_err(&err)?;
                let mut rows = stmt.query([]).map_err(&err)?;
                let mut page = Vec::with_capacity(EXPORT_PAGE);
                while let Some(row) = rows.next().map_err(&err)? {
                    let key: String = row.get(0).map_err(&err)?;
                    let doc: String = row.get(1).map_err(&err)?;
                    // A row that is not a JSON object is shown as an empty
                    // document, as everywhere else; import will refuse it.
                    page.push((key, serde_json::from_str(&doc).unwrap_or_default()));
                    if page.len() == EXPORT_PAGE {
                        let full = std::mem::replace(&mut page, Vec::with_capacity(EXPORT_PAGE));
                        pages.blocking_send(full).map_err(|_| stopped())?;
                    }
                }
                if !page.is_empty() {
                    pages.blocking_send(page).map_err(|_| stopped())?;
                }
            }
            tx.commit().map_err(&err)?;
            Ok(())
        })
        .await
    }
}

fn stopped() -> StoreError {
    StoreError::Other("the export was stopped before the end".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::Document;
    use crate::snapshot::Change;
    use crate::store::LinkStore;
    use serde_json::{Value, json};

    fn key(s: &str) -> LinkKey {
        LinkKey::parse(s).expect("valid key")
    }

    use crate::link::test_document as doc;

    fn bulk(k: &str, v: Value) -> BulkDoc {
        BulkDoc::new(key(k), doc(v))
    }

    async fn rows(store: &SqliteStore) -> Vec<(String, String, i64, i64, bool)> {
        let err = store.sql_err();
        store
            .with_conn(move |c| {
                let mut stmt = c
                    .prepare("SELECT key, doc, rev, seq, deleted FROM links ORDER BY seq")
                    .map_err(&err)?;
                let rows = stmt
                    .query_map([], |r| {
                        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
                    })
                    .map_err(&err)?
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(&err)?;
                Ok(rows)
            })
            .await
            .expect("rows")
    }

    async fn export_all(store: &SqliteStore) -> Vec<(String, Document)> {
        let (tx, mut rx) = tokio::sync::mpsc::channel(2);
        let (done, all) = tokio::join!(store.export(tx), async {
            let mut all = Vec::new();
            while let Some(page) = rx.recv().await {
                assert!(page.len() <= EXPORT_PAGE);
                all.extend(page);
            }
            all
        });
        done.expect("export");
        all
    }

    #[tokio::test]
    async fn batches_write_like_the_single_writes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = SqliteStore::open(&dir.path().join("t.db")).expect("open");
        store
            .create(&key("old"), &doc(json!({"url": "/old"})))
            .await
            .expect("create");
        store
            .create(&key("gone"), &doc(json!({"url": "/gone"})))
            .await
            .expect("create");
        store.delete(&key("gone")).await.expect("delete");
        assert_eq!(
            store
                .existing(&[key("old"), key("gone"), key("new")])
                .await
                .expect("existing"),
            [true, false, false]
        );

        let out = store
            .write_batch(
                vec![
                    bulk("new", json!({"url": "/new", "note": "n"})),
                    bulk("old", json!({"url": "/refused"})),
                    bulk("gone", json!({"url": "/revived"})),
                ],
                OnExisting::Refuse,
            )
            .await
            .expect("batch");
        assert_eq!(
            out,
            [
                BulkOutcome::Created,
                BulkOutcome::Exists,
                BulkOutcome::Created
            ]
        );
        let out = store
            .write_batch(
                vec![
                    bulk("old", json!({"url": "/over"})),
                    bulk("fresh", json!({"url": "/fresh"})),
                ],
                OnExisting::Overwrite,
            )
            .await
            .expect("batch");
        assert_eq!(out, [BulkOutcome::Updated, BulkOutcome::Created]);

        let rows = rows(&store).await;
        let got: Vec<(&str, &str, i64, i64, bool)> = rows
            .iter()
            .map(|(k, d, rev, seq, del)| (k.as_str(), d.as_str(), *rev, *seq, *del))
            .collect();
        // Before: old (seq 1), gone (2), gone's deletion (3).
        assert_eq!(
            got,
            [
                ("gone", r#"{"url":"/revived"}"#, 3, 4, false),
                ("new", r#"{"url":"/new","note":"n"}"#, 1, 5, false),
                ("fresh", r#"{"url":"/fresh"}"#, 1, 6, false),
                ("old", r#"{"url":"/over"}"#, 2, 7, false),
            ],
            "one sequence number more per write, in key order within a batch, none skipped for the refused one"
        );
        // The follower sees the batches as ordinary changes.
        let (changes, last) = store.changes_since(3).await.expect("changes");
        assert_eq!((changes.len(), last), (4, 7));
        assert!(changes.iter().all(|c| matches!(c, Change::Upsert { .. })));
    }

    #[tokio::test]
    async fn export_reads_live_documents_in_key_order_in_pages() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = SqliteStore::open(&dir.path().join("t.db")).expect("open");
        let docs: Vec<BulkDoc> = (0..2500)
            .rev()
            .map(|i| bulk(&format!("k{i:04}"), json!({"url": format!("/{i}"), "n": i})))
            .collect();
        store
            .write_batch(docs, OnExisting::Refuse)
            .await
            .expect("batch");
        store.delete(&key("k0001")).await.expect("delete");
        let all = export_all(&store).await;
        assert_eq!(all.len(), 2499);
        assert!(all.windows(2).all(|w| w[0].0 < w[1].0), "sorted by key");
        assert!(all.iter().all(|(k, _)| k != "k0001"), "no tombstones");
        assert_eq!(all[0], ("k0000".into(), doc(json!({"url": "/0", "n": 0}))));
    }

    #[tokio::test]
    async fn an_export_whose_reader_goes_away_stops() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = SqliteStore::open(&dir.path().join("t.db")).expect("open");
        let docs = (0..3000)
            .map(|i| bulk(&format!("k{i}"), json!({"url": "/"})))
            .collect();
        store
            .write_batch(docs, OnExisting::Refuse)
            .await
            .expect("batch");
        let (tx, rx) = tokio::sync::mpsc::channel(1);
        drop(rx);
        let err = store.export(tx).await.expect_err("nobody reads");
        assert!(err.to_string().contains("stopped"), "{err}");
    }
}
