//! One shard of the link table: a few hundred links packed into one string
//! arena and a small open-addressing index.
//!
//! Why this shape: a link is a 5-byte key and a ~55-byte URL, so a
//! `HashMap<Box<str>, struct-of-Box<str>>` spends more on allocation headers,
//! pointers and padding than on the link (about 340 bytes a link at 1M). Here
//! every string of a shard lives in one `Box<str>` and an entry is 24 bytes of
//! offsets, flags and two times, about 33 bytes with the index's slack; the strings cost
//! what they are. A shard is immutable once built: an edit builds a new one
//! (a few hundred entries), which is what keeps an edit O(1) in the number of
//! links (see [`super::table`]).

use std::fmt;

use std::sync::Arc;

use hashbrown::HashTable;

use crate::link::rules::Rules;

/// What a link holds for the redirect path; borrowed from a shard's arena.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkView<'a> {
    pub key: &'a str,
    pub url: &'a str,
    pub inactive: bool,
    /// Expiry in milliseconds since the epoch, compared against the request time.
    pub expires_ms: Option<i64>,
    /// The `Location` for a request of exactly `/KEY` with no query, worked
    /// out once when the link is loaded (see
    /// [`policy::direct_location`](crate::redirect::policy::direct_location));
    /// `None` for internal redirects, whose result depends on other links.
    pub direct: Option<&'a str>,
    /// Creation and last-change times, seconds since the epoch: only the
    /// console's list reads them (to sort), so they are kept as compactly as
    /// sorting needs; `None` for documents without them.
    pub created: Option<u32>,
    pub changed: Option<u32>,
    /// Where scans go while the link is not live (issue 33): read only on
    /// the 404 path, so a live link's lookup is what it was.
    pub fallback: Option<&'a str>,
    /// Issue 34: the link's rules, compiled once when the shard is built
    /// ([`Rules::from_stored`]), `None` for a link without (or whose stored
    /// rules did not parse: it is served with its `url`). A link with rules
    /// has no `direct` location: its answer depends on the scan.
    pub rules: Option<&'a Arc<Rules>>,
}

impl LinkView<'_> {
    #[inline]
    pub fn is_live_at(&self, now_ms: i64) -> bool {
        !self.inactive && self.expires_ms.is_none_or(|e| now_ms < e)
    }
}

/// Where an entry's strings are and what it is. The arena holds, from `off`:
/// the key, the URL, the direct location (when it differs from the URL),
/// the expiry as 16 hex digits (when there is one) and the texts (when
/// there are some, [`Texts`]).
///
/// Issue 33: a link's title and notes, which only the console's list reads
/// (to show and search them), follow everything the redirect path reads,
/// behind a flag: [`view`] and the entry are as they were, so a scan's
/// lookup reads nothing more.
#[derive(Clone, Copy)]
struct Entry {
    off: u32,
    url_len: u32,
    direct_len: u32,
    key_len: u16,
    flags: u16,
    /// Seconds since the epoch, 0 for none (no link was made in 1970).
    created: u32,
    changed: u32,
}

const INACTIVE: u16 = 1;
const EXPIRES: u16 = 2;
/// The direct location is the URL itself (a URL already in normal form).
const DIRECT_IS_URL: u16 = 4;
/// The direct location is stored after the URL.
const DIRECT_OWN: u16 = 8;
const EXPIRY_DIGITS: usize = 16;
/// The fallback follows the expiry: its length as [`FALLBACK_LEN_DIGITS`]
/// hex digits, then its text, so an entry without one costs nothing.
const FALLBACK: u16 = 16;
const FALLBACK_LEN_DIGITS: usize = 8;

// Issue 33: the texts block. ---------------------------------------------
/// The entry has texts: after the expiry and the fallback, the title's and the notes' byte
/// lengths as 8 hex digits each, then the title and the notes.
const TEXTS: u16 = 32;
const TEXT_LEN_DIGITS: usize = 8;

// Issue 34: the rules block. ----------------------------------------------
/// The entry has rules: they are `Shard::rules[direct_len]`, the shard's
/// side vector of compiled [`Rules`]. Such a link has no direct location
/// (neither `DIRECT_` flag), so `direct_len` is free to be the index: an
/// entry stays 24 bytes and a link without rules reads one flag more.
const RULES: u16 = 64;

/// The rules of entry `e`, from the shard's side vector.
#[inline]
fn rules_of<'a>(rules: &'a [Arc<Rules>], e: &Entry) -> Option<&'a Arc<Rules>> {
    if e.flags & RULES == 0 {
        return None;
    }
    rules.get(e.direct_len as usize)
}
// End of the rules block. -------------------------------------------------

/// A link's title and notes, borrowed from a shard's arena; `None` for a
/// field the document lacks (or holds empty).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Texts<'a> {
    pub title: Option<&'a str>,
    pub notes: Option<&'a str>,
}

impl<'a> Texts<'a> {
    /// Texts with empty fields as `None`, so an empty and a missing field
    /// are one thing.
    pub fn new(title: Option<&'a str>, notes: Option<&'a str>) -> Self {
        Self {
            title: title.filter(|t| !t.is_empty()),
            notes: notes.filter(|n| !n.is_empty()),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.title.is_none() && self.notes.is_none()
    }

    /// Bytes the texts take in an arena.
    fn stored_len(&self) -> usize {
        if self.is_empty() {
            return 0;
        }
        2 * TEXT_LEN_DIGITS + self.title.map_or(0, str::len) + self.notes.map_or(0, str::len)
    }

    /// Appends the texts block (nothing for none).
    fn push_to(&self, arena: &mut String) {
        if self.is_empty() {
            return;
        }
        let (title, notes) = (self.title.unwrap_or(""), self.notes.unwrap_or(""));
        arena.push_str(&format!("{:08x}{:08x}", title.len(), notes.len()));
        arena.push_str(title);
        arena.push_str(notes);
    }
}

/// The texts block of `e`, which starts after everything [`view`] reads.
fn texts_of<'a>(arena: &'a str, e: &Entry) -> Texts<'a> {
    if e.flags & TEXTS == 0 {
        return Texts::default();
    }
    let mut at = e.off as usize + e.key_len as usize + e.url_len as usize;
    if e.flags & DIRECT_OWN != 0 {
        at += e.direct_len as usize;
    }
    if e.flags & EXPIRES != 0 {
        at += EXPIRY_DIGITS;
    }
    if e.flags & FALLBACK != 0 {
        // The fallback comes first (`view` reads it): its length, then it.
        let len = arena
            .get(at..at + FALLBACK_LEN_DIGITS)
            .and_then(|d| usize::from_str_radix(d, 16).ok())
            .unwrap_or(0);
        at += FALLBACK_LEN_DIGITS + len;
    }
    // Written by `build` as exactly 8 hex digits each, inside the arena.
    let len = |from: usize| {
        arena
            .get(from..from + TEXT_LEN_DIGITS)
            .and_then(|d| usize::from_str_radix(d, 16).ok())
            .unwrap_or(0)
    };
    let (title_len, notes_len) = (len(at), len(at + TEXT_LEN_DIGITS));
    let title_at = at + 2 * TEXT_LEN_DIGITS;
    let notes_at = title_at + title_len;
    Texts::new(
        arena.get(title_at..notes_at),
        arena.get(notes_at..notes_at + notes_len),
    )
}

impl Shard {
    /// The texts of `key`'s link.
    pub fn texts(&self, hash: u64, key: &str) -> Option<Texts<'_>> {
        self.index
            .find(hash, |e| key_of(&self.arena, e) == key)
            .map(|e| texts_of(&self.arena, e))
    }

    /// Every link with its texts.
    pub fn iter_with_texts(&self) -> impl Iterator<Item = (LinkView<'_>, Texts<'_>)> + '_ {
        self.index
            .iter()
            .map(|e| (view(&self.arena, &self.rules, e), texts_of(&self.arena, e)))
    }
}
// End of the texts block. -------------------------------------------------

/// Largest key a shard stores; longer keys are refused as invalid documents.
pub const MAX_KEY_LEN: usize = u16::MAX as usize;

#[derive(Default)]
pub struct Shard {
    index: HashTable<Entry>,
    arena: Box<str>,
    /// Issue 34: the compiled rules of the links that have some (see
    /// [`RULES`]); empty, and unallocated, in a shard without.
    rules: Box<[Arc<Rules>]>,
}

impl fmt::Debug for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shard")
            .field("links", &self.index.len())
            .field("arena_bytes", &self.arena.len())
            .finish()
    }
}

/// A link handed to [`Shard::build`], with its key's hash and its texts.
pub type Hashed<'a> = (u64, LinkView<'a>, Texts<'a>);

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("a shard holds at most 4 GiB of text")]
pub struct ShardTooLarge;

impl Shard {
    /// Packs `links` (unique keys, each with its hash) into a shard. `hash`
    /// must be the function that produced the hashes.
    pub fn build(links: &[Hashed<'_>], hash: impl Fn(&str) -> u64) -> Result<Self, ShardTooLarge> {
        let text: usize = links
            .iter()
            .map(|(_, l, t)| stored_len(l) + t.stored_len())
            .sum();
        if u32::try_from(text).is_err() {
            return Err(ShardTooLarge);
        }
        let mut arena = String::with_capacity(text);
        let mut entries = Vec::with_capacity(links.len());
        let mut rules = Vec::new();
        for (h, l, texts) in links {
            // Every length fits: the total was checked above, keys are checked
            // by the table before they get here.
            let off = arena.len() as u32;
            arena.push_str(l.key);
            arena.push_str(l.url);
            let mut flags = 0;
            let mut direct_len = 0;
            match (l.rules, l.direct) {
                // Issue 34: a link with rules has no direct location; its
                // entry's `direct_len` indexes the side vector.
                (Some(r), _) => {
                    flags |= RULES;
                    direct_len = rules.len() as u32;
                    rules.push(Arc::clone(r));
                }
                (None, Some(d)) if d == l.url => flags |= DIRECT_IS_URL,
                (None, Some(d)) => {
                    flags |= DIRECT_OWN;
                    direct_len = d.len() as u32;
                    arena.push_str(d);
                }
                (None, None) => {}
            }
            if let Some(ms) = l.expires_ms {
                flags |= EXPIRES;
                arena.push_str(&format!("{:016x}", ms as u64));
            }
            if l.inactive {
                flags |= INACTIVE;
            }
            if let Some(f) = l.fallback {
                flags |= FALLBACK;
                arena.push_str(&format!("{:08x}", f.len() as u32));
                arena.push_str(f);
            }
            if !texts.is_empty() {
                flags |= TEXTS;
                texts.push_to(&mut arena);
            }
            entries.push((
                *h,
                Entry {
                    off,
                    url_len: l.url.len() as u32,
                    direct_len,
                    key_len: l.key.len() as u16,
                    flags,
                    created: l.created.unwrap_or(0),
                    changed: l.changed.unwrap_or(0),
                },
            ));
        }
        let arena = arena.into_boxed_str();
        let mut index = HashTable::with_capacity(entries.len());
        for (h, e) in entries {
            index.insert_unique(h, e, |e| hash(key_of(&arena, e)));
        }
        Ok(Self {
            index,
            arena,
            rules: rules.into_boxed_slice(),
        })
    }

    #[inline]
    pub fn get(&self, hash: u64, key: &str) -> Option<LinkView<'_>> {
        self.index
            .find(hash, |e| key_of(&self.arena, e) == key)
            .map(|e| view(&self.arena, &self.rules, e))
    }

    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn iter(&self) -> impl Iterator<Item = LinkView<'_>> + '_ {
        self.index.iter().map(|e| view(&self.arena, &self.rules, e))
    }

    /// Heap bytes this shard holds (index buckets, control bytes, arena).
    pub fn heap_bytes(&self) -> usize {
        let buckets = if self.index.capacity() == 0 {
            0
        } else {
            (self.index.capacity() * 8 / 7).next_power_of_two()
        };
        buckets * (size_of::<Entry>() + 1)
            + self.arena.len()
            + self.rules.len() * size_of::<Arc<Rules>>()
    }
}

/// Bytes `l` takes in an arena.
fn stored_len(l: &LinkView<'_>) -> usize {
    let direct = match l.direct {
        Some(d) if d != l.url && l.rules.is_none() => d.len(),
        _ => 0,
    };
    let expiry = if l.expires_ms.is_some() {
        EXPIRY_DIGITS
    } else {
        0
    };
    let fallback = l.fallback.map_or(0, |f| FALLBACK_LEN_DIGITS + f.len());
    l.key.len() + l.url.len() + direct + expiry + fallback
}

#[inline]
fn key_of<'a>(arena: &'a str, e: &Entry) -> &'a str {
    let start = e.off as usize;
    &arena[start..start + e.key_len as usize]
}

#[inline]
fn view<'a>(arena: &'a str, rules: &'a [Arc<Rules>], e: &Entry) -> LinkView<'a> {
    let key_end = e.off as usize + e.key_len as usize;
    let url_end = key_end + e.url_len as usize;
    let url = &arena[key_end..url_end];
    let (direct, direct_end) = if e.flags & DIRECT_IS_URL != 0 {
        (Some(url), url_end)
    } else if e.flags & DIRECT_OWN != 0 {
        let end = url_end + e.direct_len as usize;
        (Some(&arena[url_end..end]), end)
    } else {
        (None, url_end)
    };
    let expires_ms = (e.flags & EXPIRES != 0).then(|| {
        let digits = &arena[direct_end..direct_end + EXPIRY_DIGITS];
        // Written by `build` as exactly 16 hex digits.
        u64::from_str_radix(digits, 16).unwrap_or(0) as i64
    });
    let fallback = (e.flags & FALLBACK != 0).then(|| {
        let start = direct_end
            + if expires_ms.is_some() {
                EXPIRY_DIGITS
            } else {
                0
            };
        let text = start + FALLBACK_LEN_DIGITS;
        // Written by `build` as exactly 8 hex digits and that many bytes.
        let len = usize::from_str_radix(&arena[start..text], 16).unwrap_or(0);
        &arena[text..text + len]
    });
    LinkView {
        key: &arena[e.off as usize..key_end],
        url,
        inactive: e.flags & INACTIVE != 0,
        expires_ms,
        direct,
        created: (e.created != 0).then_some(e.created),
        changed: (e.changed != 0).then_some(e.changed),
        fallback,
        rules: rules_of(rules, e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    fn hasher() -> impl Fn(&str) -> u64 {
        let state = foldhash::fast::FixedState::with_seed(7);
        move |k: &str| state.hash_one(k)
    }

    fn link<'a>(key: &'a str, url: &'a str) -> LinkView<'a> {
        LinkView {
            key,
            url,
            inactive: false,
            expires_ms: None,
            direct: Some(url),
            created: None,
            changed: None,
            fallback: None,
            rules: None,
        }
    }

    #[test]
    fn every_field_comes_back() {
        let h = hasher();
        let links = [
            link("abcde", "https://a.example/"),
            LinkView {
                direct: Some("https://b.example/"),
                ..link("b", "https://B.example")
            },
            LinkView {
                direct: None,
                inactive: true,
                expires_ms: Some(-5),
                ..link("c/d", "/abcde")
            },
            LinkView {
                expires_ms: Some(1_800_000_000_000),
                created: Some(1_764_000_000),
                changed: Some(u32::MAX),
                ..link("e", "https://e.example/x")
            },
            LinkView {
                fallback: Some("https://venue.example/after"),
                ..link("f", "https://f.example/x")
            },
            LinkView {
                fallback: Some("https://venue.example/"),
                expires_ms: Some(7),
                inactive: true,
                direct: Some("https://g.example/own"),
                ..link("g", "https://g.example/x")
            },
        ];
        // Issue 33: texts on some links, none on others.
        let texts = |key: &str| match key {
            "b" => Texts::new(Some("Spring 🎟 poster"), None),
            "e" => Texts::new(Some("T"), Some("notes,\nsecond line")),
            "c/d" => Texts::new(None, Some("only notes")),
            _ => Texts::default(),
        };
        let hashed: Vec<_> = links.iter().map(|l| (h(l.key), *l, texts(l.key))).collect();
        let shard = Shard::build(&hashed, &h).expect("fits");
        assert_eq!(shard.len(), 6);
        for l in &links {
            assert_eq!(shard.get(h(l.key), l.key), Some(*l));
            assert_eq!(shard.texts(h(l.key), l.key), Some(texts(l.key)));
        }
        assert!(shard.iter_with_texts().all(|(l, t)| t == texts(l.key)));
        assert_eq!(shard.get(h("zzz"), "zzz"), None);
        let mut keys: Vec<_> = shard.iter().map(|l| l.key).collect();
        keys.sort_unstable();
        assert_eq!(keys, ["abcde", "b", "c/d", "e", "f", "g"]);
    }

    /// Issue 34: rules cost an entry nothing (their index is the unused
    /// direct length); the entry stays 24 bytes.
    #[test]
    fn an_entry_is_24_bytes_and_rules_come_back() {
        assert_eq!(size_of::<Entry>(), 24);
        let h = hasher();
        let rules = Arc::new(
            Rules::from_json(
                &serde_json::json!([{"url": "https://b.example/", "os": ["android"]}]),
                &crate::link::rules::Capabilities::default(),
            )
            .expect("rules"),
        );
        let links = [
            LinkView {
                direct: None,
                rules: Some(&rules),
                fallback: Some("https://venue.example/"),
                ..link("r", "https://r.example/")
            },
            link("plain", "https://p.example/"),
        ];
        let hashed: Vec<_> = links
            .iter()
            .map(|l| (h(l.key), *l, Texts::new(Some("t"), None)))
            .collect();
        let shard = Shard::build(&hashed, &h).expect("fits");
        for l in &links {
            assert_eq!(shard.get(h(l.key), l.key), Some(*l));
            assert_eq!(
                shard.texts(h(l.key), l.key),
                Some(Texts::new(Some("t"), None))
            );
        }
    }

    #[test]
    fn liveness_uses_flag_and_expiry() {
        let l = LinkView {
            expires_ms: Some(100),
            ..link("a", "/x")
        };
        assert!(l.is_live_at(99) && !l.is_live_at(100));
        assert!(
            !LinkView {
                inactive: true,
                ..link("a", "/x")
            }
            .is_live_at(0)
        );
    }

    proptest::proptest! {
        #[test]
        fn round_trips_any_links(
            links in proptest::collection::hash_map(
                "[A-Za-z0-9_/-]{1,12}",
                (("[ -~]{0,40}", proptest::option::of(proptest::option::of("[ -~]{0,20}")), proptest::bool::ANY, proptest::option::of(proptest::num::i64::ANY), proptest::option::of(1..=u32::MAX), proptest::option::of(1..=u32::MAX)), proptest::option::of("[ -~]{0,30}")),
                0..60,
            )
        ) {
            let h = hasher();
            let views: Vec<LinkView<'_>> = links
                .iter()
                .map(|(k, ((url, direct, inactive, expires_ms, created, changed), fallback))| LinkView {
                    key: k,
                    url,
                    inactive: *inactive,
                    expires_ms: *expires_ms,
                    direct: match direct {
                        None => None,
                        Some(None) => Some(url.as_str()),
                        Some(Some(d)) => Some(d.as_str()),
                    },
                    created: *created,
                    changed: *changed,
                    fallback: fallback.as_deref(),
                    rules: None,
                })
                .collect();
            fn texts<'a>(l: &LinkView<'a>) -> Texts<'a> {
                match l.key.len() % 3 {
                0 => Texts::default(),
                1 => Texts::new(Some(l.url), None),
                    _ => Texts::new(Some(l.key), Some(l.url)),
                }
            }
            let hashed: Vec<_> = views.iter().map(|l| (h(l.key), *l, texts(l))).collect();
            let shard = Shard::build(&hashed, &h).expect("fits");
            proptest::prop_assert_eq!(shard.len(), views.len());
            for l in &views {
                proptest::prop_assert_eq!(shard.get(h(l.key), l.key), Some(*l));
                proptest::prop_assert_eq!(shard.texts(h(l.key), l.key), Some(texts(l)));
            }
        }
    }
}
