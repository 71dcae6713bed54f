//! Read-your-writes: a store whose writes return only once this server
//! serves them. The console, the DIDComm API and the REST API write through
//! it (every function in [`links`](crate::links) takes any store), so a scan
//! sent right after their answer gets the new link, not the old one or a 404.
//!
//! A write reaches the redirect path through the store's follower, which
//! publishes a new snapshot some milliseconds later (SQLite: at its next poll,
//! or at once when woken by a write through the same store; CouchDB: when the
//! change arrives in its feed). After a successful write this waits, without
//! polling, until the snapshot holds what was written for that key
//! ([`LinkTable::holds`](crate::snapshot::LinkTable::holds): one lookup per
//! publication), for at most [`WAIT`]; past that it answers anyway with a
//! warning in the log (a follower cut off from its store, say). Other nodes
//! follow through the store's feed as before, with no such promise.
//!
//! Waiting for the document itself, rather than a revision, needs nothing
//! from the stores (SQLite's and CouchDB's writes answer as before). Its one
//! blind spot: two writers of the same key whose writes reach the follower
//! in one batch: the earlier one never sees its own document and answers
//! after [`WAIT`]. Nothing is wrong then, only slow; a newer `changed_at`
//! is not taken as proof instead, since a writer's clock may run ahead.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;

use crate::link::Document;
use crate::snapshot::{LinkTable, Snapshot};
use crate::store::{
    BulkDoc, BulkOutcome, ExportPage, LinkStore, OnExisting, Resume, StoreError, Stored,
};
use crate::values::link_key::LinkKey;

/// The longest a write's answer waits for this server to serve it. A
/// follower applies a change in milliseconds, so reaching this means it is
/// not following (its store away, its feed cut).
pub const WAIT: Duration = Duration::from_secs(2);

/// `inner`, with every successful write answered only once `snapshot`
/// (the one this server's redirect path reads) holds it.
pub struct Served {
    inner: Arc<dyn LinkStore>,
    snapshot: Arc<Snapshot>,
    wait: Duration,
}

impl Served {
    pub fn wrap(inner: Arc<dyn LinkStore>, snapshot: Arc<Snapshot>) -> Arc<dyn LinkStore> {
        Self::waiting(inner, snapshot, WAIT)
    }

    fn waiting(
        inner: Arc<dyn LinkStore>,
        snapshot: Arc<Snapshot>,
        wait: Duration,
    ) -> Arc<dyn LinkStore> {
        Arc::new(Self {
            inner,
            snapshot,
            wait,
        })
    }

    /// Waits until the snapshot holds each `(key, doc)`, in order: a key
    /// once held is not looked at again, so a batch costs one lookup per
    /// document in all, plus one per publication.
    async fn until_served(&self, written: &[(LinkKey, Document)]) {
        if written.is_empty() {
            return;
        }
        // Atomic only to be `Sync` across the wait; one task touches it.
        let next = AtomicUsize::new(0);
        let holds = |table: &LinkTable| {
            while let Some((key, doc)) = written.get(next.load(Ordering::Relaxed)) {
                if !table.holds(key.as_str(), doc) {
                    return false;
                }
                next.fetch_add(1, Ordering::Relaxed);
            }
            true
        };
        if !self.snapshot.wait_until(holds, self.wait).await {
            let (key, _) = &written[next.load(Ordering::Relaxed).min(written.len() - 1)];
            tracing::warn!(
                %key,
                waited_ms = self.wait.as_millis() as u64,
                "a write is answered before this server serves it: the link follower is behind \
                 (see /readyz)"
            );
        }
    }
}

#[async_trait]
impl LinkStore for Served {
    async fn get(&self, key: &LinkKey) -> Result<Option<Stored>, StoreError> {
        self.inner.get(key).await
    }

    async fn create(&self, key: &LinkKey, doc: &Document) -> Result<(), StoreError> {
        self.inner.create(key, doc).await?;
        self.until_served(&[(key.clone(), doc.clone())]).await;
        Ok(())
    }

    async fn create_below(
        &self,
        key: &LinkKey,
        doc: &Document,
        parents: &[LinkKey],
    ) -> Result<Vec<LinkKey>, StoreError> {
        let found = self.inner.create_below(key, doc, parents).await?;
        if found.is_empty() {
            self.until_served(&[(key.clone(), doc.clone())]).await;
        }
        Ok(found)
    }

    async fn replace(&self, key: &LinkKey, doc: &Document, rev: &str) -> Result<(), StoreError> {
        self.inner.replace(key, doc, rev).await?;
        self.until_served(&[(key.clone(), doc.clone())]).await;
        Ok(())
    }

    async fn list(&self) -> Result<Vec<(String, Document)>, StoreError> {
        self.inner.list().await
    }

    async fn keys(&self) -> Result<Vec<String>, StoreError> {
        self.inner.keys().await
    }

    async fn existing(&self, keys: &[LinkKey]) -> Result<Vec<bool>, StoreError> {
        self.inner.existing(keys).await
    }

    async fn existing_all(&self, keys: &[LinkKey]) -> Result<Vec<bool>, StoreError> {
        self.inner.existing_all(keys).await
    }

    async fn get_all(&self, keys: &[LinkKey]) -> Result<Vec<Option<Stored>>, StoreError> {
        self.inner.get_all(keys).await
    }

    fn writes_in_flight(&self) -> usize {
        self.inner.writes_in_flight()
    }

    fn batch_size(&self) -> usize {
        self.inner.batch_size()
    }

    async fn write_batch(
        &self,
        docs: Vec<BulkDoc>,
        on_existing: OnExisting,
    ) -> Result<Vec<BulkOutcome>, StoreError> {
        let sent: Vec<(LinkKey, Document)> = docs
            .iter()
            .map(|d| (d.key().clone(), d.document()))
            .collect();
        let outcomes = self.inner.write_batch(docs, on_existing).await?;
        let written: Vec<(LinkKey, Document)> = sent
            .into_iter()
            .zip(&outcomes)
            .filter(|(_, o)| matches!(o, BulkOutcome::Created | BulkOutcome::Updated))
            .map(|(d, _)| d)
            .collect();
        self.until_served(&written).await;
        Ok(outcomes)
    }

    async fn export(&self, pages: tokio::sync::mpsc::Sender<ExportPage>) -> Result<(), StoreError> {
        self.inner.export(pages).await
    }

    async fn public_url(&self) -> Result<Option<String>, StoreError> {
        self.inner.public_url().await
    }

    async fn record_public_url(&self, url: &str, replace: bool) -> Result<bool, StoreError> {
        self.inner.record_public_url(url, replace).await
    }

    fn snapshot_identity(&self) -> String {
        self.inner.snapshot_identity()
    }

    async fn mark_snapshot(
        &self,
        file: &str,
        previous: Option<&str>,
    ) -> Result<Option<String>, StoreError> {
        self.inner.mark_snapshot(file, previous).await
    }

    async fn snapshot_mark(&self, file: &str) -> Result<Option<String>, StoreError> {
        self.inner.snapshot_mark(file).await
    }

    fn checks_mark_when_following(&self) -> bool {
        self.inner.checks_mark_when_following()
    }

    fn same_data_as(&self, named: &str) -> bool {
        self.inner.same_data_as(named)
    }

    async fn check_seq(&self, seq: &serde_json::Value) -> Result<(), String> {
        self.inner.check_seq(seq).await
    }

    fn cluster(&self) -> Option<Arc<crate::store::ClusterStats>> {
        self.inner.cluster()
    }

    async fn api_key(
        &self,
        id: &crate::values::api_key::KeyId,
    ) -> Result<Option<crate::values::api_key::KeyRecord>, StoreError> {
        self.inner.api_key(id).await
    }

    async fn api_keys(&self) -> Result<Vec<crate::values::api_key::KeyRecord>, StoreError> {
        self.inner.api_keys().await
    }

    // Issue 35 (i35-users).
    async fn key_owner(&self, name: &str) -> Result<crate::store::KeyOwner, StoreError> {
        self.inner.key_owner(name).await
    }

    async fn put_api_key(
        &self,
        record: &crate::values::api_key::KeyRecord,
    ) -> Result<(), StoreError> {
        self.inner.put_api_key(record).await
    }

    // Issue 35: the audit log, passed on.
    async fn append_audit(
        &self,
        entry: &crate::values::audit::AuditEntry,
    ) -> Result<(), StoreError> {
        self.inner.append_audit(entry).await
    }

    async fn audit(
        &self,
        query: &crate::values::audit::AuditQuery,
    ) -> Result<Vec<crate::values::audit::AuditEntry>, StoreError> {
        self.inner.audit(query).await
    }

    async fn history(&self, key: &LinkKey) -> Result<Vec<crate::link::history::Entry>, StoreError> {
        self.inner.history(key).await
    }

    /// The server's follower runs on the store itself; this one is only
    /// for writers. Following through it still works, on the inner store.
    fn follow(
        self: Arc<Self>,
        snapshot: Arc<Snapshot>,
        resume: Option<Resume>,
    ) -> tokio::task::JoinHandle<()> {
        Arc::clone(&self.inner).follow(snapshot, resume)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sqlite::SqliteStore;
    use crate::values::destination::Destination;

    /// Through a served store, every answered write is in the snapshot
    /// already: no waiting or polling by the reader.
    #[tokio::test]
    async fn every_answered_write_is_served() {
        let dir = tempfile::tempdir().expect("tempdir");
        let sqlite: Arc<dyn LinkStore> =
            Arc::new(SqliteStore::open(&dir.path().join("t.db")).expect("open"));
        let snapshot = Snapshot::new();
        let follower = Arc::clone(&sqlite).follow(Arc::clone(&snapshot), None);
        let store = Served::wrap(sqlite, Arc::clone(&snapshot));
        let a = Destination::parse("https://a.example/").expect("url");
        let b = Destination::parse("https://b.example/").expect("url");
        for _ in 0..50 {
            let key = crate::links::create(
                store.as_ref(),
                &crate::link::Author::cli(crate::link::Via::Cli, "test", "host"),
                &a,
                None,
                false,
            )
            .await
            .expect("create");
            assert_eq!(snapshot.load().live_url(key.as_str(), 0), Some(a.as_str()));
            crate::links::set_url(
                store.as_ref(),
                &crate::link::Author::cli(crate::link::Via::Cli, "test", "host"),
                &key,
                &b,
            )
            .await
            .expect("repoint");
            assert_eq!(snapshot.load().live_url(key.as_str(), 0), Some(b.as_str()));
            crate::links::set_inactive(
                store.as_ref(),
                &crate::link::Author::cli(crate::link::Via::Cli, "test", "host"),
                &key,
                true,
            )
            .await
            .expect("disable");
            assert_eq!(snapshot.load().live_url(key.as_str(), 0), None);
            crate::links::delete(
                store.as_ref(),
                &crate::link::Author::cli(crate::link::Via::Cli, "test", "host"),
                &key,
            )
            .await
            .expect("delete");
            assert!(snapshot.load().get(key.as_str()).is_none());
        }
        let docs: Vec<BulkDoc> = (0..20)
            .map(|i| {
                let key = LinkKey::parse(&format!("bulk{i}")).expect("key");
                BulkDoc::new(key, crate::link::Link::new_document(&a, false))
            })
            .collect();
        store
            .write_batch(docs, OnExisting::Refuse)
            .await
            .expect("batch");
        for i in 0..20 {
            assert!(snapshot.load().get(&format!("bulk{i}")).is_some());
        }
        follower.abort();
    }

    /// With no follower publishing, a write still succeeds, answered once
    /// the wait is over.
    #[tokio::test]
    async fn a_write_nobody_follows_is_answered_after_the_wait() {
        let dir = tempfile::tempdir().expect("tempdir");
        let sqlite: Arc<dyn LinkStore> =
            Arc::new(SqliteStore::open(&dir.path().join("t.db")).expect("open"));
        let wait = Duration::from_millis(50);
        let store = Served::waiting(Arc::clone(&sqlite), Snapshot::new(), wait);
        let a = Destination::parse("https://a.example/").expect("url");
        let started = tokio::time::Instant::now();
        let key = crate::links::create(
            store.as_ref(),
            &crate::link::Author::cli(crate::link::Via::Cli, "test", "host"),
            &a,
            None,
            false,
        )
        .await
        .expect("written all the same");
        assert!(started.elapsed() >= wait);
        assert!(sqlite.get(&key).await.expect("read").is_some());
    }
}
