//! API keys for `/api/v1` (pure): the secret a client sends, the record the
//! store keeps, and the check of one against the other.
//!
//! A key reads `qrt_ID_SECRET`: the ID (8 base-62 characters) names the
//! record, so a request costs one store read and no scan; the secret (32
//! base-62 characters, about 190 bits) is never stored, only its SHA-256.
//! A fast hash is enough here, unlike for a password: the secret is random
//! and long, so there is nothing to guess from its hash.

use chrono::{DateTime, Utc};
use rand::Rng;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

const PREFIX: &str = "qrt_";
const ID_LEN: usize = 8;
const SECRET_LEN: usize = 32;
const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// What a key may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Reads only: links, QR images, scans.
    Read,
    /// Reads and writes.
    Write,
}

impl Scope {
    pub fn may_write(self) -> bool {
        self == Scope::Write
    }

    pub fn name(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::Write => "write",
        }
    }
}

/// The ID part of a key: what the record is stored under.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct KeyId(String);

impl KeyId {
    /// Only the exact form [`NewKey::generate`] makes.
    pub fn parse(s: &str) -> Option<Self> {
        (s.len() == ID_LEN && s.bytes().all(|b| b.is_ascii_alphanumeric()))
            .then(|| Self(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for KeyId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A key as a client presents it, split into its parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Presented {
    pub id: KeyId,
    secret: String,
}

impl Presented {
    /// `qrt_ID_SECRET`, or `None` for anything else.
    pub fn parse(s: &str) -> Option<Self> {
        let rest = s.strip_prefix(PREFIX)?;
        let (id, secret) = rest.split_once('_')?;
        let ok = secret.len() == SECRET_LEN && secret.bytes().all(|b| b.is_ascii_alphanumeric());
        if !ok {
            return None;
        }
        Some(Self {
            id: KeyId::parse(id)?,
            secret: secret.to_owned(),
        })
    }
}

/// A key's stored record: never the secret itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyRecord {
    pub id: String,
    pub name: String,
    pub scope: Scope,
    /// SHA-256 of the secret, lowercase hex.
    pub hash: String,
    /// RFC 3339, as `crate::values::timestamp::time_text` writes it.
    pub created_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<String>,
    /// Issue 35 (i35-users): the user the key belongs to, whose role it
    /// never exceeds. A key made before users has none and belongs to the
    /// first admin ([`KeyRecord::owner`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
}

/// Issue 35 (i35-users): the user an owner-less key (made before users)
/// belongs to: the first admin, as the single console password became.
pub const LEGACY_OWNER: &str = "admin";

impl KeyRecord {
    /// The user the key belongs to ([`LEGACY_OWNER`] for an old key).
    pub fn owner(&self) -> &str {
        self.user.as_deref().unwrap_or(LEGACY_OWNER)
    }
}

/// Why a presented key is not let in; the API answers all of them 401.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("no such API key")]
    Unknown,
    #[error("the API key was revoked")]
    Revoked,
}

impl KeyRecord {
    /// The scope `presented` acts with, if this record is its key and live.
    pub fn admit(&self, presented: &Presented) -> Result<Scope, Refused> {
        let matches = self.id == presented.id.as_str()
            && bool::from(
                hash_secret(&presented.secret)
                    .as_bytes()
                    .ct_eq(self.hash.as_bytes()),
            );
        match (matches, &self.revoked_at) {
            (false, _) => Err(Refused::Unknown),
            (true, Some(_)) => Err(Refused::Revoked),
            (true, None) => Ok(self.scope),
        }
    }
}

/// A freshly made key: the text to hand out once, and the record to store.
pub struct NewKey {
    pub text: String,
    pub record: KeyRecord,
}

impl NewKey {
    pub fn generate(name: &str, scope: Scope, now: DateTime<Utc>) -> Self {
        let mut rng = rand::rng();
        let mut draw = |n: usize| -> String {
            (0..n)
                .map(|_| char::from(ALPHABET[rng.random_range(0..ALPHABET.len())]))
                .collect()
        };
        let (id, secret) = (draw(ID_LEN), draw(SECRET_LEN));
        Self {
            text: format!("{PREFIX}{id}_{secret}"),
            record: KeyRecord {
                hash: hash_secret(&secret),
                id,
                name: name.to_owned(),
                scope,
                created_at: crate::values::timestamp::time_text(now),
                revoked_at: None,
                user: None,
            },
        }
    }
}

fn hash_secret(secret: &str) -> String {
    Sha256::digest(secret.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_key_is_admitted_with_its_scope_until_revoked() {
        let new = NewKey::generate("shop", Scope::Read, Utc::now());
        let presented = Presented::parse(&new.text).expect("own form");
        assert_eq!(presented.id.as_str(), new.record.id);
        assert_eq!(new.record.admit(&presented), Ok(Scope::Read));
        assert!(!new.record.hash.contains(&presented.secret));
        let mut revoked = new.record.clone();
        revoked.revoked_at = Some(crate::values::timestamp::time_text(Utc::now()));
        assert_eq!(revoked.admit(&presented), Err(Refused::Revoked));
    }

    #[test]
    fn a_wrong_secret_or_shape_is_refused() {
        let new = NewKey::generate("shop", Scope::Write, Utc::now());
        let mut other = new.text.clone();
        let last = other.pop().expect("char");
        other.push(if last == 'a' { 'b' } else { 'a' });
        let presented = Presented::parse(&other).expect("same form");
        assert_eq!(new.record.admit(&presented), Err(Refused::Unknown));
        for bad in [
            "",
            "qrt_",
            "qrt_abc_def",
            &new.text[1..],
            &format!("{}x", new.text),
            "qrt_ABCDEFGH_0123456789abcdef0123456789abcde!",
        ] {
            assert_eq!(Presented::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn records_round_trip_as_json() {
        let new = NewKey::generate("n", Scope::Write, Utc::now());
        let text = serde_json::to_string(&new.record).expect("json");
        let back: KeyRecord = serde_json::from_str(&text).expect("back");
        assert_eq!(back, new.record);
        assert!(text.contains("\"scope\":\"write\""));
    }
}
