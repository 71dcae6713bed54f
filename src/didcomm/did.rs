//! [`Did`]: a syntactically valid DID (no path, query or fragment), the
//! identity a sender is authorised and recorded by.

use std::fmt;

#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Did(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a DID (did:METHOD:ID, no path, query or fragment): {0:?}")]
pub struct InvalidDid(pub String);

impl Did {
    pub fn parse(s: &str) -> Result<Self, InvalidDid> {
        let bad = || InvalidDid(s.chars().take(120).collect());
        let rest = s.strip_prefix("did:").ok_or_else(bad)?;
        let (method, id) = rest.split_once(':').ok_or_else(bad)?;
        let method_ok = !method.is_empty()
            && method
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
        let id_ok = !id.is_empty()
            && s.len() <= 8192
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b".-_:%".contains(&b))
            && !id.ends_with(':');
        if method_ok && id_ok {
            Ok(Self(s.to_owned()))
        } else {
            Err(bad())
        }
    }

    /// A DID this crate built itself (the service's `did:peer:2`).
    pub(crate) fn generated(s: String) -> Self {
        debug_assert!(Self::parse(&s).is_ok(), "generated an invalid DID: {s}");
        Self(s)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `did:peer`, `did:key`, …: the method name.
    pub fn method(&self) -> &str {
        self.0[4..].split(':').next().unwrap_or_default()
    }
}

impl std::str::FromStr for Did {
    type Err = InvalidDid;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for Did {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Did {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Did({})", self.0)
    }
}

/// A DID URL naming one key: `DID#fragment`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyId {
    pub did: Did,
    pub fragment: String,
}

impl KeyId {
    pub fn parse(s: &str) -> Result<Self, InvalidDid> {
        let (did, fragment) = s
            .split_once('#')
            .ok_or_else(|| InvalidDid(s.chars().take(120).collect()))?;
        let fragment_ok = !fragment.is_empty()
            && fragment
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b));
        if !fragment_ok {
            return Err(InvalidDid(s.chars().take(120).collect()));
        }
        Ok(Self {
            did: Did::parse(did)?,
            fragment: fragment.to_owned(),
        })
    }
}

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}#{}", self.did, self.fragment)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dids_and_key_ids() {
        for ok in [
            "did:peer:2.Ez6LS.Vz6Mk.SeyJ0IjoiZG0ifQ",
            "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK",
            "did:web:example.com%3A8443",
        ] {
            assert!(Did::parse(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "did:",
            "did:peer",
            "did:peer:",
            "did:PEER:x",
            "did:peer:x#key-1",
            "did:peer:x/path",
            "did:peer:x?q",
            "peer:x",
            "did:peer:x ",
        ] {
            assert!(Did::parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            Did::parse("did:peer:2.Ez").map(|d| d.method().to_owned()),
            Ok("peer".into())
        );
        let k = KeyId::parse("did:peer:2.Ez6LS#key-1").expect("kid");
        assert_eq!(
            (k.did.as_str(), k.fragment.as_str()),
            ("did:peer:2.Ez6LS", "key-1")
        );
        assert!(KeyId::parse("did:peer:2.Ez6LS").is_err());
        assert!(KeyId::parse("did:peer:2.Ez6LS#").is_err());
        assert!(KeyId::parse("#key-1").is_err());
    }
}
