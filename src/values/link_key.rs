//! The keys links are stored under: random [`ShortId`](crate::values::short_id::ShortId)s
//! or hand-chosen slugs.
//!
//! Slugs may be hierarchical (`docs/api`), because the resolver's longest-prefix
//! match gives such keys a meaning. Keys are restricted to characters that need
//! no percent-encoding, so a key matches the request path byte for byte.

use std::fmt;

use crate::values::short_id::ShortId;

/// Longest segment of a slug.
pub const MAX_SEGMENT: usize = 64;

/// Longest key, in bytes (all ASCII): four full segments. A key is typed
/// and printed; a slug of a few words fits many times over. The bound is
/// what makes a tag's work bounded: a 1,039-character key at error
/// correction H was a version-36 code, and a print run of 1,000 of them
/// took 24 CPU-seconds (issue 30). At 256 bytes with a typical origin, a
/// code is at most version 21 at level H.
pub const MAX_KEY_LEN: usize = 256;

/// A valid link key: one or more segments of 1–64 characters of
/// `[A-Za-z0-9_-]`, joined by `/`, not starting with `_`, at most
/// [`MAX_KEY_LEN`] bytes in all.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LinkKey(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "a key is 1 to 64 characters of [A-Za-z0-9_-], optionally several such segments joined by '/', not starting with '_', at most 256 in all: {}",
    shown(.0)
)]
pub struct InvalidKey(pub String);

impl LinkKey {
    pub fn parse(s: &str) -> Result<Self, InvalidKey> {
        if Self::is_valid(s) {
            Ok(Self(s.to_owned()))
        } else {
            Err(InvalidKey(s.to_owned()))
        }
    }

    /// Whether [`parse`](Self::parse) accepts `s`, without allocating: the
    /// scan index asks it of every log line.
    pub fn is_valid(s: &str) -> bool {
        // CouchDB reserves IDs that start with `_`, so no store may hold one.
        if s.is_empty() || s.starts_with('_') || s.len() > MAX_KEY_LEN {
            return false;
        }
        // One pass over the bytes, the length of the current segment
        // counted (a full load asks this of every key; issue 24). The
        // property test `is_valid_is_the_segment_rule` holds it to the rule
        // as the documentation states it.
        let mut segment = 0;
        for b in s.bytes() {
            if b == b'/' {
                if segment == 0 {
                    return false;
                }
                segment = 0;
            } else if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' {
                segment += 1;
                if segment > MAX_SEGMENT {
                    return false;
                }
            } else {
                return false;
            }
        }
        segment > 0
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The shorter keys a request for this key's URL falls back to when this
    /// key does not exist, longest first, as the resolver's longest-prefix
    /// match tries them: `docs/api/v1` → `docs/api`, `docs`. One per `/`.
    pub fn parents(&self) -> impl Iterator<Item = LinkKey> + '_ {
        self.0
            .rmatch_indices('/')
            .map(|(at, _)| LinkKey(self.0[..at].to_owned()))
    }
}

/// The existing link whose URLs a new key would take over, if any: the
/// longest of `existing_parents` that is one of `new`'s [parents]. With
/// `docs/api` stored, `/docs/api/v1` leads to `docs/api` with `/v1`
/// appended; a new key `docs/api/v1` would make that printed URL lead
/// elsewhere, which only an editor may decide (issue 19, item 8). Keys
/// below `new` (`docs/api/v1/x`) are not affected: the longer key still
/// matches first.
///
/// [parents]: LinkKey::parents
pub fn taken_over<'a>(new: &LinkKey, existing_parents: &'a [LinkKey]) -> Option<&'a LinkKey> {
    existing_parents
        .iter()
        .filter(|p| {
            new.0
                .strip_prefix(p.as_str())
                .is_some_and(|rest| rest.starts_with('/'))
        })
        .max_by_key(|p| p.0.len())
}

/// A refused key as the message quotes it: at most its first 64
/// characters, so a kilobyte key does not make a kilobyte line.
fn shown(key: &str) -> String {
    match key.char_indices().nth(64) {
        Some((at, _)) => format!("{:?}… ({} bytes)", &key[..at], key.len()),
        None => format!("{key:?}"),
    }
}

impl From<ShortId> for LinkKey {
    fn from(id: ShortId) -> Self {
        Self(id.as_str().to_owned())
    }
}

impl std::str::FromStr for LinkKey {
    type Err = InvalidKey;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for LinkKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for LinkKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LinkKey({})", self.0)
    }
}

#[cfg(test)]
mod tests {
    proptest::proptest! {
        /// The one-pass check is the rule: segments of 1 to 64 characters
        /// of `[A-Za-z0-9_-]` joined by `/`, not starting with `_`.
        #[test]
        fn is_valid_is_the_segment_rule(s in "[a-z_/.-]{0,4}|[A-Za-z0-9_/-]{60,70}|(a{1,66}/){0,2}a{0,66}/?|(a{64}/){3}a{62,66}") {
            let rule = !s.is_empty()
                && !s.starts_with('_')
                && s.len() <= super::MAX_KEY_LEN
                && s.split('/').all(|seg| {
                    (1..=super::MAX_SEGMENT).contains(&seg.len())
                        && seg
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
                });
            proptest::prop_assert_eq!(super::LinkKey::is_valid(&s), rule, "{:?}", s);
        }
    }

    #[test]
    fn parents_and_the_link_a_key_takes_over() {
        let key = |s: &str| super::LinkKey::parse(s).expect("key");
        let new = key("docs/api/v1");
        let parents: Vec<_> = new.parents().collect();
        assert_eq!(parents, [key("docs/api"), key("docs")]);
        assert_eq!(key("H83if").parents().count(), 0);
        let none: [super::LinkKey; 0] = [];
        assert_eq!(super::taken_over(&new, &none), None);
        let existing = [key("docs"), key("docs/api")];
        assert_eq!(super::taken_over(&new, &existing), Some(&key("docs/api")));
        assert_eq!(super::taken_over(&new, &existing[..1]), Some(&key("docs")));
        // Not at a `/`, or not a prefix at all: nothing is taken over.
        let unrelated = [key("docs/ap"), key("docs/api/v1/x"), key("doc")];
        assert_eq!(super::taken_over(&new, &unrelated), None);
        assert_eq!(super::taken_over(&key("docs"), &existing), None);
    }

    use super::*;
    use proptest::prelude::*;

    #[test]
    fn accepts_ids_and_slugs() {
        for ok in [
            "H83if",
            "a",
            "docs/api",
            "spring-2026_poster",
            &"x".repeat(64),
            &vec!["x".repeat(64); 4].join("/")[..MAX_KEY_LEN],
        ] {
            assert!(LinkKey::parse(ok).is_ok(), "{ok:?} rejected");
        }
    }

    #[test]
    fn rejects_bad_keys() {
        let long = "x".repeat(65);
        let longest = vec!["x".repeat(64); 4].join("/");
        assert_eq!(longest.len(), MAX_KEY_LEN + 3);
        for bad in [
            &longest[..MAX_KEY_LEN + 1],
            "",
            "/",
            "/a",
            "a/",
            "a//b",
            "a b",
            "a.b",
            "%41",
            "é",
            "a?b",
            "_design/x",
            "_a",
            &long,
        ] {
            assert!(LinkKey::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    proptest! {
        #[test]
        fn parsed_keys_need_no_encoding(s in ".{0,80}") {
            if let Ok(k) = LinkKey::parse(&s) {
                prop_assert!(k.as_str().bytes().all(|b| b.is_ascii_alphanumeric() || b"_-/".contains(&b)));
            }
        }
    }
}
