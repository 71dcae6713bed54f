//! Creating and editing links on any store, with the retry rules both stores
//! share: a taken random ID draws a fresh one, and a stale revision re-reads
//! and applies the edit again. The CLI, the console and the API call these.
//!
//! Every write here stamps the document (`created_at` once, `changed_at`
//! each time, each beside the [`Author`] (surface and actor) the caller names: issue 33's
//! "last changed via the console"), and none of them touches a tombstone: a deleted key keeps
//! its document so that it is never handed out again, since a printed tag
//! must not lead somewhere else by accident.

use chrono::{DateTime, Utc};

pub mod bulk;
pub mod chain;
// Issue 35: a link's history read, and one step back.
pub mod history;
pub mod served;

#[cfg(test)]
use crate::link::Via;
use crate::link::{self, Author, Document, Link};
use crate::store::{LinkStore, StoreError};
use crate::values::destination::Destination;
use crate::values::link_key::LinkKey;
use crate::values::short_id::ShortId;

/// How many times a write is retried after a conflict before giving up; with
/// 62^5 IDs a run of collisions this long means something else is wrong.
const MAX_ATTEMPTS: usize = 16;

#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    #[error("the key {0} is already taken")]
    KeyTaken(LinkKey),
    #[error("no link with key {0}")]
    NotFound(LinkKey),
    #[error("{}", link::deleted_message(.key, *.on))]
    Deleted {
        key: LinkKey,
        on: Option<DateTime<Utc>>,
    },
    #[error(
        "the key {key} would take over URLs of the link {parent}: /{key} now leads to {parent}'s destination with the rest of the path appended"
    )]
    TakesOver { key: LinkKey, parent: LinkKey },
    #[error("gave up after {MAX_ATTEMPTS} conflicting writes to {0}")]
    TooManyConflicts(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Creates a link under `key`, or under a fresh random [`ShortId`] when `key`
/// is `None`. Returns the key used.
pub async fn create(
    store: &dyn LinkStore,
    author: &Author,
    url: &Destination,
    key: Option<&LinkKey>,
    inactive: bool,
) -> Result<LinkKey, LinkError> {
    create_document(store, author, &Link::new_document(url, inactive), key).await
}

/// Whether a new key may take over the URLs of a shorter existing link
/// ([`link_key::taken_over`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TakeOver {
    /// [`LinkError::TakesOver`]: the default for every caller.
    Refuse,
    /// An editor said so explicitly (`qrtag new --take-over`).
    Allow,
}

/// Creates a link from a whole document (one [`Link::from_document`]
/// accepts), under `key` or a fresh random [`ShortId`]. Returns the key used.
/// A key that would take over a shorter link's URLs is refused.
pub async fn create_document(
    store: &dyn LinkStore,
    author: &Author,
    doc: &Document,
    key: Option<&LinkKey>,
) -> Result<LinkKey, LinkError> {
    create_document_with(store, author, doc, key, TakeOver::Refuse).await
}

/// [`create_document`], with the editor's word on taking over.
pub async fn create_document_with(
    store: &dyn LinkStore,
    author: &Author,
    doc: &Document,
    key: Option<&LinkKey>,
    take_over: TakeOver,
) -> Result<LinkKey, LinkError> {
    let mut doc = doc.clone();
    link::stamp_created(&mut doc, Utc::now(), author);
    let doc = &doc;
    if let Some(key) = key {
        if take_over == TakeOver::Allow {
            return match store.create(key, doc).await {
                Ok(()) => Ok(key.clone()),
                Err(e) => Err(not_created(store, key, e).await),
            };
        }
        // Checked first, so a refused key is usually never written; the
        // store checks again with the write (a parent may come between).
        let taken = |parent| LinkError::TakesOver {
            key: key.clone(),
            parent,
        };
        if let Some(parent) = taken_parent(store, key).await? {
            return Err(taken(parent));
        }
        let parents: Vec<LinkKey> = key.parents().collect();
        return match store.create_below(key, doc, &parents).await {
            Ok(found) => match crate::values::link_key::taken_over(key, &found).or(found.first()) {
                Some(parent) => Err(taken(parent.clone())),
                None => Ok(key.clone()),
            },
            Err(e) => Err(not_created(store, key, e).await),
        };
    }
    // A random key that hits a tombstone is taken like any other, and is
    // redrawn.
    for _ in 0..MAX_ATTEMPTS {
        let key = LinkKey::from(ShortId::random());
        match store.create(&key, doc).await {
            Ok(()) => return Ok(key),
            Err(e) => match not_created(store, &key, e).await {
                LinkError::KeyTaken(_) | LinkError::Deleted { .. } => continue,
                e => return Err(e),
            },
        }
    }
    Err(LinkError::TooManyConflicts("a new random key".into()))
}

/// The stored link whose URLs `key` would take over: one lookup of all
/// its [parents](LinkKey::parents), at most one per `/`. Any document
/// counts, an inactive or deleted link's too: its printed URLs must not
/// come back leading somewhere else.
pub async fn taken_parent(
    store: &dyn LinkStore,
    key: &LinkKey,
) -> Result<Option<LinkKey>, StoreError> {
    let parents: Vec<LinkKey> = key.parents().collect();
    if parents.is_empty() {
        return Ok(None);
    }
    let found = store.existing(&parents).await?;
    let existing: Vec<LinkKey> = parents
        .into_iter()
        .zip(found)
        .filter_map(|(k, e)| e.then_some(k))
        .collect();
    Ok(crate::values::link_key::taken_over(key, &existing).cloned())
}

/// Why `key` could not be created: taken, a tombstone (said as such, with
/// its date), or the store's own error. CouchDB's validation may refuse a
/// create over a tombstone (403) before its conflict check (409), so a
/// refusal is also looked into; a failed read to tell leaves the error as
/// it was.
async fn not_created(store: &dyn LinkStore, key: &LinkKey, err: StoreError) -> LinkError {
    if !matches!(err, StoreError::Conflict(_) | StoreError::Refused { .. }) {
        return err.into();
    }
    let tombstone = match store.get(key).await {
        Ok(Some(stored)) => deleted(key, &stored.doc),
        _ => None,
    };
    match (tombstone, err) {
        (Some(deleted), _) => deleted,
        (None, StoreError::Conflict(_)) => LinkError::KeyTaken(key.clone()),
        (None, err) => err.into(),
    }
}

/// [`LinkError::Deleted`] for a tombstone, `None` for any other document.
pub fn deleted(key: &LinkKey, doc: &Document) -> Option<LinkError> {
    link::is_tombstone(doc).then(|| LinkError::Deleted {
        key: key.clone(),
        on: link::deleted_at(doc),
    })
}

/// Applies `edit` to the stored document, re-reading and retrying when
/// someone else wrote in between, and stamps `changed_at`. A tombstone is
/// refused. Returns the document as written.
pub async fn update(
    store: &dyn LinkStore,
    author: &Author,
    key: &LinkKey,
    edit: impl Fn(&mut Document),
) -> Result<Document, LinkError> {
    for _ in 0..MAX_ATTEMPTS {
        let Some(stored) = store.get(key).await? else {
            return Err(LinkError::NotFound(key.clone()));
        };
        if let Some(e) = deleted(key, &stored.doc) {
            return Err(e);
        }
        let mut doc = stored.doc;
        edit(&mut doc);
        link::stamp_changed(&mut doc, Utc::now(), author);
        match store.replace(key, &doc, &stored.rev).await {
            Ok(()) => return Ok(doc),
            Err(StoreError::Conflict(_)) => continue,
            Err(StoreError::NotFound(_)) => return Err(LinkError::NotFound(key.clone())),
            Err(e) => return Err(e.into()),
        }
    }
    Err(LinkError::TooManyConflicts(key.to_string()))
}

/// [`update`] only if the stored document is still at `rev` (an HTTP
/// `If-Match`): no re-read and retry, since the caller asked not to
/// overwrite anyone's edit. A newer revision is
/// [`StoreError::Conflict`](crate::store::StoreError::Conflict).
pub async fn update_at(
    store: &dyn LinkStore,
    author: &Author,
    key: &LinkKey,
    rev: &str,
    edit: impl Fn(&mut Document),
) -> Result<Document, LinkError> {
    let Some(stored) = store.get(key).await? else {
        return Err(LinkError::NotFound(key.clone()));
    };
    if let Some(e) = deleted(key, &stored.doc) {
        return Err(e);
    }
    if stored.rev != rev {
        return Err(StoreError::Conflict(key.to_string()).into());
    }
    let mut doc = stored.doc;
    edit(&mut doc);
    link::stamp_changed(&mut doc, Utc::now(), author);
    match store.replace(key, &doc, &stored.rev).await {
        Ok(()) => Ok(doc),
        Err(StoreError::NotFound(_)) => Err(LinkError::NotFound(key.clone())),
        Err(e) => Err(e.into()),
    }
}

pub async fn set_url(
    store: &dyn LinkStore,
    author: &Author,
    key: &LinkKey,
    url: &Destination,
) -> Result<Document, LinkError> {
    update(store, author, key, |d| link::set_url(d, url)).await
}

pub async fn set_inactive(
    store: &dyn LinkStore,
    author: &Author,
    key: &LinkKey,
    inactive: bool,
) -> Result<Document, LinkError> {
    update(store, author, key, |d| link::set_inactive(d, inactive)).await
}

/// Deletes a link: its document becomes a tombstone (`deleted_at`,
/// inactive), which answers 404 and keeps the key from ever being reused.
pub async fn delete(
    store: &dyn LinkStore,
    author: &Author,
    key: &LinkKey,
) -> Result<Document, LinkError> {
    update(store, author, key, |d| link::set_deleted(d, Utc::now())).await
}

pub async fn get(store: &dyn LinkStore, key: &LinkKey) -> Result<Document, LinkError> {
    store
        .get(key)
        .await?
        .map(|s| s.doc)
        .ok_or_else(|| LinkError::NotFound(key.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sqlite::SqliteStore;

    #[tokio::test]
    async fn random_and_chosen_keys() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = SqliteStore::open(&dir.path().join("t.db")).expect("open");
        let url = Destination::parse("https://example.com/").expect("url");
        let k = create(&store, &Author::cli(Via::Cli, "u", "h"), &url, None, false)
            .await
            .expect("create");
        assert!(
            ShortId::parse(k.as_str()).is_ok(),
            "random keys are short IDs"
        );
        let slug = LinkKey::parse("docs/api").expect("key");
        create(
            &store,
            &Author::cli(Via::Cli, "u", "h"),
            &url,
            Some(&slug),
            false,
        )
        .await
        .expect("create slug");
        assert!(matches!(
            create(
                &store,
                &Author::cli(Via::Cli, "u", "h"),
                &url,
                Some(&slug),
                false
            )
            .await,
            Err(LinkError::KeyTaken(_))
        ));
        let doc = set_inactive(&store, &Author::cli(Via::Cli, "u", "h"), &slug, true)
            .await
            .expect("disable");
        assert_eq!(doc.get("inactive"), Some(&serde_json::Value::Bool(true)));
        assert!(link::created_at(&doc).is_some() && link::changed_at(&doc).is_some());
        let below = LinkKey::parse("docs/api/v1").expect("key");
        assert!(matches!(
            create(&store, &Author::cli(Via::Cli, "u", "h"), &url, Some(&below), false).await,
            Err(LinkError::TakesOver { parent, .. }) if parent == slug
        ));
        create_document_with(
            &store,
            &Author::cli(Via::Cli, "u", "h"),
            &Link::new_document(&url, false),
            Some(&below),
            TakeOver::Allow,
        )
        .await
        .expect("an editor's explicit word");
        let missing = LinkKey::parse("zzzzz").expect("key");
        assert!(matches!(
            set_url(&store, &Author::cli(Via::Cli, "u", "h"), &missing, &url).await,
            Err(LinkError::NotFound(_))
        ));
    }

    #[tokio::test]
    async fn an_edit_at_a_revision_applies_only_at_that_revision() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = SqliteStore::open(&dir.path().join("t.db")).expect("open");
        let url = Destination::parse("https://example.com/").expect("url");
        let key = create(&store, &Author::cli(Via::Cli, "u", "h"), &url, None, false)
            .await
            .expect("create");
        let read = store.get(&key).await.expect("get").expect("stored");
        let other = Destination::parse("https://example.org/").expect("url");
        update_at(
            &store,
            &Author::cli(Via::Cli, "u", "h"),
            &key,
            &read.rev,
            |d| link::set_url(d, &other),
        )
        .await
        .expect("at the revision read");
        let stale = update_at(
            &store,
            &Author::cli(Via::Cli, "u", "h"),
            &key,
            &read.rev,
            |d| link::set_url(d, &url),
        )
        .await;
        assert!(matches!(
            stale,
            Err(LinkError::Store(StoreError::Conflict(_)))
        ));
        let doc = get(&store, &key).await.expect("get");
        assert_eq!(
            doc.get("url").and_then(|u| u.as_str()),
            Some("https://example.org/")
        );
    }

    #[tokio::test]
    async fn a_tombstone_refuses_every_write_and_its_key() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = SqliteStore::open(&dir.path().join("t.db")).expect("open");
        let url = Destination::parse("https://example.com/").expect("url");
        let key = LinkKey::parse("gone").expect("key");
        create(
            &store,
            &Author::cli(Via::Cli, "u", "h"),
            &url,
            Some(&key),
            false,
        )
        .await
        .expect("create");
        let doc = delete(&store, &Author::cli(Via::Cli, "u", "h"), &key)
            .await
            .expect("delete");
        assert!(link::is_tombstone(&doc));
        let refused = |e: Option<LinkError>| matches!(e, Some(LinkError::Deleted { .. }));
        assert!(refused(
            create(
                &store,
                &Author::cli(Via::Cli, "u", "h"),
                &url,
                Some(&key),
                false
            )
            .await
            .err()
        ));
        assert!(refused(
            set_url(&store, &Author::cli(Via::Cli, "u", "h"), &key, &url)
                .await
                .err()
        ));
        assert!(refused(
            set_inactive(&store, &Author::cli(Via::Cli, "u", "h"), &key, false)
                .await
                .err()
        ));
        assert!(refused(
            delete(&store, &Author::cli(Via::Cli, "u", "h"), &key)
                .await
                .err()
        ));
        let msg = delete(&store, &Author::cli(Via::Cli, "u", "h"), &key)
            .await
            .expect_err("twice")
            .to_string();
        assert!(msg.starts_with("key gone was deleted on 20"), "{msg}");
    }
}
