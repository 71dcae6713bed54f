//! Issue 35 (i35-users): invitations to the embedded store's accounts
//! (pure). `qrtag user add` and `user reset`, or an admin on the console's
//! users page, make one; the person opens its link and chooses their
//! password there, as the first-run setup link lets the first admin do.
//!
//! The token is 256 random bits shown once; only its SHA-256 is stored
//! (a copy of the database is worth no account), it works once, and it
//! expires after [`LIFETIME`].

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};

use super::pages::BASE;
use super::session::random_token;
use crate::store::sqlite::users::InvitationRecord;

/// How long an invitation may be used: seven days.
pub const LIFETIME: chrono::TimeDelta = chrono::TimeDelta::days(7);

/// The invitation page, under the console.
pub const PATH: &str = "/invite";

/// The query parameter and form field that carry the token.
pub const TOKEN_FIELD: &str = "token";

/// A new invitation: the token for the link (shown once, never stored)
/// and what is stored.
pub struct NewInvitation {
    pub token: String,
    pub record: InvitationRecord,
}

impl NewInvitation {
    pub fn generate(now: DateTime<Utc>) -> Self {
        let token = random_token();
        let record = InvitationRecord {
            token_hash: token_hash(&token),
            expires_at: now + LIFETIME,
        };
        Self { token, record }
    }
}

/// What is stored of a token: its SHA-256 in hex. A fast hash is enough:
/// the token is random and long, so there is nothing to guess from it.
pub fn token_hash(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The console's origin as the setup link names it: the admin listener's
/// address, a wildcard one as loopback.
pub fn origin_of(admin: SocketAddr) -> String {
    let ip = match admin.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    format!("http://{}", SocketAddr::new(ip, admin.port()))
}

/// The link to give the person, by one rule for `qrtag user add`/`reset`
/// and the users page alike: the configured console URL (`--console-url`)
/// when there is one, since behind a proxy it is the only address the
/// person can reach; otherwise `reached`, the console's origin as the
/// admin's browser reached it (the page) or as `serve` binds it (the CLI's
/// `--admin-listen`).
pub fn link(
    console_url: Option<&url::Url>,
    reached: impl FnOnce() -> String,
    token: &str,
) -> String {
    match console_url {
        Some(configured) => url(configured.as_str(), token),
        None => url(&reached(), token),
    }
}

/// The link to give the person: `origin` (`http://host:port`, or the
/// console's address behind a proxy), then the invitation page.
pub fn url(origin: &str, token: &str) -> String {
    let query: String = form_urlencoded::Serializer::new(String::new())
        .append_pair(TOKEN_FIELD, token)
        .finish();
    format!("{}{BASE}{PATH}?{query}", origin.trim_end_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_hash_is_kept_and_the_link_carries_the_token() {
        let now = Utc::now();
        let a = NewInvitation::generate(now);
        let b = NewInvitation::generate(now);
        assert_ne!(a.token, b.token);
        assert_eq!(a.record.token_hash, token_hash(&a.token));
        assert_eq!(a.record.token_hash.len(), 64);
        assert!(!a.record.token_hash.contains(&a.token));
        assert_eq!(a.record.expires_at - now, chrono::TimeDelta::days(7));
        let bound: SocketAddr = "0.0.0.0:8081".parse().expect("addr");
        assert_eq!(
            url(&origin_of(bound), "t+k"),
            "http://127.0.0.1:8081/console/invite?token=t%2Bk"
        );
        assert_eq!(
            url("https://console.example/", "t"),
            "https://console.example/console/invite?token=t"
        );
    }
}
