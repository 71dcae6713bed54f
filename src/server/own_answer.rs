//! Telling, from the bytes a connection wrote last, whether actix answered
//! on its own instead of a handler.
//!
//! actix-http answers some requests before any handler runs: 400 for a head
//! it cannot parse, 431 for one too large, 408 for one too slow, 500 for a
//! body it cannot frame. Each such answer has an empty body
//! (`content-length: 0`), is the last response of its connection (actix
//! stops reading and closes after it), and is the only kind of response with
//! an error status and an empty body: every error the public handler gives
//! has a body, and a HEAD answer keeps that body's length. So the end of
//! what a connection wrote says whether it ended in such an answer, and
//! which status it had, without following every response's framing.
//!
//! Pure: [`WrittenTail`] keeps the last bytes written, [`own_answer`] reads
//! them.

/// Bytes kept of what a connection wrote: actix's own answers are about 130.
const TAIL: usize = 512;

/// The last [`TAIL`] bytes a connection wrote.
#[derive(Debug, Clone)]
pub struct WrittenTail {
    buf: [u8; TAIL],
    len: usize,
}

impl Default for WrittenTail {
    fn default() -> Self {
        Self {
            buf: [0; TAIL],
            len: 0,
        }
    }
}

impl WrittenTail {
    pub fn push(&mut self, written: &[u8]) {
        if written.len() >= TAIL {
            self.buf.copy_from_slice(&written[written.len() - TAIL..]);
            self.len = TAIL;
            return;
        }
        let keep = self.len.min(TAIL - written.len());
        self.buf.copy_within(self.len - keep..self.len, 0);
        self.buf[keep..keep + written.len()].copy_from_slice(written);
        self.len = keep + written.len();
    }

    pub fn as_slice(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

/// The status of the response `written` ends with, if that response is one
/// actix gave on its own: a whole head with an error status and
/// `content-length: 0`, and nothing after it.
pub fn own_answer(written: &[u8]) -> Option<u16> {
    if !written.ends_with(b"\r\n\r\n") {
        return None;
    }
    // The last status line; header values never hold `HTTP/x.y NNN `.
    let start = memchr::memmem::rfind_iter(written, b"HTTP/")
        .find(|&i| status_line(&written[i..]).is_some())?;
    let head = &written[start..];
    let status = status_line(head)?;
    // The head must end where `written` ends: its first empty line is the last.
    let end = memchr::memmem::find(head, b"\r\n\r\n")?;
    if end + 4 != head.len() || status < 400 {
        return None;
    }
    let empty_body = head[..end].split(|&b| b == b'\n').skip(1).any(|line| {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        header(line).is_some_and(|(name, value)| {
            name.eq_ignore_ascii_case(b"content-length") && value.trim_ascii() == b"0"
        })
    });
    empty_body.then_some(status)
}

/// The status of `HTTP/d.d NNN ` at the start of `head`.
fn status_line(head: &[u8]) -> Option<u16> {
    let line = head.get(..13)?;
    let digits_ok = line[5].is_ascii_digit()
        && line[6] == b'.'
        && line[7].is_ascii_digit()
        && line[8] == b' '
        && line[9..12].iter().all(u8::is_ascii_digit)
        && line[12] == b' ';
    digits_ok.then(|| {
        line[9..12]
            .iter()
            .fold(0u16, |n, &d| n * 10 + u16::from(d - b'0'))
    })
}

/// A header line's name and value.
fn header(line: &[u8]) -> Option<(&[u8], &[u8])> {
    let i = memchr::memchr(b':', line)?;
    Some((&line[..i], &line[i + 1..]))
}

#[cfg(test)]
mod tests {
    use actix_codec::{Decoder, Encoder};
    use actix_http::body::BodySize;
    use actix_http::h1::{Codec, Message};
    use actix_http::{Response, StatusCode};
    use bytes::BytesMut;
    use proptest::prelude::*;

    use super::*;

    /// What actix-http writes for `res` after decoding `request`: the real
    /// encoder, so an upgrade that changes it fails here. (It reads actix's
    /// cached date, so the tests using it run on actix's runtime.)
    fn encoded(request: &[u8], res: Response<()>, size: BodySize, body: &[u8]) -> Vec<u8> {
        let mut codec = Codec::default();
        let mut src = BytesMut::from(request);
        let _ = codec.decode(&mut src);
        let mut out = BytesMut::new();
        codec
            .encode(Message::Item((res, size)), &mut out)
            .expect("encodes");
        out.extend_from_slice(body);
        out.to_vec()
    }

    const GET: &[u8] = b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n";

    #[actix_web::test]
    async fn actix_own_answers_are_recognised() {
        for status in [
            StatusCode::BAD_REQUEST,
            StatusCode::REQUEST_TIMEOUT,
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            StatusCode::INTERNAL_SERVER_ERROR,
        ] {
            for request in [GET, b"GET /a HTTP/1.0\r\n\r\n", b"garbage\r\n\r\n"] {
                let bytes = encoded(
                    request,
                    Response::with_body(status, ()),
                    BodySize::Sized(0),
                    b"",
                );
                assert_eq!(
                    own_answer(&bytes),
                    Some(status.as_u16()),
                    "{}",
                    String::from_utf8_lossy(&bytes)
                );
            }
        }
    }

    /// The handler's answers: a redirect with no body, errors with one, and
    /// HEAD answers that keep their body's length but send none.
    fn handler_answers() -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut redirect = Response::with_body(StatusCode::FOUND, ());
        redirect.headers_mut().insert(
            actix_http::header::LOCATION,
            actix_http::header::HeaderValue::from_static("https://example.com/HTTP/1.1%20400"),
        );
        out.push(encoded(GET, redirect, BodySize::Sized(0), b""));
        for status in [400, 404, 501, 503] {
            let status = StatusCode::from_u16(status).expect("status");
            out.push(encoded(
                GET,
                Response::with_body(status, ()),
                BodySize::Sized(10),
                b"not found\n",
            ));
            out.push(encoded(
                b"HEAD /a HTTP/1.1\r\n\r\n",
                Response::with_body(status, ()),
                BodySize::Sized(10),
                b"",
            ));
        }
        out
    }

    #[actix_web::test]
    async fn handler_answers_are_not_taken_for_actix_own() {
        for bytes in handler_answers() {
            assert_eq!(
                own_answer(&bytes),
                None,
                "{}",
                String::from_utf8_lossy(&bytes)
            );
        }
    }

    #[actix_web::test]
    async fn an_own_answer_after_handler_answers_is_found_and_not_before_them() {
        let own = encoded(
            GET,
            Response::bad_request().drop_body().drop_body(),
            BodySize::Sized(0),
            b"",
        );
        for handled in handler_answers() {
            let mut both = handled.clone();
            both.extend_from_slice(&own);
            assert_eq!(own_answer(&both), Some(400));
            let mut after = own.clone();
            after.extend_from_slice(&handled);
            assert_eq!(own_answer(&after), None);
        }
        // An interim 100 Continue is not an answer.
        assert_eq!(own_answer(b"HTTP/1.1 100 Continue\r\n\r\n"), None);
    }

    #[actix_web::test]
    async fn a_cut_answer_is_not_counted() {
        let own = encoded(
            GET,
            Response::bad_request().drop_body().drop_body(),
            BodySize::Sized(0),
            b"",
        );
        for cut in 0..own.len() {
            assert_eq!(own_answer(&own[..cut]), None, "cut at {cut}");
        }
    }

    proptest! {
        #[test]
        fn the_tail_is_the_last_bytes_written_however_they_were_cut(
            writes in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..700), 0..6)
        ) {
            let mut tail = WrittenTail::default();
            let mut all = Vec::new();
            for w in &writes {
                tail.push(w);
                all.extend_from_slice(w);
            }
            prop_assert_eq!(tail.as_slice(), &all[all.len().saturating_sub(TAIL)..]);
        }

        #[test]
        fn any_bytes_are_read_without_panic(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
            let _ = own_answer(&bytes);
        }
    }
}
