//! Whether a scan of a key will resolve, checked when a link is written.
//!
//! A link can point inside the service (`/b`), and a chain of those can loop
//! (`a -> /b`, `b -> /a`) or run past the resolver's 256 hops. The server
//! answers such a scan 404 and logs a warning; the person who wrote the link
//! should hear it at once, naming the keys. The check runs the very
//! resolver the server runs ([`policy::decide`]), fetching from the
//! store only the keys it asks for: a handful of reads, whatever the number
//! of links.

use std::cell::RefCell;
use std::collections::HashMap;

use chrono::Utc;

use crate::link::Link;
use crate::redirect::policy::{self, Decision};
use crate::store::{LinkStore, StoreError};
use crate::values::link_key::LinkKey;

/// Reads allowed before giving up: a chain of 256 hops through keys of a
/// few segments each.
const MAX_READS: usize = 2_000;

/// A chain the resolver refuses: why, and the links it went through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokenChain {
    pub reason: String,
    /// `(key, destination)` of each link met, in the order met.
    pub links: Vec<(String, String)>,
}

impl BrokenChain {
    /// What the person who wrote `key` is told, by the CLI and the console
    /// alike: `scans of b will answer 404: too many internal redirects: ...`.
    pub fn warning(&self, key: &LinkKey) -> String {
        format!("scans of {key} will answer 404: {self}")
    }
}

impl std::fmt::Display for BrokenChain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.reason)?;
        const SHOWN: usize = 6;
        for (i, (key, dest)) in self.links.iter().take(SHOWN).enumerate() {
            write!(f, "{} {key} -> {dest}", if i == 0 { ":" } else { "," })?;
        }
        if self.links.len() > SHOWN {
            write!(f, ", ... ({} links)", self.links.len())?;
        }
        Ok(())
    }
}

/// What a scan of `/KEY` meets now: `Some` when the resolver refuses the
/// chain of links it starts.
pub async fn check(
    store: &dyn LinkStore,
    public_origin: &str,
    key: &LinkKey,
) -> Result<Option<BrokenChain>, StoreError> {
    let path = format!("/{key}");
    let now = Utc::now();
    // What each key the resolver asked for holds: `None` for no live link.
    let mut known: HashMap<String, Option<String>> = HashMap::new();
    let mut order: Vec<String> = Vec::new();
    for _ in 0..MAX_READS {
        let missing = RefCell::new(None);
        let decision = policy::decide(public_origin, &path, None, |k| match known.get(k) {
            Some(value) => value.as_deref(),
            None => {
                missing.borrow_mut().get_or_insert_with(|| k.to_owned());
                None
            }
        });
        let Some(wanted) = missing.into_inner() else {
            return Ok(match decision {
                Decision::Broken(e) => Some(BrokenChain {
                    reason: e.to_string(),
                    links: order
                        .iter()
                        .filter_map(|k| Some((k.clone(), known.get(k)?.clone()?)))
                        .collect(),
                }),
                _ => None,
            });
        };
        let value = match LinkKey::parse(&wanted) {
            Ok(k) => store
                .get(&k)
                .await?
                .and_then(|s| Link::from_document(&s.doc).ok())
                .filter(|l| l.is_live_at(now))
                .map(|l| l.url.to_string()),
            Err(_) => None,
        };
        if value.is_some() {
            order.push(wanted.clone());
        }
        known.insert(wanted, value);
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sqlite::SqliteStore;
    use crate::values::destination::Destination;

    const ORIGIN: &str = "https://0x1f.ie";

    async fn store_with(links: &[(&str, &str)]) -> (tempfile::TempDir, SqliteStore) {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = SqliteStore::open(&dir.path().join("t.db")).expect("open");
        for (key, url) in links {
            let key = LinkKey::parse(key).expect("key");
            let url = Destination::parse(url).expect("url");
            crate::links::create(&store, crate::link::Via::Cli, &url, Some(&key), false)
                .await
                .expect("create");
        }
        (dir, store)
    }

    async fn check_key(store: &SqliteStore, key: &str) -> Option<BrokenChain> {
        check(store, ORIGIN, &LinkKey::parse(key).expect("key"))
            .await
            .expect("check")
    }

    #[tokio::test]
    async fn a_loop_is_found_and_its_keys_named() {
        let (_dir, store) =
            store_with(&[("a", "/b"), ("b", "/a"), ("c", "https://example.com/")]).await;
        let broken = check_key(&store, "a").await.expect("a loop");
        assert_eq!(
            broken.links,
            vec![
                ("a".to_owned(), "/b".to_owned()),
                ("b".to_owned(), "/a".to_owned())
            ]
        );
        let text = broken.to_string();
        assert!(text.contains("too many internal redirects"), "{text}");
        assert!(text.contains("a -> /b, b -> /a"), "{text}");
        assert_eq!(check_key(&store, "c").await, None);
    }

    #[tokio::test]
    async fn working_chains_and_dead_ends_are_not_reported() {
        let (_dir, store) = store_with(&[
            ("a", "/b/x"),
            ("b", "/c"),
            ("c", "https://example.com/"),
            ("d", "/nowhere"),
        ])
        .await;
        assert_eq!(check_key(&store, "a").await, None);
        // A destination nothing matches is a 404, not a refused chain.
        assert_eq!(check_key(&store, "d").await, None);
    }

    #[tokio::test]
    async fn a_chain_longer_than_the_resolver_allows_is_reported() {
        let links: Vec<(String, String)> = (0..300)
            .map(|i| (format!("k{i}"), format!("/k{}", i + 1)))
            .collect();
        let refs: Vec<(&str, &str)> = links
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let (_dir, store) = store_with(&refs).await;
        let broken = check_key(&store, "k0").await.expect("too long");
        assert!(broken.links.len() > 200, "{}", broken.links.len());
        assert!(broken.to_string().contains("links)"), "{broken}");
    }
}
