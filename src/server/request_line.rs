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
//! raw bytes in header values, and the log encodes them). A request body is
//! followed by its framing, as actix follows it (a `Content-Length` body, or
//! a chunked one with its chunk sizes and trailers), and passes unchanged;
//! actix-http drains a body the handler did not read and keeps the connection
//! open, so the next request line is rewritten like the first. Framing actix
//! itself refuses (an unreadable or repeated `Content-Length`, one beside
//! `Transfer-Encoding`, a coding other than chunked, a chunk size over a
//! `u64`) turns the rewriting off for the rest of the connection, which
//! actix then closes; the deadline of the request that had it keeps running,
//! so no framing, understood here or not, lifts a connection's protection.
//! Padding is read as actix reads it (blanks around a value, leading zeros),
//! in a fixed 64-byte prefix per connection.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use std::cell::Cell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::task::ready;

use super::limits::Slot;
use super::own_answer::{WrittenTail, own_answer};
use super::request_heads::{HeadFields, RequestHeads};
use super::waits::Waits;

/// How much of a header line is kept to judge it, after [`LinePrefix`]
/// squeezed out what cannot change its meaning (blanks around the value,
/// leading zeros of a number): enough for any `Transfer-Encoding` actix
/// reads and any `Content-Length` that fits a `u64`, however padded. So the
/// per-connection memory stays fixed whatever is sent, and no padding can
/// make a framing unreadable here that actix reads.
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
    /// A `Content-Length` body: this many bytes still pass unchanged.
    Body {
        left: u64,
    },
    Chunked(Chunk),
    /// After framing actix refuses (and answers 400 and closes on):
    /// everything passes unchanged, and the request's deadline keeps
    /// running, so a framing misjudged here can never lift the protection.
    PassThrough,
}

/// Where a chunked body is (RFC 9112, 7.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    /// The chunk-size line: hex digits, then extensions up to the line end.
    Size { size: u64, digits: u8, rest: bool },
    /// This many bytes of chunk data still pass unchanged.
    Data { left: u64 },
    /// The line end after a chunk's data.
    DataEnd,
    /// Trailer lines after the last chunk, up to an empty one.
    Trailers { content: bool },
}

const CHUNK_SIZE: Chunk = Chunk::Size {
    size: 0,
    digits: 0,
    rest: false,
};

/// What the headers of the request being read say of its body.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Framing {
    length: Option<u64>,
    lengths: u8,
    chunked: bool,
    /// A framing actix answers with 400 and a closed connection.
    refused: bool,
}

impl Framing {
    fn next_state(self) -> State {
        if self.refused || self.lengths > 1 || self.chunked && self.lengths > 0 {
            State::PassThrough
        } else if self.chunked {
            State::Chunked(CHUNK_SIZE)
        } else {
            match self.length {
                Some(left) if left > 0 => State::Body { left },
                _ => State::RequestLine { content: false },
            }
        }
    }
}

/// The rewriting of one connection's incoming bytes, fed in chunks that may
/// split anywhere.
#[derive(Debug, Clone)]
pub struct RequestLines {
    state: State,
    /// A header line cut by a chunk boundary, as far as it came.
    line: LinePrefix,
    /// Whether such a line is in progress.
    in_line: bool,
    /// What the request whose headers are being read says of its body.
    framing: Framing,
    /// Requests begun on this connection (their first byte seen).
    started: u64,
    /// The heads of the latest requests, for logging one actix answers itself.
    heads: RequestHeads,
}

impl Default for RequestLines {
    fn default() -> Self {
        Self::new()
    }
}

impl RequestLines {
    /// Whether a request has begun and not yet been read whole (head and
    /// body): the time a slow client may take is counted from its start.
    /// After framing the adapter does not follow, it stays yes: the
    /// connection ends at the deadline of the request that had it.
    pub fn in_request(&self) -> bool {
        match self.state {
            State::RequestLine { content } => content,
            State::Headers | State::Body { .. } | State::Chunked(_) | State::PassThrough => true,
        }
    }

    /// Requests begun on this connection so far.
    pub fn started(&self) -> u64 {
        self.started
    }

    pub fn new() -> Self {
        Self {
            state: State::RequestLine { content: false },
            line: LinePrefix::default(),
            in_line: false,
            framing: Framing::default(),
            started: 0,
            heads: RequestHeads::default(),
        }
    }

    /// The heads of the latest requests, numbered from 0 as begun.
    pub fn heads(&self) -> &RequestHeads {
        &self.heads
    }

    pub fn heads_mut(&mut self) -> &mut RequestHeads {
        &mut self.heads
    }

    /// Notes the first byte of a request line when `now` (it has content)
    /// and not `was` (it had none before).
    fn begin_if(&mut self, was: bool, now: bool) {
        if now && !was {
            self.heads.begin(self.started);
            self.started += 1;
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
                State::Body { left } => {
                    let n = left.min(rest.len() as u64);
                    i += n as usize;
                    self.state = match left - n {
                        0 => State::RequestLine { content: false },
                        left => State::Body { left },
                    };
                }
                State::Chunked(chunk) => i += self.chunked(chunk, rest),
                State::RequestLine { content: was } => {
                    let Some(j) = line_stop(rest) else {
                        let content = was || rest.iter().any(|&b| b != b'\r');
                        self.begin_if(was, content);
                        if content {
                            self.heads.extend(rest);
                        }
                        self.state = State::RequestLine { content };
                        return input.len();
                    };
                    let content = was || rest[..j].iter().any(|&b| b != b'\r');
                    self.begin_if(was, content);
                    if rest[j] != b'\n' {
                        if content {
                            self.heads.extend(&rest[..j]);
                        }
                        self.state = State::RequestLine { content };
                        return i + j;
                    }
                    if content {
                        self.heads.extend(&rest[..=j]);
                    }
                    i += j + 1;
                    self.state = if content {
                        self.in_line = false;
                        self.framing = Framing::default();
                        State::Headers
                    } else {
                        State::RequestLine { content: false }
                    };
                }
                State::Headers => {
                    let end = memchr::memchr(b'\n', rest);
                    self.heads
                        .extend(&rest[..end.map_or(rest.len(), |e| e + 1)]);
                    let part = &rest[..end.unwrap_or(rest.len())];
                    let line = match end {
                        // The common case: the whole line is in this chunk
                        // and short, and is judged where it lies, without a copy.
                        // A longer line that names no framing header (a
                        // user agent, a cookie) is judged by its first byte.
                        Some(_)
                            if !self.in_line && (part.len() <= LINE_PREFIX || !may_frame(part)) =>
                        {
                            judge(part, true)
                        }
                        Some(_) if !self.in_line => {
                            let mut line = LinePrefix::default();
                            line.push(part);
                            line.judge()
                        }
                        _ => {
                            if !std::mem::replace(&mut self.in_line, true) {
                                self.line = LinePrefix::default();
                            }
                            self.line.push(part);
                            if end.is_none() {
                                return input.len();
                            }
                            self.in_line = false;
                            self.line.judge()
                        }
                    };
                    i += part.len() + 1;
                    let f = &mut self.framing;
                    match line {
                        Line::End => self.state = std::mem::take(f).next_state(),
                        Line::Length(length) => {
                            f.lengths = f.lengths.saturating_add(1);
                            f.length = length;
                            f.refused |= length.is_none();
                        }
                        Line::TransferEncoding { chunked } => {
                            f.refused |= !chunked || f.chunked;
                            f.chunked = true;
                        }
                        Line::Other => {}
                    }
                }
            }
        }
        input.len()
    }

    /// Advances a chunked body over the start of `rest`; returns how many
    /// bytes it took (all of them pass unchanged).
    fn chunked(&mut self, chunk: Chunk, rest: &[u8]) -> usize {
        let refuse = |this: &mut Self| {
            this.state = State::PassThrough;
            rest.len()
        };
        match chunk {
            Chunk::Data { left } => {
                let n = left.min(rest.len() as u64);
                self.state = State::Chunked(match left - n {
                    0 => Chunk::DataEnd,
                    left => Chunk::Data { left },
                });
                n as usize
            }
            Chunk::DataEnd => match rest.first() {
                Some(b'\r') => 1,
                Some(b'\n') => {
                    self.state = State::Chunked(CHUNK_SIZE);
                    1
                }
                Some(_) => refuse(self),
                None => 0,
            },
            Chunk::Trailers { content } => match memchr::memchr(b'\n', rest) {
                None => {
                    let content = content || rest.iter().any(|&b| b != b'\r');
                    self.state = State::Chunked(Chunk::Trailers { content });
                    rest.len()
                }
                Some(j) => {
                    let content = content || rest[..j].iter().any(|&b| b != b'\r');
                    self.state = if content {
                        State::Chunked(Chunk::Trailers { content: false })
                    } else {
                        State::RequestLine { content: false }
                    };
                    j + 1
                }
            },
            Chunk::Size {
                mut size,
                mut digits,
                rest: mut rest_of_line,
            } => {
                for (j, &b) in rest.iter().enumerate() {
                    if b == b'\n' {
                        if digits == 0 {
                            return refuse(self);
                        }
                        self.state = State::Chunked(if size == 0 {
                            Chunk::Trailers { content: false }
                        } else {
                            Chunk::Data { left: size }
                        });
                        return j + 1;
                    }
                    if rest_of_line {
                        continue;
                    }
                    match (b as char).to_digit(16) {
                        // Leading zeros are read by actix as they are here:
                        // only a size over a u64 is refused.
                        Some(d) => match size.checked_mul(16) {
                            Some(shifted) => {
                                size = shifted + u64::from(d);
                                digits = digits.saturating_add(1);
                            }
                            None => return refuse(self),
                        },
                        None if digits > 0 && matches!(b, b';' | b' ' | b'\t' | b'\r') => {
                            rest_of_line = true
                        }
                        None => return refuse(self),
                    }
                }
                self.state = State::Chunked(Chunk::Size {
                    size,
                    digits,
                    rest: rest_of_line,
                });
                rest.len()
            }
        }
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
            let was = self.state != State::RequestLine { content: false };
            self.begin_if(was, true);
            // Kept raw: the log encodes it, as it would the rewritten `%XX`.
            self.heads.extend(&[b]);
            self.state = State::RequestLine { content: true };
            input = rest;
        }
    }
}

/// The start of a header line as it is judged: the name as sent, then the
/// value with blanks before it, runs of blanks inside it and leading zeros
/// of a number squeezed out, so padding (`Content-Length:` and 60 spaces,
/// or 70 zeros) cannot push the meaning past what is kept. Only a value
/// that means something else (a number over a `u64`, a list of codings)
/// is longer than [`LINE_PREFIX`], and such framing actix refuses too.
#[derive(Debug, Clone, Copy)]
struct LinePrefix {
    kept: [u8; LINE_PREFIX],
    len: usize,
    /// Where the value starts in `kept`, once the `:` is kept.
    value_at: Option<usize>,
    /// Something was not kept for want of room.
    cut: bool,
}

impl Default for LinePrefix {
    fn default() -> Self {
        Self {
            kept: [0; LINE_PREFIX],
            len: 0,
            value_at: None,
            cut: false,
        }
    }
}

impl LinePrefix {
    fn push(&mut self, bytes: &[u8]) {
        for &b in bytes {
            let Some(at) = self.value_at else {
                self.keep(b);
                if b == b':' {
                    self.value_at = Some(self.len);
                }
                continue;
            };
            let value = &self.kept[at..self.len];
            let blank = matches!(b, b' ' | b'\t');
            if blank && value.last().is_none_or(|c| matches!(c, b' ' | b'\t')) {
                continue;
            }
            if value == b"0" && b.is_ascii_digit() {
                self.kept[at] = b;
                continue;
            }
            self.keep(b);
        }
    }

    fn keep(&mut self, b: u8) {
        match self.kept.get_mut(self.len) {
            Some(slot) => {
                *slot = b;
                self.len += 1;
            }
            None => self.cut = true,
        }
    }

    fn judge(&self) -> Line {
        judge(&self.kept[..self.len], !self.cut)
    }
}

/// What a header line means for the rewriting.
enum Line {
    /// The empty line that ends the header block.
    End,
    /// `Content-Length`, with its value if it is one actix reads.
    Length(Option<u64>),
    /// `Transfer-Encoding`: whether it is exactly `chunked`, the one coding
    /// actix reads in a request.
    TransferEncoding {
        chunked: bool,
    },
    Other,
}

/// Where a request line stops being passed as it is: at the first raw byte
/// of 0x80 or more (written `%XX`) or its `\n`, whichever comes first. Most
/// lines are ASCII, which is checked a word at a time.
fn line_stop(rest: &[u8]) -> Option<usize> {
    let end = memchr::memchr(b'\n', rest);
    let line = &rest[..end.unwrap_or(rest.len())];
    if line.is_ascii() {
        end
    } else {
        line.iter().position(|&b| b >= 0x80)
    }
}

/// Whether a header line may be `Content-Length` or `Transfer-Encoding`:
/// most lines are told apart by their first byte.
fn may_frame(line: &[u8]) -> bool {
    matches!(line.first(), Some(b'c' | b'C' | b't' | b'T'))
}

/// Judges a header line (without its `\n`); `whole` is false when `line` is
/// only the start of a longer one.
fn judge(line: &[u8], whole: bool) -> Line {
    if whole && matches!(line, b"" | b"\r") {
        return Line::End;
    }
    if !may_frame(line) {
        return Line::Other;
    }
    let value = |v: &'_ [u8]| -> Option<Vec<u8>> {
        // A line longer than the prefix is not judged: its framing is refused.
        whole.then(|| v.strip_suffix(b"\r").unwrap_or(v).trim_ascii().to_vec())
    };
    if let Some(v) = header_value(line, b"content-length") {
        Line::Length(value(v).and_then(|v| {
            if v.is_empty() || !v.iter().all(u8::is_ascii_digit) {
                return None;
            }
            std::str::from_utf8(&v).ok()?.parse().ok()
        }))
    } else if let Some(v) = header_value(line, b"transfer-encoding") {
        Line::TransferEncoding {
            chunked: value(v).is_some_and(|v| v.eq_ignore_ascii_case(b"chunked")),
        }
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
    /// How long the connection may wait for its client; `None`: no limit.
    waits: Option<Waits>,
    /// Held for as long as the connection is open; tells whether the
    /// listener is crowded.
    slot: Option<Slot>,
    /// Requests the handler answered, counted by the handler itself.
    answered: Answered,
    /// The end of what was written, to see whether actix answered on its own.
    written: WrittenTail,
    /// Where an answer actix gave on its own is logged; `None`: not logged.
    own_answers: Option<OwnAnswerLog>,
}

/// The count of this connection's requests a handler answered, shared with
/// the handler through the connection's extensions: a request actix answers
/// itself is the first one after those.
#[derive(Debug, Clone, Default)]
pub struct Answered(Rc<Cell<u64>>);

impl Answered {
    /// Called by the handler once per request it answers.
    pub fn note(&self) {
        self.0.set(self.0.get() + 1);
    }

    fn count(&self) -> u64 {
        self.0.get()
    }
}

/// What logging an answer actix gave on its own needs: where the line goes,
/// and whom the connection came from.
pub struct OwnAnswerLog {
    pub log: LogOwnAnswer,
    pub peer: Option<SocketAddr>,
}

/// Writes the log line of an answer actix gave on its own: its status, what
/// could be read of the request, the peer.
pub type LogOwnAnswer = Arc<dyn Fn(u16, &HeadFields<'_>, Option<SocketAddr>) + Send + Sync>;

impl std::fmt::Debug for OwnAnswerLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwnAnswerLog")
            .field("peer", &self.peer)
            .finish_non_exhaustive()
    }
}

impl<T> RequestLineIo<T> {
    pub fn new(inner: T) -> Self {
        Self {
            inner,
            lines: RequestLines::new(),
            pending: Vec::new(),
            pending_from: 0,
            waits: None,
            slot: None,
            answered: Answered::default(),
            written: WrittenTail::default(),
            own_answers: None,
        }
    }

    /// Logs, through `log`, the answer actix gives on its own if the
    /// connection ends with one: exactly one line for it, with the fields
    /// that could be read of the request it concerns.
    pub fn with_own_answers(mut self, log: OwnAnswerLog) -> Self {
        self.own_answers = Some(log);
        self
    }

    /// The handler's count of answered requests, for the connection's
    /// extensions.
    pub fn answered(&self) -> Answered {
        self.answered.clone()
    }

    /// Logs the answer the connection ended with if actix gave it on its
    /// own; once, when the connection shuts down or is dropped.
    fn log_own_answer(&mut self) {
        let Some(own) = self.own_answers.take() else {
            return;
        };
        let Some(status) = own_answer(self.written.as_slice()) else {
            return;
        };
        let head = self.lines.heads().get(self.answered.count()).unwrap_or(&[]);
        (own.log)(status, &HeadFields::parse(head), own.peer);
    }

    /// Every request (head and body) must arrive within `timeout` of its
    /// first byte, or the connection is closed; on a crowded listener (as
    /// `slot` tells) waits are shorter (see [`Waits`]).
    pub fn with_limits(inner: T, timeout: std::time::Duration, slot: Option<Slot>) -> Self {
        let mut io = Self::new(inner);
        io.waits = Some(Waits::new(timeout));
        io.slot = slot;
        io
    }

    fn note_written(&mut self, written: usize) {
        if written > 0
            && let Some(waits) = &mut self.waits
        {
            waits.after_write();
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
        if Pin::new(&mut this.inner).poll_read(cx, buf)?.is_pending() {
            if let Some(waits) = &mut this.waits {
                let slot = &this.slot;
                if let Poll::Ready(err) =
                    waits.poll(cx, || slot.as_ref().is_some_and(Slot::crowded))
                {
                    return Poll::Ready(Err(err));
                }
            }
            return Poll::Pending;
        }
        let fresh = &buf.filled()[start..];
        this.lines.heads_mut().forget_before(this.answered.count());
        let clean = this.lines.pass(fresh);
        if clean < fresh.len() {
            // Rare: the rewritten rest goes through `pending`, since it is
            // longer than what it replaces and `buf` may be full. At least
            // one byte is freed and refilled, so this never reads as EOF.
            this.lines.rewrite(&fresh[clean..], &mut this.pending);
            buf.set_filled(start + clean);
            this.drain_pending(buf);
        }
        if let Some(waits) = &mut this.waits {
            waits.after_read(this.lines.in_request(), this.lines.started());
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
        let this = self.get_mut();
        let written = ready!(Pin::new(&mut this.inner).poll_write(cx, buf))?;
        this.note_written(written);
        if this.own_answers.is_some() {
            this.written.push(&buf[..written.min(buf.len())]);
        }
        Poll::Ready(Ok(written))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let written = ready!(Pin::new(&mut this.inner).poll_write_vectored(cx, bufs))?;
        this.note_written(written);
        if this.own_answers.is_some() {
            let mut left = written;
            for b in bufs {
                let n = left.min(b.len());
                this.written.push(&b[..n]);
                left -= n;
            }
        }
        Poll::Ready(Ok(written))
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.log_own_answer();
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}

impl<T> Drop for RequestLineIo<T> {
    fn drop(&mut self) {
        self.log_own_answer();
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
        feed_split(input, cuts).0
    }

    /// The rewriting of `input` fed in pieces cut at `cuts`, and the state
    /// it ends in.
    fn feed_split(input: &[u8], cuts: &[usize]) -> (Vec<u8>, RequestLines) {
        let mut lines = RequestLines::new();
        let mut out = Vec::new();
        let mut from = 0;
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (input.len() + 1)).collect();
        cuts.sort_unstable();
        for cut in cuts.into_iter().chain([input.len()]) {
            lines.rewrite(&input[from..cut], &mut out);
            from = cut;
        }
        (out, lines)
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
    fn a_body_passes_unchanged_and_the_next_request_line_is_rewritten() {
        let bodies: [(&[u8], &[u8]); 4] = [
            (b"Content-Length: 5\r\n", b"\xe9\n\xe9\r\n"),
            (b"content-length:  007\r\n", b"GET /\xe9\n"),
            (
                b"Transfer-Encoding: chunked\r\n",
                b"3\r\n\xe9\n\xe9\r\nA;ext=\xe9\r\n0123456789\r\n0\r\n\r\n",
            ),
            (
                b"transfer-encoding: CHUNKED\n",
                b"1\n\n\n0;x\nTrailer: \xe9\r\n\n",
            ),
        ];
        for (header, body) in bodies {
            let mut input = b"POST /\xe9 HTTP/1.1\r\n".to_vec();
            input.extend_from_slice(header);
            input.extend_from_slice(b"\r\n");
            input.extend_from_slice(body);
            input.extend_from_slice(b"GET /\xe9 HTTP/1.1\r\n\r\n");
            let mut expected = b"POST /%E9 HTTP/1.1\r\n".to_vec();
            expected.extend_from_slice(header);
            expected.extend_from_slice(b"\r\n");
            expected.extend_from_slice(body);
            expected.extend_from_slice(b"GET /%E9 HTTP/1.1\r\n\r\n");
            assert_eq!(
                rewrite_whole(&input),
                expected,
                "{}",
                String::from_utf8_lossy(header)
            );
            for cut in 0..=input.len() {
                assert_eq!(rewrite_split(&input, &[cut]), expected, "cut at {cut}");
            }
        }
    }

    #[test]
    fn framing_actix_refuses_turns_the_rewriting_off() {
        let refused: [&[u8]; 7] = [
            b"CONTENT-LENGTH: 0 5\r\n",
            b"Content-Length: x\r\n",
            b"Content-Length: 1\r\nContent-Length: 1\r\n",
            b"transfer-encoding: identity\r\n",
            b"Transfer-Encoding: chunked\r\nContent-Length: 3\r\n",
            b"Transfer-Encoding: gzip, chunked\r\n",
            b"Content-Length: 99999999999999999999999\r\n",
        ];
        for headers in refused {
            let mut input = b"POST /\xe9 HTTP/1.1\r\n".to_vec();
            input.extend_from_slice(headers);
            input.extend_from_slice(b"\r\nGET /\xe9 HTTP/1.1\r\n\r\n");
            let out = rewrite_whole(&input);
            let mut expected = b"POST /%E9 HTTP/1.1\r\n".to_vec();
            expected.extend_from_slice(&input[b"POST /\xe9 HTTP/1.1\r\n".len()..]);
            assert_eq!(out, expected, "{}", String::from_utf8_lossy(headers));
        }
        // A bad chunk size, too.
        let input = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nGET /\xe9 HTTP/1.1\r\n\r\n";
        assert_eq!(rewrite_whole(input), input.to_vec());
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

    /// Issue 19, item 1: padding that actix reads past turned the adapter
    /// (and with it the deadline) off for the rest of the connection.
    #[test]
    fn padded_framing_is_read_as_actix_reads_it_at_any_split() {
        let zeros = "0".repeat(70);
        let spaces = " ".repeat(60);
        let cases: [(String, &[u8]); 5] = [
            (format!("Content-Length: {zeros}\r\n"), b""),
            (format!("Content-Length:{spaces}0{spaces}\r\n"), b""),
            (format!("content-length: {zeros}3\r\n"), b"\xe9\xe9\xe9"),
            (
                format!("Transfer-Encoding:{spaces}chunked{spaces}\r\n"),
                b"2\r\n\xe9\xe9\r\n0\r\n\r\n",
            ),
            (
                "Transfer-Encoding: chunked\r\n".to_owned(),
                b"00000000000000000002\r\n\xe9\xe9\r\n0000000000000000000\r\n\r\n",
            ),
        ];
        for (header, body) in cases {
            let mut input = b"POST /a HTTP/1.1\r\n".to_vec();
            input.extend_from_slice(header.as_bytes());
            input.extend_from_slice(b"\r\n");
            input.extend_from_slice(body);
            let second = input.len();
            input.extend_from_slice(b"GET /\xe9 HTTP/1.1\r\n\r\n");
            let mut expected = input[..second].to_vec();
            expected.extend_from_slice(b"GET /%E9 HTTP/1.1\r\n\r\n");
            for cut in 0..=input.len() {
                assert_eq!(
                    rewrite_split(&input, &[cut]),
                    expected,
                    "{header:?} cut at {cut}"
                );
            }
            let (_, lines) = feed_split(&input, &[]);
            assert_eq!(lines.started(), 2, "{header:?}");
        }
    }

    #[test]
    fn after_framing_it_cannot_follow_the_deadline_keeps_running() {
        let input = b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\nxx";
        let (_, lines) = feed_split(input, &[]);
        assert!(lines.in_request());
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

    /// How a generated request frames its body.
    #[derive(Debug, Clone)]
    enum Body {
        None,
        /// `Content-Length` spelled so, and that many bytes.
        Length(Vec<u8>, Vec<u8>),
        /// Chunks, each with or without an extension, and trailer lines.
        Chunked(Vec<(Vec<u8>, bool)>, Vec<Vec<u8>>),
        /// Headers whose framing actix refuses: the rewriting stops.
        Refused(Vec<(&'static str, Vec<u8>)>),
    }

    /// One request as the generator builds it, and what the rewriting must
    /// make of it.
    #[derive(Debug, Clone)]
    struct Req {
        target: Vec<u8>,
        headers: Vec<(&'static str, Vec<u8>)>,
        body: Body,
        crlf: bool,
    }

    impl Req {
        fn refused(&self) -> bool {
            matches!(self.body, Body::Refused(_))
        }

        fn bytes(&self, encode: bool) -> Vec<u8> {
            let mut out = self.head(encode);
            self.body(&mut out);
            out
        }

        /// The request line and headers, up to the empty line.
        fn head(&self, encode: bool) -> Vec<u8> {
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
            let mut headers = self.headers.clone();
            match &self.body {
                Body::None => {}
                Body::Length(spelled, _) => headers.push(("Content-Length", spelled.clone())),
                Body::Chunked(..) => headers.push(("Transfer-Encoding", b"chunked".to_vec())),
                Body::Refused(h) => headers.extend(h.iter().cloned()),
            }
            for (name, value) in &headers {
                out.extend_from_slice(name.as_bytes());
                out.push(b':');
                out.extend_from_slice(value);
                out.extend_from_slice(eol);
            }
            out.extend_from_slice(eol);
            out
        }

        fn body(&self, out: &mut Vec<u8>) {
            let eol: &[u8] = if self.crlf { b"\r\n" } else { b"\n" };
            match &self.body {
                Body::Length(_, body) => out.extend_from_slice(body),
                Body::Chunked(chunks, trailers) => {
                    for (data, ext) in chunks {
                        out.extend_from_slice(format!("{:x}", data.len()).as_bytes());
                        if *ext {
                            out.extend_from_slice(b";name=\"v\xe9\"");
                        }
                        out.extend_from_slice(eol);
                        out.extend_from_slice(data);
                        out.extend_from_slice(eol);
                    }
                    out.push(b'0');
                    out.extend_from_slice(eol);
                    for t in trailers {
                        out.extend_from_slice(b"X-T: ");
                        out.extend_from_slice(t);
                        out.extend_from_slice(eol);
                    }
                    out.extend_from_slice(eol);
                }
                Body::None | Body::Refused(_) => {}
            }
        }
    }

    fn line_bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(
            any::<u8>().prop_filter("no line end", |b| *b != b'\n' && *b != b'\r'),
            0..max,
        )
    }

    fn header() -> impl Strategy<Value = (&'static str, Vec<u8>)> {
        (
            prop::sample::select(vec!["Host", "User-Agent", "Cookie", "Content-Lengthy"]),
            line_bytes(100),
        )
    }

    fn body() -> impl Strategy<Value = Body> {
        // Padded as attackers pad it (issue 19, item 1): blanks around the
        // number and leading zeros, up to well past the judged prefix.
        let length = (0usize..40, 0usize..90, 0usize..90, 0usize..90).prop_flat_map(
            |(n, zeros, before, after)| {
                prop::collection::vec(any::<u8>(), n).prop_map(move |bytes| {
                    let mut spelled = vec![b' '; before];
                    spelled.extend(std::iter::repeat_n(b'0', zeros));
                    spelled.extend_from_slice(n.to_string().as_bytes());
                    spelled.extend(std::iter::repeat_n(b'\t', after));
                    Body::Length(spelled, bytes)
                })
            },
        );
        let chunked = (
            prop::collection::vec(
                (prop::collection::vec(any::<u8>(), 1..30), any::<bool>()),
                0..4,
            ),
            prop::collection::vec(line_bytes(20), 0..2),
        )
            .prop_map(|(chunks, trailers)| Body::Chunked(chunks, trailers));
        let refused = prop::sample::select(vec![
            vec![("Content-Length", b"x".to_vec())],
            vec![("Content-Length", b"1 2".to_vec())],
            vec![
                ("Content-Length", b"0".to_vec()),
                ("content-length", b"0".to_vec()),
            ],
            vec![("Transfer-Encoding", b"gzip".to_vec())],
            vec![
                ("Transfer-Encoding", b"chunked".to_vec()),
                ("Content-Length", b"2".to_vec()),
            ],
            // More than a u64, however it is padded.
            vec![(
                "Content-Length",
                [vec![b' '; 60], b"18446744073709551616".to_vec()].concat(),
            )],
        ])
        .prop_map(Body::Refused);
        prop_oneof![3 => Just(Body::None), 2 => length, 2 => chunked, 1 => refused]
    }

    fn request() -> impl Strategy<Value = Req> {
        (
            line_bytes(40),
            prop::collection::vec(header(), 0..4),
            body(),
            any::<bool>(),
        )
            .prop_map(|(target, headers, body, crlf)| Req {
                target,
                headers,
                body,
                crlf,
            })
    }

    /// A connection's bytes and what the rewriting must give: request lines
    /// encoded, bodies unchanged, up to and including the first request whose
    /// framing actix refuses; everything after it unchanged.
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
                    on &= !r.refused();
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
        fn each_request_head_is_kept_as_sent(
            reqs in prop::collection::vec(request(), 1..5),
            cuts in prop::collection::vec(any::<usize>(), 0..8),
        ) {
            let (mut input, mut heads) = (Vec::new(), Vec::new());
            for r in &reqs {
                input.extend(r.bytes(false));
                heads.push(r.head(false));
                if r.refused() {
                    break;
                }
            }
            let (_, lines) = feed_split(&input, &cuts);
            prop_assert_eq!(lines.started(), heads.len() as u64);
            for (i, head) in heads.iter().enumerate() {
                prop_assert_eq!(lines.heads().get(i as u64), Some(head.as_slice()), "request {}", i);
            }
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
