//! The heads of a connection's latest requests, kept as received so that an
//! answer actix gives on its own (a 400 for a head it cannot parse, a 431, a
//! 408) can still be logged with what could be read of the request.
//!
//! Such a request never reaches a handler, so nothing else saw it. Copying a
//! few hundred bytes of each head is far cheaper than parsing it; the fields
//! are read out only in the rare case one is needed ([`HeadFields::parse`]).
//!
//! Pure: [`RequestLines`](super::request_line::RequestLines) feeds it the head
//! bytes it scans, and the connection wrapper asks it for a request by index.

use std::borrow::Cow;
use std::collections::VecDeque;

use crate::access_log::format::MAX_FIELD;

/// Heads kept per connection: the request an error concerns is the oldest
/// one no handler answered, which is almost always the latest or the one
/// before; pipelining clients may have sent a few more after it.
const KEPT: usize = 4;

/// Bytes kept of one head: a target longer than a log field is still seen to
/// be longer (the log marks it cut). The rest of a longer head is not kept,
/// so a connection holds at most `KEPT` times this, like actix's own buffer.
const HEAD_BYTES: usize = 2 * MAX_FIELD;

/// One request's head as received, possibly cut at [`HEAD_BYTES`].
#[derive(Debug, Clone, Default)]
struct Head {
    index: u64,
    bytes: Vec<u8>,
}

/// The heads of the latest requests of one connection.
#[derive(Debug, Clone, Default)]
pub struct RequestHeads {
    heads: VecDeque<Head>,
    /// Buffers of forgotten heads, reused so a keep-alive connection
    /// allocates once.
    spare: Option<Vec<u8>>,
}

impl RequestHeads {
    /// Starts the head of request `index` (0 for a connection's first).
    /// When [`KEPT`] heads are held, one goes that no own answer can concern
    /// ([`Self::expendable`]), so a malformed request followed by more in one
    /// packet keeps its fields (issue 19).
    pub fn begin(&mut self, index: u64) {
        if self.heads.len() == KEPT
            && let Some(old) = self.heads.remove(self.expendable())
        {
            self.spare = Some(old.bytes);
        }
        let mut bytes = self.spare.take().unwrap_or_default();
        bytes.clear();
        self.heads.push_back(Head { index, bytes });
    }

    /// The head to let go of when full. Actix answers on its own only the
    /// first head it cannot take, and stops reading there; the heads before
    /// it are answered by handlers (and forgotten). So the front, the oldest
    /// head not answered, is kept, and so is the first one `httparse` (the
    /// parser under actix's) refuses; of the others, the oldest goes. A head
    /// actix refuses for its own reasons (no `Host`) is kept while it is the
    /// front, which covers a malformed request followed by any number.
    fn expendable(&self) -> usize {
        let first_refused = self.heads.iter().position(|h| refused(&h.bytes));
        (1..self.heads.len())
            .find(|&i| Some(i) != first_refused)
            .unwrap_or(0)
    }

    /// Adds bytes of the head begun last.
    pub fn extend(&mut self, part: &[u8]) {
        if let Some(head) = self.heads.back_mut() {
            let room = HEAD_BYTES.saturating_sub(head.bytes.len());
            head.bytes.extend_from_slice(&part[..part.len().min(room)]);
        }
    }

    /// Drops the heads of requests before `index`: they were answered.
    pub fn forget_before(&mut self, index: u64) {
        while self.heads.front().is_some_and(|h| h.index < index) {
            if let Some(old) = self.heads.pop_front() {
                self.spare = Some(old.bytes);
            }
        }
    }

    /// The head of request `index` as far as it was received, if kept.
    pub fn get(&self, index: u64) -> Option<&[u8]> {
        self.heads
            .iter()
            .find(|h| h.index == index)
            .map(|h| h.bytes.as_slice())
    }
}

/// Whether `head` is one the HTTP/1 parser refuses outright: not a head
/// still being received or cut at [`HEAD_BYTES`], which it cannot judge.
fn refused(head: &[u8]) -> bool {
    // actix-http's limit on header lines; more is refused there too.
    let mut headers = [httparse::EMPTY_HEADER; 96];
    httparse::Request::new(&mut headers).parse(head).is_err()
}

/// What the access log needs of a head that no handler saw. Every field is
/// raw bytes; the log encodes them.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct HeadFields<'a> {
    pub method: Option<&'a [u8]>,
    /// In origin form: an absolute-form target loses its scheme and
    /// authority, so credentials never reach the log (as for handled
    /// requests).
    pub target: Option<Cow<'a, [u8]>>,
    pub user_agent: Option<&'a [u8]>,
    pub referer: Option<&'a [u8]>,
    pub forwarded_for: Vec<&'a [u8]>,
}

impl<'a> HeadFields<'a> {
    /// Reads what it can of `head`, which may be malformed in any way or cut
    /// anywhere. A header line cut off by the end of `head` is not read.
    pub fn parse(head: &'a [u8]) -> Self {
        let mut fields = HeadFields::default();
        let mut rest = head;
        // Empty lines before the request line are allowed (RFC 9112, 2.2).
        // The request line is read even when cut: its start is what matters.
        let first = loop {
            let (line, after) = match memchr::memchr(b'\n', rest) {
                Some(i) => (&rest[..i], &rest[i + 1..]),
                None => (rest, &[][..]),
            };
            rest = after;
            match strip_cr(line) {
                b"" if rest.is_empty() => return fields,
                b"" => {}
                line => break line,
            }
        };
        let (method, target) = request_line(first);
        fields.method = method;
        fields.target = target.map(origin_form);
        // Header lines up to the empty one; a line cut off is not read.
        while let Some(i) = memchr::memchr(b'\n', rest) {
            let line = strip_cr(&rest[..i]);
            rest = &rest[i + 1..];
            if line.is_empty() {
                break;
            }
            let Some(colon) = line.iter().position(|&b| b == b':') else {
                continue;
            };
            let (name, value) = (&line[..colon], line[colon + 1..].trim_ascii());
            if name.eq_ignore_ascii_case(b"user-agent") {
                fields.user_agent.get_or_insert(value);
            } else if name.eq_ignore_ascii_case(b"referer") {
                fields.referer.get_or_insert(value);
            } else if name.eq_ignore_ascii_case(b"x-forwarded-for") {
                fields.forwarded_for.push(value);
            }
        }
        fields
    }
}

fn strip_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Method and target of a request line that may be malformed: the method is
/// what comes before the first space, the target what comes after it, less
/// a trailing ` HTTP/x.y`.
fn request_line(line: &[u8]) -> (Option<&[u8]>, Option<&[u8]>) {
    let Some(space) = line.iter().position(|&b| b == b' ') else {
        return ((!line.is_empty()).then_some(line), None);
    };
    let method = (space > 0).then(|| &line[..space]);
    let mut rest = &line[space + 1..];
    if let Some(at) = rest.iter().rposition(|&b| b == b' ')
        && rest[at + 1..].starts_with(b"HTTP/")
    {
        rest = &rest[..at];
    }
    (method, (!rest.is_empty()).then_some(rest))
}

/// The path and query of an absolute-form target (`http://u:pw@host/p?q`
/// gives `/p?q`); any other target unchanged.
fn origin_form(target: &[u8]) -> Cow<'_, [u8]> {
    let scheme_end = target
        .iter()
        .position(|&b| !(b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.')));
    let Some(authority) = scheme_end
        .filter(|&i| i > 0 && target[0].is_ascii_alphabetic())
        .and_then(|i| target[i..].strip_prefix(b"://"))
    else {
        return Cow::Borrowed(target);
    };
    match authority
        .iter()
        .position(|&b| matches!(b, b'/' | b'?' | b'#'))
    {
        Some(i) if authority[i] == b'/' => Cow::Borrowed(&authority[i..]),
        Some(i) => Cow::Owned([&b"/"[..], &authority[i..]].concat()),
        None => Cow::Borrowed(b"/"),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn fields(head: &[u8]) -> HeadFields<'_> {
        HeadFields::parse(head)
    }

    #[test]
    fn a_well_formed_head_gives_every_field() {
        let f = fields(
            b"GET /p/q?x=\"a\" HTTP/1.1\r\nHost: a\r\nUser-Agent:  Phone 1 \r\nreferer: http://r/\r\nX-Forwarded-For: 1.2.3.4\r\nx-forwarded-for: 5.6.7.8, 9.9.9.9\r\n\r\n",
        );
        assert_eq!(f.method, Some(&b"GET"[..]));
        assert_eq!(f.target.as_deref(), Some(&b"/p/q?x=\"a\""[..]));
        assert_eq!(f.user_agent, Some(&b"Phone 1"[..]));
        assert_eq!(f.referer, Some(&b"http://r/"[..]));
        assert_eq!(
            f.forwarded_for,
            vec![&b"1.2.3.4"[..], &b"5.6.7.8, 9.9.9.9"[..]]
        );
    }

    #[test]
    fn malformed_request_lines_give_what_can_be_read() {
        type Case = (&'static [u8], Option<&'static [u8]>, Option<&'static [u8]>);
        let cases: [Case; 8] = [
            (b"GET /x y z\r\n\r\n", Some(b"GET"), Some(b"/x y z")),
            (b"GET /a b HTTP/1.1\r\n\r\n", Some(b"GET"), Some(b"/a b")),
            (b"GARBAGE\r\n\r\n", Some(b"GARBAGE"), None),
            (b" /lead HTTP/1.1\r\n", None, Some(b"/lead")),
            (b"GET  HTTP/1.1\r\n", Some(b"GET"), None),
            (
                b"\r\n\nGET /after-empty HTTP/1.1\r\n",
                Some(b"GET"),
                Some(b"/after-empty"),
            ),
            (
                b"GET /cut-before-the-end",
                Some(b"GET"),
                Some(b"/cut-before-the-end"),
            ),
            (b"", None, None),
        ];
        for (head, method, target) in cases {
            let f = fields(head);
            assert_eq!(f.method, method, "{head:?}");
            assert_eq!(f.target.as_deref(), target, "{head:?}");
        }
    }

    #[test]
    fn absolute_form_targets_lose_scheme_authority_and_credentials() {
        let cases: [(&[u8], &[u8]); 6] = [
            (b"http://u:pw@evil.example/p/af", b"/p/af"),
            (b"HTTPS://host:8443/a?b=c", b"/a?b=c"),
            (b"http://host?q=1", b"/?q=1"),
            (b"http://host", b"/"),
            (b"//not-absolute/x", b"//not-absolute/x"),
            (b"/plain:80://x", b"/plain:80://x"),
        ];
        for (target, origin) in cases {
            assert_eq!(&*origin_form(target), origin, "{target:?}");
        }
    }

    #[test]
    fn a_header_line_cut_off_is_not_read() {
        let f = fields(b"GET / HTTP/1.1\r\nUser-Agent: A\r\nReferer: http://cut");
        assert_eq!(f.user_agent, Some(&b"A"[..]));
        assert_eq!(f.referer, None);
        let f = fields(b"\r\nGET / HTTP/1.1\r\nUser-Agent: B");
        assert_eq!(f.user_agent, None);
    }

    #[test]
    fn the_first_user_agent_counts_and_the_body_is_not_read() {
        let f = fields(b"GET / HTTP/1.1\nUser-Agent: one\nUser-Agent: two\n\nUser-Agent: body\n");
        assert_eq!(f.user_agent, Some(&b"one"[..]));
    }

    #[test]
    fn heads_are_kept_by_index_and_forgotten_once_answered() {
        let mut heads = RequestHeads::default();
        for i in 0..6u64 {
            heads.begin(i);
            heads.extend(format!("GET /{i} HTTP/1.1\r\n").as_bytes());
            heads.extend(b"\r\n");
        }
        // Only a few are kept: the oldest unanswered and the latest.
        assert!(heads.get(0).is_some());
        assert_eq!(heads.get(1), None);
        assert_eq!(heads.get(5), Some(&b"GET /5 HTTP/1.1\r\n\r\n"[..]));
        assert_eq!(heads.get(2), None);
        assert_eq!(heads.get(3), Some(&b"GET /3 HTTP/1.1\r\n\r\n"[..]));
        heads.forget_before(5);
        assert_eq!(heads.get(4), None);
        assert!(heads.get(5).is_some());
    }

    #[test]
    fn the_oldest_unanswered_and_the_first_refused_head_outlive_pipelining() {
        let mut heads = RequestHeads::default();
        let send = |heads: &mut RequestHeads, i: u64, head: &[u8]| {
            heads.begin(i);
            heads.extend(head);
        };
        let good = |heads: &mut RequestHeads, from: u64, to: u64| {
            for i in from..to {
                send(
                    heads,
                    i,
                    format!("GET /{i} HTTP/1.1\r\nHost: a\r\n\r\n").as_bytes(),
                );
            }
        };
        // A malformed first request, then many.
        send(&mut heads, 0, b"GET /p/nohost HTTP/1.1\r\n\r\n");
        good(&mut heads, 1, 10);
        assert_eq!(heads.get(0), Some(&b"GET /p/nohost HTTP/1.1\r\n\r\n"[..]));
        assert!(heads.get(9).is_some());
        // Good requests, one the parser refuses, then many more.
        let mut heads = RequestHeads::default();
        good(&mut heads, 0, 6);
        send(&mut heads, 6, b"GET /x y z\r\n\r\n");
        good(&mut heads, 7, 20);
        assert_eq!(heads.get(6), Some(&b"GET /x y z\r\n\r\n"[..]));
        assert!(heads.get(0).is_some(), "the oldest unanswered");
        assert_eq!(heads.heads.len(), KEPT);
    }

    #[test]
    fn a_head_is_kept_only_up_to_its_cap() {
        let mut heads = RequestHeads::default();
        heads.begin(0);
        heads.extend(b"GET /");
        heads.extend(&vec![b'a'; HEAD_BYTES * 2]);
        let kept = heads.get(0).map(<[u8]>::len);
        assert_eq!(kept, Some(HEAD_BYTES));
        // Still longer than a log field, so the log marks the target cut.
        assert!(HEAD_BYTES > MAX_FIELD + b"GET ".len());
    }

    proptest! {
        #[test]
        fn any_bytes_parse_without_panic_and_fields_come_from_the_head(
            head in prop::collection::vec(any::<u8>(), 0..300)
        ) {
            let f = HeadFields::parse(&head);
            let within = |part: &[u8]| head.windows(part.len().max(1)).any(|w| w == part) || part.is_empty();
            if let Some(m) = f.method { prop_assert!(within(m)); }
            if let Some(ua) = f.user_agent { prop_assert!(within(ua)); }
            if let Some(r) = f.referer { prop_assert!(within(r)); }
        }
    }
}
