//! A domain the service answers for, as a `Host` header names it (issue
//! 36): checked once when the configuration is read, so the public
//! listener compares a request's bytes with it and never parses a name.

use std::fmt;

/// A host name in served form: lower-case ASCII (an internationalised name
/// in its `xn--` form), no port, no trailing dot. An IPv4 literal is one
/// too, since a `Host` header may be one.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Host(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "not a host name (letters, digits and '-' in dot-separated labels, like go.example.com, no scheme or port): {0:?}"
)]
pub struct InvalidHost(pub String);

/// Longest name DNS carries, in bytes.
const MAX_NAME: usize = 253;
/// Longest label, in bytes.
const MAX_LABEL: usize = 63;

impl Host {
    /// A name as an operator writes it: capitals lowered and one trailing
    /// dot dropped, as a browser does before it sends the header.
    pub fn parse(s: &str) -> Result<Self, InvalidHost> {
        let bad = || InvalidHost(s.chars().take(MAX_NAME).collect());
        let name = s.strip_suffix('.').unwrap_or(s).to_ascii_lowercase();
        if name.is_empty() || name.len() > MAX_NAME {
            return Err(bad());
        }
        let label_ok = |l: &str| {
            !l.is_empty()
                && l.len() <= MAX_LABEL
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        };
        if !name.split('.').all(label_ok) {
            return Err(bad());
        }
        Ok(Self(name))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether a `Host` (or `X-Forwarded-Host`) value names this host:
    /// its port and one trailing dot left out, letters compared without
    /// case. Bytes, not text: a header may hold anything.
    pub fn matches(&self, header: &[u8]) -> bool {
        let name = name_of(header);
        name.eq_ignore_ascii_case(self.0.as_bytes())
    }
}

/// The name part of a `Host` value: `[::1]:8080` → `[::1]`,
/// `go.example.com.:443` → `go.example.com`, surrounding spaces dropped.
pub fn name_of(header: &[u8]) -> &[u8] {
    let value = header.trim_ascii();
    let name = match value.iter().rposition(|&b| b == b':') {
        // A bracketed IPv6 literal holds colons of its own.
        Some(at) if !value[at..].contains(&b']') => &value[..at],
        _ => value,
    };
    name.strip_suffix(b".").unwrap_or(name)
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Host({})", self.0)
    }
}

impl std::str::FromStr for Host {
    type Err = InvalidHost;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_kept_in_served_form() {
        assert_eq!(
            Host::parse("Go.Brand-A.com.").expect("a name").as_str(),
            "go.brand-a.com"
        );
        assert_eq!(
            Host::parse("127.0.0.1").expect("ipv4").as_str(),
            "127.0.0.1"
        );
        for bad in [
            "",
            ".",
            "https://go.example.com",
            "go.example.com:8080",
            "go..example.com",
            "-go.example.com",
            "go_example.com",
            "gö.example.com",
            "go.example.com/x",
            &"a".repeat(64),
        ] {
            assert!(Host::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_header_matches_without_port_case_or_trailing_dot() {
        let host = Host::parse("go.brand-a.com").expect("a name");
        for yes in [
            &b"go.brand-a.com"[..],
            b"GO.Brand-A.com",
            b"go.brand-a.com:8080",
            b"go.brand-a.com.",
            b"go.brand-a.com.:443",
            b" go.brand-a.com ",
        ] {
            assert!(host.matches(yes), "{:?}", String::from_utf8_lossy(yes));
        }
        for no in [
            &b"brand-a.com"[..],
            b"go.brand-a.com.evil",
            b"xgo.brand-a.com",
            b"",
            b"go.brand-a.com:8080:1",
        ] {
            assert!(!host.matches(no), "{:?}", String::from_utf8_lossy(no));
        }
        assert_eq!(name_of(b"[::1]:8080"), b"[::1]");
        assert_eq!(name_of(b"[::1]"), b"[::1]");
    }
}
