//! The synchronizer token: every form carries a token in a hidden `csrf`
//! field, and a POST whose field does not match is refused before anything
//! else is read. `SameSite=Strict` alone would do in today's browsers; the
//! token also covers older ones and a login form posted from another site.
//!
//! A logged-in session keeps its token on the server. A visitor who is not
//! logged in (the login and setup forms) gets no server state at all: the
//! cookie is a signed, short-lived [`AnonymousPass`] and the form's token
//! is derived from it with the same per-process key, so a flood of form
//! views costs no memory and cannot crowd out a real login.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

/// The form field's name.
pub const FIELD: &str = "csrf";

/// The one-line body of the 403.
pub const REFUSED: &str = "missing or wrong CSRF token: reload the page and try again\n";

/// How long a login or setup form may stay open before its POST is refused
/// (a reload gives a new one).
pub const ANONYMOUS_LIFETIME: Duration = Duration::from_secs(3600);

/// What starts an anonymous cookie's value; a session ID (URL-safe base64)
/// never contains a `.`, so the two cannot be confused.
const PREFIX: &str = "anon.";

/// Whether the form's token is the session's, compared in constant time.
pub fn matches(session_token: &str, given: Option<&str>) -> bool {
    match given {
        Some(given) if !session_token.is_empty() => {
            bool::from(session_token.as_bytes().ct_eq(given.as_bytes()))
        }
        _ => false,
    }
}

/// The per-process key that signs anonymous cookies; a restart makes every
/// open login form ask for a reload, which is all it costs.
pub struct Signer {
    key: [u8; 32],
}

impl Default for Signer {
    fn default() -> Self {
        Self {
            key: rand::random(),
        }
    }
}

/// A verified anonymous cookie: its value and the form token it goes with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnonymousPass {
    pub cookie: String,
    pub csrf: String,
}

fn seconds(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

impl Signer {
    fn mac(&self, purpose: &str, parts: &[&str]) -> Vec<u8> {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.key)
            .expect("HMAC takes a key of any length");
        mac.update(purpose.as_bytes());
        for part in parts {
            mac.update(b"|");
            mac.update(part.as_bytes());
        }
        mac.finalize().into_bytes().to_vec()
    }

    fn pass(&self, nonce: &str, expires: &str) -> AnonymousPass {
        let signature = URL_SAFE_NO_PAD.encode(self.mac("cookie", &[nonce, expires]));
        AnonymousPass {
            cookie: format!("{PREFIX}{nonce}.{expires}.{signature}"),
            csrf: URL_SAFE_NO_PAD.encode(self.mac("csrf", &[nonce])),
        }
    }

    /// A new pass, valid for [`ANONYMOUS_LIFETIME`] from `now`.
    pub fn issue(&self, now: SystemTime) -> AnonymousPass {
        let nonce = URL_SAFE_NO_PAD.encode(rand::random::<[u8; 16]>());
        let expires = (seconds(now) + ANONYMOUS_LIFETIME.as_secs()).to_string();
        self.pass(&nonce, &expires)
    }

    /// The pass a cookie's value is, when this process signed it and it
    /// has not expired at `now`; `None` for anything else.
    pub fn verify(&self, cookie: &str, now: SystemTime) -> Option<AnonymousPass> {
        let mut parts = cookie.strip_prefix(PREFIX)?.split('.');
        let (nonce, expires, signature) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() {
            return None;
        }
        let expected = self.pass(nonce, expires);
        let signed = bool::from(expected.cookie.as_bytes().ct_eq(cookie.as_bytes()));
        let alive = expires.parse::<u64>().is_ok_and(|e| seconds(now) < e);
        (signed && alive && !signature.is_empty()).then_some(expected)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_same_token_matches() {
        assert!(matches("abc", Some("abc")));
        assert!(!matches("abc", Some("abd")));
        assert!(!matches("abc", Some("ab")));
        assert!(!matches("abc", None));
        assert!(!matches("", Some("")));
    }

    #[test]
    fn a_pass_is_good_until_it_expires_and_only_for_its_signer() {
        let signer = Signer::default();
        let now = SystemTime::now();
        let pass = signer.issue(now);
        assert_eq!(signer.verify(&pass.cookie, now), Some(pass.clone()));
        let later = now + ANONYMOUS_LIFETIME;
        assert_eq!(signer.verify(&pass.cookie, later), None, "expired");
        assert_eq!(
            Signer::default().verify(&pass.cookie, now),
            None,
            "another process"
        );
        assert_ne!(signer.issue(now).csrf, pass.csrf, "each pass its own token");
    }

    #[test]
    fn a_changed_cookie_is_refused() {
        let signer = Signer::default();
        let now = SystemTime::now();
        let pass = signer.issue(now);
        let (head, _) = pass.cookie.rsplit_once('.').expect("signature");
        let (start, _) = head.rsplit_once('.').expect("expiry");
        for forged in [
            format!("{start}.99999999999.{}", &pass.cookie[head.len() + 1..]),
            format!("{head}."),
            format!("{}.x", pass.cookie),
            pass.cookie.replacen("anon.", "anon.A", 1),
            String::new(),
            pass.csrf.clone(),
        ] {
            assert_eq!(signer.verify(&forged, now), None, "{forged}");
        }
    }
}
