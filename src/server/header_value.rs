//! Header values the redirect path builds on every request (`Location`,
//! `Link`, `Set-Cookie`), made with a cheaper check than `http`'s.
//!
//! `HeaderValue::from_maybe_shared` checks its bytes one at a time: about
//! 8 instructions a byte, 1,500 a redirect for three values of a few dozen
//! bytes (issue 24). [`printable`] checks eight bytes at once for the
//! narrower set these values are made of (printable ASCII, 0x20–0x7E), and
//! hands anything else to the byte-wise check, so what is accepted, and the
//! bytes sent, are the same as before.

use actix_web::http::header::HeaderValue;
use actix_web::web::Bytes;

/// `bytes` as a header value, or `None` where `HeaderValue::from_maybe_shared`
/// refuses them.
pub fn printable(bytes: Vec<u8>) -> Option<HeaderValue> {
    if is_printable_ascii(&bytes) {
        // SAFETY: every byte is printable ASCII (0x20–0x7E), so the value is
        // valid UTF-8 (what the function's contract asks) and a valid header
        // value (what `HeaderValue` keeps as its invariant). A debug build
        // checks again inside.
        Some(unsafe { HeaderValue::from_maybe_shared_unchecked(Bytes::from(bytes)) })
    } else {
        HeaderValue::from_maybe_shared(Bytes::from(bytes)).ok()
    }
}

/// `HeaderValue::to_str`, which checks a byte at a time, with the common
/// case (printable ASCII) checked eight bytes at a time first: for the
/// `Location` the log line writes.
pub fn to_str(value: &HeaderValue) -> Option<&str> {
    let bytes = value.as_bytes();
    if is_printable_ascii(bytes) {
        std::str::from_utf8(bytes).ok()
    } else {
        value.to_str().ok()
    }
}

const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);

/// Whether every byte is in 0x20–0x7E, eight at a time: a byte below 0x20
/// borrows into its high bit when 0x20 is taken away (and had it clear); a
/// byte of 0x7F or more has its high bit set itself or once 1 is added.
/// Borrows and carries across bytes start only at a byte that is out of
/// range, so the answer for the whole word is exact.
fn is_printable_ascii(bytes: &[u8]) -> bool {
    let mut words = bytes.chunks_exact(8);
    let mut bad = 0u64;
    for word in &mut words {
        let mut w = [0u8; 8];
        w.copy_from_slice(word);
        let x = u64::from_ne_bytes(w);
        bad |= (x.wrapping_sub(0x20 * ONES) & !x) | x | x.wrapping_add(ONES);
    }
    bad & HIGH == 0 && words.remainder().iter().all(|&b| (0x20..0x7f).contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn bytewise(bytes: &[u8]) -> bool {
        bytes.iter().all(|&b| (0x20..0x7f).contains(&b))
    }

    #[test]
    fn every_byte_in_every_position_of_a_word() {
        for len in [8, 9, 16, 23] {
            for at in 0..len {
                for b in 0..=255u8 {
                    // Among letters, and among the neighbours that a carry
                    // or borrow would reach: `~` and space.
                    for fill in [b'a', b'~', b' '] {
                        let mut v = vec![fill; len];
                        v[at] = b;
                        assert_eq!(
                            is_printable_ascii(&v),
                            bytewise(&v),
                            "byte {b:#x} at {at} of {len} among {:?}",
                            char::from(fill)
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn the_values_a_redirect_sends() {
        for v in [
            &b"https://example.com/whelans/?p=14"[..],
            b"<https://0x1f.ie/H83if>; rel=\"shortlink\"",
            b"qrtag=0Vh3kY2s4fLq9ZxA01b.AAAAAAAAAAAAAAAAAAAAAA; Path=/; Max-Age=63072000; HttpOnly; SameSite=Lax",
            b"",
        ] {
            let value = printable(v.to_vec()).expect("printable");
            assert_eq!(value.as_bytes(), v);
        }
    }

    proptest! {
        /// The same values as `http`'s own check, with the same bytes.
        #[test]
        fn accepts_what_http_accepts(v in proptest::collection::vec(any::<u8>(), 0..40),
                                     text in "[ -~]{0,40}") {
            prop_assert_eq!(is_printable_ascii(&v), bytewise(&v));
            for bytes in [v, text.into_bytes()] {
                let ours = printable(bytes.clone());
                let theirs = HeaderValue::from_maybe_shared(Bytes::from(bytes));
                prop_assert_eq!(ours.as_ref().map(HeaderValue::as_bytes),
                                theirs.as_ref().ok().map(HeaderValue::as_bytes));
                if let Ok(value) = &theirs {
                    prop_assert_eq!(to_str(value), value.to_str().ok());
                }
            }
        }
    }
}
