//! The CouchDB store: each link is a document `{"_id": "H83if", "url": ...}`
//! in one CouchDB database, edited by people in Fauxton or with curl as much
//! as by qrtag.
//!
//! Single documents are read and written with requests `couch_rs` builds
//! (server, path, credentials, headers). Everything is sent through
//! [`CouchHttp`], a thin reqwest client that also makes the requests
//! `couch_rs` does not offer: paged
//! `_all_docs`, a streamed `_changes` feed without gzip, the server's
//! `reason` when it refuses something, a deadline for every response head
//! (a hung cluster node must not hang a command or the follower), and the
//! status of each write (a 202 says CouchDB stored fewer copies than n, see
//! [`ClusterStats`]).
//!
//! Sequences and revisions are opaque: Apache CouchDB's sequences are strings,
//! PouchDB Server's are integers, and this code never compares or computes
//! with either.

mod all_docs_rows;
pub mod audit;
mod bulk;
// Issue 36: the ACME certificates database.
pub mod certs;
pub mod cluster;
pub mod feed_lines;
mod follower;
// Issue 35: a link's history, recorded by the follower (`history.rs`).
pub mod history;
pub mod keys;
pub mod load;
mod mark;
mod public_url;
pub mod setup;
mod throttle; // Issue 35: the history recorder's warnings, once an interval.
pub(crate) mod users; // Issue 35: an API key's user, read from `_users`.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use reqwest::header::ACCEPT;
use reqwest::{Method, RequestBuilder, Response};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use self::keys::KeyDb;
use super::{ClusterStats, LinkStore, StoreError, Stored};
use crate::link::Document;
use crate::snapshot::Snapshot;
use crate::store::options::CouchSettings;
use crate::values::api_key::{KeyId, KeyRecord};
use crate::values::couch::{CouchDbName, CouchUrl, Credentials};
use crate::values::link_key::LinkKey;
use crate::values::secret::Secret;

/// Limit for one ordinary request; the changes feed has its own idle limit.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Limit for the response head of any request, the changes feed's included.
/// A cluster node that is frozen (a stopped VM, a long pause) accepts
/// connections and never answers; CouchDB answers within milliseconds
/// otherwise, and a bulk write of a batch within a second or two.
pub(crate) const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// A server that does not accept a connection within this is treated as down,
/// rather than leaving the follower or a CLI command hanging.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Rows per `_all_docs` page: 100k links load in 100 requests, and no single
/// response is large.
const PAGE: usize = 1000;

/// The HTTP side of the CouchDB store, shared by listing, the follower and
/// setup. Deliberately not `Debug`: it holds the credentials.
#[derive(Clone)]
pub(crate) struct CouchHttp {
    client: reqwest::Client,
    server: CouchUrl,
    db: CouchDbName,
    credentials: Option<Credentials>,
    cluster: Arc<ClusterStats>,
}

/// CouchDB's error body, `{"error": "conflict", "reason": "..."}`.
#[derive(Debug, Deserialize)]
struct ErrorBody {
    error: Option<String>,
    reason: Option<String>,
}

/// One page of `_all_docs`: the documents (design documents left out) and the
/// key the next page starts at.
#[derive(Debug)]
struct Page {
    /// Each document, or why it was not read (over [`MAX_DOCUMENT`](super::MAX_DOCUMENT)).
    docs: Vec<(String, Result<Value, String>)>,
    next: Option<String>,
}

#[derive(Debug, Deserialize)]
struct AllDocs {
    rows: Vec<AllDocsRow>,
}

#[derive(Debug, Deserialize)]
struct AllDocsRow {
    id: Option<String>,
    /// Kept as text until its size is known.
    doc: Option<Box<serde_json::value::RawValue>>,
}

impl CouchHttp {
    pub(crate) fn new(settings: &CouchSettings) -> Result<Self, StoreError> {
        // No gzip: another crate may turn reqwest's gzip feature on, and a
        // compressed continuous feed is held back in the compressor's buffer.
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .no_gzip()
            .build()
            .map_err(|e| StoreError::Other(format!("cannot build the HTTP client: {e}")))?;
        Ok(Self {
            client,
            server: settings.url.clone(),
            db: settings.db.clone(),
            credentials: settings.credentials.clone(),
            cluster: Arc::default(),
        })
    }

    /// This client for another database of the same server: the same
    /// account, connection pool and cluster stats (a 202 there counts too).
    pub(crate) fn for_db(&self, db: CouchDbName) -> Self {
        Self { db, ..self.clone() }
    }

    /// What this client has seen of the cluster, shared by its clones.
    pub(crate) fn cluster(&self) -> &Arc<ClusterStats> {
        &self.cluster
    }

    pub(crate) fn server(&self) -> &CouchUrl {
        &self.server
    }

    pub(crate) fn db(&self) -> &CouchDbName {
        &self.db
    }

    /// A URL below the database; each segment is percent-encoded as one path
    /// segment, so a key like `docs/api` is sent as `docs%2Fapi`.
    pub(crate) fn db_url(&self, segments: &[&str]) -> url::Url {
        let mut u = self.server.as_url().clone();
        if let Ok(mut path) = u.path_segments_mut() {
            path.clear().push(self.db.as_str()).extend(segments);
        }
        u
    }

    /// A request with the ordinary time limit.
    pub(crate) fn request(&self, method: Method, url: url::Url) -> RequestBuilder {
        self.stream_request(method, url).timeout(REQUEST_TIMEOUT)
    }

    /// A request without a time limit, for a feed that stays open.
    pub(crate) fn stream_request(&self, method: Method, url: url::Url) -> RequestBuilder {
        let req = self
            .client
            .request(method, url)
            .header(ACCEPT, "application/json");
        match &self.credentials {
            Some(c) => req.basic_auth(&c.user, c.password.as_ref().map(Secret::expose)),
            None => req,
        }
    }

    /// Sends a request; a failure to talk to the server at all, or a
    /// response head that does not come within [`HEAD_TIMEOUT`], becomes
    /// [`StoreError::Unreachable`].
    pub(crate) async fn send(&self, req: RequestBuilder) -> Result<Response, StoreError> {
        match tokio::time::timeout(HEAD_TIMEOUT, req.send()).await {
            Ok(sent) => sent.map_err(|e| self.transport_error(&e)),
            Err(_) => Err(StoreError::Unreachable {
                url: self.server.to_string(),
                detail: format!("no answer within {}s", HEAD_TIMEOUT.as_secs()),
            }),
        }
    }

    /// Reads `_membership` into the cluster stats: connected nodes against
    /// configured ones. An account that may not read it (only server admins
    /// may on CouchDB 3) and a server without it (PouchDB Server) are noted,
    /// not failures.
    pub(crate) async fn read_membership(&self) {
        use self::cluster::Membership;
        let mut url = self.server.as_url().clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.clear().push("_membership");
        }
        let seen = match self.send(self.request(Method::GET, url)).await {
            Err(_) => Membership::Unknown,
            Ok(resp) => match resp.status().as_u16() {
                401 | 403 => Membership::Unreadable,
                200 => self
                    .read_json::<Value>(resp, "_membership")
                    .await
                    .ok()
                    .and_then(|v| Membership::from_json(&v))
                    .unwrap_or(Membership::NotACluster),
                _ => Membership::NotACluster,
            },
        };
        self.cluster.set_membership(seen);
    }

    pub(crate) fn transport_error(&self, e: &reqwest::Error) -> StoreError {
        StoreError::Unreachable {
            url: self.server.to_string(),
            detail: root_cause(e),
        }
    }

    /// Sends a request and reads its JSON answer; any status but success
    /// becomes an error (see [`refusal`](Self::refusal)). `what` names the
    /// request in messages.
    pub(crate) async fn json<T: DeserializeOwned>(
        &self,
        req: RequestBuilder,
        what: &str,
    ) -> Result<T, StoreError> {
        let resp = self.send(req).await?;
        if !resp.status().is_success() {
            return Err(self.refusal(resp, what).await);
        }
        self.read_json(resp, what).await
    }

    pub(crate) async fn read_json<T: DeserializeOwned>(
        &self,
        resp: Response,
        what: &str,
    ) -> Result<T, StoreError> {
        let bytes = self.read_capped(resp, super::MAX_RESPONSE, what).await?;
        serde_json::from_slice(&bytes).map_err(|e| {
            StoreError::Other(format!(
                "unexpected answer from CouchDB at {} to {what}: {e}",
                self.server
            ))
        })
    }

    /// Reads a body of at most `cap` bytes; a longer one is an error, and
    /// the reading stops there instead of holding it all.
    pub(crate) async fn read_capped(
        &self,
        resp: Response,
        cap: usize,
        what: &str,
    ) -> Result<Vec<u8>, StoreError> {
        use futures_util::StreamExt;
        let mut body = resp.bytes_stream();
        let mut out = Vec::new();
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(|e| self.transport_error(&e))?;
            if out.len() + chunk.len() > cap {
                return Err(StoreError::Other(format!(
                    "CouchDB at {} answered {what} with more than {} MiB",
                    self.server,
                    cap >> 20
                )));
            }
            out.extend_from_slice(&chunk);
        }
        Ok(out)
    }

    /// Turns a non-success response into an error that says what was refused
    /// and, for the statuses a person can fix, how. Callers deal with a
    /// missing document themselves, so a 404 that gets here is the database's.
    pub(crate) async fn refusal(&self, resp: Response, what: &str) -> StoreError {
        let status = resp.status().as_u16();
        if status == 404 {
            return self.missing_db();
        }
        let body: Option<ErrorBody> = self
            .read_capped(resp, 64 << 10, what)
            .await
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok());
        let said = match body {
            Some(ErrorBody {
                error: Some(e),
                reason: Some(r),
            }) => format!("{e}: {r}"),
            Some(ErrorBody { error: Some(e), .. }) => e,
            _ => "no reason given".into(),
        };
        StoreError::Refused {
            status,
            detail: format!("{what}: {said}{}", hint(status)),
        }
    }

    pub(crate) fn missing_db(&self) -> StoreError {
        StoreError::Refused {
            status: 404,
            detail: format!(
                "the database {} does not exist; create it with `qrtag setup`",
                self.db
            ),
        }
    }

    /// Checks the database exists, so that a 404 for a document can be told
    /// apart from a misspelt `--couchdb-db`.
    pub(crate) async fn check_db(&self) -> Result<(), StoreError> {
        let resp = self
            .send(self.request(Method::HEAD, self.db_url(&[])))
            .await?;
        if resp.status().is_success() {
            Ok(())
        } else {
            Err(self.refusal(resp, &format!("database {}", self.db)).await)
        }
    }

    /// Reads every document but the design ones through `_all_docs`, a page
    /// at a time, handing each page to `f` so no response and no buffer
    /// holds the whole database.
    pub(crate) async fn each_page(
        &self,
        mut f: impl FnMut(Vec<(String, Result<Value, String>)>),
    ) -> Result<(), StoreError> {
        let mut start: Option<String> = None;
        loop {
            let page = self.all_docs_page(start.as_deref()).await?;
            f(page.docs);
            match page.next {
                Some(next) => start = Some(next),
                None => return Ok(()),
            }
        }
    }

    /// One page of `_all_docs?include_docs=true`, starting at `start` (the
    /// `next` of the previous page). Asks for one row more than a page so
    /// the next page's first key is known without a `skip`.
    async fn all_docs_page(&self, start: Option<&str>) -> Result<Page, StoreError> {
        let mut url = self.db_url(&["_all_docs"]);
        {
            let mut q = url.query_pairs_mut();
            q.append_pair("include_docs", "true");
            q.append_pair("limit", &(PAGE + 1).to_string());
            if let Some(k) = start {
                q.append_pair("startkey", &Value::String(k.to_owned()).to_string());
            }
        }
        let what = format!("database {} (_all_docs)", self.db);
        let mut all: AllDocs = self.json(self.request(Method::GET, url), &what).await?;
        let next = if all.rows.len() > PAGE {
            all.rows.truncate(PAGE + 1);
            match all.rows.pop().and_then(|r| r.id) {
                Some(id) => Some(id),
                None => {
                    return Err(StoreError::Other(format!(
                        "unexpected answer from CouchDB at {}: an _all_docs row without an id",
                        self.server
                    )));
                }
            }
        } else {
            None
        };
        let docs = all
            .rows
            .into_iter()
            .filter_map(|r| Some((r.id?, r.doc?)))
            .filter(|(id, _)| !is_design(id))
            .map(|(id, raw)| {
                let doc = if raw.get().len() > super::MAX_DOCUMENT {
                    Err(too_large(raw.get().len()))
                } else {
                    serde_json::from_str(raw.get()).map_err(|e| format!("unreadable document: {e}"))
                };
                (id, doc)
            })
            .collect();
        Ok(Page { docs, next })
    }
}

/// Why a document over [`MAX_DOCUMENT`](super::MAX_DOCUMENT) was skipped.
pub(crate) fn too_large(len: usize) -> String {
    format!(
        "document of {len} bytes, over the {} MiB qrtag reads",
        super::MAX_DOCUMENT >> 20
    )
}

fn hint(status: u16) -> &'static str {
    match status {
        401 => " (check --couchdb-user and --couchdb-password)",
        403 => {
            " (the account may not do this, or the database's validation refused the document; see `qrtag setup`)"
        }
        _ => "",
    }
}

/// The innermost message of an error chain: reqwest's own text only names the
/// URL, while the useful part ("Connection refused") is at the bottom.
pub(crate) fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut last = e;
    while let Some(next) = last.source() {
        last = next;
    }
    let msg = last.to_string();
    match e.downcast_ref::<reqwest::Error>() {
        Some(re) if re.is_timeout() => format!("timed out ({msg})"),
        _ => msg,
    }
}

pub(crate) fn is_design(id: &str) -> bool {
    id.starts_with("_design/")
}

/// The fields of a stored document, without CouchDB's `_id` and `_rev`.
/// Everything else, `_attachments` stubs included, is kept so that a rewrite
/// hands it back unchanged, in its order (`shift_remove`: with serde_json's
/// preserve_order, `remove` moves the last field into the hole).
pub(crate) fn document_of(v: Value) -> Document {
    match v {
        Value::Object(mut m) => {
            m.shift_remove("_id");
            m.shift_remove("_rev");
            m
        }
        // A document is always an object; anything else is shown as empty,
        // which the snapshot reports as an invalid link.
        _ => Document::new(),
    }
}

/// A link store in a CouchDB database. Not `Debug`: the client holds the
/// credentials.
pub struct CouchStore {
    http: CouchHttp,
    /// Builds the requests for single documents (server, path, credentials,
    /// JSON headers); they are sent through `http`, which holds every
    /// request to its head deadline and reads the status, so a write stored
    /// with fewer copies than n (202) is seen, which `couch_rs`'s `save`
    /// does not tell.
    docs: couch_rs::Client,
}

impl CouchStore {
    /// Builds the clients; talks to nobody, so a server that is down does
    /// not stop `qrtag serve` from starting.
    pub fn new(settings: &CouchSettings) -> Result<Self, StoreError> {
        let (user, password) = match &settings.credentials {
            Some(c) => (
                Some(c.user.as_str()),
                c.password.as_ref().map(Secret::expose),
            ),
            None => (None, None),
        };
        let docs = couch_rs::Client::new_with_timeout(
            settings.url.as_url().as_str(),
            user,
            password,
            Some(REQUEST_TIMEOUT.as_secs()),
        )
        .map_err(|e| StoreError::Other(format!("cannot set up the CouchDB client: {e}")))?;
        Ok(Self {
            http: CouchHttp::new(settings)?,
            docs,
        })
    }

    /// A request for the document `key`, its ID one encoded path segment.
    fn doc_request(&self, method: Method, key: &LinkKey) -> RequestBuilder {
        self.docs
            .req(method, self.http.db_url(&[key.as_str()]).path(), None)
    }

    /// This store, recording what it sees of the cluster in `cluster`
    /// (the service's, for a console user's store) instead of its own.
    pub fn sharing(mut self, cluster: Arc<ClusterStats>) -> Self {
        self.http.cluster = cluster;
        self
    }

    /// Writes one document with `PUT`, recording a 202 (stored with fewer
    /// copies than n) in the cluster stats.
    async fn put(
        &self,
        key: &LinkKey,
        doc: &Document,
        rev: Option<&str>,
    ) -> Result<(), StoreError> {
        let what = if rev.is_some() { "writing" } else { "creating" };
        if is_reserved(key) {
            return Err(StoreError::Other(format!(
                "CouchDB reserves document IDs that start with '_'; choose another key than {key}"
            )));
        }
        let mut body = doc.clone();
        body.shift_remove("_id");
        match rev {
            Some(rev) => body.insert("_rev".into(), Value::String(rev.to_owned())),
            None => body.shift_remove("_rev"),
        };
        // Issue 35: the generation this write makes, so the history's
        // recorder can tell it from an outside edit that keeps the stamps.
        history::stamp_generation(&mut body, rev);
        let req = self.doc_request(Method::PUT, key).json(&body);
        let resp = self.http.send(req).await?;
        let status = resp.status().as_u16();
        match status {
            201 | 202 => {
                self.http.cluster().wrote(status);
                Ok(())
            }
            409 => Err(StoreError::Conflict(key.to_string())),
            _ => Err(self.http.refusal(resp, &format!("{what} {key}")).await),
        }
    }
}

impl CouchStore {
    /// Deletes a document this writer just created and must not keep
    /// ([`LinkStore::create_below`]): at its current revision, read again
    /// if someone wrote it meanwhile. Gone already is done.
    async fn take_back(&self, key: &LinkKey) -> Result<(), StoreError> {
        let mut gone = Document::new();
        gone.insert("_deleted".into(), Value::Bool(true));
        for _ in 0..8 {
            let Some(stored) = self.get(key).await? else {
                return Ok(());
            };
            match self.put(key, &gone, Some(&stored.rev)).await {
                Err(StoreError::Conflict(_)) => continue,
                done => return done,
            }
        }
        Err(StoreError::Conflict(key.to_string()))
    }
}

/// Keys CouchDB would not store as plain documents (`_design/...` and other
/// `_` names); qrtag never reads or writes them as links.
fn is_reserved(key: &LinkKey) -> bool {
    key.as_str().starts_with('_')
}

/// Bulk import and export: `_all_docs` with keys, `_bulk_docs`, and a
/// streamed `_all_docs` read row by row.

#[async_trait]
impl LinkStore for CouchStore {
    async fn existing(&self, keys: &[LinkKey]) -> Result<Vec<bool>, StoreError> {
        self.bulk_existing(keys).await
    }

    async fn existing_all(&self, keys: &[LinkKey]) -> Result<Vec<bool>, StoreError> {
        self.bulk_existing_all(keys).await
    }

    async fn get_all(&self, keys: &[LinkKey]) -> Result<Vec<Option<Stored>>, StoreError> {
        self.bulk_get_all(keys).await
    }

    fn batch_size(&self) -> usize {
        bulk::BATCH
    }

    fn writes_in_flight(&self) -> usize {
        bulk::IN_FLIGHT
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
        if is_reserved(key) {
            return Ok(None);
        }
        let req = self.doc_request(Method::GET, key);
        let resp = self.http.send(req).await?;
        match resp.status().as_u16() {
            200 => {
                let v: Value = self.http.read_json(resp, &format!("reading {key}")).await?;
                let rev = v
                    .get("_rev")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .ok_or_else(|| {
                        StoreError::Other(format!(
                            "unexpected answer from CouchDB at {}: document {key} has no _rev",
                            self.http.server()
                        ))
                    })?;
                Ok(Some(Stored {
                    doc: document_of(v),
                    rev,
                }))
            }
            404 => {
                self.http.check_db().await?;
                Ok(None)
            }
            _ => Err(self.http.refusal(resp, &format!("reading {key}")).await),
        }
    }

    async fn create(&self, key: &LinkKey, doc: &Document) -> Result<(), StoreError> {
        self.put(key, doc, None).await
    }

    async fn create_below(
        &self,
        key: &LinkKey,
        doc: &Document,
        parents: &[LinkKey],
    ) -> Result<Vec<LinkKey>, StoreError> {
        self.put(key, doc, None).await?;
        if parents.is_empty() {
            return Ok(Vec::new());
        }
        let found: Vec<LinkKey> = parents
            .iter()
            .zip(self.existing(parents).await?)
            .filter(|(_, e)| *e)
            .map(|(p, _)| p.clone())
            .collect();
        if !found.is_empty() {
            self.take_back(key).await?;
        }
        Ok(found)
    }

    async fn replace(&self, key: &LinkKey, doc: &Document, rev: &str) -> Result<(), StoreError> {
        self.put(key, doc, Some(rev)).await
    }

    async fn keys(&self) -> Result<Vec<String>, StoreError> {
        Ok(self.list().await?.into_iter().map(|(k, _)| k).collect())
    }

    async fn list(&self) -> Result<Vec<(String, Document)>, StoreError> {
        let mut out = Vec::new();
        self.http
            .each_page(|docs| {
                // A document too large to read is listed empty: invalid.
                out.extend(
                    docs.into_iter()
                        .map(|(id, v)| (id, v.map(document_of).unwrap_or_default())),
                )
            })
            .await?;
        // CouchDB collates IDs its own way; list in byte order like the
        // embedded store, so both print the same.
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    async fn public_url(&self) -> Result<Option<String>, StoreError> {
        self::public_url::recorded(&self.http).await
    }

    async fn record_public_url(&self, url: &str, replace: bool) -> Result<bool, StoreError> {
        self::public_url::record(&self.http, url, replace).await
    }

    fn snapshot_identity(&self) -> String {
        format!("couchdb:{}/{}", self.http.server(), self.http.db())
    }

    /// One list for every server's files (`couch_mark`): `file` names no
    /// document, as every server of a database has the same default path.
    async fn mark_snapshot(
        &self,
        _file: &str,
        previous: Option<&str>,
    ) -> Result<Option<String>, StoreError> {
        self::mark::renew(&self.http, previous).await.map(Some)
    }

    /// Compared by the follower ([`LinkStore::checks_mark_when_following`]),
    /// never before `serve` starts.
    async fn snapshot_mark(&self, _file: &str) -> Result<Option<String>, StoreError> {
        Ok(None)
    }

    fn checks_mark_when_following(&self) -> bool {
        true
    }

    /// The database's name is what matters, not the URL it was reached at
    /// (`127.0.0.1` or a host name, a proxy, another node of the cluster):
    /// the marker, which the follower confirms before serving such a file,
    /// tells the database apart from another of the same name.
    fn same_data_as(&self, named: &str) -> bool {
        named
            .strip_prefix("couchdb:")
            .and_then(|rest| rest.strip_suffix(self.http.db().as_str()))
            .is_some_and(|server| server.ends_with('/'))
    }

    /// CouchDB's sequences are opaque: one from a replaced database is
    /// caught by the snapshot marker instead.
    async fn check_seq(&self, _seq: &Value) -> Result<(), String> {
        Ok(())
    }

    fn cluster(&self) -> Option<Arc<ClusterStats>> {
        Some(Arc::clone(self.http.cluster()))
    }

    /// In the API keys database beside the links (`couch_keys`), read with
    /// this store's account.
    async fn api_key(&self, id: &KeyId) -> Result<Option<KeyRecord>, StoreError> {
        KeyDb::beside(&self.http)?.get(id).await
    }

    async fn api_keys(&self) -> Result<Vec<KeyRecord>, StoreError> {
        KeyDb::beside(&self.http)?.all().await
    }

    /// Issue 35: CouchDB's accounts live in `_users`, readable (names and
    /// roles) by the API keys' members once `qrtag setup` opened it
    /// (`users.rs`); otherwise the key's scope alone decides.
    async fn key_owner(&self, name: &str) -> Result<super::KeyOwner, StoreError> {
        users::key_owner(&self.http, name).await
    }

    async fn put_api_key(&self, record: &KeyRecord) -> Result<(), StoreError> {
        KeyDb::beside(&self.http)?.put(record).await
    }

    // Issue 35: the audit log, in its own database beside the links (`audit.rs`).
    async fn append_audit(
        &self,
        entry: &crate::values::audit::AuditEntry,
    ) -> Result<(), StoreError> {
        audit::AuditDb::beside(&self.http)?.append(entry).await
    }

    async fn audit(
        &self,
        query: &crate::values::audit::AuditQuery,
    ) -> Result<Vec<crate::values::audit::AuditEntry>, StoreError> {
        audit::AuditDb::beside(&self.http)?.read(query).await
    }

    async fn history(&self, key: &LinkKey) -> Result<Vec<crate::link::history::Entry>, StoreError> {
        history::HistoryDb::beside(&self.http)?
            .read(key.as_str())
            .await
    }

    fn follow(
        self: Arc<Self>,
        snapshot: Arc<Snapshot>,
        resume: Option<super::Resume>,
    ) -> tokio::task::JoinHandle<()> {
        self::follower::spawn(self.http.clone(), snapshot, resume)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn http(db: &str) -> CouchHttp {
        let settings = CouchSettings::new(
            CouchUrl::parse("http://couch.example:5984").expect("url"),
            CouchDbName::parse(db).expect("db"),
        );
        CouchHttp::new(&settings).expect("client")
    }

    #[test]
    fn keys_and_names_are_one_path_segment_each() {
        let h = http("qr/links");
        assert_eq!(
            h.db_url(&["docs/api"]).as_str(),
            "http://couch.example:5984/qr%2Flinks/docs%2Fapi"
        );
        assert_eq!(
            h.db_url(&["_design", "qrtag"]).path(),
            "/qr%2Flinks/_design/qrtag"
        );
    }

    #[test]
    fn documents_lose_only_id_and_rev() {
        let doc = document_of(json!({
            "_id": "abcde", "_rev": "1-x", "url": "/a", "note": "kept",
            "_attachments": {"a.txt": {"stub": true}}
        }));
        assert_eq!(
            Value::Object(doc).to_string(),
            json!({"url": "/a", "note": "kept", "_attachments": {"a.txt": {"stub": true}}})
                .to_string(),
            "the other fields, in their order"
        );
        assert!(document_of(json!([1, 2])).is_empty());
    }
}
