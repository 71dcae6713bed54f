//! Bulk import and export on CouchDB.
//!
//! - Which keys exist, and at which revision: `POST _all_docs` with the keys,
//!   one request per batch. For a whole import file
//!   ([`CouchStore::bulk_existing_all`]): nothing when the database holds no
//!   document; every ID in one streamed `GET _all_docs` (no documents,
//!   parsed row by row) when the database is not much larger than the file;
//!   otherwise the by-key requests, [`IN_FLIGHT`] at a time. One streamed
//!   read of a million IDs takes seconds where a thousand sequential
//!   lookups of a thousand keys took over two minutes.
//! - Writes: `POST _bulk_docs`, one request per batch, the import keeping
//!   [`IN_FLIGHT`] under way. When overwriting, the current revisions are
//!   read just before, so a document edited in between comes back as a
//!   conflict for that document alone. Each document's answer (created,
//!   conflict, `forbidden` from the validation) is its outcome. The body is
//!   spliced from each document's stored JSON, never parsed again.
//! - Export: one `GET _all_docs?include_docs=true`, streamed and parsed row
//!   by row on a blocking thread, so neither the response nor the database is
//!   ever held whole. One request is one read: CouchDB serves it from the
//!   snapshot each shard had when the request reached it, so a document
//!   written during the export is in it as it was, or not at all, never
//!   half-way as paging could make it. `_all_docs` is in raw (byte) order of
//!   the IDs, the order the embedded store exports in.

use std::collections::HashMap;
use std::io::{self, Read};
use std::marker::PhantomData;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use reqwest::Method;
use reqwest::header::CONTENT_TYPE;
use serde::Deserialize;
use serde::de::{
    DeserializeOwned, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor,
};
use serde_json::{Value, json};
use tokio::sync::mpsc::{self, Receiver, Sender};

use super::{CouchStore, REQUEST_TIMEOUT, document_of, is_design};
use crate::store::{BulkDoc, BulkOutcome, ExportPage, OnExisting, StoreError, Stored};
use crate::values::link_key::LinkKey;

/// Documents per `_bulk_docs` request. CouchDB runs the validation function
/// on every document, in its JavaScript process (about 0.75 ms of CPU a
/// document on Apache CouchDB 3.5 with QuickJS, most of it the query
/// server's round trip, not the function): with [`IN_FLIGHT`] requests
/// sharing the server's cores, a batch of 250 is answered about as soon as
/// one of 1,000 was alone, well within the response-head limit.
pub(super) const BATCH: usize = 250;
/// Keys per `_all_docs` lookup by key.
const LOOKUP_BATCH: usize = 1000;
/// Requests of one import under way at once: enough to keep a server's
/// cores busy while each answer travels back, few enough that every answer
/// comes within the response-head limit on a loaded server.
pub(super) const IN_FLIGHT: usize = 4;
/// Read every ID rather than ask by key when the database holds at most
/// this many documents per key of the file. A streamed row costs CouchDB a
/// few microseconds, a key asked for by key about a hundred (1,000 keys in
/// 135 ms on Apache CouchDB 3.5 on the shared machine).
const STREAM_PER_KEY: u64 = 10;
/// Documents per page handed to the export's writer.
const EXPORT_PAGE: usize = 1000;
/// An export stream silent for this long has failed.
const IDLE_LIMIT: Duration = REQUEST_TIMEOUT;

/// A row of `_all_docs` asked for by keys: `{"key": .., "error":
/// "not_found"}`, or `{"id": .., "key": .., "value": {"rev": .., "deleted":
/// true}}` for a deleted document, or without `deleted` for a live one.
#[derive(Debug, Deserialize)]
struct KeyRow {
    key: Option<String>,
    value: Option<KeyValue>,
}

#[derive(Debug, Deserialize)]
struct KeyValue {
    rev: String,
    #[serde(default)]
    deleted: bool,
}

#[derive(Debug, Deserialize)]
struct KeyRows {
    rows: Vec<KeyRow>,
}

/// How an import asks which of its keys exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lookup {
    /// The database holds no document (qrtag's tombstones are documents,
    /// so none of those either): none exists.
    Nothing,
    /// Every ID of the database, in one streamed listing.
    Listing,
    /// `_all_docs` by key, [`LOOKUP_BATCH`] keys a request.
    ByKey,
}

impl Lookup {
    /// For a database of `doc_count` documents and a file of `keys` keys.
    fn choose(doc_count: u64, keys: usize) -> Self {
        if doc_count == 0 {
            Self::Nothing
        } else if doc_count <= (keys as u64).saturating_mul(STREAM_PER_KEY) {
            Self::Listing
        } else {
            Self::ByKey
        }
    }
}

/// `_all_docs?include_docs=true` asked for by keys.
#[derive(Debug, Deserialize)]
struct DocRows {
    rows: Vec<DocRow>,
}

#[derive(Debug, Deserialize)]
struct DocRow {
    key: Option<String>,
    value: Option<KeyValue>,
    doc: Option<Value>,
}

/// The part of the database's information the import reads.
#[derive(Debug, Deserialize)]
struct DbInfo {
    /// Documents, design documents included, deleted ones not (qrtag's
    /// own tombstones are documents, so they count).
    doc_count: u64,
}

/// A row of `_all_docs` without documents: only its ID is read (CouchDB
/// leaves deleted documents out of such a listing).
#[derive(Debug, Deserialize)]
struct IdRow {
    id: Option<String>,
}

/// One document's answer in a `_bulk_docs` response.
#[derive(Debug, Clone, Deserialize)]
struct WriteResult {
    id: Option<String>,
    error: Option<String>,
    reason: Option<String>,
}

impl CouchStore {
    pub(super) async fn bulk_existing(&self, keys: &[LinkKey]) -> Result<Vec<bool>, StoreError> {
        let revs = self.current_revs(keys).await?;
        Ok(revs.iter().map(Option::is_some).collect())
    }

    /// Which of `keys` (a whole import file's) have a document, in the
    /// cheapest way for the database's size (see the module's notes).
    pub(super) async fn bulk_existing_all(
        &self,
        keys: &[LinkKey],
    ) -> Result<Vec<bool>, StoreError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let what = format!("database {}", self.http.db());
        let info: DbInfo = self
            .http
            .json(self.http.request(Method::GET, self.http.db_url(&[])), &what)
            .await?;
        match Lookup::choose(info.doc_count, keys.len()) {
            Lookup::Nothing => return Ok(vec![false; keys.len()]),
            Lookup::Listing => return self.existing_by_listing(keys).await,
            Lookup::ByKey => {}
        }
        let mut found = Vec::with_capacity(keys.len());
        // The futures made first (lazily run): a closure in the stream's
        // type would not be `Send` for every lifetime, as the trait needs.
        let lookups: Vec<_> = keys
            .chunks(LOOKUP_BATCH)
            .map(|batch| self.bulk_existing(batch))
            .collect();
        let mut answers = futures_util::stream::iter(lookups).buffered(IN_FLIGHT);
        while let Some(batch) = answers.next().await {
            found.extend(batch?);
        }
        Ok(found)
    }

    /// Each key's live document (`None`: no document, a deleted one, or a
    /// reserved key), by `POST _all_docs?include_docs=true`, a thousand keys
    /// a request and [`IN_FLIGHT`] requests at a time.
    pub(super) async fn bulk_get_all(
        &self,
        keys: &[LinkKey],
    ) -> Result<Vec<Option<Stored>>, StoreError> {
        let mut found = Vec::with_capacity(keys.len());
        let reads: Vec<_> = keys
            .chunks(LOOKUP_BATCH)
            .map(|batch| self.docs_by_key(batch))
            .collect();
        let mut answers = futures_util::stream::iter(reads).buffered(IN_FLIGHT);
        while let Some(batch) = answers.next().await {
            found.extend(batch?);
        }
        Ok(found)
    }

    async fn docs_by_key(&self, keys: &[LinkKey]) -> Result<Vec<Option<Stored>>, StoreError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<&str> = keys.iter().map(LinkKey::as_str).collect();
        let mut url = self.http.db_url(&["_all_docs"]);
        url.query_pairs_mut().append_pair("include_docs", "true");
        let req = self
            .http
            .request(Method::POST, url)
            .json(&json!({ "keys": ids }));
        let what = format!("database {} (_all_docs by key)", self.http.db());
        let rows: DocRows = self.http.json(req, &what).await?;
        let mut live: HashMap<String, Stored> = rows
            .rows
            .into_iter()
            .filter_map(|r| match (r.key, r.value, r.doc) {
                (Some(k), Some(v), Some(doc @ Value::Object(_))) if !v.deleted => Some((
                    k,
                    Stored {
                        doc: document_of(doc),
                        rev: v.rev,
                    },
                )),
                _ => None,
            })
            .collect();
        Ok(ids
            .iter()
            .map(|k| {
                if k.starts_with('_') {
                    None
                } else {
                    live.remove(*k)
                }
            })
            .collect())
    }

    /// Which of `keys` have a document, from one streamed `_all_docs`
    /// listing of every ID.
    async fn existing_by_listing(&self, keys: &[LinkKey]) -> Result<Vec<bool>, StoreError> {
        let index: HashMap<Box<str>, usize, foldhash::fast::RandomState> = keys
            .iter()
            .enumerate()
            .map(|(i, k)| (Box::from(k.as_str()), i))
            .collect();
        let what = format!("database {} (_all_docs, IDs only)", self.http.db());
        let (found, complete) = self
            .stream_all_docs(self.http.db_url(&["_all_docs"]), &what, move |body| {
                let mut found = vec![false; index.len()];
                let complete = each_row(body, |row: IdRow| {
                    if let Some(&i) = row.id.as_deref().and_then(|id| index.get(id)) {
                        found[i] = true;
                    }
                    true
                })?;
                Ok((found, complete))
            })
            .await?;
        debug_assert!(complete, "the listing is never stopped");
        Ok(found)
    }

    /// Each key's current revision; `None` for no document or a deleted one.
    async fn current_revs(&self, keys: &[LinkKey]) -> Result<Vec<Option<String>>, StoreError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<&str> = keys.iter().map(LinkKey::as_str).collect();
        let req = self
            .http
            .request(Method::POST, self.http.db_url(&["_all_docs"]))
            .json(&json!({ "keys": ids }));
        let what = format!("database {} (_all_docs by key)", self.http.db());
        let rows: KeyRows = self.http.json(req, &what).await?;
        let mut live: HashMap<String, String> = rows
            .rows
            .into_iter()
            .filter_map(|r| match (r.key, r.value) {
                (Some(k), Some(v)) if !v.deleted => Some((k, v.rev)),
                _ => None,
            })
            .collect();
        Ok(ids.iter().map(|k| live.remove(*k)).collect())
    }

    pub(super) async fn bulk_write(
        &self,
        docs: Vec<BulkDoc>,
        on_existing: OnExisting,
    ) -> Result<Vec<BulkOutcome>, StoreError> {
        if docs.is_empty() {
            return Ok(Vec::new());
        }
        let revs = match on_existing {
            OnExisting::Overwrite => {
                let keys: Vec<LinkKey> = docs.iter().map(|d| d.key().clone()).collect();
                self.current_revs(&keys).await?
            }
            OnExisting::Refuse => vec![None; docs.len()],
        };
        let req = self
            .http
            .request(Method::POST, self.http.db_url(&["_bulk_docs"]))
            .header(CONTENT_TYPE, "application/json")
            .body(bulk_body(&docs, &revs));
        let what = format!("database {} (_bulk_docs)", self.http.db());
        let resp = self.http.send(req).await?;
        if !resp.status().is_success() {
            return Err(self.http.refusal(resp, &what).await);
        }
        // 202: some documents were stored with fewer copies than n.
        self.http.cluster().wrote(resp.status().as_u16());
        let results: Vec<WriteResult> = self.http.read_json(resp, &what).await?;
        let sent: Vec<(&str, bool)> = docs
            .iter()
            .zip(&revs)
            .map(|(d, rev)| (d.key().as_str(), rev.is_some()))
            .collect();
        Ok(outcomes(&sent, results, on_existing))
    }

    pub(super) async fn bulk_export(&self, pages: Sender<ExportPage>) -> Result<(), StoreError> {
        let mut url = self.http.db_url(&["_all_docs"]);
        url.query_pairs_mut().append_pair("include_docs", "true");
        let what = format!("database {} (_all_docs)", self.http.db());
        let complete = self
            .stream_all_docs(url, &what, move |body| parse_export(body, pages))
            .await?;
        if complete {
            Ok(())
        } else {
            Err(StoreError::Other(
                "the export was stopped before the end".into(),
            ))
        }
    }

    /// Sends one `GET` of an `_all_docs` listing and hands its body, as it
    /// streams in, to `parse` on a blocking thread, so the answer is never
    /// held whole. A stream silent for [`IDLE_LIMIT`] has failed.
    async fn stream_all_docs<R: Send + 'static>(
        &self,
        url: url::Url,
        what: &str,
        parse: impl FnOnce(ChunkReader) -> Result<R, serde_json::Error> + Send + 'static,
    ) -> Result<R, StoreError> {
        let resp = self
            .http
            .send(self.http.stream_request(Method::GET, url))
            .await?;
        if !resp.status().is_success() {
            return Err(self.http.refusal(resp, what).await);
        }
        let (chunks, chunks_rx) = mpsc::channel(16);
        let parser = tokio::task::spawn_blocking(move || parse(ChunkReader::new(chunks_rx)));
        let mut body = resp.bytes_stream();
        let mut failed = None;
        loop {
            let chunk = match tokio::time::timeout(IDLE_LIMIT, body.next()).await {
                Ok(Some(Ok(chunk))) => Ok(chunk),
                Ok(None) => break,
                Ok(Some(Err(e))) => Err(self.http.transport_error(&e)),
                Err(_) => Err(StoreError::Unreachable {
                    url: self.http.server().to_string(),
                    detail: format!("the export stalled: nothing for {IDLE_LIMIT:?}"),
                }),
            };
            match chunk {
                Ok(chunk) => {
                    if chunks.send(Ok(chunk)).await.is_err() {
                        break; // the parser has stopped; it says why
                    }
                }
                Err(e) => {
                    let _ = chunks.send(Err(io::Error::other(e.to_string()))).await;
                    failed = Some(e);
                    break;
                }
            }
        }
        drop(chunks);
        let parsed = parser
            .await
            .map_err(|e| StoreError::Other(format!("the reading task failed: {e}")))?;
        if let Some(e) = failed {
            return Err(e);
        }
        parsed.map_err(|e| {
            StoreError::Other(format!(
                "unexpected answer from CouchDB at {} to {what}: {e}",
                self.http.server()
            ))
        })
    }
}

/// The body of a `_bulk_docs` request: `{"docs":[...]}`, each document as
/// [`couch_doc`] writes it.
fn bulk_body(docs: &[BulkDoc], revs: &[Option<String>]) -> String {
    let mut body =
        String::with_capacity(16 + docs.iter().map(|d| d.json().len() + 48).sum::<usize>());
    body.push_str(r#"{"docs":["#);
    for (i, (doc, rev)) in docs.iter().zip(revs).enumerate() {
        if i > 0 {
            body.push(',');
        }
        couch_doc(&mut body, doc, rev.as_deref());
    }
    body.push_str("]}");
    body
}

/// One document of `_bulk_docs`: `_id`, `_rev` when replacing, then the
/// fields, spliced from the document's compact JSON (an object that holds
/// neither `_id` nor `_rev`: the import's parser takes both out).
fn couch_doc(out: &mut String, doc: &BulkDoc, rev: Option<&str>) {
    let string = |s: &str| Value::String(s.to_owned()).to_string();
    out.push_str(r#"{"_id":"#);
    out.push_str(&string(doc.key().as_str()));
    if let Some(rev) = rev {
        out.push_str(r#","_rev":"#);
        out.push_str(&string(rev));
    }
    let fields = doc.json();
    let inner = fields
        .strip_prefix('{')
        .and_then(|f| f.strip_suffix('}'))
        .unwrap_or("");
    if !inner.is_empty() {
        out.push(',');
        out.push_str(inner);
    }
    out.push('}');
}

/// What became of each document sent (`(key, sent with a revision)`), from
/// the `_bulk_docs` answer. Answers are matched by ID, not position.
fn outcomes(
    sent: &[(&str, bool)],
    results: Vec<WriteResult>,
    on_existing: OnExisting,
) -> Vec<BulkOutcome> {
    let mut by_id: HashMap<String, WriteResult> = results
        .into_iter()
        .filter_map(|r| Some((r.id.clone()?, r)))
        .collect();
    sent.iter()
        .map(|&(key, replaced)| match by_id.remove(key) {
            None => BulkOutcome::Refused("CouchDB gave no answer for it".into()),
            Some(WriteResult { error: None, .. }) if replaced => BulkOutcome::Updated,
            Some(WriteResult { error: None, .. }) => BulkOutcome::Created,
            Some(WriteResult { error: Some(e), .. })
                if e == "conflict" && on_existing == OnExisting::Refuse =>
            {
                BulkOutcome::Exists
            }
            Some(WriteResult { error: Some(e), .. }) if e == "conflict" => BulkOutcome::Refused(
                "conflict: someone else wrote it during the import; import again to overwrite"
                    .into(),
            ),
            Some(WriteResult {
                error: Some(e),
                reason,
                ..
            }) => BulkOutcome::Refused(match reason {
                Some(r) => format!("{e}: {r}"),
                None => e,
            }),
        })
        .collect()
}

/// The export's parser, on a blocking thread: reads the streamed body and
/// sends pages of documents (design documents left out) to `pages`.
/// `Ok(false)` when `pages` was closed before the end.
fn parse_export(body: impl Read, pages: Sender<ExportPage>) -> Result<bool, serde_json::Error> {
    let mut page = Vec::with_capacity(EXPORT_PAGE);
    let complete = each_row(body, |row: Row| {
        let (Some(id), Some(doc)) = (row.id, row.doc) else {
            return true; // a deleted document's row
        };
        if is_design(&id) {
            return true;
        }
        page.push((id, document_of(doc)));
        if page.len() < EXPORT_PAGE {
            return true;
        }
        let full = std::mem::replace(&mut page, Vec::with_capacity(EXPORT_PAGE));
        pages.blocking_send(full).is_ok()
    })?;
    if !complete {
        return Ok(false);
    }
    Ok(page.is_empty() || pages.blocking_send(page).is_ok())
}

/// Blocking reads over the chunks of a streamed response.
struct ChunkReader {
    chunks: Receiver<io::Result<Bytes>>,
    chunk: Bytes,
    at: usize,
}

impl ChunkReader {
    fn new(chunks: Receiver<io::Result<Bytes>>) -> Self {
        Self {
            chunks,
            chunk: Bytes::new(),
            at: 0,
        }
    }
}

impl Read for ChunkReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.at == self.chunk.len() {
            match self.chunks.blocking_recv() {
                None => return Ok(0),
                Some(chunk) => {
                    self.chunk = chunk?;
                    self.at = 0;
                }
            }
        }
        let n = buf.len().min(self.chunk.len() - self.at);
        buf[..n].copy_from_slice(&self.chunk[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// Reads an `_all_docs` body from `body` one row at a time, handing each row
/// (read as an `R`, its other members skipped) to `each` until it returns
/// false. Returns whether every row was read; the other members of the body
/// (`total_rows`, `offset`, ...) are skipped in any order.
fn each_row<R: DeserializeOwned>(
    body: impl Read,
    mut each: impl FnMut(R) -> bool,
) -> Result<bool, serde_json::Error> {
    let mut stopped = false;
    let mut de = serde_json::Deserializer::from_reader(body);
    let result = Body {
        each: &mut each,
        stopped: &mut stopped,
        row: PhantomData,
    }
    .deserialize(&mut de);
    match result {
        Err(_) if stopped => Ok(false),
        Err(e) => Err(e),
        Ok(()) => {
            de.end()?;
            Ok(true)
        }
    }
}

#[derive(Debug, Deserialize)]
struct Row {
    id: Option<String>,
    doc: Option<Value>,
}

/// The top-level object, with `rows` read element by element.
struct Body<'a, F, R> {
    each: &'a mut F,
    stopped: &'a mut bool,
    row: PhantomData<R>,
}

impl<'de, R: DeserializeOwned, F: FnMut(R) -> bool> DeserializeSeed<'de> for Body<'_, F, R> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, R: DeserializeOwned, F: FnMut(R) -> bool> Visitor<'de> for Body<'_, F, R> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an _all_docs answer")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut rows = false;
        while let Some(name) = map.next_key::<String>()? {
            if name == "rows" {
                map.next_value_seed(Rows {
                    each: &mut *self.each,
                    stopped: &mut *self.stopped,
                    row: PhantomData::<R>,
                })?;
                rows = true;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        if rows {
            Ok(())
        } else {
            Err(serde::de::Error::missing_field("rows"))
        }
    }
}

struct Rows<'a, F, R> {
    each: &'a mut F,
    stopped: &'a mut bool,
    row: PhantomData<R>,
}

impl<'de, R: DeserializeOwned, F: FnMut(R) -> bool> DeserializeSeed<'de> for Rows<'_, F, R> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, R: DeserializeOwned, F: FnMut(R) -> bool> Visitor<'de> for Rows<'_, F, R> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("_all_docs rows")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(row) = seq.next_element::<R>()? {
            if !(self.each)(row) {
                *self.stopped = true;
                return Err(serde::de::Error::custom("stopped"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_rows(body: &str) -> Result<Vec<(String, Value)>, String> {
        let mut rows = Vec::new();
        each_row(body.as_bytes(), |row: Row| {
            if let (Some(id), Some(doc)) = (row.id, row.doc) {
                rows.push((id, doc));
            }
            true
        })
        .map_err(|e| e.to_string())?;
        Ok(rows)
    }

    #[test]
    fn rows_are_read_one_by_one_whatever_the_layout() {
        let body = r#"{"total_rows":3,"offset":0,"rows":[
{"id":"_design/qrtag","key":"_design/qrtag","value":{"rev":"1-a"},"doc":{"_id":"_design/qrtag","_rev":"1-a","validate_doc_update":"function(){}"}},
{"id":"a","key":"a","value":{"rev":"2-b"},"doc":{"_id":"a","_rev":"2-b","url":"/a","note":{"rows":[1]}}},
{"id":"gone","key":"gone","value":{"rev":"3-c","deleted":true},"doc":null}
],"update_seq":"9-x"}"#;
        let rows = read_rows(body).expect("valid body");
        let ids: Vec<&str> = rows.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(
            ids,
            ["_design/qrtag", "a"],
            "rows without a document are skipped"
        );
        assert_eq!(rows[1].1["note"], json!({"rows": [1]}));
        // Rows before the other members, or none at all.
        assert_eq!(
            read_rows(r#"{"rows":[{"id":"a","doc":{"url":"/a"}}],"total_rows":1}"#)
                .expect("valid")
                .len(),
            1
        );
        assert_eq!(read_rows(r#"{"total_rows":0,"rows":[]}"#), Ok(vec![]));
    }

    #[test]
    fn a_broken_body_is_an_error() {
        for body in [
            r#"{"total_rows":1,"rows":[{"id":"a","doc":{"url":"/a"}}"#,
            r#"{"total_rows":1}"#,
            r#"{"rows":[{"id":"a","doc":{"url":"/a"}}]} trailing"#,
            r#"[]"#,
            "",
        ] {
            assert!(read_rows(body).is_err(), "{body}");
        }
    }

    #[test]
    fn the_caller_can_stop_the_reading() {
        let body = r#"{"rows":[{"id":"a","doc":{}},{"id":"b","doc":{}},{"id":"c","doc":{}}]}"#;
        let mut seen = 0;
        let complete = each_row(body.as_bytes(), |_: Row| {
            seen += 1;
            seen < 2
        });
        assert_eq!(complete.ok(), Some(false));
        assert_eq!(seen, 2);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_export_parser_reads_chunks_and_leaves_out_design_documents() {
        let (chunks, chunks_rx) = mpsc::channel(4);
        let (pages, mut pages_rx) = mpsc::channel(4);
        let parser =
            tokio::task::spawn_blocking(move || parse_export(ChunkReader::new(chunks_rx), pages));
        let mut body = String::from(r#"{"total_rows":2501,"offset":0,"rows":["#);
        body.push_str(r#"{"id":"_design/x","doc":{"_id":"_design/x","_rev":"1-a"}}"#);
        for i in 0..2500 {
            body.push_str(&format!(
                r#",{{"id":"k{i:04}","doc":{{"_id":"k{i:04}","_rev":"1-x","url":"/{i}","n":{i}}}}}"#
            ));
        }
        body.push_str("]}");
        let sender = tokio::spawn(async move {
            // Chunks that cut through rows and strings.
            for piece in body.as_bytes().chunks(7) {
                if chunks
                    .send(Ok(Bytes::copy_from_slice(piece)))
                    .await
                    .is_err()
                {
                    break;
                }
            }
        });
        let mut all = Vec::new();
        while let Some(page) = pages_rx.recv().await {
            all.extend(page);
        }
        sender.await.expect("sender");
        assert_eq!(parser.await.expect("parser").ok(), Some(true));
        assert_eq!(all.len(), 2500);
        assert_eq!(all[7].0, "k0007");
        assert_eq!(
            Value::Object(all[7].1.clone()).to_string(),
            r#"{"url":"/7","n":7}"#
        );
    }

    #[tokio::test]
    async fn a_failed_stream_fails_the_parser() {
        let (chunks, chunks_rx) = mpsc::channel(4);
        let (pages, _pages_rx) = mpsc::channel(4);
        chunks
            .send(Ok(Bytes::from_static(b"{\"rows\":[{\"id\":\"a\"")))
            .await
            .expect("send");
        chunks
            .send(Err(io::Error::other("connection reset")))
            .await
            .expect("send");
        drop(chunks);
        let result =
            tokio::task::spawn_blocking(move || parse_export(ChunkReader::new(chunks_rx), pages))
                .await
                .expect("parser");
        assert!(
            result.is_err_and(|e| e.to_string().contains("connection reset")),
            "the reading error comes through"
        );
    }

    fn answer(id: &str, error: Option<&str>, reason: Option<&str>) -> WriteResult {
        WriteResult {
            id: Some(id.into()),
            error: error.map(str::to_owned),
            reason: reason.map(str::to_owned),
        }
    }

    #[test]
    fn bulk_answers_become_outcomes_by_id() {
        let sent = [
            ("a", false),
            ("b", true),
            ("c", false),
            ("d", true),
            ("e", false),
        ];
        let results = vec![
            answer(
                "e",
                Some("forbidden"),
                Some("only admins and the qrtag_editor role may change links"),
            ),
            answer("b", None, None),
            answer("a", None, None),
            answer("c", Some("conflict"), Some("Document update conflict.")),
            answer("d", Some("conflict"), Some("Document update conflict.")),
        ];
        assert_eq!(
            outcomes(&sent, results.clone(), OnExisting::Refuse),
            [
                BulkOutcome::Created,
                BulkOutcome::Updated,
                BulkOutcome::Exists,
                BulkOutcome::Exists,
                BulkOutcome::Refused(
                    "forbidden: only admins and the qrtag_editor role may change links".into()
                ),
            ]
        );
        let over = outcomes(&sent, results, OnExisting::Overwrite);
        assert!(
            matches!(&over[2], BulkOutcome::Refused(r) if r.starts_with("conflict: someone else wrote it"))
        );
        assert_eq!(
            outcomes(&[("z", false)], vec![], OnExisting::Refuse),
            [BulkOutcome::Refused("CouchDB gave no answer for it".into())]
        );
    }

    #[test]
    fn bulk_bodies_put_id_and_rev_first() {
        let Value::Object(fields) = json!({"url": "/a", "note": "n"}) else {
            unreachable!()
        };
        let d = BulkDoc::new(LinkKey::parse("docs/api").expect("key"), fields);
        let e = BulkDoc::new(
            LinkKey::parse("e").expect("key"),
            crate::link::Document::new(),
        );
        let body = bulk_body(&[d, e], &[Some("3-\"x".into()), None]);
        assert_eq!(
            body,
            r#"{"docs":[{"_id":"docs/api","_rev":"3-\"x","url":"/a","note":"n"},{"_id":"e"}]}"#
        );
        let parsed: Value = serde_json::from_str(&body).expect("valid JSON");
        assert_eq!(parsed["docs"][0]["note"], "n");
        assert_eq!(bulk_body(&[], &[]), r#"{"docs":[]}"#);
    }

    #[test]
    fn the_lookup_follows_the_database_size_against_the_file() {
        assert_eq!(Lookup::choose(0, 1_000_000), Lookup::Nothing);
        // A design document alone: one short listing.
        assert_eq!(Lookup::choose(1, 1), Lookup::Listing);
        assert_eq!(Lookup::choose(1_000_000, 1_000_000), Lookup::Listing);
        assert_eq!(Lookup::choose(10_000_000, 1_000_000), Lookup::Listing);
        assert_eq!(Lookup::choose(10_000_001, 1_000_000), Lookup::ByKey);
        assert_eq!(Lookup::choose(1_000_000, 10), Lookup::ByKey);
        assert_eq!(Lookup::choose(u64::MAX, usize::MAX), Lookup::Listing);
    }

    #[test]
    fn id_rows_are_read_from_a_listing_without_documents() {
        let body = r#"{"total_rows":3,"offset":0,"rows":[
{"id":"_design/qrtag","key":"_design/qrtag","value":{"rev":"1-a"}},
{"id":"a","key":"a","value":{"rev":"2-b"}},
{"id":"b/c","key":"b/c","value":{"rev":"1-c"}}
]}"#;
        let mut ids = Vec::new();
        let complete = each_row(body.as_bytes(), |row: IdRow| {
            ids.extend(row.id);
            true
        });
        assert_eq!(complete.ok(), Some(true));
        assert_eq!(ids, ["_design/qrtag", "a", "b/c"]);
    }
}
