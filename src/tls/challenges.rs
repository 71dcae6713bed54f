//! The ACME HTTP-01 answers the port 80 listener gives: token → key
//! authorization. Filled by whoever orders certificates (ACME), read by
//! `/.well-known/acme-challenge/{token}`; bounded, since an order has a
//! few tokens at a time and a runaway caller must not grow the server.

use std::collections::HashMap;
use std::sync::RwLock;

/// At most this many tokens are held; `put` past it is refused.
pub const MAX_TOKENS: usize = 1024;

#[derive(Debug, Default)]
pub struct Challenges {
    tokens: RwLock<HashMap<String, String>>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("too many ACME challenges held at once ({MAX_TOKENS})")]
pub struct TooManyChallenges;

impl Challenges {
    /// Answers `token` with `key_authorization` until [`remove`](Self::remove).
    pub fn put(&self, token: &str, key_authorization: &str) -> Result<(), TooManyChallenges> {
        let mut tokens = self.tokens.write().unwrap_or_else(|p| p.into_inner());
        if tokens.len() >= MAX_TOKENS && !tokens.contains_key(token) {
            return Err(TooManyChallenges);
        }
        tokens.insert(token.to_owned(), key_authorization.to_owned());
        Ok(())
    }

    pub fn remove(&self, token: &str) {
        self.tokens
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(token);
    }

    /// The key authorization for `token`, if one is held.
    pub fn get(&self, token: &str) -> Option<String> {
        self.tokens
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(token)
            .cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_get_remove_and_a_bound() {
        let c = Challenges::default();
        assert_eq!(c.get("t"), None);
        c.put("t", "t.thumb").expect("room");
        assert_eq!(c.get("t").as_deref(), Some("t.thumb"));
        c.remove("t");
        assert_eq!(c.get("t"), None);
        for i in 0..MAX_TOKENS {
            c.put(&i.to_string(), "x").expect("room");
        }
        assert_eq!(c.put("one more", "x"), Err(TooManyChallenges));
        c.put("0", "again").expect("a held token may be replaced");
    }
}
