//! The follower's full load: every link in the database, read as fast as
//! CouchDB serves it.
//!
//! Reading `_all_docs?include_docs=true` makes CouchDB open every document
//! on its own: 38 CPU-seconds of CouchDB per million links on Apache
//! CouchDB 3.5, so on two cores the load cannot go under about 20 s however
//! it is read. `qrtag setup` therefore installs a view, `links` in
//! `_design/qrtag` ([`LINKS_VIEW_MAP`]), whose rows carry each document as
//! the load reads it; CouchDB keeps it built as documents change, and
//! reading it costs 11 CPU-seconds per million (3.5 times less, measured
//! with curl in `cargo bench --bench couch_load`'s notes in docs/src/benchmarks.md).
//! The view is read when it is there with exactly that function and its
//! index lags the database by at most [`VIEW_LAG_LIMIT`] changes (read
//! with `update=true`, it is first brought up to date, which must fit in
//! the head deadline); otherwise (no `qrtag setup` since, PouchDB Server,
//! an index still building) `_all_docs` is read as before, and if the view
//! read fails, `_all_docs` at once.
//!
//! Either way the key space is cut into ranges on the first character of
//! the ID (keys are base-62 IDs and slugs), a few ranges are read at once
//! ([`VIEW_IN_FLIGHT`], [`IN_FLIGHT`]), each as one streamed request split into rows as it arrives
//! ([`all_docs_rows`](super::all_docs_rows)), so no answer is ever held
//! whole, and the rows of every range go into one [`TableBuilder`].
//!
//! CouchDB orders `_all_docs` by the raw bytes of the IDs (PouchDB Server by
//! UTF-16 units, the same order for ASCII): with ASCII boundaries, every ID
//! falls in exactly one range, the first range open below and the last open
//! above (`_design/…`, `-`, `~` and non-ASCII IDs included). A view orders
//! its string keys by Unicode collation (`a` < `A` < `b`), so its ranges are
//! cut at `1`…`9`, `a`…`z`, which are in increasing order there: every key
//! still falls in exactly one range.
//!
//! The guarantees of the paged read are kept: the database's `update_seq`
//! is read before any range, so the changes feed that follows from it
//! misses nothing written during the load (a change seen twice is
//! harmless); every range reflects the database at that sequence or later
//! (`_all_docs` reads the current state, and a view read with `update=true`
//! is first brought up to the database's current sequence); a document
//! that is not a valid link is counted, not fatal; every request has the
//! head deadline, and a range that goes silent fails the load, which the
//! follower retries.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use reqwest::Method;
use reqwest::header::ACCEPT_ENCODING;
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinSet;

use super::all_docs_rows::{Row, RowSplitter};
use super::feed_lines::id_in_head;
use super::setup::{DESIGN_ID, LINKS_VIEW, LINKS_VIEW_MAP};
use super::{CouchHttp, document_of, is_design, too_large};
use crate::snapshot::{Change, LinkTable, TableBuilder};
use crate::store::StoreError;
use crate::store::options::CouchSettings;

/// `_all_docs` ranges read at once. Measured at 1M links on Apache CouchDB
/// 3.5 on two cores (`cargo bench --bench couch_load`): four keep the
/// server busy; more only add connections.
pub const IN_FLIGHT: usize = 4;
/// View ranges read at once: cheaper rows, so two keep both cores busy.
/// Measured with curl at 1M links on two cores under a load average of
/// 10–14, alternating: two in 12.2–15.5 s (12–15 CPU-seconds of CouchDB),
/// four in 20.0–31.6 s (15–21), one in 22.0 s.
pub const VIEW_IN_FLIGHT: usize = 2;
/// The first characters the `_all_docs` ranges are cut at, in byte order.
const BOUNDARIES: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
/// The first characters the view's ranges are cut at, in the view's
/// Unicode collation order (where `A` sorts between `a` and `b`).
const VIEW_BOUNDARIES: &[u8] = b"123456789abcdefghijklmnopqrstuvwxyz";
/// Changes the view's index may lag behind the database for the load to
/// read it: `update=true` indexes them before the first row, within the
/// head deadline (about 2,000 documents/s per shard on a busy two-core
/// machine). Past it, `_all_docs` is read while CouchDB catches up.
pub const VIEW_LAG_LIMIT: u64 = 5_000;
/// A range silent for this long has failed (a frozen node, a cut network).
const IDLE_LIMIT: Duration = Duration::from_secs(30);
/// A row longer than this holds a document over the limit: counted as
/// invalid from its first bytes, and the rest is not kept.
const MAX_ROW: usize = crate::store::MAX_DOCUMENT + 4096;
/// Links handed to the builder at a time.
const BATCH: usize = 1000;

/// IDs from `start` (inclusive) to `end` (exclusive); `None` is open.
#[derive(Debug, Clone, PartialEq, Eq)]
struct KeyRange {
    start: Option<String>,
    end: Option<String>,
}

/// Where the rows come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    /// `_design/qrtag/_view/links`: the document is the row's `value`.
    View,
    /// `_all_docs?include_docs=true`: the document is the row's `doc`.
    AllDocs,
}

impl Source {
    fn in_flight(self) -> usize {
        match self {
            Source::View => VIEW_IN_FLIGHT,
            Source::AllDocs => IN_FLIGHT,
        }
    }

    fn boundaries(self) -> &'static [u8] {
        match self {
            Source::View => VIEW_BOUNDARIES,
            Source::AllDocs => BOUNDARIES,
        }
    }
}

/// The ranges cut at `boundaries`, which together hold every ID once, in order.
fn key_ranges(boundaries: &[u8]) -> Vec<KeyRange> {
    let cuts: Vec<Option<String>> = boundaries
        .iter()
        .map(|&b| Some(char::from(b).to_string()))
        .collect();
    std::iter::once(None)
        .chain(cuts.clone())
        .zip(cuts.into_iter().chain(std::iter::once(None)))
        .map(|(start, end)| KeyRange { start, end })
        .collect()
}

/// Loads every link: the sequence first, then the ranges, a few at a time
/// ([`VIEW_IN_FLIGHT`], [`IN_FLIGHT`]), from the view when it can be read
/// ([`view_is_fresh`]).
pub(crate) async fn load(http: &CouchHttp) -> Result<LinkTable, StoreError> {
    let seq = update_seq(http).await?;
    if view_is_fresh(http, &seq).await {
        match load_from(http, Source::View, seq.clone()).await {
            Ok(table) => return Ok(table),
            Err(e) => tracing::warn!(
                error = %e,
                "reading the links view failed; reading every document instead"
            ),
        }
    }
    load_from(http, Source::AllDocs, seq).await
}

/// How long the questions of [`view_is_fresh`] may take together. A
/// cluster node that is frozen holds `_info` (which asks every shard copy)
/// until Erlang declares it down; the reload that follows a frozen node
/// must not wait for that, so past this `_all_docs` is read.
const FRESH_CHECK_LIMIT: Duration = Duration::from_secs(2);

/// Whether `_design/qrtag` holds the `links` view with exactly
/// [`LINKS_VIEW_MAP`] and its index is at most [`VIEW_LAG_LIMIT`] changes
/// behind `seq`, answered within [`FRESH_CHECK_LIMIT`]. Any failure or
/// unexpected answer (PouchDB Server has no `_info`) says no: `_all_docs`
/// is always right, only slower.
async fn view_is_fresh(http: &CouchHttp, seq: &Value) -> bool {
    tokio::time::timeout(FRESH_CHECK_LIMIT, ask_view_is_fresh(http, seq))
        .await
        .unwrap_or_else(|_| {
            tracing::info!(
                "the links view's state did not come within {}s: reading every document",
                FRESH_CHECK_LIMIT.as_secs()
            );
            false
        })
}

async fn ask_view_is_fresh(http: &CouchHttp, seq: &Value) -> bool {
    let [design, name] = ["_design", "qrtag"];
    debug_assert_eq!(format!("{design}/{name}"), DESIGN_ID);
    let doc: Value = match http
        .json(
            http.request(Method::GET, http.db_url(&[design, name])),
            "reading the design document",
        )
        .await
    {
        Ok(doc) => doc,
        Err(e) => {
            tracing::debug!(error = %e, "no links view to load from");
            return false;
        }
    };
    if doc["views"][LINKS_VIEW]["map"].as_str() != Some(LINKS_VIEW_MAP) {
        tracing::info!(
            "{DESIGN_ID} has no current `{LINKS_VIEW}` view (run `qrtag setup`): \
             reading every document, which costs CouchDB about 3.5 times the CPU"
        );
        return false;
    }
    let info: Value = match http
        .json(
            http.request(Method::GET, http.db_url(&[design, name, "_info"])),
            "reading the view's index information",
        )
        .await
    {
        Ok(info) => info,
        Err(e) => {
            tracing::debug!(error = %e, "the links view's index cannot be asked about");
            return false;
        }
    };
    let lag = view_lag(seq, &info["view_index"]["update_seq"]);
    if lag.is_none_or(|lag| lag > VIEW_LAG_LIMIT) {
        tracing::info!(
            lag = ?lag,
            "the links view's index is behind the database: reading every document"
        );
        return false;
    }
    true
}

/// How many changes the view's index (`update_seq` of `_info`, a number)
/// is behind the database's sequence (CouchDB's `N-…` strings begin with
/// the number of changes); `None` when either is not understood.
fn view_lag(db_seq: &Value, view_seq: &Value) -> Option<u64> {
    let number = |seq: &Value| match seq {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.split('-').next()?.parse().ok(),
        _ => None,
    };
    Some(number(db_seq)?.saturating_sub(number(view_seq)?))
}

/// Every range of `source` into one table at sequence `seq`.
async fn load_from(http: &CouchHttp, source: Source, seq: Value) -> Result<LinkTable, StoreError> {
    let (tx, mut rx) = mpsc::channel::<Vec<Change>>(2 * IN_FLIGHT);
    let mut table = TableBuilder::default();
    let build = async {
        while let Some(batch) = rx.recv().await {
            for (key, reason) in table.apply(batch) {
                tracing::warn!(id = %key, %reason, "skipping document that is not a valid link");
            }
        }
    };
    let (read, ()) = tokio::join!(read_ranges(http, source, tx), build);
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

/// How a benchmark loads: the follower's way (the view when it can be
/// read), `_all_docs` in ranges (the way before the view), or the paged
/// read before that.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadWay {
    Ranges,
    AllDocs,
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
        LoadWay::AllDocs => {
            let seq = update_seq(&http).await?;
            load_from(&http, Source::AllDocs, seq).await?
        }
        LoadWay::Paged => load_paged(&http).await?,
    };
    Ok((table.len(), table.invalid_count()))
}

pub(crate) async fn update_seq(http: &CouchHttp) -> Result<Value, StoreError> {
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

/// Reads every range, at most `source.in_flight()` at once, sending their links to
/// `tx`. The first failure stops the others (their tasks are aborted).
async fn read_ranges(
    http: &CouchHttp,
    source: Source,
    tx: mpsc::Sender<Vec<Change>>,
) -> Result<(), StoreError> {
    let permits = Arc::new(Semaphore::new(source.in_flight()));
    let mut tasks = JoinSet::new();
    for range in key_ranges(source.boundaries()) {
        let (http, tx, permits) = (http.clone(), tx.clone(), Arc::clone(&permits));
        tasks.spawn(async move {
            // The semaphore is never closed; a permit error cannot happen.
            let _permit = permits
                .acquire_owned()
                .await
                .map_err(|e| StoreError::Other(e.to_string()))?;
            read_range(&http, source, &range, &tx).await
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

/// One range as one streamed request, its rows sent on in batches.
async fn read_range(
    http: &CouchHttp,
    source: Source,
    range: &KeyRange,
    tx: &mpsc::Sender<Vec<Change>>,
) -> Result<(), StoreError> {
    let (mut url, what) = match source {
        Source::View => (
            http.db_url(&["_design", "qrtag", "_view", LINKS_VIEW]),
            format!("database {} ({DESIGN_ID}/_view/{LINKS_VIEW})", http.db()),
        ),
        Source::AllDocs => (
            http.db_url(&["_all_docs"]),
            format!("database {} (_all_docs)", http.db()),
        ),
    };
    {
        let mut q = url.query_pairs_mut();
        if source == Source::AllDocs {
            q.append_pair("include_docs", "true");
        }
        if let Some(start) = &range.start {
            q.append_pair("startkey", &Value::String(start.clone()).to_string());
        }
        if let Some(end) = &range.end {
            q.append_pair("endkey", &Value::String(end.clone()).to_string());
            q.append_pair("inclusive_end", "false");
        }
    }
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
            batch.extend(change_of(row, source).map_err(|why| unexpected(&why))?);
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
    /// The view's copy of the document.
    value: Option<Box<serde_json::value::RawValue>>,
    error: Option<String>,
    reason: Option<String>,
}

/// A row as a change: `None` for a design document (or a row without a
/// document); an error for a row CouchDB wrote to report a failure.
fn change_of(row: Row, source: Source) -> Result<Option<Change>, String> {
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
            let doc = match source {
                Source::View => row.value,
                Source::AllDocs => row.doc,
            };
            match doc {
                Some(raw) if !is_design(&key) => (key, raw),
                _ => return Ok(None),
            }
        }
    };
    Ok(Some(if raw.get().len() > crate::store::MAX_DOCUMENT {
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
    fn the_view_ranges_are_cut_in_collation_order() {
        // Unicode collation of ASCII letters and digits, first level: digits
        // before letters, letters by their lower case (`a` < `A` < `b`).
        let level = |c: u8| (c.is_ascii_alphabetic(), c.to_ascii_lowercase());
        for pair in VIEW_BOUNDARIES.windows(2) {
            assert!(level(pair[0]) < level(pair[1]), "{pair:?}");
        }
        let ranges = key_ranges(VIEW_BOUNDARIES);
        assert_eq!(ranges.len(), VIEW_BOUNDARIES.len() + 1);
        assert_eq!(ranges[0].start, None);
        assert_eq!(ranges[ranges.len() - 1].end, None);
        for pair in ranges.windows(2) {
            assert_eq!(pair[0].end, pair[1].start, "no gap, no overlap");
        }
    }

    #[test]
    fn the_view_lag_is_read_from_both_sequences() {
        assert_eq!(
            view_lag(&json!("1000100-g1AAAA"), &json!(1000090)),
            Some(10)
        );
        assert_eq!(view_lag(&json!(12), &json!(12)), Some(0));
        assert_eq!(view_lag(&json!("5-g1"), &json!(9)), Some(0));
        assert_eq!(view_lag(&json!("g1AAAA"), &json!(1)), None);
        assert_eq!(view_lag(&json!("12-g1"), &json!("Not implemented.")), None);
    }

    #[test]
    fn the_ranges_cover_every_id_once() {
        let ranges = key_ranges(BOUNDARIES);
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
        match change_of(
            row(
                json!({"id": "H83if", "key": "H83if", "value": {"rev": "1-a"},
            "doc": {"_id": "H83if", "_rev": "1-a", "url": "https://a.example/"}}),
            ),
            Source::AllDocs,
        ) {
            Ok(Some(Change::Upsert { key, doc })) => {
                assert_eq!(key, "H83if");
                assert_eq!(Value::Object(doc), json!({"url": "https://a.example/"}));
            }
            other => panic!("{other:?}"),
        }
        match change_of(
            row(json!({"id": "H83if", "key": "H83if",
            "value": {"url": "https://a.example/", "inactive": true}})),
            Source::View,
        ) {
            Ok(Some(Change::Upsert { key, doc })) => {
                assert_eq!(key, "H83if");
                assert_eq!(
                    Value::Object(doc),
                    json!({"url": "https://a.example/", "inactive": true})
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            change_of(
                row(json!({"id": "_design/qrtag", "doc": {}})),
                Source::AllDocs
            ),
            Ok(None)
        ));
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        let text = format!(r#"{{"id":"deep1","doc":{{"url":"/x","n":{deep}}}}}"#);
        assert!(matches!(
            change_of(Row::Whole(text.into_bytes()), Source::AllDocs),
            Ok(Some(Change::Invalid { key, .. })) if key == "deep1"
        ));
        match change_of(
            Row::TooLong {
                head: br#"{"id":"big01","key":"big01","value":{},"doc":{"note":"xxx"#.to_vec(),
                len: 3 << 20,
            },
            Source::View,
        ) {
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
            assert!(change_of(bad, Source::AllDocs).is_err());
        }
    }
}
