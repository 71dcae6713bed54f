//! Client tracking IDs, as carried in the tracking cookie and field 3 of the access log.
//!
//! An ID is the concatenation of a time part and a random part, both in base 62
//! (alphabet `0-9A-Za-z`, the `base62` crate's standard one) and zero-padded to fixed
//! widths, so every ID is exactly [`TrackingId::LEN`] ASCII alphanumerics:
//!
//! ```text
//! 0Vh3kY2s 4fLq9ZxA01b
//! ^^^^^^^^ ^^^^^^^^^^^
//! time     random: uniform in 0..62^11 (about 65.5 bits)
//! milliseconds since the Unix epoch
//! ```
//!
//! (shown split for reading; the ID itself has no space). Fixed widths make the format
//! checkable without guessing where one part ends, and because the alphabet is in ASCII
//! order, sorting IDs as strings sorts them by creation time.

use std::fmt;
use std::str::FromStr;

use rand::Rng;

const TIME_LEN: usize = 8;
const RANDOM_LEN: usize = 11;
/// 62^8 milliseconds is about 6,900 years: the time part wraps in the year 8888.
const TIME_MODULUS: u64 = 62u64.pow(TIME_LEN as u32);
const RANDOM_MODULUS: u128 = 62u128.pow(RANDOM_LEN as u32);

/// A tracking ID that is known to have the fixed format; obtain one with
/// [`TrackingId::parse`] or [`TrackingId::generate`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TrackingId([u8; TrackingId::LEN]);

/// Why a string is not a tracking ID.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseTrackingIdError {
    #[error("tracking ID must be {expected} characters, got {found} bytes")]
    Length { expected: usize, found: usize },
    #[error("tracking ID has a byte outside [0-9A-Za-z] at offset {offset}")]
    Alphabet { offset: usize },
}

impl TrackingId {
    /// Length of every tracking ID, in bytes (and characters: they are ASCII).
    pub const LEN: usize = TIME_LEN + RANDOM_LEN;

    /// Creates an ID for the current time from the thread-local, OS-seeded generator.
    pub fn generate() -> TrackingId {
        Self::generate_now(chrono::Utc::now().timestamp_millis())
    }

    /// Like [`generate`](Self::generate) for a time the caller has read
    /// already (a request's arrival), which saves a clock read per scan.
    pub fn generate_now(now_millis: i64) -> TrackingId {
        Self::generate_at(u64::try_from(now_millis).unwrap_or(0), &mut rand::rng())
    }

    /// Creates an ID for a given time; the time and generator are parameters so that
    /// tests and benchmarks can be deterministic. `millis` beyond the year 8888 wraps.
    pub fn generate_at<R: Rng + ?Sized>(millis: u64, rng: &mut R) -> TrackingId {
        let random = rng.random_range(0..RANDOM_MODULUS);
        let mut buf = [b'0'; Self::LEN];
        put_base62(u128::from(millis % TIME_MODULUS), &mut buf[..TIME_LEN]);
        put_base62(random, &mut buf[TIME_LEN..]);
        TrackingId(buf)
    }

    /// Accepts exactly the format `generate` produces and nothing else: no trimming,
    /// no case folding, no shorter or longer forms.
    pub fn parse(s: &str) -> Result<TrackingId, ParseTrackingIdError> {
        Self::parse_bytes(s.as_bytes())
    }

    /// [`parse`](Self::parse) for bytes (a cookie value): anything but the
    /// ASCII alphanumerics of an ID is refused, so no UTF-8 check is needed.
    pub fn parse_bytes(bytes: &[u8]) -> Result<TrackingId, ParseTrackingIdError> {
        let buf: [u8; Self::LEN] = bytes.try_into().map_err(|_| ParseTrackingIdError::Length {
            expected: Self::LEN,
            found: bytes.len(),
        })?;
        if let Some(offset) = buf.iter().position(|&b| !ALPHANUMERIC[usize::from(b)]) {
            return Err(ParseTrackingIdError::Alphabet { offset });
        }
        Ok(TrackingId(buf))
    }

    /// The ID's ASCII bytes, for writers of bytes: [`as_str`](Self::as_str)
    /// checks them as UTF-8 on every call.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    pub fn as_str(&self) -> &str {
        // Construction admits only ASCII alphanumerics, so this cannot fail.
        std::str::from_utf8(&self.0).expect("tracking ID bytes are ASCII")
    }

    /// Milliseconds since the epoch at which the ID was generated (modulo 62^8).
    pub fn millis(&self) -> u64 {
        // At most 62^8 - 1, which fits in u64.
        base62_value(&self.0[..TIME_LEN]) as u64
    }

    /// The whole ID as one number (62^19 < 2^114): distinct IDs give distinct numbers,
    /// which lets counters of unique IDs store 16 bytes per ID instead of a string.
    pub fn to_u128(&self) -> u128 {
        base62_value(&self.0)
    }
}

/// Which bytes an ID is made of, as a table: one load a byte where
/// `is_ascii_alphanumeric` is three ranges (issue 24).
const ALPHANUMERIC: [bool; 256] = {
    let mut table = [false; 256];
    let mut i = 0;
    while i < 256 {
        table[i] = (i as u8).is_ascii_alphanumeric();
        i += 1;
    }
    table
};

/// Writes `value` in base 62 right-aligned into all of `out`, left-padded with `0`;
/// `value` must fit (callers reduce it modulo 62^len first).
fn put_base62(value: u128, out: &mut [u8]) {
    let mut digits = [0u8; 22]; // enough for any u128
    let n = base62::encode_bytes(value, &mut digits).unwrap_or(0);
    let width = out.len();
    let pad = width.saturating_sub(n);
    out[..pad].fill(b'0');
    out[pad..].copy_from_slice(&digits[n - (width - pad)..n]);
}

/// Callers have checked that every byte is in the alphabet and that there are at most
/// 19 digits, so neither decoding error (bad byte, overflow) can occur.
///
/// The `base62` crate's `decode` gives the same numbers (a test compares them) in
/// about 270 instructions for an ID, a multiply-add in `u128` and a range check per
/// digit; `qrtag stats` decodes an ID on most lines (its [`fingerprint`]), so here
/// the digits are folded in two `u64` halves through a table and joined once.
///
/// [`fingerprint`]: crate::stats::aggregate::fingerprint
fn base62_value(digits: &[u8]) -> u128 {
    // 62^10 < 2^64: the high part holds up to 10 digits, the low part the last 9.
    let (high, low) = digits.split_at(digits.len().saturating_sub(LOW_DIGITS));
    let fold = |part: &[u8]| {
        part.iter()
            .fold(0u64, |v, &b| v * 62 + u64::from(DIGIT[usize::from(b)]))
    };
    u128::from(fold(high)) * u128::from(POW62[low.len()]) + u128::from(fold(low))
}

/// Digits in the low part of [`base62_value`].
const LOW_DIGITS: usize = 9;

/// 62^n for the low part's lengths.
const POW62: [u64; LOW_DIGITS + 1] = {
    let mut p = [1u64; LOW_DIGITS + 1];
    let mut i = 1;
    while i <= LOW_DIGITS {
        p[i] = p[i - 1] * 62;
        i += 1;
    }
    p
};

/// The value of each byte of the alphabet `0-9A-Za-z` (0 for the rest, which IDs
/// never hold).
const DIGIT: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 26 {
        t[b'A' as usize + i] = 10 + i as u8;
        t[b'a' as usize + i] = 36 + i as u8;
        i += 1;
    }
    t
};

impl fmt::Display for TrackingId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for TrackingId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TrackingId({})", self.as_str())
    }
}

impl FromStr for TrackingId {
    type Err = ParseTrackingIdError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl AsRef<str> for TrackingId {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    #[test]
    fn generated_id_has_fixed_format() {
        let id = TrackingId::generate();
        assert_eq!(id.as_str().len(), TrackingId::LEN);
        assert!(id.as_str().bytes().all(|b| b.is_ascii_alphanumeric()));
        assert_eq!(TrackingId::parse(id.as_str()), Ok(id));
    }

    #[test]
    fn time_part_is_base62_millis_padded() {
        let mut rng = StdRng::seed_from_u64(7);
        let id = TrackingId::generate_at(0, &mut rng);
        assert!(id.as_str().starts_with("00000000"));
        let id = TrackingId::generate_at(61, &mut rng);
        assert!(id.as_str().starts_with("0000000z"));
        // 2026-11-21T14:30:15.300Z
        let millis = 1_795_271_415_300;
        let id = TrackingId::generate_at(millis, &mut rng);
        assert_eq!(id.millis(), millis);
        assert_eq!(&id.as_str()[..8], base62_padded(millis, 8));
    }

    fn base62_padded(n: u64, width: usize) -> String {
        format!("{:0>width$}", base62::encode(n))
    }

    #[test]
    fn random_part_uses_base62_crate_alphabet() {
        let mut rng = StdRng::seed_from_u64(1);
        let id = TrackingId::generate_at(5, &mut rng);
        let random = id.to_u128() % RANDOM_MODULUS;
        assert_eq!(
            &id.as_str()[8..],
            format!("{:0>11}", base62::encode(random))
        );
    }

    proptest! {
        /// The table decoding gives the `base62` crate's numbers, for the
        /// whole ID and for its time part.
        #[test]
        fn decoding_agrees_with_the_base62_crate(
            id in "[0-9A-Za-z]{19}",
            any in "[0-9A-Za-z]{0,19}",
        ) {
            let parsed = TrackingId::parse(&id).unwrap();
            prop_assert_eq!(parsed.to_u128(), base62::decode(&id).unwrap());
            prop_assert_eq!(u128::from(parsed.millis()), base62::decode(&id[..8]).unwrap());
            prop_assert_eq!(base62_value(any.as_bytes()), base62::decode(&any).unwrap_or(0));
        }
    }

    #[test]
    fn extremes_decode_as_the_base62_crate_does() {
        for id in [
            "0000000000000000000",
            "zzzzzzzzzzzzzzzzzzz",
            "000000000z000000000",
        ] {
            let parsed = TrackingId::parse(id).unwrap();
            assert_eq!(parsed.to_u128(), base62::decode(id).unwrap(), "{id}");
        }
    }

    #[test]
    fn ids_sort_by_time() {
        let mut rng = StdRng::seed_from_u64(3);
        let a = TrackingId::generate_at(1_000, &mut rng);
        let b = TrackingId::generate_at(1_001, &mut rng);
        let c = TrackingId::generate_at(70_000_000_000, &mut rng);
        assert!(a < b && b < c);
        assert!(a.as_str() < b.as_str() && b.as_str() < c.as_str());
    }

    #[test]
    fn parse_rejects_anything_else() {
        let good = "0Vh3kY2s4fLq9ZxA01b";
        assert!(TrackingId::parse(good).is_ok());
        for bad in [
            "",
            "-",
            "0Vh3kY2s4fLq9ZxA01",
            "0Vh3kY2s4fLq9ZxA01bc",
            " Vh3kY2s4fLq9ZxA01b",
            "0Vh3kY2s4fLq9ZxA01 ",
            "0Vh3kY2s4fLq9ZxA01\n",
            "0Vh3kY2s4fLq9Zx\tA01",
            "0Vh3kY2s4fLq9ZxA0-b",
            "0Vh3kY2s4fLq9ZxA0_b",
            "0Vh3kY2s4fLq9ZxA0éb",
            "0Vh3kY2s4fLq9ZxA0%b",
        ] {
            assert!(TrackingId::parse(bad).is_err(), "{bad:?} accepted");
        }
        assert_eq!(
            TrackingId::parse("abc"),
            Err(ParseTrackingIdError::Length {
                expected: 19,
                found: 3
            })
        );
        assert_eq!(
            TrackingId::parse("0Vh3kY2s4fLq9ZxA-1b"),
            Err(ParseTrackingIdError::Alphabet { offset: 16 })
        );
    }

    #[test]
    fn distinct_ids_have_distinct_numbers() {
        let a = TrackingId::parse("zzzzzzzzzzzzzzzzzzz").unwrap();
        let b = TrackingId::parse("0000000000000000000").unwrap();
        assert_eq!(a.to_u128(), 62u128.pow(19) - 1);
        assert_eq!(b.to_u128(), 0);
    }

    proptest! {
        #[test]
        fn generate_parse_round_trip(millis in 0u64..TIME_MODULUS, seed: u64) {
            let mut rng = StdRng::seed_from_u64(seed);
            let id = TrackingId::generate_at(millis, &mut rng);
            let parsed = TrackingId::parse(id.as_str()).unwrap();
            prop_assert_eq!(parsed, id);
            prop_assert_eq!(parsed.millis(), millis);
            prop_assert_eq!(parsed.to_string(), id.as_str());
        }

        #[test]
        fn parse_never_panics(s in ".*") {
            if let Ok(id) = TrackingId::parse(&s) {
                prop_assert_eq!(id.as_str(), s.as_str());
            }
        }

        #[test]
        fn parse_accepts_exactly_19_alphanumerics(s in "[0-9A-Za-z]{19}") {
            let id = TrackingId::parse(&s).unwrap();
            prop_assert_eq!(id.as_str(), s.as_str());
        }
    }
}
