//! The first-run setup link: on the embedded store with no console password
//! yet, `qrtag serve --console` prints a link holding a one-time token, and
//! whoever opens it chooses the password. A newcomer then needs no second
//! terminal, and on a shared machine only the person who sees the server's
//! terminal can claim the console.
//!
//! A token in a URL ends up in browser history, so it is worth nothing
//! once used: it is held in memory only (never stored, never logged), is
//! consumed by the first password set through it, and is closed as soon as
//! any password is found set (`qrtag console-password` in another process
//! included; the handlers check the `meta` row on every use). This module
//! is the token's logic alone: no store, no request.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Mutex;

use subtle::ConstantTimeEq;

use super::pages::BASE;
use super::password::MIN_LEN;

/// The query parameter and form field that carry the token.
pub const TOKEN_FIELD: &str = "token";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SetupError {
    /// No token pending: used, closed by a password set meanwhile, or never
    /// made (a password was set at start).
    #[error(
        "this setup link was used already, or a console password has been set: log in instead \
         (to reset a forgotten password, run qrtag console-password on the server)"
    )]
    Closed,
    #[error(
        "this setup link is not valid: use the link qrtag serve --console printed in its \
         terminal (it starts with …{BASE}/setup?token=), or run qrtag console-password on the server"
    )]
    WrongToken,
    #[error("the two passwords differ; type the same one twice")]
    Mismatch,
    #[error("a console password has at least {MIN_LEN} characters")]
    TooShort,
}

/// The one-time token, or nothing once it is spent or closed (and by
/// default: only startup offers a link, through [`offer`](Self::offer)).
#[derive(Default)]
pub struct SetupLink {
    token: Mutex<Option<String>>,
}

impl std::fmt::Debug for SetupLink {
    /// Says whether a token is pending, never the token.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SetupLink")
            .field("pending", &self.is_pending())
            .finish()
    }
}

impl SetupLink {
    /// Makes the link accept `token` once (`session::random_token`: 256
    /// bits). Called at startup only, when no password is set.
    pub fn offer(&self, token: String) {
        if let Ok(mut t) = self.token.lock() {
            *t = Some(token);
        }
    }

    pub fn is_pending(&self) -> bool {
        self.token.lock().is_ok_and(|t| t.is_some())
    }

    /// Whether `given` is the pending token, compared in constant time.
    pub fn check(&self, given: Option<&str>) -> Result<(), SetupError> {
        let guard = self.token.lock().map_err(|_| SetupError::Closed)?;
        let Some(token) = guard.as_deref() else {
            return Err(SetupError::Closed);
        };
        match given {
            Some(given) if bool::from(token.as_bytes().ct_eq(given.as_bytes())) => Ok(()),
            _ => Err(SetupError::WrongToken),
        }
    }

    /// Spends the token if `given` is it; after this every check says
    /// [`SetupError::Closed`].
    pub fn consume(&self, given: Option<&str>) -> Result<(), SetupError> {
        self.check(given)?;
        self.close();
        Ok(())
    }

    /// Closes the link whatever its token: a password is set.
    pub fn close(&self) {
        if let Ok(mut t) = self.token.lock() {
            *t = None;
        }
    }
}

/// What a chosen password must be: typed the same twice, and long enough.
pub fn check_passwords(first: &str, again: &str) -> Result<(), SetupError> {
    if first != again {
        return Err(SetupError::Mismatch);
    }
    if first.chars().count() < MIN_LEN {
        return Err(SetupError::TooShort);
    }
    Ok(())
}

/// The link to print: the admin listener's bound address (a wildcard one
/// becomes loopback, which a browser on the same machine can open).
pub fn url(admin: SocketAddr, token: &str) -> String {
    let ip = match admin.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    let query: String = form_urlencoded::Serializer::new(String::new())
        .append_pair(TOKEN_FIELD, token)
        .finish();
    format!(
        "http://{}{BASE}/setup?{query}",
        SocketAddr::new(ip, admin.port())
    )
}

/// The line that carries the link, kept whole on one line so a script (or a
/// test) finds it by its start.
pub fn announcement(url: &str) -> String {
    format!(
        "console: first-time setup at {url}  (the link works once; or run qrtag console-password)"
    )
}

/// What `qrtag serve --console` prints last of its start: the
/// [`announcement`] between a blank line and a rule above and below, so a
/// person finds it among the log lines of the start.
pub fn framed(url: &str) -> String {
    let line = announcement(url);
    let rule = "=".repeat(line.chars().count());
    format!("\n{rule}\n{line}\n{rule}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_works_once_and_only_itself() {
        let link = SetupLink::default();
        assert!(!link.is_pending());
        assert_eq!(link.check(Some("")), Err(SetupError::Closed));
        link.offer("s3cret-token".into());
        assert!(link.is_pending());
        assert_eq!(link.check(None), Err(SetupError::WrongToken));
        assert_eq!(link.check(Some("")), Err(SetupError::WrongToken));
        assert_eq!(link.check(Some("s3cret-toke")), Err(SetupError::WrongToken));
        assert_eq!(
            link.check(Some("s3cret-token ")),
            Err(SetupError::WrongToken)
        );
        assert_eq!(link.consume(Some("wrong")), Err(SetupError::WrongToken));
        assert!(link.is_pending(), "a wrong try spends nothing");
        assert_eq!(link.check(Some("s3cret-token")), Ok(()));
        assert_eq!(link.consume(Some("s3cret-token")), Ok(()));
        assert!(!link.is_pending());
        assert_eq!(link.check(Some("s3cret-token")), Err(SetupError::Closed));
        assert_eq!(link.consume(Some("s3cret-token")), Err(SetupError::Closed));
    }

    #[test]
    fn closing_kills_the_token_and_debug_hides_it() {
        let link = SetupLink::default();
        link.offer("s3cret-token".into());
        assert!(!format!("{link:?}").contains("s3cret"), "{link:?}");
        link.close();
        assert_eq!(link.check(Some("s3cret-token")), Err(SetupError::Closed));
    }

    #[test]
    fn passwords_must_match_and_be_long_enough() {
        assert_eq!(check_passwords("long-enough-1", "long-enough-1"), Ok(()));
        assert_eq!(
            check_passwords("long-enough-1", "long-enough-2"),
            Err(SetupError::Mismatch)
        );
        let short = "x".repeat(MIN_LEN - 1);
        assert_eq!(check_passwords(&short, &short), Err(SetupError::TooShort));
        // Characters, not bytes: nine two-byte letters are still too short.
        let nine = "é".repeat(MIN_LEN - 1);
        assert_eq!(check_passwords(&nine, &nine), Err(SetupError::TooShort));
    }

    #[test]
    fn the_url_is_the_bound_address_and_a_wildcard_becomes_loopback() {
        for (bound, token, link) in [
            (
                "127.0.0.1:41234",
                "abc-_9",
                "http://127.0.0.1:41234/console/setup?token=abc-_9",
            ),
            (
                "0.0.0.0:8081",
                "t",
                "http://127.0.0.1:8081/console/setup?token=t",
            ),
            ("[::]:8081", "t", "http://[::1]:8081/console/setup?token=t"),
            (
                "[fd00::1]:8081",
                "a b",
                "http://[fd00::1]:8081/console/setup?token=a+b",
            ),
        ] {
            let bound: SocketAddr = bound.parse().expect("addr");
            assert_eq!(url(bound, token), link);
        }
        let line = announcement("http://x/console/setup?token=t");
        assert!(
            line.starts_with("console: first-time setup at http://x/"),
            "{line}"
        );
        let framed = framed("http://x/console/setup?token=t");
        let rule = "=".repeat(line.len());
        assert_eq!(framed, format!("\n{rule}\n{line}\n{rule}\n"));
    }
}
