//! Where link documents live. The embedded SQLite file is the default; CouchDB
//! sits beside it behind the same trait.
//!
//! Stores traffic in raw JSON documents, not parsed [`Link`](crate::link::Link)s:
//! a person may have written anything into a document, and a rewrite must keep
//! every field qrtag does not own.

use std::sync::Arc;

use async_trait::async_trait;

use crate::api_key::{KeyId, KeyRecord};
use crate::link::Document;
use crate::link_key::LinkKey;
use crate::snapshot::Snapshot;

pub use bulk::{BulkDoc, BulkOutcome, ExportPage, OnExisting};
pub use cluster::{ClusterStats, Membership};

mod all_docs_rows;
mod bulk;
pub mod cluster;
pub mod couch;
mod couch_follower;
pub mod couch_load;
mod couch_mark;
pub mod couch_setup;
pub mod feed_lines;
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

#[async_trait]
pub trait LinkStore: Send + Sync + 'static {
    /// Reads one document; `Ok(None)` when there is none.
    async fn get(&self, key: &LinkKey) -> Result<Option<Stored>, StoreError>;

    /// Creates a document; [`StoreError::Conflict`] when the key is taken.
    async fn create(&self, key: &LinkKey, doc: &Document) -> Result<(), StoreError>;

    /// Replaces a document if it is still at `rev`; [`StoreError::Conflict`] otherwise.
    async fn replace(&self, key: &LinkKey, doc: &Document, rev: &str) -> Result<(), StoreError>;

    /// Every document, by key, including ones that are not valid links.
    async fn list(&self) -> Result<Vec<(String, Document)>, StoreError>;

    /// The key of every document, in no order: what `qrtag stats` counts
    /// under and key suggestions are drawn from, without the documents.
    async fn keys(&self) -> Result<Vec<String>, StoreError> {
        Ok(self.list().await?.into_iter().map(|(k, _)| k).collect())
    }

    /// Whether each key has a document now (a deleted one does not count),
    /// in the order given; read from one snapshot where the store has them.
    async fn existing(&self, keys: &[LinkKey]) -> Result<Vec<bool>, StoreError>;

    /// How many documents one [`write_batch`](Self::write_batch) should carry.
    fn batch_size(&self) -> usize;

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
    ) -> Result<Option<String>, StoreError> {
        let _ = (file, previous);
        Ok(None)
    }

    /// The marker [`LinkStore::mark_snapshot`] last recorded for `file`.
    async fn snapshot_mark(&self, file: &str) -> Result<Option<String>, StoreError> {
        let _ = file;
        Ok(None)
    }

    /// Whether the follower compares a snapshot file's marker with the
    /// store's once it reaches the store ([`Resume::unchecked_mark`]),
    /// rather than `serve` before it starts. A server on CouchDB must start
    /// serving from its file while CouchDB is away, so it cannot wait to
    /// read the marker first.
    fn checks_mark_when_following(&self) -> bool {
        false
    }

    /// Whether `seq`, read from a snapshot file, can be resumed from: a
    /// sequence the database has not reached means the file belongs to a
    /// database that was replaced (a restored backup, say).
    async fn check_seq(&self, seq: &serde_json::Value) -> Result<(), String> {
        let _ = seq;
        Ok(())
    }

    /// What the store knows of its cluster (CouchDB: writes stored with
    /// fewer copies than asked for, connected nodes), for `/readyz` and
    /// `/metrics`; `None` for a store that is not one.
    fn cluster(&self) -> Option<Arc<ClusterStats>> {
        None
    }

    /// The API key record under `id` (`/api/v1`'s bearer keys). Read on
    /// every API request, never cached, so a revocation holds at once on
    /// every node. Stores that keep no API keys say so.
    async fn api_key(&self, id: &KeyId) -> Result<Option<KeyRecord>, StoreError> {
        let _ = id;
        Err(no_api_keys())
    }

    /// Every API key record, revoked ones too, by ID.
    async fn api_keys(&self) -> Result<Vec<KeyRecord>, StoreError> {
        Err(no_api_keys())
    }

    /// Writes an API key record, new or changed (a revocation).
    async fn put_api_key(&self, record: &KeyRecord) -> Result<(), StoreError> {
        let _ = record;
        Err(no_api_keys())
    }

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

/// What a store without API keys answers: CouchDB keeps none yet, since a
/// `_local` document is writable by every member, readers included, and a
/// reader must not be able to mint a write key.
fn no_api_keys() -> StoreError {
    StoreError::Other(
        "API keys are kept only by the embedded store (SQLite) in this version".into(),
    )
}

/// Where a follower starts when the snapshot already serves the links of a
/// snapshot file.
#[derive(Debug, Clone)]
pub struct Resume {
    /// The store sequence the file was saved at.
    pub seq: serde_json::Value,
    /// The file's marker, when it is for the follower to compare (see
    /// [`LinkStore::checks_mark_when_following`]): a difference means the
    /// database is not the one the file was taken from, and every link is
    /// loaded again instead of following from `seq`.
    pub unchecked_mark: Option<FileMark>,
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
    settings: &crate::settings::StoreSettings,
    access: Access,
) -> Result<Arc<dyn LinkStore>, StoreError> {
    match settings {
        crate::settings::StoreSettings::Sqlite { path } => {
            Ok(Arc::new(sqlite::SqliteStore::open_with(path, access)?))
        }
        crate::settings::StoreSettings::CouchDb(couch) => {
            Ok(Arc::new(couch::CouchStore::new(couch)?))
        }
    }
}
