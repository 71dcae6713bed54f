//! A link's history on CouchDB (issue 35): one document an entry in a
//! database of its own, `LINKS-history` beside the links (`qrtag setup`
//! makes it, append-only like the audit log's). The follower of every node
//! records each change it sees, qrtag's own writes and edits made outside
//! qrtag alike, so one mechanism covers both: the entry's `_id` is the key
//! and the generation of the revision it records (`spring:0000000007`), so
//! two nodes, or one reading a change again after a reconnect, write the
//! same document once (a 409 means it is already there).
//!
//! Each entry keeps the link's fields as the write left them (`after`),
//! so the next change is diffed against the newest entry with no other
//! state: several changes between two reads of the feed collapse into one
//! entry, and a change made while no node follows is recorded when one
//! next sees the key change again.
//!
//! The bound: each entry written deletes the key's entries past the newest
//! [`KEEP`] ([`HistoryDb::prune`]), so a link keeps at most [`KEEP`] live
//! documents however often it changes, for the cost of one `_all_docs`
//! read of IDs (skipping [`KEEP`] rows in CouchDB's B-tree) and, past the
//! bound, one `_bulk_docs` of a few deletions an edit. Two nodes pruning
//! the same entry both end well: the second one's conflict means it is
//! gone already.

use reqwest::Method;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::CouchHttp;
use crate::link::history::{self, Entry, Field, KEEP};
use crate::link::{ACTOR_FIELD, Document};
use crate::store::StoreError;
use crate::values::couch::CouchDbName;
use crate::values::timestamp::time_text;

/// What the history database's name adds to the links database's.
pub const SUFFIX: &str = "-history";

/// The field where qrtag's own writes stamp the generation of the revision
/// they make. An edit made outside qrtag that keeps qrtag's stamps (a
/// document copied, one field changed) keeps an older generation here, so
/// it is told apart and recorded as
/// [`Actor::Outside`](crate::values::actor::Actor::Outside).
pub const GEN_FIELD: &str = "changed_gen";

/// The history database beside `links`.
pub fn database_name(links: &CouchDbName) -> Result<CouchDbName, StoreError> {
    CouchDbName::parse(&format!("{links}{SUFFIX}")).map_err(|_| {
        StoreError::Other(format!(
            "the database name {links} leaves no room for its history database \
             ({links}{SUFFIX} is over CouchDB's 238 characters); choose a shorter --couchdb-db"
        ))
    })
}

/// The entry ID of `key` at revision generation `generation`: zero-padded,
/// so `_all_docs` orders a key's entries by generation.
fn entry_id(key: &str, generation: u64) -> String {
    format!("{key}:{generation:010}")
}

/// The generation of a revision (`7-abc` → 7).
fn generation(rev: &str) -> Option<u64> {
    rev.split_once('-')?.0.parse().ok()
}

/// Stamps [`GEN_FIELD`] on a link written by qrtag (one that names its
/// actor) over revision `rev` (`None`: a new document, generation 1). A
/// document made again over a deleted one gets a later generation from
/// CouchDB than 1, so its first entry reads as outside qrtag.
pub(crate) fn stamp_generation(body: &mut Document, rev: Option<&str>) {
    if !body.contains_key(ACTOR_FIELD) {
        return;
    }
    let made = rev.and_then(generation).map_or(1, |g| g + 1);
    body.insert(GEN_FIELD.into(), Value::from(made));
}

/// `doc` as it is recorded at generation `generation`: a stamped
/// generation other than this one means the stamps are an earlier qrtag
/// write's, so they are dropped and the entry names no one but the revision.
fn as_written(doc: &Document, generation: u64) -> std::borrow::Cow<'_, Document> {
    match doc.get(GEN_FIELD).and_then(Value::as_u64) {
        Some(g) if g != generation => {
            let mut doc = doc.clone();
            for field in [ACTOR_FIELD, "changed_via", "changed_at"] {
                doc.shift_remove(field);
            }
            std::borrow::Cow::Owned(doc)
        }
        _ => std::borrow::Cow::Borrowed(doc),
    }
}

pub(crate) struct HistoryDb {
    http: CouchHttp,
}

#[derive(Deserialize)]
struct Rows {
    rows: Vec<Row>,
}

#[derive(Deserialize)]
struct Row {
    id: String,
    #[serde(default)]
    doc: Option<Value>,
    #[serde(default)]
    value: Option<RowValue>,
}

#[derive(Deserialize)]
struct RowValue {
    rev: String,
}

/// How many entries past the bound one record deletes at most: one a write
/// once the bound is reached, more when a database from before pruning
/// (or a node that could not prune) left a backlog, which then shrinks by
/// this many a change.
const PRUNE_BATCH: u64 = 16;

/// The field of a pruned entry's tombstone naming the newer entry that put
/// it past the bound; `validate_history.js` lets an entry be deleted only
/// with it.
pub const PRUNED_BY: &str = "pruned_by";

/// One document's answer in a `_bulk_docs` response.
#[derive(Deserialize)]
struct BulkAnswer {
    #[serde(default)]
    id: String,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    reason: Option<String>,
}

/// A stored entry: the entry, and the link's fields after it.
struct Stored {
    generation: u64,
    entry: Entry,
    after: Document,
}

impl HistoryDb {
    pub(crate) fn beside(links: &CouchHttp) -> Result<Self, StoreError> {
        Ok(Self {
            http: links.for_db(database_name(links.db())?),
        })
    }

    /// `key`'s stored entries, oldest first, at most `limit`, newest kept.
    async fn newest(&self, key: &str, limit: u64) -> Result<Vec<Stored>, StoreError> {
        let mut url = self.http.db_url(&["_all_docs"]);
        url.query_pairs_mut()
            .append_pair("include_docs", "true")
            .append_pair("descending", "true")
            .append_pair("limit", &limit.to_string())
            .append_pair(
                "startkey",
                &Value::String(format!("{key}:\u{fff0}")).to_string(),
            )
            .append_pair("endkey", &Value::String(format!("{key}:")).to_string());
        let what = format!("database {} (_all_docs)", self.http.db());
        let resp = self.http.send(self.http.request(Method::GET, url)).await?;
        if resp.status().as_u16() == 404 {
            return Err(self.http.missing_db());
        }
        if !resp.status().is_success() {
            return Err(self.http.refusal(resp, &what).await);
        }
        let rows: Rows = self.http.read_json(resp, &what).await?;
        let mut kept: Vec<Stored> = rows
            .rows
            .into_iter()
            .filter_map(|r| stored_of(&r.id, r.doc?))
            .collect();
        kept.reverse();
        Ok(kept)
    }

    /// `key`'s kept entries, oldest first: the last [`KEEP`].
    pub(crate) async fn read(&self, key: &str) -> Result<Vec<Entry>, StoreError> {
        Ok(self
            .newest(key, KEEP)
            .await?
            .into_iter()
            .map(|s| s.entry)
            .collect())
    }

    /// Records the change of `key` to `doc` at revision `rev`, against the
    /// newest entry kept; nothing when that entry is as new or newer (a
    /// change seen again) or the change touched no followed field.
    pub(crate) async fn record(
        &self,
        key: &str,
        rev: &str,
        doc: &Document,
    ) -> Result<(), StoreError> {
        let Some(generation) = generation(rev) else {
            return Ok(());
        };
        let last = self.newest(key, 1).await?.pop();
        if last.as_ref().is_some_and(|l| l.generation >= generation) {
            return Ok(());
        }
        let n = last.as_ref().map_or(1, |l| l.entry.n + 1);
        let now = time_text(chrono::Utc::now());
        let doc = as_written(doc, generation);
        let Some(entry) = history::entry(n, last.as_ref().map(|l| &l.after), &doc, Some(rev), &now)
        else {
            return Ok(());
        };
        let body = document_of(&entry, &doc)?;
        let id = entry_id(key, generation);
        let req = self
            .http
            .request(Method::PUT, self.http.db_url(&[id.as_str()]))
            .json(&body);
        let resp = self.http.send(req).await?;
        match resp.status().as_u16() {
            // A 409: another node (or this one, before a reconnect) wrote
            // it; it may not have pruned yet, and pruning twice is harmless.
            201 | 202 | 409 => self.prune(key, &id).await,
            404 => Err(self.http.missing_db()),
            _ => Err(self.http.refusal(resp, "writing a history entry").await),
        }
    }

    /// Deletes `key`'s entries past the newest [`KEEP`], at most
    /// [`PRUNE_BATCH`] of them, each tombstone naming `newest` (the entry
    /// just recorded). An entry already deleted (a conflict, or one not
    /// found) is done, so nodes pruning at once and retries agree.
    async fn prune(&self, key: &str, newest: &str) -> Result<(), StoreError> {
        let mut url = self.http.db_url(&["_all_docs"]);
        url.query_pairs_mut()
            .append_pair("descending", "true")
            .append_pair("skip", &KEEP.to_string())
            .append_pair("limit", &PRUNE_BATCH.to_string())
            .append_pair(
                "startkey",
                &Value::String(format!("{key}:\u{fff0}")).to_string(),
            )
            .append_pair("endkey", &Value::String(format!("{key}:")).to_string());
        let what = format!("database {} (_all_docs, past the bound)", self.http.db());
        let resp = self.http.send(self.http.request(Method::GET, url)).await?;
        if !resp.status().is_success() {
            return Err(self.http.refusal(resp, &what).await);
        }
        let rows: Rows = self.http.read_json(resp, &what).await?;
        let docs = prune_docs(key, newest, rows.rows);
        if docs.is_empty() {
            return Ok(());
        }
        let what = format!("database {} (_bulk_docs, pruning {key})", self.http.db());
        let req = self
            .http
            .request(Method::POST, self.http.db_url(&["_bulk_docs"]))
            .json(&serde_json::json!({ "docs": docs }));
        let answers: Vec<BulkAnswer> = self.http.json(req, &what).await?;
        match answers.into_iter().find(|a| !pruned(a)) {
            None => Ok(()),
            Some(a) => Err(StoreError::Other(format!(
                "the entry {newest} was recorded, but deleting {} past the last {KEEP} was refused: {}: {}{}",
                a.id,
                a.error.as_deref().unwrap_or("?"),
                a.reason.as_deref().unwrap_or("no reason given"),
                if a.error.as_deref() == Some("forbidden") {
                    " (run `qrtag setup` as a CouchDB admin: it installs the validation that allows pruning)"
                } else {
                    ""
                },
            ))),
        }
    }
}

/// The tombstones deleting `rows` (entries past the bound, from
/// `_all_docs`), each naming `newest`; a row that is not one of `key`'s
/// entries, or is `newest` itself, is left alone.
fn prune_docs(key: &str, newest: &str, rows: Vec<Row>) -> Vec<Value> {
    rows.into_iter()
        .filter(|r| r.id != newest && is_entry_of(key, &r.id))
        .filter_map(|r| {
            Some(serde_json::json!({
                "_id": r.id,
                "_rev": r.value?.rev,
                "_deleted": true,
                PRUNED_BY: newest,
            }))
        })
        .collect()
}

/// Whether `id` is an entry ID of `key` ([`entry_id`]'s shape).
fn is_entry_of(key: &str, id: &str) -> bool {
    id.strip_prefix(key)
        .and_then(|rest| rest.strip_prefix(':'))
        .is_some_and(|g| g.len() == 10 && g.bytes().all(|b| b.is_ascii_digit()))
}

/// Whether a `_bulk_docs` answer leaves the entry deleted: done, or
/// deleted already by another node (a conflict, or not found).
fn pruned(a: &BulkAnswer) -> bool {
    matches!(a.error.as_deref(), None | Some("conflict" | "not_found"))
}

/// The followed fields of `doc`, as the next change is diffed against.
fn followed(doc: &Document) -> Document {
    Field::ALL
        .into_iter()
        .filter_map(|f| Some((f.doc_name().to_owned(), f.value(doc)?.clone())))
        .collect()
}

fn document_of(entry: &Entry, after: &Document) -> Result<Map<String, Value>, StoreError> {
    let mut doc = Map::new();
    doc.insert(
        "entry".into(),
        serde_json::to_value(entry).map_err(|e| StoreError::Other(e.to_string()))?,
    );
    doc.insert("after".into(), Value::Object(followed(after)));
    Ok(doc)
}

/// A stored entry; `None` for a document a newer qrtag (or a person) wrote
/// in another shape.
fn stored_of(id: &str, doc: Value) -> Option<Stored> {
    let generation = id.rsplit_once(':')?.1.parse().ok()?;
    let entry = serde_json::from_value(doc.get("entry")?.clone()).ok()?;
    let after = doc.get("after")?.as_object()?.clone();
    Some(Stored {
        generation,
        entry,
        after,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::values::actor::Actor;
    use serde_json::json;

    #[test]
    fn ids_order_by_generation_and_round_trip() {
        assert!(entry_id("spring", 9) < entry_id("spring", 10));
        assert_eq!(generation("12-abc"), Some(12));
        assert_eq!(generation("junk"), None);
        let after = json!({"url": "https://a.example/", "changed_at": "x"})
            .as_object()
            .cloned()
            .unwrap_or_default();
        let entry = history::entry(1, None, &after, Some("1-a"), "now").expect("entry");
        let doc = document_of(&entry, &after).expect("doc");
        let stored = stored_of(&entry_id("spring", 1), Value::Object(doc)).expect("stored");
        assert_eq!(stored.generation, 1);
        assert_eq!(stored.entry, entry);
        assert_eq!(
            Value::Object(stored.after),
            json!({"url": "https://a.example/"})
        );
    }

    #[test]
    fn pruning_deletes_only_the_keys_older_entries() {
        let row = |id: &str| Row {
            id: id.into(),
            doc: None,
            value: Some(RowValue { rev: "1-a".into() }),
        };
        let newest = entry_id("spring", 300);
        let docs = prune_docs(
            "spring",
            &newest,
            vec![
                row(&entry_id("spring", 7)),
                row(&newest),
                row("spring:junk"),
                row(&entry_id("spring/x", 3)),
            ],
        );
        assert_eq!(
            docs,
            vec![
                json!({"_id": "spring:0000000007", "_rev": "1-a", "_deleted": true,
                        "pruned_by": "spring:0000000300"})
            ]
        );
        let answer = |error: Option<&str>| BulkAnswer {
            id: "x".into(),
            error: error.map(str::to_owned),
            reason: None,
        };
        assert!(pruned(&answer(None)));
        assert!(pruned(&answer(Some("conflict"))));
        assert!(pruned(&answer(Some("not_found"))));
        assert!(!pruned(&answer(Some("forbidden"))));
    }

    #[test]
    fn a_copy_of_a_qrtag_write_is_an_outside_edit() {
        let mut doc = json!({"url": "/x", "changed_actor": {"kind": "console", "user": "ann"}})
            .as_object()
            .cloned()
            .unwrap_or_default();
        stamp_generation(&mut doc, Some("4-abc"));
        assert_eq!(doc[GEN_FIELD], 5);
        assert!(as_written(&doc, 5).contains_key("changed_actor"));
        let copied = as_written(&doc, 6);
        let entry = history::entry(2, None, &copied, Some("6-d"), "now").expect("entry");
        assert_eq!(
            entry.actor,
            Actor::Outside {
                rev: Some("6-d".into())
            }
        );
        let mut by_hand = json!({"url": "/x"})
            .as_object()
            .cloned()
            .unwrap_or_default();
        stamp_generation(&mut by_hand, None);
        assert!(!by_hand.contains_key(GEN_FIELD), "not a qrtag write");
    }
}
