//! The link table the redirect path reads: immutable, and cheap to change.
//!
//! A table is a list of shared [`Shard`]s, each holding a few hundred links. A
//! batch of changes copies the list of shard pointers and rebuilds only the
//! shards it touches, so an edit costs O(shards + links per shard), about a
//! millisecond at a million links, and the new table shares every untouched
//! shard with the old one: memory grows by the changed shards only, and the
//! old ones are freed when the last request reading them finishes.
//!
//! The shard count follows the table's size (about [`TARGET_PER_SHARD`] links
//! each): when edits grow or shrink the table past a factor of two of that,
//! the next batch rebuilds it whole, which amortises to O(1) per edit.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::Arc;

use serde_json::Value;

use super::Change;
use super::shard::{Hashed, LinkView, MAX_KEY_LEN, Shard, Texts};
use crate::link::rules::Rules;
use crate::link::{self, Document, Link, StoredFields};
use crate::redirect::policy;
use crate::values::destination::Destination;
use crate::values::link_key::LinkKey;

/// Links per shard aimed at: about three quarters of the 512 slots the
/// index then has (its load factor tops out at 7/8), and an edit rebuilds
/// about 25 KB.
const TARGET_PER_SHARD: usize = 384;

/// A link as parsed from a document, before it is packed into a shard.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveLink {
    pub url: String,
    pub inactive: bool,
    pub expires_ms: Option<i64>,
    pub direct: Option<String>,
    pub created: Option<u32>,
    pub changed: Option<u32>,
    /// Where scans go while the link is not live (issue 33).
    pub fallback: Option<String>,
    /// Issue 33: the title and the notes, for the console's list.
    pub title: Option<String>,
    pub notes: Option<String>,
    /// Issue 34: the link's rules, compiled; `None` for none. A link with
    /// rules has no `direct` location.
    pub rules: Option<Arc<Rules>>,
    /// Issue 34: why the document's `rules` did not parse (`rules[2].hours:
    /// ...`): the link is served with its `url` alone and counted among the
    /// invalid documents with this reason.
    pub rules_error: Option<String>,
}

/// A time as the shard keeps it: whole seconds since the epoch in a `u32`
/// (1970 to 2106), `None` outside that range or at 0, which means "none".
fn stamp(t: Option<chrono::DateTime<chrono::Utc>>) -> Option<u32> {
    t.and_then(|t| u32::try_from(t.timestamp()).ok())
        .filter(|&s| s != 0)
}

impl LiveLink {
    /// The link as the redirect path needs it; the times are the
    /// document's, added by [`LiveLink::parse`].
    pub fn from_link(key: &str, link: Link) -> Self {
        let direct = if link.url.is_internal() {
            None
        } else {
            policy::direct_location(key, link.url.as_str())
        };
        Self {
            url: link.url.into_string(),
            inactive: link.inactive,
            expires_ms: link.expires.map(|t| t.timestamp_millis()),
            direct,
            created: None,
            changed: None,
            fallback: link.fallback.map(Destination::into_string),
            title: None,
            notes: None,
            rules: None,
            rules_error: None,
        }
    }

    /// Issue 34: the link with `rules` as read ([`Rules::from_stored`] or
    /// the snapshot file's recheck): compiled rules take the direct
    /// location away; rules that did not parse leave the link as it was,
    /// with the reason.
    fn with_rules(mut self, rules: Result<Rules, String>) -> Self {
        match rules {
            Ok(r) if r.is_empty() => {}
            Ok(r) => {
                // The direct location goes, but whether `url` was it is
                // kept with the rules, for a scan that no rule holds for.
                let url_direct = self.direct.as_deref() == Some(self.url.as_str());
                self.direct = None;
                self.rules = Some(Arc::new(r.with_url_direct(url_direct)));
            }
            Err(reason) => self.rules_error = Some(reason),
        }
        self
    }

    /// Parses a stored document under `key`: the one place a change becomes
    /// a link or a reason why not.
    pub fn parse(key: &str, doc: &Document) -> Result<Self, String> {
        check_key(key)?;
        let link = Link::from_document(doc).map_err(|e| e.to_string())?;
        let notes = link::notes(doc);
        let texts = Texts::new(link::title(doc), notes.as_deref());
        Ok(Self {
            created: stamp(link::created_at(doc)),
            changed: stamp(link::changed_at(doc)),
            title: texts.title.map(str::to_owned),
            notes: texts.notes.map(str::to_owned),
            ..Self::from_link(key, link)
        }
        .with_rules(Rules::from_stored(doc).map_err(|e| e.to_string())))
    }

    /// [`LiveLink::parse`] for the document whose fields are `fields`.
    fn from_fields(key: &str, fields: &StoredFields<'_>) -> Result<Self, String> {
        check_key(key)?;
        let link = fields.link().map_err(|e| e.to_string())?;
        let (title, notes) = fields.texts();
        let texts = Texts::new(title, notes);
        Ok(Self {
            created: stamp(fields.created_at()),
            changed: stamp(fields.changed_at()),
            title: texts.title.map(str::to_owned),
            notes: texts.notes.map(str::to_owned),
            ..Self::from_link(key, link)
        })
    }

    /// A link read back from a snapshot file, judged again by the rules a
    /// store write passes (its key, its destination) and its direct
    /// location worked out again: a checksum says only that the file is
    /// whole, not who wrote it, so a rewritten file cannot serve
    /// `//evil.example` or `javascript:`.
    pub fn recheck(
        link: &LinkView<'_>,
        texts: Texts<'_>,
        rules: Option<Result<Rules, String>>,
    ) -> Result<Self, String> {
        check_key(link.key)?;
        let url = Destination::parse(link.url).map_err(|e| e.to_string())?;
        let fallback = link
            .fallback
            .map(Destination::parse_absolute)
            .transpose()
            .map_err(|e| crate::link::InvalidLink::BadFallback(e).to_string())?;
        let direct = if url.is_internal() {
            None
        } else {
            policy::direct_location(link.key, url.as_str())
        };
        Ok(Self {
            url: url.into_string(),
            inactive: link.inactive,
            expires_ms: link.expires_ms,
            direct,
            created: link.created,
            changed: link.changed,
            fallback: fallback.map(Destination::into_string),
            title: texts.title.map(str::to_owned),
            notes: texts.notes.map(str::to_owned),
            rules: None,
            rules_error: None,
        }
        .with_rules(rules.unwrap_or(Ok(Rules::default()))))
    }

    /// The texts, borrowed.
    pub(crate) fn texts(&self) -> Texts<'_> {
        Texts::new(self.title.as_deref(), self.notes.as_deref())
    }

    pub(crate) fn view<'a>(&'a self, key: &'a str) -> LinkView<'a> {
        LinkView {
            key,
            url: &self.url,
            inactive: self.inactive,
            expires_ms: self.expires_ms,
            direct: self.direct.as_deref(),
            created: self.created,
            changed: self.changed,
            fallback: self.fallback.as_deref(),
            rules: self.rules.as_ref(),
        }
    }
}

/// A key as a store write takes it; allocates only to say why not.
fn check_key(key: &str) -> Result<(), String> {
    if !LinkKey::is_valid(key) {
        return Err(LinkKey::parse(key)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default());
    }
    if key.len() > MAX_KEY_LEN {
        return Err(format!("a key is at most {MAX_KEY_LEN} bytes"));
    }
    Ok(())
}

/// Whether `key` passes [`check_key`] and a link under it with a plain
/// destination ([`crate::values::destination::is_plain_absolute`]) redirects a
/// `/KEY` scan to the destination itself: what lets a load judge the
/// common link once, borrowing its text (issue 24).
fn is_plain_key(key: &str) -> bool {
    LinkKey::is_valid(key) && key.len() <= MAX_KEY_LEN && policy::direct_is_value(key)
}

/// [`LiveLink::recheck`]'s verdict on `link` when its key and destination
/// are plain, borrowing `link`'s text: the link as read with its direct
/// location worked out again (the URL itself). `None` for any other
/// shape, which the full path judges. A property test holds it to
/// [`LiveLink::recheck`].
fn recheck_plain<'a>(link: &LinkView<'a>) -> Option<LinkView<'a>> {
    (is_plain_key(link.key)
        && crate::values::destination::is_plain_absolute(link.url)
        && link.fallback.is_none()
        && link.rules.is_none())
    .then_some(LinkView {
        direct: Some(link.url),
        ..*link
    })
}

/// The hash every shard of a table (and of the tables derived from it) uses.
/// Seeded at random per process, so nobody can aim keys at one slot.
#[derive(Clone)]
struct KeyHasher(foldhash::fast::FixedState);

impl KeyHasher {
    fn new() -> Self {
        Self(foldhash::fast::FixedState::with_seed(rand::random()))
    }

    #[inline]
    fn hash(&self, key: &str) -> u64 {
        self.0.hash_one(key)
    }
}

/// Which of `count` shards a key lives in: a multiply-shift over bits 25..57
/// of the hash, which the shard's own index (low bits for the slot, top seven
/// for its tag) does not use, so no shard sees clustered hashes.
#[inline]
fn shard_of(hash: u64, count: usize) -> usize {
    ((shard_bits(hash) as u64 * count as u64) >> 32) as usize
}

/// The bits of a hash [`shard_of`] reads; it is monotone in them, which
/// [`TableBuilder::build`] relies on.
#[inline]
fn shard_bits(hash: u64) -> u32 {
    (hash >> 25) as u32
}

fn shard_count_for(links: usize) -> usize {
    links.div_ceil(TARGET_PER_SHARD).max(1)
}

/// An immutable set of links, keyed by the exact key string, with the store
/// position it reflects.
#[derive(Clone)]
pub struct LinkTable {
    hasher: KeyHasher,
    shards: Arc<Vec<Arc<Shard>>>,
    len: usize,
    /// Documents that are not valid links, with the reason; kept so that a fix
    /// brings them back and so that operators can see them counted.
    invalid: Arc<HashMap<Box<str>, String>>,
    /// The store's sequence this table reflects (opaque: CouchDB's are
    /// strings, SQLite's and PouchDB's numbers); `None` before any load.
    seq: Option<Value>,
    /// At least the length of the longest key (edits only raise it): a
    /// longer candidate is answered without hashing it, so the resolver's
    /// longest-prefix match costs O(path) however long the path a client
    /// sends (issue 19, item 3).
    longest_key: usize,
}

impl std::fmt::Debug for LinkTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinkTable")
            .field("links", &self.len)
            .field("shards", &self.shards.len())
            .field("invalid", &self.invalid.len())
            .field("seq", &self.seq)
            .finish()
    }
}

impl Default for LinkTable {
    fn default() -> Self {
        Self {
            hasher: KeyHasher::new(),
            shards: Arc::new(vec![Arc::new(Shard::default())]),
            len: 0,
            invalid: Arc::default(),
            seq: None,
            longest_key: 0,
        }
    }
}

impl LinkTable {
    #[inline]
    pub fn get(&self, key: &str) -> Option<LinkView<'_>> {
        if key.len() > self.longest_key {
            return None;
        }
        let h = self.hasher.hash(key);
        self.shards[shard_of(h, self.shards.len())].get(h, key)
    }

    /// The destination of a link that redirects at `now_ms`. Inactive, expired
    /// and unknown keys all answer `None`, so callers cannot tell them apart.
    #[inline]
    pub fn live_url(&self, key: &str, now_ms: i64) -> Option<&str> {
        self.get(key)
            .filter(|l| l.is_live_at(now_ms))
            .map(|l| l.url)
    }

    /// The precomputed `Location` for a request of exactly `/KEY` and no
    /// query, if the link is live and absolute: the common scan, answered
    /// without running the resolver. `None` for a destination on
    /// `public_origin`, which the policy follows as an internal redirect.
    #[inline]
    pub fn direct_location(&self, key: &str, now_ms: i64, public_origin: &str) -> Option<&str> {
        self.get(key)
            .filter(|l| l.is_live_at(now_ms))
            .and_then(|l| l.direct)
            .filter(|location| !policy::is_on_public_origin(location, public_origin))
    }

    /// Where a scan of exactly `key` goes when the link is not live at
    /// `now_ms` and has a fallback (issue 33); `None` for a live link, an
    /// unknown key or a dead link without one. Asked only once the scan
    /// was going to be a 404, so the live path does no more work.
    pub fn fallback_at(&self, key: &str, now_ms: i64) -> Option<&str> {
        self.get(key)
            .filter(|l| !l.is_live_at(now_ms))
            .and_then(|l| l.fallback)
    }

    /// Whether the table is what a change writing `doc` under `key` leaves:
    /// that link as parsed (destination, state, expiry and its times, so a
    /// rewrite with the same destination is told from the old one by its
    /// `changed_at`), no link for a tombstone, an invalid entry for a
    /// document that is no link. One lookup: what a writer waits on to
    /// answer only once this server serves its write.
    pub fn holds(&self, key: &str, doc: &Document) -> bool {
        if link::is_tombstone(doc) {
            return self.get(key).is_none();
        }
        match LiveLink::parse(key, doc) {
            Ok(live) => {
                self.get(key) == Some(live.view(key)) && self.texts(key) == Some(live.texts())
            }
            Err(_) => self.invalid.contains_key(key),
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn invalid_count(&self) -> usize {
        self.invalid.len()
    }

    /// Every link, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = LinkView<'_>> + '_ {
        self.shards.iter().flat_map(|s| s.iter())
    }

    /// Issue 33: the title and notes of `key`'s link, for the console's
    /// list (a second lookup, which the redirect path never makes).
    pub fn texts(&self, key: &str) -> Option<Texts<'_>> {
        if key.len() > self.longest_key {
            return None;
        }
        let h = self.hasher.hash(key);
        self.shards[shard_of(h, self.shards.len())].texts(h, key)
    }

    /// Every link with its title and notes, in no particular order.
    pub fn iter_with_texts(&self) -> impl Iterator<Item = (LinkView<'_>, Texts<'_>)> + '_ {
        self.shards.iter().flat_map(|s| s.iter_with_texts())
    }

    /// Every invalid document's key and reason, in no particular order.
    pub fn invalid(&self) -> impl Iterator<Item = (&str, &str)> + '_ {
        self.invalid.iter().map(|(k, r)| (&**k, r.as_str()))
    }

    pub fn seq(&self) -> Option<&Value> {
        self.seq.as_ref()
    }

    pub fn set_seq(&mut self, seq: Value) {
        self.seq = Some(seq);
    }

    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }

    /// The keys of the shards this table does not share with `older` (the
    /// table it was derived from): those shards' keys in `older`, then in
    /// `self`. An edit replaces one shard, so whoever keeps something per
    /// key (the console's ordered index) updates it from a few hundred keys
    /// instead of a million. `None` when fewer than half the shards are
    /// shared (a resize or full reload): read every key again then.
    pub fn changed_keys<'a>(
        &'a self,
        older: &'a LinkTable,
    ) -> Option<(Vec<&'a str>, Vec<&'a str>)> {
        if self.shards.len() != older.shards.len() {
            return None;
        }
        let changed: Vec<usize> = (0..self.shards.len())
            .filter(|&i| !Arc::ptr_eq(&self.shards[i], &older.shards[i]))
            .collect();
        if changed.len() * 2 > self.shards.len() && self.shards.len() > 1 {
            return None;
        }
        let keys = |t: &'a LinkTable| -> Vec<&'a str> {
            changed
                .iter()
                .flat_map(|&i| t.shards[i].iter().map(|l| l.key))
                .collect()
        };
        Some((keys(older), keys(self)))
    }

    /// Heap bytes of the links (shards and their pointers), for the memory
    /// figures in ARCHITECTURE.md and the scale benchmark.
    pub fn heap_bytes(&self) -> usize {
        self.shards.iter().map(|s| s.heap_bytes()).sum::<usize>()
            + self.shards.len() * (size_of::<Arc<Shard>>() + size_of::<Shard>() + 16)
    }

    /// Applies changes in order, rebuilding only the shards they touch;
    /// returns the keys whose documents were found invalid in this batch, with
    /// the reason, for the caller to warn.
    pub fn apply(&mut self, changes: impl IntoIterator<Item = Change>) -> Vec<(String, String)> {
        // The last change to a key decides; earlier ones are only reported.
        let mut last: HashMap<String, Outcome> = HashMap::new();
        let mut rejected = Vec::new();
        for change in changes {
            let (key, outcome) = Outcome::of(change);
            if let Outcome::Invalid(reason) = &outcome {
                rejected.push((key.clone(), reason.clone()));
            }
            // Issue 34: served with its url, warned about as invalid.
            if let Outcome::Live(LiveLink {
                rules_error: Some(reason),
                ..
            }) = &outcome
            {
                rejected.push((key.clone(), reason.clone()));
            }
            last.insert(key, outcome);
        }
        if last.is_empty() {
            return rejected;
        }

        let mut by_shard: HashMap<usize, Vec<(u64, &str, &Outcome)>> = HashMap::new();
        let count = self.shards.len();
        for (key, outcome) in &last {
            let h = self.hasher.hash(key);
            by_shard
                .entry(shard_of(h, count))
                .or_default()
                .push((h, key, outcome));
        }
        let hasher = self.hasher.clone();
        let shards = Arc::make_mut(&mut self.shards);
        for (index, edits) in by_shard {
            let old = Arc::clone(&shards[index]);
            let mut links: Vec<Hashed<'_>> = old
                .iter_with_texts()
                .filter(|(l, _)| !last.contains_key(l.key))
                .map(|(l, t)| (hasher.hash(l.key), l, t))
                .collect();
            links.extend(edits.iter().filter_map(|(h, key, outcome)| match outcome {
                Outcome::Live(link) => Some((*h, link.view(key), link.texts())),
                _ => None,
            }));
            self.longest_key = links
                .iter()
                .map(|(_, l, _)| l.key.len())
                .fold(self.longest_key, usize::max);
            let new_len = links.len();
            let old_len = old.len();
            // A shard over 4 GiB of URLs cannot be built; keep the old one
            // rather than lose every link in it.
            match Shard::build(&links, |k| hasher.hash(k)) {
                Ok(shard) => {
                    self.len = self.len + new_len - old_len;
                    shards[index] = Arc::new(shard);
                }
                Err(e) => tracing::error!(error = %e, "a change could not be applied"),
            }
        }

        let invalid = Arc::make_mut(&mut self.invalid);
        for (key, outcome) in last {
            match outcome {
                Outcome::Invalid(reason)
                | Outcome::Live(LiveLink {
                    rules_error: Some(reason),
                    ..
                }) => {
                    invalid.insert(key.into_boxed_str(), reason);
                }
                Outcome::Live(_) | Outcome::Gone => {
                    invalid.remove(key.as_str());
                }
            }
        }

        let wanted = shard_count_for(self.len);
        if wanted > 2 * self.shards.len() || 2 * wanted < self.shards.len() {
            self.reshard(wanted);
        }
        rejected
    }

    /// Rebuilds the table with `count` shards; O(links), run only when the
    /// size has moved by a factor of two since the last build.
    fn reshard(&mut self, count: usize) {
        let hasher = self.hasher.clone();
        let mut groups: Vec<Vec<Hashed<'_>>> = vec![Vec::new(); count];
        for (link, texts) in self.shards.iter().flat_map(|s| s.iter_with_texts()) {
            let h = hasher.hash(link.key);
            groups[shard_of(h, count)].push((h, link, texts));
        }
        let built: Result<Vec<_>, _> = groups
            .iter()
            .map(|g| Shard::build(g, |k| hasher.hash(k)).map(Arc::new))
            .collect();
        match built {
            Ok(shards) => self.shards = Arc::new(shards),
            Err(e) => tracing::error!(error = %e, "resharding failed; keeping the old layout"),
        }
    }
}

/// What a change leaves behind for its key.
enum Outcome {
    Live(LiveLink),
    Invalid(String),
    Gone,
}

impl Outcome {
    fn of(change: Change) -> (String, Self) {
        match change {
            Change::Delete { key } => (key, Outcome::Gone),
            Change::Invalid { key, reason } => (key, Outcome::Invalid(reason)),
            // A tombstone is a deleted link: gone from the table, so it
            // answers (and its tag renders) as an unknown key does.
            Change::Upsert { key, doc } if crate::link::is_tombstone(&doc) => (key, Outcome::Gone),
            Change::Upsert { key, doc } => {
                let outcome = match LiveLink::parse(&key, &doc) {
                    Ok(link) => Outcome::Live(link),
                    Err(reason) => Outcome::Invalid(reason),
                };
                (key, outcome)
            }
        }
    }

    /// What the document stored under `key` as the JSON text `json` leaves,
    /// given `fields`, what [`StoredFields::read`] read from it: the verdict
    /// [`Outcome::of`] gives the parsed document, read from the text's link
    /// fields when they have their types (always, for what qrtag writes),
    /// and from the parsed document otherwise.
    fn of_read(key: &str, json: &str, fields: Option<StoredFields<'_>>) -> Self {
        match fields {
            Some(fields) if fields.is_tombstone() => Outcome::Gone,
            // Issue 34: rules are read from the parsed document.
            Some(fields) if !fields.has_rules() => match LiveLink::from_fields(key, &fields) {
                Ok(link) => Outcome::Live(link),
                Err(reason) => Outcome::Invalid(reason),
            },
            // A row that is not a JSON object is judged as an empty
            // document: invalid.
            _ => {
                let doc = serde_json::from_str(json).unwrap_or_default();
                Self::of(Change::Upsert {
                    key: key.to_owned(),
                    doc,
                })
                .1
            }
        }
    }
}

/// Builds a whole table from a full load (a store scan or the snapshot
/// file) without the per-batch copying of [`LinkTable::apply`]: links are
/// packed into one growing arena as they come and sorted into shards once at
/// the end. The arena and item list are large allocations, returned to the
/// system when the build is done, so a load leaves no heap behind.
pub struct TableBuilder {
    hasher: KeyHasher,
    arena: String,
    items: Vec<Item>,
    reasons: Vec<String>,
    rejected: usize,
    /// Issue 34: the compiled rules of the items in state
    /// [`ItemState::LiveRules`].
    rules: Vec<Arc<Rules>>,
    /// Issue 34: reasons for keys read from a snapshot file's invalid
    /// documents ([`TableBuilder::push_note`]), which may be links served
    /// with their `url` (rules that did not parse): counted, not unserved.
    notes: HashMap<Box<str>, String>,
}

/// One link (or verdict on a key) in the builder's arena.
struct Item {
    hash: u64,
    off: usize,
    key_len: usize,
    url_len: usize,
    /// `None`: no direct location; `Some(None)`: the URL; `Some(Some(n))`: `n`
    /// bytes after the URL.
    direct: Option<Option<usize>>,
    /// Issue 33: the title's and the notes' bytes after the fallback.
    texts: (u32, u32),
    inactive: bool,
    expires_ms: Option<i64>,
    created: Option<u32>,
    changed: Option<u32>,
    /// The fallback's length, stored after the direct location, 0 for none
    /// (a fallback is never empty): a `u32` in the padding beside the
    /// flags, so a load of links without one holds no more (issue 33).
    fallback_len: u32,
    state: ItemState,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ItemState {
    Live,
    /// Issue 34: live, with the rules at this index of the builder's
    /// `rules`.
    LiveRules(usize),
    /// Issue 34: live, served with its `url` alone, its rules refused for
    /// the reason at this index into `reasons`.
    LiveNoted(usize),
    /// Index into `reasons`.
    Invalid(usize),
    Deleted,
}

impl ItemState {
    fn is_live(self) -> bool {
        matches!(
            self,
            ItemState::Live | ItemState::LiveRules(_) | ItemState::LiveNoted(_)
        )
    }
}

impl Default for TableBuilder {
    fn default() -> Self {
        Self {
            hasher: KeyHasher::new(),
            arena: String::new(),
            items: Vec::new(),
            reasons: Vec::new(),
            rejected: 0,
            rules: Vec::new(),
            notes: HashMap::new(),
        }
    }
}

impl TableBuilder {
    /// Adds changes in order (a later change to a key replaces an earlier
    /// one); returns the invalid documents among them, with the reason.
    pub fn apply(&mut self, changes: impl IntoIterator<Item = Change>) -> Vec<(String, String)> {
        let mut rejected = Vec::new();
        for change in changes {
            match Outcome::of(change) {
                (key, Outcome::Live(link)) => {
                    if let Some(reason) = &link.rules_error {
                        rejected.push((key.clone(), reason.clone()));
                    }
                    self.push_link(&key, link)
                }
                (key, Outcome::Invalid(reason)) => {
                    rejected.push((key.clone(), reason.clone()));
                    self.push_invalid(&key, reason);
                }
                (key, Outcome::Gone) => self.push_state(&key, ItemState::Deleted),
            }
        }
        self.rejected += rejected.len();
        rejected
    }

    /// Adds the document stored under `key` as the JSON text `json` (a full
    /// load of the embedded store), judged as [`apply`](Self::apply) judges
    /// it parsed but without building it; the reason when it is invalid.
    pub fn push_json(&mut self, key: &str, json: &str) -> Option<String> {
        let fields = StoredFields::read(json);
        // The common row: a plain key and destination, judged once each and
        // copied once, into the arena (issue 24); the same verdict as below.
        if let Some(fields) = &fields
            && !fields.is_tombstone()
            && is_plain_key(key)
            && let Some(Ok(link)) = fields.plain_link()
        {
            self.push_live_with(
                key,
                &LinkView {
                    key,
                    url: link.url,
                    inactive: link.inactive,
                    expires_ms: link.expires.map(|t| t.timestamp_millis()),
                    direct: Some(link.url),
                    created: stamp(fields.created_at()),
                    changed: stamp(fields.changed_at()),
                    fallback: None,
                    rules: None,
                },
                {
                    let (title, notes) = fields.texts();
                    Texts::new(title, notes)
                },
            );
            return None;
        }
        match Outcome::of_read(key, json, fields) {
            Outcome::Live(link) => {
                let noted = link.rules_error.clone();
                if noted.is_some() {
                    self.rejected += 1;
                }
                self.push_link(key, link);
                noted
            }
            Outcome::Invalid(reason) => {
                self.rejected += 1;
                self.push_invalid(key, reason.clone());
                Some(reason)
            }
            Outcome::Gone => {
                self.push_deleted(key);
                None
            }
        }
    }

    /// Adds the removal of `key` (a deleted row).
    pub fn push_deleted(&mut self, key: &str) {
        self.push_state(key, ItemState::Deleted);
    }

    /// Adds a link read back from a snapshot file as [`LiveLink::recheck`]
    /// judges it: as a link, or as an invalid document with the reason.
    /// The common link is judged once and copied once, into the arena.
    /// Issue 34: `rules` is what the file held for the link (`None` for
    /// none), parsed again as a store load parses it.
    pub fn push_rechecked(
        &mut self,
        read: &LinkView<'_>,
        texts: Texts<'_>,
        rules: Option<Result<Rules, String>>,
    ) {
        if rules.is_none()
            && let Some(link) = recheck_plain(read)
        {
            return self.push_live_with(read.key, &link, texts);
        }
        match LiveLink::recheck(read, texts, rules) {
            Ok(link) => self.push_link(read.key, link),
            Err(reason) => self.push_invalid(read.key, reason),
        }
    }

    /// Issue 34: a parsed link, with its rules or the reason they were
    /// refused.
    fn push_link(&mut self, key: &str, link: LiveLink) {
        self.push_live_with(key, &link.view(key), link.texts());
        if let Some(reason) = link.rules_error
            && let Some(item) = self.items.last_mut()
        {
            self.reasons.push(reason);
            item.state = ItemState::LiveNoted(self.reasons.len() - 1);
        }
    }

    /// Issue 34: an invalid document's reason read from a snapshot file,
    /// which lists links served with their `url` (their rules refused)
    /// beside documents that are no link: it marks nothing unserved, and a
    /// key that is no link at the build is counted invalid.
    pub fn push_note(&mut self, key: &str, reason: String) {
        self.notes.insert(key.into(), reason);
    }

    /// Adds a link already known to be valid (from the snapshot file, whose
    /// checksum vouches for what a previous run parsed).
    pub fn push_live(&mut self, key: &str, link: &LinkView<'_>) {
        self.push_live_with(key, link, Texts::default());
    }

    /// [`push_live`](Self::push_live) with the link's texts (issue 33),
    /// kept in the builder's arena after the direct location.
    pub fn push_live_with(&mut self, key: &str, link: &LinkView<'_>, texts: Texts<'_>) {
        let off = self.arena.len();
        self.arena.push_str(key);
        self.arena.push_str(link.url);
        let direct = match link.direct {
            None => None,
            Some(d) if d == link.url => Some(None),
            Some(d) => {
                self.arena.push_str(d);
                Some(Some(d.len()))
            }
        };
        if let Some(f) = link.fallback {
            self.arena.push_str(f);
        }
        // A document is at most `MAX_DOCUMENT` bytes: its texts' lengths fit.
        let title_len = texts.title.map_or(0, str::len) as u32;
        let notes_len = texts.notes.map_or(0, str::len) as u32;
        self.arena.push_str(texts.title.unwrap_or(""));
        self.arena.push_str(texts.notes.unwrap_or(""));
        self.items.push(Item {
            texts: (title_len, notes_len),
            hash: self.hasher.hash(key),
            off,
            key_len: key.len(),
            url_len: link.url.len(),
            direct,
            inactive: link.inactive,
            expires_ms: link.expires_ms,
            created: link.created,
            changed: link.changed,
            // A shard holds at most 4 GiB of text, so this fits.
            fallback_len: link.fallback.map_or(0, |f| f.len() as u32),
            state: match link.rules {
                None => ItemState::Live,
                Some(r) => {
                    self.rules.push(Arc::clone(r));
                    ItemState::LiveRules(self.rules.len() - 1)
                }
            },
        });
    }

    pub fn push_invalid(&mut self, key: &str, reason: String) {
        self.reasons.push(reason);
        self.push_state(key, ItemState::Invalid(self.reasons.len() - 1));
    }

    fn push_state(&mut self, key: &str, state: ItemState) {
        let off = self.arena.len();
        self.arena.push_str(key);
        self.items.push(Item {
            hash: self.hasher.hash(key),
            off,
            key_len: key.len(),
            url_len: 0,
            texts: (0, 0),
            direct: None,
            inactive: false,
            expires_ms: None,
            created: None,
            changed: None,
            fallback_len: 0,
            state,
        });
    }

    pub fn len_hint(&self) -> usize {
        self.items.len()
    }

    fn key(&self, item: &Item) -> &str {
        &self.arena[item.off..item.off + item.key_len]
    }

    fn view<'a>(&'a self, item: &Item) -> LinkView<'a> {
        let url_start = item.off + item.key_len;
        let url_end = url_start + item.url_len;
        let url = &self.arena[url_start..url_end];
        let direct_end = url_end + item.direct.flatten().unwrap_or(0);
        LinkView {
            key: self.key(item),
            url,
            inactive: item.inactive,
            expires_ms: item.expires_ms,
            direct: item.direct.map(|d| match d {
                None => url,
                Some(n) => &self.arena[url_end..url_end + n],
            }),
            created: item.created,
            changed: item.changed,
            fallback: (item.fallback_len != 0)
                .then(|| &self.arena[direct_end..direct_end + item.fallback_len as usize]),
            rules: match item.state {
                ItemState::LiveRules(i) => self.rules.get(i),
                _ => None,
            },
        }
    }

    /// The texts of `item`, after its direct location and fallback in the arena.
    fn texts<'a>(&'a self, item: &Item) -> Texts<'a> {
        let mut at = item.off + item.key_len + item.url_len;
        if let Some(Some(n)) = item.direct {
            at += n;
        }
        // After the fallback, which `view` reads.
        at += item.fallback_len as usize;
        let (title, notes) = (item.texts.0 as usize, item.texts.1 as usize);
        Texts::new(
            Some(&self.arena[at..at + title]),
            Some(&self.arena[at + title..at + title + notes]),
        )
    }

    /// The finished table at store position `seq`.
    ///
    /// The items are put in order once, by the 32 hash bits [`shard_of`]
    /// reads and then by arrival: `shard_of` is monotone in those bits, so
    /// for any shard count each shard is one run of that order, and the
    /// items for one key (one hash) are neighbours, the last its last word.
    /// One sort of small pairs and one pass, instead of a hash table of
    /// every key, a sort of the winners and a list per shard filled in
    /// scattered order (issue 24).
    pub fn build(mut self, seq: Option<Value>) -> LinkTable {
        let mut order: Vec<(u32, usize)> = self
            .items
            .iter()
            .enumerate()
            .map(|(i, item)| (shard_bits(item.hash), i))
            .collect();
        order.sort_unstable();
        let mut winners: Vec<usize> = Vec::with_capacity(order.len());
        for run in order.chunk_by(|a, b| a.0 == b.0) {
            self.keep_last(run, &mut winners);
        }
        drop(order);

        let mut invalid = HashMap::new();
        let mut live = 0;
        for &i in &winners {
            let item = &self.items[i];
            match item.state {
                ItemState::Live | ItemState::LiveRules(_) => live += 1,
                ItemState::LiveNoted(r) => {
                    live += 1;
                    invalid.insert(
                        Box::from(self.key(item)),
                        std::mem::take(&mut self.reasons[r]),
                    );
                }
                ItemState::Invalid(r) => {
                    invalid.insert(
                        Box::from(self.key(item)),
                        std::mem::take(&mut self.reasons[r]),
                    );
                }
                ItemState::Deleted => {
                    if !self.notes.is_empty() {
                        let key = &self.arena[item.off..item.off + item.key_len];
                        self.notes.remove(key);
                    }
                }
            }
        }
        // Issue 34: a file's reasons for keys nothing later replaced.
        for (key, reason) in std::mem::take(&mut self.notes) {
            invalid.entry(key).or_insert(reason);
        }
        let count = shard_count_for(live);
        let hasher = self.hasher.clone();
        let mut shards = Vec::with_capacity(count);
        let mut len = 0;
        let mut longest_key = 0;
        let mut in_order = winners
            .iter()
            .map(|&i| &self.items[i])
            .filter(|item| item.state.is_live())
            .peekable();
        let mut links: Vec<Hashed<'_>> = Vec::new();
        for index in 0..count {
            links.clear();
            while let Some(item) = in_order.next_if(|item| shard_of(item.hash, count) == index) {
                longest_key = longest_key.max(item.key_len);
                links.push((item.hash, self.view(item), self.texts(item)));
            }
            // A shard is ~384 links; only URLs of megabytes each could
            // overflow one, and those are dropped rather than the table.
            match Shard::build(&links, |k| hasher.hash(k)) {
                Ok(s) => {
                    len += s.len();
                    shards.push(Arc::new(s));
                }
                Err(e) => {
                    tracing::error!(error = %e, "links dropped from the table");
                    shards.push(Arc::new(Shard::default()));
                }
            }
        }
        drop(links);
        LinkTable {
            hasher,
            shards: Arc::new(shards),
            len,
            invalid: Arc::new(invalid),
            seq,
            longest_key,
        }
    }

    /// Adds to `winners` the last item for each key among `run`, items
    /// whose hashes share their shard bits (nearly always one item; more
    /// for a key pushed again, or rarely two keys whose bits collide).
    fn keep_last(&self, run: &[(u32, usize)], winners: &mut Vec<usize>) {
        let same = |i: usize, j: usize| {
            self.items[i].hash == self.items[j].hash
                && self.key(&self.items[i]) == self.key(&self.items[j])
        };
        if run.len() <= 16 {
            for (n, &(_, i)) in run.iter().enumerate() {
                if !run[n + 1..].iter().any(|&(_, j)| same(i, j)) {
                    winners.push(i);
                }
            }
        } else {
            // Many pushes of one key (a feed of its edits): linear, not
            // quadratic, in the run.
            let mut seen = std::collections::HashSet::new();
            for &(_, i) in run.iter().rev() {
                if seen.insert(self.key(&self.items[i])) {
                    winners.push(i);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
