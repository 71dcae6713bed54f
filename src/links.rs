//! Creating and editing links on any store, with the retry rules both stores
//! share: a taken random ID draws a fresh one, and a stale revision re-reads
//! and applies the edit again. The CLI and the API call these.

use crate::destination::Destination;
use crate::link::{self, Document, Link};
use crate::link_key::LinkKey;
use crate::short_id::ShortId;
use crate::store::{LinkStore, StoreError};

/// How many times a write is retried after a conflict before giving up; with
/// 62^5 IDs a run of collisions this long means something else is wrong.
const MAX_ATTEMPTS: usize = 16;

#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    #[error("the key {0} is already taken")]
    KeyTaken(LinkKey),
    #[error("no link with key {0}")]
    NotFound(LinkKey),
    #[error("gave up after {MAX_ATTEMPTS} conflicting writes to {0}")]
    TooManyConflicts(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Creates a link under `key`, or under a fresh random [`ShortId`] when `key`
/// is `None`. Returns the key used.
pub async fn create(
    store: &dyn LinkStore,
    url: &Destination,
    key: Option<&LinkKey>,
    inactive: bool,
) -> Result<LinkKey, LinkError> {
    create_document(store, &Link::new_document(url, inactive), key).await
}

/// Creates a link from a whole document (one [`Link::from_document`]
/// accepts), under `key` or a fresh random [`ShortId`]. Returns the key used.
pub async fn create_document(
    store: &dyn LinkStore,
    doc: &Document,
    key: Option<&LinkKey>,
) -> Result<LinkKey, LinkError> {
    if let Some(key) = key {
        return match store.create(key, doc).await {
            Err(StoreError::Conflict(_)) => Err(LinkError::KeyTaken(key.clone())),
            other => other.map(|()| key.clone()).map_err(Into::into),
        };
    }
    for _ in 0..MAX_ATTEMPTS {
        let key = LinkKey::from(ShortId::random());
        match store.create(&key, doc).await {
            Ok(()) => return Ok(key),
            Err(StoreError::Conflict(_)) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(LinkError::TooManyConflicts("a new random key".into()))
}

/// Applies `edit` to the stored document, re-reading and retrying when
/// someone else wrote in between. Returns the document as written.
pub async fn update(
    store: &dyn LinkStore,
    key: &LinkKey,
    edit: impl Fn(&mut Document),
) -> Result<Document, LinkError> {
    for _ in 0..MAX_ATTEMPTS {
        let Some(stored) = store.get(key).await? else {
            return Err(LinkError::NotFound(key.clone()));
        };
        let mut doc = stored.doc;
        edit(&mut doc);
        match store.replace(key, &doc, &stored.rev).await {
            Ok(()) => return Ok(doc),
            Err(StoreError::Conflict(_)) => continue,
            Err(StoreError::NotFound(_)) => return Err(LinkError::NotFound(key.clone())),
            Err(e) => return Err(e.into()),
        }
    }
    Err(LinkError::TooManyConflicts(key.to_string()))
}

pub async fn set_url(
    store: &dyn LinkStore,
    key: &LinkKey,
    url: &Destination,
) -> Result<Document, LinkError> {
    update(store, key, |d| link::set_url(d, url)).await
}

pub async fn set_inactive(
    store: &dyn LinkStore,
    key: &LinkKey,
    inactive: bool,
) -> Result<Document, LinkError> {
    update(store, key, |d| link::set_inactive(d, inactive)).await
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
        let k = create(&store, &url, None, false).await.expect("create");
        assert!(
            ShortId::parse(k.as_str()).is_ok(),
            "random keys are short IDs"
        );
        let slug = LinkKey::parse("docs/api").expect("key");
        create(&store, &url, Some(&slug), false)
            .await
            .expect("create slug");
        assert!(matches!(
            create(&store, &url, Some(&slug), false).await,
            Err(LinkError::KeyTaken(_))
        ));
        let doc = set_inactive(&store, &slug, true).await.expect("disable");
        assert_eq!(doc.get("inactive"), Some(&serde_json::Value::Bool(true)));
        let missing = LinkKey::parse("zzzzz").expect("key");
        assert!(matches!(
            set_url(&store, &missing, &url).await,
            Err(LinkError::NotFound(_))
        ));
    }
}
