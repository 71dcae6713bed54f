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
    /// Issue 34: the rule of the written link whose destination starts the
    /// chain (its index), or `None` for the link's `url`.
    pub rule: Option<usize>,
}

impl BrokenChain {
    /// What the person who wrote `key` is told, by the CLI and the console
    /// alike: `scans of b will answer 404: too many internal redirects: ...`.
    pub fn warning(&self, key: &LinkKey) -> String {
        match self.rule {
            None => format!("scans of {key} will answer 404: {self}"),
            Some(i) => format!("scans of {key} that rules[{i}] answers will answer 404: {self}"),
        }
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
/// chain of links it starts: from the link's `url`, or (issue 34) from any
/// of its rules' destinations, the first such chain in that order. A rule's
/// chain is walked with the written link answering with that rule, as a
/// scan the rule holds for would meet it again; the other links met are
/// followed by their `url` (their own rules would multiply the walks).
pub async fn check(
    store: &dyn LinkStore,
    public_origin: &str,
    key: &LinkKey,
) -> Result<Option<BrokenChain>, StoreError> {
    if let Some(broken) = walk(store, public_origin, key, None).await? {
        return Ok(Some(broken));
    }
    let now = Utc::now();
    let rules = match store.get(key).await? {
        Some(s) if Link::from_document(&s.doc).is_ok_and(|l| l.is_live_at(now)) => {
            crate::link::rules::Rules::from_stored(&s.doc).unwrap_or_default()
        }
        _ => return Ok(None),
    };
    for i in 0..rules.len() {
        let Some(url) = rules.url(i) else { continue };
        let start = (i, url.as_str().to_owned());
        if let Some(broken) = walk(store, public_origin, key, Some(start)).await? {
            return Ok(Some(broken));
        }
    }
    Ok(None)
}

/// One walk of the resolver from `/KEY`, the link `key` answering with
/// `rule`'s destination when given.
async fn walk(
    store: &dyn LinkStore,
    public_origin: &str,
    key: &LinkKey,
    rule: Option<(usize, String)>,
) -> Result<Option<BrokenChain>, StoreError> {
    let path = format!("/{key}");
    let now = Utc::now();
    // What each key the resolver asked for holds: `None` for no live link.
    let mut known: HashMap<String, Option<String>> = HashMap::new();
    let mut order: Vec<String> = Vec::new();
    let index = rule.as_ref().map(|(i, _)| *i);
    if let Some((_, url)) = rule {
        known.insert(key.to_string(), Some(url));
        order.push(key.to_string());
    }
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
                    rule: index,
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
            crate::links::create(
                &store,
                &crate::link::Author::cli(crate::link::Via::Cli, "test", "host"),
                &url,
                Some(&key),
                false,
            )
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

    /// Issue 34: a rule whose destination starts a loop is reported, naming
    /// the rule; the url's own chain is checked first.
    #[tokio::test]
    async fn a_rule_destination_that_loops_is_reported_naming_the_rule() {
        let (_dir, store) = store_with(&[
            ("a", "https://example.com/"),
            ("b", "https://0x1f.ie/c"),
            ("c", "https://0x1f.ie/b"),
        ])
        .await;
        let key = LinkKey::parse("a").expect("key");
        let rules = crate::link::rules::Rules::from_json(
            &serde_json::json!([
                {"url": "https://example.com/ios", "os": ["ios"]},
                {"url": "https://0x1f.ie/b", "lang": ["en"]}
            ]),
            &Default::default(),
        )
        .expect("rules");
        crate::links::update(
            &store,
            &crate::link::Author::cli(crate::link::Via::Cli, "test", "host"),
            &key,
            |d| rules.write_to(d),
        )
        .await
        .expect("saved");
        let broken = check_key(&store, "a")
            .await
            .expect("the rule's chain loops");
        assert_eq!(broken.rule, Some(1));
        assert_eq!(
            broken.links[..3],
            [
                ("a".to_owned(), "https://0x1f.ie/b".to_owned()),
                ("b".to_owned(), "https://0x1f.ie/c".to_owned()),
                ("c".to_owned(), "https://0x1f.ie/b".to_owned()),
            ]
        );
        let said = broken.warning(&key);
        assert!(
            said.starts_with("scans of a that rules[1] answers will answer 404: "),
            "{said}"
        );
        // Rules that go nowhere inside the service are no chain.
        let fine = crate::link::rules::Rules::from_json(
            &serde_json::json!([{"url": "https://0x1f.ie/nowhere", "os": ["ios"]}]),
            &Default::default(),
        )
        .expect("rules");
        crate::links::update(
            &store,
            &crate::link::Author::cli(crate::link::Via::Cli, "test", "host"),
            &key,
            |d| fine.write_to(d),
        )
        .await
        .expect("saved");
        assert_eq!(check_key(&store, "a").await, None);
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
