//! The ACME HTTP-01 answers the port 80 listener gives: token → key
//! authorization. Filled by whoever orders certificates (ACME), read by
//! `/.well-known/acme-challenge/{token}`; bounded, since an order has a
//! few tokens at a time and a runaway caller must not grow the server.

use std::collections::HashMap;
use std::sync::RwLock;

/// At most this many tokens are held; `put` past it is refused.
pub const MAX_TOKENS: usize = 1024;

/// Issue 36: at most this many lookups of another node's answer at once;
/// past it a request for a token this node does not hold is a 404 at once,
/// so requests for made-up tokens cannot queue work on the shared store.
pub const MAX_SHARED_LOOKUPS: usize = 4;

pub struct Challenges {
    tokens: RwLock<HashMap<String, String>>,
    /// Issue 36: where the other nodes keep their answers (CouchDB).
    shared: std::sync::OnceLock<std::sync::Arc<dyn crate::acme::CertStore>>,
    lookups: tokio::sync::Semaphore,
}

impl Default for Challenges {
    fn default() -> Self {
        Self {
            tokens: RwLock::default(),
            shared: std::sync::OnceLock::new(),
            lookups: tokio::sync::Semaphore::new(MAX_SHARED_LOOKUPS),
        }
    }
}

impl std::fmt::Debug for Challenges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Challenges")
            .field("tokens", &self.tokens)
            .field("shared", &self.shared.get().is_some())
            .finish()
    }
}

/// Whether `token` can be an ACME token (base64url, RFC 8555 8.3), so
/// nothing else is looked up.
fn plausible(token: &str) -> bool {
    (16..=128).contains(&token.len())
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("too many ACME challenges held at once ({MAX_TOKENS})")]
pub struct TooManyChallenges;

impl Challenges {
    /// Issue 36: a token not held here is looked up in `store`, where the
    /// node that ordered keeps its answer.
    pub fn share_through(&self, store: std::sync::Arc<dyn crate::acme::CertStore>) {
        let _ = self.shared.set(store);
    }

    /// The answer for `token`: this node's, else (issue 36) the one another
    /// node keeps in the shared store, within [`MAX_SHARED_LOOKUPS`].
    pub async fn answer(&self, token: &str) -> Option<String> {
        if let Some(answer) = self.get(token) {
            return Some(answer);
        }
        let store = self.shared.get().filter(|_| plausible(token))?;
        let _slot = self.lookups.try_acquire().ok()?;
        match store.challenge(token).await {
            Ok(answer) => answer,
            Err(e) => {
                tracing::warn!("ACME: reading another node's challenge answer: {e}");
                None
            }
        }
    }

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

    /// Issue 36: a store holding one other node's answer, counting lookups.
    #[derive(Default)]
    struct Shared {
        asked: std::sync::atomic::AtomicUsize,
    }

    #[async_trait::async_trait]
    impl crate::acme::CertStore for Shared {
        async fn account(&self, _: &str) -> Result<Option<String>, crate::acme::StoreError> {
            Ok(None)
        }
        async fn put_account(&self, _: &str, _: &str) -> Result<(), crate::acme::StoreError> {
            Ok(())
        }
        async fn certificate(
            &self,
            _: &str,
        ) -> Result<Option<crate::acme::CertificateBundle>, crate::acme::StoreError> {
            Ok(None)
        }
        async fn put_certificate(
            &self,
            _: &str,
            _: &crate::acme::CertificateBundle,
        ) -> Result<(), crate::acme::StoreError> {
            Ok(())
        }
        async fn try_lease(
            &self,
            _: &str,
            _: &str,
            _: std::time::Duration,
        ) -> Result<Option<Box<dyn crate::acme::Lease>>, crate::acme::StoreError> {
            Ok(None)
        }
        async fn challenge(&self, token: &str) -> Result<Option<String>, crate::acme::StoreError> {
            self.asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok((token == "OtherNodesToken_0123").then(|| "OtherNodesToken_0123.k".into()))
        }
    }

    #[tokio::test]
    async fn a_token_held_elsewhere_is_looked_up_in_the_shared_store() {
        let c = Challenges::default();
        c.put("MineMineMine_0123456", "mine.k").expect("room");
        assert_eq!(
            c.answer("OtherNodesToken_0123").await,
            None,
            "not shared yet"
        );
        let shared = std::sync::Arc::new(Shared::default());
        c.share_through(shared.clone());
        assert_eq!(
            c.answer("MineMineMine_0123456").await.as_deref(),
            Some("mine.k")
        );
        assert_eq!(
            c.answer("OtherNodesToken_0123").await.as_deref(),
            Some("OtherNodesToken_0123.k")
        );
        assert_eq!(c.answer("UnknownToken_0123456").await, None);
        // Not a token: never asked.
        for bad in ["short", "has/slash_0123456789", "dots.in.it.0123456789"] {
            assert_eq!(c.answer(bad).await, None, "{bad}");
        }
        assert_eq!(shared.asked.load(std::sync::atomic::Ordering::SeqCst), 2);
    }
}
