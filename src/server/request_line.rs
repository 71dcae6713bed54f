//! Percent-encoding raw non-ASCII bytes in request lines, below actix.
//!
//! Phones and scanners send printed URLs as they are, so a tag for
//! `/café` arrives as `GET /caf\xC3\xA9 HTTP/1.1`. actix-http parses the
//! target with the `http` crate, which refuses bytes >= 0x80 and answers 400
//! itself, before any handler: no redirect, no cookie, no access-log line.
//! Rewriting those bytes as `%XX` on the way in lets such a request reach the
//! handler as `/caf%C3%A9`, the same request a browser would have sent.
//!
//! [`RequestLines`] is the whole decision as a pure state machine over byte
//! chunks; [`RequestLineIo`] applies it to a connection's reads.
//!
//! Only request lines are touched. Header bytes pass unchanged (actix takes
//! raw bytes in header values, and the log encodes them). Body bytes cannot be
//! told from request lines without following the body framing, so a request
//! with a body (`Content-Length` other than 0, or any `Transfer-Encoding`)
//! turns the adapter off for the rest of its connection. The public listener
//! only serves GET and HEAD (anything else is a 501), so the one cost would be
//! that a later raw non-ASCII target on such a connection gets actix's 400
//! again; and actix closes a connection whose request body the handler did
//! not read, so today there is no later request.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// How much of a header line is kept to judge it: enough for
/// `Transfer-Encoding:` and a `Content-Length: 0` with some padding. A longer
/// `Content-Length` line is taken to announce a body, which only switches the
/// adapter off; so the per-connection memory stays fixed whatever is sent.
const LINE_PREFIX: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// In the first line of a request. `content` stays false across the
    /// empty lines a client may send before it (RFC 9112, 2.2), so that the
    /// real request line is not mistaken for a header.
    RequestLine {
        content: bool,
    },
    Headers,
    /// After a request with a body: everything passes unchanged.
    PassThrough,
}

/// The rewriting of one connection's incoming bytes, fed in chunks that may
/// split anywhere.
#[derive(Debug, Clone)]
pub struct RequestLines {
    state: State,
    prefix: [u8; LINE_PREFIX],
    /// Length so far of a header line cut by a chunk boundary (0 between
    /// lines); may exceed what `prefix` holds.
    line_len: usize,
    /// Whether the request whose headers are being read announced a body.
    body: bool,
}

impl Default for RequestLines {
    fn default() -> Self {
        Self::new()
    }
}

impl RequestLines {
    pub fn new() -> Self {
        Self {
            state: State::RequestLine { content: false },
            prefix: [0; LINE_PREFIX],
            line_len: 0,
            body: false,
        }
    }

    /// Advances over the leading bytes of `input` that pass unchanged and
    /// returns how many there are; stops before the first byte that must be
    /// encoded. Separate from [`rewrite`](Self::rewrite) so that the common
    /// case, a chunk with nothing to encode, is only scanned, never copied.
    pub fn pass(&mut self, input: &[u8]) -> usize {
        let mut i = 0;
        while i < input.len() {
            let rest = &input[i..];
            match self.state {
                State::PassThrough => return input.len(),
                State::RequestLine { content } => {
                    let Some(j) = rest.iter().position(|&b| b >= 0x80 || b == b'\n') else {
                        let content = content || rest.iter().any(|&b| b != b'\r');
                        self.state = State::RequestLine { content };
                        return input.len();
                    };
                    let content = content || rest[..j].iter().any(|&b| b != b'\r');
                    if rest[j] != b'\n' {
                        self.state = State::RequestLine { content };
                        return i + j;
                    }
                    i += j + 1;
                    self.state = if content {
                        self.line_len = 0;
                        self.body = false;
                        State::Headers
                    } else {
                        State::RequestLine { content: false }
                    };
                }
                State::Headers => {
                    let end = memchr::memchr(b'\n', rest);
                    let part = &rest[..end.unwrap_or(rest.len())];
                    let line = match end {
                        // The common case: the whole line is in this chunk
                        // and is judged where it lies, without a copy.
                        Some(_) if self.line_len == 0 => judge(
                            &part[..part.len().min(LINE_PREFIX)],
                            part.len() <= LINE_PREFIX,
                        ),
                        _ => {
                            if self.line_len < LINE_PREFIX {
                                let n = part.len().min(LINE_PREFIX - self.line_len);
                                self.prefix[self.line_len..self.line_len + n]
                                    .copy_from_slice(&part[..n]);
                            }
                            self.line_len = self.line_len.saturating_add(part.len());
                            if end.is_none() {
                                return input.len();
                            }
                            let len = std::mem::take(&mut self.line_len);
                            judge(&self.prefix[..len.min(LINE_PREFIX)], len <= LINE_PREFIX)
                        }
                    };
                    i += part.len() + 1;
                    match line {
                        Line::End => {
                            self.state = if self.body {
                                State::PassThrough
                            } else {
                                State::RequestLine { content: false }
                            };
                        }
                        Line::Body => self.body = true,
                        Line::Other => {}
                    }
                }
            }
        }
        input.len()
    }

    /// Appends `input` to `out` with every byte >= 0x80 in a request line
    /// written as `%XX` (upper-case hex, as the access log writes it).
    pub fn rewrite(&mut self, mut input: &[u8], out: &mut Vec<u8>) {
        loop {
            let n = self.pass(input);
            out.extend_from_slice(&input[..n]);
            let Some((&b, rest)) = input[n..].split_first() else {
                return;
            };
            // `pass` stops only before a byte >= 0x80 in a request line.
            out.extend_from_slice(&percent_encoded(b));
            self.state = State::RequestLine { content: true };
            input = rest;
        }
    }
}

/// What a header line means for the rewriting.
enum Line {
    /// The empty line that ends the header block.
    End,
    /// A header that announces a body.
    Body,
    Other,
}

/// Judges a header line (without its `\n`); `whole` is false when `line` is
/// only the start of a longer one.
fn judge(line: &[u8], whole: bool) -> Line {
    if whole && matches!(line, b"" | b"\r") {
        return Line::End;
    }
    // Most lines are told apart by their first byte.
    if !matches!(line.first(), Some(b'c' | b'C' | b't' | b'T')) {
        return Line::Other;
    }
    if let Some(value) = header_value(line, b"content-length") {
        let value = if whole {
            value.strip_suffix(b"\r").unwrap_or(value)
        } else {
            value
        };
        let value = value.trim_ascii();
        let zero = whole && !value.is_empty() && value.iter().all(|&b| b == b'0');
        if zero { Line::Other } else { Line::Body }
    } else if header_value(line, b"transfer-encoding").is_some() {
        Line::Body
    } else {
        Line::Other
    }
}

/// The value part of `line` if it is the header `name` (lower-case);
/// header names are case-insensitive and never followed by space before `:`.
fn header_value<'a>(line: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
    let (head, rest) = line.split_at_checked(name.len())?;
    let (&colon, value) = rest.split_first()?;
    (colon == b':' && head.eq_ignore_ascii_case(name)).then_some(value)
}

fn percent_encoded(b: u8) -> [u8; 3] {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    [b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 0xf)]]
}

/// A connection whose reads go through [`RequestLines`]; writes pass
/// straight through.
#[derive(Debug)]
pub struct RequestLineIo<T> {
    inner: T,
    lines: RequestLines,
    /// Rewritten bytes that did not fit the caller's buffer, handed out
    /// before anything new is read. Empty (and never allocated) while no
    /// request line needed encoding.
    pending: Vec<u8>,
    pending_from: usize,
}

impl<T> RequestLineIo<T> {
    pub fn new(inner: T) -> Self {
        Self {
            inner,
            lines: RequestLines::new(),
            pending: Vec::new(),
            pending_from: 0,
        }
    }

    pub fn get_ref(&self) -> &T {
        &self.inner
    }

    /// Moves as much of `pending` into `buf` as fits.
    fn drain_pending(&mut self, buf: &mut ReadBuf<'_>) {
        let rest = &self.pending[self.pending_from..];
        let n = rest.len().min(buf.remaining());
        buf.put_slice(&rest[..n]);
        self.pending_from += n;
        if self.pending_from == self.pending.len() {
            self.pending.clear();
            self.pending_from = 0;
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for RequestLineIo<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.pending.is_empty() {
            this.drain_pending(buf);
            return Poll::Ready(Ok(()));
        }
        let start = buf.filled().len();
        ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        let fresh = &buf.filled()[start..];
        let clean = this.lines.pass(fresh);
        if clean < fresh.len() {
            // Rare: the rewritten rest goes through `pending`, since it is
            // longer than what it replaces and `buf` may be full. At least
            // one byte is freed and refilled, so this never reads as EOF.
            this.lines.rewrite(&fresh[clean..], &mut this.pending);
            buf.set_filled(start + clean);
            this.drain_pending(buf);
        }
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for RequestLineIo<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use proptest::prelude::*;
    use tokio::io::AsyncReadExt;

    use super::*;

    fn rewrite_whole(input: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        RequestLines::new().rewrite(input, &mut out);
        out
    }

    fn rewrite_split(input: &[u8], cuts: &[usize]) -> Vec<u8> {
        let mut lines = RequestLines::new();
        let mut out = Vec::new();
        let mut from = 0;
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (input.len() + 1)).collect();
        cuts.sort_unstable();
        for cut in cuts.into_iter().chain([input.len()]) {
            lines.rewrite(&input[from..cut], &mut out);
            from = cut;
        }
        out
    }

    #[test]
    fn a_raw_target_is_encoded_and_headers_are_not() {
        let input =
            b"GET /caf\xc3\xa9?q=\xe2\x82\xac HTTP/1.1\r\nUser-Agent: B\xc3\xbccher\r\n\r\n";
        assert_eq!(
            rewrite_whole(input),
            b"GET /caf%C3%A9?q=%E2%82%AC HTTP/1.1\r\nUser-Agent: B\xc3\xbccher\r\n\r\n"
        );
    }

    #[test]
    fn every_request_line_of_a_keep_alive_connection_is_encoded() {
        let input = b"GET /\xff HTTP/1.1\r\nHost: x\r\n\r\nHEAD /\xfe HTTP/1.1\nHost: \xfd\n\nGET /\x80 HTTP/1.1\r\n\r\n";
        assert_eq!(
            rewrite_whole(input),
            b"GET /%FF HTTP/1.1\r\nHost: x\r\n\r\nHEAD /%FE HTTP/1.1\nHost: \xfd\n\nGET /%80 HTTP/1.1\r\n\r\n"
        );
    }

    #[test]
    fn empty_lines_before_a_request_line_do_not_make_it_a_header() {
        for empty in [&b"\r\n"[..], b"\n", b"\r\n\n", b"\n\n\r\n"] {
            let mut input = empty.to_vec();
            input.extend_from_slice(b"GET /\xe9 HTTP/1.1\r\nX: \xe9\r\n\r\n");
            let mut expected = empty.to_vec();
            expected.extend_from_slice(b"GET /%E9 HTTP/1.1\r\nX: \xe9\r\n\r\n");
            assert_eq!(rewrite_whole(&input), expected, "after {empty:?}");
        }
    }

    #[test]
    fn a_request_with_a_body_turns_the_rewriting_off() {
        let announcing: [&[u8]; 6] = [
            b"Content-Length: 5",
            b"content-length:5",
            b"CONTENT-LENGTH: 0 5",
            b"Content-Length: x",
            b"Transfer-Encoding: chunked",
            b"transfer-encoding: identity",
        ];
        for header in announcing {
            let mut input = b"POST /\xe9 HTTP/1.1\r\n".to_vec();
            input.extend_from_slice(header);
            input.extend_from_slice(b"\r\n\r\nGET /\xe9 HTTP/1.1\r\n\r\n");
            let out = rewrite_whole(&input);
            let mut expected = b"POST /%E9 HTTP/1.1\r\n".to_vec();
            expected.extend_from_slice(&input[b"POST /\xe9 HTTP/1.1\r\n".len()..]);
            assert_eq!(out, expected, "{}", String::from_utf8_lossy(header));
        }
    }

    #[test]
    fn a_zero_content_length_keeps_the_rewriting_on() {
        for header in [
            &b"Content-Length: 0"[..],
            b"content-length:0",
            b"Content-Length: \t00 ",
        ] {
            let mut input = b"GET /a HTTP/1.1\r\n".to_vec();
            input.extend_from_slice(header);
            input.extend_from_slice(b"\r\n\r\nGET /\xe9 HTTP/1.1\r\n\r\n");
            let out = rewrite_whole(&input);
            assert!(out.ends_with(b"GET /%E9 HTTP/1.1\r\n\r\n"), "{out:?}");
        }
    }

    #[test]
    fn a_content_length_line_too_long_to_judge_counts_as_a_body() {
        let mut input = b"GET /a HTTP/1.1\r\nContent-Length: ".to_vec();
        input.extend_from_slice(&[b' '; LINE_PREFIX]);
        input.extend_from_slice(b"0\r\n\r\nGET /\xe9 HTTP/1.1\r\n\r\n");
        assert_eq!(rewrite_whole(&input), input);
    }

    #[test]
    fn long_header_lines_are_passed_without_being_kept() {
        let mut input = b"GET /a HTTP/1.1\r\nCookie: ".to_vec();
        input.extend(std::iter::repeat_n(b'x', 10_000));
        input.extend_from_slice(b"\r\n\r\nGET /\xe9 HTTP/1.1\r\n\r\n");
        let out = rewrite_whole(&input);
        assert!(out.ends_with(b"\r\n\r\nGET /%E9 HTTP/1.1\r\n\r\n"));
        assert_eq!(out.len(), input.len() + 2);
    }

    #[test]
    fn every_two_way_split_gives_the_whole_result() {
        let input = b"\r\nGET /caf\xc3\xa9 HTTP/1.1\r\nContent-Length: 0\r\nX: \xff\r\n\r\nGET /\xe2\x82\xac HTTP/1.1\n\nPOST /\xe9 HTTP/1.1\r\ncontent-length: 3\r\n\r\n\xe9\xe9\xe9GET /\xe9 HTTP/1.1\r\n\r\n";
        let whole = rewrite_whole(input);
        for cut in 0..=input.len() {
            assert_eq!(rewrite_split(input, &[cut]), whole, "cut at {cut}");
        }
    }

    /// One request as the generator builds it, and what the rewriting must
    /// make of it.
    #[derive(Debug, Clone)]
    struct Req {
        target: Vec<u8>,
        headers: Vec<(&'static str, Vec<u8>)>,
        crlf: bool,
    }

    impl Req {
        fn has_body(&self) -> bool {
            self.headers.iter().any(|(name, value)| match *name {
                "Content-Length" | "content-length" => {
                    let v = value.trim_ascii();
                    let line_len = name.len() + 1 + value.len() + usize::from(self.crlf);
                    line_len > LINE_PREFIX || v.is_empty() || v.iter().any(|&b| b != b'0')
                }
                "Transfer-Encoding" => true,
                _ => false,
            })
        }

        fn bytes(&self, encode: bool) -> Vec<u8> {
            let eol: &[u8] = if self.crlf { b"\r\n" } else { b"\n" };
            let mut out = b"GET ".to_vec();
            for &b in &self.target {
                if encode && b >= 0x80 {
                    out.extend_from_slice(&percent_encoded(b));
                } else {
                    out.push(b);
                }
            }
            out.extend_from_slice(b" HTTP/1.1");
            out.extend_from_slice(eol);
            for (name, value) in &self.headers {
                out.extend_from_slice(name.as_bytes());
                out.push(b':');
                out.extend_from_slice(value);
                out.extend_from_slice(eol);
            }
            out.extend_from_slice(eol);
            out
        }
    }

    fn line_bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(
            any::<u8>().prop_filter("no line end", |b| *b != b'\n' && *b != b'\r'),
            0..max,
        )
    }

    fn header() -> impl Strategy<Value = (&'static str, Vec<u8>)> {
        let zero_or_not = prop::sample::select(vec![
            b"0".to_vec(),
            b" 0".to_vec(),
            b"000".to_vec(),
            b"7".to_vec(),
            b" 10 ".to_vec(),
            // Around the longest line that is judged rather than assumed.
            [vec![b' '; 46], b"0".to_vec()].concat(),
            [vec![b' '; 47], b"0".to_vec()].concat(),
            [vec![b' '; 48], b"0".to_vec()].concat(),
        ]);
        prop_oneof![
            4 => (prop::sample::select(vec!["Host", "User-Agent", "Cookie", "Content-Lengthy"]), line_bytes(100)),
            1 => (prop::sample::select(vec!["Content-Length", "content-length"]), zero_or_not),
            1 => Just(("Transfer-Encoding", b"chunked".to_vec())),
        ]
    }

    fn request() -> impl Strategy<Value = Req> {
        (
            line_bytes(40),
            prop::collection::vec(header(), 0..5),
            any::<bool>(),
        )
            .prop_map(|(target, headers, crlf)| Req {
                target,
                headers,
                crlf,
            })
    }

    /// A connection's bytes and what the rewriting must give: request lines
    /// encoded up to and including the first request with a body, everything
    /// after it (its body, later requests) unchanged.
    fn connection() -> impl Strategy<Value = (Vec<u8>, Vec<u8>)> {
        (
            prop::collection::vec(request(), 1..5),
            prop::collection::vec(any::<u8>(), 0..50),
        )
            .prop_map(|(reqs, tail)| {
                let (mut input, mut expected) = (Vec::new(), Vec::new());
                let mut on = true;
                for r in &reqs {
                    input.extend(r.bytes(false));
                    expected.extend(r.bytes(on));
                    on &= !r.has_body();
                }
                if !on {
                    input.extend_from_slice(&tail);
                    expected.extend_from_slice(&tail);
                }
                (input, expected)
            })
    }

    proptest! {
        #[test]
        fn the_rewriting_is_as_specified((input, expected) in connection()) {
            prop_assert_eq!(rewrite_whole(&input), expected);
        }

        #[test]
        fn chunk_boundaries_do_not_matter(
            (input, _) in connection(),
            cuts in prop::collection::vec(any::<usize>(), 0..8),
        ) {
            prop_assert_eq!(rewrite_split(&input, &cuts), rewrite_whole(&input));
        }

        #[test]
        fn ascii_passes_unchanged(
            input in prop::collection::vec(0u8..0x80, 0..400),
            cuts in prop::collection::vec(any::<usize>(), 0..8),
        ) {
            prop_assert_eq!(rewrite_split(&input, &cuts), input.clone());
            prop_assert_eq!(RequestLines::new().pass(&input), input.len());
        }

        #[test]
        fn any_bytes_split_anywhere_give_the_same_output(
            input in prop::collection::vec(any::<u8>(), 0..400),
            cuts in prop::collection::vec(any::<usize>(), 0..8),
        ) {
            prop_assert_eq!(rewrite_split(&input, &cuts), rewrite_whole(&input));
        }
    }

    /// A reader that hands out its chunks as they were cut, like a socket.
    struct Chunks(VecDeque<Vec<u8>>);

    impl AsyncRead for Chunks {
        fn poll_read(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            let this = self.get_mut();
            if let Some(chunk) = this.0.front_mut() {
                let n = chunk.len().min(buf.remaining());
                buf.put_slice(&chunk[..n]);
                chunk.drain(..n);
                if chunk.is_empty() {
                    this.0.pop_front();
                }
            }
            Poll::Ready(Ok(()))
        }
    }

    async fn read_through(chunks: &[&[u8]], buf_len: usize) -> Vec<u8> {
        let mut io = RequestLineIo::new(Chunks(chunks.iter().map(|c| c.to_vec()).collect()));
        let mut out = Vec::new();
        let mut buf = vec![0; buf_len];
        loop {
            let n = io.read(&mut buf).await.expect("read");
            if n == 0 {
                return out;
            }
            out.extend_from_slice(&buf[..n]);
        }
    }

    #[tokio::test]
    async fn reads_give_the_rewritten_bytes_whatever_the_buffer_size() {
        let chunks: [&[u8]; 3] = [
            b"GET /caf\xc3",
            b"\xa9/\xe2\x82\xac HTTP/1.1\r\nX: \xff\r\n\r\nGET /\xf0\x9f\x98\x80",
            b" HTTP/1.1\r\n\r\n",
        ];
        let expected = b"GET /caf%C3%A9/%E2%82%AC HTTP/1.1\r\nX: \xff\r\n\r\nGET /%F0%9F%98%80 HTTP/1.1\r\n\r\n";
        for buf_len in [1, 2, 3, 5, 7, 64, 4096] {
            assert_eq!(
                read_through(&chunks, buf_len).await,
                expected,
                "buffer of {buf_len}"
            );
        }
    }
}
