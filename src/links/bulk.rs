//! One edit applied to link after link (the console's bulk actions, issue
//! 33), each with [`super::update`]'s rules: a tombstone refused, a stale
//! revision re-read, `changed_at` stamped. One thing differs: a link the
//! edit would leave as it is is not written, so "disable" on a link that
//! is disabled already does not move its last change, and the report can
//! say which links the action changed.

use chrono::Utc;

use super::{LinkError, MAX_ATTEMPTS, deleted};
#[cfg(test)]
use crate::link::Via;
use crate::link::{self, Author, Document};
use crate::store::{LinkStore, StoreError};
use crate::values::link_key::LinkKey;

/// What an edit did to one link.
#[derive(Debug)]
pub enum Outcome {
    /// Written (and stamped).
    Done,
    /// Already as asked: nothing written.
    Unchanged,
    /// Not written, and why (a tombstone, the store's refusal, …).
    Refused(LinkError),
}

/// Applies `edit` to `key`'s stored document unless it changes nothing.
pub async fn edit(
    store: &dyn LinkStore,
    author: &Author,
    key: &LinkKey,
    edit: impl Fn(&mut Document),
) -> Outcome {
    match edit_once(store, author, key, &edit).await {
        Ok(outcome) => outcome,
        Err(e) => Outcome::Refused(e),
    }
}

async fn edit_once(
    store: &dyn LinkStore,
    author: &Author,
    key: &LinkKey,
    edit: &impl Fn(&mut Document),
) -> Result<Outcome, LinkError> {
    for _ in 0..MAX_ATTEMPTS {
        let Some(stored) = store.get(key).await? else {
            return Err(LinkError::NotFound(key.clone()));
        };
        if let Some(e) = deleted(key, &stored.doc) {
            return Err(e);
        }
        let mut doc = stored.doc.clone();
        edit(&mut doc);
        if doc == stored.doc {
            return Ok(Outcome::Unchanged);
        }
        link::stamp_changed(&mut doc, Utc::now(), author);
        match store.replace(key, &doc, &stored.rev).await {
            Ok(()) => return Ok(Outcome::Done),
            Err(StoreError::Conflict(_)) => continue,
            Err(StoreError::NotFound(_)) => return Err(LinkError::NotFound(key.clone())),
            Err(e) => return Err(e.into()),
        }
    }
    Err(LinkError::TooManyConflicts(key.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sqlite::SqliteStore;
    use crate::values::destination::Destination;

    #[tokio::test]
    async fn an_edit_that_changes_nothing_writes_nothing_and_a_tombstone_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = SqliteStore::open(&dir.path().join("q.db")).expect("store");
        let url = Destination::parse("https://example.com/").expect("url");
        let key = LinkKey::parse("menu").expect("key");
        crate::links::create(
            &store,
            &Author::cli(Via::Cli, "u", "h"),
            &url,
            Some(&key),
            false,
        )
        .await
        .expect("create");
        let before = store.get(&key).await.expect("get").expect("stored");

        let off = |d: &mut Document| link::set_inactive(d, true);
        assert!(matches!(
            edit(&store, &Author::cli(Via::Console, "u", "h"), &key, off).await,
            Outcome::Done
        ));
        let written = store.get(&key).await.expect("get").expect("stored");
        assert_ne!(written.rev, before.rev);
        assert!(matches!(
            edit(&store, &Author::cli(Via::Console, "u", "h"), &key, off).await,
            Outcome::Unchanged
        ));
        let again = store.get(&key).await.expect("get").expect("stored");
        assert_eq!(again.rev, written.rev, "not written again");

        crate::links::delete(&store, &Author::cli(Via::Cli, "u", "h"), &key)
            .await
            .expect("delete");
        let on = |d: &mut Document| link::set_inactive(d, false);
        assert!(matches!(
            edit(&store, &Author::cli(Via::Console, "u", "h"), &key, on).await,
            Outcome::Refused(LinkError::Deleted { .. })
        ));
        let missing = LinkKey::parse("nothing").expect("key");
        assert!(matches!(
            edit(&store, &Author::cli(Via::Console, "u", "h"), &missing, on).await,
            Outcome::Refused(LinkError::NotFound(_))
        ));
    }
}
