//! Random short IDs: the 5-character base-62 keys printed on tags.
//!
//! Five characters is what keeps `https://0x1f.ie/H83if` inside the smallest QR
//! symbol, so the length is fixed rather than growing with the number of links.

use std::fmt;

use rand::Rng;

/// Number of characters in every short ID.
pub const LEN: usize = 5;
/// 62^5: IDs are the base-62 numbers below this, left-padded with `0`.
pub const SPACE: u64 = 62u64.pow(LEN as u32);

/// A 5-character base-62 ID (`[0-9A-Za-z]`). Only [`ShortId::parse`] and the
/// generators build one, so holding a `ShortId` means holding a valid ID.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ShortId([u8; LEN]);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a short ID is exactly 5 characters of [A-Za-z0-9]: {0:?}")]
pub struct InvalidShortId(pub String);

impl ShortId {
    pub fn parse(s: &str) -> Result<Self, InvalidShortId> {
        let bytes = s.as_bytes();
        if bytes.len() != LEN || !bytes.iter().all(u8::is_ascii_alphanumeric) {
            return Err(InvalidShortId(s.to_owned()));
        }
        let mut id = [0u8; LEN];
        id.copy_from_slice(bytes);
        Ok(Self(id))
    }

    /// The ID for number `n` (taken modulo 62^5), written with the `base62`
    /// crate's standard alphabet and left-padded to 5 characters.
    pub fn from_number(n: u64) -> Self {
        let digits = base62::encode(n % SPACE);
        let mut id = [b'0'; LEN];
        let start = LEN - digits.len();
        id[start..].copy_from_slice(digits.as_bytes());
        Self(id)
    }

    /// A uniformly drawn ID; the caller's generator should be OS-seeded.
    pub fn random_with<R: Rng + ?Sized>(rng: &mut R) -> Self {
        Self::from_number(rng.random_range(0..SPACE))
    }

    /// A uniformly drawn ID from the thread's OS-seeded generator.
    pub fn random() -> Self {
        Self::random_with(&mut rand::rng())
    }

    pub fn as_str(&self) -> &str {
        // Only ASCII alphanumerics are ever stored.
        std::str::from_utf8(&self.0).unwrap_or("00000")
    }

    pub fn to_number(self) -> u64 {
        base62::decode(self.0).map_or(0, |n| n as u64)
    }
}

impl fmt::Display for ShortId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for ShortId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ShortId({})", self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn pads_small_numbers() {
        assert_eq!(ShortId::from_number(0).as_str(), "00000");
        assert_eq!(ShortId::from_number(61).as_str(), "0000z");
        assert_eq!(ShortId::from_number(62).as_str(), "00010");
        assert_eq!(ShortId::from_number(SPACE - 1).as_str(), "zzzzz");
    }

    #[test]
    fn rejects_bad_ids() {
        for bad in ["", "abcd", "abcdef", "ab-de", "ab de", "abcé", "H83i\n"] {
            assert!(ShortId::parse(bad).is_err(), "{bad:?} accepted");
        }
        assert_eq!(
            ShortId::parse("H83if").map(|i| i.to_string()),
            Ok("H83if".into())
        );
    }

    #[test]
    fn random_ids_cover_the_alphabet() {
        let mut seen = std::collections::HashSet::new();
        for _ in 0..2000 {
            let id = ShortId::random();
            assert!(ShortId::parse(id.as_str()).is_ok());
            seen.extend(id.as_str().bytes());
        }
        assert_eq!(seen.len(), 62, "2000 IDs should use every base-62 digit");
    }

    proptest! {
        #[test]
        fn number_round_trips(n in 0..SPACE) {
            let id = ShortId::from_number(n);
            prop_assert_eq!(id.as_str().len(), LEN);
            prop_assert_eq!(id.to_number(), n);
            prop_assert_eq!(ShortId::parse(id.as_str()), Ok(id));
        }

        #[test]
        fn parse_never_panics(s in ".*") {
            let _ = ShortId::parse(&s);
        }
    }
}
