//! Where link documents live. The embedded SQLite file is the default; CouchDB
//! sits beside it behind the same trait.
//!
//! Stores traffic in raw JSON documents, not parsed [`Link`](crate::link::Link)s:
//! a person may have written anything into a document, and a rewrite must keep
//! every field qrtag does not own.

use std::sync::Arc;

use async_trait::async_trait;

use crate::link::Document;
use crate::snapshot::{LinkTable, Snapshot};
use crate::values::api_key::{KeyId, KeyRecord};
use crate::values::link_key::LinkKey;

pub use bulk::{BulkDoc, BulkOutcome, ExportPage, OnExisting};
pub use couch::cluster::{ClusterStats, Membership};

pub mod audit;
mod bulk;
pub mod couch;
pub mod live_url;
pub mod options;
pub mod saver;
pub mod sqlite;

/// The largest document the server takes from CouchDB, as JSON text. A link
/// document is a few hundred bytes; a larger one (notes can grow) is fine up
/// to this, and one over it is skipped and counted as invalid rather than
/// read into memory whole.
pub const MAX_DOCUMENT: usize = 1 << 20;

/// The largest ordinary CouchDB answer read: a page of `_all_docs` (1000
/// documents) or a single document. A larger one is an error, retried.
pub const MAX_RESPONSE: usize = 256 << 20;

/// A stored document and the revision it was read at.
#[derive(Debug, Clone, PartialEq)]
pub struct Stored {
    pub doc: Document,
    /// Opaque; handed back to [`LinkStore::replace`] for optimistic concurrency.
    pub rev: String,
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The key exists (on create) or the revision is stale (on replace).
    #[error("conflict: {0} was written by someone else")]
    Conflict(String),
    #[error("no link with key {0}")]
    NotFound(String),
    #[error("no database at {0}; create it with qrtag init, or start qrtag serve")]
    NoDatabase(String),
    #[error("link database {path}: {source}")]
    Sqlite {
        path: String,
        #[source]
        source: rusqlite::Error,
    },
    #[error("CouchDB unreachable at {url}: {detail}")]
    Unreachable { url: String, detail: String },
    #[error("CouchDB refused the request ({status}): {detail}")]
    Refused { status: u16, detail: String },
    #[error("{0}")]
    Other(String),
}

/// Issue 35 (i35-users): what the store knows of an API key's user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyOwner {
    /// The user exists with this role.
    Role(crate::values::role::Role),
    /// No such user (removed): the key is refused.
    Gone,
    /// The store keeps no users to check against: the embedded store
    /// before any user exists, and CouchDB where `qrtag setup` has not
    /// opened `_users` to the keys' members (PouchDB Server; there the
    /// key's scope alone decides).
    Unchecked,
}

/// No method has a default body: a wrapper such as
/// [`Served`](crate::links::served::Served) that forgot to pass one on
/// would silently answer with the default instead of the inner store's
/// (its API keys once answered 503 that way), so the compiler is made to
/// ask every implementation for every method.
#[async_trait]
pub trait LinkStore: Send + Sync + 'static {
    /// Reads one document; `Ok(None)` when there is none.
    async fn get(&self, key: &LinkKey) -> Result<Option<Stored>, StoreError>;

    /// Creates a document; [`StoreError::Conflict`] when the key is taken.
    async fn create(&self, key: &LinkKey, doc: &Document) -> Result<(), StoreError>;

    /// Creates a document unless one of `parents` (the new key's
    /// [`LinkKey::parents`]) is stored: the ones that are, in the order
    /// given, when it is refused, and then nothing of `key` is left. A
    /// check before a plain [`create`](Self::create) let a parent written
    /// in between be taken over (issue 30): SQLite checks and writes in one
    /// transaction; CouchDB, which has none, writes, checks again and
    /// deletes what it wrote when a parent came meanwhile, so a child is
    /// never stored after its parent (one written before it may be taken
    /// back, which is the safe side). [`StoreError::Conflict`] when the key
    /// is taken.
    async fn create_below(
        &self,
        key: &LinkKey,
        doc: &Document,
        parents: &[LinkKey],
    ) -> Result<Vec<LinkKey>, StoreError>;

    /// Replaces a document if it is still at `rev`; [`StoreError::Conflict`] otherwise.
    async fn replace(&self, key: &LinkKey, doc: &Document, rev: &str) -> Result<(), StoreError>;

    /// Every document, by key, including ones that are not valid links.
    async fn list(&self) -> Result<Vec<(String, Document)>, StoreError>;

    /// The key of every document, in no order: what `qrtag stats` counts
    /// under and key suggestions are drawn from, without the documents.
    async fn keys(&self) -> Result<Vec<String>, StoreError>;

    /// Whether each key has a document now (a deleted one does not count),
    /// in the order given; read from one snapshot where the store has them.
    async fn existing(&self, keys: &[LinkKey]) -> Result<Vec<bool>, StoreError>;

    /// Whether each key has a document now, as [`existing`](Self::existing),
    /// for a whole import file at once: the store picks the cheapest way
    /// (CouchDB reads every ID in one streamed `_all_docs` when the database
    /// is not much larger than the file, and otherwise asks by key, several
    /// requests in flight). Not one snapshot: the writes still refuse a key
    /// that appears meanwhile.
    async fn existing_all(&self, keys: &[LinkKey]) -> Result<Vec<bool>, StoreError>;

    /// Each key's document, as [`get`](Self::get) reads it, for an
    /// import's checks of many keys (which existing ones are tombstones);
    /// CouchDB asks `_all_docs` for a thousand documents a request.
    async fn get_all(&self, keys: &[LinkKey]) -> Result<Vec<Option<Stored>>, StoreError>;

    /// How many documents one [`write_batch`](Self::write_batch) should carry.
    fn batch_size(&self) -> usize;

    /// How many [`write_batch`](Self::write_batch) calls of one import may
    /// be under way at once: 1 for a store that writes on one connection
    /// anyway, more for a server that works on several requests at a time.
    fn writes_in_flight(&self) -> usize;

    /// Writes one batch of a bulk import (distinct keys, at most
    /// [`batch_size`](Self::batch_size)) and says what became of each
    /// document, in the order given. Revisions and sequence numbers follow
    /// the rules of the single writes. A refusal of one document (a key that
    /// exists, a CouchDB conflict or validation) is its outcome; only a
    /// failure of the whole batch is an error.
    async fn write_batch(
        &self,
        docs: Vec<BulkDoc>,
        on_existing: OnExisting,
    ) -> Result<Vec<BulkOutcome>, StoreError>;

    /// Sends every document but deleted and design ones to `pages`, sorted
    /// by key, a page at a time, all read from one consistent view of the
    /// store. Stops with an error when `pages` is closed.
    async fn export(&self, pages: tokio::sync::mpsc::Sender<ExportPage>) -> Result<(), StoreError>;

    /// The public URL recorded with the links: the origin every tag of
    /// this store was printed with, kept with the links so that no command
    /// prints one for another origin. `None` until one is recorded.
    async fn public_url(&self) -> Result<Option<String>, StoreError>;

    /// Records the public URL: only if none is recorded yet, or with
    /// `replace` whatever was. Says whether it wrote.
    async fn record_public_url(&self, url: &str, replace: bool) -> Result<bool, StoreError>;

    /// Names this store (which database, not where the process runs), so a
    /// snapshot file of another database is never taken for this one's.
    fn snapshot_identity(&self) -> String;

    /// Records, just before a snapshot file is written, a fresh marker of
    /// the database's state for that file (`file` names it) and returns it
    /// to go into the file. A database restored from a backup taken before
    /// the save has an older marker, or none, so the file is not believed
    /// for it even once it has been edited past the file's sequence.
    /// `previous` is the marker this server's last save returned, which the
    /// new one replaces. `None`: this store keeps no marker.
    async fn mark_snapshot(
        &self,
        file: &str,
        previous: Option<&str>,
    ) -> Result<Option<String>, StoreError>;

    /// The marker [`LinkStore::mark_snapshot`] last recorded for `file`
    /// (`None`: none, or the store checks markers while following).
    async fn snapshot_mark(&self, file: &str) -> Result<Option<String>, StoreError>;

    /// Whether the follower compares a snapshot file's marker with the
    /// store's once it reaches the store ([`Resume::unchecked_mark`]),
    /// rather than `serve` before it starts. A server on CouchDB must start
    /// serving from its file while CouchDB is away, so it cannot wait to
    /// read the marker first.
    fn checks_mark_when_following(&self) -> bool;

    /// Whether a snapshot file that names the store `named` (not this
    /// store's identity) holds this store's data reached another way: a
    /// copy from a node that reaches the same CouchDB database at another
    /// URL. Such a file is served only once the follower has confirmed its
    /// marker ([`Resume::unconfirmed`]).
    fn same_data_as(&self, named: &str) -> bool;

    /// Whether `seq`, read from a snapshot file, can be resumed from: a
    /// sequence the database has not reached means the file belongs to a
    /// database that was replaced (a restored backup, say).
    async fn check_seq(&self, seq: &serde_json::Value) -> Result<(), String>;

    /// What the store knows of its cluster (CouchDB: writes stored with
    /// fewer copies than asked for, connected nodes), for `/readyz` and
    /// `/metrics`; `None` for a store that is not one.
    fn cluster(&self) -> Option<Arc<ClusterStats>>;

    /// The API key record under `id` (`/api/v1`'s bearer keys). Read on
    /// every API request, never cached, so a revocation holds at once on
    /// every node.
    async fn api_key(&self, id: &KeyId) -> Result<Option<KeyRecord>, StoreError>;

    /// Every API key record, revoked ones too, by ID.
    async fn api_keys(&self) -> Result<Vec<KeyRecord>, StoreError>;

    /// Writes an API key record, new or changed (a revocation).
    async fn put_api_key(&self, record: &KeyRecord) -> Result<(), StoreError>;

    // Issue 35: the audit log of what is not a link edit (`values::audit`,
    // written through `store::audit::record`).
    /// Appends an entry; no method changes or removes one.
    async fn append_audit(
        &self,
        entry: &crate::values::audit::AuditEntry,
    ) -> Result<(), StoreError>;

    /// The entries `query` asks for, newest first.
    async fn audit(
        &self,
        query: &crate::values::audit::AuditQuery,
    ) -> Result<Vec<crate::values::audit::AuditEntry>, StoreError>;

    /// Issue 35 (i35-users): the role of the user an API key belongs to,
    /// read on every API request after the key (no cache), so a removed
    /// user's key is refused and a lowered role holds from the next
    /// request on every node.
    async fn key_owner(&self, name: &str) -> Result<KeyOwner, StoreError>;

    // Issue 35 (history).
    /// A link's kept history entries, oldest first (at most
    /// [`KEEP`](crate::link::history::KEEP); none for a key never written).
    async fn history(&self, key: &LinkKey) -> Result<Vec<crate::link::history::Entry>, StoreError>;

    /// Starts the background task that keeps `snapshot` a mirror of the
    /// store. With `resume`, the snapshot already holds the links as of that
    /// sequence (from the snapshot file) and only later changes are read;
    /// otherwise every link is loaded first and the snapshot marked loaded
    /// after that. Problems are recorded on the snapshot, never fatal.
    fn follow(
        self: Arc<Self>,
        snapshot: Arc<Snapshot>,
        resume: Option<Resume>,
    ) -> tokio::task::JoinHandle<()>;
}

/// [`LinkStore::existing_all`] for a store that has no cheaper way: the keys
/// asked in batches of its [`batch_size`](LinkStore::batch_size).
pub async fn existing_in_batches<S: LinkStore + ?Sized>(
    store: &S,
    keys: &[LinkKey],
) -> Result<Vec<bool>, StoreError> {
    let mut found = Vec::with_capacity(keys.len());
    for batch in keys.chunks(store.batch_size().max(1)) {
        found.extend(store.existing(batch).await?);
    }
    Ok(found)
}

/// [`LinkStore::get_all`] for a store that reads one document at a time
/// cheaply anyway (SQLite: one indexed read each, no round trip).
pub async fn get_each<S: LinkStore + ?Sized>(
    store: &S,
    keys: &[LinkKey],
) -> Result<Vec<Option<Stored>>, StoreError> {
    let mut found = Vec::with_capacity(keys.len());
    for key in keys {
        found.push(store.get(key).await?);
    }
    Ok(found)
}

/// Where a follower starts when the snapshot already serves the links of a
/// snapshot file (or holds them until their marker is confirmed).
pub struct Resume {
    /// The store sequence the file was saved at.
    pub seq: serde_json::Value,
    /// The file's marker, when it is for the follower to compare (see
    /// [`LinkStore::checks_mark_when_following`]): a difference means the
    /// database is not the one the file was taken from, and every link is
    /// loaded again instead of following from `seq`.
    pub unchecked_mark: Option<FileMark>,
    /// The file's links, not yet served: the file was saved by a node that
    /// reached the database at another URL ([`LinkStore::same_data_as`]),
    /// so it is believed only once the database holds its marker, and a
    /// copy pointed at another database of the same name is never served.
    /// `None`: the snapshot serves the file already (this node's own file,
    /// served at once even while the store is away).
    pub unconfirmed: Option<LinkTable>,
}

/// A snapshot file's marker, as read from the file.
#[derive(Debug, Clone)]
pub struct FileMark {
    /// The name the store keeps the file's marker under (`saver::mark_name`).
    pub file: String,
    /// The marker in the file (`None`: it was saved without one).
    pub in_file: Option<String>,
}

/// What a command does with the embedded store, which decides how its file
/// is opened: only the commands that add links (and `serve`) may create a
/// database, so a mistyped `--db` is an error instead of a new empty file;
/// and reading commands work on a file they cannot write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Open, creating the file if there is none.
    Create,
    /// Open an existing file to change it.
    Write,
    /// Open an existing file read-only.
    Read,
}

/// Opens the store the settings name. Opening must not wait for a remote
/// server to be up: the follower retries, and `/readyz` says why it waits.
pub fn open(
    settings: &crate::store::options::StoreSettings,
    access: Access,
) -> Result<Arc<dyn LinkStore>, StoreError> {
    match settings {
        crate::store::options::StoreSettings::Sqlite { path } => {
            Ok(Arc::new(sqlite::SqliteStore::open_with(path, access)?))
        }
        crate::store::options::StoreSettings::CouchDb(couch) => {
            Ok(Arc::new(couch::CouchStore::new(couch)?))
        }
    }
}
