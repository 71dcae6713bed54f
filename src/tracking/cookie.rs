//! The tracking cookie: finding the client's ID in a request and the
//! `Set-Cookie` value that hands it (back) out.
//!
//! The value is the ID, `.` and a MAC of the ID under the server's secret
//! (see [`crate::tracking::secret`]): a value whose MAC does not verify, such
//! as a well-formed ID a client made up or a bare ID from before MACs, is
//! replaced like any malformed one and never logged.
//!
//! This runs on every public response, so the `Set-Cookie` value is rendered by
//! the `cookie` crate once, at startup, around a placeholder value; per request
//! only the 42-byte value is spliced in. Reading does not allocate at all.

use std::fmt;

use crate::tracking::id::TrackingId;
use crate::tracking::secret::{TrackingKeys, VALUE_LEN};

/// How long a browser keeps the cookie: two years, renewed on every visit.
pub const MAX_AGE_SECS: i64 = 63_072_000;

/// The default cookie name.
pub const DEFAULT_NAME: &str = "qrtag";

/// A cookie name that needs no quoting anywhere: an RFC 6265 token.
#[derive(Clone, PartialEq, Eq)]
pub struct CookieName(Box<str>);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a cookie name must be 1 to 64 characters from A-Z a-z 0-9 and !#$%&'*+-.^_`|~: {0:?}")]
pub struct InvalidCookieName(pub String);

impl CookieName {
    pub fn parse(s: &str) -> Result<Self, InvalidCookieName> {
        let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
        if s.is_empty() || s.len() > 64 || !s.bytes().all(token) {
            return Err(InvalidCookieName(s.to_owned()));
        }
        Ok(Self(s.into()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for CookieName {
    fn default() -> Self {
        Self(DEFAULT_NAME.into())
    }
}

impl std::str::FromStr for CookieName {
    type Err = InvalidCookieName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for CookieName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for CookieName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CookieName({})", self.0)
    }
}

/// What a request presented under our cookie name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presented {
    /// No cookie of ours.
    Absent,
    /// At least one cookie of ours, none an ID with a MAC that verifies: it is
    /// replaced, and its value goes nowhere (not the log, not the response).
    Invalid,
    Valid(TrackingId),
}

impl Presented {
    /// The ID this response hands out: the client's own, or a fresh one.
    pub fn id_to_send(self) -> TrackingId {
        self.id_to_send_at(chrono::Utc::now().timestamp_millis())
    }

    /// [`id_to_send`](Self::id_to_send), a fresh one made for `now_millis`.
    pub fn id_to_send_at(self, now_millis: i64) -> TrackingId {
        match self {
            Presented::Valid(id) => id,
            Presented::Absent | Presented::Invalid => TrackingId::generate_now(now_millis),
        }
    }
}

/// The cookie as configured, with its `Set-Cookie` value pre-rendered.
#[derive(Debug, Clone)]
pub struct TrackingCookie {
    name: CookieName,
    /// Signs the IDs handed out and verifies the ones presented.
    keys: TrackingKeys,
    /// `name=` as the cookie crate renders it.
    prefix: Box<[u8]>,
    /// Everything after the value: `; HttpOnly; SameSite=Lax; ...`.
    suffix: Box<[u8]>,
}

impl TrackingCookie {
    /// `secure` adds the `Secure` attribute; pass whether the public URL is https.
    pub fn new(name: CookieName, secure: bool, keys: TrackingKeys) -> Self {
        const PLACEHOLDER: &str = "0000000000000000000.AAAAAAAAAAAAAAAAAAAAAA";
        const _: () = assert!(PLACEHOLDER.len() == VALUE_LEN);
        let rendered = render_with_cookie_crate(&name, PLACEHOLDER, secure);
        // The crate renders `name=value` first and does not quote a token
        // value; the tests pin that, so this split cannot miss.
        let head = format!("{name}={PLACEHOLDER}");
        let suffix = rendered
            .strip_prefix(&head)
            .expect("the cookie crate renders name=value first");
        Self {
            prefix: format!("{name}=").into_bytes().into(),
            suffix: suffix.as_bytes().into(),
            name,
            keys,
        }
    }

    pub fn name(&self) -> &CookieName {
        &self.name
    }

    /// Looks through every `Cookie` header value (browsers send one, HTTP/2
    /// clients may split it) for cookies with our name. If several are there
    /// (say one set for a parent domain), the first valid one wins; valid
    /// means its MAC verifies under one of the secrets.
    pub fn find<'a>(&self, cookie_headers: impl IntoIterator<Item = &'a [u8]>) -> Presented {
        self.find_signed(cookie_headers).0
    }

    /// The ID this response hands out (the client's own, or a fresh one for
    /// `now_millis`), with its `Set-Cookie` value appended to `out`. A cookie the current
    /// secret signed goes back as it came: signing its ID again would give
    /// the same bytes, at the cost of two SHA-256 blocks per returning scan.
    pub fn respond<'a>(
        &self,
        cookie_headers: impl IntoIterator<Item = &'a [u8]>,
        now_millis: i64,
        out: &mut Vec<u8>,
    ) -> TrackingId {
        let (presented, signed) = self.find_signed(cookie_headers);
        let id = presented.id_to_send_at(now_millis);
        match signed {
            Some(value) => {
                out.reserve(self.set_cookie_len());
                out.extend_from_slice(&self.prefix);
                out.extend_from_slice(value);
                out.extend_from_slice(&self.suffix);
            }
            None => self.write_set_cookie(&id, out),
        }
        id
    }

    /// [`find`](Self::find), and the value itself when the current secret
    /// signed it.
    fn find_signed<'a>(
        &self,
        cookie_headers: impl IntoIterator<Item = &'a [u8]>,
    ) -> (Presented, Option<&'a [u8]>) {
        let name = self.name.as_str().as_bytes();
        let mut found = Presented::Absent;
        for header in cookie_headers {
            for pair in pairs(header) {
                let pair = pair.trim_ascii();
                let Some(eq) = pair.iter().position(|&b| b == b'=') else {
                    continue;
                };
                if pair[..eq].trim_ascii_end() != name {
                    continue;
                }
                let value = pair[eq + 1..].trim_ascii_start();
                match self.keys.check(value) {
                    Some(v) => return (Presented::Valid(v.id), v.current.then_some(value)),
                    None => found = Presented::Invalid,
                }
            }
        }
        (found, None)
    }

    /// Appends the `Set-Cookie` value for `id`, signed, to `out`.
    pub fn write_set_cookie(&self, id: &TrackingId, out: &mut Vec<u8>) {
        out.reserve(self.set_cookie_len());
        out.extend_from_slice(&self.prefix);
        self.keys.write_value(id, out);
        out.extend_from_slice(&self.suffix);
    }

    /// Length of every `Set-Cookie` value, so callers can allocate once.
    pub fn set_cookie_len(&self) -> usize {
        self.prefix.len() + VALUE_LEN + self.suffix.len()
    }

    /// The cookie value (ID and MAC) this server hands out for `id`.
    pub fn value(&self, id: &TrackingId) -> String {
        self.keys.value(id)
    }
}

/// The `;`-separated parts of a `Cookie` header, as `split` gives them,
/// found with `memchr`: splitting a byte at a time cost about 300
/// instructions for one cookie of ours (issue 24).
fn pairs(header: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = Some(header);
    std::iter::from_fn(move || {
        let r = rest?;
        match memchr::memchr(b';', r) {
            Some(i) => {
                rest = Some(&r[i + 1..]);
                Some(&r[..i])
            }
            None => {
                rest = None;
                Some(r)
            }
        }
    })
}

/// The reference rendering; [`TrackingCookie::write_set_cookie`] must equal it.
fn render_with_cookie_crate(name: &CookieName, value: &str, secure: bool) -> String {
    let mut builder = cookie::Cookie::build((name.as_str(), value))
        .path("/")
        .max_age(cookie::time::Duration::seconds(MAX_AGE_SECS))
        .http_only(true)
        .same_site(cookie::SameSite::Lax);
    if secure {
        builder = builder.secure(true);
    }
    builder.build().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "0Vh3kY2s4fLq9ZxA01b";

    fn keys() -> TrackingKeys {
        TrackingKeys::from_secrets(&[[7; 32]]).expect("a secret")
    }

    fn cookie(name: &str, secure: bool) -> TrackingCookie {
        TrackingCookie::new(CookieName::parse(name).expect("test name"), secure, keys())
    }

    /// The signed value of the test ID.
    fn signed() -> String {
        keys().value(&id(ID))
    }

    fn find(c: &TrackingCookie, headers: &[&[u8]]) -> Presented {
        c.find(headers.iter().copied())
    }

    fn id(s: &str) -> TrackingId {
        TrackingId::parse(s).expect("test ID")
    }

    proptest::proptest! {
        #[test]
        fn pairs_split_as_split_does(header in proptest::collection::vec(
            proptest::sample::select(b"ab; =".to_vec()), 0..30)) {
            let ours: Vec<&[u8]> = pairs(&header).collect();
            let split: Vec<&[u8]> = header.split(|&b| b == b';').collect();
            proptest::prop_assert_eq!(ours, split);
        }
    }

    #[test]
    fn set_cookie_has_every_attribute() {
        let c = cookie("qrtag", false);
        let mut out = Vec::new();
        c.write_set_cookie(&id(ID), &mut out);
        let s = String::from_utf8(out).expect("ASCII");
        let parsed = cookie::Cookie::parse(s.as_str()).expect("crate parses it");
        assert_eq!(parsed.name(), "qrtag");
        assert_eq!(parsed.value(), signed());
        assert_eq!(parsed.path(), Some("/"));
        assert_eq!(
            parsed.max_age(),
            Some(cookie::time::Duration::seconds(63_072_000))
        );
        assert_eq!(parsed.http_only(), Some(true));
        assert_eq!(parsed.same_site(), Some(cookie::SameSite::Lax));
        assert_eq!(parsed.secure(), None);
        assert!(!s.contains("Secure"));
        assert!(!s.contains("Expires"), "Max-Age alone: {s}");
        assert_eq!(s.len(), c.set_cookie_len());
    }

    #[test]
    fn secure_only_for_https() {
        let c = cookie("tid", true);
        let mut out = Vec::new();
        c.write_set_cookie(&id(ID), &mut out);
        let s = String::from_utf8(out).expect("ASCII");
        let parsed = cookie::Cookie::parse(s.as_str()).expect("crate parses it");
        assert_eq!(parsed.name(), "tid");
        assert_eq!(parsed.secure(), Some(true));
    }

    #[test]
    fn spliced_value_equals_the_crate_rendering() {
        for (name, secure) in [("qrtag", false), ("qrtag", true), ("a.b-c_d", false)] {
            let c = cookie(name, secure);
            for _ in 0..20 {
                let id = TrackingId::generate();
                let mut out = Vec::new();
                c.write_set_cookie(&id, &mut out);
                let expected = render_with_cookie_crate(c.name(), &c.value(&id), secure);
                assert_eq!(String::from_utf8(out).as_deref(), Ok(expected.as_str()));
            }
        }
    }

    #[test]
    fn finds_our_cookie_among_others() {
        let c = cookie("qrtag", false);
        let valid = Presented::Valid(id(ID));
        let v = signed();
        assert_eq!(find(&c, &[]), Presented::Absent);
        assert_eq!(find(&c, &[b""]), Presented::Absent);
        assert_eq!(
            find(&c, &[b"other=1; qrtagx=2; xqrtag=3"]),
            Presented::Absent
        );
        assert_eq!(find(&c, &[format!("qrtag={v}").as_bytes()]), valid);
        assert_eq!(
            find(&c, &[format!("a=1; qrtag={v}; b=2").as_bytes()]),
            valid
        );
        assert_eq!(find(&c, &[format!("a=1;qrtag={v};b=2").as_bytes()]), valid);
        assert_eq!(
            find(&c, &[b"a=1", format!("b=2; qrtag={v}").as_bytes()]),
            valid
        );
        // Several of ours: the first valid one.
        assert_eq!(
            find(&c, &[format!("qrtag=junk; qrtag={v}").as_bytes()]),
            valid
        );
        // Names are case-sensitive.
        assert_eq!(
            find(&c, &[format!("QRTAG={v}").as_bytes()]),
            Presented::Absent
        );
        // A cookie without `=` is not ours.
        assert_eq!(find(&c, &[b"qrtag"]), Presented::Absent);
    }

    #[test]
    fn anything_but_a_signed_id_is_invalid() {
        let c = cookie("qrtag", false);
        let long = "a".repeat(500);
        let other_secret = TrackingKeys::from_secrets(&[[8; 32]]).expect("a secret");
        let v = signed();
        let forged: Vec<Vec<u8>> = vec![
            // The old format, and any well-formed ID a client makes up.
            format!("qrtag={ID}").into_bytes(),
            // Signed with another secret.
            format!("qrtag={}", other_secret.value(&id(ID))).into_bytes(),
            // Tampered: the MAC of one ID on another.
            format!("qrtag=1{}", &v[1..]).into_bytes(),
            format!("qrtag={v}x").into_bytes(),
            format!("qrtag=\"{v}\"").into_bytes(),
            b"qrtag=".to_vec(),
            b"qrtag=-".to_vec(),
            b"qrtag=0Vh3kY2s4fLq9ZxA01".to_vec(),
            b"qrtag=0Vh3kY2s4fLq9ZxA01bb".to_vec(),
            b"qrtag=0Vh3kY2s4 Lq9ZxA01b".to_vec(),
            b"qrtag=0Vh3kY2s4fLq9ZxA01b x".to_vec(),
            b"qrtag=0Vh3kY2s4\nLq9ZxA01b".to_vec(),
            b"qrtag=0Vh3kY2s4\x01Lq9ZxA01b".to_vec(),
            b"qrtag=\"0Vh3kY2s4fLq9ZxA01b\"".to_vec(),
            b"qrtag=0Vh3kY2s4fLq9ZxA0%62".to_vec(),
            b"qrtag=0Vh3kY2s4fLq9ZxA0\xc3\xa9".to_vec(),
            b"qrtag=0Vh3kY2s4fLq9ZxA01\xff".to_vec(),
            format!("qrtag={long}").into_bytes(),
        ];
        for f in &forged {
            assert_eq!(
                find(&c, &[f.as_slice()]),
                Presented::Invalid,
                "{:?} accepted",
                String::from_utf8_lossy(f)
            );
        }
    }

    #[test]
    fn ids_to_send() {
        let valid = id(ID);
        assert_eq!(Presented::Valid(valid).id_to_send(), valid);
        let a = Presented::Absent.id_to_send();
        let b = Presented::Invalid.id_to_send();
        assert_ne!(a, b);
        assert_ne!(a, valid);
    }

    #[test]
    fn an_old_secret_verifies_during_a_rotation_and_the_new_one_signs() {
        let old = TrackingKeys::from_secrets(&[[7; 32]]).expect("a secret");
        let rotated = TrackingCookie::new(
            CookieName::default(),
            false,
            TrackingKeys::from_secrets(&[[9; 32], [7; 32]]).expect("secrets"),
        );
        let from_old = format!("qrtag={}", old.value(&id(ID)));
        assert_eq!(
            find(&rotated, &[from_old.as_bytes()]),
            Presented::Valid(id(ID))
        );
        let mut out = Vec::new();
        rotated.write_set_cookie(&id(ID), &mut out);
        let s = String::from_utf8(out).expect("ASCII");
        assert!(
            !s.contains(&old.value(&id(ID))),
            "signed with the new one: {s}"
        );
        assert!(s.starts_with(&format!("qrtag={ID}.")), "{s}");
    }

    /// What [`TrackingCookie::respond`] gives for `headers`: the ID and
    /// the `Set-Cookie` value.
    fn respond(c: &TrackingCookie, headers: &[&[u8]]) -> (TrackingId, String) {
        let mut out = Vec::new();
        let now = chrono::Utc::now().timestamp_millis();
        let id = c.respond(headers.iter().copied(), now, &mut out);
        (id, String::from_utf8(out).expect("ASCII"))
    }

    /// The `Set-Cookie` value signing `id` afresh gives.
    fn signed_set_cookie(c: &TrackingCookie, id: &TrackingId) -> String {
        let mut out = Vec::new();
        c.write_set_cookie(id, &mut out);
        String::from_utf8(out).expect("ASCII")
    }

    #[test]
    fn respond_gives_what_find_and_signing_give() {
        let c = cookie("qrtag", true);
        let current = format!("qrtag={}", signed());
        // Sent back as it came: the same bytes as signing the ID again.
        assert_eq!(
            respond(&c, &[b"a=1", current.as_bytes()]),
            (id(ID), signed_set_cookie(&c, &id(ID)))
        );
        for absent_or_invalid in [&b"a=1"[..], b"qrtag=0Vh3kY2s4fLq9ZxA01b", b""] {
            let (fresh, set) = respond(&c, &[absent_or_invalid]);
            assert_ne!(fresh, id(ID));
            assert_eq!(set, signed_set_cookie(&c, &fresh));
        }
        // A value from an older secret is signed anew with the current one.
        let rotated = TrackingCookie::new(
            CookieName::default(),
            false,
            TrackingKeys::from_secrets(&[[9; 32], [7; 32]]).expect("secrets"),
        );
        let (again, set) = respond(&rotated, &[current.as_bytes()]);
        assert_eq!(again, id(ID));
        assert_eq!(set, signed_set_cookie(&rotated, &id(ID)));
        assert!(!set.contains(&signed()), "signed with the new one: {set}");
    }

    #[test]
    fn cookie_names_are_tokens() {
        assert!(CookieName::parse("qrtag").is_ok());
        assert!(CookieName::parse("__Host-qrtag").is_ok());
        for bad in ["", "a b", "a=b", "a;b", "é", "a\"b", "a,b", &"x".repeat(65)] {
            assert!(CookieName::parse(bad).is_err(), "{bad:?} accepted");
        }
    }
}
