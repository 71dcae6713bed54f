//! Where a link points: an absolute http(s) URL, or an origin-relative path
//! (an internal redirect, resolved again on the service's own origin).

use std::fmt;

/// A destination that the resolver can follow without surprises. Anything that
/// could turn into an open redirect or a script (`//host`, `/\host`,
/// `javascript:`) is refused here, at the edge, rather than on every request.
///
/// A destination is also refused when a person reading it could be fooled
/// about where a scan goes: userinfo (`https://bank.example:443@evil.example/`
/// goes to `evil.example`), dot segments in an internal path (`/..//evil`
/// normalises to `//evil`), and a host not written the way it is served
/// (full-width letters, Unicode labels, percent-escapes): the text stored,
/// shown by `qrtag show` and printed next to a tag is then always the host
/// that scans reach. Refusing, with the served spelling in the message, is
/// kinder than normalising silently: the person sees what will be served
/// before printing it. Capital ASCII letters are the exception (issue 31):
/// everyone knows hosts are case-insensitive, so the host is stored in
/// lower case, as URL parsers serve it, and [`Destination::host_lowered`]
/// tells the writer to say so.
#[derive(Clone)]
pub struct Destination {
    raw: String,
    internal: bool,
    /// The host was written with capitals and is stored in lower case.
    lowered: bool,
}

/// Two destinations are equal by their stored text, however written.
impl PartialEq for Destination {
    fn eq(&self, other: &Self) -> bool {
        (&self.raw, self.internal) == (&other.raw, other.internal)
    }
}

impl Eq for Destination {}

impl std::hash::Hash for Destination {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (&self.raw, self.internal).hash(state);
    }
}

/// Longest destination, in bytes: 8 KiB, what the common web servers
/// take as a whole request line (Apache's `LimitRequestLine` 8190, nginx's
/// `large_client_header_buffers` 8k), so a longer URL would be refused by
/// the server a scan is sent to anyway. Every stored destination is held
/// in memory, written into every list page and sent in every redirect's
/// `Location`: unbounded, one write key could make each of those megabytes
/// (issue 30). `assets/couchdb/validate_doc_update.js` keeps the same cap.
pub const MAX_DESTINATION: usize = 8192;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidDestination {
    #[error("a destination must not be empty")]
    Empty,
    // The text itself is not echoed: it may be megabytes.
    #[error(
        "a destination may be at most {MAX_DESTINATION} bytes (longer URLs are refused by \
         web servers), not {0}"
    )]
    TooLong(usize),
    #[error("a destination must not contain spaces or control characters: {0:?}")]
    Whitespace(String),
    #[error("a destination must not contain a backslash: {0:?}")]
    Backslash(String),
    #[error("a destination path must start with exactly one '/': {0:?}")]
    NotOriginRelative(String),
    #[error("a destination path must not contain '.' or '..' segments: {0:?}")]
    DotSegment(String),
    #[error("not an absolute http(s) URL with a host: {0:?}")]
    NotHttp(String),
    #[error("a fallback must be an absolute http(s) URL (https://...), not a path: {0:?}")]
    NotAbsolute(String),
    #[error(
        "a destination must not contain a user name or password (an '@' before the host): {0:?}"
    )]
    Userinfo(String),
    #[error(
        "a destination must not contain invisible or text-direction characters \
         (U+{codepoint:04X}): they make a URL read differently from where it goes; \
         percent-encode it if it is meant: {given:?}"
    )]
    Invisible { given: String, codepoint: u32 },
    #[error(
        "the port of {given:?} must be written as it is served (a number without \
         leading zeros, or none); did you mean {suggestion}"
    )]
    PortNotServedForm { given: String, suggestion: String },
    #[error("the host of {given:?} is served as {served:?}; did you mean {suggestion}")]
    HostNotServedForm {
        given: String,
        served: String,
        suggestion: String,
    },
}

impl Destination {
    pub fn parse(s: &str) -> Result<Self, InvalidDestination> {
        // The common shape (what qrtag stores for nearly every link) is
        // judged without the URL parser: a million of them on a full load
        // or a restart cost most of its CPU there (issue 24).
        if is_plain_absolute(s) {
            return Ok(Self {
                raw: s.to_owned(),
                internal: false,
                lowered: false,
            });
        }
        Self::parse_in_full(s)
    }

    /// [`Destination::parse`] without its shortcut: every check, and the
    /// URL parser for an absolute URL. The property test holds the shortcut
    /// to it.
    pub(crate) fn parse_in_full(s: &str) -> Result<Self, InvalidDestination> {
        if s.is_empty() {
            return Err(InvalidDestination::Empty);
        }
        if s.len() > MAX_DESTINATION {
            return Err(InvalidDestination::TooLong(s.len()));
        }
        // URL parsers drop tabs and newlines anywhere, so `https://ev\til.example`
        // would be read as `evil.example`: refused with every other control.
        if s.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(InvalidDestination::Whitespace(s.to_owned()));
        }
        // Bidirectional overrides reorder what a reader sees (`/\u{202E}fdp.exe`
        // shows as `/exe.pdf`), and zero-width characters hide in plain
        // sight; the console and `list` show a destination as stored.
        if let Some(c) = s.chars().find(|&c| is_invisible(c)) {
            return Err(InvalidDestination::Invisible {
                given: s.to_owned(),
                codepoint: u32::from(c),
            });
        }
        // WHATWG parsers read `\` as `/` in http(s) URLs (`/\host` is `//host`,
        // `https://a.example\@evil.example` ends the host at the `\`). It is
        // never needed unescaped, so it is refused everywhere.
        if s.contains('\\') {
            return Err(InvalidDestination::Backslash(s.to_owned()));
        }
        if let Some(rest) = s.strip_prefix('/') {
            if rest.starts_with('/') {
                return Err(InvalidDestination::NotOriginRelative(s.to_owned()));
            }
            // With no dot segments a path starting with one '/' stays that
            // way under normalisation, so it can never become `//host`.
            if has_dot_segment(s) {
                return Err(InvalidDestination::DotSegment(s.to_owned()));
            }
            return Ok(Self {
                raw: s.to_owned(),
                internal: true,
                lowered: false,
            });
        }
        // The resolver tells absolute values by their first four bytes being
        // "http", so the scheme must be spelled in lower case to be followed.
        // `https:///x` is read by WHATWG parsers as host `x`: refuse such
        // spellings rather than guess what was meant.
        let Some((scheme, after)) = ["http://", "https://"]
            .iter()
            .find_map(|p| s.strip_prefix(p).map(|rest| (*p, rest)))
            .filter(|(_, rest)| !rest.starts_with('/'))
        else {
            return Err(InvalidDestination::NotHttp(s.to_owned()));
        };
        let authority_len = after.find(['/', '?', '#']).unwrap_or(after.len());
        let authority = &after[..authority_len];
        if authority.contains('@') {
            return Err(InvalidDestination::Userinfo(s.to_owned()));
        }
        let url = match url::Url::parse(s) {
            Ok(u) => u,
            Err(_) => return Err(InvalidDestination::NotHttp(s.to_owned())),
        };
        let served = match url.host_str() {
            Some(h) if !h.is_empty() => h,
            _ => return Err(InvalidDestination::NotHttp(s.to_owned())),
        };
        let written = host_of_authority(authority);
        if written != served && written.to_ascii_lowercase() == served {
            // Only capitals differ: the same text with the host in lower
            // case, judged again (it now passes the host check).
            let start = s.len() - after.len();
            let lowered = format!("{}{served}{}", &s[..start], &after[written.len()..]);
            return Self::parse_in_full(&lowered).map(|d| Self { lowered: true, ..d });
        }
        if written != served {
            let rest = &after[written.len()..];
            let slash = if rest.is_empty() { "/" } else { "" };
            return Err(InvalidDestination::HostNotServedForm {
                given: s.to_owned(),
                served: served.to_owned(),
                suggestion: format!("{scheme}{served}{rest}{slash}"),
            });
        }
        // `:0443` and a bare `:` are served as `:443` and no port: the text
        // would not be the address scans reach.
        let port = &authority[written.len()..];
        let port_as_served = match port.strip_prefix(':') {
            None => port.is_empty(),
            Some(digits) => {
                !digits.starts_with('0')
                    && digits.parse::<u16>().ok() == url.port_or_known_default()
            }
        };
        if !port_as_served {
            let rest = &after[authority.len()..];
            let slash = if rest.is_empty() { "/" } else { "" };
            let port = url.port().map(|p| format!(":{p}")).unwrap_or_default();
            return Err(InvalidDestination::PortNotServedForm {
                given: s.to_owned(),
                suggestion: format!("{scheme}{served}{port}{rest}{slash}"),
            });
        }
        Ok(Self {
            raw: s.to_owned(),
            internal: false,
            lowered: false,
        })
    }

    pub fn as_str(&self) -> &str {
        &self.raw
    }

    /// The destination's text, without a copy.
    pub fn into_string(self) -> String {
        self.raw
    }

    /// Whether the host was written with capital letters, stored in lower
    /// case: a writer tells the person which text it stored.
    pub fn host_lowered(&self) -> bool {
        self.lowered
    }

    /// The note a writer gives when [`Self::host_lowered`].
    pub fn lowered_note(&self) -> Option<String> {
        self.lowered.then(|| {
            format!(
                "hosts are case-insensitive: stored {} with its host in lower case",
                self.raw
            )
        })
    }

    /// True for an origin-relative path (an internal redirect).
    pub fn is_internal(&self) -> bool {
        self.internal
    }

    /// A link's fallback (issue 33): a destination as [`Destination::parse`]
    /// takes it, but never a path. A fallback is where a dead link's scans
    /// go instead of a 404, answered as it is without the resolver, so it
    /// must lead off the service by itself: a path would be resolved again
    /// among the links, which may be the dead link itself.
    pub fn parse_absolute(s: &str) -> Result<Self, InvalidDestination> {
        let d = Self::parse(s)?;
        if d.internal {
            return Err(InvalidDestination::NotAbsolute(s.to_owned()));
        }
        Ok(d)
    }
}

/// Whether `s` is an absolute http(s) URL that a WHATWG parser serialises
/// to exactly `s`, told by its bytes alone: a lower-case ASCII host of
/// letters, digits, hyphens and dots (no IDNA `xn--` label, not ending in a
/// number, so no IPv4 form), no port, no userinfo, a path of bytes the
/// parser leaves alone and without dot segments (no `/.`, no `%2e`), and
/// no query or a query `URLSearchParams` writes back unchanged, no
/// fragment. Such a URL passes every check of [`Destination::parse`], and
/// the redirect of a plain `/KEY` scan to it is the URL itself
/// ([`crate::redirect::policy::direct_location`]); both are property-tested
/// against the full path. Anything else (rarer shapes, and every
/// malformed text) takes the full path: `false` only costs time.
pub(crate) fn is_plain_absolute(s: &str) -> bool {
    if s.len() > MAX_DESTINATION {
        return false;
    }
    let b = s.as_bytes();
    let Some(rest) = b
        .strip_prefix(b"https://")
        .or_else(|| b.strip_prefix(b"http://"))
    else {
        return false;
    };
    // One pass over the bytes: the host's labels up to the first `/`...
    // Where the current label starts; at the `/`, the last label's start.
    let mut label_start = 0;
    let mut i = 0;
    loop {
        let Some(&c) = rest.get(i) else {
            // No path: the parser adds a `/`.
            return false;
        };
        match c {
            b'a'..=b'z' | b'0'..=b'9' | b'-' => {}
            b'.' | b'/' => {
                let label = &rest[label_start..i];
                if label.is_empty() || label.starts_with(b"xn--") {
                    return false;
                }
                if c == b'/' {
                    break;
                }
                label_start = i + 1;
            }
            _ => return false,
        }
        i += 1;
    }
    // A last label that starts with a letter is not a number (decimal or
    // `0x` hex), so the host is a domain, not an IPv4 address.
    // `direct.invalid` is the stand-in origin `direct_location` computes
    // with, under which a link there would be followed as an internal
    // redirect.
    if !rest[label_start].is_ascii_lowercase() || &rest[..i] == b"direct.invalid" {
        return false;
    }
    // ...then the path up to a `?`, from its `/` on: most bytes are told
    // by one look in a table (a full load asks this of every link, issue
    // 24); `.`, `%` and `?` look around them.
    let path = &rest[i..];
    for (j, &c) in path.iter().enumerate() {
        match PATH_CLASS[c as usize] {
            PLAIN => {}
            // A dot segment: `/.` (`path[0]` is the `/`, so `j > 0`)...
            DOT => {
                if path[j - 1] == b'/' {
                    return false;
                }
            }
            // ...or one spelled `%2e`.
            PERCENT => {
                if path.get(j + 1) == Some(&b'2')
                    && path.get(j + 2).is_some_and(|&e| e | 0x20 == b'e')
                {
                    return false;
                }
            }
            QUERY => {
                // ...and the query, which must not be empty (`?` alone is dropped).
                let query = &s[s.len() - path.len() + j + 1..];
                return !query.is_empty() && is_serialized_form(query);
            }
            _ => return false,
        }
    }
    true
}

/// What a byte of a plain path is to [`is_plain_absolute`]: one of
/// [`PLAIN_PATH`] that needs no look around it, `.`, `%`, the `?` that
/// ends the path, or refused.
const PLAIN: u8 = 0;
const DOT: u8 = 1;
const PERCENT: u8 = 2;
const QUERY: u8 = 3;
const REFUSED: u8 = 4;
const PATH_CLASS: [u8; 256] = {
    let mut table = [REFUSED; 256];
    let mut c = 0;
    while c < 256 {
        table[c] = match c as u8 {
            b'.' => DOT,
            b'%' => PERCENT,
            b'?' => QUERY,
            _ if PLAIN_PATH[c] => PLAIN,
            _ => REFUSED,
        };
        c += 1;
    }
    table
};

/// Bytes a path may hold as the URL parser writes it back unchanged:
/// letters, digits and `-._~!$&'()*+,;=:@/%`.
const PLAIN_PATH: [bool; 256] = {
    let mut table = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        table[c] = b.is_ascii_alphanumeric()
            || matches!(
                b,
                b'-' | b'.'
                    | b'_'
                    | b'~'
                    | b'!'
                    | b'$'
                    | b'&'
                    | b'\''
                    | b'('
                    | b')'
                    | b'*'
                    | b'+'
                    | b','
                    | b';'
                    | b'='
                    | b':'
                    | b'@'
                    | b'/'
                    | b'%'
            );
        c += 1;
    }
    table
};

/// Characters that change how a text reads without being seen: Unicode's
/// format characters (general category Cf: bidirectional embeddings,
/// overrides and isolates, zero-width spaces and joiners, the byte-order
/// mark, soft hyphen, tags), variation selectors and the Hangul fillers
/// that render as blanks. `validate_doc_update.js` refuses the same set.
fn is_invisible(c: char) -> bool {
    matches!(
        u32::from(c),
        0x00AD
            | 0x034F
            | 0x061C
            | 0x115F..=0x1160
            | 0x17B4..=0x17B5
            | 0x180B..=0x180F
            | 0x200B..=0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x206F
            | 0x3164
            | 0xFE00..=0xFE0F
            | 0xFEFF
            | 0xFFA0
            | 0xFFF0..=0xFFFB
            | 0x1D173..=0x1D17A
            | 0xE0000..=0xE0FFF
    )
}

/// The host as written in an authority without userinfo: an IPv6 literal with
/// its brackets, or everything before the port.
fn host_of_authority(authority: &str) -> &str {
    if authority.starts_with('[') {
        authority
            .find(']')
            .map_or(authority, |end| &authority[..=end])
    } else {
        authority.split(':').next().unwrap_or(authority)
    }
}

/// True if the path (before any query or fragment) has a `.` or `..` segment,
/// percent-encoded or not (`%2e`, `.%2E`): URL parsers remove them all alike.
fn has_dot_segment(s: &str) -> bool {
    let path = s.split(['?', '#']).next().unwrap_or(s);
    path.split('/').any(|segment| {
        let decoded = percent_encoding::percent_decode_str(segment);
        let decoded: Vec<u8> = decoded.collect();
        decoded == b"." || decoded == b".."
    })
}

impl std::str::FromStr for Destination {
    type Err = InvalidDestination;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for Destination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.raw)
    }
}

impl fmt::Debug for Destination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Destination({})", self.raw)
    }
}

/// Conservative test that `URLSearchParams` would serialize `query` back to
/// itself: non-empty `name=value` pairs of bytes that are never escaped,
/// plus `+` (decoded to a space, which serializes back to `+`); no `%`.
pub fn is_serialized_form(query: &str) -> bool {
    if query.is_empty() {
        return true;
    }
    // One pass: `=` counted per `&`-separated pair.
    let mut equals = 0;
    for b in query.bytes() {
        match b {
            b'&' if equals == 1 => equals = 0,
            b'&' => return false,
            b'=' => equals += 1,
            _ if b.is_ascii_alphanumeric() || matches!(b, b'*' | b'-' | b'.' | b'_' | b'+') => {}
            _ => return false,
        }
    }
    equals == 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn accepts_http_urls_and_paths() {
        for ok in [
            "http://innerfunction.com/wp/whelans/?p=14",
            "https://example.com",
            "https://xn--bcher-kva.example/",
            "https://a.example/ü",
            "https://a.example/@user",
            "https://a.example/?next=https://b.example@c.example",
            "https://a.example:8443/x",
            "http://[::1]:8080/x",
            "http://127.0.0.1/x",
            "https://a.example./",
            "/documentation",
            "/@user",
            "/a/.well-known/x",
            "/a/b..c/...",
            "/docs?p=../..#/..",
            "/a//b?x=1#y",
        ] {
            assert!(Destination::parse(ok).is_ok(), "{ok:?} rejected");
        }
        assert!(Destination::parse("/docs").is_ok_and(|d| d.is_internal()));
        assert!(Destination::parse("https://a.example").is_ok_and(|d| !d.is_internal()));
    }

    #[test]
    fn rejects_unsafe_or_broken_values() {
        for bad in [
            "",
            "//evil.example",
            "/\\evil.example",
            "javascript:alert(1)",
            "ftp://example.com/",
            "HTTPS://example.com/",
            "https:evil.example",
            "https:/evil.example",
            "http://",
            "https:///path",
            "example.com",
            "https://a.example/ x",
            "https://a.example/\n",
            "mailto:a@b.example",
            "httpfoo",
        ] {
            assert!(Destination::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn a_destination_is_at_most_max_destination_bytes_and_not_echoed() {
        for prefix in ["https://a.example/", "/p/", "https://A.example/"] {
            let at_most = format!("{prefix}{}", "x".repeat(MAX_DESTINATION - prefix.len()));
            let over = format!("{at_most}x");
            if prefix != "https://A.example/" {
                assert!(Destination::parse(&at_most).is_ok(), "{prefix}");
            }
            assert_eq!(
                Destination::parse(&over),
                Err(InvalidDestination::TooLong(MAX_DESTINATION + 1))
            );
            assert!(!is_plain_absolute(&over));
        }
        // Bytes, not characters.
        let wide = format!("/{}", "ü".repeat(MAX_DESTINATION / 2));
        assert!(matches!(
            Destination::parse(&wide),
            Err(InvalidDestination::TooLong(_))
        ));
        let message = InvalidDestination::TooLong(4 << 20).to_string();
        assert!(message.len() < 120, "{message}");
    }

    #[test]
    fn refuses_spellings_that_fool_people() {
        let cases = [
            ("https://example.com:443@evil.example/", "user name"),
            ("https://user:pw@a.example/", "user name"),
            ("https://@evil.example/", "user name"),
            ("https://a.example@evil.example", "user name"),
            ("/.//evil.example", "segments"),
            ("/..//evil.example", "segments"),
            ("/%2e%2e//evil.example", "segments"),
            ("/%2E//evil.example", "segments"),
            ("/.%2e//evil.example", "segments"),
            ("/a/../b", "segments"),
            ("/a/.", "segments"),
            ("/..", "segments"),
            ("/\\evil.example", "backslash"),
            ("/\\evil.example", "backslash"),
            ("/a\\..\\..\\/evil", "backslash"),
            ("https://a.example\\@evil.example/", "backslash"),
            ("https:/\\evil.example", "backslash"),
            ("https://ev\til.example/", "control characters"),
            ("https://evil.exam\nple/", "control characters"),
            ("/\t/evil.example", "control characters"),
            ("/.\n/evil.example", "control characters"),
            // Issue 19, item 13: shown as stored, they read as something else.
            ("https://a.example/\u{202E}fdp.exe", "U+202E"),
            ("https://a.example/a\u{2066}b", "U+2066"),
            ("https://a.example/\u{FEFF}x", "U+FEFF"),
            ("https://a.example/pay\u{200B}pal", "U+200B"),
            ("/docs\u{200D}", "U+200D"),
            ("https://a.example/?q=\u{E0041}", "U+E0041"),
            ("https://a.example/\u{00AD}", "U+00AD"),
        ];
        for (bad, expected) in cases {
            match Destination::parse(bad) {
                Ok(_) => panic!("{bad:?} accepted"),
                Err(e) => assert!(e.to_string().contains(expected), "{bad:?}: {e}"),
            }
        }
    }

    #[test]
    fn a_host_must_be_written_as_it_is_served() {
        for (given, served, suggestion) in [
            (
                "https://ｅｖｉｌ.example/",
                "evil.example",
                "https://evil.example/",
            ),
            (
                "https://bücher.example/ü",
                "xn--bcher-kva.example",
                "https://xn--bcher-kva.example/ü",
            ),
            (
                "https://evil%2eexample/",
                "evil.example",
                "https://evil.example/",
            ),
            ("http://0x7f.1/", "127.0.0.1", "http://127.0.0.1/"),
            ("http://[0:0::1]/", "[::1]", "http://[::1]/"),
        ] {
            let err = Destination::parse(given).expect_err(given);
            assert_eq!(
                err,
                InvalidDestination::HostNotServedForm {
                    given: given.to_owned(),
                    served: served.to_owned(),
                    suggestion: suggestion.to_owned(),
                }
            );
            let msg = err.to_string();
            assert!(msg.contains(&format!("did you mean {suggestion}")), "{msg}");
            assert!(Destination::parse(suggestion).is_ok(), "{suggestion}");
        }
    }

    #[test]
    fn capitals_in_a_host_are_stored_in_lower_case_and_said() {
        for (given, stored) in [
            ("https://Example.com", "https://example.com"),
            (
                "http://EVIL.example:8080/x?Y",
                "http://evil.example:8080/x?Y",
            ),
            (
                "https://Venue.example.com/Menu",
                "https://venue.example.com/Menu",
            ),
        ] {
            let d = Destination::parse(given).expect(given);
            assert_eq!(d.as_str(), stored);
            assert!(d.host_lowered());
            assert!(d.lowered_note().is_some_and(|n| n.contains(stored)));
            assert_eq!(d, Destination::parse(stored).expect(stored));
            assert!(!Destination::parse(stored).expect(stored).host_lowered());
        }
        // Capitals beside another difference are refused as before.
        assert!(Destination::parse("https://EVIL%2eexample/").is_err());
    }

    #[test]
    fn a_port_must_be_written_as_it_is_served() {
        for (given, suggestion) in [
            ("https://a.example:0443/x", "https://a.example/x"),
            ("https://a.example:/x", "https://a.example/x"),
            ("https://a.example:", "https://a.example/"),
            ("http://a.example:08080/?q", "http://a.example:8080/?q"),
            ("http://[::1]:0080/", "http://[::1]/"),
        ] {
            let err = Destination::parse(given).expect_err(given);
            assert_eq!(
                err,
                InvalidDestination::PortNotServedForm {
                    given: given.to_owned(),
                    suggestion: suggestion.to_owned(),
                }
            );
            assert!(Destination::parse(suggestion).is_ok(), "{suggestion}");
        }
        for ok in [
            "https://a.example:443/x",
            "https://a.example:8443",
            "http://[::1]:8080/x",
            "http://a.example:80/",
        ] {
            assert!(Destination::parse(ok).is_ok(), "{ok:?} refused");
        }
        // Percent-encoded, they are shown encoded, and taken.
        assert!(Destination::parse("https://a.example/%E2%80%AEfdp.exe").is_ok());
    }

    proptest! {
        #[test]
        fn parse_never_panics_and_keeps_the_text(s in ".{0,60}") {
            if let Ok(d) = Destination::parse(&s) {
                // The text as written, but for a host's capitals.
                prop_assert_eq!(d.as_str() == s.as_str(), !d.host_lowered());
                prop_assert_eq!(d.as_str().len(), s.len());
                prop_assert!(d.as_str().starts_with('/') || d.as_str().starts_with("http"));
            }
        }

        /// What is accepted is what is served: an absolute destination's host
        /// is the parsed URL's host, and an internal one stays a single-slash
        /// path on the service's origin when a URL parser normalises it.
        #[test]
        fn accepted_means_served_as_written(s in "(https?://|/)[a-zA-Z0-9.%@:/\\\\?#_-]{0,20}") {
            if let Ok(d) = Destination::parse(&s) {
                if d.is_internal() {
                    let base = url::Url::parse("https://0x1f.ie/").expect("base");
                    let joined = base.join(&s).expect("a path joins");
                    prop_assert_eq!(joined.host_str(), Some("0x1f.ie"));
                    prop_assert!(!joined.path().starts_with("//"), "{}", joined);
                } else {
                    let u = url::Url::parse(&s).expect("parsed once");
                    prop_assert_eq!(u.username(), "");
                    let host = u.host_str().expect("a host");
                    let stored = d.as_str();
                    prop_assert!(stored.starts_with(&format!("{}://{}", u.scheme(), host)), "{} vs {}", stored, u);
                }
            }
        }
    }
}
