//! The keys links are stored under: random [`ShortId`](crate::short_id::ShortId)s
//! or hand-chosen slugs.
//!
//! Slugs may be hierarchical (`docs/api`), because the resolver's longest-prefix
//! match gives such keys a meaning. Keys are restricted to characters that need
//! no percent-encoding, so a key matches the request path byte for byte.

use std::fmt;

use crate::short_id::ShortId;

/// Longest segment of a slug.
pub const MAX_SEGMENT: usize = 64;

/// A valid link key: one or more segments of 1–64 characters of
/// `[A-Za-z0-9_-]`, joined by `/`, not starting with `_`.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LinkKey(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "a key is 1 to 64 characters of [A-Za-z0-9_-], optionally several such segments joined by '/', not starting with '_': {0:?}"
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
        !s.is_empty()
            && !s.starts_with('_')
            && s.split('/').all(|seg| {
                (1..=MAX_SEGMENT).contains(&seg.len())
                    && seg
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            })
    }

    pub fn as_str(&self) -> &str {
        &self.0
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
        ] {
            assert!(LinkKey::parse(ok).is_ok(), "{ok:?} rejected");
        }
    }

    #[test]
    fn rejects_bad_keys() {
        let long = "x".repeat(65);
        for bad in [
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
