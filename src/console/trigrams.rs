//! A block's trigram summary (issue 33): which three-byte pieces its
//! links' searchable texts hold, hashed into a small bitset, so a search
//! walking an order passes over a block that cannot hold the needle
//! without reading its links.
//!
//! Pure. Each trigram sets [`HASHES`] bits (a Bloom filter); a needle is
//! possibly in a block only if every bit of each of its trigrams is set.
//! A text that holds the needle holds each of its trigrams, so the bits of
//! a block with a matching link are always set: the summary can say
//! "maybe" of a block without a match (a false positive, which costs a read
//! of the block) but never "no" of a block with one. Bits are only ever
//! set by [`Grams::add`] and [`Grams::union`], never cleared, so a summary
//! that kept the bits of links since removed is still never wrong, only
//! looser. Needles shorter than three bytes have no trigram: every block
//! may hold them.

/// Bits set per trigram.
const HASHES: u32 = 3;
/// Bits of the hash each of the [`HASHES`] positions is taken from: the
/// largest bitset is `1 << SLICE` bits.
const SLICE: u32 = 16;

/// Ends a field of a searchable text; no trigram holding it is kept (a
/// needle is UTF-8 and never does).
const FIELD_END: u8 = 0xFF;

/// A hashed trigram bitset of `64 × words` bits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grams {
    words: Box<[u64]>,
}

impl Grams {
    /// An empty set of `bits` bits (a power of two from 64 to `1 << 16`).
    pub fn new(bits: usize) -> Self {
        debug_assert!(bits.is_power_of_two() && (64..=1 << SLICE).contains(&bits));
        Self {
            words: vec![0; bits / 64].into_boxed_slice(),
        }
    }

    /// Adds the trigrams of `text` (none that spans a field's end).
    pub fn add(&mut self, text: &[u8]) {
        for w in text.windows(3) {
            if !w.contains(&FIELD_END) {
                self.set(hash(w));
            }
        }
    }

    /// Adds every trigram `other` holds (the same size).
    pub fn union(&mut self, other: &Grams) {
        debug_assert_eq!(self.words.len(), other.words.len());
        for (a, b) in self.words.iter_mut().zip(other.words.iter()) {
            *a |= *b;
        }
    }

    /// Whether a text summed up here may hold the needle `probe` is of.
    pub fn holds(&self, probe: &Probe) -> bool {
        probe
            .hashes
            .iter()
            .all(|&h| self.positions(h).all(|(w, bit)| self.words[w] & bit != 0))
    }

    /// Heap bytes of the bitset.
    pub fn heap_bytes(&self) -> usize {
        self.words.len() * 8
    }

    /// The share of bits set, for the measure of how loose a summary is.
    pub fn fill(&self) -> f64 {
        let set: u32 = self.words.iter().map(|w| w.count_ones()).sum();
        f64::from(set) / (self.words.len() * 64) as f64
    }

    fn set(&mut self, h: u64) {
        for i in 0..HASHES {
            let (w, bit) = self.position(h, i);
            self.words[w] |= bit;
        }
    }

    fn position(&self, h: u64, i: u32) -> (usize, u64) {
        let mask = (self.words.len() * 64 - 1) as u64;
        let at = ((h >> (SLICE * i)) & mask) as usize;
        (at / 64, 1 << (at % 64))
    }

    fn positions(&self, h: u64) -> impl Iterator<Item = (usize, u64)> + '_ {
        (0..HASHES).map(move |i| self.position(h, i))
    }
}

/// A needle's trigrams, hashed once for every block a search asks.
#[derive(Debug, Clone)]
pub struct Probe {
    hashes: Vec<u64>,
}

impl Probe {
    pub fn new(needle: &[u8]) -> Self {
        let mut hashes: Vec<u64> = needle
            .windows(3)
            .filter(|w| !w.contains(&FIELD_END))
            .map(hash)
            .collect();
        hashes.sort_unstable();
        hashes.dedup();
        Self { hashes }
    }

    /// Whether the needle has a trigram, so that a summary can rule a
    /// block out at all.
    pub fn rules_out_any(&self) -> bool {
        !self.hashes.is_empty()
    }
}

/// A trigram's hash: MurmurHash3's 64-bit finaliser over its bytes (the
/// trigrams of similar texts differ in few bits, which a multiply alone
/// left clustered).
fn hash(w: &[u8]) -> u64 {
    let mut x = u64::from(w[0]) | u64::from(w[1]) << 8 | u64::from(w[2]) << 16;
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn short_needles_rule_nothing_out() {
        let g = Grams::new(64);
        for n in ["", "a", "ab"] {
            let p = Probe::new(n.as_bytes());
            assert!(!p.rules_out_any());
            assert!(g.holds(&p), "{n:?}");
        }
        assert!(!g.holds(&Probe::new(b"abc")));
    }

    #[test]
    fn trigrams_across_a_field_end_are_not_kept() {
        let mut g = Grams::new(1 << 16);
        g.add(b"ab\xffcd\xff");
        assert!(!g.holds(&Probe::new(b"bcd")));
        assert_eq!(g.fill(), 0.0);
    }

    proptest! {
        /// Never a false negative: every piece of an added text is held,
        /// after other texts and unions too, at every size.
        #[test]
        fn every_piece_of_an_added_text_is_held(
            texts in proptest::collection::vec("[a-c/é\u{ff}-]{0,20}", 1..6),
            which in 0usize..6,
            at in 0usize..20,
            len in 3usize..8,
            bits in 6u32..17,
        ) {
            let mut g = Grams::new(1 << bits);
            for t in &texts {
                g.add(t.as_bytes());
            }
            let mut u = Grams::new(1 << bits);
            u.union(&g);
            let text = texts[which % texts.len()].as_bytes();
            let start = at.min(text.len());
            let piece = &text[start..(start + len).min(text.len())];
            prop_assert!(g.holds(&Probe::new(piece)));
            prop_assert!(u.holds(&Probe::new(piece)));
        }
    }
}
