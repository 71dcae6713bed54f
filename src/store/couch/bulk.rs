//! Bulk import and export on CouchDB.
//!
//! - Which keys exist, and at which revision: `POST _all_docs` with the keys,
//!   one request per batch.
//! - Writes: `POST _bulk_docs`, one request per batch. When overwriting, the
//!   current revisions are read just before, so a document edited in between
//!   comes back as a conflict for that document alone. Each document's answer
//!   (created, conflict, `forbidden` from the validation) is its outcome.
//! - Export: one `GET _all_docs?include_docs=true`, streamed and parsed row
//!   by row on a blocking thread, so neither the response nor the database is
//!   ever held whole. One request is one read: CouchDB serves it from the
//!   snapshot each shard had when the request reached it, so a document
//!   written during the export is in it as it was, or not at all, never
//!   half-way as paging could make it. `_all_docs` is in raw (byte) order of
//!   the IDs, the order the embedded store exports in.

use std::collections::HashMap;
use std::io::{self, Read};
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use reqwest::Method;
use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Value, json};
use tokio::sync::mpsc::{self, Receiver, Sender};

use super::{CouchStore, REQUEST_TIMEOUT, document_of, is_design};
use crate::link::Document;
use crate::link_key::LinkKey;
use crate::store::{BulkDoc, BulkOutcome, ExportPage, OnExisting, StoreError};

/// Documents per `_bulk_docs` request (and keys per `_all_docs` lookup):
/// about 100 kB of links, answered in well under the request time limit
/// even with the validation function run on each.
pub(super) const BATCH: usize = 1000;
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
        let body: Vec<Value> = docs
            .iter()
            .zip(&revs)
            .map(|(d, rev)| Value::Object(couch_doc(d, rev.as_deref())))
            .collect();
        let req = self
            .http
            .request(Method::POST, self.http.db_url(&["_bulk_docs"]))
            .json(&json!({ "docs": body }));
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
        let resp = self
            .http
            .send(self.http.stream_request(Method::GET, url))
            .await?;
        if !resp.status().is_success() {
            return Err(self.http.refusal(resp, &what).await);
        }
        let (chunks, chunks_rx) = mpsc::channel(16);
        let parser = tokio::task::spawn_blocking(move || parse_export(chunks_rx, pages));
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
            .map_err(|e| StoreError::Other(format!("the export task failed: {e}")))?;
        if let Some(e) = failed {
            return Err(e);
        }
        match parsed {
            Ok(true) => Ok(()),
            Ok(false) => Err(StoreError::Other(
                "the export was stopped before the end".into(),
            )),
            Err(e) => Err(StoreError::Other(format!(
                "unexpected answer from CouchDB at {} to {what}: {e}",
                self.http.server()
            ))),
        }
    }
}

/// The body of one document in `_bulk_docs`: `_id`, `_rev` when replacing,
/// then the fields.
fn couch_doc(doc: &BulkDoc, rev: Option<&str>) -> Document {
    let mut body = Document::new();
    body.insert("_id".into(), Value::String(doc.key().as_str().to_owned()));
    if let Some(rev) = rev {
        body.insert("_rev".into(), Value::String(rev.to_owned()));
    }
    for (k, v) in doc.document() {
        if k != "_id" && k != "_rev" {
            body.insert(k, v);
        }
    }
    body
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

/// The export's parser, on a blocking thread: reads the streamed body from
/// `chunks` and sends pages of documents (design documents left out) to
/// `pages`. `Ok(false)` when `pages` was closed before the end.
fn parse_export(
    chunks: Receiver<io::Result<Bytes>>,
    pages: Sender<ExportPage>,
) -> Result<bool, serde_json::Error> {
    let mut page = Vec::with_capacity(EXPORT_PAGE);
    let complete = each_row(ChunkReader::new(chunks), |id, doc| {
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

/// Reads an `_all_docs?include_docs=true` body from `body` one row at a time,
/// handing each row's ID and document to `each` (rows without a document are
/// skipped) until it returns false. Returns whether every row was read; the
/// other members of the body (`total_rows`, `offset`, ...) are skipped in any
/// order.
fn each_row(
    body: impl Read,
    mut each: impl FnMut(String, Value) -> bool,
) -> Result<bool, serde_json::Error> {
    let mut stopped = false;
    let mut de = serde_json::Deserializer::from_reader(body);
    let result = Body {
        each: &mut each,
        stopped: &mut stopped,
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
struct Body<'a, F> {
    each: &'a mut F,
    stopped: &'a mut bool,
}

impl<'de, F: FnMut(String, Value) -> bool> DeserializeSeed<'de> for Body<'_, F> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, F: FnMut(String, Value) -> bool> Visitor<'de> for Body<'_, F> {
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

struct Rows<'a, F> {
    each: &'a mut F,
    stopped: &'a mut bool,
}

impl<'de, F: FnMut(String, Value) -> bool> DeserializeSeed<'de> for Rows<'_, F> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, F: FnMut(String, Value) -> bool> Visitor<'de> for Rows<'_, F> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("_all_docs rows")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(row) = seq.next_element::<Row>()? {
            let (Some(id), Some(doc)) = (row.id, row.doc) else {
                continue;
            };
            if !(self.each)(id, doc) {
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
        each_row(body.as_bytes(), |id, doc| {
            rows.push((id, doc));
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
        let complete = each_row(body.as_bytes(), |_, _| {
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
        let parser = tokio::task::spawn_blocking(move || parse_export(chunks_rx, pages));
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
        let result = tokio::task::spawn_blocking(move || parse_export(chunks_rx, pages))
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
        assert_eq!(
            Value::Object(couch_doc(&d, Some("3-abc"))).to_string(),
            r#"{"_id":"docs/api","_rev":"3-abc","url":"/a","note":"n"}"#
        );
        assert_eq!(
            Value::Object(couch_doc(&d, None)).to_string(),
            r#"{"_id":"docs/api","url":"/a","note":"n"}"#
        );
    }
}
