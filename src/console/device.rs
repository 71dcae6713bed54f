//! Device cookies (OWASP's defence against exactly the lock-out the
//! per-address limit causes): a browser that has logged in before carries
//! a signed cookie naming the user it logged in as, and its login attempts
//! for that user are counted against the cookie, not against its address.
//!
//! Behind a TLS proxy or an SSH tunnel every visitor can share one address,
//! so five wrong passwords a minute from anyone would otherwise lock the
//! owner out for good; with a device cookie the owner's browser has a limit
//! of its own that a stranger cannot spend. The cookie proves nothing but
//! an earlier login: it is never a session, grants no access, and a stolen
//! one still gets only [`crate::console::limiter::PER_ADDRESS`] tries a
//! minute.
//!
//! The key is derived from the tracking secret file when the service has
//! one (so the cookie survives restarts and works on every node that shares
//! the file), otherwise it is per process.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

/// The cookie's name.
pub const COOKIE: &str = "qrtag_device";

/// How long a device stays known after its last login.
pub const LIFETIME: Duration = Duration::from_secs(180 * 24 * 3600);

/// What the tracking secret is keyed with to give this cookie's key (at
/// most 55 bytes: [`crate::tracking::secret::TrackingKeys::derived_key`]).
pub const KEY_PURPOSE: &[u8] = b"qrtag console device cookie v1";

/// What starts every value, so a later format can be told apart.
const VERSION: &str = "d1";

/// The random part of a cookie: what the limiter counts a device's
/// attempts against.
pub type DeviceId = [u8; 16];

pub struct DeviceKeys {
    key: [u8; 32],
}

impl DeviceKeys {
    pub fn new(key: [u8; 32]) -> Self {
        Self { key }
    }

    /// A key for this process only: a restart forgets every device.
    pub fn per_process() -> Self {
        Self::new(rand::random())
    }

    fn mac(&self, user: &str, issued: &str, nonce: &str) -> Vec<u8> {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.key)
            .expect("HMAC takes a key of any length");
        for part in [VERSION, user, issued, nonce] {
            mac.update(part.as_bytes());
            mac.update(b"|");
        }
        mac.finalize().into_bytes().to_vec()
    }

    /// A new cookie value for a browser that just logged in as `user`.
    pub fn issue(&self, user: &str, now: SystemTime) -> String {
        let issued = seconds(now).to_string();
        let nonce = URL_SAFE_NO_PAD.encode(rand::random::<DeviceId>());
        let mac = URL_SAFE_NO_PAD.encode(self.mac(user, &issued, &nonce));
        format!("{VERSION}.{issued}.{nonce}.{mac}")
    }

    /// The device a cookie value names, if this service issued it for
    /// `user` and it has not expired; anything else is no device at all.
    pub fn verify(&self, value: &str, user: &str, now: SystemTime) -> Option<DeviceId> {
        let mut parts = value.split('.');
        let (Some(VERSION), Some(issued), Some(nonce), Some(mac), None) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            return None;
        };
        let given = URL_SAFE_NO_PAD.decode(mac).ok()?;
        if !bool::from(self.mac(user, issued, nonce).ct_eq(&given)) {
            return None;
        }
        let issued_at: u64 = issued.parse().ok()?;
        if seconds(now).saturating_sub(issued_at) >= LIFETIME.as_secs() {
            return None;
        }
        URL_SAFE_NO_PAD.decode(nonce).ok()?.try_into().ok()
    }
}

fn seconds(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cookie_names_its_device_for_its_user_only_until_it_expires() {
        let keys = DeviceKeys::new([7; 32]);
        let now = SystemTime::now();
        let value = keys.issue("admin", now);
        let device = keys.verify(&value, "admin", now).expect("verifies");
        assert_eq!(
            keys.verify(&value, "admin", now + LIFETIME / 2),
            Some(device)
        );
        assert_eq!(keys.verify(&value, "alice", now), None, "another user");
        assert_eq!(
            keys.verify(&value, "admin", now + LIFETIME),
            None,
            "expired"
        );
        let other = DeviceKeys::new([8; 32]);
        assert_eq!(other.verify(&value, "admin", now), None, "another key");
        assert_ne!(
            keys.verify(&keys.issue("admin", now), "admin", now),
            Some(device),
            "each login a new device ID"
        );
    }

    #[test]
    fn altered_or_malformed_values_name_no_device() {
        let keys = DeviceKeys::new([7; 32]);
        let now = SystemTime::now();
        let value = keys.issue("admin", now);
        let parts: Vec<&str> = value.split('.').collect();
        let later = format!("d1.{}.{}.{}", seconds(now) + 10, parts[2], parts[3]);
        for bad in [
            "",
            "d1",
            "d1...",
            "d2.1.2.3",
            later.as_str(),
            &format!("{value}.x"),
            &value[..value.len() - 1],
        ] {
            assert_eq!(keys.verify(bad, "admin", now), None, "{bad:?}");
        }
    }
}
