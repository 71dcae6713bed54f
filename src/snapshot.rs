//! The in-memory copy of every link that the redirect path reads.
//!
//! Requests never wait on a store: they read an immutable [`LinkTable`] through
//! an `ArcSwap` (a pointer load, no lock), and the store's follower publishes a
//! new table after each batch of changes. Copy-on-write is fine here because
//! edits are rare next to scans.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use arc_swap::ArcSwap;

use crate::link::{Document, Link};
use crate::link_key::LinkKey;
use crate::redirect_policy;

/// What the redirect path needs of a link, precomputed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveLink {
    pub url: Box<str>,
    pub inactive: bool,
    /// Expiry in milliseconds since the epoch, compared against the request time.
    pub expires_ms: Option<i64>,
    /// The `Location` for a request of exactly `/KEY` with no query, worked
    /// out once here instead of on every scan (see
    /// [`redirect_policy::direct_location`]); `None` for internal redirects,
    /// whose result depends on other links.
    pub direct: Option<Box<str>>,
}

impl LiveLink {
    fn from_link(key: &str, link: &Link) -> Self {
        let direct = (!link.url.is_internal())
            .then(|| redirect_policy::direct_location(key, link.url.as_str()))
            .flatten()
            .map(String::into_boxed_str);
        Self {
            url: link.url.as_str().into(),
            inactive: link.inactive,
            expires_ms: link.expires.map(|t| t.timestamp_millis()),
            direct,
        }
    }

    pub fn is_live_at(&self, now_ms: i64) -> bool {
        !self.inactive && self.expires_ms.is_none_or(|e| now_ms < e)
    }
}

/// One change read from a store.
#[derive(Debug, Clone)]
pub enum Change {
    Upsert { key: String, doc: Document },
    Delete { key: String },
}

/// An immutable set of links, keyed by the exact key string.
#[derive(Debug, Default, Clone)]
pub struct LinkTable {
    links: HashMap<Box<str>, LiveLink>,
    /// Documents that are not valid links, with the reason; kept so that a fix
    /// brings them back and so that operators can see them counted.
    invalid: HashMap<Box<str>, String>,
}

impl LinkTable {
    /// The destination of a link that redirects at `now_ms`. Inactive, expired
    /// and unknown keys all answer `None`, so callers cannot tell them apart.
    #[inline]
    pub fn live_url(&self, key: &str, now_ms: i64) -> Option<&str> {
        self.links
            .get(key)
            .filter(|l| l.is_live_at(now_ms))
            .map(|l| &*l.url)
    }

    /// The precomputed `Location` for a request of exactly `/KEY` and no
    /// query, if the link is live and absolute: the common scan, answered
    /// without running the resolver.
    #[inline]
    pub fn direct_location(&self, key: &str, now_ms: i64) -> Option<&str> {
        self.links
            .get(key)
            .filter(|l| l.is_live_at(now_ms))
            .and_then(|l| l.direct.as_deref())
    }

    /// Any known link, live or not (QR codes are printed before tags go live).
    pub fn get(&self, key: &str) -> Option<&LiveLink> {
        self.links.get(key)
    }

    pub fn len(&self) -> usize {
        self.links.len()
    }

    pub fn is_empty(&self) -> bool {
        self.links.is_empty()
    }

    pub fn invalid_count(&self) -> usize {
        self.invalid.len()
    }

    /// Applies changes in order; returns the keys whose documents were
    /// found invalid in this batch, with the reason, for the caller to warn.
    pub fn apply(&mut self, changes: impl IntoIterator<Item = Change>) -> Vec<(String, String)> {
        let mut rejected = Vec::new();
        for change in changes {
            match change {
                Change::Delete { key } => {
                    self.links.remove(key.as_str());
                    self.invalid.remove(key.as_str());
                }
                Change::Upsert { key, doc } => {
                    let parsed = LinkKey::parse(&key)
                        .map_err(|e| e.to_string())
                        .and_then(|_| Link::from_document(&doc).map_err(|e| e.to_string()));
                    match parsed {
                        Ok(link) => {
                            self.invalid.remove(key.as_str());
                            let live = LiveLink::from_link(&key, &link);
                            self.links.insert(key.into_boxed_str(), live);
                        }
                        Err(reason) => {
                            self.links.remove(key.as_str());
                            rejected.push((key.clone(), reason.clone()));
                            self.invalid.insert(key.into_boxed_str(), reason);
                        }
                    }
                }
            }
        }
        rejected
    }
}

/// The shared snapshot plus the readiness the admin listener reports.
#[derive(Debug)]
pub struct Snapshot {
    table: ArcSwap<LinkTable>,
    loaded: AtomicBool,
    problem: Mutex<Option<String>>,
    generation: AtomicU64,
}

impl Default for Snapshot {
    fn default() -> Self {
        Self {
            table: ArcSwap::from_pointee(LinkTable::default()),
            loaded: AtomicBool::new(false),
            problem: Mutex::new(Some("links not loaded yet".into())),
            generation: AtomicU64::new(0),
        }
    }
}

impl Snapshot {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// The current table; cheap enough to call on every request.
    #[inline]
    pub fn load(&self) -> arc_swap::Guard<Arc<LinkTable>> {
        self.table.load()
    }

    /// Publishes a new table (after the first full load, or a batch of changes).
    pub fn publish(&self, table: LinkTable) {
        self.table.store(Arc::new(table));
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// Applies a batch of changes to a copy of the current table and publishes
    /// it, warning once per invalid document.
    pub fn apply(&self, changes: Vec<Change>) {
        if changes.is_empty() {
            return;
        }
        let mut table = LinkTable::clone(&self.load());
        for (key, reason) in table.apply(changes) {
            tracing::warn!(id = %key, %reason, "skipping document that is not a valid link");
        }
        self.publish(table);
    }

    /// Counts publications; tests and metrics use it to see progress.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    pub fn mark_loaded(&self) {
        self.loaded.store(true, Ordering::Release);
        self.set_problem(None);
    }

    pub fn is_loaded(&self) -> bool {
        self.loaded.load(Ordering::Acquire)
    }

    /// Records (or clears) why the link source is unhealthy, for `/readyz`.
    pub fn set_problem(&self, problem: Option<String>) {
        if let Ok(mut p) = self.problem.lock() {
            *p = problem;
        }
    }

    pub fn problem(&self) -> Option<String> {
        self.problem.lock().ok().and_then(|p| p.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn upsert(key: &str, v: serde_json::Value) -> Change {
        let doc = match v {
            serde_json::Value::Object(m) => m,
            _ => Document::new(),
        };
        Change::Upsert {
            key: key.into(),
            doc,
        }
    }

    #[test]
    fn inactive_expired_and_unknown_look_alike() {
        let mut t = LinkTable::default();
        let rejected = t.apply([
            upsert("live1", json!({"url": "https://a.example/"})),
            upsert(
                "dead1",
                json!({"url": "https://a.example/", "inactive": true}),
            ),
            upsert(
                "old01",
                json!({"url": "https://a.example/", "expires": "2020-01-01T00:00:00Z"}),
            ),
        ]);
        assert!(rejected.is_empty());
        let now = 1_800_000_000_000;
        assert_eq!(t.live_url("live1", now), Some("https://a.example/"));
        assert_eq!(t.live_url("dead1", now), None);
        assert_eq!(t.live_url("old01", now), None);
        assert_eq!(t.live_url("nope1", now), None);
        assert!(t.get("dead1").is_some(), "inactive links stay known");
    }

    #[test]
    fn invalid_documents_are_skipped_and_come_back_when_fixed() {
        let mut t = LinkTable::default();
        t.apply([upsert("good1", json!({"url": "https://a.example/"}))]);
        let rejected = t.apply([
            upsert("bad01", json!({"url": "javascript:alert(1)"})),
            upsert("bad 2", json!({"url": "https://a.example/"})),
            upsert("good1", json!({"inactive": "yes"})),
        ]);
        assert_eq!(rejected.len(), 3);
        assert_eq!(t.invalid_count(), 3);
        assert_eq!(t.len(), 0, "a broken edit takes the link out");
        t.apply([upsert("good1", json!({"url": "https://b.example/"}))]);
        assert_eq!(t.live_url("good1", 0), Some("https://b.example/"));
        assert_eq!(t.invalid_count(), 2);
        t.apply([
            Change::Delete {
                key: "bad01".into(),
            },
            Change::Delete {
                key: "good1".into(),
            },
        ]);
        assert_eq!((t.len(), t.invalid_count()), (0, 1));
    }

    proptest::proptest! {
        /// The precomputed answer for `/KEY` is exactly what the policy
        /// would have answered, whatever else the table holds.
        #[test]
        fn direct_location_agrees_with_the_policy(
            key in "[A-Za-z0-9_-]{1,8}(/[A-Za-z0-9]{1,3})?",
            path in "(/[a-z0-9%~.-]{0,5}){0,3}",
            // '?' and '#' inside the query and fragment, as in issue #8.
            query in proptest::option::of("[a-z0-9=&~%+;?-]{0,10}"),
            fragment in proptest::option::of("[a-z?#]{0,4}"),
            others in proptest::collection::vec(("[a-z]{1,3}", "/[a-z/]{0,6}"), 0..4),
        ) {
            let mut url = format!("https://a.example{path}");
            if let Some(q) = query { url.push('?'); url.push_str(&q); }
            if let Some(f) = fragment { url.push('#'); url.push_str(&f); }
            proptest::prop_assume!(crate::destination::Destination::parse(&url).is_ok());
            let mut t = LinkTable::default();
            let mut changes: Vec<Change> = others
                .into_iter()
                .map(|(k, v)| upsert(&k, json!({"url": v})))
                .collect();
            changes.push(upsert(&key, json!({"url": url})));
            t.apply(changes);
            let request = format!("/{key}");
            let policy = match redirect_policy::decide("https://0x1f.ie", &request, None, |k| t.live_url(k, 0)) {
                redirect_policy::Decision::Redirect { location, .. } => Some(location),
                _ => None,
            };
            proptest::prop_assert_eq!(t.direct_location(&key, 0).map(str::to_owned), policy);
        }
    }

    #[test]
    fn publishing_bumps_the_generation() {
        let s = Snapshot::new();
        assert!(!s.is_loaded());
        assert!(s.problem().is_some());
        s.apply(vec![upsert("abcde", json!({"url": "/x"}))]);
        s.mark_loaded();
        assert_eq!(s.generation(), 1);
        assert!(s.is_loaded() && s.problem().is_none());
        assert_eq!(s.load().live_url("abcde", 0), Some("/x"));
    }
}
