//! Reading a link's history and reverting it (issue 35): the pure core's
//! plan ([`revert_edit`]) applied with [`update_at`](super::update_at) at
//! the revision the plan was made from, so a write that comes between is a
//! conflict and the plan is made again, never applied to a state it was
//! not made for. A revert is a write like any other and so its own entry.

use super::{LinkError, MAX_ATTEMPTS, update_at};
use crate::link::history::{self, Field, History, RevertError, revert_edit};
use crate::link::{Author, Document};
use crate::store::{LinkStore, StoreError};
use crate::values::link_key::LinkKey;

#[derive(Debug, thiserror::Error)]
pub enum RevertFailed {
    /// The request itself is wrong (an entry that does not exist, a
    /// deleted link): the caller's mistake, said as such.
    #[error(transparent)]
    Revert(#[from] RevertError),
    #[error(transparent)]
    Link(#[from] LinkError),
}

impl From<StoreError> for RevertFailed {
    fn from(e: StoreError) -> Self {
        RevertFailed::Link(e.into())
    }
}

/// What a revert did.
#[derive(Debug)]
pub struct Reverted {
    /// The fields it set back; empty when the link was so already, and
    /// then nothing was written.
    pub fields: Vec<Field>,
    /// The document as it is now.
    pub doc: Document,
}

/// `key`'s kept history; [`LinkError::NotFound`] for a key with no
/// document and no history.
pub async fn read(store: &dyn LinkStore, key: &LinkKey) -> Result<History, LinkError> {
    let entries = store.history(key).await?;
    if entries.is_empty() && store.get(key).await?.is_none() {
        return Err(LinkError::NotFound(key.clone()));
    }
    Ok(History { entries })
}

/// Puts `key` back as it was after entry `to`. With `if_match` (an HTTP
/// `If-Match`), only at that revision, with no retry.
pub async fn revert(
    store: &dyn LinkStore,
    author: &Author,
    key: &LinkKey,
    to: u64,
    if_match: Option<&str>,
) -> Result<Reverted, RevertFailed> {
    for _ in 0..MAX_ATTEMPTS {
        let Some(stored) = store.get(key).await? else {
            return Err(LinkError::NotFound(key.clone()).into());
        };
        if let Some(rev) = if_match
            && rev != stored.rev
        {
            return Err(StoreError::Conflict(key.to_string()).into());
        }
        let history = History {
            entries: store.history(key).await?,
        };
        let edit = revert_edit(&history, to, &stored.doc)?;
        if edit.is_empty() {
            return Ok(Reverted {
                fields: vec![],
                doc: stored.doc,
            });
        }
        let reverting = author.clone().reverting(to);
        let written = update_at(store, &reverting, key, &stored.rev, |d| {
            history::apply(d, &edit)
        })
        .await;
        match written {
            Ok(doc) => {
                return Ok(Reverted {
                    fields: edit.iter().map(|(f, _)| *f).collect(),
                    doc,
                });
            }
            Err(LinkError::Store(StoreError::Conflict(_))) if if_match.is_none() => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(LinkError::TooManyConflicts(key.to_string()).into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::Via;
    use crate::link::history::Kind;
    use crate::store::sqlite::SqliteStore;
    use crate::values::actor::Actor;
    use crate::values::destination::Destination;

    fn url(s: &str) -> Destination {
        Destination::parse(s).expect("url")
    }

    #[tokio::test]
    async fn every_write_is_an_entry_and_a_revert_is_one_more() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = SqliteStore::open(&dir.path().join("h.db")).expect("open");
        let ann = Author::new(Via::Console, Actor::Console { user: "ann".into() });
        let cli = Author::cli(Via::Cli, "root", "box");
        let key = LinkKey::parse("menu").expect("key");
        crate::links::create(&store, &cli, &url("https://a.example/"), Some(&key), false)
            .await
            .expect("create");
        crate::links::set_url(&store, &ann, &key, &url("https://b.example/"))
            .await
            .expect("repoint");
        crate::links::set_inactive(&store, &ann, &key, true)
            .await
            .expect("disable");
        let h = read(&store, &key).await.expect("history");
        let who: Vec<(u64, String, Kind)> = h
            .entries
            .iter()
            .map(|e| (e.n, e.actor.to_string(), e.kind))
            .collect();
        assert_eq!(
            who,
            [
                (1, "cli (root@box)".to_owned(), Kind::Create),
                (2, "ann (console)".to_owned(), Kind::Edit),
                (3, "ann (console)".to_owned(), Kind::Edit),
            ]
        );
        assert_eq!(h.entries[1].rev.as_deref(), Some("2"));

        let back = revert(&store, &cli, &key, 1, None).await.expect("revert");
        assert_eq!(back.fields, [Field::Url, Field::Inactive]);
        assert_eq!(
            back.doc.get("url"),
            Some(&serde_json::json!("https://a.example/"))
        );
        assert_eq!(back.doc.get("inactive"), Some(&serde_json::json!(false)));
        let h = read(&store, &key).await.expect("history");
        assert_eq!(h.entries.len(), 4, "a revert is an entry");
        assert_eq!(h.entries[3].actor.to_string(), "cli (root@box)");
        // Already as after entry 1: nothing written, no entry.
        let again = revert(&store, &cli, &key, 1, None).await.expect("revert");
        assert!(again.fields.is_empty());
        assert_eq!(read(&store, &key).await.expect("h").entries.len(), 4);

        assert!(matches!(
            revert(&store, &cli, &key, 9, None).await,
            Err(RevertFailed::Revert(RevertError::NoEntry {
                n: 9,
                first: 1,
                last: 4
            }))
        ));
        let rev = store.get(&key).await.expect("get").expect("stored").rev;
        assert!(matches!(
            revert(&store, &cli, &key, 2, Some("1")).await,
            Err(RevertFailed::Link(LinkError::Store(StoreError::Conflict(
                _
            ))))
        ));
        revert(&store, &cli, &key, 2, Some(&rev))
            .await
            .expect("at its revision");

        crate::links::delete(&store, &cli, &key)
            .await
            .expect("delete");
        let h = read(&store, &key).await.expect("history");
        assert_eq!(h.entries.last().map(|e| e.kind), Some(Kind::Delete));
        assert!(matches!(
            revert(&store, &cli, &key, 1, None).await,
            Err(RevertFailed::Revert(RevertError::LinkDeleted))
        ));
        let missing = LinkKey::parse("nothing").expect("key");
        assert!(matches!(
            read(&store, &missing).await,
            Err(LinkError::NotFound(_))
        ));
    }

    #[tokio::test]
    async fn a_thousand_edits_keep_the_last_two_hundred() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = SqliteStore::open(&dir.path().join("h.db")).expect("open");
        let cli = Author::cli(Via::Cli, "root", "box");
        let key = LinkKey::parse("busy").expect("key");
        crate::links::create(&store, &cli, &url("https://a.example/0"), Some(&key), false)
            .await
            .expect("create");
        for i in 1..1000 {
            crate::links::set_url(&store, &cli, &key, &url(&format!("https://a.example/{i}")))
                .await
                .expect("repoint");
        }
        let h = read(&store, &key).await.expect("history");
        assert_eq!(h.entries.len() as u64, history::KEEP);
        assert_eq!(h.dropped(), 800);
        assert_eq!(h.entries[0].n, 801);
        let stored_bytes: usize = h
            .entries
            .iter()
            .map(|e| serde_json::to_string(e).map(|t| t.len()).unwrap_or(0))
            .sum();
        assert!(stored_bytes < 200 * 1024, "{stored_bytes} bytes");
        revert(&store, &cli, &key, 801, None)
            .await
            .expect("the oldest kept");
        let doc = crate::links::get(&store, &key).await.expect("get");
        assert_eq!(
            doc.get("url"),
            Some(&serde_json::json!("https://a.example/800"))
        );
        assert!(matches!(
            revert(&store, &cli, &key, 800, None).await,
            Err(RevertFailed::Revert(RevertError::Dropped {
                n: 800,
                first: 802
            }))
        ));
    }
}
