//! Where a link points: an absolute http(s) URL, or an origin-relative path
//! (an internal redirect, resolved again on the service's own origin).

use std::fmt;

/// A destination that the resolver can follow without surprises. Anything that
/// could turn into an open redirect or a script (`//host`, `/\host`,
/// `javascript:`) is refused here, at the edge, rather than on every request.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Destination {
    raw: String,
    internal: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidDestination {
    #[error("a destination must not be empty")]
    Empty,
    #[error("a destination must not contain spaces or control characters: {0:?}")]
    Whitespace(String),
    #[error("a destination path must start with exactly one '/': {0:?}")]
    NotOriginRelative(String),
    #[error("not an absolute http(s) URL with a host: {0:?}")]
    NotHttp(String),
}

impl Destination {
    pub fn parse(s: &str) -> Result<Self, InvalidDestination> {
        if s.is_empty() {
            return Err(InvalidDestination::Empty);
        }
        if s.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(InvalidDestination::Whitespace(s.to_owned()));
        }
        if let Some(rest) = s.strip_prefix('/') {
            // WHATWG parsers read `\` as `/` in http(s) URLs, so `/\host` is `//host`.
            if rest.starts_with('/') || rest.starts_with('\\') {
                return Err(InvalidDestination::NotOriginRelative(s.to_owned()));
            }
            return Ok(Self {
                raw: s.to_owned(),
                internal: true,
            });
        }
        // The resolver tells absolute values by their first four bytes being
        // "http", so the scheme must be spelled in lower case to be followed.
        // `https:///x` and `https:/\\x` are read by WHATWG parsers as host `x`:
        // refuse such spellings rather than guess what was meant.
        let lower_scheme = ["http://", "https://"].iter().any(|p| {
            s.strip_prefix(p)
                .is_some_and(|rest| !rest.starts_with('/') && !rest.starts_with('\\'))
        });
        match url::Url::parse(s) {
            Ok(u) if lower_scheme && u.host_str().is_some_and(|h| !h.is_empty()) => Ok(Self {
                raw: s.to_owned(),
                internal: false,
            }),
            _ => Err(InvalidDestination::NotHttp(s.to_owned())),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.raw
    }

    /// True for an origin-relative path (an internal redirect).
    pub fn is_internal(&self) -> bool {
        self.internal
    }
}

impl std::str::FromStr for Destination {
    type Err = InvalidDestination;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for Destination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.raw)
    }
}

impl fmt::Debug for Destination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Destination({})", self.raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn accepts_http_urls_and_paths() {
        for ok in [
            "http://innerfunction.com/wp/whelans/?p=14",
            "https://example.com",
            "https://xn--bcher-kva.example/",
            "https://bücher.example/ü",
            "/documentation",
            "/a//b?x=1#y",
        ] {
            assert!(Destination::parse(ok).is_ok(), "{ok:?} rejected");
        }
        assert!(Destination::parse("/docs").is_ok_and(|d| d.is_internal()));
        assert!(Destination::parse("https://a.example").is_ok_and(|d| !d.is_internal()));
    }

    #[test]
    fn rejects_unsafe_or_broken_values() {
        for bad in [
            "",
            "//evil.example",
            "/\\evil.example",
            "javascript:alert(1)",
            "ftp://example.com/",
            "HTTPS://example.com/",
            "http://",
            "https:///path",
            "example.com",
            "https://a.example/ x",
            "https://a.example/\n",
            "mailto:a@b.example",
            "httpfoo",
        ] {
            assert!(Destination::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    proptest! {
        #[test]
        fn parse_never_panics_and_keeps_the_text(s in ".{0,60}") {
            if let Ok(d) = Destination::parse(&s) {
                prop_assert_eq!(d.as_str(), s.as_str());
                prop_assert!(d.as_str().starts_with('/') || d.as_str().starts_with("http"));
            }
        }
    }
}
