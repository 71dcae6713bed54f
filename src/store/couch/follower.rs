//! Keeps the snapshot a live mirror of the CouchDB database.
//!
//! A full load ([`couch_load`](super::couch_load)) reads `_all_docs` in key
//! ranges at once into a fresh table, starting from the database's
//! `update_seq` read just before; the continuous
//! `_changes` feed then runs from that sequence, so nothing written during the
//! load is missed (changes seen twice are harmless: they are idempotent).
//!
//! This is written on plain HTTP rather than `couch_rs`'s `ChangesStream`,
//! which cannot take a heartbeat, panics on the poll after a request error and
//! delivers nothing from PouchDB Server through gzip. The feed asks for a
//! heartbeat and `Accept-Encoding: identity`, so every change is sent as soon
//! as it happens and a silent connection can be told from a quiet database.
//!
//! Nothing here ever stops: failures are recorded on the snapshot for
//! `/readyz` and retried with capped exponential backoff, while redirects go
//! on from the last table published.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use reqwest::Method;
use reqwest::header::ACCEPT_ENCODING;
use serde::Deserialize;
use serde_json::Value;

use super::feed_lines::{self, LineSplitter, id_in_head, seq_in};
use super::{CouchHttp, document_of, is_design, too_large};
use crate::snapshot::{Change, LinkTable, Snapshot};
use crate::store::{FileMark, Resume, StoreError};

/// How often CouchDB sends an empty line on an idle feed. Apache CouchDB
/// sends a continuous feed's response head with its first line, so this
/// also bounds how long a healthy server takes to answer a reconnect.
const HEARTBEAT: Duration = Duration::from_secs(2);
/// A feed silent for this long is dead (a dropped NAT entry, a stopped
/// proxy, a frozen node), even if TCP has not noticed.
const IDLE_LIMIT: Duration = Duration::from_secs(6);
/// How long a reconnect waits for the feed's response head: a heartbeat
/// and room for a slow machine. A cluster coordinator answers a `since`
/// that names a shard copy on a frozen node only once Erlang declares that
/// node down (`net_ticktime`, 45-75 s by default); past this the follower
/// reloads instead (see [`FeedEnd::Stalled`]).
const FEED_HEAD_TIMEOUT: Duration = Duration::from_secs(6);
const _: () = assert!(FEED_HEAD_TIMEOUT.as_secs() < super::HEAD_TIMEOUT.as_secs());
/// How often `_membership` is read for `/readyz` and `/metrics`.
const MEMBERSHIP_EVERY: Duration = Duration::from_secs(5);
const FIRST_RETRY: Duration = Duration::from_millis(100);
/// Small enough that the service is back within seconds of CouchDB, large
/// enough that a dead server sees one request every couple of seconds.
const MAX_RETRY: Duration = Duration::from_secs(2);
/// A changes line longer than this holds a document over the limit: it is
/// counted as invalid from its first bytes, and the rest is not kept.
const MAX_LINE: usize = crate::store::MAX_DOCUMENT + 4096;

pub(crate) fn spawn(
    http: CouchHttp,
    snapshot: Arc<Snapshot>,
    resume: Option<Resume>,
) -> tokio::task::JoinHandle<()> {
    let (history, changes) = tokio::sync::mpsc::unbounded_channel();
    let follower = Follower {
        http: http.clone(),
        snapshot,
        backoff: Backoff::default(),
        failing: None,
        history,
    };
    let recorder = record_history(http.clone(), changes);
    tokio::spawn(async move {
        tokio::join!(follower.run(resume), watch_membership(http), recorder);
    })
}

/// Issue 35: records each upsert the feed delivers in the history database
/// (`super::history`), one at a time and in the feed's order, so the feed
/// never waits on it. A failure is logged and the change left unrecorded:
/// the next change of the key is diffed against the last entry kept. The
/// log says it once, then at most once every [`HISTORY_WARNING_EVERY`]
/// with how many more failed: a database where `qrtag setup` never ran
/// fails every change the same way.
async fn record_history(http: CouchHttp, mut changes: HistoryChanges) {
    let db = match super::history::HistoryDb::beside(&http) {
        Ok(db) => db,
        Err(e) => {
            tracing::warn!("no link history on CouchDB: {e}");
            return;
        }
    };
    let mut warnings = super::throttle::Throttle::new(HISTORY_WARNING_EVERY);
    while let Some((key, rev, doc)) = changes.recv().await {
        if let Err(e) = db.record(&key, &rev, &doc).await
            && let Some(held) = warnings.due(std::time::Instant::now())
        {
            let more = match held {
                0 => String::new(),
                n => format!(" ({n} more changes went unrecorded since the last warning)"),
            };
            tracing::warn!(
                "could not record the history of {key} at {rev}: {e}{more}; \
                 this warning is repeated at most once every {} minutes",
                HISTORY_WARNING_EVERY.as_secs() / 60
            );
        }
    }
}

/// How often at most the recorder warns (the first failure at once).
const HISTORY_WARNING_EVERY: Duration = Duration::from_secs(5 * 60);

/// Key, revision and document of each upsert, for [`record_history`].
type HistoryChanges = tokio::sync::mpsc::UnboundedReceiver<(String, String, crate::link::Document)>;

/// Reads `_membership` now and then, for `/readyz` and `/metrics`; never ends.
async fn watch_membership(http: CouchHttp) {
    loop {
        http.read_membership().await;
        tokio::time::sleep(MEMBERSHIP_EVERY).await;
    }
}

struct Follower {
    http: CouchHttp,
    snapshot: Arc<Snapshot>,
    backoff: Backoff,
    /// The failure being retried, so an outage is logged when it starts and
    /// ends rather than on every retry.
    failing: Option<String>,
    /// Issue 35: where each upsert goes to be recorded ([`record_history`]).
    history: tokio::sync::mpsc::UnboundedSender<(String, String, crate::link::Document)>,
}

/// Why a feed connection ended.
enum FeedEnd {
    /// The server closed the feed properly (it sent `last_seq`); reconnect at once.
    Closed,
    /// The sequence no longer means anything (the database was deleted, or
    /// refuses the `since`): load everything again.
    Reload(String),
    /// A failure worth retrying from the same sequence after a pause.
    Failed(StoreError),
    /// No response head within [`FEED_HEAD_TIMEOUT`]: on a cluster, the
    /// sequence names a shard copy on a node that does not answer, and the
    /// same `since` would stall again until the node is declared down. A
    /// full load instead reads the `update_seq` and `_all_docs` from the
    /// copies that answer first, so its sequence names nodes that answer.
    /// Nothing is missed: the load holds every document as of a sequence
    /// read before it, and any write a lagging copy has not yet received
    /// reaches it by internal replication and appears in its feed after
    /// that sequence.
    Stalled(String),
}

impl Follower {
    /// With `resume`, the snapshot already serves the links as of that
    /// sequence (from the snapshot file): follow from there, and load
    /// everything only if CouchDB no longer knows the sequence, or holds
    /// another marker than the file (a restored or re-created database).
    /// A file held back ([`Resume::unconfirmed`]) is published only once
    /// the marker is confirmed; until then the server answers 503 as during
    /// a full load, which is what it does instead if the marker is missing.
    async fn run(mut self, mut resume: Option<Resume>) {
        loop {
            let resumed = match resume.take() {
                Some(Resume {
                    seq,
                    unchecked_mark: Some(mark),
                    unconfirmed,
                }) => {
                    let same = self.same_state(&mark).await;
                    if let (true, Some(table)) = (same, unconfirmed) {
                        tracing::info!(
                            links = table.len(),
                            seq = %seq,
                            "snapshot file confirmed by the database; serving it and catching up"
                        );
                        self.snapshot.publish(table);
                        self.snapshot.mark_loaded();
                    }
                    same.then_some(seq)
                }
                Some(Resume { seq, .. }) => Some(seq),
                None => None,
            };
            let since = match resumed {
                Some(since) => since,
                None => {
                    let table = self.load_until_done().await;
                    tracing::info!(
                        links = table.len(),
                        invalid = table.invalid_count(),
                        db = %self.http.db(),
                        "links loaded from CouchDB"
                    );
                    let since = table.seq().cloned().unwrap_or(Value::Null);
                    self.snapshot.publish(table);
                    self.snapshot.mark_loaded();
                    since
                }
            };
            let why = self.follow(since).await;
            tracing::warn!(reason = %why, "reloading every link from CouchDB");
            self.snapshot.set_problem(Some(why));
        }
    }

    /// Whether the database holds the marker the snapshot file was saved
    /// with, asked until CouchDB answers (the file serves meanwhile).
    async fn same_state(&mut self, mark: &FileMark) -> bool {
        let holds = loop {
            match super::mark::holds(&self.http, mark.in_file.as_deref()).await {
                Ok(holds) => {
                    self.backoff.reset();
                    self.recovered();
                    break holds;
                }
                Err(e) => {
                    self.snapshot.follower().reconnected();
                    self.retry_after("reading the snapshot file's marker from CouchDB", &e)
                        .await;
                }
            }
        };
        if holds {
            return true;
        }
        let why = "the snapshot file was taken from another state of this database \
                   (restored from a backup, or re-created?)";
        tracing::warn!(file = %mark.file, "{why}; reloading every link from CouchDB");
        self.snapshot
            .set_problem(Some(format!("{why}: reloading every link from CouchDB")));
        false
    }

    async fn load_until_done(&mut self) -> LinkTable {
        loop {
            match super::load::load(&self.http).await {
                Ok(done) => {
                    self.backoff.reset();
                    self.recovered();
                    return done;
                }
                Err(e) => self.retry_after("loading links", &e).await,
            }
        }
    }

    /// Follows the feed from `since`, reconnecting as needed; returns only
    /// when a full reload is due, with the reason.
    async fn follow(&mut self, mut since: Value) -> String {
        loop {
            let end = self.feed(&mut since).await;
            if !matches!(end, FeedEnd::Reload(_) | FeedEnd::Stalled(_)) {
                self.snapshot.follower().reconnected();
            }
            match end {
                FeedEnd::Stalled(why) => {
                    self.snapshot.follower().reconnected();
                    return why;
                }
                // A pause, so a server that ends every feed at once is not
                // asked again in a tight loop.
                FeedEnd::Closed => tokio::time::sleep(FIRST_RETRY).await,
                FeedEnd::Reload(why) => return why,
                FeedEnd::Failed(e) => self.retry_after("following CouchDB changes", &e).await,
            }
        }
    }

    /// Records a failure for `/readyz`, logs it if it is new, and waits out
    /// the backoff. Redirects go on from the snapshot meanwhile.
    async fn retry_after(&mut self, doing: &str, e: &StoreError) {
        let delay = self.backoff.next_delay();
        let problem = format!("{doing}: {e}");
        if self.failing.as_deref() == Some(problem.as_str()) {
            tracing::debug!(error = %e, retry_in = ?delay, "{doing} failed again");
        } else {
            tracing::warn!(error = %e, retry_in = ?delay, "{doing} failed; retrying");
        }
        self.snapshot.set_problem(Some(format!(
            "{problem} (retrying in {:.1}s)",
            delay.as_secs_f32()
        )));
        self.failing = Some(problem);
        tokio::time::sleep(delay).await;
    }

    fn recovered(&mut self) {
        if let Some(problem) = self.failing.take() {
            tracing::info!(was = %problem, "CouchDB is reachable again");
        }
    }

    /// One connection to the continuous feed. `since` moves forward after
    /// each batch is published, so a reconnect resumes where this left off.
    async fn feed(&mut self, since: &mut Value) -> FeedEnd {
        let mut url = self.http.db_url(&["_changes"]);
        url.query_pairs_mut()
            .append_pair("feed", "continuous")
            .append_pair("include_docs", "true")
            .append_pair("heartbeat", &HEARTBEAT.as_millis().to_string())
            .append_pair("since", &seq_param(since));
        let req = self
            .http
            .stream_request(Method::GET, url)
            .header(ACCEPT_ENCODING, "identity");
        // Shorter than the head limit of every request, so it is this one.
        let resp = match tokio::time::timeout(FEED_HEAD_TIMEOUT, self.http.send(req)).await {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => return FeedEnd::Failed(e),
            Err(_) => {
                return FeedEnd::Stalled(format!(
                    "the changes feed did not answer within {}s (a frozen cluster node?)",
                    FEED_HEAD_TIMEOUT.as_secs()
                ));
            }
        };
        let status = resp.status().as_u16();
        if status != 200 {
            let what = format!("database {} (_changes)", self.http.db());
            let err = self.http.refusal(resp, &what).await;
            return match status {
                404 | 400 => FeedEnd::Reload(err.to_string()),
                _ => FeedEnd::Failed(err),
            };
        }
        self.snapshot.set_problem(None);
        self.recovered();

        let mut body = resp.bytes_stream();
        let mut lines = LineSplitter::new(MAX_LINE);
        let mut heard = false;
        loop {
            let chunk = match tokio::time::timeout(IDLE_LIMIT, body.next()).await {
                Err(_) => {
                    return FeedEnd::Failed(StoreError::Other(format!(
                        "no heartbeat from CouchDB for {}s",
                        IDLE_LIMIT.as_secs()
                    )));
                }
                Ok(None) => {
                    return FeedEnd::Failed(StoreError::Other(
                        "CouchDB closed the changes feed".into(),
                    ));
                }
                Ok(Some(Err(e))) => {
                    return FeedEnd::Failed(StoreError::Other(format!(
                        "lost the connection to CouchDB at {}: {}",
                        self.http.server(),
                        super::root_cause(&e)
                    )));
                }
                Ok(Some(Ok(chunk))) => chunk,
            };
            if !heard {
                // Only a feed that delivers resets the backoff, so a server
                // that accepts and hangs up at once is not hammered.
                heard = true;
                self.backoff.reset();
            }
            let mut batch = Vec::new();
            let mut batch_seq = None;
            let mut end = None;
            for line in lines.push(&chunk) {
                let parsed = match line {
                    feed_lines::FeedLine::Whole(line) => parse_line(&line),
                    feed_lines::FeedLine::TooLong { head, tail, len } => {
                        parse_long_line(&head, &tail, len)
                    }
                };
                match parsed {
                    Ok(Line::Heartbeat) => {}
                    Ok(Line::Change { seq, change, rev }) => {
                        if let (Some(Change::Upsert { key, doc }), Some(rev)) = (&change, rev) {
                            // Issue 35: the history, written off the feed.
                            let _ = self.history.send((key.clone(), rev, doc.clone()));
                        }
                        batch.extend(change);
                        batch_seq = Some(seq);
                    }
                    Ok(Line::End { last_seq }) => {
                        end = Some(last_seq);
                        break;
                    }
                    Err(why) => {
                        // Publish what came before; the rest is read again
                        // from `since` after the reconnect.
                        self.publish(batch, batch_seq, since);
                        return FeedEnd::Failed(StoreError::Other(why));
                    }
                }
            }
            self.publish(batch, batch_seq, since);
            if let Some(last_seq) = end {
                *since = last_seq;
                return FeedEnd::Closed;
            }
        }
    }

    fn publish(&self, batch: Vec<Change>, seq: Option<Value>, since: &mut Value) {
        self.snapshot.apply(batch, seq.clone());
        if let Some(seq) = seq {
            *since = seq;
        }
    }
}

/// A sequence as the `since` parameter: strings as they are, anything else
/// (PouchDB Server's integers) as JSON text.
fn seq_param(seq: &Value) -> String {
    match seq {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[derive(Debug)]
enum Line {
    Heartbeat,
    /// A change; `change` is `None` for design documents, which only move the
    /// sequence.
    Change {
        seq: Value,
        change: Option<Change>,
        /// The revision of an upserted document (issue 35: its history).
        rev: Option<String>,
    },
    End {
        last_seq: Value,
    },
}

#[derive(Deserialize)]
struct FeedLine {
    seq: Option<Value>,
    id: Option<String>,
    #[serde(default)]
    deleted: bool,
    /// Kept as text until its size is known.
    doc: Option<Box<serde_json::value::RawValue>>,
    last_seq: Option<Value>,
    error: Option<String>,
    reason: Option<String>,
}

fn parse_line(line: &[u8]) -> Result<Line, String> {
    if line.iter().all(u8::is_ascii_whitespace) {
        return Ok(Line::Heartbeat);
    }
    let l: FeedLine = serde_json::from_slice(line).map_err(|e| {
        format!(
            "unreadable line in the changes feed ({e}): {}",
            String::from_utf8_lossy(&line[..line.len().min(200)])
        )
    })?;
    if let Some(error) = l.error {
        return Err(format!(
            "the changes feed reported {error}: {}",
            l.reason.unwrap_or_default()
        ));
    }
    if let Some(last_seq) = l.last_seq {
        return Ok(Line::End { last_seq });
    }
    let (Some(seq), Some(key)) = (l.seq, l.id) else {
        return Err("a changes line without seq or id".into());
    };
    let mut rev = None;
    let change = if is_design(&key) {
        None
    } else if l.deleted {
        Some(Change::Delete { key })
    } else {
        // Without a document the change is shown as an empty one, which the
        // snapshot counts as invalid rather than silently keeping the old.
        match l.doc {
            Some(raw) if raw.get().len() > crate::store::MAX_DOCUMENT => Some(Change::Invalid {
                key,
                reason: too_large(raw.get().len()),
            }),
            // Valid JSON, but serde_json refuses nesting over 128 levels: an
            // invalid document, not a broken feed (which would be read again
            // and again).
            Some(raw) => Some(match serde_json::from_str::<Value>(raw.get()) {
                Ok(doc) => {
                    rev = doc.get("_rev").and_then(Value::as_str).map(str::to_owned);
                    Change::Upsert {
                        key,
                        doc: document_of(doc),
                    }
                }
                Err(e) => Change::Invalid {
                    key,
                    reason: format!("unreadable document: {e}"),
                },
            }),
            None => Some(Change::Upsert {
                key,
                doc: Default::default(),
            }),
        }
    };
    Ok(Line::Change { seq, change, rev })
}

/// A change whose line is over [`MAX_LINE`]: its sequence and id are read
/// from the first bytes, and the document is counted as invalid.
fn parse_long_line(head: &[u8], tail: &[u8], len: usize) -> Result<Line, String> {
    let (Some(seq), Some(key)) = (seq_in(head, tail), id_in_head(head)) else {
        return Err(format!(
            "a changes line of {len} bytes without a readable seq and id"
        ));
    };
    let change = (!is_design(key)).then(|| Change::Invalid {
        key: key.to_owned(),
        reason: too_large(len),
    });
    Ok(Line::Change {
        seq,
        change,
        rev: None,
    })
}

/// Capped exponential backoff with ±20% jitter, so several qrtag instances
/// do not retry in step.
struct Backoff {
    next: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Self { next: FIRST_RETRY }
    }
}

impl Backoff {
    fn next_delay(&mut self) -> Duration {
        let base = self.next;
        self.next = (base * 2).min(MAX_RETRY);
        base.mul_f64(rand::random_range(0.8..1.2))
    }

    fn reset(&mut self) {
        self.next = FIRST_RETRY;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_couchdb_and_pouchdb_lines() {
        assert!(matches!(parse_line(b"\n"), Ok(Line::Heartbeat)));
        let couch = br#"{"seq":"3-g1AAAA","id":"H83if","changes":[{"rev":"2-a"}],"doc":{"_id":"H83if","_rev":"2-a","url":"https://a.example/"}}"#;
        match parse_line(couch) {
            Ok(Line::Change {
                seq,
                change: Some(Change::Upsert { key, doc }),
                rev,
            }) => {
                assert_eq!(rev.as_deref(), Some("2-a"));
                assert_eq!(seq, json!("3-g1AAAA"));
                assert_eq!(key, "H83if");
                assert_eq!(Value::Object(doc), json!({"url": "https://a.example/"}));
            }
            other => panic!("unexpected {other:?}"),
        }
        let deleted = br#"{"seq":7,"id":"abcde","changes":[],"deleted":true,"doc":{"_id":"abcde","_deleted":true}}"#;
        assert!(matches!(
            parse_line(deleted),
            Ok(Line::Change { change: Some(Change::Delete { key }), .. }) if key == "abcde"
        ));
        let design = br#"{"seq":8,"id":"_design/qrtag","changes":[],"doc":{}}"#;
        assert!(matches!(
            parse_line(design),
            Ok(Line::Change { change: None, seq, .. }) if seq == json!(8)
        ));
        assert!(matches!(
            parse_line(br#"{"last_seq":9,"pending":0}"#),
            Ok(Line::End { last_seq }) if last_seq == json!(9)
        ));
    }

    #[test]
    fn a_line_over_the_limit_is_an_invalid_document() {
        let head = br#"{"seq":"9-g1AAAA","id":"H83if","changes":[{"rev":"3-a"}],"doc":{"_id":"H83if","url":"https://a.example/","note":"xxxx"#;
        match parse_long_line(head, b"", 5 << 20) {
            Ok(Line::Change {
                seq,
                change: Some(Change::Invalid { key, reason }),
                ..
            }) => {
                assert_eq!(seq, json!("9-g1AAAA"));
                assert_eq!(key, "H83if");
                assert!(reason.contains("5242880 bytes"), "{reason}");
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(matches!(
            parse_long_line(br#"{"seq":4,"id":"_design/qrtag","#, b"", 2 << 20),
            Ok(Line::Change { change: None, .. })
        ));
        assert!(parse_long_line(b"xxxxxxxx", b"xxxx", 2 << 20).is_err());
    }

    #[test]
    fn a_document_nested_too_deep_is_invalid_not_a_broken_feed() {
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        let line =
            format!(r#"{{"seq":3,"id":"deep1","changes":[],"doc":{{"url":"/x","n":{deep}}}}}"#);
        assert!(matches!(
            parse_line(line.as_bytes()),
            Ok(Line::Change { change: Some(Change::Invalid { key, .. }), .. }) if key == "deep1"
        ));
    }

    #[test]
    fn refuses_broken_lines() {
        for bad in [
            &b"{\"seq\":1"[..],
            b"{\"id\":\"abcde\"}",
            b"{\"error\":\"unauthorized\",\"reason\":\"nope\"}",
            b"[1]",
        ] {
            assert!(
                parse_line(bad).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn sequences_stay_opaque() {
        assert_eq!(seq_param(&json!("12-g1AAAA")), "12-g1AAAA");
        assert_eq!(seq_param(&json!(12)), "12");
    }

    #[test]
    fn backoff_doubles_up_to_the_cap_and_resets() {
        let mut b = Backoff::default();
        let delays: Vec<Duration> = (0..8).map(|_| b.next_delay()).collect();
        assert!(delays[0] <= FIRST_RETRY.mul_f64(1.2));
        assert!(delays[3] >= (FIRST_RETRY * 8).mul_f64(0.8));
        assert!(delays.iter().all(|d| *d <= MAX_RETRY.mul_f64(1.2)));
        assert!(delays[7] >= MAX_RETRY.mul_f64(0.8));
        b.reset();
        assert!(b.next_delay() <= FIRST_RETRY.mul_f64(1.2));
    }
}
