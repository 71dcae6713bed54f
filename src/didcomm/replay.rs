//! The ids of accepted authcrypt messages, kept for their validity window
//! so that a captured message sent again is refused (issue 19, item 9: one
//! request replayed three times made three links).
//!
//! A message is valid until its `expires_time`, and at most [`WINDOW`] after
//! its `created_time` (or after it first arrived, when it has none); the
//! protocol refuses it once either has passed. Its id, with its sender, is
//! kept that long. Plaintext messages are not tracked: they carry the API
//! token itself, so whoever could replay one holds the token anyway.

use std::collections::HashMap;
use std::sync::Mutex;

use sha2::{Digest, Sha256};

/// How long after it was created a message is accepted, in seconds.
pub const WINDOW: i64 = 3600;
/// How far a `created_time` may be ahead of this clock (skew).
pub const SKEW: i64 = 300;
/// The longest an id is kept for a message whose `expires_time` is far
/// ahead: the memory is bounded, and a week covers any real agent's retry.
const MAX_KEEP: i64 = 7 * 24 * 3600;
/// The most ids held at once (24 bytes each and the map's overhead).
const CAPACITY: usize = 1_000_000;

/// Until when (epoch seconds) a message seen at `now` stays valid, and so
/// its id is kept.
pub fn valid_until(created: Option<i64>, expires: Option<i64>, now: i64) -> i64 {
    let by_creation = created.map(|c| c.min(now.saturating_add(SKEW)).saturating_add(WINDOW));
    let until = match (by_creation, expires) {
        (Some(c), Some(e)) => c.min(e),
        (Some(c), None) => c,
        (None, Some(e)) => e,
        (None, None) => now.saturating_add(WINDOW),
    };
    until.min(now.saturating_add(MAX_KEEP))
}

/// More messages in their window than [`CAPACITY`].
#[derive(Debug, thiserror::Error)]
#[error("too many DIDComm messages within their validity window; retry later")]
pub struct Full;

/// The ids seen, by a digest of sender and id, with when each may be forgotten.
#[derive(Default)]
pub struct Seen {
    ids: Mutex<HashMap<[u8; 16], i64>>,
}

fn digest(sender: &str, id: &str) -> [u8; 16] {
    let mut h = Sha256::new();
    h.update(sender.as_bytes());
    h.update([0]);
    h.update(id.as_bytes());
    let full = h.finalize();
    let mut out = [0u8; 16];
    out.copy_from_slice(&full[..16]);
    out
}

impl Seen {
    /// Records `sender`'s message `id` until `until`; `Ok(false)` when it
    /// was recorded before and is still within its window: a repeat.
    pub fn first_time(&self, sender: &str, id: &str, until: i64, now: i64) -> Result<bool, Full> {
        let key = digest(sender, id);
        let mut ids = self
            .ids
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if ids.get(&key).is_some_and(|&t| t >= now) {
            return Ok(false);
        }
        if ids.len() >= CAPACITY {
            ids.retain(|_, t| *t >= now);
            if ids.len() >= CAPACITY {
                return Err(Full);
            }
        }
        ids.insert(key, until);
        Ok(true)
    }

    /// Forgets a message that was not acted on (the store was away), so the
    /// sender's retry is not taken for a replay.
    pub fn forget(&self, sender: &str, id: &str) {
        let mut ids = self
            .ids
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        ids.remove(&digest(sender, id));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows() {
        let now = 1_000_000;
        assert_eq!(valid_until(None, None, now), now + WINDOW);
        assert_eq!(valid_until(Some(now - 100), None, now), now - 100 + WINDOW);
        assert_eq!(valid_until(None, Some(now + 60), now), now + 60);
        assert_eq!(
            valid_until(None, Some(now + 2 * WINDOW), now),
            now + 2 * WINDOW
        );
        assert_eq!(valid_until(None, Some(i64::MAX), now), now + MAX_KEEP);
        assert_eq!(valid_until(Some(i64::MAX), None, now), now + SKEW + WINDOW);
        assert_eq!(
            valid_until(Some(now), Some(now + 2 * WINDOW), now),
            now + WINDOW
        );
    }

    #[test]
    fn a_repeat_within_the_window_and_after_it() {
        let seen = Seen::default();
        assert!(seen.first_time("did:a", "m1", 100, 0).expect("room"));
        assert!(!seen.first_time("did:a", "m1", 100, 50).expect("room"));
        assert!(
            seen.first_time("did:b", "m1", 100, 50).expect("room"),
            "another sender"
        );
        assert!(
            seen.first_time("did:a", "m1", 300, 101).expect("room"),
            "window over"
        );
        seen.forget("did:a", "m1");
        assert!(seen.first_time("did:a", "m1", 300, 102).expect("room"));
    }
}
