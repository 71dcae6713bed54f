//! The follower's full load: every link in the database, read as fast as
//! CouchDB serves it.
//!
//! Reading `_all_docs` page after page keeps one request in flight, and the
//! server idle while each page is parsed: about 11,000 links/s on Apache
//! CouchDB 3.5, 90 s of 503s at a million links. Here the key space is cut
//! into ranges on the first character of the ID (keys are base-62 IDs and
//! slugs), [`IN_FLIGHT`] ranges are read at once, each as one streamed
//! `_all_docs?include_docs=true` split into rows as it arrives
//! ([`all_docs_rows`](super::all_docs_rows)), so no answer is ever held
//! whole, and the rows of every range go into one [`TableBuilder`].
//!
//! CouchDB orders `_all_docs` by the raw bytes of the IDs (PouchDB Server by
//! UTF-16 units, the same order for ASCII): with ASCII boundaries, every ID
//! falls in exactly one range, the first range open below and the last open
//! above (`_design/…`, `-`, `~` and non-ASCII IDs included).
//!
//! The guarantees of the paged read are kept: the database's `update_seq`
//! is read before any range, so the changes feed that follows from it
//! misses nothing written during the load (a change seen twice is
//! harmless); a document that is not a valid link is counted, not fatal;
//! every request has the head deadline, and a range that goes silent fails
//! the load, which the follower retries.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use reqwest::Method;
use reqwest::header::ACCEPT_ENCODING;
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinSet;

use super::StoreError;
use super::all_docs_rows::{Row, RowSplitter};
use super::couch::{CouchHttp, document_of, is_design, too_large};
use super::feed_lines::id_in_head;
use crate::settings::CouchSettings;
use crate::snapshot::{Change, LinkTable, TableBuilder};

/// Ranges read at once. Measured at 1M links on Apache CouchDB 3.5 on two
/// cores (`cargo bench --bench couch_load`): four keep the server busy;
/// more only add connections.
pub const IN_FLIGHT: usize = 4;
/// The first characters the ranges are cut at, in byte order.
const BOUNDARIES: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
/// A range silent for this long has failed (a frozen node, a cut network).
const IDLE_LIMIT: Duration = Duration::from_secs(30);
/// A row longer than this holds a document over the limit: counted as
/// invalid from its first bytes, and the rest is not kept.
const MAX_ROW: usize = super::MAX_DOCUMENT + 4096;
/// Links handed to the builder at a time.
const BATCH: usize = 1000;

/// IDs from `start` (inclusive) to `end` (exclusive); `None` is open.
#[derive(Debug, Clone, PartialEq, Eq)]
struct KeyRange {
    start: Option<String>,
    end: Option<String>,
}

/// The ranges that together hold every ID once, in order.
fn key_ranges() -> Vec<KeyRange> {
    let cuts: Vec<Option<String>> = BOUNDARIES
        .iter()
        .map(|&b| Some(char::from(b).to_string()))
        .collect();
    std::iter::once(None)
        .chain(cuts.clone())
        .zip(cuts.into_iter().chain(std::iter::once(None)))
        .map(|(start, end)| KeyRange { start, end })
        .collect()
}

/// Loads every link: the sequence first, then the ranges, [`IN_FLIGHT`] at a time.
pub(crate) async fn load(http: &CouchHttp) -> Result<LinkTable, StoreError> {
    let seq = update_seq(http).await?;
    let (tx, mut rx) = mpsc::channel::<Vec<Change>>(2 * IN_FLIGHT);
    let mut table = TableBuilder::default();
    let build = async {
        while let Some(batch) = rx.recv().await {
            for (key, reason) in table.apply(batch) {
                tracing::warn!(id = %key, %reason, "skipping document that is not a valid link");
            }
        }
    };
    let (read, ()) = tokio::join!(read_ranges(http, tx), build);
    read?;
    Ok(table.build(Some(seq)))
}

/// The same load as the paged read it replaced: `_all_docs` a page at a
/// time, for the benchmark's baseline.
async fn load_paged(http: &CouchHttp) -> Result<LinkTable, StoreError> {
    let seq = update_seq(http).await?;
    let mut table = TableBuilder::default();
    http.each_page(|docs| {
        table.apply(docs.into_iter().map(|(key, doc)| match doc {
            Ok(doc) => Change::Upsert {
                key,
                doc: document_of(doc),
            },
            Err(reason) => Change::Invalid { key, reason },
        }));
    })
    .await?;
    Ok(table.build(Some(seq)))
}

/// How a benchmark loads: the follower's way, or the paged read before it.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadWay {
    Ranges,
    Paged,
}

/// A full load of the database `settings` name, as the follower does it
/// (or the old way), for `benches/couch_load.rs`: (links, invalid).
#[doc(hidden)]
pub async fn bench_load(
    settings: &CouchSettings,
    way: LoadWay,
) -> Result<(usize, usize), StoreError> {
    let http = CouchHttp::new(settings)?;
    let table = match way {
        LoadWay::Ranges => load(&http).await?,
        LoadWay::Paged => load_paged(&http).await?,
    };
    Ok((table.len(), table.invalid_count()))
}

async fn update_seq(http: &CouchHttp) -> Result<Value, StoreError> {
    #[derive(Deserialize)]
    struct DbInfo {
        update_seq: Value,
    }
    let what = format!("database {}", http.db());
    let info: DbInfo = http
        .json(http.request(Method::GET, http.db_url(&[])), &what)
        .await?;
    Ok(info.update_seq)
}

/// Reads every range, at most [`IN_FLIGHT`] at once, sending their links to
/// `tx`. The first failure stops the others (their tasks are aborted).
async fn read_ranges(http: &CouchHttp, tx: mpsc::Sender<Vec<Change>>) -> Result<(), StoreError> {
    let permits = Arc::new(Semaphore::new(IN_FLIGHT));
    let mut tasks = JoinSet::new();
    for range in key_ranges() {
        let (http, tx, permits) = (http.clone(), tx.clone(), Arc::clone(&permits));
        tasks.spawn(async move {
            // The semaphore is never closed; a permit error cannot happen.
            let _permit = permits
                .acquire_owned()
                .await
                .map_err(|e| StoreError::Other(e.to_string()))?;
            read_range(&http, &range, &tx).await
        });
    }
    drop(tx);
    while let Some(done) = tasks.join_next().await {
        match done {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(e),
            Err(e) => return Err(StoreError::Other(format!("a load task failed: {e}"))),
        }
    }
    Ok(())
}

/// One range as one streamed `_all_docs`, its rows sent on in batches.
async fn read_range(
    http: &CouchHttp,
    range: &KeyRange,
    tx: &mpsc::Sender<Vec<Change>>,
) -> Result<(), StoreError> {
    let mut url = http.db_url(&["_all_docs"]);
    {
        let mut q = url.query_pairs_mut();
        q.append_pair("include_docs", "true");
        if let Some(start) = &range.start {
            q.append_pair("startkey", &Value::String(start.clone()).to_string());
        }
        if let Some(end) = &range.end {
            q.append_pair("endkey", &Value::String(end.clone()).to_string());
            q.append_pair("inclusive_end", "false");
        }
    }
    let what = format!("database {} (_all_docs)", http.db());
    let req = http
        .stream_request(Method::GET, url)
        .header(ACCEPT_ENCODING, "identity");
    let resp = http.send(req).await?;
    if !resp.status().is_success() {
        return Err(http.refusal(resp, &what).await);
    }
    let unexpected = |why: &str| {
        StoreError::Other(format!(
            "unexpected answer from CouchDB at {} to {what}: {why}",
            http.server()
        ))
    };
    let mut body = resp.bytes_stream();
    let mut splitter = RowSplitter::new(MAX_ROW);
    let mut rows = Vec::new();
    let mut batch = Vec::with_capacity(BATCH);
    loop {
        let chunk = match tokio::time::timeout(IDLE_LIMIT, body.next()).await {
            Err(_) => {
                return Err(StoreError::Unreachable {
                    url: http.server().to_string(),
                    detail: format!("{what} stalled: nothing for {}s", IDLE_LIMIT.as_secs()),
                });
            }
            Ok(None) => break,
            Ok(Some(Err(e))) => return Err(http.transport_error(&e)),
            Ok(Some(Ok(chunk))) => chunk,
        };
        splitter.push(&chunk, &mut rows).map_err(unexpected)?;
        for row in rows.drain(..) {
            batch.extend(change_of(row).map_err(|why| unexpected(&why))?);
        }
        if batch.len() >= BATCH {
            send(tx, &mut batch).await?;
        }
    }
    splitter.finish().map_err(unexpected)?;
    send(tx, &mut batch).await
}

async fn send(tx: &mpsc::Sender<Vec<Change>>, batch: &mut Vec<Change>) -> Result<(), StoreError> {
    if batch.is_empty() {
        return Ok(());
    }
    let full = std::mem::replace(batch, Vec::with_capacity(BATCH));
    tx.send(full)
        .await
        .map_err(|_| StoreError::Other("the load was stopped".into()))
}

#[derive(Deserialize)]
struct RangeRow {
    id: Option<String>,
    /// Kept as text until its size is known.
    doc: Option<Box<serde_json::value::RawValue>>,
    error: Option<String>,
    reason: Option<String>,
}

/// A row as a change: `None` for a design document (or a row without a
/// document); an error for a row CouchDB wrote to report a failure.
fn change_of(row: Row) -> Result<Option<Change>, String> {
    let (key, raw) = match row {
        Row::TooLong { head, len } => {
            let key = id_in_head(&head)
                .ok_or_else(|| format!("a row of {len} bytes without a readable id"))?;
            return Ok((!is_design(key)).then(|| Change::Invalid {
                key: key.to_owned(),
                reason: too_large(len),
            }));
        }
        Row::Whole(bytes) => {
            let row: RangeRow =
                serde_json::from_slice(&bytes).map_err(|e| format!("unreadable row ({e})"))?;
            if let Some(error) = row.error {
                return Err(format!("{error}: {}", row.reason.unwrap_or_default()));
            }
            let key = row.id.ok_or("a row without an id")?;
            match row.doc {
                Some(raw) if !is_design(&key) => (key, raw),
                _ => return Ok(None),
            }
        }
    };
    Ok(Some(if raw.get().len() > super::MAX_DOCUMENT {
        Change::Invalid {
            key,
            reason: too_large(raw.get().len()),
        }
    } else {
        // Valid JSON nested deeper than serde_json reads is an invalid
        // document, not a broken answer (which would be read again and again).
        match serde_json::from_str(raw.get()) {
            Ok(doc) => Change::Upsert {
                key,
                doc: document_of(doc),
            },
            Err(e) => Change::Invalid {
                key,
                reason: format!("unreadable document: {e}"),
            },
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_ranges_cover_every_id_once() {
        let ranges = key_ranges();
        assert_eq!(ranges.len(), BOUNDARIES.len() + 1);
        assert_eq!(ranges[0].start, None);
        assert_eq!(ranges[ranges.len() - 1].end, None);
        for pair in ranges.windows(2) {
            assert_eq!(pair[0].end, pair[1].start, "no gap, no overlap");
        }
        let inside = |id: &str| {
            ranges
                .iter()
                .filter(|r| {
                    r.start.as_deref().is_none_or(|s| s <= id)
                        && r.end.as_deref().is_none_or(|e| id < e)
                })
                .count()
        };
        for id in [
            "",
            "-x",
            "0",
            "09",
            "H83if",
            "Zz",
            "_design/qrtag",
            "a",
            "zzz",
            "~",
            "é",
        ] {
            assert_eq!(inside(id), 1, "{id}");
        }
    }

    #[test]
    fn rows_become_changes() {
        let row = |v: Value| Row::Whole(v.to_string().into_bytes());
        match change_of(row(
            json!({"id": "H83if", "key": "H83if", "value": {"rev": "1-a"},
            "doc": {"_id": "H83if", "_rev": "1-a", "url": "https://a.example/"}}),
        )) {
            Ok(Some(Change::Upsert { key, doc })) => {
                assert_eq!(key, "H83if");
                assert_eq!(Value::Object(doc), json!({"url": "https://a.example/"}));
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            change_of(row(json!({"id": "_design/qrtag", "doc": {}}))),
            Ok(None)
        ));
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        let text = format!(r#"{{"id":"deep1","doc":{{"url":"/x","n":{deep}}}}}"#);
        assert!(matches!(
            change_of(Row::Whole(text.into_bytes())),
            Ok(Some(Change::Invalid { key, .. })) if key == "deep1"
        ));
        match change_of(Row::TooLong {
            head: br#"{"id":"big01","key":"big01","value":{},"doc":{"note":"xxx"#.to_vec(),
            len: 3 << 20,
        }) {
            Ok(Some(Change::Invalid { key, reason })) => {
                assert_eq!(key, "big01");
                assert!(reason.contains("3145728 bytes"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        for bad in [
            row(json!({"error": "timeout", "reason": "shard copy not answering"})),
            row(json!({"doc": {}})),
            Row::Whole(b"{\"id\":".to_vec()),
            Row::TooLong {
                head: b"{\"key\":1".to_vec(),
                len: 2 << 20,
            },
        ] {
            assert!(change_of(bad).is_err());
        }
    }
}
